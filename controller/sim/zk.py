"""The simulated ZooKeeper: the in-memory model, observed, and the controllers' view of it.

``ObservedZooKeeper`` is ``MemoryZooKeeper`` with one addition: every committed transaction
is reported to a listener (``on_commit``) with the znodes it created, changed or deleted, so
the simulator sees every version of every partition state and topic znode, by whichever
session wrote it. Watch deliveries go to the dispatcher the world gives it (a FIFO the
scheduler drains one delivery per step); session state changes are marked
(``is_session_state``) so the world delivers them at once: kazoo reports a lost session to
its listeners before it opens the next one, so no call can reach the new session before the
controller has queued ``Expire``.

``ControllerPort`` is the controller's session as the controller sees it, with the two things
a real ``KazooPort`` adds over the raw model:

* a call made while the connection is down waits for it to come back (KazooPort resends on
  connection loss until its deadline; here the connection returns at once), and
* a hook before each call, where the scheduler may run other actors "concurrently" (another
  controller's whole election, a broker's AlterPartition...) while this controller is in the
  middle of an event: the only way a single-threaded simulation reaches the races a real
  controller meets between its read and its conditional write.

It also reports each fenced write that committed (``on_fenced_write``), for the
single-writer-per-epoch invariant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from controller.zk import paths
from controller.zk.memory import Dispatcher, MemoryZooKeeper, _guarded, _Txn
from controller.zk.memory_session import MemoryZkSession
from controller.zk.port import Check, EventType, Op, OpResult, WatchCallback, WatchEvent

#: (path, data or None when deleted, czxid, version) of each znode a transaction touched.
Change = tuple[str, bytes | None, int, int]
CommitListener = Callable[[list[Change]], None]


class ObservedZooKeeper(MemoryZooKeeper):
    """``MemoryZooKeeper`` reporting each committed transaction's znode changes."""

    def __init__(self, *, dispatcher: Dispatcher, on_commit: CommitListener | None = None) -> None:
        super().__init__(dispatcher=dispatcher)
        self.on_commit = on_commit

    def _post_watch(
        self, session: MemoryZkSession, callback: WatchCallback, etype: EventType, path: str
    ) -> None:
        # Tagged with its session: ZooKeeper orders notifications per session only, so the
        # world keeps one FIFO per session and may deliver another session's first.
        event = WatchEvent(etype, session._unchroot(path))
        self._outbox.append(_WatchDelivery(session, lambda: _guarded("watch", callback, event)))

    def _post(self, thunk: Callable[[], None]) -> None:
        # Session state changes only (watches use _post_watch): marked so the world can hand
        # them to their listener at once, as kazoo's connection thread does before it opens
        # a new session, instead of queueing them behind watch deliveries.
        super()._post(_SessionStateDelivery(thunk))

    def _commit(self, txn: _Txn) -> None:
        super()._commit(txn)
        if self.on_commit is None:
            return
        changes: list[Change] = []
        for kind, path, etype in txn.events:
            if kind != "data":
                continue
            if etype is EventType.DELETED:
                changes.append((path, None, 0, -1))
                continue
            node = self._nodes.get(path)
            if node is not None:  # created then deleted in the same multi: nothing to see
                changes.append((path, node.data, node.czxid, node.version))
        if changes:
            self.on_commit(changes)

    def read(self, path: str) -> bytes | None:
        """The current data of a znode (no session, no watch): for observers only."""
        with self._lock:
            node = self._nodes.get(path)
            return None if node is None else node.data

    def children(self, path: str) -> list[str]:
        with self._lock:
            node = self._nodes.get(path)
            return [] if node is None else sorted(node.children)


class _SessionStateDelivery:
    """A session state change on its way to a listener (see ``ObservedZooKeeper._post``)."""

    __slots__ = ("thunk",)

    def __init__(self, thunk: Callable[[], None]) -> None:
        self.thunk = thunk

    def __call__(self) -> None:
        self.thunk()


def is_session_state(delivery: Callable[[], None]) -> bool:
    return isinstance(delivery, _SessionStateDelivery)


class _WatchDelivery:
    """A watch notification on its way to a session's callback."""

    __slots__ = ("session", "thunk")

    def __init__(self, session: MemoryZkSession, thunk: Callable[[], None]) -> None:
        self.session = session
        self.thunk = thunk

    def __call__(self) -> None:
        self.thunk()


