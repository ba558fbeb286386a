"""A suite's board: rows aggregated over seeds, labels, the JSON / Markdown / CSV / HTML
files, plots, the ranked tables and the site index."""
