"""Audit of label-only iDP access's own randomised test: the exponential mechanism's keep rate
(LUCID paper, 2025: `lucid`, `naive-idp`, `naive-noise`; mechanisms/label_only/).

The claim is eps-iDP over the leave-one-out neighbours D' = D \\ {d_i} of the training set.
Lemma 3.2 of the LUCID paper proves it by comparing, on a query x, the exponential mechanism with
utility 1 for N's label (trained on D) and the same mechanism with utility 1 for N_i's
label (trained on D'). Where the two labels differ, the audit draws both sides:
- D: the fitted mechanism's own release() of x (its noise decision, its exponential
  mechanism), each draw from a fresh per-input memory, i.e. a fresh run of the mechanism;
  an input it fails to noise answers N's label always and is refuted at once;
- D': the same mechanism serving N_i and noising x (N is a neighbour of D' that disagrees
  with N_i on x, so every one of these mechanisms noises x there).
The test "the answer is N's label" turns the two keep rates into eps_lb (Clopper-Pearson,
bounds.py). Sizes are planned from the claim: the exponential mechanism whose loss on such
a pair is exactly ratio x eps (keep weight e^(ratio eps)) must be refuted in >= 95% of seeds.
LUCID's mechanism keeps with weight e^(eps / 2), and the normaliser e^(eps / 2) + k - 1 is
the same on both sides, so its loss here is eps / 2: a correct mechanism's eps_lb sits near
eps / 2, below `eps_ideal` (the bound for a mechanism exactly at its claim).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from bench.certify.audit.bounds import eps_detectable, eps_lower_bound
from bench.certify.audit.draws import Stream, run_streams
from bench.certify.audit.power import ScoreModel, detection_power, gdp_mu_estimate, ideal_bound
from bench.certify.audit.registry import AuditOptions, Claim
from bench.certify.audit.result import (
    AuditResult,
    audit_generator,
    draw_counter,
    result_builder,
)
from bench.core.device import to_cpu, to_device
from bench.plugin.protocols import Mechanism, Task
from mechanisms.label_only.leave_one_out import StackMember

# Draws per side the planner tries: keep rates are not tail events, so fewer than core.py's.
LADDER = (2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000)
CHUNK = 8192  # releases per block (one generator each, bench/certify/audit/draws.py)
MAX_PAIRS = 3
UNIFORM_CANDIDATES = 2000
SELECT_FRACTION = 8
MIN_SELECT = 1000


def claims_idp(claim: Claim) -> bool:
    """Whether a claim is individual DP, the claim a keep rate tests."""
    return claim.notion == "idp"


class _Fresh(dict):
    """A per-input memory that remembers nothing: each draw is a fresh run of the mechanism
    (the memory defends repeated queries; the claim is about one answer's law)."""

    def setdefault(self, key: Any, default: Any = None) -> Any:
        return default


def keep_model(eps: float, num_classes: int) -> ScoreModel:
    """The exponential mechanism whose loss on a disagreeing pair is exactly eps, through the
    test "answer = N's label": P_D = w / (w + k - 1), P_D' = 1 / (w + k - 1), w = e^eps."""
    w = math.exp(eps)
    total = w + num_classes - 1
    return ScoreModel(
        fpr=lambda t: np.full(np.shape(t), 1.0 / total),
        fnr=lambda t: np.full(np.shape(t), 1.0 - w / total),
        thresholds=np.zeros(1),
    )


def _neighbour(mechanism: Any, member: int) -> Any:
    """The mechanism on D' = D \\ {d_member}: serving N_member, noising every query."""
    other = copy.copy(mechanism)
    other.model = StackMember(mechanism.arch, {k: v[member] for k, v in mechanism.stacked.items()})
    other.needs_noise = lambda x, logits: torch.ones(len(x), dtype=torch.bool)
    other.memory = _Fresh()
    return other


def _labels(mechanism: Any, x: torch.Tensor) -> torch.Tensor:
    """(networks, N) labels of every stacked network (run on the networks' device, handed
    back on the CPU)."""
    stacked = mechanism.stacked
    n = next(iter(stacked.values())).shape[0]
    x = to_device(x, next(iter(stacked.values())).device)
    with torch.no_grad():
        return to_cpu(
            torch.stack(
                [
                    StackMember(mechanism.arch, {k: v[i] for k, v in stacked.items()})(x).argmax(1)
                    for i in range(n)
                ]
            )
        )


def disagreeing_pairs(mechanism: Any, task: Task, seed: int) -> list[tuple[torch.Tensor, int]]:
    """Up to MAX_PAIRS (query, i) with N_i's label != N's: test records, and uniform points
    of [0, 1]^d when the records have no one-hot groups (so every query is a valid record
    the mechanism answers as is); distinct queries, in a seeded order."""
    x = task.splits().test.x.float()
    gen = audit_generator(seed, "label/pairs")
    if not getattr(mechanism, "groups", ()):
        x = torch.cat([x, torch.rand(UNIFORM_CANDIDATES, *x.shape[1:], generator=gen)])
    x = x[torch.randperm(len(x), generator=gen)]
    labels = _labels(mechanism, x)
    differ = labels[1:] != labels[0]
    pairs = []
    for j in differ.any(0).nonzero().squeeze(1).tolist()[:MAX_PAIRS]:
        pairs.append((x[j], int(differ[:, j].nonzero()[0, 0]) + 1))
    return pairs


def _keeps(mechanism: Any, x: torch.Tensor, label: int) -> Callable[[int, torch.Generator], int]:
    """A block of m fresh releases of x, reduced to how many answer `label`."""
    batch = x.expand(CHUNK, *x.shape).clone()

    def keeps(m: int, gen: torch.Generator) -> int:
        release = mechanism.release(batch[:m].clone(), gen)
        return int((release.values.argmax(1) == label).sum())

    return keeps


def _draws(
    mechanism: Any,
    pair: tuple[torch.Tensor, int],
    n: int,
    seed: int,
    tag: str,
    counted: Callable[[int], None],
) -> tuple[int, int]:
    """Keep counts (D' side, D side) of `pair`, each of n fresh releases: the D' side's
    answers of N's label are the test's false positives, the D side's other answers its
    false negatives (n - keeps)."""
    x, member = pair
    label = int(_labels(mechanism, x.unsqueeze(0))[0, 0])
    neighbour = _neighbour(mechanism, member)
    saved = mechanism.memory
    mechanism.memory = _Fresh()
    try:
        own, other = run_streams(
            [
                Stream(f"label/{tag}/1", n, CHUNK, _keeps(mechanism, x, label)),
                Stream(f"label/{tag}/0", n, CHUNK, _keeps(neighbour, x, label)),
            ],
            seed,
            workers=1,  # release() of a label-only mechanism keeps a per-input memory
            counted=counted,
        )
    finally:
        mechanism.memory = saved
    return sum(other), n - sum(own)


def plan_keep(
    eps: float, k: int, ratio: float, target: float, alpha: float, cap: int, fixed: int | None
) -> tuple[int, float, float]:
    """(n, power against ratio x eps, ideal bound at the claim) on LADDER (or `fixed`)."""
    alt, at = keep_model(ratio * eps, k), keep_model(eps, k)
    ladder = [fixed] if fixed is not None else [n for n in LADDER if n <= cap] or [LADDER[0]]
    for n in ladder:
        power = detection_power(alt, n, eps, 0.0, alpha)
        if power >= target:
            break
    return n, power, min(eps, ideal_bound(at, n, 0.0, alpha))


def audit_label_only(
    mechanism: Mechanism,
    task: Task,
    seed: int,
    claim: Claim,
    options: AuditOptions,
) -> AuditResult:
    """Audit the keep rate of a label-only iDP mechanism (module docstring); `progress` as
    in core.audit_mechanism."""
    result = result_builder(mechanism, claim, time.perf_counter())
    eps, delta = claim.eps, claim.delta
    n_select, confidence = options.n_select, options.confidence
    mech: Any = mechanism

    if eps is None or not math.isfinite(eps) or eps <= 0:
        return result(
            audited=False,
            reason=(
                f"eps {eps}: the exponential mechanism answers noised queries uniformly, a "
                "0-iDP claim no keep rate can be refuted against with planned power (1.25 x 0 "
                "is the claim itself)"
            ),
        )
    alpha = 1.0 - confidence
    k = int(mech.num_classes)
    networks = next(iter(mech.stacked.values())).shape[0]
    weights = sum(v[0].numel() for v in mech.stacked.values())
    per_draw = networks * weights  # the most a draw costs: naive-idp runs every network
    pairs = disagreeing_pairs(mech, task, seed)
    selection = 2 * max(1, len(pairs)) / SELECT_FRACTION
    cap = int(options.max_cost / (per_draw * (2 + selection)))
    n_eval, power, ideal = plan_keep(
        eps, k, options.ratio, options.target_power, alpha, cap, options.n_draws
    )
    n_sel = n_select if n_select is not None else max(MIN_SELECT, n_eval // SELECT_FRACTION)
    power_fields: dict[str, Any] = {
        "eps_ideal": ideal,
        "power": power,
        "ratio": options.ratio,
        "n_select": n_sel,
        "n_pairs": len(pairs),
        "confidence": confidence,
        "eps_detectable": eps_detectable(n_eval, n_eval, delta, alpha),
    }
    if not pairs:
        return result(
            eps_lb=0.0,
            reason="no leave-one-out network disagrees with N on the candidate queries",
            **power_fields,
        )
    counted = draw_counter(options.progress, 2 * n_sel * len(pairs) + 2 * n_eval)
    best: tuple[float, int] | None = None
    for i, pair in enumerate(pairs):
        fp, fn = _draws(mech, pair, n_sel, seed, f"sel/{i}", counted)
        bound = float(eps_lower_bound(fp, n_sel, fn, n_sel, delta, alpha))
        if best is None or bound > best[0]:
            best = (bound, i)
    assert best is not None
    i = best[1]
    false_pos, false_neg = _draws(mech, pairs[i], n_eval, seed, "eval", counted)
    eps_lb = float(eps_lower_bound(false_pos, n_eval, false_neg, n_eval, delta, alpha))
    return result(
        passed=eps_lb <= eps,
        eps_lb=eps_lb,
        n_draws=n_eval,
        pair=f"query with N_{pairs[i][1]} disagreeing (pair {i + 1} of {len(pairs)})",
        statistic="keep rate (answer = N's label; Lemma 3.2 exponential mechanism)",
        threshold=0.0,
        fpr=false_pos / n_eval,
        fnr=false_neg / n_eval,
        mu_gdp=gdp_mu_estimate(false_pos / n_eval, false_neg / n_eval, n_eval),
        eps_gdp=None,
        releases=2 * n_sel * len(pairs) + 2 * n_eval,
        **power_fields,
    )
