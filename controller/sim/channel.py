"""The simulated controller-to-broker channel and the controller's timers, on virtual time.

``SimChannel`` has the surface of ``ControllerChannelManager`` and its semantics (reference
§4.1-4.2, pitfall 10): one FIFO per broker the controller accepted, one request in flight per
broker, a request to an unknown broker dropped, ``remove_broker`` discarding the queue and any
answer still on its way. What a real sender thread does over time (send when the broker is
reachable, wait for the answer, run the callback) is split into two scheduler actions,
``deliver`` and ``answer``, so that everything else may happen in between.

``SimTimers`` replaces the controller's ``Scheduler`` (threads) with timers on the world's
virtual clock; firing one only enqueues an event, as the real timers do.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from controller.channel.sender import OutboundRequest, ResponseCallback
from controller.core.model import Broker, BrokerAndEpoch


@dataclass(slots=True)
class Link:
    """One broker's queue in one controller's channel."""

    broker_id: int
    queue: deque[tuple[OutboundRequest, ResponseCallback | None]] = field(default_factory=deque)
    # The request in flight and its answer: (request, callback, response); the ``answer``
    # action runs the callback.
    in_flight: tuple[OutboundRequest, ResponseCallback | None, Any] | None = None
    # Answers to lose (the connection drops after the broker applied the request): the
    # sender times out and sends the same request again, as Kafka's RequestSendThread does.
    lose_answers: int = 0


class SimChannel:
    """A controller's channel: requests wait in per-broker queues for the scheduler."""

    def __init__(self, controller_id: int) -> None:
        self.controller_id = controller_id
        self.links: dict[int, Link] = {}
        self.dropped = 0

    # -- the ControllerChannelManager surface ----------------------------------------------

    def startup(self, brokers: Iterable[BrokerAndEpoch]) -> None:
        for b in brokers:
            self.add_broker(b.broker, b.epoch)

    def add_broker(self, broker: Broker, broker_epoch: int) -> None:
        del broker_epoch  # the request carries the epoch; the channel only routes
        self.links.setdefault(broker.id, Link(broker.id))

    def update_broker(self, broker: Broker, broker_epoch: int) -> None:
        del broker, broker_epoch  # routing is by id: nothing to follow

    def remove_broker(self, broker_id: int) -> None:
        self.links.pop(broker_id, None)

    def shutdown(self) -> None:
        self.links.clear()

    def send(
        self, broker_id: int, request: OutboundRequest, callback: ResponseCallback | None = None
    ) -> None:
        link = self.links.get(broker_id)
        if link is None:
            self.dropped += 1  # not live-or-shutting-down for this controller: dropped
            return
        link.queue.append((request, callback))

    def broker_ids(self) -> set[int]:
        return set(self.links)

    # -- for the scheduler -----------------------------------------------------------------

    def deliverable(self, reachable: Callable[[int], bool]) -> list[int]:
        """Brokers whose next request can go out now (reachable, nothing in flight)."""
        return sorted(
            b
            for b, link in self.links.items()
            if link.queue and link.in_flight is None and reachable(b)
        )

    def answerable(self) -> list[int]:
        return sorted(b for b, link in self.links.items() if link.in_flight is not None)

    def is_idle(self) -> bool:
        return all(not link.queue and link.in_flight is None for link in self.links.values())


Action = Callable[[], None]


class SimTimers:
    """The controller's ``Scheduler`` on virtual time (same surface)."""

    def __init__(
        self, schedule: Callable[[float, Action], object], cancel: Callable[[object], None]
    ):
        self._schedule = schedule
        self._cancel = cancel
        self._timers: dict[str, object] = {}
        self._running = False

    def startup(self) -> None:
        self._running = True

    def shutdown(self) -> None:
        self._running = False
        for handle in self._timers.values():
            self._cancel(handle)
        self._timers.clear()

    @property
    def running(self) -> bool:
        return self._running

    def schedule_once(self, key: str, delay_s: float, action: Action) -> None:
        if not self._running:
            return
        previous = self._timers.pop(key, None)
        if previous is not None:
            self._cancel(previous)

        def fire() -> None:
            if self._timers.get(key) is handle:
                del self._timers[key]
                action()

        handle = self._schedule(delay_s, fire)
        self._timers[key] = handle

    def pending(self) -> list[str]:
        return sorted(self._timers)


__all__ = ["Link", "SimChannel", "SimTimers"]
