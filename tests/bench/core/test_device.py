"""Devices (bench.core.device): no module but bench/core/device.py names a device; every
mechanism and attack runs with a device object handed to it explicitly and gives the numbers
of the default path; a CPU job keeps its hash, its cache keys and its numbers; CUDA is a
one-line error where there is none, and the CUDA-only checks run only where there is."""

from __future__ import annotations

import ast
import warnings
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from bench.core.device import (
    CPU,
    DeviceRun,
    host_view,
    job_device,
    jobs_device,
    parse_device,
    randn,
    resolve_device,
    to_device,
    watch_nondeterminism,
)
from bench.core.errors import DeviceError, SuiteFileError
from bench.core.hashing import digest
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext, NoiseModel
from bench.plugin.registry import ATTACKS, MECHANISMS
from bench.run.job import Job
from bench.suite.read import parse_suite
from tests.conftest import ROOT, TINY_SUITE, cli_here

pytestmark = pytest.mark.usefixtures("one_thread")

SCANNED = ("bench", "mechanisms", "attacks", "datasets")
DEVICE_MODULE = ROOT / "bench" / "core" / "device.py"
# Device back-ends only bench/core/device.py may touch.
BACKENDS = (
    "torch.cuda",
    "torch.mps",
    "torch.backends.cuda",
    "torch.backends.cudnn",
    "torch.backends.mps",
)
DEVICE_NAMES = ("cpu", "cuda", "mps")
NO_CUDA = "needs a CUDA GPU (torch.cuda.is_available() is False here)"


# ---------------------------------------------------------------- the static check


def _dotted(node: ast.AST) -> str:
    """`a.b.c` for an attribute chain on a name, else ""."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _names_device(node: ast.AST) -> bool:
    """A string constant that is a device name ("cuda", "cuda:1", "mps", "cpu")."""
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.split(":")[0] in DEVICE_NAMES
    )


def fixed_device_uses(source: str) -> list[tuple[int, str]]:
    """(line, what) of every place `source` fixes a device itself: `.cuda()` / `.mps()`, a
    device-name string given as `device=`, to `torch.device(...)`, `.to(...)` or
    `torch.Generator(...)`, `torch.set_default_device`, or a device back-end
    (torch.cuda, torch.mps, torch.backends.cuda / cudnn / mps). Docstrings and comments
    are not code, so they may mention any of these."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _dotted(node) in BACKENDS:
            found.append((node.lineno, f"device back-end {_dotted(node)}"))
        if not isinstance(node, ast.Call):
            continue
        func = _dotted(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("cuda", "mps"):
            found.append((node.lineno, f".{node.func.attr}()"))
        if func == "torch.set_default_device":
            found.append((node.lineno, "torch.set_default_device"))
        for kw in node.keywords:
            if kw.arg == "device" and _names_device(kw.value):
                found.append((node.lineno, f"device={kw.value.value!r}"))  # type: ignore[attr-defined]
        named = [a for a in node.args if _names_device(a)]
        if named and (
            func in ("torch.device", "torch.Generator")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "to")
        ):
            found.append((node.lineno, f"{func or '.to'}({named[0].value!r})"))  # type: ignore[attr-defined]
    return sorted(set(found))


def _scanned_files() -> list[Path]:
    files = [p for top in SCANNED for p in sorted((ROOT / top).rglob("*.py"))]
    return [p for p in files if p.resolve() != DEVICE_MODULE.resolve()]


def test_no_module_but_bench_device_fixes_a_device() -> None:
    files = _scanned_files()
    assert len(files) > 100  # the scan really covers the packages
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in files
        for line, what in fixed_device_uses(path.read_text(encoding="utf-8"))
    ]
    assert not offences, "devices are named in bench/core/device.py only:\n" + "\n".join(offences)


PLANTED = '''
"""A docstring may say .cuda() and device="cuda": it is not code."""
import torch

def f(x, model):
    # a comment: model.cuda()
    a = x.cuda()
    b = torch.zeros(3, device="cuda")
    c = torch.device("cuda:1")
    d = x.to("mps")
    e = torch.ones(2, device="cpu")
    g = torch.Generator("cuda")
    h = torch.cuda.is_available()
    i = torch.backends.cudnn.benchmark
    torch.set_default_device("cuda")
    return model.to(x.device), torch.zeros(1, device=x.device), x.cpu()
'''


