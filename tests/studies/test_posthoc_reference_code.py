"""The attribution study's mechanism `posthoc-ptr-reference-code`: posthoc-ptr with the
switches for the paper's public code (its sensitivity, the l_inf -> l_inf constant, declared
not private and never ranked; its training recipe, checkpoint rule, classifier, adversary and
a hand-set proposal), and the product posthoc-ptr without them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from bench.core.errors import ConfigError
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.checks import MechanismUnderTest, check_declares_guarantee
from bench.plugin.protocols import FitContext
from bench.report.board import rows as report_rows
from bench.report.board.frontier import frontier_points
from bench.report.board.labels import WORST_CASE, describe_guarantee
from bench.report.board.overview import task_overview
from bench.suite.read import make_task
from mechanisms.posthoc import models
from mechanisms.posthoc.mechanism import PosthocPTR
from studies.posthoc_attribution.mechanism import (
    NOT_PRIVATE,
    SWITCH_DEFAULTS,
    PosthocPTRReferenceCode,
)
from studies.posthoc_attribution.training import (
    ReferenceCodeRecipe,
    classifier,
    proxy_adversary,
    train_obfuscator,
)
from tests.mechanisms.posthoc.test_posthoc import TINY

Study = PosthocPTRReferenceCode


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Study, Study, Any]:
    """The same embedder and obfuscator (one cache) calibrated to both sensitivities."""
    task = make_task("mnist", {"n_train": 400, "n_aux": 50, "n_test": 50}, "<test>")
    cache = ArtifactCache(Path(tmp_path_factory.mktemp("cache")))
    fits = []
    for sensitivity in ("l1", "reference-code"):
        mech = Study(eps=2.0, R=0.05, variant="encoder", sensitivity=sensitivity, **TINY)
        mech.fit(task, task.splits(), FitContext(0, cache))
        fits.append(mech)
    return fits[0], fits[1], task


def test_reference_code_sensitivity_is_the_smaller_linf_constant(pair) -> None:
    """On the same obfuscator each calibration constant is LipMIP's l1Ball1 value: at most
    the l_inf -> l_1 one and at least 1/k of it (k = 8 outputs), and the release is scaled to
    it (DeltaP R / eps), so it adds up to k times less noise than the Laplace release needs."""
    right, ref, _ = pair
    assert torch.equal(
        torch.cat([p.flatten() for p in right.f.parameters()]),
        torch.cat([p.flatten() for p in ref.f.parameters()]),
    )
    assert right.cfg.out_norm == "l1" and ref.cfg.out_norm == "linf"
    l1, linf = right.calibration["values"], ref.calibration["values"]
    assert np.all(linf <= l1 * (1 + 1e-6)) and np.all(linf >= l1 / 8 * (1 - 1e-6))
    assert np.any(linf < 0.9 * l1)  # a real gap on a trained obfuscator, not a tie
    assert ref.delta_p < right.delta_p
    assert ref.noise().scale == pytest.approx(ref.delta_p * 0.05 / 2.0)


def test_reference_code_rows_declare_their_claim_void(pair) -> None:
    right, ref, _ = pair
    assert right.guarantee().params == {"eps": 4.0, "delta": 0.025, "radius": 0.05}
    claim = ref.guarantee().params
    assert claim["not_private"] == NOT_PRIVATE and claim["eps"] == 4.0
    assert "l_inf -> l_inf" in NOT_PRIVATE and "does not hold" in NOT_PRIVATE
    # a void claim is a well-formed declaration (the contract check accepts the reason)
    mut = MechanismUnderTest(Study, dict(ref.params))
    mut._fitted = ref
    check_declares_guarantee(mut)
    text = describe_guarantee(ref.guarantee().to_dict())
    assert text.startswith("NOT PRIVATE (claimed: ") and NOT_PRIVATE in text


def _setting(params: dict[str, Any], guarantee: dict[str, Any], acc: float, ssim: float):
    common = {"task": "t", "mechanism": "posthoc-ptr", "params": params, "seeds": 1}
    metric = lambda v: {"value": v, "ci": [v - 0.01, v + 0.01], "n": 10}  # noqa: E731
    return [
        {**common, "guarantee": guarantee, "attack": None, "metrics": {"accuracy": metric(acc)}},
        {
            **common,
            "guarantee": guarantee,
            "attack": WORST_CASE,
            "metrics": {"ssim": metric(ssim)},
            "sources": {"ssim": "inverter"},
        },
    ]


def test_void_claims_are_unreliable_and_never_ranked() -> None:
    """A setting declared not private is labelled with the reason and kept off the frontier
    and the best-at-fixed-privacy bands, even where it would dominate every other setting."""
    claim = {"notion": "reconstruction", "eps": 2.0, "delta": 0.025, "radius": 0.2}
    rows = [
        *_setting({"eps": 1.0, "sensitivity": "l1"}, claim, 0.5, 0.3),
        *_setting(
            {"eps": 1.0, "sensitivity": "reference-code"}, {**claim, "not_private": "x"}, 0.9, 0.1
        ),
    ]
    report_rows.flag_unreliable(rows)
    void = [r for r in rows if r["params"]["sensitivity"] == "reference-code"]
    assert all(r["unreliable"] and r["unreliable_reason"] == "x" for r in void)
    assert not any(r["unreliable"] for r in rows if r not in void)
    _, points = frontier_points(rows, "accuracy")
    assert [p.params["sensitivity"] for p in points] == ["l1"] and points[0].pareto
    overview = task_overview(rows, "accuracy")
    best = {
        band["label"]: band["entries"][0]["line"] if band["entries"] else None
        for band in overview["ranked"]
    }
    assert best["attack SSIM ≤ 0.2"] is None  # only the void setting reaches SSIM <= 0.2
    assert best["attack SSIM ≤ 0.4"]["all_params"] == "eps=1, sensitivity=l1"
    # nor is it ranked on its claim: the void eps is no privacy level
    claimed = [b for b in overview["ranked"] if b["kind"] == "claim"]
    assert all(e["line"]["not_private"] == "" for b in claimed for e in b["entries"])
    assert [line["not_private"] for line in overview["lines"]] == ["", "x"]
    # an audit that also refutes the void claim adds its own reason
    rows[2]["metrics"]["eps_audit_lb"] = {"value": 3.1, "ci": [3.1, 3.1], "n": 1}
    report_rows.flag_unreliable(rows)
    assert void[0]["unreliable_reason"] == "x; privacy audit: eps lower bound 3.1 > claimed 2"


def test_reference_code_recipe_shape_and_inert_contrastive_term() -> None:
    """The public code's recipe: obfuscator [in, 10, out], and its contrastive term taken on
    the embedding, which leaves f's training exactly that of the plain encoder."""
    gen = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    z, x = torch.randn(256, 8, generator=gen()), torch.rand(256, 1, 28, 28, generator=gen())
    y = torch.randint(0, 10, (256,), generator=gen())

    def train(variant: str, recipe: str) -> torch.Tensor:
        torch.manual_seed(0)
        f, _ = train_obfuscator(z, x, y, 10, variant, 2, gen(), recipe=recipe)
        return torch.cat([p.detach().flatten() for p in f.parameters()])

    ref_c, ref_enc = train("c", "reference-code"), train("encoder", "reference-code")
    assert torch.equal(ref_c, ref_enc) and ref_c.numel() == 8 * 10 + 10 + 10 * 8 + 8
    assert not torch.equal(train("c", "bench"), train("encoder", "bench"))


