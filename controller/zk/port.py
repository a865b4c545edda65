"""The low-level ZooKeeper port: the only seam between the controller and a ZooKeeper client.

Two implementations exist:

- ``controller.zk.kazoo_port.KazooPort``: a real ZooKeeper through kazoo (plus ZooKeeper's
  multi-read, which kazoo does not expose).
- ``controller.zk.memory.MemoryZooKeeper``: an in-memory ZooKeeper model (sessions, ephemerals,
  one-shot watches, versions, czxid, multi) for unit tests and the deterministic simulator.

Everything Kafka-specific (paths, JSON formats, controller fencing) lives one level up, in
``controller.zk.gateway``, and runs unchanged on both.

Consistency by operation (in the spirit of Patroni's DCS interface):

- ``get`` / ``exists`` / ``get_children``: linearizable per session, may arm a one-shot watch.
- ``get_many``: a batch of independent reads (ZooKeeper multi-read); no watches; a missing node
  fails only its own entry. ``get_many_watched`` also arms one watch per path.
- ``multi``: atomic compare-and-set transaction; op failures are *reported*, not raised.
- ``multi_many``: several independent ``multi`` transactions pipelined; each is atomic.
- ``create`` / ``set`` / ``delete``: single writes; failures raise ``ZkError`` subclasses.

All methods raise ``ConnectionLossError`` / ``SessionExpiredError`` when ZooKeeper cannot be
reached within the port's retry deadline. After a ``ConnectionLossError`` a write's outcome is
unknown; and a write resent after a connection loss may report ``NodeExistsError`` /
``BadVersionError`` / ``NoNodeError`` for its own first attempt (Kafka's ``CheckedEphemeral``
handles this), and a sequential create resent may create a second node: callers recognise
their own committed writes (see ``ZkGateway.update_leader_and_isr``) or tolerate duplicates.
A request larger than the server's jute.maxbuffer makes it drop the connection, and a resent
one never succeeds: fenced writes refuse such an item unsent (``RequestTooLargeError``).

Watch callbacks and session listeners run on a client thread (kazoo's) or the in-memory
dispatcher: they must only enqueue work, never block or call back into ZooKeeper synchronously.
Watches are one-shot and re-armed by reading; ``get_children`` order is unspecified.
Like ZooKeeper's Java client (which Kafka uses), a port keeps its watches across a connection
loss within one session: on reconnect each is set again and, if its node changed meanwhile,
fires once with ``reconnect_event``'s verdict (it then stays armed, as if re-read). Only a lost
session drops watches; each then gets a NONE event.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from controller.zk.errors import ZkError

# ZnodeStat, OpResult and ReadResult are NamedTuples rather than frozen dataclasses: one is
# built per znode read or written, and a frozen dataclass costs ~2 us to build against
# ~0.3 us (100K-partition failovers read 200K znodes).


class ZnodeStat(NamedTuple):
    czxid: int
    mzxid: int
    version: int
    cversion: int
    ephemeral_owner: int
    num_children: int
    data_length: int = 0


@dataclass(frozen=True, slots=True)
class Create:
    path: str
    data: bytes | None = None
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class SetData:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class Delete:
    path: str
    version: int = -1


@dataclass(frozen=True, slots=True)
class Check:
    path: str
    version: int


Op = Create | SetData | Delete | Check


class OpResult(NamedTuple):
    """The outcome of one op of a multi.

    ``error`` is None on success. For a failed multi, the op that failed carries its real
    error and every other op carries ``RolledBackError``. ``path`` is the created path (for
    sequential creates), ``stat`` the new stat of a ``SetData``.
    """

    error: ZkError | None = None
    path: str | None = None
    stat: ZnodeStat | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class ReadResult(NamedTuple):
    """One entry of a batched read. ``error`` is e.g. ``NoNodeError`` for a missing node."""

    path: str
    data: bytes | None = None
    stat: ZnodeStat | None = None
    error: ZkError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class EventType(enum.Enum):
    CREATED = "CREATED"
    DELETED = "DELETED"
    CHANGED = "CHANGED"
    CHILD = "CHILD"
    # The session was lost and this watch with it: re-read (re-arm) in the new session.
    NONE = "NONE"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    path: str


WatchCallback = Callable[[WatchEvent], None]

DATA_WATCH = "data"  # armed by get/exists
CHILD_WATCH = "child"  # armed by get_children


def reconnect_event(kind: str, seen: int | None, now: int | None) -> EventType | None:
    """The event a watch gets when a port re-arms it after a connection loss, as ZooKeeper's
    ``SetWatches`` decides: ``seen``/``now`` are the node's mzxid (data watch) or pzxid (child
    watch) when armed and now, None for a missing node. None: nothing changed, no event."""
    if seen == now:
        return None
    if now is None:
        return EventType.DELETED
    if kind == CHILD_WATCH:
        return EventType.CHILD
    return EventType.CREATED if seen is None else EventType.CHANGED


class SessionState(enum.Enum):
    CONNECTED = "CONNECTED"
    SUSPENDED = "SUSPENDED"  # connection lost; the session may survive
    LOST = "LOST"  # session expired or closed; ephemerals are gone


SessionListener = Callable[[SessionState], None]


class ZkPort(Protocol):
    """What the controller needs from a ZooKeeper client. Paths are relative to the chroot."""

    @property
    def session_id(self) -> int | None: ...

    def start(self, timeout: float = 15.0) -> None:
        """Open a session (no-op when connected). Raises ``ConnectionLossError`` on timeout."""
        ...

    def stop(self) -> None:
        """Close the session: its ephemerals are deleted and listeners get ``LOST``."""
        ...

    def add_session_listener(self, listener: SessionListener) -> None: ...

    def remove_session_listener(self, listener: SessionListener) -> None: ...

    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, ZnodeStat]: ...

    def exists(self, path: str, watch: WatchCallback | None = None) -> ZnodeStat | None: ...

    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]: ...

    def get_many(self, paths: Sequence[str]) -> list[ReadResult]: ...

    def get_many_watched(self, paths: Sequence[str], watch: WatchCallback) -> list[ReadResult]:
        """``get_many`` that arms ``watch`` on every path as ``get`` (node read) or ``exists``
        (missing node) would; any change after a node was read is reported."""
        ...

    def multi(self, ops: Sequence[Op]) -> list[OpResult]: ...

    def multi_many(self, transactions: Sequence[Sequence[Op]]) -> list[list[OpResult]]: ...

    def create(
        self,
        path: str,
        data: bytes | None = None,
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str: ...

    def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat: ...

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None: ...

    def ensure_path(self, path: str) -> None: ...
