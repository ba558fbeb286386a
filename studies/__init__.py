"""Studies: research about bench or about a paper (why a number differs from the paper's, which
solver is faster, how strong an attack is), kept apart from the product's mechanisms, suites
and boards. Each study is a folder with a dated README (studies/README.md lists them); the
code a study runs lives in an importable package here (a study folder's name has hyphens,
which a Python package cannot), loaded by bench as a plug-in (`module:Class` in a suite).

The package is not installed with bench (pyproject.toml installs bench, mechanisms and
attacks only): it imports from the checkout root, which `python -m bench.cli.app` and pytest
put on the import path (else run with `PYTHONPATH=.`).
"""
