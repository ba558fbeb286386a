"""Where a job's tensors live: the only module of bench that names a device.

`bench run --device` (or a suite's `device` key) takes `cpu`, `cuda`, `cuda:N`, `mps` or
`auto` (CUDA if present, else MPS, else the CPU). The job carries its device; the harness
hands it to every mechanism and attack through `FitContext.device`, and they move their
models and tensors there with the helpers below, never with a device literal (a test scans
bench/, mechanisms/, attacks/ and datasets/ for one).

Rules the code follows:
- Data, releases, predictions and reconstructions cross component boundaries on the CPU
  (the store, the metrics and the solvers read them there); each component moves what it
  receives to its own device (`to_device`) and hands back CPU tensors (`to_cpu`).
- On the CPU every helper is the identity, draws come from the given generator itself, and
  the device enters no job or artifact identity: a CPU job's identity is its config, data
  and code alone.
- On an accelerator a job runs under `torch.use_deterministic_algorithms(True,
  warn_only=True)` (`job_device`): the same job on the same device kind gives the same
  numbers wherever torch offers a deterministic kernel, and the job records whether an op
  without one ran (`DeviceRun.nondeterministic`, stored as `nondeterministic_ops`).
- Random draws on an accelerator come from a generator there seeded by one draw of the
  job's CPU generator (`randn`, `rand`): still only the given generator's randomness.
"""

from __future__ import annotations

import copy
import os
import re
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch
from torch import nn

from bench.core.errors import DeviceError

CPU = torch.device("cpu")
KINDS = ("cpu", "cuda", "mps")
CHOICES = "cpu, cuda, cuda:N, mps or auto"
_SPEC = re.compile(r"^(cpu|cuda|cuda:\d+|mps|auto)$")
# cuBLAS needs a fixed workspace to be deterministic (CUDA >= 10.2); set before its first use.
_CUBLAS_WORKSPACE = ":4096:8"
# What torch says (a UserWarning, with warn_only=True) when an op has no deterministic kernel.
_NONDETERMINISTIC = re.compile(r"does not have a deterministic implementation")

T = TypeVar("T")


def parse_device(spec: str, where: str = "--device") -> str:
    """`spec` as a canonical device string ("cpu", "cuda", "cuda:1", "mps", "auto"); any
    other string is a one-line DeviceError. Availability is not checked here."""
    text = spec.strip().lower() if isinstance(spec, str) else spec
    if not isinstance(text, str) or not _SPEC.match(text):
        raise DeviceError(f"{where}: unknown device {spec!r}; choose {CHOICES}")
    return text


def cuda_count() -> int:
    """CUDA devices torch can use here (0 without a CUDA build or a visible GPU)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def mps_available() -> bool:
    """Whether Apple's Metal (MPS) backend is usable here."""
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def resolve_device(spec: str | torch.device, where: str = "--device") -> torch.device:
    """The torch device `spec` names on this machine; `auto` picks CUDA, else MPS, else the
    CPU. A device this machine does not have is a one-line DeviceError."""
    if isinstance(spec, torch.device):
        spec = str(spec)
    text = parse_device(spec, where)
    if text == "auto":
        return (
            torch.device("cuda")
            if cuda_count()
            else (torch.device("mps") if mps_available() else CPU)
        )
    if text == "cpu":
        return CPU
    if text == "mps":
        if not mps_available():
            raise DeviceError(
                f"{where} mps: no usable MPS (Apple GPU) backend here; use cpu or auto"
            )
        return torch.device("mps")
    count = cuda_count()
    if count:  # before cuBLAS starts: its deterministic mode needs a fixed workspace
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", _CUBLAS_WORKSPACE)
    if count == 0:
        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "no CUDA"
        raise DeviceError(
            f"{where} {text}: CUDA is not available on this machine (torch {torch.__version__}, "
            f"{build}, no GPU visible); use cpu or auto"
        )
    device = torch.device(text)
    if device.index is not None and device.index >= count:
        raise DeviceError(
            f"{where} {text}: this machine has {count} CUDA device(s), 0 to {count - 1}"
        )
    return device