def test_the_scanner_catches_planted_violations(tmp_path) -> None:
    path = tmp_path / "planted.py"
    path.write_text(PLANTED)
    found = fixed_device_uses(path.read_text())
    whats = [what for _, what in found]
    assert [line for line, _ in found] == [7, 8, 9, 10, 11, 12, 13, 14, 15]
    assert ".cuda()" in whats and "device='cuda'" in whats and "device='cpu'" in whats
    assert "torch.device('cuda:1')" in whats and "x.to('mps')" in whats
    assert "torch.Generator('cuda')" in whats and "torch.set_default_device" in whats
    assert "device back-end torch.cuda" in whats
    assert "device back-end torch.backends.cudnn" in whats
    # Moving to a device held in a variable, and back to the host, are what code should do.
    clean = "def f(x, d):\n    return x.to(d), x.cpu(), x.new_zeros(2, device=x.device)\n"
    assert fixed_device_uses(clean) == []


# ------------------------------------------------------------ parsing and resolution


@pytest.mark.parametrize("bad", ["gpu", "cuda:", "cuda:x", "cuda0", "tpu", "", "cpu:0", "xla"])
def test_unknown_device_strings_are_refused(bad) -> None:
    with pytest.raises(DeviceError, match="unknown device"):
        parse_device(bad)


def test_device_strings_parse_and_resolve_here() -> None:
    assert [parse_device(s) for s in ("cpu", "CUDA", " cuda:1 ", "mps", "auto")] == [
        "cpu",
        "cuda",
        "cuda:1",
        "mps",
        "auto",
    ]
    assert resolve_device("cpu") == CPU
    expected = "cuda" if torch.cuda.is_available() else str(resolve_device("auto"))
    assert jobs_device("auto") == expected
    assert jobs_device(None) == "cpu"
    # Without the availability check a device is only parsed (a Ray cluster may have it).
    assert jobs_device("cuda:3", check=False) == "cuda:3"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_cuda_without_cuda_is_a_one_line_error() -> None:
    with pytest.raises(DeviceError) as err:
        resolve_device("cuda")
    assert "CUDA is not available" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(DeviceError):
        resolve_device("cuda:0")
    assert str(resolve_device("auto")) in ("cpu", "mps")


def test_suite_device_key_is_validated(tmp_path) -> None:
    import tomllib

    raw = tomllib.loads(TINY_SUITE)
    assert parse_suite(raw).device is None
    assert parse_suite({**raw, "device": "Auto"}).device == "auto"
    for bad in ("tpu", 3, ["cpu"]):
        with pytest.raises(SuiteFileError, match="device"):
            parse_suite({**raw, "device": bad}, "s.toml")


# ------------------------------------------------------------ identity of a CPU job


def _job(**fields) -> Job:
    base = {
        "task": "fmnist",
        "task_options": {},
        "task_config": {"n_train": 10},
        "mechanism": "identity",
        "params": {},
        "attack": None,
        "attack_params": {},
        "seed": 0,
        "attack_samples": 0,
        "task_version": "1",
        "data_hash": "d",
        "code_hash": "c",
    }
    return Job(**{**base, **fields})


def test_cpu_job_hash_is_the_pre_device_hash_and_accelerators_get_their_own() -> None:
    cpu = _job()
    before = digest(
        {"config": cpu.config(), "task_version": "1", "data": "d", "code": "c"}, length=20
    )
    assert cpu.hash == before  # stores and leaderboards written before devices still match
    cuda, cuda1, mps = (_job(device=d) for d in ("cuda", "cuda:1", "mps"))
    assert cuda.hash != cpu.hash and mps.hash not in (cpu.hash, cuda.hash)
    assert cuda1.hash == cuda.hash  # the kind decides the numbers, not the index
    assert cuda.config() == cpu.config()  # so the job's global RNG seed is the same


def test_cpu_cache_keys_are_unchanged_and_accelerators_get_their_own(tmp_path) -> None:
    recipe = {"artifact": "x", "seed": 1}
    plain = ArtifactCache(tmp_path)
    before = digest({**recipe, "torch_threads": torch.get_num_threads()}, length=24)
    assert plain.key(recipe) == before
    assert ArtifactCache(tmp_path, device=torch.device("cpu", 0)).key(recipe) == before
    assert ArtifactCache(tmp_path, device="cuda").key(recipe) != before


def test_provenance_and_ray_resources_carry_the_device() -> None:
    from bench.report.board.provenance import provenance_of
    from bench.run.executors import job_resources

    assert provenance_of([_job()], "1")["device"] == "cpu"
    assert provenance_of([_job(device="cuda:0")], "1")["device"] == "cuda:0"
    assert job_resources(_job())["num_gpus"] == 0.0
    assert job_resources(_job(device="cuda"))["num_gpus"] == 1.0


