"""Stop and reload signals for the foreground commands (the daemon, the broker, ZooKeeper).

Two CPython facts shape this. A signal sent to the process may be delivered to any thread
(gRPC's and kazoo's included); the handler then runs in the main thread, but only once the main
thread next executes bytecode, and a delivery to another thread does not interrupt a main
thread blocked in a lock (``threading.Event.wait()`` without a timeout), which would then sleep
through SIGTERM. And a handler runs between any two bytecodes of the main thread, so one that
takes a lock (``Event.set`` does) can deadlock against the main thread holding it. Hence: the
handler only records the signal, and the main thread waits in short sleeps.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import deque
from collections.abc import Iterable
from types import FrameType
from typing import Any

#: How long a waiting main thread may sleep through a signal delivered to another thread.
POLL_S = 0.2

# Signals received before a command's inbox existed (``record_early``), for it to take over.
_early: deque[int] = deque()


def _record_early(signum: int, frame: FrameType | None) -> None:
    _early.append(signum)


def record_early(signals: Iterable[int]) -> None:
    """Record ``signals`` from now until a ``SignalInbox`` for them is made, which then
    receives them: the foreground commands make theirs only after their imports (~0.5 s),
    and a SIGTERM before that would end the process with 143, or, as PID 1 in a container
    (the kernel drops a default-disposition signal there), be lost until the orchestrator's
    SIGKILL. Call it first thing in the entry point."""
    for sig in signals:
        signal.signal(sig, _record_early)


class SignalInbox:
    """Records ``signals`` while installed; ``wait`` returns the next one."""

    def __init__(self, signals: Iterable[int]) -> None:
        self._received: deque[int] = deque()
        self._previous: dict[int, Any] = {
            sig: signal.signal(sig, self._record) for sig in signals
        }
        # Our handler is in place, so nothing more is appended for these signals: take what
        # arrived before it, in order (a signal this inbox does not handle stays there).
        for sig in list(_early):
            if sig in self._previous:
                _early.remove(sig)
                self._received.append(sig)

    def _record(self, signum: int, frame: FrameType | None) -> None:
        self._received.append(signum)  # no lock taken: see the module docstring

    def wait_for(self, signals: Iterable[int], until: threading.Event) -> int | None:
        """The first of ``signals`` received (taken from the inbox; the others stay for
        ``wait``), or None once ``until`` is set, whichever comes first. For the main thread
        while another thread does work that can block for ever (a start whose ZooKeeper
        vanished: kazoo then retries for ever)."""
        wanted = frozenset(signals)
        while True:
            # list() copies in one step: the handler may append between our bytecodes.
            hit = next((s for s in list(self._received) if s in wanted), None)
            if hit is not None:
                self._received.remove(hit)
                return hit
            if until.wait(POLL_S):
                return None

    def wait(self, timeout: float | None = None) -> int | None:
        """The next signal received, waiting up to ``timeout`` seconds (None: for ever);
        None when the time ran out first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._received:
            if deadline is None:
                time.sleep(POLL_S)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(POLL_S, left))
        return self._received.popleft()

    def restore(self, *, ignore: bool = False) -> None:
        """Put back the handlers that were installed before; ``ignore``: ignore the signals
        instead (a process about to exit, which must not die of one on its way out)."""
        for sig, handler in self._previous.items():
            signal.signal(sig, signal.SIG_IGN if ignore else handler)