def jobs_device(spec: str | None, *, check: bool = True, where: str = "--device") -> str:
    """The device string a run's jobs carry for `spec` (None: the CPU): resolved on this
    machine, which must have it (`check`); without `check` (jobs that run elsewhere, on a
    Ray cluster, or a leaderboard written from a store filled elsewhere) only parsed, with
    `auto` still resolved here."""
    text = parse_device(spec or "cpu", where)
    if check or text == "auto":
        return str(resolve_device(text, where))
    return text


def device_kind(device: str | torch.device) -> str:
    """The kind of `device`, "cpu", "cuda" or "mps": what a job's numbers depend on (its
    index does not)."""
    return torch.device(device).type


def is_accelerator(device: str | torch.device) -> bool:
    """Whether `device` is anything but the CPU."""
    return device_kind(device) != "cpu"


def to_device(obj: T, device: torch.device | str | None) -> T:
    """Tensors (also inside dicts, lists and tuples) moved to `device`; the very same object
    when nothing needs to move (or `device` is None), so the CPU path is unchanged."""
    if device is None:
        return obj
    device = torch.device(device)
    if isinstance(obj, torch.Tensor):
        return obj if obj.device == device else obj.to(device)  # type: ignore[return-value]
    if isinstance(obj, dict):
        moved = {k: to_device(v, device) for k, v in obj.items()}
        if all(moved[k] is v for k, v in obj.items()):
            return obj
        out = OrderedDict(moved) if isinstance(obj, OrderedDict) else moved
        if hasattr(obj, "_metadata"):  # a state_dict's module versions
            out._metadata = obj._metadata  # type: ignore[union-attr]
        return out  # type: ignore[return-value]
    if isinstance(obj, list | tuple) and not hasattr(obj, "_fields"):
        items = [to_device(v, device) for v in obj]
        same = all(a is b for a, b in zip(items, obj, strict=True))
        return obj if same else type(obj)(items)  # type: ignore[return-value]
    return obj


def to_cpu(obj: T) -> T:
    """`to_device(obj, CPU)`: what the store, the metrics and the solvers read."""
    return to_device(obj, CPU)


def as_float64(t: torch.Tensor) -> torch.Tensor:
    """`t` in float64 on its device, or on the CPU where the device has none (MPS)."""
    return (t.cpu() if t.device.type == "mps" else t).double()


def module_device(module: nn.Module) -> torch.device:
    """The device of a module's first parameter or buffer (the CPU for a stateless one)."""
    for tensor in module.parameters():
        return tensor.device
    for tensor in module.buffers():
        return tensor.device
    return CPU


def on_device(module: nn.Module, device: torch.device | str | None) -> nn.Module:
    """`module` on `device`: itself when already there, else a moved copy, so a component
    never moves a module another component holds (nn.Module.to works in place)."""
    if device is None or module_device(module) == torch.device(device):
        return module
    return copy.deepcopy(module).to(device)


def forked_rng() -> AbstractContextManager[None]:
    """`torch.random.fork_rng` over the CPU's global RNG and that of every CUDA device already
    in use: code that seeds the global RNG (weight init, Opacus's noise, dropout on a GPU)
    leaves it as it found it on the job's accelerator too, so a job's numbers do not depend
    on whether an artifact was built or read from the cache. On a CPU-only run (or before a
    job first touches its GPU) this is fork_rng(devices=[]): the CPU's RNG alone."""
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    return torch.random.fork_rng(devices=devices)


