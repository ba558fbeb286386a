"""Probe: dfil-synthetic's optimisation attack against the exact least-squares inverse on the
same release noise, per job of the suite at the given 1/dFIL levels (default 1 and 100).

    python docs/reproductions/dfil-synthetic-crb/probe.py [LEVEL ...]
"""

import sys
from pathlib import Path

import torch

from bench.run.publish import expand_suite
from bench.run.kinds import reconstruction as evaluate

captured: dict = {}
attack_metrics = evaluate.attack_metrics


def spy(task, attack, release, x, aux, may_abstain, embeddings=None):
    """evaluate.attack_metrics, keeping the release, the inputs and the attack's estimate."""
    metrics, x_hat = attack_metrics(task, attack, release, x, aux, may_abstain, embeddings)
    captured.update(release=release, x=x, x_hat=x_hat, attack=attack)
    return metrics, x_hat


def mse(estimate: torch.Tensor, x: torch.Tensor) -> float:
    return float(((estimate - x.flatten(1)) ** 2).mean())


def main(levels: list[float]) -> None:
    evaluate.attack_metrics = spy
    _, jobs = expand_suite("dfil-synthetic")
    for job in jobs:
        if job.attack != "optimization" or job.params["inv_dfil"] not in levels:
            continue
        out = evaluate._run_job(job, Path(".bench/cache"), False, torch.device("cpu"))
        released, x = captured["release"].values.double(), captured["x"].double()
        x_hat = captured["x_hat"].double()
        weight = captured["attack"].encoder.weight.detach().double()  # (m, d)
        variance = float(job.params["inv_dfil"])
        noise = released - x.flatten(1) @ weight.T
        x_ls = released @ weight  # M^T o, the exact least-squares minimiser (M^T M = I)
        projected = float(((noise @ weight) ** 2).mean())
        shrink = float((x_hat.flatten(1) * x_ls).sum() / (x_ls * x_ls).sum())
        metric = out.metrics["mse"]
        print(
            f"seed {job.seed} 1/dFIL {variance:g}: "
            f"attack mse/bound {mse(x_hat, x) / variance:.5f}  "
            f"least-squares mse/bound {mse(x_ls, x) / variance:.5f}  "
            f"realised noise chi2 ratio {float((noise**2).mean()) / variance:.5f} "
            f"projected {projected / variance:.5f}  attack = {shrink:.5f} x least squares  "
            f"metric {getattr(metric, 'value', metric)}",
            flush=True,
        )


if __name__ == "__main__":
    main([float(a) for a in sys.argv[1:]] or [1.0, 100.0])
