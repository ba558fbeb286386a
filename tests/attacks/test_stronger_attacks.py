"""The stronger attacks: tv's weight and map's shrinkage are chosen from aux (and
reported), the residual inverter and its SSIM objective, the differentiable SSIM equals the
leaderboard's, and the attack-strength report's worst-case logic."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.covariance import OAS

from attacks.inverter import InverterAttack
from attacks.optimization import MAPAttack, TVAttack
from attacks.ssim_loss import ssim_per_sample
from bench.core.errors import ConfigError
from bench.metrics.reconstruction import ssim
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext, Release
from bench.report.tools.attack_strength import (
    attack_set,
    docs_block,
    replace_docs_block,
    report_markdown,
    strength_report,
    write_report,
)
from bench.tasks.images import FashionMNIST
from mechanisms.noise.identity import Identity
from mechanisms.noise.input_noise import GaussInput
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def task() -> FashionMNIST:
    t = FashionMNIST(n_train=200, n_aux=400, n_test=48, train_epochs=1)
    t.splits()
    return t


def _fit(attack, mech, task, tmp_path: Path):
    attack.fit(mech, task, task.splits().aux, FitContext(seed=0, cache=ArtifactCache(tmp_path)))
    return attack


def _gauss(eps: float, task) -> GaussInput:
    mech = GaussInput(eps=eps, r=0.5)
    mech._noise = mech.calibrate(task)  # calibration only: no utility model needed
    return mech


def _mse(attack, mech, task) -> float:
    x = task.splits().test.x
    release = mech.release(x, torch.Generator().manual_seed(7))
    return float((attack.reconstruct(release) - x).pow(2).mean())


def test_tv_weight_is_chosen_on_aux_and_beats_the_fixed_weight(task, tmp_path) -> None:
    """Under heavy noise the paper's fixed 0.05 under-smooths badly; the weight chosen on
    aux queries is the grid's best there and lowers the test error a lot."""
    mech = _gauss(2.0, task)
    tuned = _fit(TVAttack(max_steps=200), mech, task, tmp_path)
    fixed = _fit(TVAttack(max_steps=200, tune_lambda=False), mech, task, tmp_path)
    assert tuned.tuned()["lambda_tv"] in TVAttack.defaults["lambda_grid"]
    assert tuned.tuned()["lambda_tv"] >= 0.3
    assert fixed.tuned() == {}
    assert _mse(tuned, mech, task) < 0.5 * _mse(fixed, mech, task)


def test_tv_tuning_queries_only_aux_inputs(task, tmp_path) -> None:
    """The weight is chosen from releases of aux images the attacker picks, never from
    the target's release or inputs."""
    seen: list[torch.Tensor] = []

    class Recording(GaussInput):
        def release(self, x, generator) -> Release:
            seen.append(x.clone())
            return super().release(x, generator)

    mech = Recording(eps=2.0, r=0.5)
    mech._noise = mech.calibrate(task)
    _fit(TVAttack(max_steps=20, tune_samples=16), mech, task, tmp_path)
    aux = task.splits().aux.x.flatten(1)
    assert len(seen) == 1 and len(seen[0]) == 16
    for row in seen[0].flatten(1):
        assert (aux == row).all(1).any()


def test_tv_refuses_a_bad_grid() -> None:
    for grid in ([], [-1.0], ["a"], [float("nan")]):
        with pytest.raises(ConfigError, match="lambda_grid"):
            TVAttack(lambda_grid=grid)


@pytest.mark.parametrize("method", ["oas", "ledoit-wolf"])
def test_map_shrinkage_is_chosen_from_aux_and_reported(task, tmp_path, method) -> None:
    attack = _fit(MAPAttack(shrinkage=method), _gauss(4.0, task), task, tmp_path)
    alpha = attack.tuned()["prior_shrinkage"]
    assert 0.0 < alpha < 1.0
    if method == "oas":
        flat = task.splits().aux.x.flatten(1).double().numpy()
        assert alpha == pytest.approx(OAS().fit(flat).shrinkage_)
        # the prior covariance is the estimator's plus the variance floor
        expected = torch.from_numpy(OAS().fit(flat).covariance_)
        expected += MAPAttack.defaults["var_floor"] * torch.eye(len(expected), dtype=torch.float64)
        assert torch.allclose(attack.prior_cov, expected)


