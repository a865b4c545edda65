"""The job's own errors, and the JVM's errors read back in one line.

Spark's failures reach Python as py4j errors wrapping a chain of Java exceptions; the
command line reports the innermost one (or the file a read failed on) instead of a Python and
a Java traceback.
"""

from __future__ import annotations

import re


class NoRecordsError(ValueError):
    """The input holds no lines at all (an empty directory, empty files): nothing is written,
    so an earlier run's results are not replaced by empty ones."""


class OutputNotWritableError(RuntimeError):
    """The output directory cannot be created or written; found before the input is read."""


def java_root_cause(exc: BaseException) -> str:
    """The innermost Java exception of a py4j error, as ``Class: message`` (its first line:
    some messages carry a stack trace of their own)."""
    try:
        cause = exc.java_exception  # type: ignore[attr-defined]
        while cause.getCause() is not None:
            cause = cause.getCause()
        text = str(cause.toString())
    except Exception:
        text = str(exc) or type(exc).__name__
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def unreadable_file(exc: BaseException) -> str | None:
    """The file named by Spark's FAILED_READ_FILE error in a py4j error's causes, if any."""
    try:
        cause = exc.java_exception  # type: ignore[attr-defined]
        while cause is not None:
            found = re.search(r"while reading file (\S+)\.(?:\s|$)", str(cause.getMessage()))
            if found:
                return found.group(1)
            cause = cause.getCause()
    except Exception:
        pass
    return None
