"""posthoc-fmnist v1 (the 5,000-image training subset) beside v2 (the full training set):
per obfuscator variant and eps, the utility row's accuracy [95% CI], release rate and
DeltaP, and the inverter's SSIM, from two leaderboard.json files. `bench compare` refuses
the pair, since their rows were made on different data; this lists the same cells side by
side instead.

    python docs/reproductions/paper-sweeps/posthoc_fmnist_versions.py OLD.json NEW.json \
        [OLD_LABEL NEW_LABEL]
"""

from __future__ import annotations

import json
import sys
from typing import Any

KEY = ("variant", "eps")


def cells(path: str) -> dict[tuple[str, float, str], dict[str, Any]]:
    """(variant, eps, attack or "utility") -> the row's metrics."""
    with open(path) as board:
        rows = json.load(board)["rows"]
    return {
        (r["params"]["variant"], r["params"]["eps"], r["attack"] or "utility"): r["metrics"]
        for r in rows
        if r["mechanism"] == "posthoc-ptr"
    }


def value(metrics: dict[str, Any] | None, name: str, ci: bool = False) -> str:
    if metrics is None or name not in metrics:
        return "-"
    m = metrics[name]
    if not ci:
        return f"{m['value']:.4g}"
    return f"{m['value']:.3f} [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}]"


def main(old_path: str, new_path: str, a: str = "v1", b: str = "v2") -> None:
    old, new = cells(old_path), cells(new_path)
    settings = sorted({k[:2] for k in old} | {k[:2] for k in new})
    print(
        f"| variant | eps | accuracy {a} | accuracy {b} | change | release_rate {a} / {b} "
        f"| DeltaP {a} / {b} | inverter SSIM {a} / {b} |"
    )
    print("|---|---|---|---|---|---|---|---|")
    changes = []
    for variant, eps in settings:
        u1, u2 = old.get((variant, eps, "utility")), new.get((variant, eps, "utility"))
        a1, a2 = old.get((variant, eps, "inverter")), new.get((variant, eps, "inverter"))
        change = "-"
        if u1 and u2:
            diff = u2["accuracy"]["value"] - u1["accuracy"]["value"]
            changes.append(diff)
            change = f"{diff:+.3f}"
        print(
            f"| {variant} | {eps:g} "
            f"| {value(u1, 'accuracy', True)} | {value(u2, 'accuracy', True)} "
            f"| {change} | {value(u1, 'release_rate')} / {value(u2, 'release_rate')} "
            f"| {value(u1, 'delta_p')} / {value(u2, 'delta_p')} "
            f"| {value(a1, 'ssim')} / {value(a2, 'ssim')} |"
        )
    if changes:
        print(
            f"\n{len(changes)} settings: accuracy change mean {sum(changes) / len(changes):+.3f}, "
            f"min {min(changes):+.3f}, max {max(changes):+.3f}; "
            f"{sum(c > 0 for c in changes)} up, {sum(c < 0 for c in changes)} down"
        )


if __name__ == "__main__":
    main(*sys.argv[1:5])
