"""A plug-in's own code is part of its jobs' identity and of its artifacts' keys: the module
defining its class, the modules of its package that module draws on, and its
distribution's name and version. The project's own jobs keep their hashes: their code
version has no plug-in part, and none of the run machinery is in any job's code."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.core.codeversion import clear_caches, plugin_distribution, plugin_identity
from bench.core.hashing import files_digest
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS
from bench.run.plan import code_files_of, code_hash_of, plugin_modules_of
from tests.conftest import ROOT

MECH = """
from bench.plugin import Guarantee
from mechanisms.noise.identity import Identity
from {pkg}.helper import OFFSET


class Planted(Identity):
    name = "planted"

    def guarantee(self):
        return Guarantee("none")


def cached_offset(cache, builds):
    def build():
        builds.append(OFFSET)
        return OFFSET

    return cache.get_or_build({{"planted": "offset"}}, build)
"""


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """A plug-in package on the import path (a unique name per test): its mech module, a
    helper it imports, a module it does not import, and a dist-info that installs it."""
    pkg = f"planted_{uuid.uuid4().hex[:8]}"
    root = tmp_path / pkg
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "mech.py").write_text(MECH.format(pkg=pkg))
    (root / "helper.py").write_text("OFFSET = 1\n")
    (root / "unused.py").write_text("X = 1\n")
    meta = tmp_path / f"{pkg}-0.1.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {pkg}\nVersion: 0.1\n")
    (meta / "top_level.txt").write_text(f"{pkg}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    clear_caches()
    code_hash_of.cache_clear()
    yield pkg, tmp_path
    clear_caches()
    code_hash_of.cache_clear()
    for name in [m for m in sys.modules if m.split(".")[0] == pkg]:
        del sys.modules[name]


def _rehash(*classes: type) -> str:
    """The code hash of `classes` recomputed from the files as they are now."""
    clear_caches()
    code_hash_of.cache_clear()
    return code_hash_of(*classes, audited=True)


def test_the_projects_own_classes_have_no_plugin_part() -> None:
    """For every registered in-tree component the plug-in part is empty, so its job's code
    hash is exactly the digest of its project files, as before plug-ins were versioned."""
    for registry in (TASKS, MECHANISMS, ATTACKS):
        for name in registry.names():
            cls = registry.get(name)
            if cls.__module__.split(".")[0] in ("bench", "mechanisms", "attacks"):
                assert plugin_modules_of(cls) == (), name
    task, mech, attack = TASKS.get("fmnist"), MECHANISMS.get("gauss-input"), ATTACKS.get("tv")
    assert plugin_identity(*plugin_modules_of(task, mech, attack)) is None
    for audited, classes in ((True, (task, mech)), (False, (task, mech, attack))):
        expected = files_digest(sorted(code_files_of(*classes, audited=audited)))
        assert code_hash_of(*classes, audited=audited) == expected


def test_no_job_draws_on_the_run_machinery() -> None:
    """Hardening the runner, the supervisor, the preflight, the board checks or validate
    re-runs nothing: none of their modules is in any in-tree job's code version."""
    run = ("runner", "executors", "supervisor", "timeouts", "failure", "dryrun", "warm", "boards")
    machinery = {ROOT / "bench" / "run" / f"{name}.py" for name in (*run, "publish", "plan")}
    machinery |= {
        ROOT / "bench" / "core" / "codeversion.py",
        ROOT / "bench" / "core" / "preflight.py",
        ROOT / "bench" / "plugin" / "artifacts.py",
        ROOT / "bench" / "plugin" / "registry.py",
        ROOT / "bench" / "plugin" / "checks" / "validation.py",
        ROOT / "bench" / "certify" / "audit" / "training_sets.py",
        ROOT / "bench" / "report" / "board" / "load.py",
    }
    for name in MECHANISMS.names():
        mech = MECHANISMS.get(name)
        for audited in (True, False):
            files = {p.resolve() for p in code_files_of(TASKS.get("fmnist"), mech, audited=audited)}
            assert not files & machinery, name


def test_editing_a_plugin_moves_its_jobs_hashes_and_no_other(planted) -> None:
    pkg, root = planted
    planted_cls = MECHANISMS.get(f"{pkg}.mech:Planted")
    task, identity = TASKS.get("gaussian"), MECHANISMS.get("identity")
    assert plugin_modules_of(task, planted_cls) == (f"{pkg}.mech",)
    before, untouched = _rehash(task, planted_cls), _rehash(task, identity)

    (root / pkg / "unused.py").write_text("X = 2\n")  # not drawn on: nothing moves
    assert _rehash(task, planted_cls) == before
    (root / pkg / "helper.py").write_text("OFFSET = 2\n")  # a helper the class's module imports
    after = _rehash(task, planted_cls)
    assert after != before
    assert _rehash(task, identity) == untouched


def test_the_distribution_version_is_part_of_a_plugins_identity(planted) -> None:
    pkg, root = planted
    planted_cls = MECHANISMS.get(f"{pkg}.mech:Planted")
    task = TASKS.get("gaussian")
    assert plugin_distribution(f"{pkg}.mech") == (pkg, "0.1")
    before = _rehash(task, planted_cls)
    meta = root / f"{pkg}-0.1.dist-info" / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 0.1", "Version: 0.2"))  # reinstalled
    assert _rehash(task, planted_cls) != before


def test_an_artifact_a_plugin_builds_is_rebuilt_when_its_code_moves(planted, tmp_path) -> None:
    pkg, root = planted
    MECHANISMS.get(f"{pkg}.mech:Planted")  # a plug-in component loaded here
    mech = sys.modules[f"{pkg}.mech"]
    cache, builds = ArtifactCache(tmp_path / "cache"), []
    assert mech.cached_offset(cache, builds) == 1 and mech.cached_offset(cache, builds) == 1
    assert builds == [1]  # built once, then reused
    (root / pkg / "helper.py").write_text("OFFSET = 20\n")  # another size: no stale bytecode
    clear_caches()
    del sys.modules[f"{pkg}.helper"], sys.modules[f"{pkg}.mech"]
    mech = __import__(f"{pkg}.mech", fromlist=["cached_offset"])
    assert mech.cached_offset(cache, builds) == 20  # not the old code's artifact
    assert builds == [1, 20]
    key = cache.key({"k": 1})
    assert ArtifactCache.entry_key(key, ()) == key  # project-free, plug-in-free: the recipe
