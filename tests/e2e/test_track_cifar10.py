"""track-cifar10 runs where the full CIFAR-10 exists: on a fixture in torchvision's on-disk
layout (cifar-10-batches-py/ of pickled batches), the track plans every image mechanism of
the battery, and a scaled-down copy of the track (its task read from the data_root, one
setting per family that runs on a CPU in seconds) runs end to end to a board."""

from __future__ import annotations

import json
import pickle
import tomllib
from pathlib import Path

import numpy as np

from bench.data import readers
from tests.conftest import ROOT, run_cli

TRACK = ROOT / "bench" / "suite" / "files" / "track-cifar10.toml"


def write_cifar_fixture(root: Path, per_batch: int, seed: int = 0) -> Path:
    """Random CIFAR-10 batches (5 training, 1 test) in torchvision's layout under `root`."""
    directory = root / "cifar-10-batches-py"
    directory.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for name in readers.CIFAR10_BATCHES:
        batch = {
            b"data": rng.integers(0, 256, size=(per_batch, 3072), dtype=np.uint8),
            b"labels": [int(v) for v in rng.integers(0, 10, size=per_batch)],
        }
        with (directory / name).open("wb") as f:
            pickle.dump(batch, f)
    return root


def _toml(doc: dict) -> str:
    """A small TOML writer for the suite tables used here (strings, numbers, booleans, lists
    and inline tables of those)."""

    def value(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return repr(v)

    lines = [f"{k} = {value(v)}" for k, v in doc.items() if not isinstance(v, list | dict)]
    for table in ("task", "mechanism", "attack"):
        for entry in doc.get(table, []):
            lines.append(f"[[{table}]]")
            lines += [f"{k} = {value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def test_track_cifar10_plans_every_image_mechanism_and_runs_on_a_fixture(tmp_path: Path) -> None:
    data = write_cifar_fixture(tmp_path / "data", per_batch=2100)
    track = tomllib.loads(TRACK.read_text())
    track["task"][0]["data_root"] = str(data)
    full = tmp_path / "track-cifar10.toml"
    full.write_text(_toml(track))
    planned = run_cli(
        "run", "--suite", str(full), "--dry-run", "--seeds", "1", cwd=tmp_path, check=True
    ).stdout
    mechanisms = {m["name"] for m in track["mechanism"]}
    for name in mechanisms:
        assert f"cifar10 / {name} / utility" in planned, name
    for attack in {a["name"] for a in track["attack"]}:
        assert f"/ {attack} " in planned, attack

    small = {**track, "name": "track-cifar10-small", "seeds": 1, "attack_samples": 8}
    small["task"] = [{**track["task"][0], "n_train": 300, "n_aux": 100, "n_test": 64,
                      "train_epochs": 1}]  # fmt: skip
    small["mechanism"] = [
        {"name": "identity"},
        {"name": "gauss-input", "params": {"eps": 1.0, "r": 0.1, "model": "cnn"}},
        {"name": "dfil", "params": {"inv_dfil": 10.0, "split": "early"}},
    ]
    small["attack"] = [
        {"name": "optimization", "params": {"max_steps": 10}},
        {"name": "map", "params": {"max_steps": 10}},
    ]
    path = tmp_path / "small.toml"
    path.write_text(_toml(small))
    board = tmp_path / "board"
    args = ("run", "--suite", str(path), "--store", "r.sqlite", "--out", str(board))
    run_cli(*args, "--no-progress", cwd=tmp_path, check=True)
    rows = json.loads((board / "leaderboard.json").read_text())["rows"]
    assert {r["mechanism"] for r in rows} == {m["name"] for m in small["mechanism"]}
    assert {r["task"] for r in rows} == {"cifar10"}
