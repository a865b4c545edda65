"""Application logging: structlog in front, one stdlib handler behind.

Every record, ours (structlog) and third-party stdlib ones (kazoo, grpc), goes through the same
``ProcessorFormatter`` on one root handler, so they share one shape: JSON lines when the stream
is not a terminal (``timestamp`` ISO-8601 UTC, ``level``, ``logger``, ``event``, bound fields,
tracebacks as dicts), a human console rendering on a terminal.

Context (controller id, epoch, current event) lives in contextvars, which are **per thread**:
values bound on the controller event thread do not appear in lines logged from kazoo's
callback threads or gRPC worker threads, which start with an empty context. Bind on the thread
that logs (the event thread binds per event; servicers bind per RPC).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterable
from itertools import islice
from typing import IO, Any, Literal

import structlog
import structlog.tracebacks
from structlog.contextvars import bind_contextvars, merge_contextvars, unbind_contextvars
from structlog.typing import EventDict, Processor

LogFormat = Literal["auto", "json", "console"]

# Marks the handler we install so a second configure_logging() replaces it instead of adding
# another (tests and SIGHUP reconfiguration call it repeatedly).
_HANDLER_MARK = "_zk_controller_handler"


def _shared_processors() -> list[Processor]:
    # Run for structlog events and, via foreign_pre_chain, for stdlib records alike.
    # merge_contextvars goes first so explicitly passed keys win over bound ones.
    return [
        merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
    ]


_LEADING_KEYS = ("timestamp", "level", "logger", "event")


def _leading_keys_first(_: Any, __: str, event_dict: EventDict) -> EventDict:
    # Readers scan the fixed keys first; the bound fields follow in the order they were added.
    ordered = {k: event_dict.pop(k) for k in _LEADING_KEYS if k in event_dict}
    ordered.update(event_dict)
    return ordered


def _wants_json(fmt: str, stream: IO[str]) -> bool:
    if fmt == "json":
        return True
    if fmt == "console":
        return False
    if fmt != "auto":
        raise ValueError(f"unknown log format {fmt!r}; expected auto, json or console")
    isatty = getattr(stream, "isatty", None)
    try:
        return not (isatty is not None and isatty())
    except ValueError:  # a closed stream
        return True


def _level_number(level: int | str) -> int:
    if isinstance(level, int):
        return level
    name = level.strip().upper()
    number = logging.getLevelNamesMapping().get("WARNING" if name == "WARN" else name)
    if number is None:
        raise ValueError(f"unknown log level {level!r}")
    return number


def log_level_arg(text: str) -> str:
    """An argparse ``type`` for ``--log-level``: a bad level is a usage error (exit 2)."""
    try:
        _level_number(text)
    except ValueError:
        names = "DEBUG, INFO, WARNING (WARN), ERROR, CRITICAL"
        raise argparse.ArgumentTypeError(f"unknown log level {text!r} (one of {names})") from None
    return text


class _RedactZooKeeperSecrets(logging.Filter):
    """kazoo logs every request it sends at DEBUG, among them Auth (the digest
    ``user:password``), Connect (the session's password, enough to take the session over)
    and SASL: only their type reaches our log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("kazoo") and record.args:
            from kazoo.protocol.serialization import SASL, Auth, Connect

            args = record.args if isinstance(record.args, tuple) else (record.args,)
            if any(isinstance(a, (Auth, Connect, SASL)) for a in args):
                record.args = tuple(
                    f"{type(a).__name__}(<redacted>)" if isinstance(a, (Auth, Connect, SASL))
                    else a
                    for a in args
                )  # fmt: skip
            elif "passwd" in str(record.msg):
                record.msg, record.args = "session credentials (redacted)", ()
        return True


_REDACT = _RedactZooKeeperSecrets()


class _LogStreamHandler(logging.StreamHandler):
    """A stream handler that says once, not at every line, that its stream has gone (the
    reader of stdout exited: a pipe to a log shipper that died). The daemon runs on."""

    _gone = False

    def handleError(self, record: logging.LogRecord) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, BrokenPipeError):
            super().handleError(record)
            return
        if not self._gone:
            self._gone = True
            with contextlib.suppress(Exception):
                sys.stderr.write(
                    "zk-controller: the log stream is closed (broken pipe); "
                    "log lines are lost from now on\n"
                )
                sys.stderr.flush()


def configure_logging(
    level: int | str = "INFO", fmt: LogFormat | str = "auto", stream: IO[str] | None = None
) -> logging.Handler:
    """(Re)configure structlog and the stdlib root logger; return the installed handler.

    Idempotent: the handler from a previous call is removed, other handlers are left alone.
    ``stream`` defaults to ``sys.stdout`` as it is at call time.
    """
    stream = sys.stdout if stream is None else stream
    number = _level_number(level)
    shared = _shared_processors()
    if _wants_json(fmt, stream):
        final: list[Processor] = [
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            # Locals in tracebacks would leak data into logs and bloat every error line.
            structlog.processors.ExceptionRenderer(
                structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
            ),
            _leading_keys_first,
            structlog.processors.JSONRenderer(sort_keys=False),
        ]
    else:
        colors = bool(getattr(stream, "isatty", lambda: False)())
        final = [
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.dev.ConsoleRenderer(colors=colors),
        ]

    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
        processors=final,
    )
    handler = _LogStreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(_REDACT)
    # On the logger too: a record is formatted by the first handler that takes it (another
    # handler on the root, e.g. a test runner's, would keep the secret in its message).
    kazoo_logger = logging.getLogger("kazoo.client")
    if _REDACT not in kazoo_logger.filters:
        kazoo_logger.addFilter(_REDACT)
    setattr(handler, _HANDLER_MARK, True)

    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(number)
    # Python warnings (e.g. deprecations in dependencies) come out in the same shape.
    logging.captureWarnings(True)

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Caching would pin loggers created before a reconfiguration (and defeats
        # structlog.testing.capture_logs); the lookup it saves is cheap.
        cache_logger_on_first_use=False,
    )
    return handler


def reset_logging() -> None:
    """Undo ``configure_logging``: drop our handler and restore structlog's defaults.

    For tests: a handler bound to one test's captured stdout must not outlive that test.
    """
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(old)
        old.close()
    logging.captureWarnings(False)
    structlog.reset_defaults()


def set_level(level: int | str) -> None:
    """Change the root level at runtime (SIGHUP) without rebuilding handlers."""
    logging.getLogger().setLevel(_level_number(level))


def get_logger(name: str, **initial: Any) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger(name, **initial)
    return logger


#: How many items a line about many partitions names (the rest are counted, not listed).
LOG_SAMPLE_SIZE = 10


def log_sample(items: Iterable[Any], size: int = LOG_SAMPLE_SIZE) -> list[str]:
    """The first ``size`` items as text: one line about a request that names 100k partitions
    must not take the event thread seconds to write (or one line per partition)."""
    return [str(item) for item in islice(items, size)]


def bind_controller_context(controller_id: int, epoch: int) -> None:
    """Bind ``controller_id`` and ``controller_epoch`` for logs **from the calling thread only**.

    Call it on the controller event thread (after election and on every epoch change). Lines
    logged by kazoo or gRPC threads will not carry these fields; contextvars do not cross
    threads.
    """
    bind_contextvars(controller_id=controller_id, controller_epoch=epoch)


def unbind_controller_context() -> None:
    unbind_contextvars("controller_id", "controller_epoch")
