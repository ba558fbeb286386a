"""Which (pair, test, threshold) the input-pair audit's selection picks under three ways of
scoring a candidate, and the eps bound fresh evaluation draws then give, for `ldp-image`.

The audit (bench.certify.audit.core, steps 3 and 4 of its docstring) scores every candidate
test on its selection draws by the bound it "promises" at the evaluation's size, picks the
largest, and only then draws the evaluation. A promise that overstates what a thin tail of
selection draws can support picks a test that the evaluation does not confirm. This probe
draws one selection per seed, exactly as the audit does (same pairs, same streams, same
seed), scores the candidates three ways, and evaluates each distinct choice on the audit's
own evaluation streams:

- `one-sigma`: the audit's rule in bench 0.1.0 (thresholds.best_threshold): error rates
  bounded one sigma up (Clopper-Pearson at 0.16), scaled to the evaluation's size;
- `alpha/2`: the same, with the rates bounded at the confidence the final bound uses
  (Clopper-Pearson at alpha / 2, bounds.eps_lower_bound), so a tail holds no more promise
  than it could certify;
- `at-selection`: the bound the selection draws themselves certify (no scaling);
- `pair-by-alpha/2`: the (pair, test) ranked by its `alpha/2` promise, its threshold then
  chosen by `one-sigma` (the threshold search within one test keeps its reach into the tail,
  the choice between pairs stops rewarding the luckiest tail).

The `one-sigma` choice at the audit's seed reproduces the committed board's eps_audit_lb
(the audit seed of a seed-0 job is 0), which checks that the probe is the audit.

Usage (from the checkout root): python studies/audit-selection/probes/selection_criteria.py
faces 10 3000000 0 1 2
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np
import torch

from bench.certify.audit import core
from bench.certify.audit.bounds import clopper_pearson_upper, eps_lower_bound
from bench.certify.audit.draws import CHUNK_RELEASES, block_rows, run_streams
from bench.certify.audit.releases import Releases
from bench.certify.audit.thresholds import _candidate_thresholds, best_threshold
from bench.core.threads import pinned_threads
from bench.plugin.protocols import Task
from bench.tasks.faces import Faces
from bench.tasks.images import FashionMNIST
from mechanisms.noise.input_noise import LDPImage

ALPHA = 0.05
DRAWS = {"workers": 2, "chunk": CHUNK_RELEASES}
Rule = Callable[[np.ndarray, np.ndarray, float, int], tuple[float, float]]


def task_named(name: str) -> Task:
    """The track tasks at their track sizes (bench/suite/files/track-*.toml)."""
    if name == "faces":
        return Faces()
    if name == "fmnist":
        return FashionMNIST(n_train=10000, n_aux=1000, n_test=2000, train_epochs=3)
    raise SystemExit(f"unknown task {name!r}: faces or fmnist")


def ldp_image(task: Task, eps: float) -> LDPImage:
    """ldp-image calibrated for `task` (its audit needs the noise only, not the classifier)."""
    mechanism = LDPImage(eps=eps)
    mechanism.task, mechanism.device = task, torch.device("cpu")
    mechanism._noise = mechanism.calibrate(task)
    return mechanism


def one_sigma(s0: np.ndarray, s1: np.ndarray, delta: float, n_eval: int) -> tuple[float, float]:
    """The audit's own rule (thresholds.best_threshold at the evaluation's size)."""
    return best_threshold(s0, s1, delta, ALPHA, n_eval)


def at_selection(s0: np.ndarray, s1: np.ndarray, delta: float, n_eval: int) -> tuple[float, float]:
    """The bound the selection draws certify at their own size (best_threshold unscaled)."""
    return best_threshold(s0, s1, delta, ALPHA)


def alpha_half(s0: np.ndarray, s1: np.ndarray, delta: float, n_eval: int) -> tuple[float, float]:
    """best_threshold's candidates and scaling, with the selection rates bounded at the final
    bound's level (Clopper-Pearson at alpha / 2) instead of one sigma."""
    s0, s1 = np.sort(s0), np.sort(s1)
    candidates = _candidate_thresholds(s0, s1)
    false_pos = len(s0) - np.searchsorted(s0, candidates, side="right")
    false_neg = np.searchsorted(s1, candidates, side="right")
    fpr = clopper_pearson_upper(false_pos, len(s0), ALPHA / 2)
    fnr = clopper_pearson_upper(false_neg, len(s1), ALPHA / 2)
    bounds = eps_lower_bound(fpr * n_eval, n_eval, fnr * n_eval, n_eval, delta, ALPHA)
    i = int(np.argmax(bounds))
    return float(candidates[i]), float(bounds[i])


