from __future__ import annotations

import io
import json
import logging
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from structlog.contextvars import clear_contextvars

from controller.logs import (
    bind_controller_context,
    configure_logging,
    get_logger,
    set_level,
    unbind_controller_context,
)

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


class TtyStream(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    clear_contextvars()
    yield
    clear_contextvars()
    for h in root.handlers:
        if h not in handlers:
            root.removeHandler(h)
    root.setLevel(level)
    logging.captureWarnings(False)
    structlog.reset_defaults()


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_structlog_and_stdlib_lines_share_the_json_shape() -> None:
    out = io.StringIO()
    configure_logging("INFO", stream=out)
    bind_controller_context(controller_id=3, epoch=17)

    get_logger("controller.event").info("event processed", event_name="BrokerChange", ms=4)
    logging.getLogger("kazoo.client").warning("Connection dropped: %s", "socket closed")

    ours, kazoo = lines(out)
    assert list(ours)[:4] == ["timestamp", "level", "logger", "event"]
    assert ours["event"] == "event processed"
    assert ours["level"] == "info"
    assert ours["logger"] == "controller.event"
    assert ours["event_name"] == "BrokerChange" and ours["ms"] == 4
    assert ISO_UTC.fullmatch(ours["timestamp"])

    assert list(kazoo)[:4] == ["timestamp", "level", "logger", "event"]
    assert kazoo["event"] == "Connection dropped: socket closed"
    assert kazoo["level"] == "warning"
    assert kazoo["logger"] == "kazoo.client"
    assert ISO_UTC.fullmatch(kazoo["timestamp"])
    for line in (ours, kazoo):
        assert line["controller_id"] == 3
        assert line["controller_epoch"] == 17

    unbind_controller_context()
    get_logger("x").info("after")
    assert "controller_id" not in lines(out)[-1]


def test_context_is_per_thread() -> None:
    out = io.StringIO()
    configure_logging("INFO", stream=out)
    bind_controller_context(1, 2)
    worker = threading.Thread(target=lambda: logging.getLogger("kazoo.client").info("cb"))
    worker.start()
    worker.join()
    (line,) = lines(out)
    assert line["event"] == "cb"
    assert "controller_id" not in line  # the documented gotcha: other threads don't see it


def test_exceptions_are_structured_without_locals() -> None:
    out = io.StringIO()
    configure_logging("INFO", stream=out)
    secret = "hunter2"
    try:
        raise RuntimeError(f"bad {len(secret)}")
    except RuntimeError:
        get_logger("controller").exception("failed")
        logging.getLogger("grpc._server").exception("rpc failed")
    for line in lines(out):
        (exc,) = line["exception"]
        assert exc["exc_type"] == "RuntimeError"
        assert exc["exc_value"] == "bad 7"
        assert exc["frames"] and all("locals" not in f for f in exc["frames"])
    assert secret not in out.getvalue()


def test_console_on_a_tty_json_otherwise() -> None:
    tty = TtyStream()
    configure_logging("INFO", stream=tty)
    get_logger("c").info("hello console", answer=42)
    text = tty.getvalue()
    assert "hello console" in text and "answer" in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text.splitlines()[0])

    forced = TtyStream()
    configure_logging("INFO", fmt="json", stream=forced)
    get_logger("c").info("forced")
    assert lines(forced)[0]["event"] == "forced"

    plain = io.StringIO()
    configure_logging("INFO", fmt="console", stream=plain)
    get_logger("c").info("plain console")
    assert "plain console" in plain.getvalue()
    assert "\x1b[" not in plain.getvalue()  # no colours when the stream is not a terminal
    with pytest.raises(json.JSONDecodeError):
        json.loads(plain.getvalue().splitlines()[0])


def test_reconfiguring_replaces_the_handler_and_level() -> None:
    first, second = io.StringIO(), io.StringIO()
    foreign = logging.NullHandler()
    logging.getLogger().addHandler(foreign)
    configure_logging("INFO", stream=first)
    configure_logging("INFO", stream=first)
    get_logger("c").info("once")
    assert [line["event"] for line in lines(first)] == ["once"]  # not duplicated

    configure_logging("WARNING", stream=second)
    get_logger("c").info("dropped")
    logging.getLogger("kazoo").info("dropped too")
    get_logger("c").warning("kept")
    assert [line["event"] for line in lines(second)] == ["kept"]
    assert [line["event"] for line in lines(first)] == ["once"]  # old handler detached
    assert foreign in logging.getLogger().handlers  # others' handlers are left alone

    set_level("debug")
    get_logger("c").debug("now visible")
    assert lines(second)[-1]["event"] == "now visible"


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError):
        configure_logging("LOUD", stream=io.StringIO())
    with pytest.raises(ValueError):
        configure_logging("INFO", fmt="xml", stream=io.StringIO())


class _ClosedPipe(io.StringIO):
    """stdout whose reader has exited: every write raises, as a real pipe's does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_log_stream_is_reported_once_not_at_every_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("INFO", "json", stream=_ClosedPipe())
    log = get_logger("t")
    for i in range(3):
        log.info("line", n=i)  # the daemon runs on
    err = capsys.readouterr().err
    assert err.count("the log stream is closed (broken pipe)") == 1
    assert "Traceback" not in err and "Logging error" not in err
