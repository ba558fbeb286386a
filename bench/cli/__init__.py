"""The `bench` command: one module per command group, each a thin caller of bench.api."""
