"""The job record: one (task, mechanism + params, attack + params or None, seed) of a suite,
with its identity.

A job's identity is a hash of its resolved config, the task version, the data actually
loaded and the code version of the parts it uses (computed where jobs are listed,
bench.run.plan); the store skips any job whose hash it already holds, which is what makes
reruns free and interrupted runs resumable. This module imports no torch, so the store, the
warm rerun and the commands that compute nothing can hold jobs without the harness.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.core.hashing import digest


def device_kind(device: str) -> str:
    """The kind of a device string ("cpu", "cuda", "mps"; "cuda:1" is "cuda"): what a job's
    numbers depend on, where its index does not."""
    return device.split(":", 1)[0].strip().lower()


@dataclass(frozen=True)
class Job:
    """A unit of work; `hash` identifies it across runs and machines."""

    task: str
    task_options: dict[str, Any]  # as written in the suite (may hold a local data_root)
    task_config: dict[str, Any]  # resolved options that define the data and model
    mechanism: str
    params: dict[str, Any]
    attack: str | None
    attack_params: dict[str, Any]
    seed: int
    attack_samples: int
    task_version: str
    data_hash: str
    code_hash: str
    # Intra-op threads the job runs with (bench.core.threads); fixed by the mechanism's code,
    # which the code hash covers, so it is not hashed again.
    threads: int = 1
    # Where the job runs (bench.core.device): "cpu", "cuda", "cuda:N" or "mps". An accelerator's
    # kernels give other floats than the CPU's, so its kind (not its index) is part of the
    # hash; the CPU is not (the reference every device is compared with), so a CPU job's
    # hash is that of its config, data and code alone.
    device: str = "cpu"
    hash: str = field(init=False)

    def __post_init__(self) -> None:
        identity = {
            "config": self.config(),
            "task_version": self.task_version,
            "data": self.data_hash,
            "code": self.code_hash,
        }
        kind = device_kind(self.device)
        if kind != "cpu":
            identity["device"] = kind
        object.__setattr__(self, "hash", digest(identity, length=20))

    def config(self) -> dict[str, Any]:
        """The resolved configuration (defaults filled in) that defines this job."""
        return {
            "task": self.task,
            "task_config": self.task_config,
            "mechanism": self.mechanism,
            "params": self.params,
            "attack": self.attack,
            "attack_params": self.attack_params,
            "seed": self.seed,
            "attack_samples": self.attack_samples if self.attack else None,
        }

    def label(self) -> str:
        params = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        tail = f" / {self.attack}" if self.attack else ""
        return f"{self.task} / {self.mechanism}({params}){tail} / seed {self.seed}"


def job_kind(job: Job) -> tuple[str, str, str]:
    """(task, mechanism, attack or "utility"): the unit job times are estimated by."""
    return job.task, job.mechanism, job.attack or "utility"
