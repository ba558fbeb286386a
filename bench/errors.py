"""User-facing errors: each carries a one-line message that names the problem and the fix.

The CLI prints these on stderr and exits with code 2, without a traceback. Anything
that is not a `BenchError` is a bug in bench and keeps its traceback.
"""

from __future__ import annotations


class BenchError(Exception):
    """A mistake the user can fix (bad name, bad file, missing data); exit code 2."""

    exit_code = 2


class UnknownNameError(BenchError):
    """A task, mechanism, attack, metric or suite name that no registry knows."""


class SuiteFileError(BenchError):
    """A suite file that does not parse or has unknown keys / wrong types."""


class DataMissingError(BenchError):
    """A dataset whose files are not on disk; the message names the files and the fix."""


class MechanismOutputError(BenchError):
    """A mechanism (or attack) returned NaN / inf values or a tensor of the wrong shape."""


class ConfigError(BenchError):
    """Invalid parameters for a task, mechanism or attack."""
