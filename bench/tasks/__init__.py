"""Tasks: datasets with fixed splits, utility models, data ranges (see
bench.plugin.protocols.Task)."""
