"""Support for the gateway conformance suite (test_gateway.py): backends, port decorators and
Kafka's test data.

``Backend`` opens ZooKeeper sessions on either a real server (``KazooPort`` in a private
chroot) or a ``MemoryZooKeeper``. ``InstrumentedPort`` wraps any ``ZkPort``: it counts the
multis the gateway sends (to check batching) and runs one-shot hooks around a call (to
inject a concurrent write or a connection loss at an exact point). It wraps the port, never
kazoo: everything below it is the real implementation.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Sequence
from typing import Any

from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from controller.zk import codecs, paths
from controller.zk.gateway import ZkGateway
from controller.zk.kazoo_port import KazooPort
from controller.zk.memory import MemoryZooKeeper
from controller.zk.port import (
    Op,
    OpResult,
    ReadResult,
    SessionListener,
    WatchCallback,
    ZkPort,
    ZnodeStat,
)
from controller.zk.watches import ZNodeChangeHandler

WAIT = 10.0  # seconds to wait for a watch event from a real server
CONTROLLER_EPOCH = 1
TOPIC_ID = "pL9sH1X2QfGkT4a1b2c3dA"
TP10, TP11, TP20 = (
    TopicPartition("topic1", 0),
    TopicPartition("topic1", 1),
    TopicPartition("topic2", 0),
)


class Backend:
    name: str

    def open(self) -> ZkPort:
        """A new, started session (chroot-relative paths)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class KazooBackend(Backend):
    name = "kazoo"

    def __init__(self, connect: str) -> None:
        self.connect = connect
        self._ports: list[KazooPort] = []

    def open(self) -> ZkPort:
        port = KazooPort(self.connect, session_timeout=10.0)
        port.start(timeout=15)
        self._ports.append(port)
        return port

    def close(self) -> None:
        for port in self._ports:
            if port.session_id is not None:
                port.stop()


class MemoryBackend(Backend):
    name = "memory"
    chroot = "/gateway"

    def __init__(self) -> None:
        self.zk = MemoryZooKeeper()
        self.zk.open_session().ensure_path(self.chroot)

    def open(self) -> ZkPort:
        return self.zk.open_session(chroot=self.chroot)

    def close(self) -> None:
        pass


