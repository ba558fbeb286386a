"""The obfuscator training before the switches left posthoc-ptr against the study's, on the
switch combinations (records/move-check.txt): the same f and h weights and buffers, and the
same checkpoint criterion per epoch, or the line says DIFFERENT.

OLD_MODELS is mechanisms/posthoc/models.py of the code before the move (e.g. from
`git archive c992ddb | tar -x -C /tmp/old`). `--small`: 8x8 images, where the checkpoint rule
keeps an earlier epoch in some runs (the public code's decoder needs 28x28, so the adversary
is bench's there); else 28x28 images and every switch.

    PYTHONPATH=. python studies/posthoc-attribution/probes/move_check_training.py \
        OLD_MODELS [--small]
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from typing import Any

import torch

from studies.posthoc_attribution import training as new

BOTH = ("bench", "reference-code")


def weights(f: torch.nn.Module, h: torch.nn.Module) -> torch.Tensor:
    values = [*f.state_dict().values(), *h.state_dict().values()]
    return torch.cat([v.detach().double().flatten() for v in values])


def main(old_path: str, small: bool) -> None:
    spec = importlib.util.spec_from_file_location("old_models", old_path)
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    gen = lambda: torch.Generator().manual_seed(1)  # noqa: E731
    side = 8 if small else 28
    z = torch.randn(256, 8, generator=gen())
    x = torch.sigmoid(z @ torch.randn(8, side * side, generator=gen()))
    x = x.reshape(256, 1, side, side)
    y = (z[:, 0] > 0).long() + 2 * (z[:, 1] > 0).long()
    z_std = 0.1 + torch.rand(256, 8, generator=gen())
    if small:
        combos = [
            (v, r, "reference-code", c, "bench")
            for v, r, c in itertools.product(("arl", "arl-c-n"), BOTH, BOTH)
        ]
        epochs, kwargs = 8, {"batch_size": 32}
    else:
        combos = list(
            itertools.product(
                ("encoder", "arl", "c-n", "arl-c-n"), BOTH, ("last", "reference-code"), BOTH, BOTH
            )
        )
        epochs, kwargs = 5, {"batch_size": 64, "alpha": 0.995}
    differ = 0
    for variant, recipe, checkpoint, classifier, adversary in combos:
        runs: list[tuple[torch.Tensor, list[float]]] = []
        for module in (old, new):
            torch.manual_seed(0)
            trace: list[float] = []
            options: dict[str, Any] = {
                "recipe": recipe,
                "z_std": z_std,
                "checkpoint": checkpoint,
                "trace": trace,
                "classifier_kind": classifier,
                "adversary_kind": adversary,
            }
            f, h = module.train_obfuscator(z, x, y, 4, variant, epochs, gen(), **kwargs, **options)
            runs.append((weights(f, h), trace))
        same = torch.equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]
        differ += not same
        kept = 1 + min(range(epochs), key=runs[0][1].__getitem__)
        print(
            f"{variant:8} recipe={recipe:14} checkpoint={checkpoint:14} "
            f"classifier={classifier:14} adversary={adversary:14} "
            f"criterion lowest at epoch {kept}/{epochs}: {'same' if same else 'DIFFERENT'}",
            flush=True,
        )
    print(f"{differ} of {len(combos)} trainings differ (weights, buffers, per-epoch criterion)")


if __name__ == "__main__":
    main(sys.argv[1], "--small" in sys.argv[2:])
