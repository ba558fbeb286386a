"""The audit's result record and its seeded generators, shared by the input-space audit
(core.py) and the audits families register for their own randomised tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch

from bench.core.hashing import derive_seed
from bench.plugin.notions import Claim


def audit_generator(seed: int, purpose: str) -> torch.Generator:
    """The generator of one part of an audit: a fixed function of the seed and the purpose,
    so every part draws the same numbers on every machine and in every order."""
    return torch.Generator().manual_seed(derive_seed(seed, f"audit/{purpose}"))


# Told (releases drawn so far, releases the audit plans in all) as the audit draws, for a
# caller's progress display (`bench validate`); never read back, so no number depends on it.
Progress = Callable[[int, int], None]


def no_progress(done: int, total: int) -> None:
    """The default Progress: report nothing."""


class DrawCounter:
    """What each finished batch of releases is counted with: `progress` gets the running sum
    out of `total`. `total` may be corrected once the audit knows it better (a pair without
    any test gets no draws), so the estimate never counts releases that will not be drawn."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    def __call__(self, m: int) -> None:
        self.done += m
        self.progress(self.done, max(self.total, self.done))


def draw_counter(progress: Progress, total: int) -> DrawCounter:
    """A DrawCounter telling `progress` of the releases drawn out of `total`."""
    return DrawCounter(progress, total)


@dataclass(frozen=True)
class AuditResult:
    """Outcome of one audit. `passed` is False only when eps_lb > claimed_eps; a claim the
    audit cannot test (`audited` False, `reason` says why) passes without an eps_lb."""

    mechanism: str
    notion: str
    claimed_eps: float | None
    delta: float
    radius: float | None
    audited: bool
    passed: bool
    eps_lb: float | None = None
    eps_detectable: float | None = None
    confidence: float = 0.95
    n_pairs: int = 0
    n_select: int = 0
    n_draws: int = 0
    pair: str = ""
    statistic: str = ""
    threshold: float | None = None
    fpr: float | None = None
    fnr: float | None = None
    eps_ideal: float | None = None  # bound on a mechanism exactly at its claim (power.py)
    power: float | None = None  # chance of refuting a mechanism at `ratio` x the claim
    ratio: float = 1.25
    # The evaluated pair in the declared noise's unit, as a fraction of the claim's worst
    # case (1: the pair is as far apart as the claim allows), and the bound the audit gets
    # on that pair when the noise is as declared (power.pair_ideal); None without a
    # declared noise model and encoder.
    pair_reach: float | None = None
    eps_ideal_pair: float | None = None
    mu_gdp: float | None = None  # Gaussian-DP diagnostic: a point estimate, not a bound
    eps_gdp: float | None = None  # eps at delta of mu_gdp-GDP
    seconds: float = 0.0
    releases: int = 0  # releases drawn in all (direction, selection and evaluation)
    workers: int = 1  # threads that drew them (no number depends on it)
    # Where the releases came from: "release()", or "encoder output + declared noise" once
    # that sum was checked against release() on each input (releases.py); "" if none drawn.
    release_path: str = ""
    reason: str = ""

    def verdict(self) -> str:
        """A few words: "eps_lb 0.41 <= claimed eps 1", or why nothing was audited."""
        if not self.audited:
            return f"not audited: {self.reason}"
        relation = "<=" if self.passed else ">"
        return f"eps_lb {self.eps_lb:.3g} {relation} claimed eps {self.claimed_eps:.4g}"

    def summary(self) -> str:
        """One line for reports: the verdict, the confidence and how it was obtained."""
        if not self.audited or self.n_draws == 0:
            return self.verdict() + (f" ({self.reason})" if self.audited else "")
        gdp = "" if self.eps_gdp is None else f" (eps {self.eps_gdp:.3g})"
        reach = ""
        if self.pair_reach is not None and self.eps_ideal_pair is not None:
            reach = (
                f"; the pair reaches {self.pair_reach:.0%} of the claim's worst case (bound "
                f"on it with the declared noise {self.eps_ideal_pair:.3g})"
            )
        path = f", drawn as {self.release_path}" if self.release_path else ""
        rate = ""
        if self.releases and self.seconds > 0:
            rate = f" ({self.releases:,} releases, {self.releases / self.seconds:,.0f}/s)"
        return (
            f"{self.verdict()}{'' if self.passed else ' (FAIL)'} at "
            f"{self.confidence:.0%} confidence; {self.n_pairs} pairs x 2 x {self.n_select} "
            f"selection draws, 2 x {self.n_draws} evaluation draws on the {self.pair} with the "
            f"{self.statistic} test (FPR {self.fpr:.2g}, FNR {self.fnr:.2g}); power: "
            f"{self.power:.0%} against {self.ratio:g}x the claim, bound on a mechanism at "
            f"the claim {self.eps_ideal:.3g}{reach}, perfect-test ceiling "
            f"{self.eps_detectable:.3g}; GDP diagnostic mu {self.mu_gdp:.3g}{gdp}; "
            f"{self.seconds:.1f} s{rate}{path}"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def result_builder(mechanism: object, claim: Claim, start: float) -> Callable[..., AuditResult]:
    """The result an audit of `mechanism`'s `claim` begun at `start` (perf_counter) returns:
    audited and passed unless the fields say otherwise, timed when it is built."""
    name = getattr(type(mechanism), "name", type(mechanism).__name__)

    def result(**fields: Any) -> AuditResult:
        fields.setdefault("audited", True)
        fields.setdefault("passed", True)
        fields.setdefault("seconds", time.perf_counter() - start)
        return AuditResult(name, claim.notion, claim.eps, claim.delta, claim.radius, **fields)

    return result