def test_map_fixed_shrinkage_is_the_previous_prior(task, tmp_path) -> None:
    attack = _fit(MAPAttack(shrinkage="fixed"), _gauss(4.0, task), task, tmp_path)
    assert attack.tuned() == {"prior_shrinkage": 0.1}
    with pytest.raises(ConfigError, match="shrinkage"):
        MAPAttack(shrinkage="median")


def test_differentiable_ssim_equals_the_leaderboard_metric() -> None:
    gen = torch.Generator().manual_seed(3)
    x = torch.rand(6, 1, 28, 28, generator=gen)
    y = (x + 0.2 * torch.randn(x.shape, generator=gen)).clamp(0, 1)
    ours = ssim_per_sample(x, y, 1.0).numpy()
    np.testing.assert_allclose(ours, ssim(x.numpy(), y.numpy(), 1.0), atol=1e-5)
    colour = torch.rand(3, 3, 16, 16, generator=gen)
    blurred = (colour + 0.1 * torch.randn(colour.shape, generator=gen)).clamp(0, 1)
    np.testing.assert_allclose(
        ssim_per_sample(colour, blurred, 1.0).numpy(),
        ssim(colour.numpy(), blurred.numpy(), 1.0),
        atol=1e-4,
    )


@pytest.mark.slow
def test_residual_inverter_recovers_an_unprotected_input_to_ssim_0_9(task, tmp_path) -> None:
    """The default decoder within its default budget, on Fashion-MNIST through identity."""
    mech = Identity()
    mech._noise = mech.calibrate(task)
    attack = _fit(InverterAttack(), mech, task, tmp_path)
    x = task.splits().test.x
    x_hat = attack.reconstruct(Release.all_released(x.clone()))
    assert float(ssim(x.numpy(), x_hat.numpy(), 1.0).mean()) >= 0.9


@pytest.mark.parametrize("make", [TVAttack, MAPAttack], ids=["tv", "map"])
def test_tuned_attacks_recover_an_unprotected_input_to_ssim_0_9(task, tmp_path, make) -> None:
    """With its weight or shrinkage chosen on aux, each attack inverts the identity release
    within its default budget."""
    mech = Identity()
    mech._noise = mech.calibrate(task)
    attack = _fit(make(), mech, task, tmp_path)
    x = task.splits().test.x
    x_hat = attack.reconstruct(Release.all_released(x.clone()))
    assert float(ssim(x.numpy(), x_hat.detach().numpy(), 1.0).mean()) >= 0.9


@pytest.mark.slow
def test_ssim_objective_raises_ssim_over_mse_training(task, tmp_path) -> None:
    mech = _gauss(8.0, task)
    x = task.splits().test.x
    release = mech.release(x, torch.Generator().manual_seed(7))
    scores = {}
    for loss in ("mse", "mse+ssim"):
        attack = _fit(InverterAttack(loss=loss, epochs=20), mech, task, tmp_path)
        scores[loss] = float(ssim(x.numpy(), attack.reconstruct(release).numpy(), 1.0).mean())
    assert scores["mse+ssim"] > scores["mse"]


def test_inverter_refuses_unknown_decoder_and_loss() -> None:
    with pytest.raises(ConfigError, match="decoder"):
        InverterAttack(decoder="unet")
    with pytest.raises(ConfigError, match="loss"):
        InverterAttack(loss="l1")


def _row(attack, params, ssim_v, ssim_ci, mse_v, mse_ci, mech="gauss-input"):
    return {
        "task": "fmnist",
        "mechanism": mech,
        "params": {"eps": 1.0},
        "attack": attack,
        "attack_params": params,
        "guarantee": {"notion": "ip", "eps": 1.0},
        "metrics": {
            "ssim": {"value": ssim_v, "ci": list(ssim_ci), "n": 300},
            "mse": {"value": mse_v, "ci": list(mse_ci), "n": 300},
        },
    }


