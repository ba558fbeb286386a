"""Probe: dfil-synthetic unbiased attack vs the exact least-squares inverse on the same noise."""
import sys, torch
from bench.api import expand_suite
from bench import evaluate
from pathlib import Path

captured = {}
orig = evaluate.attack_metrics
def spy(task, attack, release, x, aux, may_abstain, embeddings=None):
    m, x_hat = orig(task, attack, release, x, aux, may_abstain, embeddings)
    captured.update(release=release, x=x, x_hat=x_hat, attack=attack)
    return m, x_hat
evaluate.attack_metrics = spy
levels = [float(a) for a in sys.argv[1:]] or [1.0, 100.0]
_, jobs = expand_suite("dfil-synthetic")
for job in jobs:
    if job.attack != "optimization" or job.params["inv_dfil"] not in levels:
        continue
    out = evaluate._run_job(job, Path(".bench/cache"), False, torch.device("cpu"))
    r, x, xh, atk = captured["release"].values.double(), captured["x"].double(), captured["x_hat"].double(), captured["attack"]
    W = atk.encoder.weight.detach().double()  # (m, d)
    sigma2 = float(job.params["inv_dfil"])
    enc = x.flatten(1) @ W.T
    noise = r - enc
    x_ls = r @ W  # M^T o, the exact least-squares minimiser (M^T M = I)
    mse = lambda a: float(((a - x.flatten(1)) ** 2).mean())
    ls_err = float(((noise @ W) ** 2).mean())
    # shrink toward 0 of the attack's iterate vs least squares
    c = float((xh.flatten(1) * x_ls).sum() / (x_ls * x_ls).sum())
    print(f"seed {job.seed} 1/dFIL {sigma2:g}: attack mse/bound {mse(xh)/sigma2:.5f}  "
          f"least-squares mse/bound {mse(x_ls)/sigma2:.5f}  realised noise chi2 ratio {float((noise**2).mean())/sigma2:.5f} "
          f"projected {ls_err/sigma2:.5f}  attack = {c:.5f} x least squares  metric {out.metrics['mse'].value if hasattr(out.metrics['mse'],'value') else out.metrics['mse']}", flush=True)