RULES: dict[str, Rule] = {
    "one-sigma": one_sigma,
    "alpha/2": alpha_half,
    "at-selection": at_selection,
}
# rule name -> (the rule ranking the (pair, test) candidates, the rule setting the threshold)
CHOICES = {name: (name, name) for name in RULES} | {"pair-by-alpha/2": ("alpha/2", "one-sigma")}


def probe(task: Task, eps: float, n_eval: int, seed: int) -> None:
    """One audit's selection, scored by every rule, and each distinct choice evaluated."""
    mechanism = ldp_image(task, eps)
    claim = mechanism.guarantee().claim()
    pairs = core.audit_pairs_for(mechanism, task, claim, seed, 2, 1)
    dim = int(pairs[0].x0.numel())
    releases = Releases(mechanism, block_rows(2 * dim), seed, True)
    scorers = [core.distinguishers(mechanism, pair, dim) for pair in pairs]
    n_sel = core.selection_size(n_eval, None, False)
    streams = [
        core.score_stream(f"sel/{i}/{side}", releases.source(x), n_sel, releases.block, scorers[i])
        for i, pair in enumerate(pairs)
        for side, x in enumerate((pair.x0, pair.x1))
    ]
    drawn = run_streams(streams, seed, **DRAWS)
    evaluated: dict[tuple, float] = {}
    scored: dict[tuple[int, str], dict[str, tuple[float, float]]] = {}
    for i in range(len(pairs)):
        for statistic in scorers[i]:
            s0 = np.concatenate([b[statistic] for b in drawn[2 * i]])
            s1 = np.concatenate([b[statistic] for b in drawn[2 * i + 1]])
            scored[i, statistic] = {
                name: rule(s0, s1, claim.delta, n_eval) for name, rule in RULES.items()
            }
    for rule_name, (ranking, thresholding) in CHOICES.items():
        i, statistic = max(scored, key=lambda c: scored[c][ranking][1])
        threshold, promise = scored[i, statistic][thresholding]
        scorer = scorers[i][statistic]
        key = (i, statistic, threshold)
        if key not in evaluated:
            start = time.perf_counter()
            choice = core._Choice(promise, i, statistic, threshold, scorer)
            fp, fn = core._evaluate(choice, pairs[i], releases, seed, n_eval, dict(DRAWS))
            evaluated[key] = float(eps_lower_bound(fp, n_eval, fn, n_eval, claim.delta, ALPHA))
            seconds = f"{time.perf_counter() - start:.0f} s"
        else:
            seconds = "same choice"
        print(
            f"seed {seed} | {rule_name:12s} | pair {i + 1} of {len(pairs)} "
            f"({pairs[i].kind}) | {statistic:16s} | promised {promise:.4f} | "
            f"eps_lb {evaluated[key]:.4f} | {seconds}",
            flush=True,
        )


def main(argv: list[str]) -> None:
    task_name, eps, n_eval, *seeds = argv
    task = task_named(task_name)
    print(f"# ldp-image(eps={float(eps)}) on {task_name}, {int(n_eval):,} evaluation draws a side")
    with pinned_threads(1):  # the audit's own setting (bench.certify.audit.core)
        for seed in seeds or ["0"]:
            probe(task, float(eps), int(n_eval), int(seed))


if __name__ == "__main__":
    main(sys.argv[1:])
