"""The faces task: embedded LFW subset, the UTKFace directory loader, suites, job hashes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bench.core.errors import DataMissingError
from bench.plugin.registry import MECHANISMS
from bench.run.plan import code_hash_of, expand
from bench.suite.read import load_suite, make_task
from bench.tasks.faces import parse_utkface_name
from mechanisms.posthoc.models import VARIANTS


def test_embedded_lfw_faces() -> None:
    task = make_task("faces", {}, "<test>")
    s = task.splits()
    assert (len(s.train), len(s.aux), len(s.test)) == (120, 40, 40)
    assert tuple(s.train.x.shape[1:]) == (1, 25, 25) == task.input_shape
    assert float(s.train.x.min()) >= 0.0 and float(s.train.x.max()) <= 1.0
    assert set(s.train.y.tolist()) == {0, 1}


def test_utkface_loader_parses_labels_from_names(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    names = [f"{20 + i}_{i % 2}_{i % 5}_2017011617452{i:04d}.jpg.chip.jpg" for i in range(12)]
    for name in names:
        Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(
            tmp_path / name, format="JPEG"
        )
    (tmp_path / "notes.txt").write_text("not an image")
    assert parse_utkface_name(names[3]) == (23, 1, 3)
    assert parse_utkface_name("notes.txt") is None
    task = make_task("faces", {"data_root": str(tmp_path), "size": 16}, "<test>")
    s = task.splits()
    assert sum(map(len, (s.train, s.aux, s.test))) == 12
    assert tuple(s.test.x.shape[1:]) == (1, 16, 16)
    ys = sorted([*s.train.y.tolist(), *s.aux.y.tolist(), *s.test.y.tolist()])
    assert ys == sorted(i % 2 for i in range(12))


def test_utkface_missing_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(DataMissingError, match="UTKFace"):
        make_task("faces", {"data_root": str(tmp_path / "nowhere")}, "<test>").splits()
    with pytest.raises(DataMissingError, match=r"\{age\}_\{gender\}"):
        make_task("faces", {"data_root": str(tmp_path)}, "<test>").splits()


def test_posthoc_suites_expand_and_hash_their_code() -> None:
    mnist = expand(load_suite("posthoc-mnist"))
    ptr = [j for j in mnist if j.mechanism == "posthoc-ptr"]
    settings = {(j.params["eps"], j.params["R"], j.params["variant"]) for j in ptr}
    # the paper's cells: Table 1 (every variant at R = 0.5), supplement Table 2 (arl-c-n at 3 R)
    assert len(settings) == 40
    assert {v for _, r, v in settings if r == 0.5} == set(VARIANTS)
    assert {r for _, r, v in settings if v == "arl-c-n"} == {0.1, 0.5, 1.0}
    assert {j.mechanism for j in expand(load_suite("posthoc-faces"))} == {
        "posthoc-ptr",
        "ldp-image",
        "ldp-embedding",
    }
    track = [j for j in expand(load_suite("track-faces")) if j.mechanism == "posthoc-ptr"]
    assert {j.task for j in track} == {"faces"}
    assert {j.params["eps"] for j in track} == {1.0, 10.0, 100.0}
    # the job hash covers the certification code the guarantee rests on
    import inspect

    cls = MECHANISMS.get("posthoc-ptr")
    from bench.core.codeversion import module_files

    files = {p.name for p in module_files(cls.__module__)}
    assert {"milp.py", "local.py", "ptr.py", "models.py", "mechanism.py"} <= files
    assert inspect.getfile(cls).endswith("mechanism.py") and code_hash_of(cls)
