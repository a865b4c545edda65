"""The state-change log's file through a full disk, failed reopens and rotation."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import structlog

from controller.core.model import TopicPartition
from controller.state_change_file import LineFile, WriteFailed
from controller.state_change_log import StateChangeLog

TP = TopicPartition("t", 0)

# The kernel's own disk-full behaviour, in a child so the limit binds nothing else:
# RLIMIT_FSIZE makes a write past the limit short (what fits) and the next one fail, as ENOSPC.
_DISK_FULL_CHILD = textwrap.dedent(
    """
    import os, resource, signal, sys
    from controller.core.model import TopicPartition
    from controller.state_change_log import StateChangeLog

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    path = sys.argv[1]
    log = StateChangeLog(path, 1)
    log.set_epoch(5)

    def event(name, n):
        log.set_event(name)
        for i in range(n):
            log.partition(TopicPartition("t", 0), "OnlinePartition", "OnlinePartition",
                          leader=1, leader_epoch=i, isr=[1, 2])
        log.flush()

    event("before", 3)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(path) + 1000, hard))
    event("during-big", 3000)  # one write larger than any buffer: cut part-way
    event("during-small", 5)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # space is back
    event("after", 3)
    log.close()
    print(log.write_errors)
    """
)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_write_cut_short_by_a_full_disk_is_completed_when_space_returns(tmp_path: Path) -> None:
    """The file never holds a torn line glued to a later record; nothing is lost."""
    path = tmp_path / "sc.log"
    child = subprocess.run(
        [sys.executable, "-c", _DISK_FULL_CHILD, str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    assert int(child.stdout.split()[-1]) >= 1  # the full disk was seen
    recs = records(path)  # raises on a torn line
    assert [r["event"] for r in recs] == (
        ["before"] * 3 + ["during-big"] * 3000 + ["during-small"] * 5 + ["after"] * 3
    )
    assert [r["seq"] for r in recs] == sorted(r["seq"] for r in recs)


class ShortWrites:
    """os.write that writes ``budget`` bytes in all, then fails with ENOSPC."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.real = __import__("os").write

    def __call__(self, fd: int, data: Any) -> int:
        if self.budget <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = self.real(fd, bytes(data[: self.budget]))
        self.budget -= n
        return n


@pytest.mark.parametrize(
    ("max_pending", "kept"),
    [(100, 2), (10, 1)],  # 100: the begun line's rest and one more fit; 10: only the rest
)
def test_past_the_bound_the_newest_lines_are_dropped_and_the_begun_line_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_pending: int, kept: int
) -> None:
    path = tmp_path / "f"
    f = LineFile(path, max_pending=max_pending)
    full = ShortWrites(budget=5)
    monkeypatch.setattr("controller.state_change_file.os.write", full)
    lines = [f"line-{i:03d}-{'x' * 30}\n" for i in range(10)]  # 40 bytes each
    with pytest.raises(WriteFailed) as failed:
        f.write("".join(lines))
    # The first line was begun (5 bytes): its rest is always kept, then the oldest lines
    # that fit; the newest are dropped.
    assert (failed.value.pending_lines, failed.value.lost_lines) == (kept, 10 - kept)
    assert failed.value.errno == errno.ENOSPC
    full.budget = 10**9  # space is back
    f.write("next\n")
    f.close()
    assert path.read_text() == "".join(lines[:kept]) + "next\n"


def test_while_the_disk_stays_full_lines_accumulate_and_are_written_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f"
    f = LineFile(path)
    full = ShortWrites(budget=0)
    monkeypatch.setattr("controller.state_change_file.os.write", full)
    for i in range(50):
        with pytest.raises(WriteFailed) as failed:
            f.write(f"event {i}\n")
        assert (failed.value.pending_lines, failed.value.lost_lines) == (i + 1, 0)
    full.budget = 10**9
    f.write("after\n")
    assert f.pending_lines == 0
    f.close()
    assert path.read_text().splitlines() == [f"event {i}" for i in range(50)] + ["after"]


def test_a_failed_reopen_after_rotation_is_retried_by_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Size-based rotation, then the new file cannot be opened once (EMFILE): the lines are
    kept and the file is created by the next event's write, not never again."""
    path = tmp_path / "sc.log"
    log = StateChangeLog(path, 1, max_bytes=1, backups=3)
    log.partition(TP, None, "NewPartition")
    real_open = LineFile._open
    calls = {"n": 0}

    def open_once_failing(self: LineFile) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(self)

    monkeypatch.setattr(LineFile, "_open", open_once_failing)
    log.flush()  # rotates; the reopen fails
    assert log.write_errors == 1 and not path.exists()
    for state in ("OnlinePartition", "OfflinePartition"):
        log.partition(TP, None, state)
        log.flush()
    log.close()
    assert log.write_errors == 1  # the one failed open
    oldest_first = [tmp_path / f"sc.log.{n}" for n in (3, 2, 1)] + [path]
    to_states = [r["to_state"] for p in oldest_first if p.exists() for r in records(p)]
    assert to_states == ["NewPartition", "OnlinePartition", "OfflinePartition"]


