"""KazooPort's watches: kazoo callbacks as ``WatchEvent``s, kept across connection loss.

ZooKeeper's Java client re-sends its watches when it reconnects to the same session
(``SetWatches``) and the server fires those whose node changed meanwhile; Kafka's controller
relies on that. kazoo instead drops every watch when the connection drops (calling it with a NONE
event), so a controller on kazoo would silently stop hearing about brokers after a network blip.
``WatchKeeper`` closes that gap: it remembers each armed watch with the node's zxid as read
(mzxid for data watches, pzxid for child watches, None for a missing node), and after a
reconnect the port re-arms every one of them by reading again and fires
``port.reconnect_event``'s verdict if the node changed.

The bookkeeping is best effort at the edges, in the safe direction: a watch that fires while the
same callback re-reads its path may be re-armed once more than needed (a spurious event later
at worst), never lost. Callbacks run on kazoo's single watch thread, synthetic events included.
"""

from __future__ import annotations

import threading
from typing import Any

import structlog
from kazoo.protocol.states import Callback, WatchedEvent
from kazoo.protocol.states import EventType as KazooEventType

from controller.zk.port import EventType, WatchCallback, WatchEvent

log = structlog.get_logger("zkctl.zk.kazoo")

_EVENTS = {
    KazooEventType.CREATED: EventType.CREATED,
    KazooEventType.DELETED: EventType.DELETED,
    KazooEventType.CHANGED: EventType.CHANGED,
    KazooEventType.CHILD: EventType.CHILD,
}

Key = tuple[str, str, WatchCallback]  # (DATA_WATCH | CHILD_WATCH, path, callback)


def deliver(callback: WatchCallback, event: WatchEvent) -> None:
    try:
        callback(event)
    except Exception:
        log.exception("watch callback failed", path=event.path, event=event.type.value)


class KazooWatch:
    """What kazoo is given as a watcher.

    Equal (and hashing) by the wrapped callback, so kazoo's per-path watcher *set* keeps one
    entry when the same callback arms a path twice: it fires once, as in ZooKeeper.
    """

    __slots__ = ("callback", "keeper", "kind", "path")

    def __init__(self, keeper: WatchKeeper, kind: str, path: str, callback: WatchCallback) -> None:
        self.keeper = keeper
        self.kind = kind
        self.path = path
        self.callback = callback

    def __call__(self, event: WatchedEvent) -> None:
        etype = _EVENTS.get(event.type)
        if etype is None:
            return  # NONE: the connection dropped; the keeper re-arms us or reports the loss
        self.keeper.fired((self.kind, self.path, self.callback))
        deliver(self.callback, WatchEvent(etype, event.path or self.path))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KazooWatch) and other.callback == self.callback

    def __hash__(self) -> int:
        return hash(self.callback)


class WatchKeeper:
    """The watches one session has armed, with the zxid each was armed at.

    Stored as ``(kind, callback) -> {path: zxid}``: the controller arms one watch per topic
    with the same callback, and a key tuple per watch cost ~6 MB at 100K topics.
    """

    def __init__(self, handler: Any) -> None:
        self._handler = handler  # kazoo's handler: synthetic events go to its watch thread
        self._lock = threading.Lock()
        self._armed: dict[tuple[str, WatchCallback], dict[str, int | None]] = {}
        self._epoch = 0  # +1 whenever the connection drops: watches armed before are gone

    @property
    def epoch(self) -> int:
        return self._epoch

    def watcher(self, kind: str, path: str, callback: WatchCallback) -> KazooWatch:
        return KazooWatch(self, kind, path, callback)

    def record(self, key: Key, seen: int | None, epoch: int) -> bool:
        """Note a watch armed by a read started at ``epoch``. False if the connection dropped
        since: the watch may be gone already and the caller must read again."""
        kind, path, callback = key
        with self._lock:
            if epoch != self._epoch:
                return False
            paths = self._armed.get((kind, callback))
            if paths is None:
                paths = self._armed[(kind, callback)] = {}
            paths[path] = seen
            return True

    def fired(self, key: Key) -> None:
        kind, path, callback = key
        with self._lock:
            paths = self._armed.get((kind, callback))
            if paths is not None:
                paths.pop(path, None)
                if not paths:
                    del self._armed[(kind, callback)]

    def connection_lost(self) -> None:
        with self._lock:
            self._epoch += 1

    def _entries(self) -> list[tuple[Key, int | None]]:
        # Lock held.
        return [
            ((kind, path, callback), seen)
            for (kind, callback), paths in self._armed.items()
            for path, seen in paths.items()
        ]

    def snapshot(self) -> tuple[int, list[tuple[Key, int | None]]]:
        """The watches to re-arm after a reconnect, and the epoch to record them at."""
        with self._lock:
            return self._epoch, self._entries()

    def discard(self) -> None:
        """Forget every watch silently (the port closes its session itself)."""
        with self._lock:
            self._epoch += 1
            self._armed.clear()

    def session_lost(self) -> None:
        """The session is gone and its watches with it: each gets a NONE event."""
        with self._lock:
            self._epoch += 1
            keys = [key for key, _ in self._entries()]
            self._armed.clear()
        for _, path, callback in keys:
            self.dispatch(callback, WatchEvent(EventType.NONE, path))

    def dispatch(self, callback: WatchCallback, event: WatchEvent) -> None:
        """Deliver on kazoo's watch thread, in order with the real events."""
        self._handler.dispatch_callback(Callback("watch", deliver, (callback, event)))
