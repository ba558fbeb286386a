"""Rewrite the command outputs docs/submitting.md shows, from a real run of its walkthrough.

The example package (`pooled-gauss`) is built from the page's own code blocks in a
temporary directory, registered the way `pip install -e` registers it (a .dist-info with
its entry point), and the page's commands are run on it:

- `bench validate pooled-gauss --param eps=2.0` (block `validate`);
- pytest on the package's contract tests (block `pytest`): the tests it collects, one per
  check and setting (running them repeats the full audit per setting: minutes each).

Each output replaces the text between `<!-- output:NAME -->` and `<!-- output:end -->`.
The audit's draws make this take several minutes. tests/docs/test_submitting_doc.py checks the
blocks' deterministic parts (check names, counts, the bounds' agreement) on every test run.

    python docs/scripts/submitting_outputs.py [--doc docs/submitting.md] [--only NAME ...]

(The counter-example's FAIL line further down the page is not rewritten here: it needs a
second full audit, of the mechanism calibrated to r / 4.)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "submitting.md"
BLOCK = re.compile(r"(<!-- output:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- output:end -->)", re.S)
FENCE = re.compile(r"```(?P<lang>\w*)\n(?P<text>.*?)```", re.S)
PYTEST_WIDTH = 48  # the column the pytest command's comment starts at
PYTEST_ARGS = ("--collect-only", "-q", "-p", "no:cacheprovider")


def fenced(doc: str) -> list[tuple[str, str]]:
    """(language, text) of every fenced block of the page, in order."""
    return [(m["lang"], m["text"]) for m in FENCE.finditer(doc)]


def package_files(doc: str) -> dict[str, str]:
    """The example package's files, as the page shows them."""
    blocks = fenced(doc)
    pyproject = next(t for lang, t in blocks if lang == "toml" and "[project]" in t)
    module = next(t for lang, t in blocks if lang == "python" and "class PooledGauss" in t)
    tests = next(t for lang, t in blocks if lang == "python" and "parametrize_with_checks([" in t)
    return {
        "pyproject.toml": pyproject,
        "pooled_gauss.py": module,
        "tests/test_pooled_gauss.py": tests,
    }


def entry_points(pyproject: str) -> str:
    """entry_points.txt of the package: what `pip install` writes from its pyproject."""
    project = tomllib.loads(pyproject)["project"]
    lines = []
    for group, names in project.get("entry-points", {}).items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {target}" for name, target in names.items()]
        lines.append("")
    return "\n".join(lines)


def build_package(doc: str, where: Path) -> Path:
    """Write the package under `where` and register it; returns its directory."""
    files = package_files(doc)
    root = where / "pooled-gauss"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    project = tomllib.loads(files["pyproject.toml"])["project"]
    info = root / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    meta = f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    (info / "METADATA").write_text(meta)
    (info / "entry_points.txt").write_text(entry_points(files["pyproject.toml"]))
    return root


def run(args: list[str], cwd: Path, cache: Path) -> str:
    """stdout of a command run in `cwd` with the package and this checkout importable."""
    path = os.pathsep.join([str(cwd), str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "BENCH_CACHE": str(cache)}
    print("$", " ".join(args), file=sys.stderr, flush=True)
    proc = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}")
    return proc.stdout


def bench(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench.cli.app", *args]


def render_validate(stdout: str) -> str:
    """The `validate` block: the report as printed."""
    return f"```\n{stdout.rstrip()}\n```\n"


def render_pytest(stdout: str, checks: int, settings: int) -> str:
    """The `pytest` block: the two commands, the first with the test count pytest gave."""
    found = re.search(r"(\d+) tests? collected", stdout.strip().splitlines()[-1])
    tests = found[1] if found else "0"
    first = "python -m pytest tests".ljust(PYTEST_WIDTH)
    second = "python -m pytest tests -k check_privacy_audit".ljust(PYTEST_WIDTH)
    return (
        f"```sh\n{first}# {tests} tests: {checks} checks x {settings} settings\n"
        f"{second}# one check\n```\n"
    )


def settings_in(doc: str) -> int:
    """How many settings the page's contract test parametrizes."""
    tests = package_files(doc)["tests/test_pooled_gauss.py"]
    listed = re.search(r"parametrize_with_checks\(\[(.*)\]\)", tests)
    return len(re.findall(r"PooledGauss\b(?!\.)", listed[1])) if listed else 0


def replace_block(doc: str, name: str, body: str) -> str:
    """The page with block `name` holding `body`."""
    for m in BLOCK.finditer(doc):
        if m["name"] == name:
            return doc[: m.start("body")] + body + doc[m.end("body") :]
    raise SystemExit(f"no <!-- output:{name} --> block in the page")


def regenerate(doc_path: Path, only: set[str] | None = None) -> None:
    """Run the walkthrough's commands and rewrite the page's output blocks."""
    from bench.plugin.checks import CHECKS

    doc = doc_path.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        pkg = build_package(doc, where)
        cache = where / "cache"
        steps: dict[str, Callable[[], str]] = {
            "validate": lambda: render_validate(
                run(bench("validate", "pooled-gauss", "--param", "eps=2.0"), pkg, cache)
            ),
            "pytest": lambda: render_pytest(
                run([sys.executable, "-m", "pytest", "tests", *PYTEST_ARGS], pkg, cache),
                len(CHECKS),
                settings_in(doc),
            ),
        }
        for name, step in steps.items():
            if only is None or name in only:
                doc = replace_block(doc, name, step())
                doc_path.write_text(doc)  # each block as soon as it is known


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--doc", type=Path, default=DOC, help="the page to rewrite")
    parser.add_argument("--only", nargs="*", help="only these blocks (validate, pytest)")
    args = parser.parse_args()
    regenerate(args.doc, set(args.only) if args.only else None)


if __name__ == "__main__":
    main()