def test_report_finds_each_sets_worst_case_and_whether_it_moved() -> None:
    rows = [
        _row("optimization", {"max_steps": 300}, 0.20, (0.18, 0.22), 0.30, (0.28, 0.32)),
        _row(
            "tv", {"max_steps": 300, "tune_lambda": False}, 0.25, (0.23, 0.27), 0.10, (0.09, 0.11)
        ),
        _row("tv", {"max_steps": 300}, 0.40, (0.38, 0.42), 0.095, (0.09, 0.10)),
        _row("inverter", {"decoder": "conv"}, 0.30, (0.28, 0.32), 0.05, (0.045, 0.055)),
        _row("inverter", {}, 0.31, (0.29, 0.33), 0.048, (0.044, 0.052)),
        {**_row("optimization", {}, 0, (0, 0), 0, (0, 0)), "attack": "worst case"},
    ]
    assert [attack_set(r) for r in rows[:5]] == ["both", "previous", "new", "previous", "new"]
    (entry,) = strength_report({"rows": rows})
    assert entry["worst"]["ssim"]["previous"] == "inverter (decoder=conv)"
    assert entry["worst"]["ssim"]["new"] == "tv"
    assert entry["worst"]["ssim"]["moved"] == "stronger"  # [0.38, 0.42] above [0.28, 0.32]
    assert entry["worst"]["mse"]["new"] == "inverter"
    assert entry["worst"]["mse"]["moved"] == "within CI"  # overlapping CIs
    text = report_markdown([entry], "leaderboards/x/leaderboard.json")
    assert "| tv | new | 0.400 [0.380, 0.420]" in text


def test_a_weaker_new_worst_case_is_reported_as_weaker() -> None:
    rows = [
        _row("map", {"shrinkage": "fixed"}, 0.5, (0.48, 0.52), 0.02, (0.019, 0.021)),
        _row("map", {}, 0.4, (0.38, 0.42), 0.03, (0.029, 0.031)),
    ]
    (entry,) = strength_report({"rows": rows})
    assert entry["worst"]["ssim"]["moved"] == "weaker"
    assert entry["worst"]["mse"]["moved"] == "weaker"


def test_the_docs_page_and_the_report_files_are_the_committed_leaderboards(tmp_path) -> None:
    """docs/attacks.md and attack-strength.{md,json} are what `bench attack-report` writes
    from the committed leaderboard, so every number in them is a committed one."""
    board = ROOT / "leaderboards" / "attacks"
    assert docs_block(board).rstrip("\n") in (ROOT / "docs" / "attacks.md").read_text()
    copy = tmp_path / "leaderboards" / "attacks"
    copy.mkdir(parents=True)
    shutil.copy(board / "leaderboard.json", copy / "leaderboard.json")
    for written in write_report(copy):
        assert written.read_text() == (board / written.name).read_text()


def test_the_docs_block_replaces_itself_or_is_appended() -> None:
    block = "<!-- attack-strength:begin x -->\nold\n<!-- attack-strength:end -->\n"
    page = replace_docs_block("# Attacks\n\ntext\n", block)
    assert page.endswith(block) and page.startswith("# Attacks\n\ntext\n")
    again = replace_docs_block(page, block.replace("old", "new"))
    assert "old" not in again and again.count("attack-strength:begin") == 1


def test_the_page_lists_each_parameter_set_of_an_attack_on_its_own_line() -> None:
    """tv tuned and tv fixed on one setting are two lines of the page's per-attack list,
    not one overwriting the other."""
    from bench.report.board.overview import task_overview

    rows = [
        _row("tv", {"tune_lambda": False}, 0.25, (0.23, 0.27), 0.10, (0.09, 0.11)),
        _row("tv", {"tune_lambda": True}, 0.40, (0.38, 0.42), 0.095, (0.09, 0.10)),
    ]
    (line,) = task_overview(rows, "accuracy")["lines"]
    assert [a["attack"] for a in line["per_attack"]] == [
        "tv (tune_lambda=False)",
        "tv (tune_lambda=True)",
    ]