# ------------------------------------------------------------------ the helpers


def test_cpu_helpers_are_the_identity_and_draws_unchanged() -> None:
    x = torch.arange(4.0)
    assert to_device(x, CPU) is x and to_device({"a": [x]}, "cpu")["a"][0] is x
    module = torch.nn.Linear(2, 2)
    assert host_view(module) is module and host_view(None) is None
    gen_a, gen_b = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert torch.equal(randn((5, 2), gen_a, CPU), torch.randn((5, 2), generator=gen_b))
    noise = NoiseModel("laplace", 0.7)
    gen_a, gen_b = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    assert torch.equal(noise.sample((6,), gen_a, CPU), noise.sample((6,), gen_b))


def test_job_device_leaves_the_cpu_untouched() -> None:
    before = torch.are_deterministic_algorithms_enabled()
    with job_device("cpu") as run:
        assert run.device == CPU
        assert torch.are_deterministic_algorithms_enabled() == before
    assert not run.nondeterministic


def test_nondeterministic_ops_are_recorded_and_other_warnings_pass() -> None:
    """What an accelerator job watches for, exercised on the CPU: max_unpool has no
    deterministic kernel here either, so torch warns under warn_only."""
    run = DeviceRun(CPU)
    saved = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with warnings.catch_warnings(record=True) as passed:
            warnings.simplefilter("always")
            with watch_nondeterminism(run):
                torch.ones(3).sum()  # deterministic everywhere
                assert not run.nondeterministic
                warnings.warn("an unrelated warning", UserWarning, stacklevel=1)
                values, index = torch.ones(1, 1, 2), torch.tensor([[[0, 1]]])
                torch.nn.functional.max_unpool1d(values, index, 2)
    finally:
        torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
    assert run.nondeterministic and any("unpool" in op for op in run.nondeterministic_ops)
    assert [str(w.message) for w in passed] == ["an unrelated warning"]


def test_compare_holds_nondeterministic_rows_to_tolerance() -> None:
    from bench.report.tools.compare import compare

    def board(value: float, flag: float) -> dict:
        metrics = {
            "mse": {"value": value, "ci": [value - 0.01, value + 0.01], "n": 2},
            "nondeterministic_ops": {"value": flag, "ci": [flag, flag], "n": 2},
        }
        row = {"task": "t", "mechanism": "m", "params": {}, "attack": "a", "metrics": metrics}
        return {"rows": [row]}

    exact = compare(board(0.5, 0.0), board(0.5001, 0.0), exact=True)
    assert not exact.ok and len(exact.differing) == 1  # a deterministic row must be equal
    loose = compare(board(0.5, 0.0), board(0.5001, 1.0), exact=True, tolerance=0.05)
    assert loose.ok and loose.tolerant_rows == 1 and "nondeterministic" in loose.format()
    far = compare(board(0.5, 1.0), board(0.9, 1.0), exact=True, tolerance=0.05)
    assert not far.ok  # beyond the tolerance it still differs


# ------------------------------------------- every component with an explicit device


@pytest.fixture(scope="module")
def defaults() -> dict[str, dict[str, torch.Tensor]]:
    """Each case's numbers on the default path, computed once for both device objects."""
    return {}


@pytest.fixture(scope="module")
def fmnist():
    from bench.tasks.images import FashionMNIST

    task = FashionMNIST(n_train=300, n_aux=200, n_test=24, train_epochs=1)
    task.splits()
    return task


def _outputs(mech_name, params, attacks, task, cache_root, device):
    """Fit `mech_name` and every (attack, params) of `attacks` with `device` handed over
    explicitly (None: the default context), and return every number they produce."""
    kwargs = {} if device is None else {"device": device}
    splits = task.splits()
    mech = MECHANISMS.get(mech_name)(**params)
    mech.fit(task, splits, FitContext(0, ArtifactCache(cache_root, **kwargs), **kwargs))
    x = splits.test.x
    release = mech.release(x, torch.Generator().manual_seed(1))
    out = {"release": release.values, "predict": mech.predict(release)}
    if device is not None:
        assert mech.device == device, f"{mech_name} kept {mech.device}, not {device}"
    for name, attack_params in attacks:
        attack = ATTACKS.get(name)(**attack_params)
        ctx = FitContext(2, ArtifactCache(cache_root, **kwargs), **kwargs)
        attack.fit(mech, task, splits.aux, ctx)
        if device is not None:
            assert attack.device == device, f"{name} kept {attack.device}"
        out[name] = attack.reconstruct(release)
    for value in out.values():
        assert value.device.type == "cpu"  # handed back on the CPU
    return out