class Events:
    """A queue that handler callbacks put labels into."""

    def __init__(self) -> None:
        self._queue: queue.Queue[str] = queue.Queue()

    def callback(self, label: str) -> Callable[[], None]:
        return lambda: self._queue.put(label)

    def next(self, timeout: float = WAIT) -> str:
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no watch event within {timeout}s") from None

    def wait_for(self, label: str, timeout: float = WAIT) -> list[str]:
        """Every label delivered up to and including ``label``."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while not seen or seen[-1] != label:
            seen.append(self.next(max(deadline - time.monotonic(), 0.01)))
        return seen

    def drain(self) -> list[str]:
        out = []
        while True:
            try:
                out.append(self._queue.get_nowait())
            except queue.Empty:
                return out


Hook = Callable[[], None]


class InstrumentedPort:
    """A ``ZkPort`` that delegates to ``inner``, counting multis and running one-shot hooks.

    ``transactions`` lists every multi sent (each a list of ops, ``multi`` and ``multi_many``
    alike); ``multi_many_calls`` counts pipelined round trips. ``before(name, hook)`` and
    ``after(name, hook)`` run ``hook`` once around the next call of method ``name``; a hook
    that raises makes the call raise (the inner call is then not made, or its result lost).
    ``replay_next_multi`` sends the next ``multi`` twice and returns the second reply: a
    multi that committed but whose reply was lost, resent by the client.
    """

    def __init__(self, inner: ZkPort) -> None:
        self.inner = inner
        self.transactions: list[list[Op]] = []
        self.multi_many_calls = 0
        self.get_many_calls = 0
        self.replay_next_multi = False
        self._before: dict[str, list[Hook]] = {}
        self._after: dict[str, list[Hook]] = {}

    def before(self, name: str, hook: Hook) -> None:
        self._before.setdefault(name, []).append(hook)

    def after(self, name: str, hook: Hook) -> None:
        self._after.setdefault(name, []).append(hook)

    def _run(self, hooks: dict[str, list[Hook]], name: str) -> None:
        pending = hooks.pop(name, [])
        for hook in pending:
            hook()

    def _call(self, name: str, call: Callable[[], Any]) -> Any:
        self._run(self._before, name)
        result = call()
        self._run(self._after, name)
        return result

    # -- ZkPort --------------------------------------------------------------------------

    @property
    def session_id(self) -> int | None:
        return self.inner.session_id

    def start(self, timeout: float = 15.0) -> None:
        self.inner.start(timeout)

    def stop(self) -> None:
        self.inner.stop()

    def add_session_listener(self, listener: SessionListener) -> None:
        self.inner.add_session_listener(listener)

    def remove_session_listener(self, listener: SessionListener) -> None:
        self.inner.remove_session_listener(listener)

    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, ZnodeStat]:
        result: tuple[bytes, ZnodeStat] = self._call("get", lambda: self.inner.get(path, watch))
        return result

    def exists(self, path: str, watch: WatchCallback | None = None) -> ZnodeStat | None:
        result: ZnodeStat | None = self._call("exists", lambda: self.inner.exists(path, watch))
        return result

    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        result: list[str] = self._call("get_children", lambda: self.inner.get_children(path, watch))
        return result

    def get_many(self, paths: Sequence[str]) -> list[ReadResult]:
        self.get_many_calls += 1
        result: list[ReadResult] = self._call("get_many", lambda: self.inner.get_many(paths))
        return result

    def get_many_watched(self, paths: Sequence[str], watch: WatchCallback) -> list[ReadResult]:
        self.get_many_calls += 1
        result: list[ReadResult] = self._call(
            "get_many_watched", lambda: self.inner.get_many_watched(paths, watch)
        )
        return result

    def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        self.transactions.append(list(ops))
        if self.replay_next_multi:
            self.replay_next_multi = False
            self.inner.multi(ops)  # committed; its reply is "lost"
        result: list[OpResult] = self._call("multi", lambda: self.inner.multi(ops))
        return result

    def multi_many(self, transactions: Sequence[Sequence[Op]]) -> list[list[OpResult]]:
        self.multi_many_calls += 1
        self.transactions.extend(list(ops) for ops in transactions)
        result: list[list[OpResult]] = self._call(
            "multi_many", lambda: self.inner.multi_many(transactions)
        )
        return result

    def create(
        self,
        path: str,
        data: bytes | None = None,
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        result: str = self._call(
            "create",
            lambda: self.inner.create(
                path, data, ephemeral=ephemeral, sequential=sequential, makepath=makepath
            ),
        )
        return result

    def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        result: ZnodeStat = self._call("set", lambda: self.inner.set(path, data, version))
        return result

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        self._call("delete", lambda: self.inner.delete(path, version, recursive=recursive))

    def ensure_path(self, path: str) -> None:
        self._call("ensure_path", lambda: self.inner.ensure_path(path))


# --- Kafka's test data and helpers ---------------------------------------------------------


def lai(leader_epoch: int, partition_epoch: int, leader: int = 1) -> LeaderAndIsr:
    return LeaderAndIsr(leader, leader_epoch, (2, 3), partition_epoch=partition_epoch)


def state(leader_epoch: int, partition_epoch: int = 0) -> LeaderIsrAndControllerEpoch:
    return LeaderIsrAndControllerEpoch(lai(leader_epoch, partition_epoch), CONTROLLER_EPOCH)


def create_topic(port: ZkPort, topic: str, partitions: int = 1) -> None:
    """What an admin tool writes: the topic znode (no partition states)."""
    assignment = TopicAssignment(
        topic, None, {p: ReplicaAssignment.of([1, 2, 3]) for p in range(partitions)}
    )
    port.create(paths.topic_path(topic), codecs.encode_topic_assignment(assignment), makepath=True)


def tree(port: ZkPort, path: str) -> dict[str, bytes]:
    """``path`` and every node under it, with data."""
    out = {path: port.get(path)[0]}
    for child in port.get_children(path):
        out.update(tree(port, f"{path}/{child}"))
    return out


def settle(gw: ZkGateway, writer: ZkPort, path: str = "/sentinel") -> None:
    """Wait until every watch event caused before now has reached ``gw``'s handlers."""
    events = Events()
    assert not gw.register_change_handler_and_check_existence(
        ZNodeChangeHandler(path, on_creation=events.callback("sentinel"))
    )
    writer.create(path)
    events.next()
    gw.unregister_change_handler(path)


class Notifications:
    """ISR-change or log-dir-event notifications, through the gateway's matching methods."""

    def __init__(self, kind: str, gw: ZkGateway) -> None:
        self.kind = kind
        if kind == "isr_change":
            self.parent = paths.ISR_CHANGE_NOTIFICATION
            self.create_path = paths.ISR_CHANGE_CREATE_PATH
            self.prefix = paths.ISR_CHANGE_PREFIX
            self.get_all = gw.get_all_isr_change_notifications
            self.delete: Callable[..., None] = gw.delete_isr_change_notifications
        else:
            self.parent = paths.LOG_DIR_EVENT_NOTIFICATION
            self.create_path = paths.LOG_DIR_EVENT_CREATE_PATH
            self.prefix = paths.LOG_DIR_EVENT_PREFIX
            self.get_all = gw.get_all_log_dir_event_notifications
            self.delete = gw.delete_log_dir_event_notifications
        self.gw = gw

    def payload(self, n: int) -> bytes:
        if self.kind == "isr_change":
            return codecs.encode_isr_change_notification([TP10, TopicPartition("topic1", n)])
        return codecs.encode_log_dir_event(n)

    def content(self, names: list[str]) -> object:
        if self.kind == "isr_change":
            return self.gw.get_partitions_from_isr_change_notifications(names)
        return sorted(self.gw.get_broker_ids_from_log_dir_events(names))


def many_partitions(topics: int, per_topic: int) -> list[TopicPartition]:
    return [TopicPartition(f"t{t}", p) for t in range(topics) for p in range(per_topic)]
