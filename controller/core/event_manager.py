"""The controller event manager (Kafka's ``ControllerEventManager``).

One thread, ``controller-event-thread``, takes events from a FIFO and hands them to the
processor one at a time, so handlers never run concurrently and always see a consistent
``ControllerContext``. ZooKeeper watch callbacks, session listeners, timers, RPC handlers and
broker-response callbacks only *enqueue*.

``clear_and_put`` drops every queued event (calling ``preempt`` on each, so callers waiting on
a callback get NOT_CONTROLLER) and queues one event; it is used for session expiry and shutdown.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

import structlog

from controller.core.controller_state import ControllerState
from controller.core.events import ControllerEvent, ShutdownEventThread

log = structlog.get_logger("controller.event_manager")


class EventProcessor(Protocol):
    def process(self, event: ControllerEvent) -> None: ...

    def preempt(self, event: ControllerEvent) -> None: ...


class QueuedEvent:
    """An event in the queue: processed or preempted exactly once (the ``spent`` flag)."""

    __slots__ = ("_lock", "_spent", "enqueue_time", "event", "processing_started")

    def __init__(self, event: ControllerEvent, enqueue_time: float) -> None:
        self.event = event
        self.enqueue_time = enqueue_time
        self.processing_started = threading.Event()
        self._spent = False
        self._lock = threading.Lock()

    def _claim(self) -> bool:
        with self._lock:
            if self._spent:
                return False
            self._spent = True
            return True

    def process(self, processor: EventProcessor) -> bool:
        if not self._claim():
            return False
        self.processing_started.set()
        processor.process(self.event)
        return True

    def preempt(self, processor: EventProcessor) -> None:
        if self._claim():
            processor.preempt(self.event)

    def await_processing(self, timeout: float | None = None) -> bool:
        return self.processing_started.wait(timeout)


QueueTimeObserver = Callable[[float], None]
ProcessingObserver = Callable[[ControllerState, float, ControllerEvent], None]


class ControllerEventManager:
    """A FIFO of controller events drained by one daemon thread."""

    def __init__(
        self,
        processor: EventProcessor,
        *,
        on_queue_time: QueueTimeObserver | None = None,
        on_processed: ProcessingObserver | None = None,
        clock: Callable[[], float] = time.monotonic,
        thread_name: str = "controller-event-thread",
    ) -> None:
        self._processor = processor
        self._on_queue_time = on_queue_time
        self._on_processed = on_processed
        self._clock = clock
        self._queue: deque[QueuedEvent] = deque()
        # One condition guards the queue; Kafka's putLock is the same lock here, which keeps
        # clear_and_put atomic with respect to put.
        self._cond = threading.Condition()
        self._state = ControllerState.Idle
        self._running = False
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)

    # -- producer side (any thread) ------------------------------------------------------

    def put(self, event: ControllerEvent) -> QueuedEvent:
        """Queue ``event``; once closed, preempt it at once (nothing would ever process it,
        and a caller waiting on its reply would wait out its deadline)."""
        queued = QueuedEvent(event, self._clock())
        with self._cond:
            if not self._closed:
                self._queue.append(queued)
                self._cond.notify()
                return queued
        self._preempt(queued)
        return queued

    def clear_and_put(self, event: ControllerEvent) -> QueuedEvent:
        """Preempt everything queued (in FIFO order, on the caller's thread), then queue."""
        with self._cond:
            if not self._closed:  # else the shutdown marker stays and ``put`` preempts
                self._preempt_all()
            return self.put(event)

    def _preempt_all(self) -> None:
        drained = list(self._queue)
        self._queue.clear()
        for queued in drained:
            self._preempt(queued)

    def _preempt(self, queued: QueuedEvent) -> None:
        try:
            queued.preempt(self._processor)
        except Exception:
            log.exception("preempting event failed", controller_event=queued.event.name)

    @property
    def state(self) -> ControllerState:
        return self._state

    def queue_size(self) -> int:
        return len(self._queue)

    def pending(self) -> list[ControllerEvent]:
        """Queued, not yet processed events, oldest first (diagnostics and tests)."""
        with self._cond:
            return [q.event for q in self._queue]

    def poll(self) -> QueuedEvent | None:
        """Take the next queued event without waiting, for driving the processor on the
        caller's thread (deterministic tests and simulation) instead of the event thread."""
        with self._cond:
            return self._queue.popleft() if self._queue else None

    def is_event_thread(self) -> bool:
        return threading.current_thread() is self._thread

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the event thread; nothing once closed (a stop that raced the start: the
        thread would skip the shutdown marker and wait for ever, every new event preempted)."""
        with self._cond:
            if self._closed:
                return
            self._running = True
        self._thread.start()

    def close(self, timeout: float | None = 30.0) -> bool:
        """Preempt queued events, stop the thread after its current event, and wait for it.

        From here on every event put is preempted, so nothing can displace the shutdown
        marker or wait in a queue nobody drains. Returns False if the thread is still busy
        after ``timeout`` (it stops once its current event ends).
        """
        with self._cond:  # under the lock: a start() racing this close sees one or the other
            self._running = False
            if not self._closed:
                self._preempt_all()
                self._queue.append(QueuedEvent(ShutdownEventThread(), self._clock()))
                self._closed = True
                self._cond.notify()
        if self.is_event_thread():
            return False
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- the event thread ----------------------------------------------------------------

    def _take(self) -> QueuedEvent:
        with self._cond:
            while not self._queue:
                self._cond.wait()
            return self._queue.popleft()

    def _run(self) -> None:
        while True:
            queued = self._take()
            event = queued.event
            if isinstance(event, ShutdownEventThread):
                if not self._running:
                    return
                continue
            self._state = event.state
            started = self._clock()
            if self._on_queue_time is not None:
                self._on_queue_time(started - queued.enqueue_time)
            try:
                queued.process(self._processor)
            except Exception:
                # The processor logs and handles its own errors; this is the last line of
                # defence so that one bad event never stops the controller.
                log.exception("uncaught error processing event", controller_event=event.name)
            finally:
                if self._on_processed is not None:
                    self._on_processed(event.state, self._clock() - started, event)
                self._state = ControllerState.Idle
