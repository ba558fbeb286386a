"""Name -> class registries for tasks, mechanisms and attacks.

In-tree code registers with the decorators (`@register_mechanism`); out-of-tree
plug-ins declare Python entry points in the groups `bench.tasks`, `bench.mechanisms`
and `bench.attacks` (value `module:Class`), loaded lazily on first lookup, as
lm-evaluation-harness does for its task registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from bench.core.errors import BenchError, UnknownNameError, did_you_mean

T = TypeVar("T")

# Packages whose modules register the in-tree components when imported.
_IN_TREE = {"task": "bench.tasks", "mechanism": "mechanisms", "attack": "attacks"}
# Top-level package of a plug-in loaded through an entry point -> (name, version) of the
# distribution that declares it: part of its jobs' code version (bench.core.codeversion).
_ENTRY_POINT_DISTS: dict[str, tuple[str, str]] = {}
# Modules defining the plug-in components loaded in this process (entry points and
# `module:Class` names): the code whose artifacts are keyed by plug-in code versions.
_PLUGIN_MODULES: set[str] = set()


def _top(module_name: str) -> str:
    return module_name.split(".")[0]


def _note_plugin(cls: type, dist: object = None) -> None:
    """Remember that `cls` is plug-in code, and the distribution its entry point came from."""
    from bench.core.project import in_project

    module = getattr(cls, "__module__", "")
    if not isinstance(module, str) or in_project(module):
        return
    _PLUGIN_MODULES.add(module)
    metadata = getattr(dist, "metadata", None)
    name = metadata["Name"] if metadata is not None else None
    version = getattr(dist, "version", None)
    if name and version:
        _ENTRY_POINT_DISTS[_top(module)] = (str(name), str(version))


def entry_point_distribution(package: str) -> tuple[str, str] | None:
    """(name, version) of the distribution whose entry point loaded a plug-in of top-level
    `package` in this process, or None."""
    return _ENTRY_POINT_DISTS.get(package)


def plugin_modules() -> frozenset[str]:
    """Modules defining the plug-in components loaded in this process."""
    return frozenset(_PLUGIN_MODULES)


def _import_package_modules(package_name: str) -> None:
    """Import every module of a package (recursively), so decorators run."""
    package = importlib.import_module(package_name)
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package_name}."):
        importlib.import_module(info.name)


class Registry(Generic[T]):
    """A registry of one kind of component, filled by decorators and entry points."""

    def __init__(self, kind: str, group: str) -> None:
        self.kind = kind
        self.group = group
        self._items: dict[str, type[T]] = {}
        self._loaded = False

    def register(self, cls: type[T]) -> type[T]:
        """Class decorator: register `cls` under its `name` attribute."""
        name = cls.name  # type: ignore[attr-defined]
        existing = self._items.get(name)
        if existing is not None and existing is not cls:
            raise BenchError(f"two {self.kind}s are named '{name}': {existing} and {cls}")
        self._items[name] = cls
        return cls

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        _import_package_modules(_IN_TREE[self.kind])
        for ep in entry_points(group=self.group):
            try:
                cls = ep.load()
            except Exception as exc:  # a broken plug-in must not break bench
                raise BenchError(
                    f"plug-in {self.kind} '{ep.name}' ({ep.value}) failed to import: {exc}"
                ) from exc
            if getattr(cls, "name", None) != ep.name:
                raise BenchError(
                    f"plug-in {self.kind} entry point '{ep.name}' points to {ep.value}, "
                    f"whose name attribute is {getattr(cls, 'name', None)!r}; make them equal"
                )
            self.register(cls)
            _note_plugin(cls, getattr(ep, "dist", None))

    def get(self, name: str) -> type[T]:
        """The class registered as `name`, or a one-line error listing the known names."""
        self._load()
        if name in self._items:
            return self._items[name]
        if ":" in name:  # `module:Class`, for plug-ins not installed as a distribution
            return load_object(name, self.kind)
        names = sorted(self._items)
        hint = did_you_mean(name, names)
        raise UnknownNameError(
            f"unknown {self.kind} '{name}'{hint}; known {self.kind}s: {', '.join(names)}"
        )

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)


def load_object(spec: str, kind: str) -> type:
    """Import `module:Class`; a one-line error when either part does not exist."""
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownNameError(f"cannot import {kind} module '{module_name}': {exc}") from exc
    except Exception as exc:  # a syntax or runtime error in the plug-in module itself
        raise UnknownNameError(
            f"cannot import {kind} module '{module_name}': {type(exc).__name__}: "
            f"{' '.join(str(exc).split())}"
        ) from exc
    try:
        obj = getattr(module, attr)
    except AttributeError as exc:
        raise UnknownNameError(f"module '{module_name}' has no {kind} '{attr}'") from exc
    base = _base_class(kind)
    if base is not None and not (isinstance(obj, type) and issubclass(obj, base)):
        raise UnknownNameError(f"{spec} is not a bench {base.__name__} (a subclass of it)")
    _note_plugin(obj)
    return obj


def _base_class(kind: str) -> type | None:
    """The protocol class a `module:Class` of this kind must subclass."""
    from bench.plugin import protocols

    return {
        "task": protocols.Task,
        "mechanism": protocols.Mechanism,
        "attack": protocols.Attack,
    }.get(kind)


TASKS: Registry = Registry("task", "bench.tasks")
MECHANISMS: Registry = Registry("mechanism", "bench.mechanisms")
ATTACKS: Registry = Registry("attack", "bench.attacks")

register_task: Callable = TASKS.register
register_mechanism: Callable = MECHANISMS.register
register_attack: Callable = ATTACKS.register
