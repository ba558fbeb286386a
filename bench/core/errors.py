"""User-facing errors: each carries a one-line message that names the problem and the fix.

The CLI prints these on stderr and exits with their `exit_code` (2; 1 when jobs of a run
failed), without a traceback. Anything else raised outside a job is a bug in bench and
keeps its traceback; what a job raises is that job's failure (bench.run.runner).
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


class JobsFailedError(BenchError):
    """Jobs of a run raised (a plug-in's bug, a mechanism's NaN output): the other jobs are
    stored and the same command reruns only the failed ones; exit code 1."""

    exit_code = 1


class IncompleteRunError(JobsFailedError):
    """A run ended with jobs of its selection neither stored nor failed (its executor
    stopped early): never a finished run; exit code 1, and the same command runs them."""


class DeviceError(ConfigError):
    """A device string bench does not know, or a device this machine does not have."""


def did_you_mean(name: str, known: list[str]) -> str:
    """ " (did you mean 'smoke'?)" for a near miss among `known` names, else "": a typo
    gets the fix in the same line as the error."""
    from difflib import get_close_matches

    close = get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
