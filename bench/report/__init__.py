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

Architecture: rows -> labels -> views -> write. rows (aggregation over seeds), labels (the
shared labels and the public row helpers: rows_by_task, by_config, attack_label_of,
safe_name), families (what a mechanism family adds to a board: its sweep plots and its
privacy level, registered by the family, looked up here), then the views: formats (JSON,
CSV; schemas/ holds the JSON Schema), markdown, plots, html (+ templates/), overview (the
per-task summary a page opens on), ranking, frontier (privacy-utility frontier), site
(leaderboards/index.html over every suite), summary (the lines `bench run` ends with);
write (the directory), load, keys (row identity), compare, provenance (versions, threads,
environment), reproduction (paper reference tables against the rows), verdicts (the rules
reproduction judges by). No module here names a mechanism family: a family's plots live in
its own package (e.g. mechanisms/dfil/plots.py).

The package sits below the CLI and the validation code: nothing here imports bench.cli.app,
bench.api, bench.run.runner, bench.plugin.checks.validation or bench.plugin.checks
(tests/repo/test_import_graph.py).
To add an output format: a module with a function from rows to text or bytes, called
from write.write_leaderboard, with a test that a rerun writes it byte for byte again.
"""
