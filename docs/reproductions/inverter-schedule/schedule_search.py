"""The inverter schedule search behind attacks/inverter.py's defaults: for five kinds of
release of the default suite (seed 0), the validation MSE each schedule reaches on aux and
its training time on one thread. Usage: python schedule_search.py ROUND CACHE_DIR, where
ROUND 1 compares the old defaults with one-cycle schedules and width 16, ROUND 2 width 16
with more epochs and smaller batches, and CACHE_DIR a bench artifact cache (the utility
models are trained into it when absent)."""

import copy
import json
import sys
import time
from pathlib import Path

import torch
from torch import nn

import attacks.inverter as inv
from bench.core.hashing import derive_seed
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext
from bench.plugin.registry import MECHANISMS
from bench.run.plan import expand
from bench.suite.read import load_suite, make_task

torch.set_num_threads(1)


class Sched(inv.InverterAttack):
    sched = "constant"

    def _train(self, z, x, train, val, gen):
        if self.sched == "constant":
            return super()._train(z, x, train, val, gen)
        p = self.params
        epochs = int(p["epochs"])
        bs = int(p["batch_size"])
        opt = torch.optim.Adam(self.decoder.parameters(), lr=float(p["lr"]))
        steps = epochs * ((len(train) + bs - 1) // bs)
        sch = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=float(p["lr"]), total_steps=steps, pct_start=0.2
        )
        best_state, best_val = None, float("inf")
        for _ in range(epochs):
            self.decoder.train()
            for s in range(0, len(train), bs):
                idx = train[s : s + bs]
                loss = nn.functional.mse_loss(self._decode(z[idx]), x[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                sch.step()
            train = train[torch.randperm(len(train), generator=gen)]
            self.decoder.eval()
            with torch.no_grad():
                v = float(nn.functional.mse_loss(self._decode(z[val]), x[val]))
            if v < best_val:
                best_val, best_state = v, copy.deepcopy(self.decoder.state_dict())
        self.decoder.load_state_dict(best_state)
        self.decoder.eval()
        self.val_mse = best_val


s = load_suite("default")
cache = ArtifactCache(Path(sys.argv[2]))
OLD = {"width": 32, "epochs": 30, "batch_size": 64, "patience": 5}  # the defaults before
ROUNDS = {
    "1": [
        ("constant", OLD),
        ("onecycle", {**OLD, "epochs": 10, "lr": 1e-2}),
        ("onecycle", {**OLD, "epochs": 15, "lr": 1e-2}),
        ("constant", {**OLD, "width": 16}),
    ],
    "2": [
        ("constant", {**OLD, "width": 16, "epochs": 60, "patience": 8}),
        ("constant", {**OLD, "width": 24}),
        ("constant", {"width": 16, "epochs": 60, "patience": 8, "batch_size": 32}),
    ],
}
configs = ROUNDS[sys.argv[1]]
for task_name, mech_name, params in [
    ("mnist", "gauss-input", {"eps": 1.0}),
    ("fmnist", "gauss-input", {"eps": 4.0}),
    ("fmnist", "identity", {}),
    ("mnist", "ldp-image", {"eps": 100.0}),
    ("fmnist", "dfil", {}),
]:
    job = next(
        j
        for j in expand(s, task=task_name, mechanism=mech_name, attack="inverter")
        if j.attack and j.seed == 0 and all(j.params.get(k) == v for k, v in params.items())
    )
    task = make_task(job.task, job.task_options)
    splits = task.splits()
    mech = MECHANISMS.get(job.mechanism)(**job.params)
    mech.fit(task, splits, FitContext(job.seed, cache))
    for sched, over in configs:
        Sched.sched = sched
        a = Sched(**{**job.attack_params, **over})
        t = time.time()
        a.fit(mech, task, splits.aux, FitContext(derive_seed(job.seed, "attack"), cache))
        dt = time.time() - t
        target = splits.test.head(100)
        rel = mech.release(target.x, torch.Generator().manual_seed(1))
        xh = a.reconstruct(rel)
        test_mse = float((xh - target.x).pow(2).mean())
        print(
            json.dumps(
                {
                    "task": task_name,
                    "mech": mech_name,
                    "sched": sched,
                    **over,
                    "val_mse": round(a.val_mse, 5),
                    "test_mse": round(test_mse, 5),
                    "s": round(dt, 1),
                }
            ),
            flush=True,
        )