CASES = [
    ("gauss-input", {"eps": 2.0, "r": 0.5}, [("optimization", {"max_steps": 20}), ("map", {})]),
    ("ldp-image", {"eps": 1000.0}, [("tv", {"max_steps": 10, "tune_samples": 4})]),
    ("gauss-output", {"eps": 4.0, "r": 0.5}, [("inverter", {"epochs": 2})]),
    (
        "dfil",
        {"inv_dfil": 10.0, "split": "early", "calib_samples": 8, "noise_aware": True},
        [
            ("optimization", {"max_steps": 10}),
            ("vae-prior", {"vae_epochs": 1, "restarts": 1, "steps": 5, "refine_steps": 5}),
        ],
    ),
    ("ldp-embedding", {"eps": 5.0, "vae_epochs": 1, "epochs": 1}, [("inverter", {"epochs": 1})]),
]


@pytest.mark.parametrize("device", [torch.device("cpu"), torch.device("cpu", 0)], ids=str)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.slow
def test_explicit_device_gives_the_default_numbers(
    case, device, fmnist, defaults, tmp_path
) -> None:
    """`cpu:0` is a device object unequal to the default CPU, so every move and copy branch
    (on_device copies, EmbeddingSplit.to, ...) runs; the numbers must not change, and each
    component must keep the device it was handed."""
    name, params, attacks = case
    if name not in defaults:
        defaults[name] = _outputs(name, params, attacks, fmnist, tmp_path / "a", None)
    default = defaults[name]
    explicit = _outputs(name, params, attacks, fmnist, tmp_path / "b", device)
    assert default.keys() == explicit.keys()
    for key in default:
        assert torch.equal(default[key], explicit[key]), f"{name}: {key} differs on {device}"


def _fit_and_release(task, cases, cache_root, device, attacks=()) -> list[torch.Tensor]:
    """Fit each (mechanism, params) of `cases` on `task` with `device` handed over (None:
    the default context), release the first test inputs, run `attacks` on the first
    mechanism; every release, prediction and reconstruction, in order."""
    kwargs = {} if device is None else {"device": device}
    splits = task.splits()
    x = splits.test.x[:12]
    out = []
    for i, (name, params) in enumerate(cases):
        mech = MECHANISMS.get(name)(**params)
        mech.fit(task, splits, FitContext(0, ArtifactCache(cache_root, **kwargs), **kwargs))
        if device is not None:
            assert mech.device == device, name
        release = mech.release(x, torch.Generator().manual_seed(0))
        out += [release.values, release.released, mech.predict(release)]
        out += [v for k, v in sorted(release.meta.items()) if k != "test_radius"]
        out += [torch.tensor(m.value) for _, m in sorted(mech.claim_metrics(task, splits).items())]
        for attack_name, attack_params in attacks if i == 0 else ():
            attack = ATTACKS.get(attack_name)(**attack_params)
            ctx = FitContext(2, ArtifactCache(cache_root, **kwargs), **kwargs)
            attack.fit(mech, task, splits.aux, ctx)
            reconstruct = attack.ranked(release, 5) if task.modality == "ids" else None
            out.append(attack.reconstruct(release) if reconstruct is None else reconstruct)
    return out


def _same_on_both(task, cases, tmp_path, attacks=()) -> None:
    default = _fit_and_release(task, cases, tmp_path / "a", None, attacks)
    explicit = _fit_and_release(task, cases, tmp_path / "b", torch.device("cpu", 0), attacks)
    assert len(default) == len(explicit)
    for i, (a, b) in enumerate(zip(default, explicit, strict=True)):
        assert torch.equal(a, b), f"output {i} differs"


@pytest.mark.slow
def test_label_only_and_leave_one_out_with_an_explicit_device(tmp_path) -> None:
    """The stacked leave-one-out training, LUCID's bounds (MILPs on CPU copies) and its
    probes, DP-SGD and ALIBI, with a device object that is not the default."""
    from bench.suite.read import make_task

    task = make_task("credit", {"subsample": 40, "arch": "2x6", "n_test": 60, "train_epochs": 50})
    cases = [
        # Work budgets, no clock: both runs must do the same work to give the same bounds.
        (
            "lucid",
            {
                "eps": 1.0,
                "variant": "diff",
                "node_limit": 200,
                "max_milps": 8,
                "time_limit": 0.0,
                "budget": 0.0,
            },
        ),
        ("naive-idp", {"eps": 1.0}),
        ("dp-sgd", {"eps": 1.0}),
        ("alibi", {"eps": 1.0}),
    ]
    _same_on_both(task, cases, tmp_path)


