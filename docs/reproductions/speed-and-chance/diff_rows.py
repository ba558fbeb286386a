"""Which rows of two leaderboard.json files differ, by kind: utility rows, per-attack rows
(matched by attack name, parameters ignored), worst-case rows; timing metrics ignored.
Usage: python diff_rows.py OLD.json NEW.json"""

import json
import sys
from pathlib import Path

TIMING = {"fit_s", "release_ms", "attack_s"}


def load(path: str) -> dict[tuple, dict]:
    out = {}
    for r in json.loads(Path(path).read_text())["rows"]:
        key = (r["task"], r["mechanism"], json.dumps(r["params"], sort_keys=True), r["attack"])
        out[key] = {k: v for k, v in r["metrics"].items() if k not in TIMING}
    return out


old, new = load(sys.argv[1]), load(sys.argv[2])
kinds: dict[str, list[int]] = {}
for key in sorted(set(old) | set(new), key=str):
    kind = "utility" if key[3] is None else key[3]
    a, b = old.get(key), new.get(key)
    if a is None or b is None:
        kinds.setdefault(kind, [0, 0, 0])[2] += 1
        continue
    shared = set(a) & set(b)
    same = all(a[m]["value"] == b[m]["value"] and a[m]["ci"] == b[m]["ci"] for m in shared)
    kinds.setdefault(kind, [0, 0, 0])[0 if same else 1] += 1
    if not same and kind == "utility":
        print("utility differs:", key, [m for m in shared if a[m] != b[m]])
for kind, (same, differ, unmatched) in sorted(kinds.items()):
    print(f"{kind:12s} same {same:4d}  differ {differ:4d}  unmatched {unmatched}")
