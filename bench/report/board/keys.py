"""The identity of a leaderboard row across runs, shared by compare and provenance."""

from __future__ import annotations

from typing import Any, NamedTuple

from bench.core.hashing import canonical_json


class RowKey(NamedTuple):
    """What identifies a leaderboard row across runs (params as canonical JSON)."""

    task: str
    mechanism: str
    params: str
    attack: str | None
    attack_params: str

    def label(self) -> str:
        attack = self.attack or "-"
        if self.attack and self.attack_params != "{}":
            attack += f" {self.attack_params}"
        return f"{self.task} | {self.mechanism} {self.params} | {attack}"


def row_key(row: dict[str, Any]) -> RowKey:
    """The identity of a leaderboard row (a missing attack_params counts as {})."""
    return RowKey(
        row["task"],
        row["mechanism"],
        canonical_json(row.get("params") or {}),
        row.get("attack"),
        canonical_json(row.get("attack_params") or {}),
    )
