"""Test MSE, SSIM and cost of inverter settings on Fashion-MNIST under gauss-input.

Usage: inverter_decoders.py EPS[,EPS...] '{"decoder": "conv"}' ...  (one JSON per setting)
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from attacks.inverter import InverterAttack
from bench.metrics.reconstruction import ssim
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext
from bench.tasks.images import FashionMNIST
from mechanisms.noise.input_noise import GaussInput


def main() -> None:
    torch.set_num_threads(1)
    task = FashionMNIST(n_train=200, n_aux=1000, n_test=100, train_epochs=1)
    x = task.splits().test.x
    for eps in (float(e) for e in sys.argv[1].split(",")):
        mech = GaussInput(eps=eps, r=0.5)
        mech._noise = mech.calibrate(task)
        for setting in (json.loads(a) for a in sys.argv[2:]):
            start = time.time()
            attack = InverterAttack(**setting)
            ctx = FitContext(0, ArtifactCache(Path(tempfile.mkdtemp())))
            attack.fit(mech, task, task.splits().aux, ctx)
            x_hat = attack.reconstruct(mech.release(x, torch.Generator().manual_seed(7)))
            mse = float((x_hat - x).pow(2).mean())
            score = float(ssim(x.numpy(), x_hat.numpy(), 1.0).mean())
            cost = round(time.time() - start, 1)
            print(eps, "inv", setting, (round(mse, 4), round(score, 3), cost))


if __name__ == "__main__":
    main()
