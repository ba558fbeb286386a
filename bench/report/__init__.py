"""Reporting: everything that turns stored results into what a reader sees or a tool checks.

Entry points:
- `rows.build_rows(results)`: job results aggregated over seeds into leaderboard rows, plus
  the per-setting worst-case rows; `write.write_leaderboard(...)` writes a leaderboard
  directory (leaderboard.json / .csv / .md, plots/, index.html) atomically.
- `load.load_leaderboard(path)`: a leaderboard JSON read back and validated.
- `compare.compare(baseline, candidate)`: regressions between two leaderboards;
  `provenance.attach_provenance(rows, jobs)`: task version, data hash, code version and
  thread count on every row; `site.write_site_index(root, descriptions)`: the page listing
  every suite.

Modules, each with one job: rows (aggregation), labels (shared labels and row grouping),
formats (JSON, CSV; schemas/ holds the JSON Schema), markdown, plots, html (+ templates/),
overview (the per-task summary a page opens on), site (leaderboards/index.html over every
suite), summary (the lines `bench run` ends with), frontier (privacy-utility frontier),
dfil_plots (attack MSE vs 1/dFIL with the Fisher bounds), write (the directory), load,
keys (row identity), compare, provenance (versions, threads, environment), reproduction
(paper reference tables against the rows), verdicts (the rules reproduction judges by).

The package sits below the CLI and the validation code: nothing here imports bench.cli,
bench.api, bench.runner, bench.validation or bench.testing (tests/test_import_graph.py).
To add an output format: a module with a function from rows to text or bytes, called
from write.write_leaderboard, with a test that a rerun writes it byte for byte again.
"""
