"""The audit's draws and what they buy: every block from its own generator (so neither the
work-unit size, nor the number of worker threads, nor torch's thread count changes a
number), releases handed to the mechanism one block at a time and reduced as they are
drawn, and the planned size refuting a mechanism at 1.25x its claim while one at its claim
passes."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import pytest
import torch
from torch import nn

from bench.certify.audit import draws
from bench.certify.audit.core import MIN_SELECT, SELECT_FRACTION, _laplace_ratio, audit_mechanism
from bench.certify.audit.draws import Stream, block_generator, block_rows, run_streams
from bench.certify.audit.power import plan_at
from bench.plugin.accounting import gaussian_sigma
from bench.plugin.input_space import InputSpaceMechanism
from bench.plugin.protocols import (
    DataSplit,
    Guarantee,
    NoiseModel,
    Release,
    Splits,
    Task,
)
from bench.tasks.images import FashionMNIST
from mechanisms.noise.input_noise import GaussInput

DIM = 4
IMAGES = FashionMNIST(n_train=10, n_aux=10, n_test=10)
IMAGES.splits()

pytestmark = pytest.mark.usefixtures("one_thread")


class SmallTask(Task):
    """Sixteen inputs near 0 in a wide box [-10, 10]^4: pairs at the radius never touch the
    box, and four coordinates keep planned audits of millions of draws fast."""

    name = "test-small"
    version = "1"
    modality = "vector"
    input_shape = (DIM,)
    data_range = (-10.0, 10.0)
    num_classes = 2

    def splits(self) -> Splits:
        x = torch.randn(16, DIM, generator=torch.Generator().manual_seed(0))
        part = DataSplit(x, torch.zeros(16, dtype=torch.long))
        return Splits(part, part, part)

    def model(self, arch: str = "default") -> nn.Module:
        return nn.Linear(DIM, 2)


SMALL = SmallTask()
GAUSS = {"eps": 2.0, "delta": 1e-5, "r": 0.5}
SIZE = {"n_select": 10_000, "n_draws": 50_000}  # small: the same numbers are the point


def _gauss_input(task: Task = SMALL, factor: float = 1.0, **params: Any) -> GaussInput:
    """gauss-input with its calibrated noise scaled by `factor`, still claiming its eps."""
    mech = GaussInput(**(GAUSS | params))
    noise = mech.calibrate(task)
    mech._noise = NoiseModel(noise.kind, noise.scale * factor)
    return mech


def _numbers(result) -> dict:
    """Every field of a result but the ones that say how it was run (time, threads)."""
    return {k: v for k, v in result.to_dict().items() if k not in ("seconds", "workers")}


class NoEncoder(InputSpaceMechanism):
    """gauss-input without an exposed encoder: the audit falls back to the projection on the
    difference of empirical mean releases, estimated from draws of their own."""

    name = "test-no-encoder"
    defaults: ClassVar[dict[str, Any]] = {"eps": 2.0, "delta": 1e-5, "r": 0.5}

    def calibrate(self, task: Task) -> NoiseModel:
        return NoiseModel("gaussian", gaussian_sigma(2.0, 1e-5, 0.5)[0])

    def guarantee(self) -> Guarantee:
        return Guarantee("ip", {"eps": 2.0, "delta": 1e-5, "radius": 0.5}, "l2/input")

    def encoder(self) -> None:  # type: ignore[override]
        return None

    def noise(self) -> None:  # type: ignore[override]
        return None


def _no_encoder() -> NoEncoder:
    mech = NoEncoder()
    mech._noise = mech.calibrate(SMALL)
    return mech


class BatchSpy(GaussInput):
    """gauss-input that records the largest batch release() is handed."""

    largest = 0

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        BatchSpy.largest = max(BatchSpy.largest, len(x))
        return super().release(x, generator)


# --------------------------------------------------------------------------- blocks


def test_each_block_draws_from_the_generator_of_its_index() -> None:
    stream = Stream("unit", 10_000, 300, lambda m, gen: torch.rand(m, generator=gen))
    direct = [torch.rand(m, generator=block_generator(7, "unit", b)) for b, m in stream.blocks()]
    for workers, chunk in ((1, 300), (2, 900), (2, 10_000), (1, 1)):
        (blocks,) = run_streams([stream], 7, workers=workers, chunk=chunk)
        assert all(torch.equal(a, b) for a, b in zip(blocks, direct, strict=True))
    assert [m for _, m in stream.blocks()][-1] == 10_000 - 33 * 300
    other = Stream("other", 10_000, 300, stream.draw)
    assert not torch.equal(run_streams([other], 7)[0][0], direct[0])  # streams never share


def test_the_block_size_is_a_function_of_the_shapes_only() -> None:
    assert block_rows(784 + 784) == draws.BLOCK_VALUES // 1568
    assert block_rows(8) == draws.MAX_BLOCK and block_rows(10**9) == draws.MIN_BLOCK


def test_chunk_size_workers_and_threads_change_no_number() -> None:
    mech = _gauss_input(IMAGES)
    base = audit_mechanism(mech, IMAGES, 3, **SIZE, workers=1, chunk=4096)
    assert base.workers == 1
    other = audit_mechanism(mech, IMAGES, 3, **SIZE, workers=2, chunk=50_000)
    assert other.workers == 2 and _numbers(other) == _numbers(base)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        threaded = audit_mechanism(mech, IMAGES, 3, **SIZE)
    finally:
        torch.set_num_threads(before)
    assert _numbers(threaded) == _numbers(base)
    assert torch.get_num_threads() == before  # the audit gives the thread count back


def test_release_is_handed_one_block_at_a_time() -> None:
    mech = BatchSpy(**GAUSS)
    mech._noise = mech.calibrate(IMAGES)
    BatchSpy.largest = 0
    result = audit_mechanism(mech, IMAGES, 0, n_draws=60_000)
    assert 1 < BatchSpy.largest <= block_rows(2 * 784)
    assert result.releases == 2 * result.n_select * result.n_pairs + 2 * 60_000


# ------------------------------------------------------------------ size and power


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planned_audit_refutes_1_25x_the_claim_and_passes_the_claim(seed: int) -> None:
    """At the planned size (95% power against 1.25x the claim: 0.8x the noise is 1.28x at
    eps 2), the plant is refuted and the correct mechanism passes, not far below the ideal
    bound (a bound far below it would mean the test lost power)."""
    plan = plan_at("gaussian", 2.0, 1e-5, 5_000_000)
    plant = audit_mechanism(_gauss_input(factor=0.8), SMALL, seed)
    correct = audit_mechanism(_gauss_input(), SMALL, seed)
    for result in (plant, correct):
        assert result.n_draws == plan.n_draws and result.power == plan.power >= 0.95
    assert not plant.passed and plant.eps_lb > 2.0, plant.summary()
    assert correct.passed and correct.eps_lb > plan.ideal - 0.25, correct.summary()


def test_gaussian_selection_is_min_select_and_searched_thresholds_get_a_sixteenth() -> None:
    gauss = audit_mechanism(_gauss_input(), SMALL, 0, n_draws=2_000_000)
    assert gauss.n_select == MIN_SELECT and gauss.statistic == "projection"
    blind = audit_mechanism(_no_encoder(), SMALL, 0, n_draws=2_000_000)
    assert blind.n_select == 2_000_000 // SELECT_FRACTION and blind.statistic == "mean-difference"


def test_progress_counts_the_direction_draws_too() -> None:
    calls: list[tuple[int, int]] = []
    result = audit_mechanism(
        _no_encoder(), SMALL, 0, n_draws=50_000, progress=lambda *c: calls.append(c)
    )
    # Without an encoder each pair also draws n_select a side for its mean difference.
    assert result.releases == 2 * 2 * result.n_select * result.n_pairs + 2 * 50_000
    assert calls[-1] == (result.releases, result.releases)


def _whole_ratio(noise: NoiseModel, y: torch.Tensor, m0: torch.Tensor, m1: torch.Tensor):
    y, m0, m1 = y.double(), m0.double(), m1.double()
    return (noise.neg_log_likelihood(y, m0) - noise.neg_log_likelihood(y, m1)).numpy()


def test_laplace_ratio_on_the_differing_coordinates_is_the_whole_ratio() -> None:
    gen = torch.Generator().manual_seed(0)
    noise = NoiseModel("laplace", 0.4)
    m0 = torch.randn(200, generator=gen)
    y = m0 + noise.sample((2000, 200), gen)
    sparse = m0.clone()
    sparse[[3, 17]] += torch.tensor([0.7, -0.2])  # an l1 vertex-like pair: exact path
    ours = _laplace_ratio(m0, sparse, 0.4)(y).numpy()
    assert np.allclose(ours, _whole_ratio(noise, y, m0, sparse), atol=1e-8)
    # Its largest value is an atom, exactly ||Delta||_1 / b, hit by many draws at once.
    atom = float((sparse.double() - m0.double()).abs().sum()) / 0.4
    assert ours.max() == pytest.approx(atom, abs=1e-9) and (ours == ours.max()).sum() > 20
    dense = m0 + 0.05 * torch.randn(200, generator=gen)  # every coordinate: clamp path
    ours = _laplace_ratio(m0, dense, 0.4)(y).numpy()
    assert np.allclose(ours, _whole_ratio(noise, y, m0, dense), atol=1e-4)
    part = m0.clone()
    part[:100] = dense[:100]  # some of them: clamp path on the differing ones
    ours = _laplace_ratio(m0, part, 0.4)(y).numpy()
    assert np.allclose(ours, _whole_ratio(noise, y, m0, part), atol=1e-4)
    assert math.isfinite(float(ours.min()))