def test_discrete_split_models_with_an_explicit_device(tmp_path) -> None:
    """MovieLens: the task's split model moved (EmbeddingSplit.to), dfil's compression
    bottleneck trained noise-aware on it, gauss-input on the split, and lookup."""
    from bench.suite.read import make_task

    task = make_task("movielens", {"n_train": 500, "n_aux": 10, "n_test": 12})
    cases = [
        ("dfil", {"inv_dfil": 10.0, "compression": 2, "noise_aware": True, "calib_samples": 8}),
        ("gauss-input", {"eps": 2.0, "r": 0.5}),
    ]
    _same_on_both(task, cases, tmp_path, attacks=[("lookup", {"max_steps": 20})])


def test_posthoc_ptr_with_an_explicit_device(tmp_path) -> None:
    """Posthoc PTR: networks on the device, MILPs and PTR's test on CPU copies."""
    from bench.suite.read import make_task

    task = make_task("mnist", {"n_train": 300, "n_aux": 50, "n_test": 12}, "<test>")
    tiny = {"vae_epochs": 2, "obf_epochs": 2, "n_calib": 4, "finetune_epochs": 1}
    cases = [("posthoc-ptr", {"eps": 10.0, "R": 0.05, "solver": "highs", **tiny})]
    _same_on_both(task, cases, tmp_path, attacks=[("optimization", {"max_steps": 10})])


@pytest.mark.slow
def test_a_cpu_job_runs_with_its_device_and_records_no_nondeterminism(tmp_path) -> None:
    from bench.run.kinds.reconstruction import run_job
    from bench.run.publish import expand_suite

    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SUITE)
    _, jobs = expand_suite(str(path), seeds=1)
    _, autos = expand_suite(str(path), seeds=1, device="auto")
    if not torch.cuda.is_available():
        assert [j.hash for j in jobs] == [j.hash for j in autos]
    job = next(j for j in jobs if j.attack is None and j.mechanism == "gauss-input")
    assert job.device == "cpu"
    outcome = run_job(job, tmp_path / "cache")
    assert "nondeterministic_ops" not in outcome.metrics
    again = run_job(replace(job), tmp_path / "cache")
    assert outcome.metrics["accuracy"].value == again.metrics["accuracy"].value


# ---------------------------------------------------------------------- the CLI


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_run_on_cuda_without_cuda_exits_2_with_one_line(tmp_path, monkeypatch, capsys) -> None:
    args = ("run", "--suite", "smoke", "--device", "cuda", "--store", "r.sqlite")
    proc = cli_here(monkeypatch, capsys, *args, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "CUDA is not available" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "r.sqlite").exists()


def test_run_with_an_unknown_device_exits_2(tmp_path, monkeypatch, capsys) -> None:
    args = ("run", "--suite", "smoke", "--device", "gpu", "--dry-run")
    proc = cli_here(monkeypatch, capsys, *args, cwd=tmp_path)
    assert proc.returncode == 2 and "unknown device 'gpu'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------- CUDA-only branches


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_cuda_job_is_reproducible_and_flags_nondeterminism(tmp_path) -> None:
    from bench.run.kinds.reconstruction import run_job
    from bench.run.publish import expand_suite

    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SUITE)
    _, jobs = expand_suite(str(path), seeds=1, device="cuda")
    for job in [j for j in jobs if j.mechanism == "gauss-input"][:2]:
        first = run_job(job, tmp_path / "cache")
        second = run_job(job, tmp_path / "cache")
        assert "nondeterministic_ops" in first.metrics
        if first.metrics["nondeterministic_ops"].value == 0:
            for name, metric in first.metrics.items():
                if not name.endswith(("_s", "_ms")):
                    assert metric.value == second.metrics[name].value, name


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_cuda_components_compute_on_the_gpu_and_hand_back_cpu(fmnist, tmp_path) -> None:
    device = resolve_device("cuda")
    with job_device(device):
        out = _outputs(*CASES[0], fmnist, tmp_path, device)
    assert set(out) == {"release", "predict", "optimization", "map"}


@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_cuda_draws_come_from_the_given_generator() -> None:
    device = resolve_device("cuda")
    a = randn((4, 3), torch.Generator().manual_seed(5), device)
    b = randn((4, 3), torch.Generator().manual_seed(5), device)
    assert a.device.type == "cuda" and torch.equal(a, b)
