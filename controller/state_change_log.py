"""The state-change log: one JSON line per partition, replica or controller transition.

This is Kafka's ``state.change.logger`` as data, plus what the analytics need that Kafka only
debug-logs: ISR and leader changes made by brokers (a partition record from its state to the
same state), and partitions a new controller finds leaderless (``NonExistentPartition`` to
``OfflinePartition``). ``ts`` never goes backwards within a process. The line schema is the
input contract of the analytics (Spark) pipeline, so it is fixed: every line has every key
below, in this order.

=================  =====================================================================
``ts``             ISO-8601 UTC with microseconds, ``2026-11-22T10:15:30.123456Z``
``seq``            int, strictly increasing within one controller process (ties on ``ts``)
``controller_id``  int
``controller_epoch``  int, or null before the first ``set_epoch``
``kind``           ``partition`` | ``replica`` | ``controller``
``topic``          string; null for ``controller`` lines
``partition``      int; null for ``controller`` lines
``replica``        int for ``replica`` lines, else null
``from_state``     Kafka state name (``OfflinePartition``, ``OnlineReplica``...) or null
``to_state``       Kafka state name; ``elected`` | ``ready`` | ``resigned`` for ``controller``
``leader``         int or null (null when the transition carries no leadership)
``leader_epoch``   int or null
``isr``            list of int, or null (as for ``leader``)
``election``       ``offline`` | ``offline_unclean`` | ``reassign`` | ``preferred`` |
                   ``controlled_shutdown`` | null
``event``          name of the controller event being processed, or null
``result``         ``ok`` | ``invalid`` | ``failed``
``error``          string or null
=================  =====================================================================

Cost matters: a failover moves 100K partitions through here. Lines are built with one
f-string (no dict, no ``json.dumps`` of a whole record), kept in memory and written in large
chunks: the state machines call ``write_pending()`` once their ZooKeeper writes are done,
before brokers are told (so a crash later in a long event loses no line of a change already
made), and the event thread calls ``flush()`` at the end of each event.
"""

from __future__ import annotations

import itertools
import json.encoder
import os
import threading
import time
from collections.abc import Callable, Iterable
from enum import Enum
from pathlib import Path
from typing import IO, Protocol

import structlog

from controller.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from controller.state_change_file import LineFile, WriteFailed

log = structlog.stdlib.get_logger("controller.state_change_log")

FIELDS: tuple[str, ...] = (
    "ts", "seq", "controller_id", "controller_epoch", "kind", "topic", "partition", "replica",
    "from_state", "to_state", "leader", "leader_epoch", "isr", "election", "event", "result",
    "error",
)  # fmt: skip
ELECTIONS = frozenset(
    {"offline", "offline_unclean", "reassign", "preferred", "controlled_shutdown"}
)
RESULTS = frozenset({"ok", "invalid", "failed"})
CONTROLLER_STATES = frozenset({"elected", "ready", "resigned"})

# The C string encoder json.dumps uses; it quotes and escapes one string, nothing else.
_quote: Callable[[str], str] = json.encoder.encode_basestring_ascii

# Process-wide, so seq keeps increasing even if the log object is rebuilt (new election).
_SEQ = itertools.count(1)

# Buffered lines before an intermediate write, bounding memory during a huge event.
_MAX_BUFFERED_LINES = 10_000

State = str | Enum | None


def _state(value: State) -> str:
    if value is None:
        return "null"
    return _quote(value if isinstance(value, str) else value.name)


def _int(value: int | None) -> str:
    return "null" if value is None else f"{value:d}"


def _isr(isr: Iterable[int] | None) -> str:
    return "null" if isr is None else "[" + ",".join([f"{r:d}" for r in isr]) + "]"


def _check(value: str | None, allowed: frozenset[str], what: str) -> str:
    if value is None:
        return "null"
    if value not in allowed:
        raise ValueError(f"{what} must be one of {sorted(allowed)}, got {value!r}")
    return f'"{value}"'


class StateChangeRecorder(Protocol):
    """What the controller needs; ``StateChangeLog`` and ``NullStateChangeLog`` provide it."""

    def set_epoch(self, epoch: int | None) -> None: ...
    def set_event(self, name: str | None) -> None: ...
    def partition(
        self, tp: TopicPartition, from_state: State, to_state: State, *,
        leader: int | None = None, leader_epoch: int | None = None,
        isr: Iterable[int] | None = None, election: str | None = None,
        result: str = "ok", error: str | None = None,
    ) -> None: ...  # fmt: skip
    def replica(
        self, tp: TopicPartition, replica: int, from_state: State, to_state: State, *,
        leader: int | None = None, leader_epoch: int | None = None,
        isr: Iterable[int] | None = None, result: str = "ok", error: str | None = None,
    ) -> None: ...  # fmt: skip
    def partitions(
        self, rows: Iterable[tuple[TopicPartition, State, LeaderAndIsr, str | None]],
        to_state: State,
    ) -> None: ...  # fmt: skip
    def replicas(
        self, rows: Iterable[tuple[TopicPartition, int, State, LeaderIsrAndControllerEpoch | None]],
        to_state: State,
    ) -> None: ...  # fmt: skip
    def controller(self, to_state: str, *, error: str | None = None) -> None: ...
    def write_pending(self) -> None: ...
    def flush(self) -> None: ...
    def reopen(self) -> None: ...
    def close(self) -> None: ...


