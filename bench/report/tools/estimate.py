"""Job-time estimates from a committed leaderboard, for `bench run --dry-run` on a store
that has never run the suite: the stage timings every row records stand in for the jobs'
wall times (a utility job: its fit plus its releases; an attack job: its attack time).

They leave out what no row times (evaluation, audits, start-up), and they count an
artifact that several jobs share (a utility model, leave-one-out networks) in every job that
uses it, where a run builds it once: on suites that share much, an estimate from a board is
high (lucid-adult: several times its wall time). The dry run says so.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.report.board.labels import WORST_CASE
from bench.run.job import job_kind

Kind = tuple[str, str, str]  # (task, mechanism, attack or "utility"): bench.run.job.job_kind


def _row_seconds(row: dict[str, Any]) -> float | None:
    """One job of this row's kind, in seconds, from its recorded stage timings."""
    metrics = row.get("metrics") or {}
    if row.get("attack") is not None:
        attack = metrics.get("attack_s")
        return None if attack is None else float(attack["value"])
    fit = metrics.get("fit_s")
    if fit is None:
        return None
    seconds = float(fit["value"])
    release, scored = metrics.get("release_ms"), metrics.get("release_rate")
    if release is not None and scored is not None and row.get("seeds"):
        per_seed = int(scored["n"]) / int(row["seeds"])  # queries released per job
        seconds += float(release["value"]) * per_seed / 1000.0
    return seconds


def board_job_seconds(doc: dict[str, Any]) -> dict[Kind, float]:
    """Mean seconds per job of each kind over a leaderboard's rows (worst-case rows, which
    no job computes, are left out)."""
    samples: dict[Kind, list[float]] = defaultdict(list)
    for row in doc.get("rows", []):
        if row.get("attack") == WORST_CASE:
            continue
        seconds = _row_seconds(row)
        if seconds is not None:
            kind = (row["task"], row["mechanism"], row.get("attack") or "utility")
            samples[kind].append(seconds)
    return {kind: sum(v) / len(v) for kind, v in samples.items()}


def committed_job_seconds(board_dir: Path) -> dict[Kind, float]:
    """`board_job_seconds` of the committed board in `board_dir` ({} when there is none or
    it cannot be read)."""
    path = Path(board_dir) / "leaderboard.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return board_job_seconds(doc) if isinstance(doc, dict) else {}


def plan_lines(
    suite: str,
    selected: list[Any],
    pending: list[Any],
    durations: dict[Kind, float],
    board_dir: Path,
) -> list[str]:
    """What `bench run --dry-run` prints: the selected, stored and pending counts, one line
    per kind of pending job with its estimate from `durations` (the store's own mean job
    times), else from the committed board's stage timings, and the total."""
    from collections import Counter

    from_board = {k: v for k, v in committed_job_seconds(board_dir).items() if k not in durations}
    durations = {**from_board, **durations}
    unique = len({j.hash for j in selected})
    lines = [
        f"{suite}: {unique} jobs selected, {unique - len(pending)} stored, {len(pending)} would run"
    ]
    counts = Counter(job_kind(j) for j in pending)
    total, unknown = 0.0, 0
    for kind, n in sorted(counts.items()):
        mean = durations.get(kind)
        total += (mean or 0.0) * n
        unknown += n if mean is None else 0
        estimate = f"~{mean * n:,.0f} s" if mean is not None else "no timing stored"
        lines.append(f"  {' / '.join(kind):60s} {n:5d} jobs  {estimate}")
    if pending and unknown == len(pending):
        lines.append("estimate: none yet (no job of these kinds is in the store or its board)")
        return lines
    hint = f"; {unknown} jobs have no stored timing" if unknown else ""
    used = {job_kind(j) for j in pending} & set(from_board)
    source = (
        f"; {len(used)} kinds timed from the committed board {board_dir} (stage timings: "
        "shared artifacts count in every job, so high where jobs share them)"
        if used
        else ""
    )
    lines.append(f"estimate: ~{total / 60:,.1f} min of job time (divide by --jobs){hint}{source}")
    return lines