def test_hand_set_proposal_is_the_deltap_that_the_test_and_the_release_use(pair) -> None:
    """A hand-set `proposal` replaces the calibrated DeltaP in PTR's test and in the release
    scale (DeltaP R / eps); the calibration is still run and reported."""
    right, _, task = pair
    cache = ArtifactCache(right.ctx.cache.root)
    mech = Study(eps=2.0, R=0.05, variant="encoder", proposal=0.5, **TINY)
    mech.fit(task, task.splits(), FitContext(0, cache))
    assert mech.delta_p == 0.5 and mech.cfg.delta_p == 0.5
    assert mech.noise().scale == pytest.approx(0.5 * 0.05 / 2.0)
    assert mech.calibration["delta_p"] == right.delta_p != 0.5
    assert mech.claim_metrics(task, task.splits())["delta_p"].value == 0.5


def test_reference_code_checkpoint_keeps_the_epoch_with_the_lowest_criterion() -> None:
    """The public code's checkpoint rule returns the networks of the epoch whose criterion
    (alpha * reconstruction MSE + (1 - alpha) * CE for ARL) was lowest: exactly those of a
    run stopped at that epoch, since reading the criterion draws no randomness. The images
    are a function of the embedding, so the obfuscator's hiding raises the criterion after
    the decoder's first gains, and the rule keeps an early epoch."""
    gen = lambda: torch.Generator().manual_seed(1)  # noqa: E731
    z = torch.randn(256, 8, generator=gen())
    x = torch.sigmoid(z @ torch.randn(8, 64, generator=gen())).reshape(256, 1, 8, 8)
    y = (z[:, 0] > 0).long() + 2 * (z[:, 1] > 0).long()

    def train(epochs: int, checkpoint: str, trace: list[float] | None = None) -> torch.Tensor:
        torch.manual_seed(0)
        f, h = train_obfuscator(
            z, x, y, 4, "arl", epochs, gen(), batch_size=32, checkpoint=checkpoint, trace=trace
        )
        return torch.cat([p.detach().flatten() for p in (*f.parameters(), *h.parameters())])

    trace: list[float] = []
    selected = train(8, "reference-code", trace)
    best_epoch = int(np.argmin(trace)) + 1
    assert len(trace) == 8 and 1 < best_epoch < 8
    assert torch.equal(selected, train(best_epoch, "last"))
    last_trace: list[float] = []  # reading the criterion under "last" changes nothing
    assert not torch.equal(selected, train(8, "last", last_trace)) and last_trace == trace


