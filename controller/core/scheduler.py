"""One-shot timers that enqueue controller events (Kafka's ``KafkaScheduler`` use).

Timers never run controller logic themselves: when one fires, it puts an event on the
controller's queue, and the event thread does the work.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Scheduler:
    def __init__(self, name: str = "controller-scheduler") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._timers: dict[str, threading.Timer] = {}
        self._running = False

    def startup(self) -> None:
        with self._lock:
            self._running = True

    def shutdown(self) -> None:
        with self._lock:
            self._running = False
            timers = list(self._timers.values())
            self._timers.clear()
        for timer in timers:
            timer.cancel()

    @property
    def running(self) -> bool:
        return self._running

    def schedule_once(self, key: str, delay_s: float, action: Callable[[], None]) -> None:
        """Run ``action`` after ``delay_s``; a pending timer with the same key is replaced."""

        def fire() -> None:
            with self._lock:
                if self._timers.get(key) is not timer:
                    return
                del self._timers[key]
            action()

        timer = threading.Timer(delay_s, fire)
        timer.name = f"{self._name}-{key}"
        timer.daemon = True
        with self._lock:
            if not self._running:
                return
            previous = self._timers.pop(key, None)
            self._timers[key] = timer
        if previous is not None:
            previous.cancel()
        timer.start()

    def pending(self) -> list[str]:
        with self._lock:
            return sorted(self._timers)
