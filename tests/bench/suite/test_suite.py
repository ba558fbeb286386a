"""Suite files: parsing, grid expansion, and a one-line error for every malformed file."""

from __future__ import annotations

import tomllib

import pytest

from bench.core.errors import SuiteFileError, UnknownNameError
from bench.run.plan import expand
from bench.suite.read import available_suites, load_suite, parse_suite
from tests.conftest import TINY_SUITE


def _suite(**changes):
    raw = tomllib.loads(TINY_SUITE)
    raw.update(changes)
    return raw


def test_shipped_suites_parse() -> None:
    assert {"smoke", "default"} <= set(available_suites())
    for name in available_suites():
        assert load_suite(name).name == name


def test_grid_expands_to_every_combination_and_seed() -> None:
    raw = _suite(
        mechanism=[{"name": "gauss-input", "grid": {"eps": [1.0, 2.0], "r": [0.1, 0.2, 0.3]}}]
    )
    jobs = expand(parse_suite(raw))
    # 6 parameter sets x 2 seeds x (utility + 2 attacks)
    assert len(jobs) == 36
    assert len({j.hash for j in jobs}) == 36
    assert {j.params["delta"] for j in jobs} == {1e-5}  # defaults resolved into the identity


def test_an_attack_limited_to_some_mechanisms_attacks_only_their_releases() -> None:
    attacks = [{"name": "optimization"}, {"name": "inverter", "mechanisms": ["gauss-input"]}]
    mechanisms = [{"name": "identity"}, {"name": "gauss-input"}]
    jobs = expand(parse_suite(_suite(mechanism=mechanisms, attack=attacks)))
    pairs = {(j.mechanism, j.attack) for j in jobs}
    assert ("gauss-input", "inverter") in pairs and ("identity", "inverter") not in pairs
    assert ("identity", "optimization") in pairs and ("identity", None) in pairs


def test_job_hash_is_stable_and_sensitive_to_config() -> None:
    a = expand(parse_suite(_suite()))
    b = expand(parse_suite(_suite()))
    assert [j.hash for j in a] == [j.hash for j in b]
    c = expand(parse_suite(_suite(attack_samples=17)))
    attack_jobs = [j for j in a if j.attack]
    assert not {j.hash for j in attack_jobs} & {j.hash for j in c}
    assert {j.hash for j in a if not j.attack} == {j.hash for j in c if not j.attack}


def test_code_hash_covers_modules_a_mechanism_reaches_indirectly() -> None:
    import mechanisms.noise.input_noise
    import mechanisms.noise.lipschitz_nets
    from bench.core.codeversion import module_files

    # input_noise -> served_models -> lipschitz_nets: an edit two imports down must still
    # change the hash of a gauss-input job.
    assert "lipschitz_nets" not in vars(mechanisms.noise.input_noise)
    files = {p.name for p in module_files("mechanisms.noise.input_noise")}
    assert {"input_noise.py", "served_models.py", "lipschitz_nets.py", "accounting.py"} <= files
    assert mechanisms.noise.lipschitz_nets.__file__ is not None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "red"}, "unknown key 'colour'"),
        ({"seeds": 0}, "'seeds' must be a positive integer"),
        ({"version": 3}, "'version' must be a string"),
        ({"mechanism": [{"name": "no-such-mech"}]}, "unknown mechanism 'no-such-mech'"),
        (
            {"mechanism": [{"name": "gauss-input", "grid": {"epsilon": [1.0]}}]},
            "no parameter 'epsilon'",
        ),
        ({"mechanism": [{"name": "gauss-input", "grid": {"eps": []}}]}, "non-empty list"),
        ({"mechanism": [{"name": "identity", "sweep": {}}]}, "unknown key 'sweep'"),
        (
            {"mechanism": [{"name": "gauss-input", "params": {"eps": -1.0}}]},
            "must be in [0, inf)",
        ),
        ({"attack": [{"name": "telepathy"}]}, "unknown attack 'telepathy'"),
        ({"task": [{"name": "fmnist", "n_trian": 5}]}, "no option 'n_trian'"),
        ({"task": [{"name": "imagenet"}]}, "unknown task 'imagenet'"),
        ({"task": []}, "at least one [[task]]"),
        ({"mechanism": [{"name": "identity", "tasks": ["mnist"]}]}, "not a task of this suite"),
        (
            {"attack": [{"name": "optimization", "mechanisms": ["gauss-output"]}]},
            "not a mechanism of this suite",
        ),
        ({"attack": [{"name": "optimization", "mechanisms": []}]}, "non-empty list"),
        ({"mechanism": [{"name": "identity", "tasks": "fmnist"}]}, "list of task names"),
    ],
)
def test_malformed_suites_are_refused_with_one_line(change: dict, message: str) -> None:
    with pytest.raises(SuiteFileError) as err:
        parse_suite(_suite(**change), "s.toml")
    text = str(err.value)
    assert message in text
    assert "\n" not in text
    assert text.startswith("s.toml: ")


def test_bad_toml_and_unknown_suite(tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(SuiteFileError, match="not valid TOML"):
        load_suite(str(bad))
    with pytest.raises(UnknownNameError, match=r"known suites: .*smoke"):
        load_suite("no-such-suite")


def test_code_version_covers_what_computes_numbers_and_nothing_else() -> None:
    from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS
    from bench.run.plan import RESULT_NEUTRAL, code_files_of

    task, mech, attack = TASKS.get("fmnist"), MECHANISMS.get("gauss-input"), ATTACKS.get("map")
    utility = {p.as_posix() for p in code_files_of(task, mech, audited=True)}
    attacked = {p.as_posix() for p in code_files_of(task, mech, attack)}

    def has(files: set[str], tail: str) -> bool:
        return any(f.endswith(tail) for f in files)

    for files in (utility, attacked):  # the harness and the components are covered
        assert has(files, "bench/run/kinds/reconstruction.py") and has(
            files, "bench/metrics/stats.py"
        )
        assert has(files, "mechanisms/noise/input_noise.py") and has(files, "bench/core/hashing.py")
        # Suite parsing, name lookup, the artifact cache and error text compute no number.
        for module in RESULT_NEUTRAL:
            assert not has(files, module.replace(".", "/") + ".py"), module
    assert has(attacked, "attacks/optimization.py") and not has(utility, "attacks/optimization.py")
    # The audit runs in utility jobs only: a better audit re-runs no attack.
    assert has(utility, "bench/certify/audit/core.py")
    assert not any("certify/audit" in f for f in attacked)


def test_artifact_seeding_is_pinned_since_bench_cache_is_outside_the_code_hash(tmp_path) -> None:
    # bench.plugin.artifacts is RESULT_NEUTRAL, yet it seeds every artifact build from the recipe's
    # key.
    # Changing that would change numbers without re-running any job: this test fails first.
    import torch

    from bench.core.hashing import seeded_init
    from bench.plugin.artifacts import ArtifactCache

    cache = ArtifactCache(tmp_path)
    recipe = {"what": "pinned"}
    built = cache.get_or_build(recipe, lambda: torch.rand(4))
    with seeded_init(int(cache.key(recipe)[:15], 16), "artifact"):
        expected = torch.rand(4)
    assert torch.equal(built, expected), (
        "artifact seeding changed: hash bench.plugin.artifacts first"
    )
