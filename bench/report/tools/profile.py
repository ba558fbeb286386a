"""`bench profile`: where a suite's time went, from the store's own timings. Per stage
(attack fit and reconstruction by attack, mechanism fit, the rest of each job: data,
release, metrics, audit, bounds), per task, per kind of job and the slowest jobs."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from bench.report.board.labels import short_setting, varying_params

TOP = 10


def _stage_seconds(job: dict[str, Any]) -> dict[str, float]:
    """One job's wall time split by stage. Utility jobs record fit_s "as if uncached"
    (cached artifacts count at their build time), so it is capped at the job's wall time."""
    total = float(job["duration_s"])
    if job["attack"] is not None and job["attack_s"] is not None:
        attack = min(float(job["attack_s"]), total)
        return {f"attack: {job['attack']}": attack, "rest of attack jobs": total - attack}
    if job["attack"] is None and job["fit_s"] is not None:
        fit = min(float(job["fit_s"]), total)
        return {"mechanism fit (utility jobs)": fit, "rest of utility jobs": total - fit}
    return {"unsplit": total}


def _table(title: str, totals: dict[str, float], counts: dict[str, int], grand: float) -> list[str]:
    lines = [title]
    for name, seconds in sorted(totals.items(), key=lambda kv: -kv[1])[:TOP]:
        share = 100 * seconds / grand if grand else 0.0
        lines.append(f"  {name:58s} {counts[name]:5d} jobs {seconds:9.1f} s {share:5.1f}%")
    if len(totals) > TOP:
        lines.append(f"  ... {len(totals) - TOP} more")
    return lines


def profile_lines(jobs: list[dict[str, Any]], workers: int = 2) -> list[str]:
    """The profile report of stored job timings (rows of `ResultStore.timings`)."""
    if not jobs:
        return ["no stored jobs to profile"]
    grand = sum(float(j["duration_s"]) for j in jobs)
    lines = [
        f"{len(jobs)} jobs, {grand:,.1f} s of job time "
        f"(~{grand / workers / 60:,.1f} min of wall time with --jobs {workers}, if packed)"
    ]
    stage_s: dict[str, float] = defaultdict(float)
    stage_n: dict[str, int] = defaultdict(int)
    task_s: dict[str, float] = defaultdict(float)
    task_n: dict[str, int] = defaultdict(int)
    kind_s: dict[str, float] = defaultdict(float)
    kind_n: dict[str, int] = defaultdict(int)
    for job in jobs:
        for stage, seconds in _stage_seconds(job).items():
            stage_s[stage] += seconds
            stage_n[stage] += 1
        task_s[job["task"]] += float(job["duration_s"])
        task_n[job["task"]] += 1
        kind = f"{job['task']} / {job['mechanism']} / {job['attack'] or 'utility'}"
        kind_s[kind] += float(job["duration_s"])
        kind_n[kind] += 1
    lines += _table("by stage:", stage_s, stage_n, grand)
    lines += _table("by task:", task_s, task_n, grand)
    lines += _table("by kind of job (task / mechanism / attack):", kind_s, kind_n, grand)
    lines.append("slowest jobs (parameters that differ between the stored settings):")
    varies = {
        task: varying_params([(j["mechanism"], j["params"]) for j in jobs if j["task"] == task])
        for task in {j["task"] for j in jobs}
    }
    for job in sorted(jobs, key=lambda j: -float(j["duration_s"]))[:TOP]:
        shown = varies[job["task"]][job["mechanism"]]
        setting = short_setting(job["mechanism"], job["params"], shown)
        label = f"{job['task']} / {setting} / {job['attack'] or 'utility'}"
        line = f"  {float(job['duration_s']):8.1f} s  {label} / seed {job['seed']}"
        lines.append(line if len(line) <= 140 else line[:137] + "...")
    return lines
