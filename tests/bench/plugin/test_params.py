"""Typed component parameters (bench.plugin.params): one declaration per component (a `Params`
dataclass, or a plug-in's `defaults` dict), the resolved dict a job hashes, and the typed
object the component reads."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import pytest
from typer.testing import CliRunner

import attacks  # noqa: F401  (registers the attacks)
import mechanisms  # noqa: F401  (registers the mechanisms)
from bench.cli.app import app
from bench.core.errors import ConfigError
from bench.core.hashing import canonical_json
from bench.plugin.input_space import InputSpaceMechanism
from bench.plugin.params import Range, declared_specs, specs_of
from bench.plugin.protocols import Attack, AttackParams, Guarantee, Release
from bench.plugin.registry import ATTACKS, MECHANISMS
from tests.conftest import ROOT

SNAPSHOT = ROOT / "tests" / "snapshots" / "resolved_defaults.json"


def _registries() -> dict[str, Any]:
    return {"mechanism": MECHANISMS, "attack": ATTACKS}


@pytest.mark.parametrize("kind", ["mechanism", "attack"])
def test_resolved_defaults_keep_their_values_and_types(kind: str) -> None:
    """A job's hash covers its resolved parameters, value and type (4 and 4.0 hash apart):
    every component's defaults must resolve to the committed snapshot, or every job of it
    re-hashes. Changing a default on purpose means updating the snapshot with it."""
    snapshot = json.loads(SNAPSHOT.read_text())[kind]
    registry = _registries()[kind]
    for name, expected in snapshot.items():
        resolved = registry.get(name)().params
        assert canonical_json(resolved) == canonical_json(expected), name


@pytest.mark.parametrize("kind", ["mechanism", "attack"])
def test_typed_object_holds_the_resolved_values(kind: str) -> None:
    """`p` and `params` are the same values: equal, of the same types, fields in order."""
    registry = _registries()[kind]
    for name in registry.names():
        instance = registry.get(name)()
        typed = dataclasses.asdict(instance.p)
        assert list(typed) == list(instance.params), name
        for key, value in instance.params.items():
            assert type(typed[key]) is type(value) and typed[key] == value, (name, key)


def test_given_values_are_normalised_into_the_typed_object() -> None:
    mechanism = MECHANISMS.get("gauss-input")(eps=4, r=1)
    assert mechanism.params["eps"] == 4.0 and isinstance(mechanism.params["eps"], float)
    assert isinstance(mechanism.p.eps, float) and isinstance(mechanism.p.r, float)
    attack = ATTACKS.get("optimization")(max_steps=30.0, queries=2)
    assert attack.p.max_steps == 30 and isinstance(attack.p.max_steps, int)
    assert attack.p.queries == 2


def test_a_choice_outside_the_declared_ones_is_one_line() -> None:
    with pytest.raises(ConfigError) as err:
        MECHANISMS.get("lucid")(variant="fastest")
    text = str(err.value)
    assert "\n" not in text
    assert text == (
        "mechanism lucid: parameter 'variant' must be one of naive, H, HM, HMRiS, HMB, full, "
        "diff, got 'fastest'"
    )
    spec = MECHANISMS.get("lucid").param_specs()["variant"]
    assert spec.describe() == ("variant: str = 'full' one of naive, H, HM, HMRiS, HMB, full, diff")


def test_lucid_variants_are_the_bounds_it_computes() -> None:
    """The declared variants are the decision bound's and "diff" (the differential bound)."""
    from bench.certify.idp.bound import VARIANTS

    choices = MECHANISMS.get("lucid").param_specs()["variant"].choices
    assert set(choices) == {*VARIANTS, "diff"}


def test_list_params_shows_the_choices() -> None:
    result = CliRunner().invoke(app, ["list", "mechanisms", "--params"])
    assert result.exit_code == 0, result.output
    assert "model: str = 'cnn' one of cnn, sll" in result.output
    result = CliRunner().invoke(app, ["list", "attacks", "--params"])
    assert "queries: int = 1 in [1, inf)" in result.output
    assert "shrinkage: str = 'oas' one of oas, ledoit-wolf, fixed" in result.output


class _DictDeclared(InputSpaceMechanism):
    """A plug-in declaring its parameters the dict way."""

    name = "test-dict-declared"
    defaults: ClassVar[dict[str, Any]] = {"sigma": 0.5, "steps": 3, "mode": "a", "extra": None}
    param_ranges: ClassVar[dict[str, tuple[float, float]]] = {"sigma": (0.1, 2.0)}

    def release(self, x: Any, generator: Any) -> Release:
        return Release.all_released(x)

    def guarantee(self) -> Guarantee:
        return Guarantee("none")


class _DictAttack(Attack):
    name = "test-dict-attack"
    defaults: ClassVar[dict[str, Any]] = {"lr": 0.1}

    def fit(self, mechanism: Any, task: Any, aux: Any, ctx: Any) -> None:
        pass

    def reconstruct(self, release: Release) -> Any:
        return release.values


def test_a_defaults_dict_still_declares_the_parameters() -> None:
    specs = _DictDeclared.param_specs()
    assert specs == specs_of(_DictDeclared.defaults, _DictDeclared.param_ranges)
    mechanism = _DictDeclared(sigma=1, steps=4.0)
    assert mechanism.params == {"sigma": 1.0, "steps": 4, "mode": "a", "extra": None}
    assert mechanism.p.sigma == 1.0 and mechanism.p.steps == 4 and mechanism.p.extra is None
    with pytest.raises(ConfigError, match=r"'sigma' must be in \[0.1, 2\]"):
        _DictDeclared(sigma=3.0)
    with pytest.raises(ConfigError, match="has no parameter 'sigm'"):
        _DictDeclared(sigm=1.0)
    attack = _DictAttack(queries=3)
    assert attack.params == {"queries": 3, "lr": 0.1} and attack.p.queries == 3
    assert _DictAttack.declared_params() == ({"queries": 1, "lr": 0.1}, {"queries": (1, math.inf)})


def test_a_dataclass_declaration_yields_the_dicts() -> None:
    """`defaults` / `param_ranges` describe a `Params` dataclass (an attack's without the
    `queries` every attack takes), for readers of the dict form."""

    class Declared(Attack):
        name = "test-declared"

        @dataclass(frozen=True)
        class Params(AttackParams):
            rate: Annotated[float, Range(0.0, 1.0)] = 0.5
            kind: Literal["x", "y"] = "x"

        def fit(self, mechanism: Any, task: Any, aux: Any, ctx: Any) -> None:
            pass

        def reconstruct(self, release: Release) -> Any:
            return release.values

    assert Declared.defaults == {"rate": 0.5, "kind": "x"}
    assert Declared.param_ranges == {"rate": (0.0, 1.0)}
    with pytest.raises(ConfigError, match="'kind' must be one of x, y, got 'z'"):
        Declared(kind="z")


def test_a_default_that_breaks_its_own_declaration_is_refused() -> None:
    @dataclass(frozen=True)
    class IntForFloat:
        eps: float = 1  # an int default for a float parameter would hash as an int

    @dataclass(frozen=True)
    class NotAChoice:
        mode: Literal["a", "b"] = "c"

    for params in (IntForFloat, NotAChoice):
        with pytest.raises(TypeError):
            declared_specs(params)