def test_bad_switch_values_are_one_line_errors() -> None:
    for bad in (
        {"sensitivity": "linf"},
        {"lipschitz_method": "regions"},
        {"recipe": "paper"},
        {"checkpoint": "best"},
        {"classifier": "paper"},
        {"adversary": "paper"},
        {"proposal": -1.0},
        {"proposal": float("inf")},
    ):
        with pytest.raises(ConfigError):
            Study(**bad)
    with pytest.raises(ConfigError, match="unknown checkpoint rule"):
        ReferenceCodeRecipe(checkpoint="best")


def test_reference_code_classifier_is_affine_at_evaluation() -> None:
    """The public code's Fashion-MNIST prediction model: its LeakyReLU slope of 1.0 makes
    every activation the identity, so in evaluation mode it maps affine combinations of
    inputs to the same combinations of outputs; bench's ReLU classifier does not."""
    torch.manual_seed(0)
    u, v = torch.randn(64, 8, dtype=torch.float64), torch.randn(64, 8, dtype=torch.float64)
    for kind, affine in (("reference-code", True), ("bench", False)):
        h = classifier(8, 10, kind=kind).double()
        h.train()
        h(torch.randn(256, 8, dtype=torch.float64))  # move the batch-norm statistics
        h.eval()
        mixed = h(0.3 * u + 0.7 * v)
        assert torch.allclose(mixed, 0.3 * h(u) + 0.7 * h(v), atol=1e-10) is affine
    reference = classifier(8, 10, kind="reference-code")
    assert [m.p for m in reference if isinstance(m, torch.nn.Dropout)] == [0.2, 0.2, 0.1, 0.1]
    assert sum(isinstance(m, torch.nn.BatchNorm1d) for m in reference) == 4


def test_reference_code_classifier_fits_deterministically_and_releases_in_eval_mode(
    tmp_path: Path,
) -> None:
    """With the public code's classifier (batch norm, dropout), two fits from empty caches
    give the same networks, and the fitted classifier predicts in evaluation mode, so the
    same release gets the same labels."""
    task = make_task("mnist", {"n_train": 400, "n_aux": 50, "n_test": 50}, "<test>")
    preds = []
    for run in range(2):
        mech = Study(eps=5.0, R=0.05, variant="encoder", classifier="reference-code", **TINY)
        mech.fit(task, task.splits(), FitContext(0, ArtifactCache(tmp_path / str(run))))
        assert not mech.h.training
        release = mech.release(task.splits().test.x, torch.Generator().manual_seed(0))
        preds.append(mech.predict(release))
        assert torch.equal(preds[-1], mech.predict(release))
    assert torch.equal(preds[0], preds[1])


def test_reference_code_adversary_decodes_to_the_image_with_raw_outputs() -> None:
    """The public code's convolutional decoder returns a flattened image of the input's shape
    for its two image sizes, with batch norm and no sigmoid (bench's MLP ends in one); any
    other image shape is a one-line error, not a shape mismatch inside the loss."""
    codes = torch.randn(16, 8)
    for shape in ((1, 28, 28), (3, 32, 32)):
        decoder = proxy_adversary(8, shape, "reference-code")
        assert decoder(codes).shape == (16, int(np.prod(shape)))
        assert any(isinstance(m, torch.nn.BatchNorm2d) for m in decoder.modules())
        assert not any(isinstance(m, torch.nn.Sigmoid) for m in decoder.modules())
    assert isinstance(proxy_adversary(8, (1, 28, 28), "bench")[-1], torch.nn.Sigmoid)
    with pytest.raises(ConfigError, match="1x25x25"):
        proxy_adversary(8, (1, 25, 25), "reference-code")


