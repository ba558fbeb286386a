"""Split two boards of one check suite for `bench compare --exact`, to show that moving the
attribution switches out of posthoc-ptr into the study mechanism moved no number
(records/move-check.txt).

The old board (the code before the move) has every row as `posthoc-ptr`, the switches among
its parameters; the new one has the product rows as `posthoc-ptr` (no switches) and the
switch rows as the study mechanism. Written beside each board:
- product.json: the rows of `posthoc-ptr` whose switches are all at bench's values (old) and
  the `posthoc-ptr` rows (new); compare them with `--ignore-param NAME=DEFAULT` for each
  switch;
- study.json: the old rows named as the study mechanism, keeping only those whose setting the
  new board has as the study mechanism (new: its study rows).

Usage: python studies/posthoc-attribution/probes/move_check.py OLD_BOARD_DIR NEW_BOARD_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.core.hashing import canonical_json
from studies.posthoc_attribution.mechanism import SWITCH_DEFAULTS

STUDY = "studies.posthoc_attribution.mechanism:PosthocPTRReferenceCode"


def _load(board: Path) -> dict[str, Any]:
    return json.loads((board / "leaderboard.json").read_text())


def _write(board: Path, name: str, doc: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    (board / name).write_text(json.dumps({**doc, "rows": rows}, indent=1))
    print(f"{board / name}: {len(rows)} rows")


def _setting(row: dict[str, Any]) -> str:
    return canonical_json(
        [row["task"], row["params"], row.get("attack"), row.get("attack_params") or {}]
    )


def main(old_dir: Path, new_dir: Path) -> None:
    old, new = _load(old_dir), _load(new_dir)
    at_defaults = [
        r
        for r in old["rows"]
        if all(r["params"].get(k, v) == v for k, v in SWITCH_DEFAULTS.items())
    ]
    _write(old_dir, "product.json", old, at_defaults)
    _write(
        new_dir, "product.json", new, [r for r in new["rows"] if r["mechanism"] == "posthoc-ptr"]
    )
    study_new = [r for r in new["rows"] if r["mechanism"] == STUDY]
    wanted = {_setting(r) for r in study_new}
    renamed = [{**r, "mechanism": STUDY} for r in old["rows"] if _setting(r) in wanted]
    _write(old_dir, "study.json", old, renamed)
    _write(new_dir, "study.json", new, study_new)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
