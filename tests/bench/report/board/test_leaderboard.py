"""Leaderboard rows, schema, deterministic and atomic writing, loading with validation."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.core.errors import BenchError
from bench.core.fsutil import atomic_write
from bench.metrics.stats import scalar, summarize
from bench.report.board import formats, load
from bench.report.board import labels as report_labels
from bench.report.board import rows as report_rows
from bench.report.board.load import load_leaderboard
from bench.report.board.rows import build_rows
from bench.report.board.write import write_leaderboard

STAMP = "2025-01-01T00:00:00+00:00"
GUARANTEE = {"notion": "ip", "eps": 1.0, "delta": 1e-5, "radius": 0.1, "distance": "l2/input"}


def _job(seed: int, mechanism: str, params: dict[str, Any], attack: str | None) -> dict[str, Any]:
    """A fake job result: accuracy + timings for utility rows, mse/psnr/ssim for attacks."""
    rng = np.random.default_rng(seed * 100 + len(mechanism) + (len(attack) if attack else 0))
    noise = params.get("sigma", 0.0)
    if attack is None:
        metrics = {
            "accuracy": summarize((rng.random(50) < 0.9 - noise).astype(float), seed=seed),
            "fit_s": scalar(1.0 + seed),
            "release_ms": scalar(0.5),
        }
    else:
        err = rng.normal(0.02 + noise, 0.005, size=50).clip(1e-4)
        metrics = {
            "mse": summarize(err, seed=seed),
            "psnr": summarize(10 * np.log10(1 / err), seed=seed),
            "ssim": summarize(rng.random(50) * 0.5, seed=seed),
        }
    return {
        "task": "mnist-small",
        "mechanism": mechanism,
        # Insertion order differs per seed: grouping must not depend on it.
        "params": dict(reversed(params.items())) if seed % 2 else dict(params),
        "guarantee": GUARANTEE,
        "attack": attack,
        "attack_params": {"steps": 10} if attack else {},
        "seed": seed,
        "metrics": metrics,
    }


def _results() -> list[dict[str, Any]]:
    jobs = []
    for seed in (0, 1):
        for sigma in (0.1, 0.3):
            params = {"sigma": sigma, "r": 0.1}
            jobs += [_job(seed, "gauss-input", params, a) for a in (None, "map", "inverter")]
        jobs.append(_job(seed, "identity", {}, None))
        jobs.append(_job(seed, "identity", {}, "map"))
    return jobs


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return build_rows(_results())


def test_build_rows_groups_over_seeds(rows: list[dict[str, Any]]) -> None:
    # 2 gauss-input settings x (utility, inverter, map) + identity (utility, map),
    # plus one worst-case row per setting that was attacked.
    assert len(rows) == 2 * 3 + 2 + 3
    assert all(r["seeds"] == 2 for r in rows)
    jobs = [
        j
        for j in _results()
        if j["mechanism"] == "gauss-input" and j["params"]["sigma"] == 0.1 and j["attack"] == "map"
    ]
    row = next(
        r
        for r in rows
        if r["mechanism"] == "gauss-input" and r["params"]["sigma"] == 0.1 and r["attack"] == "map"
    )
    expect = np.mean([j["metrics"]["mse"].value for j in jobs])
    assert row["metrics"]["mse"]["value"] == pytest.approx(expect, rel=1e-5)
    assert row["metrics"]["mse"]["n"] == 100
    lo, hi = row["metrics"]["mse"]["ci"]
    assert lo <= row["metrics"]["mse"]["value"] <= hi
    util = next(r for r in rows if r["mechanism"] == "identity" and r["attack"] is None)
    assert util["metrics"]["fit_s"] == {"value": 1.5, "ci": [1.0, 2.0], "n": 2}


def test_rows_sorted_with_utility_row_first(rows: list[dict[str, Any]]) -> None:
    assert rows == sorted(rows, key=report_labels.row_sort_key)
    first_gauss = [r for r in rows if r["mechanism"] == "gauss-input"][:3]
    assert [r["attack"] for r in first_gauss] == [None, "inverter", "map"]


def test_duplicate_seed_is_an_error() -> None:
    job = _job(0, "identity", {}, None)
    with pytest.raises(ValueError, match="duplicate seeds"):
        build_rows([job, dict(job)])


def test_json_schema_keys_match_design(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    write_leaderboard("smoke", "1", rows, tmp_path, code_version="abc", generated_at=STAMP)
    doc = json.loads((tmp_path / "leaderboard.json").read_text())
    assert list(doc) == ["suite", "suite_version", "generated_at", "code_version", "rows"]
    assert doc["generated_at"] == STAMP
    for row in doc["rows"]:
        extra = {"sources"} if row["attack"] == report_labels.WORST_CASE else set()
        assert set(row) == {*load.ROW_KEYS, "attack_params", "source", "unreliable", *extra}
        assert row["source"] == "re-executed" and row["unreliable"] is False
        assert row["guarantee"]["notion"] == "ip"
        for metric in row["metrics"].values():
            assert set(metric) == {"value", "ci", "n"}
            assert len(metric["ci"]) == 2
    assert any(r["attack"] is None for r in doc["rows"])


def test_floats_rounded_to_six_significant_digits(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        for m in row["metrics"].values():
            for v in (m["value"], *m["ci"]):
                assert v == float(f"{v:.6g}")


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.suffix != ".png"
    }


def test_write_twice_is_byte_identical(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_leaderboard("smoke", "1", build_rows(_results()), a, code_version="c", generated_at=STAMP)
    write_leaderboard(
        "smoke",
        "1",
        build_rows(list(reversed(_results()))),
        b,
        code_version="c",
        generated_at=STAMP,
    )
    snap_a = _snapshot(a)
    assert set(snap_a) == {"leaderboard.json", "leaderboard.csv", "leaderboard.md", "index.html"}
    assert snap_a == _snapshot(b)


def test_files_plot_and_no_temp_files(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    paths = write_leaderboard("smoke", "1", rows, tmp_path, code_version="c", generated_at=STAMP)
    plot = tmp_path / "plots" / "mnist-small.png"
    assert plot in paths and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert all(p.exists() for p in paths)
    leftovers = [p for p in tmp_path.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"]
    assert leftovers == []


def test_csv_and_markdown_content(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    write_leaderboard("smoke", "1", rows, tmp_path, code_version="c", generated_at=STAMP)
    csv_lines = (tmp_path / "leaderboard.csv").read_text().splitlines()
    assert csv_lines[0].split(",") == list(formats.CSV_COLUMNS)
    assert len(csv_lines) == 1 + sum(len(r["metrics"]) for r in rows)
    md = (tmp_path / "leaderboard.md").read_text()
    assert "## mnist-small" in md and "2 seeds per row" in md
    assert "IP (ε=1, δ=1e-05, r=0.1) over l2/input" in md
    assert "map: mse" in md and "fit_s" in md and "worst-case mse" in md
    assert "- `map`: steps=10" in md  # full attack settings listed once per task
    # one table line per (mechanism, params): gauss-input x 2 + identity
    assert sum(line.startswith("| gauss-input") for line in md.splitlines()) == 2
    assert sum(line.startswith("| identity") for line in md.splitlines()) == 1


def test_interrupted_write_keeps_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "leaderboard.json"
    target.write_text("old")

    def boom(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, b"new content")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["leaderboard.json"]


def test_load_round_trip(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    write_leaderboard("smoke", "1", rows, tmp_path, code_version="c", generated_at=STAMP)
    doc = load_leaderboard(tmp_path / "leaderboard.json")
    assert doc["suite"] == "smoke" and len(doc["rows"]) == len(rows)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "top level"),
        ('{"suite": "s"}', "missing top-level keys"),
        (
            json.dumps(
                {
                    "suite": "s",
                    "suite_version": "1",
                    "generated_at": STAMP,
                    "code_version": "c",
                    "rows": [
                        {
                            "task": "t",
                            "mechanism": "m",
                            "params": {},
                            "guarantee": {"notion": "none"},
                            "attack": None,
                            "seeds": 1,
                            "metrics": {"accuracy": {"value": 0.5, "ci": [0.4], "n": 1}},
                        }
                    ],
                }
            ),
            "rows[0] metric 'accuracy': ci",
        ),
    ],
)
def test_load_rejects_bad_files_with_one_line(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "lb.json"
    path.write_text(text)
    with pytest.raises(BenchError) as info:
        load_leaderboard(path)
    msg = str(info.value)
    assert needle in msg and str(path) in msg and "\n" not in msg


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="cannot read leaderboard"):
        load_leaderboard(tmp_path / "nope.json")


def test_attack_columns_name_only_the_parameters_that_differ() -> None:
    rows = [
        {
            "task": "t",
            "mechanism": "m",
            "params": {},
            "attack": "tv",
            "attack_params": {"lam": lam, "lr": 0.1},
            "seeds": 1,
            "metrics": {},
        }
        for lam in (0.05, 0.5)
    ] + [
        {
            "task": "t",
            "mechanism": "m",
            "params": {},
            "attack": "inverter",
            "attack_params": {"epochs": 3},
            "seeds": 1,
            "metrics": {},
        }
    ]
    labels = set(report_labels.attack_labels(rows).values())
    assert labels == {"tv (lam=0.05)", "tv (lam=0.5)", "inverter"}


def test_worst_case_takes_each_metric_from_the_strongest_attack() -> None:
    def attack_row(attack: str, mse: float, ssim: float) -> dict[str, Any]:
        metrics = {
            name: {"value": v, "ci": [v, v], "n": 10}
            for name, v in (("mse", mse), ("ssim", ssim), ("attack_s", 1.0))
        }
        return {
            "task": "t",
            "mechanism": "m",
            "params": {},
            "guarantee": {"notion": "none"},
            "attack": attack,
            "attack_params": {},
            "seeds": 2,
            "metrics": metrics,
        }

    (worst,) = report_rows.worst_case_rows(
        [attack_row("inverter", 0.02, 0.5), attack_row("tv", 0.05, 0.7)]
    )
    assert worst["attack"] == report_labels.WORST_CASE
    assert worst["metrics"]["mse"]["value"] == 0.02 and worst["sources"]["mse"] == "inverter"
    assert worst["metrics"]["ssim"]["value"] == 0.7 and worst["sources"]["ssim"] == "tv"
    assert "attack_s" not in worst["metrics"]  # costs are not attack strength


def test_a_refuted_claim_marks_every_row_of_its_setting_unreliable() -> None:
    def row(attack, metrics):
        return {
            "task": "t",
            "mechanism": "m",
            "params": {"eps": 1.0},
            "guarantee": {"notion": "ip", "eps": 1.0},
            "attack": attack,
            "attack_params": {},
            "seeds": 1,
            "metrics": metrics,
        }

    entry = lambda v: {"value": v, "ci": [v, v], "n": 1}  # noqa: E731
    refuted = [row(None, {"eps_audit_lb": entry(1.7)}), row("map", {"mse": entry(0.1)})]
    report_rows.flag_unreliable(refuted)
    assert all(r["unreliable"] for r in refuted)
    assert "1.7 > claimed 1" in refuted[1]["unreliable_reason"]
    upheld = [row(None, {"eps_audit_lb": entry(0.6)}), row("map", {"mse": entry(0.1)})]
    report_rows.flag_unreliable(upheld)
    assert not any(r["unreliable"] for r in upheld)


def test_tuned_rows_keep_every_seeds_choice_and_the_markdown_lists_them(tmp_path) -> None:
    """A mechanism tuned per seed (guarantee.tuning) keeps each seed's configuration on its
    row, and the Markdown says what each seed trained with, outside the guarantee column."""
    jobs = [_job(seed, "gauss-input", {"sigma": 0.1, "r": 0.1}, None) for seed in (0, 1)]
    for seed, job in enumerate(jobs):
        job["guarantee"] = {
            **job["guarantee"],
            "tuning": {"lr": (0.1, 0.3)[seed], "epochs": 30, "val_accuracy": 0.8},
        }
    (row,) = build_rows(jobs)
    assert [c["lr"] for c in row["guarantee"]["tuning"]] == [0.1, 0.3]
    write_leaderboard("tuned", "1", [row], tmp_path, code_version="c", generated_at=STAMP)
    md = (tmp_path / "leaderboard.md").read_text()
    assert "lr 0.1, 30 epochs (validation 0.8); lr 0.3, 30 epochs (validation 0.8)" in md
    assert "tuning=" not in md
