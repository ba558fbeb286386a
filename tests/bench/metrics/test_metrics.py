"""Metrics against known values, bootstrap CI coverage and seed aggregation."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch
from skimage.metrics import structural_similarity
from sklearn.metrics import roc_auc_score

from bench.core.errors import ConfigError, UnknownNameError
from bench.metrics import METRICS, MetricResult, MetricSpec, metric_spec, register_metric
from bench.metrics.reconstruction import l1, l2, mse, psnr, ssim
from bench.metrics.stats import aggregate_seeds, bootstrap_ci, scalar, summarize
from bench.metrics.utility import accuracy, auc

DESIGN_NAMES = [
    *("accuracy", "auc", "mse", "psnr", "ssim", "l1", "l2", "top1", "top5", "bound_mse"),
    *("bound_validity", "release_rate", "eps_audit_lb", "fit_s", "release_ms", "attack_s"),
]


def _image(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """A smooth-ish random image in [0, 1] (blurred noise, so SSIM is meaningful)."""
    rng = np.random.default_rng(seed)
    a = rng.random(shape)
    return (a + np.roll(a, 1, -1) + np.roll(a, 1, -2)) / 3.0


# ------------------------------------------------------------------ registry


def test_registry_has_every_design_metric_with_directions() -> None:
    assert set(DESIGN_NAMES) <= set(METRICS)
    assert metric_spec("mse").better == "higher"
    assert metric_spec("ssim").better == "lower"
    assert metric_spec("accuracy").better == "higher"
    assert metric_spec("eps_audit_lb").better == "lower"
    assert metric_spec("bound_validity").kind == "bound"
    assert {metric_spec(n).kind for n in ("fit_s", "release_ms", "attack_s")} == {"cost"}


def test_unknown_metric_is_one_line_error_listing_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        metric_spec("msee")
    msg = str(info.value)
    assert "\n" not in msg and "msee" in msg and "mse" in msg and "accuracy" in msg


def test_register_metric_plugin_and_conflict() -> None:
    spec = MetricSpec("test_only_metric", "lower", "privacy", "a test plug-in")
    try:
        register_metric(spec)
        register_metric(spec)  # identical: no-op
        assert metric_spec("test_only_metric") is spec
        with pytest.raises(ConfigError):
            register_metric(MetricSpec("test_only_metric", "higher", "privacy", "other"))
    finally:
        METRICS.pop("test_only_metric", None)


# ----------------------------------------------------------- reconstruction


def test_mse_l1_l2_known_values() -> None:
    x = torch.zeros(2, 2, 2)
    x_hat = torch.tensor([[[1.0, 0.0], [0.0, 0.0]], [[1.0, -1.0], [2.0, 0.0]]])
    np.testing.assert_allclose(mse(x, x_hat), [0.25, 1.5])
    np.testing.assert_allclose(l1(x, x_hat), [1.0, 4.0])
    np.testing.assert_allclose(l2(x, x_hat), [1.0, math.sqrt(6.0)])
    assert mse(x, x_hat).dtype == np.float64 and mse(x, x_hat).shape == (2,)


def test_reconstruction_rejects_shape_mismatch_and_nan() -> None:
    with pytest.raises(ValueError, match="shape"):
        mse(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="finite"):
        l2(np.zeros((1, 3)), np.array([[0.0, np.nan, 0.0]]))


def test_psnr_known_mse_and_data_range() -> None:
    x = np.zeros((1, 100))
    x_hat = np.full((1, 100), 0.1)  # mse 0.01
    np.testing.assert_allclose(psnr(x, x_hat, data_range=1.0), [20.0])
    # The same error measured on a 0-255 scale claims 20 log10(255) dB more.
    np.testing.assert_allclose(psnr(x, x_hat, data_range=255.0), [20.0 + 20 * math.log10(255)])


def test_psnr_perfect_reconstruction_is_100_db_not_inf() -> None:
    x = _image(0, (3, 8, 8))
    out = psnr(x, x.copy(), data_range=1.0)
    np.testing.assert_allclose(out, [100.0] * 3)
    with pytest.raises(ValueError):
        psnr(x, x, data_range=0.0)


def test_ssim_identical_is_one_and_negative_is_low() -> None:
    x = _image(1, (4, 1, 16, 16))
    np.testing.assert_allclose(ssim(x, x, data_range=1.0), 1.0)
    assert (ssim(x, 1.0 - x, data_range=1.0) < 0.5).all()


def test_ssim_matches_skimage_with_same_data_range() -> None:
    x, y = _image(2, (3, 16, 16)), _image(3, (3, 16, 16))
    expect = [structural_similarity(x[i], y[i], data_range=1.0) for i in range(3)]
    np.testing.assert_allclose(ssim(x, y, data_range=1.0), expect)
    # (N, 1, H, W) is the same grey path.
    np.testing.assert_allclose(ssim(x[:, None], y[:, None], data_range=1.0), expect)
    # The reference bug (255 for [0, 1] images) gives a different, inflated number.
    assert (ssim(x, y, data_range=255.0) > ssim(x, y, data_range=1.0)).all()


def test_ssim_colour_uses_channel_axis() -> None:
    x, y = _image(4, (2, 3, 12, 12)), _image(5, (2, 3, 12, 12))
    expect = [structural_similarity(x[i], y[i], data_range=1.0, channel_axis=0) for i in range(2)]
    np.testing.assert_allclose(ssim(torch.tensor(x), torch.tensor(y), data_range=1.0), expect)


def test_ssim_small_images_and_non_images() -> None:
    x, y = _image(6, (2, 5, 6)), _image(7, (2, 5, 6))
    expect = [structural_similarity(x[i], y[i], data_range=1.0, win_size=5) for i in range(2)]
    np.testing.assert_allclose(ssim(x, y, data_range=1.0), expect)
    with pytest.raises(ValueError, match="non-image"):
        ssim(np.zeros((4, 10)), np.zeros((4, 10)), data_range=1.0)
    with pytest.raises(ValueError, match="3 px"):
        ssim(np.zeros((4, 2, 9)), np.zeros((4, 2, 9)), data_range=1.0)


# ----------------------------------------------------------------- utility


def test_accuracy_per_sample() -> None:
    scores = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    np.testing.assert_array_equal(accuracy(scores, torch.tensor([0, 1, 1])), [1.0, 1.0, 0.0])


def test_auc_perfect_and_reversed_binary() -> None:
    labels = np.array([0, 0, 1, 1])
    good = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.1, 0.9]])
    assert auc(good, labels) == 1.0
    assert auc(good[:, ::-1], labels) == 0.0
    assert auc(np.array([0.1, 0.2, 0.7, 0.9]), labels) == 1.0  # single column


def test_auc_multiclass_is_macro_one_vs_rest() -> None:
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 20)
    logits = rng.normal(size=(60, 3)) + 1.5 * np.eye(3)[labels]
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    expect = roc_auc_score(labels, probs, multi_class="ovr", average="macro")
    assert auc(probs, labels) == pytest.approx(expect)
    assert auc(np.eye(3)[labels], labels) == 1.0


# ------------------------------------------------------------------- stats


def test_bootstrap_ci_is_deterministic_and_brackets_mean() -> None:
    x = np.random.default_rng(0).normal(size=200)
    ci = bootstrap_ci(x, seed=3)
    assert ci == bootstrap_ci(x, seed=3)
    assert ci[0] < x.mean() < ci[1]
    assert bootstrap_ci([2.5]) == (2.5, 2.5)


def test_bootstrap_ci_coverage() -> None:
    """The 95% CI covers the true mean in >= 90% of 200 seeded simulations."""
    hits = 0
    for sim in range(200):
        x = np.random.default_rng(1000 + sim).normal(loc=1.0, scale=2.0, size=40)
        lo, hi = bootstrap_ci(x, seed=sim)
        hits += lo <= 1.0 <= hi
    assert hits >= 180


def test_summarize_and_scalar() -> None:
    r = summarize([1.0, 2.0, 3.0, 4.0])
    assert r.value == 2.5 and r.n == 4 and r.ci[0] < 2.5 < r.ci[1]
    assert r.samples is not None and len(r.samples) == 4
    s = scalar(0.25)
    assert (s.value, s.ci, s.n, s.samples) == (0.25, (0.25, 0.25), 1, None)


def test_nan_refused_everywhere() -> None:
    with pytest.raises(ValueError, match="NaN"):
        summarize([1.0, float("nan")])
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_ci(np.array([np.nan]))
    with pytest.raises(ValueError, match="NaN"):
        scalar(float("nan"))
    bad = MetricResult(1.0, (1.0, 1.0), 2, np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="NaN"):
        aggregate_seeds([bad, summarize([1.0, 2.0])])


def test_aggregate_seeds_hierarchical_ci_wider_when_seeds_differ() -> None:
    rng = np.random.default_rng(0)
    per_seed = [summarize(rng.normal(loc=mu, size=300), seed=i) for i, mu in enumerate([0, 1, 2])]
    agg = aggregate_seeds(per_seed)
    assert agg.value == pytest.approx(np.mean([r.value for r in per_seed]))
    assert agg.n == 900
    widest_single = max(r.ci[1] - r.ci[0] for r in per_seed)
    assert agg.ci[1] - agg.ci[0] > 3 * widest_single
    assert agg.ci[0] <= agg.value <= agg.ci[1]
    assert aggregate_seeds(per_seed).ci == agg.ci  # deterministic


def test_aggregate_seeds_one_seed_with_samples_matches_single_bootstrap_width() -> None:
    x = np.random.default_rng(1).normal(size=500)
    single = summarize(x)
    agg = aggregate_seeds([single])
    assert agg.value == pytest.approx(single.value) and agg.n == 500
    assert agg.ci[1] - agg.ci[0] == pytest.approx(single.ci[1] - single.ci[0], rel=0.25)


def test_aggregate_seeds_scalars() -> None:
    agg = aggregate_seeds([scalar(1.0), scalar(2.0), scalar(3.0)])
    assert agg.value == 2.0 and agg.n == 3 and agg.ci[0] < 2.0 < agg.ci[1]
    one = aggregate_seeds([MetricResult(0.5, (0.4, 0.6), 1)])
    assert (one.value, one.ci, one.n) == (0.5, (0.4, 0.6), 1)
    with pytest.raises(ValueError):
        aggregate_seeds([])


def test_aggregate_seeds_is_fast() -> None:
    rng = np.random.default_rng(0)
    results = [MetricResult(0.0, (0.0, 0.0), 1000, rng.normal(size=1000)) for _ in range(10)]
    start = time.perf_counter()
    aggregate_seeds(results, n_boot=1000)
    assert time.perf_counter() - start < 1.0


def test_chance_level_is_the_majority_share_or_half_an_auc() -> None:
    from bench.run.kinds.reconstruction import chance_level

    y = torch.tensor([0, 1, 1, 2, 1, 0, 1, 1])
    assert chance_level("accuracy", y) == pytest.approx(5 / 8)
    assert chance_level("auc", y) == 0.5
    # A constant predictor of the majority class scores exactly that accuracy.
    constant = torch.zeros(len(y), 3)
    constant[:, 1] = 1.0
    assert accuracy(constant, y).mean() == pytest.approx(chance_level("accuracy", y))


def test_utility_rows_record_how_constant_the_predictions_are() -> None:
    """modal_prediction_share is 1.0 exactly for a constant predictor (the row the report
    calls one), and the share of the most frequent predicted class otherwise."""
    from types import SimpleNamespace

    from bench.plugin.protocols import Release
    from bench.run.kinds.reconstruction import utility_metrics

    y = torch.tensor([0, 1, 1, 2, 1, 0, 1, 1])
    task = SimpleNamespace(num_classes=3, utility_metric="accuracy")

    def scores_of(predicted: list[int]) -> SimpleNamespace:
        return SimpleNamespace(predict=lambda release: torch.eye(3)[predicted])

    release = Release.all_released(torch.zeros(8, 2))
    constant = utility_metrics(task, scores_of([1] * 8), release, y, "m")
    assert constant["modal_prediction_share"].value == 1.0
    assert constant["accuracy"].value == constant["chance"].value
    mixed = utility_metrics(task, scores_of([0, 1, 1, 2, 1, 0, 2, 2]), release, y, "m")
    assert mixed["modal_prediction_share"].value == pytest.approx(3 / 8)
