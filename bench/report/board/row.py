"""The leaderboard row: one (task, mechanism, params, attack) setting aggregated over seeds.

Rows stay plain dicts on disk (leaderboard.json, checked against schemas/leaderboard.schema.json),
and these TypedDicts name their keys and types for the code that builds and reads them. The
keys are the schema's row properties exactly (tests/bench/report/board/test_schema.py checks both
ways), so a new key is added here and in the schema together.
"""

# No `from __future__ import annotations`: TypedDict reads Required[...] from evaluated
# annotations only.
from typing import Any, Literal, Required, TypedDict


class Metric(TypedDict):
    """A metric's mean over seeds with its 95% bootstrap CI and the number of samples."""

    value: float
    ci: list[float]
    n: int


class Provenance(TypedDict, total=False):
    """Versions of what produced the row's jobs (bench.report.board.provenance)."""

    task_version: Required[str]
    data_hash: Required[str]
    code_version: Required[str]
    suite_version: Required[str]
    torch_threads: str
    device: str


class Row(TypedDict, total=False):
    """One leaderboard row: the setting, its claim, and its metrics; then what assembly adds
    (flags, provenance, environment, links). `attack` is None on the utility row and
    "worst case" on the strongest-attack row of a setting."""

    task: Required[str]
    mechanism: Required[str]
    params: Required[dict[str, Any]]
    guarantee: Required[dict[str, Any]]
    attack: Required[str | None]
    attack_params: dict[str, Any]
    seeds: Required[int]
    metrics: Required[dict[str, Metric]]
    sources: dict[str, str]  # worst-case rows: the attack behind each metric
    source: str
    unreliable: bool
    unreliable_reason: str
    at_chance: bool
    at_chance_reason: str
    constant_predictor: bool
    bound_basis: Literal["theorem", "estimate"]
    expected_failures: dict[str, str]
    provenance: Provenance
    paper: str
    docs: str
    environment: dict[str, str]
