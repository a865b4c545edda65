"""An in-memory ZooKeeper: the model behind unit tests and the deterministic simulator.

``MemoryZooKeeper`` is the "server": one znode tree, a global zxid counter, sessions and
their one-shot watches. ``open_session()`` returns a ``MemoryZkSession``
(``controller.zk.memory_session``), the "client", which implements ``ZkPort`` with the same
observable behaviour as ``KazooPort`` on a real server:

- Stats: ``czxid``/``mzxid`` come from the global zxid (one zxid per write, one per ``multi``),
  ``version`` counts data changes and ``cversion`` child creations plus deletions. As in
  ZooKeeper (which stores only the creations and reports ``2 * creations - num_children``), a
  sequential node is named ``<path><parent's creations so far as 10 digits>``: deletions do
  not advance the sequence.
- Errors are checked in ZooKeeper's order (e.g. ``NodeExists`` before
  ``NoChildrenForEphemerals``, ``BadVersion`` before ``NotEmpty``). A ``multi`` is applied op
  by op and undone on the first failure; its watches fire only if it commits.
- Watches are one-shot and per session: ``get``/``exists`` arm a data watch (``exists`` also
  on a missing node) firing on CREATED/CHANGED/DELETED; ``get_children`` arms a child watch
  firing on CHILD and on DELETED of the node itself. The same callback armed twice on a path
  fires once. A read of a missing node with ``get``/``get_children`` arms nothing.
- Malformed paths raise ``ValueError`` (stricter than the server, which answers NoNode to a
  read and BadArguments to a write).
- Connection faults mirror ``KazooPort``: ``disconnect`` reports SUSPENDED and holds the
  session's watches back; ``reconnect`` reports CONNECTED and sets them again, firing those
  whose node changed meanwhile (``port.reconnect_event``, as ZooKeeper's Java client does).
  ``expire`` reports SUSPENDED, gives every watch of the session a NONE event, deletes its
  ephemerals, reports LOST and, like kazoo, reconnects with a new session id (CONNECTED).
  While disconnected, operations raise ``ConnectionLossError`` at once (a real port resends
  until its deadline, or, the controller's, for as long as the session lives); without a
  session they raise ``SessionExpiredError``.

Delivery: watch callbacks and listener calls are queued in the order ZooKeeper would deliver
them and handed, one by one, to the *dispatcher* (``Callable[[Callable[[], None]], None]``)
after the model's lock is released. The default dispatcher runs each call at once, so a
single-threaded test sees a watch fire before the write that caused it returns (ZooKeeper's own
guarantee). A simulator passes a dispatcher that schedules the thunks deterministically. If
several threads write concurrently, one of them delivers everyone's events, still in order; a
callback may call back into the model (re-arming a watch); its own events are delivered after it
returns.

Thread safety: one lock guards the whole model; callbacks never run under it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import structlog

from controller.zk.errors import (
    BadVersionError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)
from controller.zk.port import (
    CHILD_WATCH,
    DATA_WATCH,
    Check,
    Create,
    Delete,
    EventType,
    Op,
    OpResult,
    SessionState,
    SetData,
    WatchCallback,
    WatchEvent,
    ZnodeStat,
    reconnect_event,
)

if TYPE_CHECKING:
    from controller.zk.memory_session import MemoryZkSession


def __getattr__(name: str) -> object:
    # ``from controller.zk.memory import MemoryZkSession`` works too: resolved lazily, since
    # the client module imports this one.
    if name == "MemoryZkSession":
        from controller.zk.memory_session import MemoryZkSession

        return MemoryZkSession
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


Dispatcher = Callable[[Callable[[], None]], None]

log = structlog.get_logger("zkctl.zk.memory")

_FIRST_SESSION_ID = 0x0100_0000_0000_0000  # shaped like a real id; any positive int64 works
RECURSIVE_DELETE_BATCH = 1000  # deletes per transaction, as KazooPort batches them


def run_now(thunk: Callable[[], None]) -> None:
    """The default dispatcher: deliver at once, in the thread that flushes the queue."""
    thunk()


def _validate(path: str) -> None:
    # The checks of ZooKeeper's PathUtils.validatePath that a programming error can hit.
    if not path.startswith("/"):
        raise ValueError(f"path must start with '/': {path!r}")
    if path == "/":
        return
    if path.endswith("/"):
        raise ValueError(f"path must not end with '/': {path!r}")
    for part in path[1:].split("/"):
        if part in ("", ".", "..") or "\0" in part:
            raise ValueError(f"invalid path: {path!r}")


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _join(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


@dataclass(slots=True)
class _Znode:
    data: bytes
    czxid: int
    mzxid: int
    ephemeral_owner: int = 0
    version: int = 0
    creations: int = 0  # children ever created: ZooKeeper's stored cversion, the sequence
    pzxid: int = -1  # zxid of the last child creation or deletion (czxid until then)
    children: set[str] = field(default_factory=set)

    def stat(self) -> ZnodeStat:
        return ZnodeStat(
            czxid=self.czxid,
            mzxid=self.mzxid,
            version=self.version,
            cversion=2 * self.creations - len(self.children),
            ephemeral_owner=self.ephemeral_owner,
            num_children=len(self.children),
            data_length=len(self.data),
        )


class _Txn:
    """One write transaction: an undo log and the watch events to fire if it commits."""

    def __init__(self, zxid: int) -> None:
        self.zxid = zxid
        self.undo: list[Callable[[], None]] = []
        self.events: list[tuple[str, str, EventType]] = []  # (data|child, abs path, type)

    def rollback(self) -> None:
        for step in reversed(self.undo):
            step()


_Watch = tuple["MemoryZkSession", WatchCallback]


class MemoryZooKeeper:
    """The in-memory ZooKeeper server. See the module docstring for semantics."""

    def __init__(self, *, dispatcher: Dispatcher = run_now) -> None:
        self._lock = threading.Lock()
        self._dispatcher = dispatcher
        self._zxid = 0
        self._nodes: dict[str, _Znode] = {"/": _Znode(b"", 0, 0, pzxid=0)}
        self._ephemerals: dict[int, set[str]] = {}
        self._data_watches: dict[str, list[_Watch]] = {}
        self._child_watches: dict[str, list[_Watch]] = {}
        self._next_session_id = _FIRST_SESSION_ID
        self._outbox: deque[Callable[[], None]] = deque()
        self._draining = False

    # ----------------------------------------------------------------- public API

    def open_session(self, *, chroot: str = "", start: bool = True) -> MemoryZkSession:
        """A new client. ``chroot`` is prepended to its paths (it need not exist yet)."""
        from controller.zk.memory_session import MemoryZkSession  # the client depends on us

        session = MemoryZkSession(self, chroot)
        if start:
            session.start()
        return session

    def expire(self, session: MemoryZkSession, *, reconnect: bool = True) -> None:
        """Expire the session server-side, as a timeout or the duplicate-client_id trick does.

        The client sees SUSPENDED, a NONE event at each watch, then LOST once its ephemerals
        are gone; with ``reconnect`` it then gets a new session id and CONNECTED, like kazoo.
        """
        with self._lock:
            if session._sid is not None:
                if session._connected:
                    self._drop_connection(session)
                for _, path, callback, _ in session._parked:  # the watches die with the session
                    self._post_watch(session, callback, EventType.NONE, path)
                self._close_session(session)
                session._set_state(SessionState.LOST)
                if reconnect:
                    self._open(session)
        self._flush()

    def disconnect(self, session: MemoryZkSession) -> None:
        """Drop the session's connection (SUSPENDED); the session, its ephemerals and its
        watches survive (the watches fire only after ``reconnect``)."""
        with self._lock:
            if session._sid is not None and session._connected:
                self._drop_connection(session)
        self._flush()

    def reconnect(self, session: MemoryZkSession) -> None:
        """Re-establish a dropped connection to the same session (CONNECTED)."""
        with self._lock:
            self._resume(session)
        self._flush()

    @property
    def zxid(self) -> int:
        """The zxid of the last committed write."""
        with self._lock:
            return self._zxid

    def snapshot(self) -> dict[str, tuple[bytes, ZnodeStat]]:
        """Every znode (absolute paths) with its data and stat, for assertions."""
        with self._lock:
            return {path: (node.data, node.stat()) for path, node in self._nodes.items()}

    # ------------------------------------------------------- sessions (lock held)

    def _open(self, session: MemoryZkSession) -> None:
        session._sid = self._next_session_id
        self._next_session_id += 1
        session._connected = True
        self._ephemerals[session._sid] = set()
        session._set_state(SessionState.CONNECTED)

    def _drop_connection(self, session: MemoryZkSession) -> None:
        """SUSPENDED: park the session's watches with the zxid their node is at."""
        session._connected = False
        session._set_state(SessionState.SUSPENDED)
        for kind, watches in ((DATA_WATCH, self._data_watches), (CHILD_WATCH, self._child_watches)):
            for path in list(watches):
                mine = [callback for owner, callback in watches[path] if owner is session]
                if not mine:
                    continue
                seen = self._watch_zxid(kind, path)
                session._parked += [(kind, path, callback, seen) for callback in mine]
                kept = [w for w in watches[path] if w[0] is not session]
                if kept:
                    watches[path] = kept
                else:
                    del watches[path]

    def _resume(self, session: MemoryZkSession) -> None:
        """CONNECTED again: set the parked watches again, firing those whose node changed."""
        if session._sid is None or session._connected:
            return
        session._connected = True
        session._set_state(SessionState.CONNECTED)
        parked, session._parked = session._parked, []
        for kind, path, callback, seen in parked:
            now = self._watch_zxid(kind, path)
            if kind == DATA_WATCH or now is not None:  # a child watch needs its node
                registry = self._data_watches if kind == DATA_WATCH else self._child_watches
                self._arm(registry, path, (session, callback))
            event = reconnect_event(kind, seen, now)
            if event is not None:
                self._post_watch(session, callback, event, path)

    def _watch_zxid(self, kind: str, path: str) -> int | None:
        node = self._nodes.get(path)
        if node is None:
            return None
        return node.mzxid if kind == DATA_WATCH else node.pzxid

    def _close_session(self, session: MemoryZkSession) -> None:
        """Forget the session's watches and delete its ephemerals in one transaction."""
        sid = session._sid
        assert sid is not None
        for watches in (self._data_watches, self._child_watches):
            for path in list(watches):
                watches[path] = [w for w in watches[path] if w[0] is not session]
                if not watches[path]:
                    del watches[path]
        owned = sorted(self._ephemerals.pop(sid, set()))
        if owned:
            txn = _Txn(self._zxid + 1)
            for path in owned:
                self._apply_delete(txn, path, -1)
            self._commit(txn)
        session._sid = None
        session._connected = False
        session._parked = []

    # ------------------------------------------------------ operations (lock held)

    def _apply(self, txn: _Txn, op: SetData | Delete | Check) -> OpResult:
        if isinstance(op, SetData):
            return OpResult(stat=self._apply_set(txn, op.path, op.data, op.version))
        if isinstance(op, Delete):
            self._apply_delete(txn, op.path, op.version)
            return OpResult()
        if isinstance(op, Check):
            self._node(op.path, op.version)
            return OpResult()
        raise TypeError(f"not a ZooKeeper op: {op!r}")  # pragma: no cover

    def _node(self, path: str, version: int = -1) -> _Znode:
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path=path)
        if version != -1 and version != node.version:
            raise BadVersionError(path=path)
        return node

    def _apply_create(self, txn: _Txn, op: Create, *, owner: int = 0) -> str:
        path = op.path
        # kazoo allows "<parent>/" + sequential: the name is then just the counter.
        _validate(path + "0" if op.sequential and path.endswith("/") else path)
        parent_path = _parent(path)
        parent = self._node(parent_path)
        if op.sequential:
            path = f"{path}{parent.creations:010d}"
        if path in self._nodes:
            raise NodeExistsError(path=path)
        if parent.ephemeral_owner:
            raise NoChildrenForEphemeralsError(path=path)
        name = path.rsplit("/", 1)[1]
        self._nodes[path] = _Znode(
            op.data or b"", txn.zxid, txn.zxid, ephemeral_owner=owner, pzxid=txn.zxid
        )
        parent.children.add(name)
        parent.creations += 1
        old_pzxid, parent.pzxid = parent.pzxid, txn.zxid
        if owner:
            self._ephemerals[owner].add(path)

        def undo() -> None:
            del self._nodes[path]
            parent.children.discard(name)
            parent.creations -= 1
            parent.pzxid = old_pzxid
            if owner:
                self._ephemerals[owner].discard(path)

        txn.undo.append(undo)
        txn.events += [("data", path, EventType.CREATED), ("child", parent_path, EventType.CHILD)]
        return path

    def _apply_set(self, txn: _Txn, path: str, data: bytes, version: int) -> ZnodeStat:
        node = self._node(path, version)
        old = (node.data, node.mzxid, node.version)
        node.data, node.mzxid, node.version = data, txn.zxid, node.version + 1

        def undo() -> None:
            node.data, node.mzxid, node.version = old

        txn.undo.append(undo)
        txn.events.append(("data", path, EventType.CHANGED))
        return node.stat()

    def _apply_delete(self, txn: _Txn, path: str, version: int) -> None:
        if path == "/":
            raise ValueError("cannot delete the root")
        node = self._node(path, version)
        if node.children:
            raise NotEmptyError(path=path)
        parent_path = _parent(path)
        parent = self._nodes[parent_path]
        name = path.rsplit("/", 1)[1]
        del self._nodes[path]
        parent.children.discard(name)
        old_pzxid, parent.pzxid = parent.pzxid, txn.zxid
        owned = self._ephemerals.get(node.ephemeral_owner)
        if owned is not None:
            owned.discard(path)

        def undo() -> None:
            self._nodes[path] = node
            parent.children.add(name)
            parent.pzxid = old_pzxid
            if owned is not None:
                owned.add(path)

        txn.undo.append(undo)
        txn.events += [
            ("data", path, EventType.DELETED),
            ("child", path, EventType.DELETED),
            ("child", parent_path, EventType.CHILD),
        ]

    def _commit(self, txn: _Txn) -> None:
        self._zxid = txn.zxid
        for kind, path, etype in txn.events:
            registry = self._data_watches if kind == "data" else self._child_watches
            for session, callback in registry.pop(path, ()):
                self._post_watch(session, callback, etype, path)

    def _arm(self, registry: dict[str, list[_Watch]], path: str, watch: _Watch) -> None:
        watches = registry.setdefault(path, [])
        # One-shot watches are a set per path: the same callback armed twice fires once.
        if not any(s is watch[0] and cb == watch[1] for s, cb in watches):
            watches.append(watch)

    # ----------------------------------------------------------------- delivery

    def _post_watch(
        self, session: MemoryZkSession, callback: WatchCallback, etype: EventType, path: str
    ) -> None:
        event = WatchEvent(etype, session._unchroot(path))
        self._outbox.append(lambda: _guarded("watch", callback, event))

    def _post(self, thunk: Callable[[], None]) -> None:
        self._outbox.append(thunk)

    def _flush(self) -> None:
        """Hand queued deliveries to the dispatcher, in order, outside the lock."""
        with self._lock:
            if self._draining:
                return  # the draining thread (maybe our caller) will deliver ours too
            self._draining = True
        try:
            while True:
                with self._lock:
                    if not self._outbox:
                        self._draining = False
                        return
                    thunk = self._outbox.popleft()
                self._dispatcher(thunk)
        except BaseException:
            with self._lock:
                self._draining = False
            raise


def _guarded(kind: str, callback: Callable[..., object], arg: object) -> None:
    # Like kazoo's callback threads: a failing callback is logged, never fatal to the model.
    try:
        callback(arg)
    except Exception:
        log.exception("zk callback failed", kind=kind, callback=repr(callback))


_OpT = TypeVar("_OpT", bound=Op)


def _rebase(op: _OpT, path: str) -> _OpT:
    """The same op on an absolute path."""
    return dataclasses.replace(op, path=path)


def _depth_first(zk: MemoryZooKeeper, root: str) -> list[str]:
    """``root`` and its descendants, children before parents."""
    order: list[str] = []
    stack = [root]
    while stack:
        path = stack.pop()
        order.append(path)
        stack.extend(_join(path, name) for name in sorted(zk._nodes[path].children))
    return order[::-1]
