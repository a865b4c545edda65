"""The state-change log's file: whole lines appended, through a full disk and failed reopens.

A buffered text stream loses track of what reached the disk: when a large write fails part-way
(disk full), the file ends inside a line and the next successful write is glued onto it, one
unparseable line that swallows a good record. Here every write is a raw ``os.write`` whose
count is known: bytes not written are kept and written first next time, so the line is
completed where it was cut. The bytes kept are bounded (``max_pending``); past it whole lines
are dropped (the newest), never the rest of a line already begun.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

#: Bytes kept for a retry while writes fail (~30K lines); beyond it newer lines are dropped.
MAX_PENDING_BYTES = 8 << 20

_NEWLINE = 0x0A


class WriteFailed(OSError):
    """A write that left ``pending_lines`` to retry and dropped ``lost_lines`` for good."""

    def __init__(self, cause: OSError, pending_lines: int, lost_lines: int) -> None:
        if cause.filename is None:
            super().__init__(cause.errno, cause.strerror or str(cause))
        else:  # which path failed: the log's, or its directory's
            super().__init__(cause.errno, cause.strerror or str(cause), cause.filename)
        self.pending_lines = pending_lines
        self.lost_lines = lost_lines


class LineFile:
    """An append-only file of whole lines; callers hand it whole lines only.

    Not thread-safe: the state-change log serialises calls under its lock.
    """

    def __init__(
        self, path: Path, *, max_bytes: int = 0, backups: int = 10,
        max_pending: int = MAX_PENDING_BYTES,
    ) -> None:  # fmt: skip
        self.path = path
        # Size-based rotation (0: off, logrotate's job).
        self._max_bytes = max_bytes
        self._backups = max(backups, 1)
        self._max_pending = max_pending
        self._pending = bytearray()  # not yet on disk, oldest first
        self._pending_lines = 0  # newlines in it (kept, not counted, on every failed event)
        self._mid_line = False  # the open file ends inside a line (a short write's head)
        self._fd: int | None = self._open()

    def _open(self) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:  # mkdir's own word for it, "File exists", misleads
            raise NotADirectoryError(
                errno.ENOTDIR, "exists and is not a directory", str(self.path.parent)
            ) from None
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    @property
    def pending_lines(self) -> int:
        return self._pending_lines

    def write(self, text: str) -> str | None:
        """Append ``text`` after what earlier failures left; raises ``WriteFailed`` when not
        all of it is on disk (the rest is kept for the next call, up to the bound). Returns
        why a new file was opened at the path first ("deleted", "replaced"), else None."""
        data = text.encode("utf-8")
        self._pending += data  # in place: cheap while a full disk keeps megabytes pending
        self._pending_lines += data.count(b"\n")
        if not self._pending:
            return None
        followed = None
        try:
            if self._fd is None:  # a reopen failed earlier (rotation): try again now
                self._fd = self._open()
            else:
                followed = self._follow_path()
            self._write_pending(self._fd)
        except OSError as exc:
            lost = self._bound_pending()
            raise WriteFailed(exc, self._pending_lines, lost) from exc
        return followed

    def _follow_path(self) -> str | None:
        """Reopen when the open file was deleted ("deleted": an ``rm -rf`` of the directory;
        lines written to an unlinked file are lost without an error) or another file now
        sits at the path ("replaced": a rotation's new file, before its SIGHUP). A file moved
        away with nothing at the path yet (logrotate between its rename and its create) is
        still written: creating the path here would race logrotate's create. Raises OSError
        when the path cannot be opened (the lines are then kept, not written to a file no
        one can read)."""
        assert self._fd is not None
        try:
            at_path: os.stat_result | None = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):  # the reopen says what is wrong
            at_path = None
        except OSError:  # cannot look (EACCES on the directory, a stale NFS handle)
            return None
        opened = os.fstat(self._fd)
        if at_path is None:
            if opened.st_nlink > 0:
                return None
            reason = "deleted"
        elif (at_path.st_dev, at_path.st_ino) == (opened.st_dev, opened.st_ino):
            return None
        else:
            reason = "replaced"
        self.reopen()
        return reason

    def _write_pending(self, fd: int, upto: int | None = None) -> None:
        """Write the first ``upto`` pending bytes (all by default) and forget what was
        written, also when a write fails part-way (then raises)."""
        end = len(self._pending) if upto is None else upto
        done = 0
        try:
            # Views are released before the bytearray is resized (an export forbids it), also
            # when a traceback still refers to them.
            with memoryview(self._pending) as view:
                while done < end:
                    with view[done:end] as chunk:
                        n = os.write(fd, chunk)
                    if n <= 0:  # not for a regular file, but a loop must not spin on it
                        raise OSError(errno.EIO, "write wrote nothing")
                    self._mid_line = view[done + n - 1] != _NEWLINE
                    done += n
        finally:
            self._drop_front(done)

    def _drop_front(self, n: int) -> None:
        if n:
            self._pending_lines -= self._pending.count(b"\n", 0, n)
            del self._pending[:n]

    def _bound_pending(self) -> int:
        """Past the bound, drop the newest whole lines (the oldest are kept, and so is the
        rest of a begun line: it is what makes the file's last line whole again); the number
        dropped."""
        if len(self._pending) <= self._max_pending:
            return 0
        keep = self._pending.rfind(b"\n", 0, self._max_pending) + 1
        if self._mid_line:
            keep = max(keep, self._pending.index(b"\n") + 1)
        lost = self._pending.count(b"\n", keep)
        del self._pending[keep:]
        self._pending_lines -= lost
        return lost

    def size(self) -> int:
        return 0 if self._fd is None else os.fstat(self._fd).st_size

    def maybe_rotate(self) -> None:
        """FILE -> FILE.1 -> ... -> FILE.<backups> (the oldest deleted) once FILE has reached
        ``max_bytes``; called between events, so an event's lines stay in one file. Raises
        OSError when renaming or reopening failed (a failed reopen is retried by ``write``)."""
        if self._max_bytes <= 0 or self._pending or self.size() < self._max_bytes:
            return
        self._close_fd()
        try:
            base = str(self.path)
            # One directory listing, not one stat per allowed backup: with a large
            # ``backups`` that loop stalled the event thread (1.1 s per 100,000).
            for n in sorted(self._backup_numbers(), reverse=True):
                if n < self._backups:
                    Path(f"{base}.{n}").replace(f"{base}.{n + 1}")
                elif n > self._backups:  # left by a run with more backups: past the limit
                    Path(f"{base}.{n}").unlink(missing_ok=True)
            self.path.replace(f"{base}.1")
        finally:
            self._fd = self._open()

    def _backup_numbers(self) -> list[int]:
        """The N of every FILE.N beside the file."""
        prefix = f"{self.path.name}."
        numbers = []
        with os.scandir(self.path.parent) as entries:
            for entry in entries:
                suffix = entry.name[len(prefix):] if entry.name.startswith(prefix) else ""
                if suffix.isascii() and suffix.isdigit() and not suffix.startswith("0"):
                    numbers.append(int(suffix))
        return numbers

    def reopen(self) -> None:
        """Switch to a new file at the path (logrotate moved the old one). Raises OSError,
        keeping the old file, when the path cannot be opened."""
        fd = self._open()
        self._finish_line()
        self._close_fd()
        self._fd = fd

    def _finish_line(self) -> None:
        """Before leaving a file that ends inside a line: write the rest of that line there,
        or drop it (a line's tail at the head of the next file would be garbage there; the
        old file then ends torn, which only a disk still full at a reopen or stop can do)."""
        if not (self._mid_line and self._pending and self._fd is not None):
            return
        end = self._pending.index(b"\n") + 1
        try:
            self._write_pending(self._fd, end)
        except OSError:  # what was not written of that line is still first
            self._drop_front(self._pending.index(b"\n") + 1)
        self._mid_line = False

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def close(self) -> int:
        """Write what is pending (one try) and close; the lines that could not be written."""
        try:
            if self._pending and self._fd is not None:
                with contextlib.suppress(OSError):
                    self._write_pending(self._fd)
        finally:
            lost = self._pending_lines
            self._pending.clear()
            self._pending_lines = 0
            self._close_fd()
        return lost
