"""The benchmark reads the controller's ready record from the tail of a live state-change log."""

from __future__ import annotations

import json
from pathlib import Path

from controller.bench.cluster import iso_to_epoch, last_record_ts


def _line(ts: str, to_state: str, seq: int) -> str:
    return json.dumps(
        {"ts": ts, "seq": seq, "kind": "controller", "to_state": to_state}, separators=(",", ":")
    )


def test_the_last_whole_record_wins(tmp_path: Path) -> None:
    log = tmp_path / "state-change.log"
    log.write_text(
        _line("2026-11-25T10:00:00.000000Z", "ready", 1) + "\n"
        + _line("2026-11-25T10:00:05.000000Z", "elected", 2) + "\n"
        + _line("2026-11-25T10:00:06.500000Z", "ready", 3) + "\n"
    )  # fmt: skip
    assert last_record_ts(log, "ready") == iso_to_epoch("2026-11-25T10:00:06.500000Z")
    assert last_record_ts(log, "elected") == iso_to_epoch("2026-11-25T10:00:05.000000Z")
    assert last_record_ts(log, "resigned") is None


def test_a_line_still_being_written_is_not_read(tmp_path: Path) -> None:
    log = tmp_path / "state-change.log"
    whole = _line("2026-11-25T10:00:00.000000Z", "ready", 1) + "\n"
    partial = _line("2026-11-25T10:00:09.000000Z", "ready", 2)[:-7]  # no closing, no newline
    log.write_text(whole + partial)
    assert last_record_ts(log, "ready") == iso_to_epoch("2026-11-25T10:00:00.000000Z")


def test_a_tail_starting_mid_line_skips_that_fragment(tmp_path: Path) -> None:
    log = tmp_path / "state-change.log"
    first = _line("2026-11-25T10:00:00.000000Z", "ready", 1) + "\n"
    second = _line("2026-11-25T10:00:01.000000Z", "elected", 2) + "\n"
    log.write_text(first + second)
    # The tail cuts the ready line after its to_state: a fragment that must not be parsed.
    tail = len(second) + len(first) - first.index('"kind"')
    assert last_record_ts(log, "ready", tail_bytes=tail) is None
    assert last_record_ts(log, "elected", tail_bytes=tail) is not None


def test_no_log_yet(tmp_path: Path) -> None:
    assert last_record_ts(tmp_path / "missing.log", "ready") is None