class StateChangeLog:
    """Writes state-change JSON lines to a file (owned, reopenable) or a stream (borrowed).

    Only the controller event thread should record and flush; ``close()`` and ``reopen()``
    may come from any thread. Lines recorded after ``close()`` (or racing with it) are
    dropped.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | IO[str],
        controller_id: int,
        *,
        clock_ns: Callable[[], int] = time.time_ns,
        max_bytes: int = 0,
        backups: int = 10,
    ) -> None:
        self._file: LineFile | None = None  # a file we own
        self._stream: IO[str] | None = None  # or a borrowed stream
        if isinstance(target, (str, os.PathLike)):
            self._file = LineFile(Path(target), max_bytes=max_bytes, backups=backups)
        else:
            self._stream = target
        self._controller_id = controller_id
        self._clock_ns = clock_ns
        self._lock = threading.Lock()  # guards the file or stream, not the buffer
        self._buffer: list[str] = []
        self._closed = False
        self._event = "null"
        self._second = -1
        self._second_text = ""
        self._last_ns = 0
        self.write_errors = 0
        # Called (under the lock, so it must not log here) on each failure: a metric.
        self.on_write_error: Callable[[], None] | None = None
        self.set_epoch(None)

    def _failed(self) -> None:
        self.write_errors += 1
        if self.on_write_error is not None:
            self.on_write_error()

    @property
    def path(self) -> Path | None:
        return None if self._file is None else self._file.path

    @property
    def closed(self) -> bool:
        return self._closed

    # -- context set by the event thread ---------------------------------------------------

    def set_epoch(self, epoch: int | None) -> None:
        # The constant middle of every line, rebuilt only when the epoch changes.
        common = f'"controller_id":{self._controller_id:d},"controller_epoch":{_int(epoch)},'
        self._head_partition = common + '"kind":"partition",'
        self._head_replica = common + '"kind":"replica",'
        self._head_controller = common + '"kind":"controller",'

    def set_event(self, name: str | None) -> None:
        self._event = "null" if name is None else _quote(name)

    # -- records ---------------------------------------------------------------------------

    def _ts(self) -> str:
        # Never backwards (an NTP step, a resumed VM): readers order by ts before seq, and a
        # recovery sorted before its outage would leave the outage open.
        now = max(self._clock_ns(), self._last_ns)
        self._last_ns = now
        second, nanos = divmod(now, 1_000_000_000)
        if second != self._second:  # strftime once per second, not once per line
            self._second = second
            self._second_text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._second_text}.{nanos // 1000:06d}Z"

    def partition(
        self, tp: TopicPartition, from_state: State, to_state: State, *,
        leader: int | None = None, leader_epoch: int | None = None,
        isr: Iterable[int] | None = None, election: str | None = None,
        result: str = "ok", error: str | None = None,
    ) -> None:  # fmt: skip
        if self._closed:
            return
        topic, partition = tp
        self._buffer.append(
            f'{{"ts":"{self._ts()}","seq":{next(_SEQ)},{self._head_partition}'
            f'"topic":{_quote(topic)},"partition":{partition:d},"replica":null,'
            f'"from_state":{_state(from_state)},"to_state":{_state(to_state)},'
            f'"leader":{_int(leader)},"leader_epoch":{_int(leader_epoch)},"isr":{_isr(isr)},'
            f'"election":{_check(election, ELECTIONS, "election")},"event":{self._event},'
            f'"result":{_check(result, RESULTS, "result")},'
            f'"error":{"null" if error is None else _quote(error)}}}\n'
        )
        if len(self._buffer) >= _MAX_BUFFERED_LINES:
            self._write_buffer()

    def replica(
        self, tp: TopicPartition, replica: int, from_state: State, to_state: State, *,
        leader: int | None = None, leader_epoch: int | None = None,
        isr: Iterable[int] | None = None, result: str = "ok", error: str | None = None,
    ) -> None:  # fmt: skip
        if self._closed:
            return
        topic, partition = tp
        self._buffer.append(
            f'{{"ts":"{self._ts()}","seq":{next(_SEQ)},{self._head_replica}'
            f'"topic":{_quote(topic)},"partition":{partition:d},"replica":{replica:d},'
            f'"from_state":{_state(from_state)},"to_state":{_state(to_state)},'
            f'"leader":{_int(leader)},"leader_epoch":{_int(leader_epoch)},"isr":{_isr(isr)},'
            f'"election":null,"event":{self._event},'
            f'"result":{_check(result, RESULTS, "result")},'
            f'"error":{"null" if error is None else _quote(error)}}}\n'
        )
        if len(self._buffer) >= _MAX_BUFFERED_LINES:
            self._write_buffer()

    def partitions(
        self, rows: Iterable[tuple[TopicPartition, State, LeaderAndIsr, str | None]],
        to_state: State,
    ) -> None:  # fmt: skip
        """``partition(tp, from_state, to_state, leader=..., leader_epoch=..., isr=...,
        election=...)`` for each ``(tp, from_state, leader_and_isr, election)`` row, all ``ok``:
        the partition state machine's bulk path (one timestamp per call, as ``replicas``)."""
        if self._closed:
            return
        head = f'"ts":"{self._ts()}","seq":'
        tail = f'"event":{self._event},"result":"ok","error":null}}\n'
        middle = self._head_partition
        to_text = _state(to_state)
        states: dict[State, str] = {}
        isrs: dict[tuple[int, ...], str] = {}
        elections: dict[str | None, str] = {}
        append = self._buffer.append
        quote = _quote
        pending = len(self._buffer)
        for (topic, partition), from_state, lai, election in rows:
            if pending >= _MAX_BUFFERED_LINES:  # bound memory during a huge bulk record
                self._write_buffer()
                append = self._buffer.append
                pending = 0
            pending += 1
            from_text = states.get(from_state)
            if from_text is None:
                from_text = states[from_state] = _state(from_state)
            isr = lai.isr
            isr_text = isrs.get(isr)
            if isr_text is None:
                isr_text = isrs[isr] = _isr(isr)
            election_text = elections.get(election)
            if election_text is None:
                election_text = elections[election] = _check(election, ELECTIONS, "election")
            append(
                f'{{{head}{next(_SEQ)},{middle}"topic":{quote(topic)},"partition":{partition:d},'
                f'"replica":null,"from_state":{from_text},"to_state":{to_text},'
                f'"leader":{lai.leader:d},"leader_epoch":{lai.leader_epoch:d},"isr":{isr_text},'
                f'"election":{election_text},{tail}'
            )

    def replicas(
        self, rows: Iterable[tuple[TopicPartition, int, State, LeaderIsrAndControllerEpoch | None]],
        to_state: State,
    ) -> None:  # fmt: skip
        """``replica(tp, replica, from_state, to_state, leader=..., leader_epoch=..., isr=...)``
        for each ``(tp, replica, from_state, leadership)`` row (leadership None: no leader
        fields), all ``ok``: the state machines' bulk path. The rows share one timestamp
        (``seq`` orders them) and the text of repeated states and ISRs is built once."""
        if self._closed:
            return
        head = f'"ts":"{self._ts()}","seq":'
        tail = f'"election":null,"event":{self._event},"result":"ok","error":null}}\n'
        middle = self._head_replica
        to_text = _state(to_state)
        states: dict[State, str] = {}
        isrs: dict[tuple[int, ...], str] = {}
        append = self._buffer.append
        quote = _quote
        pending = len(self._buffer)
        for (topic, partition), replica, from_state, info in rows:
            if pending >= _MAX_BUFFERED_LINES:  # bound memory during a huge bulk record
                self._write_buffer()
                append = self._buffer.append
                pending = 0
            pending += 1
            from_text = states.get(from_state)
            if from_text is None:
                from_text = states[from_state] = _state(from_state)
            if info is None:
                leader_fields = '"leader":null,"leader_epoch":null,"isr":null,'
            else:
                lai = info.leader_and_isr
                isr = lai.isr
                isr_text = isrs.get(isr)
                if isr_text is None:
                    isr_text = isrs[isr] = _isr(isr)
                leader_fields = (
                    f'"leader":{lai.leader:d},"leader_epoch":{lai.leader_epoch:d},'
                    f'"isr":{isr_text},'
                )
            append(
                f'{{{head}{next(_SEQ)},{middle}"topic":{quote(topic)},"partition":{partition:d},'
                f'"replica":{replica:d},"from_state":{from_text},"to_state":{to_text},'
                f"{leader_fields}{tail}"
            )

    def controller(self, to_state: str, *, error: str | None = None) -> None:
        """Record this controller's own transition (elected, ready, resigned)."""
        if self._closed:
            return
        self._buffer.append(
            f'{{"ts":"{self._ts()}","seq":{next(_SEQ)},{self._head_controller}'
            f'"topic":null,"partition":null,"replica":null,"from_state":null,'
            f'"to_state":{_check(to_state, CONTROLLER_STATES, "controller state")},'
            f'"leader":null,"leader_epoch":null,"isr":null,"election":null,'
            f'"event":{self._event},"result":"ok",'
            f'"error":{"null" if error is None else _quote(error)}}}\n'
        )

    # -- output ----------------------------------------------------------------------------

    def _write_buffer(self) -> None:
        with self._lock:
            self._write_locked()

    def _write_locked(self) -> None:
        if not self._buffer or self._closed:
            return
        # Swap first: the event thread may keep appending to the new list meanwhile.
        lines, self._buffer = self._buffer, []
        text = "".join(lines)
        if self._file is not None:
            try:
                followed = self._file.write(text)
                if followed == "deleted":
                    log.warning(
                        "state-change log file was deleted; writing to a new file at its path",
                        path=str(self._file.path),
                    )
                elif followed == "replaced":  # a rotation's new file, ahead of its SIGHUP
                    log.info("state-change log file was replaced; writing to the new one",
                             path=str(self._file.path))  # fmt: skip
            except WriteFailed as exc:
                # A full disk must not stop the controller: say so loudly; what was not
                # written is retried with the next event's lines (lost only past a bound).
                self._failed()
                log.error("state-change log write failed", error=str(exc),
                          lines_pending=exc.pending_lines, lines_lost=exc.lost_lines)  # fmt: skip
            return
        assert self._stream is not None
        try:
            self._stream.write(text)
        except (OSError, ValueError) as exc:
            self._failed()
            log.error("state-change log write failed", error=str(exc), lines_lost=len(lines))

    def write_pending(self) -> None:
        """Write the lines recorded so far to the OS, mid-event (no rotation, so an event's
        lines stay in one file): a process killed later in the event still leaves them."""
        self._write_buffer()

    def flush(self) -> None:
        """Write everything recorded so far to the OS (end of each event)."""
        with self._lock:
            self._write_locked()
            if self._closed:
                return
            if self._file is not None:
                self._maybe_rotate_locked(self._file)
                return
            assert self._stream is not None
            try:
                self._stream.flush()
            except (OSError, ValueError) as exc:
                self._failed()
                log.error("state-change log flush failed", error=str(exc))

    def _maybe_rotate_locked(self, file: LineFile) -> None:
        """Size-based rotation at an event boundary, so an event's lines are never split
        across files (``LineFile.maybe_rotate``)."""
        try:
            file.maybe_rotate()
        except OSError as exc:
            self._failed()
            log.error("state-change log rotation failed", error=str(exc), path=str(file.path))

    def reopen(self) -> None:
        """Reopen the path (after logrotate moved the file). No-op for streams.

        Safe from any thread: lines still buffered in memory are left for the event thread's
        next ``flush()`` and go to the new file; only the file is swapped. Raises OSError
        (still writing to the open file) when the path cannot be opened.
        """
        with self._lock:
            if self._file is None or self._closed:
                return
            self._file.reopen()

    def close(self) -> None:
        """Flush and close (a borrowed stream is flushed, not closed). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._write_locked()
            self._closed = True
            if self._file is not None:
                lost = self._file.close()
                if lost:
                    log.error("state-change log closed with lines it could not write",
                              path=str(self._file.path), lines_lost=lost)  # fmt: skip
                return
            assert self._stream is not None
            try:
                self._stream.flush()
            except (OSError, ValueError) as exc:
                log.error("state-change log close failed", error=str(exc))

    def __enter__(self) -> StateChangeLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class NullStateChangeLog:
    """Records nothing; for tests and tools that run controller logic without a log."""

    def set_epoch(self, epoch: int | None) -> None:
        pass

    def set_event(self, name: str | None) -> None:
        pass

    def partition(
        self, tp: TopicPartition, from_state: State, to_state: State, **_: object
    ) -> None:
        pass

    def replica(
        self, tp: TopicPartition, replica: int, from_state: State, to_state: State, **_: object
    ) -> None:
        pass

    def partitions(
        self, rows: Iterable[tuple[TopicPartition, State, LeaderAndIsr, str | None]],
        to_state: State,
    ) -> None:  # fmt: skip
        pass

    def replicas(
        self, rows: Iterable[tuple[TopicPartition, int, State, LeaderIsrAndControllerEpoch | None]],
        to_state: State,
    ) -> None:  # fmt: skip
        pass

    def controller(self, to_state: str, *, error: str | None = None) -> None:
        pass

    def write_pending(self) -> None:
        pass

    def flush(self) -> None:
        pass

    def reopen(self) -> None:
        pass

    def close(self) -> None:
        pass