def test_reopen_finishes_a_cut_line_in_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """logrotate moves the file while its last line is cut short: the rest of that line goes
    to the old file, where its head is, and the new file starts with a whole line."""
    path = tmp_path / "sc.log"
    f = LineFile(path)
    full = ShortWrites(budget=4)
    monkeypatch.setattr("controller.state_change_file.os.write", full)
    with pytest.raises(WriteFailed):
        f.write("first line\nsecond line\n")
    path.rename(tmp_path / "sc.log.1")
    full.budget = 10**9
    f.reopen()
    f.write("third line\n")
    f.close()
    assert (tmp_path / "sc.log.1").read_text() == "first line\n"
    assert path.read_text() == "second line\nthird line\n"


def test_a_deleted_log_directory_is_recreated_and_no_line_goes_to_the_unlinked_file(
    tmp_path: Path,
) -> None:
    """An operator's rm -rf of log.dir while the controller runs: the lines of the next events
    go to a new file at the path (recreated), not to the open, unlinked one, where they
    would be lost without an error."""
    path = tmp_path / "logs" / "sc.log"
    log = StateChangeLog(path, 1)
    log.partition(TP, None, "NewPartition")
    log.flush()
    shutil.rmtree(tmp_path / "logs")
    with structlog.testing.capture_logs() as logged:
        for state in ("OnlinePartition", "OfflinePartition"):
            log.partition(TP, None, state)
            log.flush()
    log.close()
    assert [(e["log_level"], e["event"]) for e in logged] == [
        ("warning", "state-change log file was deleted; writing to a new file at its path")
    ]
    assert log.write_errors == 0
    assert [r["to_state"] for r in records(path)] == ["OnlinePartition", "OfflinePartition"]


def test_a_file_replaced_at_the_path_is_followed(tmp_path: Path) -> None:
    """A rotation's new file at the path before its SIGHUP (logrotate's create): the next
    write goes to the file at the path."""
    path = tmp_path / "sc.log"
    f = LineFile(path)
    assert f.write("one\n") is None
    path.rename(tmp_path / "sc.log.1")
    path.write_text("")  # logrotate's create
    assert f.write("two\n") == "replaced"
    assert f.write("three\n") is None
    f.close()
    assert (tmp_path / "sc.log.1").read_text() == "one\n"
    assert path.read_text() == "two\nthree\n"


def test_a_file_moved_away_is_written_until_a_new_one_is_there(tmp_path: Path) -> None:
    """Between logrotate's rename and its create nothing is at the path: the lines go on to
    the moved file (still on disk), and the path is not created here, which would make
    logrotate's own create fail (it creates with O_EXCL)."""
    path = tmp_path / "sc.log"
    f = LineFile(path)
    f.write("one\n")
    path.rename(tmp_path / "sc.log.1")
    assert f.write("two\n") is None
    assert not path.exists()
    f.reopen()  # the SIGHUP
    f.write("three\n")
    f.close()
    assert (tmp_path / "sc.log.1").read_text() == "one\ntwo\n"
    assert path.read_text() == "three\n"


def test_a_path_that_cannot_be_looked_at_leaves_the_open_file_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stat() of the path fails for another reason (EACCES on its directory, a stale NFS
    handle): the open file is still fine, so the lines go there, not to a failure."""
    path = tmp_path / "sc.log"
    f = LineFile(path)
    real_stat = os.stat

    def refused(target: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(target) == str(path):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_stat(target, *args, **kwargs)

    monkeypatch.setattr("controller.state_change_file.os.stat", refused)
    assert f.write("one\n") is None
    f.close()
    assert path.read_text() == "one\n"


def test_when_the_path_cannot_be_reopened_the_lines_are_kept_and_written_later(
    tmp_path: Path,
) -> None:
    """The directory is gone and a plain file now sits where it was: the write fails (counted,
    logged) and keeps the lines; once the path is usable again they are written there."""
    logs = tmp_path / "logs"
    path = logs / "sc.log"
    f = LineFile(path)
    f.write("one\n")
    shutil.rmtree(logs)
    logs.write_text("not a directory")
    with pytest.raises(WriteFailed) as exc:
        f.write("two\n")
    assert exc.value.errno == errno.ENOTDIR and exc.value.pending_lines == 1
    assert "is not a directory" in str(exc.value)
    logs.unlink()
    assert f.write("three\n") == "deleted"
    f.close()
    assert path.read_text() == "two\nthree\n"