def test_reference_code_adversary_changes_only_arl_training_and_is_deterministic() -> None:
    """The adversary is part of the ARL term alone: encoder's obfuscator is the same under
    both adversaries, arl's differs, and two trainings with the decoder agree exactly."""
    task = make_task("mnist", {"n_train": 256, "n_aux": 16, "n_test": 16}, "<test>")
    train = task.splits().train
    z = torch.randn(len(train.x), 8, generator=torch.Generator().manual_seed(1))

    def weights(variant: str, adversary: str) -> torch.Tensor:
        torch.manual_seed(0)
        f, _ = train_obfuscator(
            z,
            train.x,
            train.y,
            10,
            variant,
            2,
            torch.Generator().manual_seed(2),
            alpha=0.9,
            adversary_kind=adversary,
        )
        return torch.cat([p.detach().flatten() for p in f.parameters()])

    assert torch.equal(weights("encoder", "bench"), weights("encoder", "reference-code"))
    decoder_run = weights("arl", "reference-code")
    assert torch.equal(decoder_run, weights("arl", "reference-code"))
    assert not torch.equal(decoder_run, weights("arl", "bench"))


def test_the_product_has_none_of_the_study_switches() -> None:
    """posthoc-ptr's parameters are bench's alone: the six switches exist only on the study
    mechanism, which adds exactly them, with bench's values as defaults, to the product's."""
    product = {f.name for f in dataclasses.fields(PosthocPTR.Params)}
    study = {f.name: f.default for f in dataclasses.fields(Study.Params)}
    assert not product & set(SWITCH_DEFAULTS)
    assert set(study) == product | set(SWITCH_DEFAULTS)
    assert {k: study[k] for k in SWITCH_DEFAULTS} == SWITCH_DEFAULTS
    assert "lipschitz_method" in product  # the solver choice is a user's, and stays
    for switch in SWITCH_DEFAULTS:
        with pytest.raises(ConfigError, match="no parameter"):
            PosthocPTR(**{switch: SWITCH_DEFAULTS[switch]})
    assert Study.name == "posthoc-ptr-reference-code" and issubclass(Study, PosthocPTR)


def test_the_study_at_its_defaults_computes_what_the_product_computes(tmp_path: Path) -> None:
    """From separate caches, the study mechanism at its defaults trains the same networks,
    calibrates the same DeltaP, makes the same claim and releases the same values as
    posthoc-ptr (arl-c-n: every training term is exercised)."""
    task = make_task("mnist", {"n_train": 300, "n_aux": 20, "n_test": 20}, "<test>")
    x = task.splits().test.x
    fits = []
    for cls in (PosthocPTR, Study):
        mech = cls(eps=5.0, R=0.05, variant="arl-c-n", **TINY)
        mech.fit(task, task.splits(), FitContext(0, ArtifactCache(tmp_path / cls.name)))
        fits.append((mech, mech.release(x, torch.Generator().manual_seed(3))))
    (product, out_p), (study, out_s) = fits
    for a, b in zip(product.f.state_dict().values(), study.f.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert np.array_equal(product.calibration["values"], study.calibration["values"])
    assert product.delta_p == study.delta_p and product.cfg == study.cfg
    assert product.guarantee() == study.guarantee()
    assert torch.equal(out_p.values, out_s.values) and torch.equal(out_p.released, out_s.released)
    assert torch.equal(product.predict(out_p), study.predict(out_s))


def test_the_study_recipe_at_its_defaults_is_benchs_hook_for_hook() -> None:
    """ReferenceCodeRecipe() trains exactly as mechanisms.posthoc.models' bench recipe, on
    every variant part (the loop's random draws are the same)."""
    gen = lambda: torch.Generator().manual_seed(0)  # noqa: E731
    z, x = torch.randn(200, 8, generator=gen()), torch.rand(200, 1, 28, 28, generator=gen())
    y = torch.randint(0, 10, (200,), generator=gen())

    def weights(recipe: models.TrainingRecipe) -> torch.Tensor:
        torch.manual_seed(0)
        f, h = models.train_obfuscator(z, x, y, 10, "arl-c-n", 2, gen(), recipe=recipe)
        return torch.cat([p.detach().flatten() for p in (*f.parameters(), *h.parameters())])

    assert torch.equal(weights(models.BENCH_RECIPE), weights(ReferenceCodeRecipe()))
