"""Per-seed values of a posthoc suite's utility rows, read from a result store: a board row
of several seeds is a mean over them (bench.metrics.stats.aggregate_seeds), and this shows
each seed's accuracy [95% CI over the test queries], the share of queries PTR answered, the
proposal DeltaP and the audit's lower bound, with the mean the board reports.

    PYTHONPATH=. python studies/posthoc-attribution/probes/per_seed.py SUITE_FILE STORE

SUITE_FILE: a suite of the study, e.g.
studies/posthoc-attribution/suites/posthoc-attribution-seeds.toml.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench import api
from bench.core.hashing import canonical_json
from bench.report.board.labels import varying_params
from bench.store.results import ResultStore

METRICS = ("release_rate", "delta_p", "eps_audit_lb")


def per_seed_lines(suite: str, store: Path) -> list[str]:
    """One line per (setting, seed), then the setting's mean over seeds, for the suite's
    utility jobs at the current code that the store holds; a setting is named by the
    parameters that vary between the stored jobs."""
    planned = api.plan(suite)
    utility = [job for job in planned.jobs if job.attack is None]
    db = ResultStore.read_only(store)
    try:
        results = db.load([job.hash for job in utility])
    finally:
        db.close()
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for result in results:  # a board row: every parameter but the seed
        groups[canonical_json(result["params"])].append(result)
    varying = sorted(set().union(*varying_params([("", r["params"]) for r in results]).values()))
    lines = [f"# {suite}: {len(results)} of {len(utility)} utility jobs stored in {store.name}"]
    lines.append(
        f"# a line: {', '.join(varying) or 'the setting'}; seed; accuracy [95% CI] (the value to"
        f" 6 significant digits, as a board has it); {', '.join(METRICS)}"
    )
    for key in sorted(groups, key=lambda k: [_order(json.loads(k).get(v)) for v in varying]):
        group = sorted(groups[key], key=lambda r: r["seed"])
        setting = " ".join(str(group[0]["params"].get(v, "-")) for v in varying)
        for result in group:
            m = result["metrics"]
            acc = m["accuracy"]
            extra = "  ".join(f"{m[k].value:.4g}" if k in m else "-" for k in METRICS)
            lines.append(
                f"{setting}  seed {result['seed']}  "
                f"{acc.value:.6g} [{acc.ci[0]:.3f}, {acc.ci[1]:.3f}]  {extra}"
            )
        mean = sum(r["metrics"]["accuracy"].value for r in group) / len(group)
        lines.append(f"{setting}  mean of {len(group)} seeds  {mean:.6g}")
    return lines


def _order(value: Any) -> tuple[int, float, str]:
    """Numbers in numeric order, before every other value (text, absent) in text order."""
    if isinstance(value, int | float):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite")
    parser.add_argument("store", type=Path)
    args = parser.parse_args()
    print("\n".join(per_seed_lines(args.suite, args.store)))


if __name__ == "__main__":
    main()
