"""Test-only plug-ins (used as `tests.faulty_plugins:Class` in a suite) whose jobs fail on
demand, for tests/bench/run/test_job_failures.py.

$BENCH_TEST_FAULTS lists the faults, comma-separated, each KIND@SEED (the job's seed); it
is read inside the job, so spawned pool workers, which inherit the environment, see it:

- fit@S: the mechanism's fit raises RuntimeError("boom")
- nan@S: the mechanism releases NaN (the harness raises MechanismOutputError)
- sleep@S: the mechanism's fit creates the file $BENCH_TEST_FAULT_MARK, then sleeps 120 s
- reconstruct@S: the attack's reconstruct raises RuntimeError("boom")
- abort@S: the mechanism's release calls os.abort(): the process running the job dies
- hang@S: the mechanism's fit creates $BENCH_TEST_FAULT_MARK, then sleeps forever
- forkexit@S: the mechanism's fit forks, and both processes call os._exit(0)
- straychild@S: the mechanism's fit forks a child that sleeps for 10 minutes holding the
  process's output, and returns (the job succeeds)
- thread@S: the mechanism's fit starts a non-daemon thread that sleeps for 10 minutes, and
  returns (the job succeeds)
- badstr@S: the mechanism's fit raises an exception whose __str__ raises
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import torch

from bench.core.hashing import derive_seed
from bench.plugin.protocols import Attack, DataSplit, FitContext, Mechanism, Release, Splits, Task
from mechanisms.noise.identity import Identity

FAULTS_ENV = "BENCH_TEST_FAULTS"
MARK_ENV = "BENCH_TEST_FAULT_MARK"


def faulty(kind: str, seed: int) -> bool:
    """Whether $BENCH_TEST_FAULTS asks for fault `kind` in the job of seed `seed`."""
    wanted = os.environ.get(FAULTS_ENV, "")
    return f"{kind}@{seed}" in {part.strip() for part in wanted.split(",")}


class UnprintableError(RuntimeError):
    """An exception whose message cannot be made: str() of it raises."""

    def __str__(self) -> str:
        raise ValueError("no message for you")


class FaultyIdentity(Identity):
    """identity, failing in fit (RuntimeError, or a long sleep), releasing NaN or aborting
    its process on demand."""

    name = "faulty-identity"

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        self.seed = ctx.seed
        if faulty("fit", ctx.seed):
            raise RuntimeError("boom")
        if faulty("sleep", ctx.seed):
            Path(os.environ[MARK_ENV]).touch()
            time.sleep(120)
        if faulty("hang", ctx.seed):
            Path(os.environ[MARK_ENV]).touch()
            while True:
                time.sleep(60)
        if faulty("forkexit", ctx.seed):
            os.fork()
            os._exit(0)
        if faulty("straychild", ctx.seed) and os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        if faulty("thread", ctx.seed):
            threading.Thread(target=time.sleep, args=(600,), daemon=False).start()
        if faulty("badstr", ctx.seed):
            raise UnprintableError
        super().fit(task, splits, ctx)

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        if faulty("abort", self.seed):
            os.abort()  # as a segfault in native code would: no exception, no cleanup
        out = super().release(x, generator)
        if faulty("nan", self.seed):
            return Release.all_released(torch.full_like(out.values, float("nan")))
        return out


class ZeroAttack(Attack):
    """Guesses zeros; its reconstruct raises RuntimeError on demand."""

    name = "zero-guess"
    modalities = frozenset({"vector"})

    def fit(self, mechanism: Mechanism, task: Task, aux: DataSplit, ctx: FitContext) -> None:
        self.attack_seed = ctx.seed  # the harness derives it from the job seed

    def reconstruct(self, release: Release) -> torch.Tensor:
        job_seeds = [s for s in range(16) if derive_seed(s, "attack") == self.attack_seed]
        if any(faulty("reconstruct", s) for s in job_seeds):
            raise RuntimeError("boom")
        return torch.zeros_like(release.values)
