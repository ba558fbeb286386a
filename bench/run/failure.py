"""A job's failure as the store records it: the error's type name, its message on one line
and its whole traceback. Made in the process that ran the job (bench.run.executors.attempt)
or by the driver for a job whose worker died or ran out of time (bench.run.supervisor)."""

from __future__ import annotations

import traceback
from dataclasses import dataclass

MAX_MESSAGE_CHARS = 300  # a failure's one-line message is cut here (the traceback is whole)


@dataclass(frozen=True)
class JobFailure:
    """What a job that raised leaves instead of a JobOutcome: the exception's type name, its
    message on one line (what the user sees) and the whole traceback (kept in the store)."""

    error: str
    message: str
    traceback: str

    @classmethod
    def of(cls, exc: BaseException) -> JobFailure:
        """The failure an exception describes, with its traceback as it is now; an exception
        whose message cannot be made (its __str__ raises) is still its job's failure."""
        message = " ".join(_message_of(exc).split()) or "(no message)"
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[: MAX_MESSAGE_CHARS - 3] + "..."
        try:
            text = "".join(traceback.format_exception(exc))
        except Exception:  # a plug-in exception that breaks formatting too
            text = f"{type(exc).__name__}: {message}\n"
        return cls(_type_name(exc), message, text)

    def line(self) -> str:
        """The failure on one line: "Type: message"."""
        return f"{self.error}: {self.message}"


def _message_of(exc: BaseException) -> str:
    """str(exc), or a stand-in naming why it cannot be had (a plug-in's __str__ that raises
    or returns something other than text)."""
    try:
        text = str(exc)
    except Exception as err:  # any error of the plug-in's __str__
        return f"(its message could not be shown: __str__ raised {_type_name(err)})"
    return text if isinstance(text, str) else "(its message could not be shown)"


def _type_name(exc: BaseException) -> str:
    name = getattr(type(exc), "__name__", None)
    return name if isinstance(name, str) else "Exception"
