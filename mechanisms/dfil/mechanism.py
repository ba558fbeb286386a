"""`dfil`: split inference whose encoder noise is calibrated to a target 1/dFIL (dFIL paper,
Sec. 4): the client runs a smooth encoder Enc_D (GELU, average pooling), adds N(0, sigma^2 I)
with sigma = sqrt(target * E[Tr(J^T J)] / d) over training data, so that E[dFIL] = 1/target;
the server classifies the noisy encoding.

Models: a small smooth CNN for 28 x 28 image tasks, a GELU / average-pooling ResNet-18 for
cifar10, a fixed random projection to `proj_dim` (10,000) dimensions for vector tasks (Sec.
3.3.1), whose server decodes by least squares and applies the task's utility model.
Optimisations (Sec. 4.1), off by default: `noise_aware` (fine-tune with the calibrated noise,
recalibrated every step), `compression` (a conv to that many channels at the split, and its
decompression on the server; on sst2 / movielens a linear k-dim bottleneck after pooling,
mechanisms.dfil.compression), `snr_reg` (alpha of the SNR regulariser).

Each attack job is scored against Cramer-Rao or van Trees (mechanisms.dfil.split).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch

from bench.certify.fisher.trace import sigma_for_target
from bench.core.errors import ConfigError
from bench.plugin.discrete import EmbeddingSplit
from bench.plugin.protocols import FitContext, Guarantee, Splits, Task
from bench.plugin.registry import register_mechanism
from mechanisms.dfil.compression import CompressionTraining, compressed_split
from mechanisms.dfil.smooth_nets import SplitModel
from mechanisms.dfil.split import FisherSplitMechanism, check_number, module_digest
from mechanisms.dfil.split_tuning import noise_tuned_server
from mechanisms.dfil.training import SplitTraining, train_split


@register_mechanism
class DFIL(FisherSplitMechanism):
    """Split inference calibrated to a target 1/dFIL (`inv_dfil`): the unbiased MSE floor."""

    name = "dfil"
    paper = "https://arxiv.org/abs/2305.04146"
    modalities = frozenset({"image", "vector", "ids", "text"})

    @dataclass(frozen=True)
    class Params(FisherSplitMechanism.Params):
        inv_dfil: float = 10.0
        noise_aware: bool = False
        compression: int = 0
        snr_reg: float = 0.0

    p: Params

    def check_params(self) -> None:
        super().check_params()
        p = self.p
        check_number("mechanism dfil: inv_dfil", p.inv_dfil)
        check_number("mechanism dfil: compression", p.compression, True, True)
        check_number("mechanism dfil: snr_reg", p.snr_reg, allow_zero=True)

    def _layer_options(self) -> dict[str, Any]:
        return {"compression": self.p.compression}

    def _training(self, task: Task) -> SplitTraining:
        epochs = int(task.config().get("train_epochs", 3))
        return SplitTraining(epochs=epochs, snr_reg=self.p.snr_reg)

    def build_model(self, task: Task, splits: Splits, ctx: FitContext) -> SplitModel:
        p = self.p
        if self._arch(task) == "projection" and (p.compression or p.snr_reg):
            raise ConfigError(
                "mechanism dfil: compression and snr_reg need a trainable encoder; the "
                "projection of vector tasks is fixed"
            )
        model = super().build_model(task, splits, ctx)
        if not p.noise_aware:
            return model
        return self._noise_aware(model, task, splits, ctx)

    def _noise_aware(
        self, model: SplitModel, task: Task, splits: Splits, ctx: FitContext
    ) -> SplitModel:
        """Fine-tune `model` for train_epochs more epochs with the target's noise (cached)."""
        training = SplitTraining(
            epochs=int(task.config().get("train_epochs", 3)),
            target=self.p.inv_dfil,
            snr_reg=self.p.snr_reg,
        )
        recipe = self._recipe(
            task,
            ctx,
            artifact="dfil-noise-aware",
            start=module_digest(model),
            training=repr(training),
        )

        def build() -> dict[str, torch.Tensor]:
            tuned = copy.deepcopy(model)
            gen = ctx.generator("dfil-noise-aware")
            train_split(tuned, splits.train, training, gen, progress=ctx.progress)
            return tuned.state_dict()

        model.load_state_dict(ctx.cache.get_or_build(recipe, build))
        return model.eval()

    def _fit_discrete(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        """The task's split model calibrated on embeddings. Without compression,
        `noise_aware` tunes the server on noisy train intermediates (the client stays the
        trained one); with `compression`, the bottleneck and its server are trained (noise-
        aware if asked, mechanisms.dfil.compression) and the final sigma is calibrated on
        that served encoder, exactly when its k outputs are <= calib_dirs."""
        p = self.p
        if p.snr_reg and not p.compression:
            raise ConfigError(
                f"mechanism dfil: snr_reg on {task.name} needs compression (the only "
                "trainable part of the encoder there)"
            )
        super()._fit_discrete(task, splits, ctx)
        if p.noise_aware and not p.compression:
            self._server = noise_tuned_server(task, self._split, self.noise(), ctx)

    def _discrete_split(self, task: Task, ctx: FitContext) -> EmbeddingSplit:
        base = super()._discrete_split(task, ctx)
        k = self.p.compression
        if not k:
            return base
        recipe = CompressionTraining(
            epochs=int(task.config().get("train_epochs", 3)),
            target=self.p.inv_dfil if self.p.noise_aware else None,
            snr_reg=self.p.snr_reg,
        )
        return compressed_split(task, base, k, recipe, ctx)

    def calibrate(self, mean_trace: float) -> float:
        return sigma_for_target(mean_trace, self.p.inv_dfil, self._input_dim)

    def guarantee(self) -> Guarantee:
        params = {"inv_dfil": self.p.inv_dfil, **self._bound_params()}
        space = "mse/embedding" if self.embedding_table() is not None else "mse/input"
        return Guarantee("dfil", params, space)
