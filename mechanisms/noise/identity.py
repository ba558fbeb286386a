"""`identity`: no protection; the reference row every leaderboard is read against."""

from __future__ import annotations

from bench.plugin.input_space import InputSpaceMechanism
from bench.plugin.protocols import Guarantee
from bench.plugin.registry import register_mechanism


@register_mechanism
class Identity(InputSpaceMechanism):
    """Releases the input unchanged (utility ceiling, attack floor)."""

    name = "identity"
    modalities = frozenset({"image", "tabular", "vector", "ids", "text"})

    def guarantee(self) -> Guarantee:
        return Guarantee("none")