class HostView(nn.Module):
    """`module` run on its own device for inputs from anywhere, its outputs handed back on
    the input's device; autograd flows through both moves (gradient ascent on the CPU
    through an encoder on an accelerator)."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return to_device(self.module(to_device(x, module_device(self.module))), x.device)


def host_view(module: T) -> T:
    """`module` itself when it is on the CPU (or None), else a `HostView` of it: for code
    that works on CPU tensors (the audit's pair search and scores) around a mechanism's
    module on the job's device."""
    if not isinstance(module, nn.Module) or module_device(module).type == "cpu":
        return module
    return HostView(module)  # type: ignore[return-value]


def generator_for(generator: torch.Generator, device: torch.device | str) -> torch.Generator:
    """A generator that draws on `device`: `generator` itself when it already does, else a
    new one there seeded by one draw of `generator` (so all randomness still comes from it).
    MPS has no float64 and limited generators: its draws are made on the CPU and moved."""
    device = torch.device(device)
    if generator.device.type == device.type or device.type == "mps":
        return generator
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    return torch.Generator(device=device).manual_seed(seed)


def _draw(
    sampler: Any,
    shape: tuple[int, ...] | torch.Size,
    generator: torch.Generator,
    device: torch.device | str | None,
    dtype: torch.dtype | None,
) -> torch.Tensor:
    target = torch.device(device) if device is not None else generator.device
    gen = generator_for(generator, target)
    out = sampler(shape, generator=gen, dtype=dtype, device=gen.device)
    if target.type == "mps" and out.dtype == torch.float64:
        return out  # MPS has no float64: such draws stay on the CPU
    return to_device(out, target)


def randn(
    shape: tuple[int, ...] | torch.Size,
    generator: torch.Generator,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """N(0, 1) draws of `shape` on `device` (default: the generator's) from `generator`; on
    the CPU exactly `torch.randn(shape, generator=generator, dtype=dtype)`."""
    return _draw(torch.randn, shape, generator, device, dtype)


def rand(
    shape: tuple[int, ...] | torch.Size,
    generator: torch.Generator,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """U[0, 1) draws of `shape` on `device` from `generator` (as `randn`)."""
    return _draw(torch.rand, shape, generator, device, dtype)


@dataclass
class DeviceRun:
    """A job's device and what ran on it: the names of the ops torch reported as having no
    deterministic implementation (always empty on the CPU, where bench never asks)."""

    device: torch.device
    nondeterministic_ops: set[str] = field(default_factory=set)

    @property
    def nondeterministic(self) -> bool:
        return bool(self.nondeterministic_ops)


@contextmanager
def job_device(spec: str | torch.device) -> Iterator[DeviceRun]:
    """Run a job's body on `spec`'s device. On the CPU: nothing is changed. On an
    accelerator: deterministic algorithms (warn_only: an op without a deterministic kernel
    still runs, and is recorded), no TF32 and no cuDNN autotuning, each restored after."""
    device = resolve_device(spec, "job device")
    run = DeviceRun(device)
    if not is_accelerator(device):
        yield run
        return
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", _CUBLAS_WORKSPACE)
    saved = _determinism_state()
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        with watch_nondeterminism(run):
            yield run
    finally:
        _restore_determinism(saved)


def _determinism_state() -> dict[str, Any]:
    return {
        "on": torch.are_deterministic_algorithms_enabled(),
        "warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "benchmark": torch.backends.cudnn.benchmark,
        "matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_tf32": torch.backends.cudnn.allow_tf32,
    }


def _restore_determinism(state: dict[str, Any]) -> None:
    torch.use_deterministic_algorithms(state["on"], warn_only=state["warn_only"])
    torch.backends.cudnn.benchmark = state["benchmark"]
    torch.backends.cuda.matmul.allow_tf32 = state["matmul_tf32"]
    torch.backends.cudnn.allow_tf32 = state["cudnn_tf32"]


@contextmanager
def watch_nondeterminism(run: DeviceRun) -> Iterator[DeviceRun]:
    """Record in `run` every op torch warns has no deterministic implementation (under
    `use_deterministic_algorithms(True, warn_only=True)`), each time it runs; other
    warnings pass through as usual."""
    with warnings.catch_warnings():
        warnings.filterwarnings("always", message=f".*{_NONDETERMINISTIC.pattern}")
        shown = warnings.showwarning

        def record(message: Warning | str, category: type[Warning], *args: Any, **kw: Any) -> None:
            text = str(message)
            if _NONDETERMINISTIC.search(text):
                run.nondeterministic_ops.add(text.split(" does not have", 1)[0].strip())
            else:
                shown(message, category, *args, **kw)

        warnings.showwarning = record
        yield run