def delivery_session(delivery: Callable[[], None]) -> object:
    """The session a delivery is for (None when not a watch notification)."""
    return delivery.session if isinstance(delivery, _WatchDelivery) else None


#: Called before each call of a controller's session: (method name).
CallHook = Callable[[str], None]
#: A fenced write that committed: (paths written).
FencedWriteListener = Callable[[list[str]], None]
#: A write without the epoch check that committed: (method, paths written).
UnfencedWriteListener = Callable[[str, list[str]], None]


class ControllerPort:
    """A controller's ``ZkPort``: a ``MemoryZkSession`` plus reconnect-on-use, a scheduling
    hook before each call, and the report of fenced writes (see the module doc)."""

    def __init__(
        self,
        session: MemoryZkSession,
        zk: ObservedZooKeeper,
        *,
        before_call: CallHook | None = None,
        on_fenced_write: FencedWriteListener | None = None,
        on_unfenced_write: UnfencedWriteListener | None = None,
    ) -> None:
        self.inner = session
        self._zk = zk
        self.before_call = before_call
        self.on_fenced_write = on_fenced_write
        self.on_unfenced_write = on_unfenced_write

    def _enter(self, method: str) -> None:
        if self.before_call is not None:
            self.before_call(method)
        # KazooPort resends a call that lost its connection until the connection is back.
        if self.inner._sid is not None and not self.inner._connected:
            self._zk.reconnect(self.inner)

    # -- session -----------------------------------------------------------------------------

    @property
    def session_id(self) -> int | None:
        return self.inner.session_id

    def __getattr__(self, name: str) -> Any:
        # Anything not wrapped (listeners, start/stop, newer port methods) goes straight through.
        return getattr(self.inner, name)

    # -- reads -------------------------------------------------------------------------------

    def get(self, path: str, watch: Any = None) -> Any:
        self._enter("get")
        return self.inner.get(path, watch)

    def exists(self, path: str, watch: Any = None) -> Any:
        self._enter("exists")
        return self.inner.exists(path, watch)

    def get_children(self, path: str, watch: Any = None) -> list[str]:
        self._enter("get_children")
        return self.inner.get_children(path, watch)

    def get_many(self, path_list: Sequence[str]) -> Any:
        self._enter("get_many")
        return self.inner.get_many(path_list)

    def get_many_watched(self, path_list: Sequence[str], watch: Any) -> Any:
        self._enter("get_many_watched")
        return self.inner.get_many_watched(path_list, watch)

    # -- writes ------------------------------------------------------------------------------

    def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        return self.multi_many([ops])[0]

    def multi_many(self, transactions: Sequence[Sequence[Op]]) -> list[list[OpResult]]:
        self._enter("multi")
        results = self.inner.multi_many(transactions)
        fenced: list[str] = []
        for ops, res in zip(transactions, results, strict=True):
            if not all(r.ok for r in res):
                continue
            if _is_fenced(ops):
                fenced += [op.path for op in ops[1:]]
            elif self.on_unfenced_write is not None:
                self.on_unfenced_write("multi", [op.path for op in ops])
        if fenced and self.on_fenced_write is not None:
            self.on_fenced_write(fenced)
        return results

    def _unfenced(self, method: str, path: str) -> None:
        if self.on_unfenced_write is not None:
            self.on_unfenced_write(method, [path])

    def create(self, path: str, data: bytes | None = None, **kwargs: Any) -> str:
        self._enter("create")
        created = self.inner.create(path, data, **kwargs)
        self._unfenced("create", created)
        return created

    def set(self, path: str, data: bytes, version: int = -1) -> Any:
        self._enter("set")
        stat = self.inner.set(path, data, version)
        self._unfenced("set", path)
        return stat

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        self._enter("delete")
        self.inner.delete(path, version, recursive=recursive)
        self._unfenced("delete", path)

    def ensure_path(self, path: str) -> None:
        self._enter("ensure_path")
        self.inner.ensure_path(path)


def _is_fenced(ops: Sequence[Op]) -> bool:
    return bool(ops) and isinstance(ops[0], Check) and ops[0].path == paths.CONTROLLER_EPOCH


__all__ = [
    "Change",
    "ControllerPort",
    "ObservedZooKeeper",
    "delivery_session",
    "is_session_state",
]
