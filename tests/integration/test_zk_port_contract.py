"""The ZkPort contract: one suite run against KazooPort on a real ZooKeeper and MemoryZooKeeper.

Everything the controller relies on from ZooKeeper is pinned here, so the in-memory model used
by unit tests and the simulator cannot drift from the real server. A few KazooPort-only tests
(multi-read fallback, retry deadline against a frozen server) follow the shared suite.

Watch callbacks arrive on kazoo's watch thread, in ZooKeeper's order. "Fired once and only
once" is checked with a sentinel: after the extra change, a second watch on another path is
triggered and awaited; any duplicate of the first event would have been delivered before it.
"""

from __future__ import annotations

import contextlib
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from controller.zk.errors import (
    BadVersionError,
    ConnectionLossError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    SessionExpiredError,
)
from controller.zk.kazoo_port import KazooPort
from controller.zk.memory import MemoryZooKeeper
from controller.zk.port import (
    Check,
    Create,
    Delete,
    EventType,
    SessionState,
    SetData,
    WatchEvent,
    ZkPort,
)

WAIT = 10.0  # seconds to wait for an asynchronous event from a real server


class Events:
    """A watch callback / session listener that records what it is given."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Any] = queue.Queue()

    def __call__(self, item: Any) -> None:
        self._queue.put(item)

    def next(self, timeout: float = WAIT) -> Any:
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"nothing delivered within {timeout}s") from None

    def wait_for(self, wanted: Any, timeout: float = WAIT) -> list[Any]:
        """Everything delivered up to and including ``wanted``."""
        seen: list[Any] = []
        deadline = time.monotonic() + timeout
        while True:
            item = self.next(max(deadline - time.monotonic(), 0.01))
            seen.append(item)
            if item == wanted:
                return seen

    def drain(self) -> list[Any]:
        items = []
        while True:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                return items


class Backend:
    """How a test gets ports and forces faults, whatever the implementation."""

    name: str
    chroot: str  # the chroot every port of ``open`` uses

    def open(self) -> ZkPort:
        raise NotImplementedError

    def open_root(self) -> ZkPort:
        raise NotImplementedError

    def expire(self, port: ZkPort) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class KazooBackend(Backend):
    name = "kazoo"

    def __init__(self, connect: str) -> None:
        self.connect = connect
        self.hosts, slash, chroot = connect.partition("/")
        self.chroot = slash + chroot
        self._ports: list[KazooPort] = []

    def _start(self, connect: str) -> KazooPort:
        port = KazooPort(connect, session_timeout=10.0)
        port.start(timeout=15)
        self._ports.append(port)
        return port

    def open(self) -> ZkPort:
        return self._start(self.connect)

    def open_root(self) -> ZkPort:
        return self._start(self.hosts)

    def expire(self, port: ZkPort) -> None:
        # A real server-side expiry: take the session over with its id, then close it.
        assert isinstance(port, KazooPort)
        client_id = port.client_id
        assert client_id is not None
        killer = KazooClient(
            self.hosts,
            client_id=client_id,
            connection_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1),
        )
        killer.start(timeout=15)
        killer.stop()
        killer.close()

    def close(self) -> None:
        for port in self._ports:
            port.stop()


class MemoryBackend(Backend):
    name = "memory"

    def __init__(self) -> None:
        self.zk = MemoryZooKeeper()
        self.chroot = "/contract"
        self.zk.open_session().ensure_path(self.chroot)

    def open(self) -> ZkPort:
        return self.zk.open_session(chroot=self.chroot)

    def open_root(self) -> ZkPort:
        return self.zk.open_session()

    def expire(self, port: ZkPort) -> None:
        self.zk.expire(port)  # type: ignore[arg-type]

    def close(self) -> None:
        pass


@pytest.fixture(params=["memory", pytest.param("kazoo", marks=pytest.mark.zookeeper)])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    impl: Backend
    if request.param == "kazoo":
        impl = KazooBackend(request.getfixturevalue("zk_connect"))
    else:
        impl = MemoryBackend()
    try:
        yield impl
    finally:
        impl.close()


@pytest.fixture
def zk(backend: Backend) -> ZkPort:
    return backend.open()


def sentinel(zk: ZkPort, writer: ZkPort, path: str = "/sentinel") -> None:
    """Wait until every watch event caused before now has been delivered to ``zk``."""
    events = Events()
    if zk.exists(path) is None:
        writer.create(path, b"")
    zk.get(path, watch=events)
    writer.set(path, b"tick")
    assert events.next() == WatchEvent(EventType.CHANGED, path)


# --- create / get / set / delete --------------------------------------------------------------


def test_create_get_set_delete_with_versions(zk: ZkPort) -> None:
    assert zk.create("/a", b"one") == "/a"
    data, stat = zk.get("/a")
    assert data == b"one"
    assert (stat.version, stat.cversion, stat.num_children, stat.data_length) == (0, 0, 0, 3)
    assert stat.czxid == stat.mzxid and stat.ephemeral_owner == 0
    assert zk.exists("/a") == stat

    new = zk.set("/a", b"two", version=0)
    assert new.version == 1 and new.czxid == stat.czxid and new.mzxid > stat.mzxid
    assert zk.get("/a") == (b"two", new)
    with pytest.raises(BadVersionError):
        zk.set("/a", b"stale", version=0)
    assert zk.set("/a", b"any").version == 2  # -1: any version

    with pytest.raises(BadVersionError):
        zk.delete("/a", version=1)
    zk.delete("/a", version=2)
    assert zk.exists("/a") is None
    with pytest.raises(NoNodeError) as missing:
        zk.get("/a")
    assert missing.value.path == "/a"  # chroot-relative, as given
    with pytest.raises(NoNodeError):
        zk.set("/a", b"x")
    with pytest.raises(NoNodeError):
        zk.delete("/a")


def test_create_errors_and_makepath(zk: ZkPort) -> None:
    zk.create("/p")
    assert zk.get("/p")[0] == b""  # no data reads back as empty bytes
    with pytest.raises(NodeExistsError):
        zk.create("/p")
    with pytest.raises(NoNodeError):
        zk.create("/missing/child")
    assert zk.create("/deep/er/node", b"d", makepath=True) == "/deep/er/node"
    assert zk.get("/deep/er/node")[0] == b"d"
    assert zk.get_children("/deep") == ["er"]
    parent = zk.exists("/p")
    zk.create("/p/c1")
    zk.create("/p/c2")
    after = zk.exists("/p")
    assert parent is not None and after is not None
    assert (after.num_children, after.cversion, after.version) == (2, 2, 0)
    assert sorted(zk.get_children("/p")) == ["c1", "c2"]
    with pytest.raises(NoNodeError):
        zk.get_children("/nope")


def test_delete_not_empty_and_recursive(zk: ZkPort) -> None:
    zk.create("/t/a/b", b"x", makepath=True)
    zk.create("/t/c")
    with pytest.raises(NotEmptyError):
        zk.delete("/t")
    zk.set("/t", b"v1")
    with pytest.raises(BadVersionError):
        zk.delete("/t", version=0, recursive=True)
    assert zk.exists("/t/a/b") is not None  # a stale version deletes nothing
    zk.delete("/t", version=1, recursive=True)
    assert zk.exists("/t") is None
    zk.delete("/t", recursive=True)  # already gone: not an error


def test_ensure_path_is_idempotent(zk: ZkPort) -> None:
    zk.ensure_path("/e/f/g")
    zk.ensure_path("/e/f/g")
    zk.ensure_path("/e/f")
    assert zk.get_children("/e/f") == ["g"]
    zk.ensure_path("/")


def test_ephemeral_and_sequential(backend: Backend, zk: ZkPort) -> None:
    other = backend.open()
    path = zk.create("/eph", b"me", ephemeral=True)
    stat = other.exists(path)
    assert stat is not None and stat.ephemeral_owner == zk.session_id != other.session_id
    with pytest.raises(NoChildrenForEphemeralsError):
        zk.create("/eph/child")

    zk.create("/seq")
    zk.create("/seq/plain")  # bumps /seq's cversion: the next sequence number is 1
    first = zk.create("/seq/n-", b"", sequential=True)
    second = zk.create("/seq/n-", b"", sequential=True, ephemeral=True)
    assert (first, second) == ("/seq/n-0000000001", "/seq/n-0000000002")
    zk.delete(first)
    # Deletes bump cversion but not the sequence (ZooKeeper reports 2*creations - children).
    stat = zk.exists("/seq")
    assert stat is not None and (stat.cversion, stat.num_children) == (4, 2)
    assert zk.create("/seq/n-", sequential=True) == "/seq/n-0000000003"
    assert sorted(other.get_children("/seq")) == [
        "n-0000000002",
        "n-0000000003",
        "plain",
    ]

    zk.stop()  # closing the session deletes its ephemerals at once
    assert other.exists("/eph") is None
    assert sorted(other.get_children("/seq")) == ["n-0000000003", "plain"]


def test_stopped_port_reports_lost_and_refuses_calls(backend: Backend) -> None:
    zk = backend.open()
    states = Events()
    zk.add_session_listener(states)
    zk.stop()
    assert states.next() is SessionState.LOST
    assert zk.session_id is None
    with pytest.raises(SessionExpiredError):
        zk.get("/")
    zk.start()
    assert states.next() is SessionState.CONNECTED
    assert zk.session_id is not None and zk.exists("/") is not None


# --- watches -------------------------------------------------------------------------------


def test_data_watch_fires_once_and_rearms_by_reading(backend: Backend, zk: ZkPort) -> None:
    writer = backend.open()
    writer.create("/w", b"0")
    events = Events()
    zk.get("/w", watch=events)
    zk.get("/w", watch=events)  # the same callback twice on a path: one watch
    writer.set("/w", b"1")
    assert events.next() == WatchEvent(EventType.CHANGED, "/w")
    writer.set("/w", b"2")  # not watched any more
    sentinel(zk, writer)
    assert events.drain() == []

    assert zk.get("/w", watch=events)[0] == b"2"  # re-arm by reading
    writer.delete("/w")
    assert events.next() == WatchEvent(EventType.DELETED, "/w")
    sentinel(zk, writer)
    assert events.drain() == []


def test_existence_watch_on_a_missing_node(backend: Backend, zk: ZkPort) -> None:
    writer = backend.open()
    events = Events()
    assert zk.exists("/later", watch=events) is None
    writer.create("/later", b"x")
    assert events.next() == WatchEvent(EventType.CREATED, "/later")
    writer.set("/later", b"y")
    sentinel(zk, writer)
    assert events.drain() == []

    # get() of a missing node arms nothing: only exists() watches a node that is not there.
    with pytest.raises(NoNodeError):
        zk.get("/absent", watch=events)
    writer.create("/absent")
    sentinel(zk, writer)
    assert events.drain() == []


def test_get_many_watched_arms_a_watch_per_path(backend: Backend, zk: ZkPort) -> None:
    """Like ``get`` for each node read and ``exists`` for each missing one, in one batch."""
    writer = backend.open()
    names = [f"/mw{i}" for i in range(1500)]  # more than one multi-read / SetWatches request
    writer.multi_many([[Create(p, p.encode())] for p in names])
    events = Events()
    reads = zk.get_many_watched([*names, "/mw-missing"], events)
    assert [(r.path, r.data) for r in reads[:-1]] == [(p, p.encode()) for p in names]
    assert isinstance(reads[-1].error, NoNodeError)
    assert [r.stat for r in reads[:-1]] == [r.stat for r in zk.get_many(names)]
    assert events.drain() == []  # nothing changed since the read: no event

    writer.set(names[0], b"changed")
    assert events.next() == WatchEvent(EventType.CHANGED, names[0])
    writer.delete(names[-1])
    assert events.next() == WatchEvent(EventType.DELETED, names[-1])
    writer.create("/mw-missing")
    assert events.next() == WatchEvent(EventType.CREATED, "/mw-missing")
    writer.set(names[0], b"again")  # one-shot: fired already
    sentinel(zk, writer)
    assert events.drain() == []
    assert zk.get_many_watched([], events) == []


def test_child_watch(backend: Backend, zk: ZkPort) -> None:
    writer = backend.open()
    writer.create("/kids")
    events = Events()
    assert zk.get_children("/kids", watch=events) == []
    writer.create("/kids/a")
    assert events.next() == WatchEvent(EventType.CHILD, "/kids")
    writer.create("/kids/b")
    writer.set("/kids", b"data changes do not fire child watches")
    sentinel(zk, writer)
    assert events.drain() == []

    assert sorted(zk.get_children("/kids", watch=events)) == ["a", "b"]
    writer.set("/kids/a", b"nor do data changes of children")
    writer.delete("/kids/a")
    assert events.next() == WatchEvent(EventType.CHILD, "/kids")

    zk.get_children("/kids", watch=events)
    writer.delete("/kids", recursive=True)  # deleting "b" fires CHILD first
    assert events.next() == WatchEvent(EventType.CHILD, "/kids")
    zk.exists("/kids", watch=events)
    writer.create("/kids")
    zk.get_children("/kids", watch=events)
    writer.delete("/kids")  # a child watch also fires when its node goes
    assert events.next() == WatchEvent(EventType.CREATED, "/kids")
    assert events.next() == WatchEvent(EventType.DELETED, "/kids")
    sentinel(zk, writer)
    assert events.drain() == []


# --- multi ---------------------------------------------------------------------------------


def test_multi_success(zk: ZkPort) -> None:
    zk.create("/m")
    zk.create("/m/gone")
    results = zk.multi(
        [
            Create("/m/x", b"x"),
            Create("/m/s-", b"", sequential=True),
            SetData("/m", b"parent", version=0),
            Check("/m/x", 0),
            Delete("/m/gone", -1),
        ]
    )
    assert all(r.ok for r in results)
    assert [r.path for r in results[:2]] == ["/m/x", "/m/s-0000000002"]
    assert results[2].stat is not None and results[2].stat.version == 1
    x, s = zk.exists("/m/x"), zk.exists("/m/s-0000000002")
    assert x is not None and s is not None and x.czxid == s.czxid  # one transaction, one zxid
    assert sorted(zk.get_children("/m")) == ["s-0000000002", "x"]
    assert zk.multi([]) == []


def test_multi_with_a_failing_op_applies_nothing(zk: ZkPort) -> None:
    zk.create("/f", b"orig")
    before = zk.get("/f")
    results = zk.multi([Create("/f/new"), SetData("/missing", b""), SetData("/f", b"changed")])
    assert [type(r.error) for r in results] == [RolledBackError, NoNodeError, RolledBackError]
    assert not any(r.ok for r in results)
    assert results[1].error is not None and results[1].error.path == "/missing"
    assert zk.get("/f") == before and zk.exists("/f/new") is None

    results = zk.multi([Create("/f/a"), Create("/f/a")])  # fails on its own first op
    assert [type(r.error) for r in results] == [RolledBackError, NodeExistsError]
    assert zk.exists("/f/a") is None


def test_fenced_write_with_a_stale_controller_epoch_version(zk: ZkPort) -> None:
    zk.create("/controller_epoch", b"1")
    zk.set("/controller_epoch", b"2")  # another controller won: zkVersion 1
    zk.create("/state", b"old")
    results = zk.multi([Check("/controller_epoch", 0), SetData("/state", b"new")])
    assert isinstance(results[0].error, BadVersionError)  # -> ControllerMovedError
    assert isinstance(results[1].error, RolledBackError)
    assert zk.get("/state")[0] == b"old"

    results = zk.multi([Check("/controller_epoch", 1), SetData("/state", b"new", 0)])
    assert all(r.ok for r in results) and zk.get("/state")[0] == b"new"


def test_multi_many_200_transactions(zk: ZkPort) -> None:
    zk.create("/controller_epoch", b"1")
    zk.create("/mm")
    transactions = [
        [Check("/controller_epoch", 0), Create(f"/mm/n{i:03d}", str(i).encode())]
        for i in range(200)
    ]
    transactions[50] = [Check("/controller_epoch", 7), Create("/mm/fenced")]
    transactions[120] = [Create("/mm/n000")]  # exists by then (one session runs them in order)
    results = zk.multi_many(transactions)
    assert len(results) == 200
    for i, result in enumerate(results):
        if i == 50:
            assert [type(r.error) for r in result] == [BadVersionError, RolledBackError]
        elif i == 120:
            assert [type(r.error) for r in result] == [NodeExistsError]
        else:
            assert all(r.ok for r in result) and result[1].path == f"/mm/n{i:03d}"
    assert len(zk.get_children("/mm")) == 198
    assert zk.multi_many([]) == []


# --- get_many ------------------------------------------------------------------------------


def test_get_many_equals_single_gets(backend: Backend, zk: ZkPort) -> None:
    zk.create("/gm")
    names = [f"/gm/p{i:05d}" for i in range(5000)]
    creates = [Create(p, f'{{"leader":{i % 7}}}'.encode()) for i, p in enumerate(names)]
    results = zk.multi_many([creates[i : i + 100] for i in range(0, len(creates), 100)])
    assert all(r.ok for result in results for r in result)
    zk.set("/gm/p00007", b"changed")
    wanted = [*names, "/gm/missing-1", "/gm", "/gm/p00007", "/nope/deeper"]
    random.Random(7).shuffle(wanted)

    reads = zk.get_many(wanted)
    assert [r.path for r in reads] == wanted
    for path, read in zip(wanted, reads, strict=True):
        if path in ("/gm/missing-1", "/nope/deeper"):
            assert isinstance(read.error, NoNodeError) and read.error.path == path
            assert read.data is None and read.stat is None and not read.ok
        else:
            assert read.ok and (read.data, read.stat) == zk.get(path)

    # The chroot is applied: the same znodes, seen from the root.
    root = backend.open_root()
    rooted = root.get_many([backend.chroot + p for p in names[:50]])
    assert [(r.data, r.stat) for r in rooted] == [(r.data, r.stat) for r in zk.get_many(names[:50])]
    assert zk.get_many([]) == []

    zk.delete("/gm", recursive=True)  # pipelined: quicker than the fixture's cleanup
    assert zk.exists("/gm") is None


# --- session expiry ------------------------------------------------------------------------


def test_real_session_expiry(backend: Backend) -> None:
    victim = backend.open()
    observer = backend.open()
    states = Events()
    victim.add_session_listener(states)
    old_session = victim.session_id
    victim.create("/leader", b"victim", ephemeral=True)
    gone = Events()
    assert observer.exists("/leader", watch=gone) is not None
    dropped = Events()
    victim.get("/leader", watch=dropped)

    backend.expire(victim)

    seen = states.wait_for(SessionState.LOST)
    assert seen in ([SessionState.LOST], [SessionState.SUSPENDED, SessionState.LOST])
    assert gone.next() == WatchEvent(EventType.DELETED, "/leader")
    assert observer.exists("/leader") is None
    # The victim's own watch is dropped (NONE), never fired by the deletion.
    assert dropped.next() == WatchEvent(EventType.NONE, "/leader")
    # Like kazoo, the client then opens a brand-new session.
    assert states.next() is SessionState.CONNECTED
    assert victim.session_id is not None and victim.session_id != old_session
    assert victim.exists("/leader") is None
    victim.create("/leader", b"again", ephemeral=True)
    stat = observer.exists("/leader")
    assert stat is not None and stat.ephemeral_owner == victim.session_id


# --- connection loss within a session ----------------------------------------------------------


class Blip:
    """A ``watcher`` port whose connection can be cut and restored while ``writer`` writes."""

    watcher: ZkPort
    writer: ZkPort

    def cut(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError


class MemoryBlip(Blip):
    def __init__(self) -> None:
        self.zk = MemoryZooKeeper()
        self.watcher = self.zk.open_session()
        self.writer = self.zk.open_session()

    def cut(self) -> None:
        self.zk.disconnect(self.watcher)  # type: ignore[arg-type]

    def restore(self) -> None:
        self.zk.reconnect(self.watcher)  # type: ignore[arg-type]


class EnsembleBlip(Blip):
    """The watcher talks to one follower only: stopping that node cuts its connection, and the
    session lives on in the ensemble while the writer works through another node."""

    def __init__(self, ensemble: Any) -> None:
        self.ensemble = ensemble
        leader = ensemble.leader_index()
        self.node = next(i for i in range(ensemble.size) if i != leader)
        writer_node = next(i for i in range(ensemble.size) if i != self.node)
        self.watcher = KazooPort(ensemble.node_hosts(self.node), session_timeout=30.0)
        self.writer = KazooPort(ensemble.node_hosts(writer_node), session_timeout=30.0)
        self.watcher.start(timeout=15)
        self.writer.start(timeout=15)

    def cut(self) -> None:
        self.ensemble.stop(self.node)

    def restore(self) -> None:
        self.ensemble.start(self.node)

    def close(self) -> None:
        self.watcher.stop()
        self.writer.stop()


@pytest.fixture(params=["memory", pytest.param("kazoo", marks=pytest.mark.zookeeper)])
def blip(request: pytest.FixtureRequest) -> Iterator[Blip]:
    if request.param == "memory":
        yield MemoryBlip()
        return
    ensemble_blip = EnsembleBlip(request.getfixturevalue("zk_ensemble"))
    try:
        yield ensemble_blip
    finally:
        ensemble_blip.close()


def test_watches_survive_a_connection_loss(blip: Blip) -> None:
    watcher, writer = blip.watcher, blip.writer
    states = Events()
    watcher.add_session_listener(states)
    session = watcher.session_id
    for path in ("/changed", "/quiet", "/kids", "/gone"):
        writer.create(path, b"0")
    changed, quiet, created, kids, gone = Events(), Events(), Events(), Events(), Events()
    watcher.get("/changed", watch=changed)
    watcher.get("/quiet", watch=quiet)
    watcher.exists("/created", watch=created)
    watcher.get_children("/kids", watch=kids)
    watcher.get_children("/gone", watch=gone)

    blip.cut()
    assert states.next() is SessionState.SUSPENDED
    writer.set("/changed", b"1")
    writer.set("/changed", b"2")
    writer.create("/created")
    writer.create("/kids/a")
    writer.delete("/gone")
    blip.restore()
    assert states.next(timeout=30) is SessionState.CONNECTED
    assert watcher.session_id == session

    # As ZooKeeper's Java client: each watch whose node changed fires once, on reconnect.
    assert changed.next() == WatchEvent(EventType.CHANGED, "/changed")
    assert created.next() == WatchEvent(EventType.CREATED, "/created")
    assert kids.next() == WatchEvent(EventType.CHILD, "/kids")
    assert gone.next() == WatchEvent(EventType.DELETED, "/gone")
    # The unchanged watch is set again and fires on the next change.
    writer.set("/quiet", b"1")
    assert quiet.next() == WatchEvent(EventType.CHANGED, "/quiet")
    sentinel(watcher, writer)
    for events in (changed, quiet, created, kids, gone):
        assert events.drain() == []
    assert [item for item in states.drain() if item is not SessionState.CONNECTED] == []


# --- KazooPort only --------------------------------------------------------------------------


@pytest.mark.zookeeper
def test_a_watch_whose_acl_now_denies_us_does_not_stop_the_others_rearming(
    zk_ensemble: Any,
) -> None:
    """During the cut, another client's ACL change makes one watched node unreadable to the
    watcher: its child watch cannot be set again, the others are, and say what changed."""
    from kazoo.security import make_acl, make_digest_acl

    blip = EnsembleBlip(zk_ensemble)
    other = next(i for i in range(zk_ensemble.size) if i != blip.node)  # not the one cut
    admin = KazooClient(hosts=zk_ensemble.node_hosts(other))
    admin.start(timeout=15)
    admin.add_auth("digest", "admin:secret")
    try:
        watcher, writer = blip.watcher, blip.writer
        writer.create("/locked", b"0")
        writer.create("/kids", b"0")
        writer.create("/changed", b"0")
        locked, kids, changed = Events(), Events(), Events()
        watcher.get_children("/locked", watch=locked)
        watcher.get_children("/kids", watch=kids)
        watcher.get("/changed", watch=changed)
        states = Events()
        watcher.add_session_listener(states)

        blip.cut()
        assert states.next() is SessionState.SUSPENDED
        admin.set_acls("/locked", [make_digest_acl("admin", "secret", all=True)])
        writer.create("/kids/a")
        writer.set("/changed", b"1")
        blip.restore()
        assert states.next(timeout=30) is SessionState.CONNECTED

        assert kids.next() == WatchEvent(EventType.CHILD, "/kids")
        assert changed.next() == WatchEvent(EventType.CHANGED, "/changed")
        writer.set("/changed", b"2")  # set again: fires on the next change too
        assert changed.next() == WatchEvent(EventType.CHANGED, "/changed")
        assert locked.drain() == []
        admin.set_acls("/locked", [make_acl("world", "anyone", all=True)])
    finally:
        admin.stop()
        admin.close()
        blip.close()


@pytest.mark.zookeeper
def test_batched_reads_fall_back_without_multiread(zk_connect: str) -> None:
    with_multiread = KazooPort(zk_connect, 10.0)
    fallback = KazooPort(zk_connect, 10.0, use_multiread=False, max_in_flight=16)
    with_multiread.start()
    fallback.start()
    try:
        paths = [f"/fb{i}" for i in range(300)]
        with_multiread.multi([Create(p, p.encode()) for p in paths[::2]])
        wanted = [*paths, "/"]
        expected = with_multiread.get_many(wanted)
        got = fallback.get_many(wanted)
        assert [(r.path, r.data, r.stat, type(r.error)) for r in got] == [
            (r.path, r.data, r.stat, type(r.error)) for r in expected
        ]
        # Small multi-read chunks: many requests pipelined, results still in order.
        chunked = KazooPort(zk_connect, 10.0, multiread_batch=7, multiread_in_flight=3)
        chunked.start()
        try:
            assert [(r.path, r.data, r.stat) for r in chunked.get_many(wanted)] == [
                (r.path, r.data, r.stat) for r in expected
            ]
        finally:
            chunked.stop()
        # Recursive delete lists the tree with pipelined get_children instead.
        fallback.create("/tree/a/b", makepath=True)
        fallback.create("/tree/c")
        fallback.delete("/tree", recursive=True)
        assert fallback.exists("/tree") is None
    finally:
        with_multiread.stop()
        fallback.stop()


@pytest.mark.zookeeper
def test_get_many_watched_without_multiread(zk_connect: str) -> None:
    """Pipelined gets instead of multi-reads: the watches are armed all the same."""
    port = KazooPort(zk_connect, 10.0, use_multiread=False, max_in_flight=16)
    writer = KazooPort(zk_connect, 10.0)
    port.start()
    writer.start()
    try:
        names = [f"/fw{i}" for i in range(50)]
        writer.multi([Create(p, b"0") for p in names])
        events = Events()
        reads = port.get_many_watched(names, events)
        assert [r.data for r in reads] == [b"0"] * len(names)
        writer.set(names[7], b"1")
        assert events.next() == WatchEvent(EventType.CHANGED, names[7])
        sentinel(port, writer)
        assert events.drain() == []
    finally:
        port.stop()
        writer.stop()


@pytest.mark.zookeeper
def test_unreachable_server_raises_connection_loss_at_the_deadline(zk_standalone: Any) -> None:
    port = KazooPort(zk_standalone.hosts, session_timeout=20.0, command_deadline=1.5)
    states = Events()
    port.add_session_listener(states)
    port.start()
    assert states.next() is SessionState.CONNECTED
    session = port.session_id
    port.create("/x", b"1")
    pid = zk_standalone.pid
    assert pid is not None
    zk_standalone.freeze()
    _wait_stopped(pid)  # SIGSTOP is asynchronous: a reply may still slip out
    try:
        started = time.monotonic()
        with pytest.raises(ConnectionLossError):
            port.get("/x")
        assert time.monotonic() - started < 5.0  # bounded by the deadline, never hangs
    finally:
        zk_standalone.thaw()
    _eventually(lambda: port.get("/x")[0] == b"1")
    assert port.session_id == session  # a connection hiccup is not a new session
    port.stop()


@pytest.mark.zookeeper
def test_retry_until_expired_outlasts_the_deadline_while_the_session_lives(
    zk_standalone: Any,
) -> None:
    # The controller's port (Kafka's retryRequestsUntilConnected): a call waits out an outage
    # longer than any deadline as long as the session survives it, and the session's id is
    # still known while the connection is down (the controller compares it with /controller's
    # owner).
    port = KazooPort(
        zk_standalone.hosts, session_timeout=20.0, command_deadline=1.0, retry_until_expired=True
    )
    states = Events()
    port.add_session_listener(states)
    port.start()
    assert states.next() is SessionState.CONNECTED
    session = port.session_id
    assert session is not None
    port.create("/y", b"1")
    pid = zk_standalone.pid
    assert pid is not None
    result: list[Any] = []
    zk_standalone.freeze()
    _wait_stopped(pid)
    try:
        reader = threading.Thread(target=lambda: result.append(port.get("/y")[0]), daemon=True)
        started = time.monotonic()
        reader.start()
        # kazoo's ping times out after 2/3 of the session timeout (~13 s); the session lives.
        assert states.next(timeout=18.0) is SessionState.SUSPENDED
        assert port.session_id == session
        assert reader.is_alive() and result == []  # a bounded port gave up after 1 s
    finally:
        zk_standalone.thaw()
    reader.join(WAIT)
    assert result == [b"1"] and time.monotonic() - started > 5.0
    assert port.session_id == session

    # Stopping the port ends a call that is waiting for the connection.
    zk_standalone.freeze()
    _wait_stopped(pid)
    failed: list[BaseException] = []

    def read() -> None:
        try:
            port.get("/y")
        except BaseException as exc:
            failed.append(exc)

    try:
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        time.sleep(2.0)  # blocked past the deadline
        assert reader.is_alive()
        port.stop()
        reader.join(5.0)
        assert not reader.is_alive()
        assert len(failed) == 1 and isinstance(failed[0], SessionExpiredError)
    finally:
        zk_standalone.thaw()


def _wait_stopped(pid: int, timeout: float = WAIT) -> None:
    """Until every thread of ``pid`` is stopped (Linux /proc; elsewhere a short pause)."""
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.is_dir():
        time.sleep(0.5)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for stat in tasks.glob("*/stat"):
            with contextlib.suppress(OSError):  # a thread may exit meanwhile
                states.append(stat.read_text().rsplit(")", 1)[1].split()[0])
        if states and all(state in "Tt" for state in states):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not stop within {timeout}s")


def _eventually(check: Callable[[], bool], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except ConnectionLossError as exc:
            last = exc
        time.sleep(0.1)
    raise AssertionError(f"not true within {timeout}s (last connection loss: {last!r})")
