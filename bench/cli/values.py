"""Parameter values a user types on the command line (`--param KEY=VALUE`, `--grid
KEY=V1,V2,...`), read as a suite file would read them: a TOML value, else a plain string."""

from __future__ import annotations

import tomllib
from typing import Any

from bench.core.errors import ConfigError


def parse_params(specs: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` strings to a parameter dict; VALUE is read as a TOML value (2.0, 1e-5,
    true, "text", [1, 2]) and as a plain string otherwise. Malformed specs: ConfigError."""
    params: dict[str, Any] = {}
    for spec in specs:
        key, sep, text = (part.strip() for part in spec.partition("="))
        if not (sep and key):
            raise ConfigError(f"bad --param {spec!r}: expected KEY=VALUE, e.g. eps=2.0")
        if key in params:
            raise ConfigError(f"bad --param {spec!r}: {key!r} is given twice")
        try:
            params[key] = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            params[key] = text
    return params


def parse_grid(specs: list[str]) -> dict[str, list[object]]:
    """`KEY=V1,V2,...` strings to a suite's `grid` table; each value read as --param reads
    one (a TOML value, else a plain string). Malformed specs: ConfigError."""
    grid: dict[str, list[object]] = {}
    for spec in specs:
        key, sep, text = (part.strip() for part in spec.partition("="))
        values = [v.strip() for v in text.split(",") if v.strip()]
        if not (sep and key and values):
            raise ConfigError(f"bad --grid {spec!r}: expected KEY=V1,V2,..., e.g. eps=1,10")
        if key in grid:
            raise ConfigError(f"bad --grid {spec!r}: {key!r} is given twice")
        grid[key] = [parse_params([f"v={v}"])["v"] for v in values]
    return grid
