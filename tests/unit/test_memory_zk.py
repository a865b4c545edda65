"""MemoryZooKeeper details the shared contract suite (tests/integration) does not pin down:
zxids, rollback, error precedence, delivery through a dispatcher, faults, chroots, threads."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from structlog.testing import capture_logs

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
from controller.zk.memory import MemoryZooKeeper
from controller.zk.memory_session import MemoryZkSession
from controller.zk.port import (
    Check,
    Create,
    Delete,
    EventType,
    SessionState,
    SetData,
    WatchEvent,
)


class Recorder:
    def __init__(self) -> None:
        self.items: list[object] = []

    def __call__(self, item: object) -> None:
        self.items.append(item)


@pytest.fixture
def zk() -> MemoryZooKeeper:
    return MemoryZooKeeper()


@pytest.fixture
def s(zk: MemoryZooKeeper) -> MemoryZkSession:
    return zk.open_session()


# --- zxids, stats, rollback -------------------------------------------------------------------


def test_one_zxid_per_write_and_per_multi(zk: MemoryZooKeeper, s: MemoryZkSession) -> None:
    s.create("/a")
    assert zk.zxid == 1
    s.set("/a", b"x")
    assert zk.zxid == 2
    results = s.multi([Create("/a/b"), Create("/a/c"), SetData("/a", b"y")])
    assert zk.zxid == 3
    b, c = s.exists("/a/b"), s.exists("/a/c")
    assert b is not None and c is not None and b.czxid == c.czxid == 3
    assert results[2].stat is not None and results[2].stat.mzxid == 3
    with pytest.raises(BadVersionError):
        s.set("/a", b"z", version=0)
    assert zk.zxid == 3  # failed writes commit nothing


def test_failed_multi_is_rolled_back_completely(zk: MemoryZooKeeper, s: MemoryZkSession) -> None:
    s.create("/keep", b"k")
    e = s.create("/e", ephemeral=True)
    before, zxid = zk.snapshot(), zk.zxid
    watched = Recorder()
    s.get("/keep", watch=watched)
    s.get_children("/", watch=watched)
    results = s.multi(
        [
            Create("/x", b"1"),
            Create("/x/y"),
            SetData("/keep", b"changed"),
            Delete("/x/y"),
            Delete(e),
            Create("/seq-", sequential=True),
            Delete("/x"),
            Check("/x", -1),  # gone by now: NoNode, and everything above is undone
        ]
    )
    assert [type(r.error) for r in results] == [RolledBackError] * 7 + [NoNodeError]
    assert zk.snapshot() == before and zk.zxid == zxid
    assert watched.items == []  # a multi that did not commit fires nothing
    zk.disconnect(s)
    zk.reconnect(s)
    assert watched.items == []  # ... and left no zxid behind (pzxid restored too)
    # The undone ephemeral is still owned by its session: closing the session removes it.
    s.stop()
    assert "/e" not in zk.snapshot()


def test_multi_sees_its_own_intermediate_state(s: MemoryZkSession) -> None:
    results = s.multi(
        [
            Create("/p"),
            Create("/p/n-", sequential=True),
            Create("/p/n-", sequential=True),
            SetData("/p", b"v", version=0),
            Check("/p", 1),
        ]
    )
    assert [r.path for r in results[:3]] == ["/p", "/p/n-0000000000", "/p/n-0000000001"]
    assert all(r.ok for r in results)


def test_error_precedence_matches_zookeeper(s: MemoryZkSession) -> None:
    s.create("/eph", ephemeral=True)
    s.create("/eph2", ephemeral=True)
    with pytest.raises(NodeExistsError):  # NodeExists is checked before the ephemeral parent
        s.create("/eph2")
    with pytest.raises(NoChildrenForEphemeralsError):
        s.ensure_path("/eph/x/y")
    s.create("/full/child", makepath=True)
    with pytest.raises(BadVersionError):  # BadVersion is checked before NotEmpty
        s.delete("/full", version=3)
    with pytest.raises(NotEmptyError):
        s.delete("/full", version=0)


def test_null_data_and_stat_fields(s: MemoryZkSession) -> None:
    s.create("/n")
    data, stat = s.get("/n")
    assert data == b"" and stat.data_length == 0
    stat = s.set("/n", b"abc")
    assert (stat.version, stat.data_length) == (1, 3)


def test_invalid_paths_are_programming_errors(s: MemoryZkSession) -> None:
    for bad in ("relative", "/trailing/", "/double//slash", "/dot/./x", "/dots/.."):
        with pytest.raises(ValueError):
            s.create(bad)
    with pytest.raises(ValueError):
        s.delete("/")
    assert s.create("/q/", sequential=True, makepath=True) == "/q/0000000000"


# --- watches and delivery -------------------------------------------------------------------


def test_watches_are_per_session_and_per_callback(zk: MemoryZooKeeper) -> None:
    a, b = zk.open_session(), zk.open_session()
    a.create("/w")
    shared, other = Recorder(), Recorder()
    a.get("/w", watch=shared)
    a.exists("/w", watch=shared)  # same callback, same path, same session: one watch
    a.get("/w", watch=other)
    b.get("/w", watch=shared)  # another session: its own watch
    a.set("/w", b"1")
    changed = WatchEvent(EventType.CHANGED, "/w")
    assert shared.items == [changed, changed] and other.items == [changed]


def test_data_and_child_watch_both_fire_on_delete_like_kazoo(s: MemoryZkSession) -> None:
    s.create("/d")
    events = Recorder()
    s.exists("/d", watch=events)
    s.get_children("/d", watch=events)
    s.delete("/d")
    # kazoo keeps data and child watchers apart and calls each: two DELETED events.
    assert events.items == [WatchEvent(EventType.DELETED, "/d")] * 2


def test_dispatcher_receives_deliveries_in_order() -> None:
    pending: list[Callable[[], None]] = []
    zk = MemoryZooKeeper(dispatcher=pending.append)
    watcher, writer = zk.open_session(), zk.open_session()
    events = Recorder()
    writer.create("/a")
    watcher.get("/a", watch=events)
    watcher.get_children("/", watch=events)
    states = Recorder()
    watcher.add_session_listener(states)
    writer.multi([SetData("/a", b"1"), Create("/b")])
    zk.expire(watcher)
    assert events.items == [] and states.items == []  # nothing runs until the simulator says
    for thunk in pending:
        thunk()
    assert events.items == [
        WatchEvent(EventType.CHANGED, "/a"),
        WatchEvent(EventType.CHILD, "/"),
    ]
    assert states.items == [SessionState.SUSPENDED, SessionState.LOST, SessionState.CONNECTED]


def test_a_callback_may_rearm_and_write(zk: MemoryZooKeeper, s: MemoryZkSession) -> None:
    s.create("/counter", b"0")
    seen: list[tuple[EventType, bytes]] = []

    def on_change(event: WatchEvent) -> None:
        data, _ = s.get("/counter", watch=on_change)  # re-arm from inside the callback
        seen.append((event.type, data))
        if data == b"1":
            s.set("/counter", b"2")  # its watch fires after this callback returns

    s.get("/counter", watch=on_change)
    s.set("/counter", b"1")
    assert seen == [(EventType.CHANGED, b"1"), (EventType.CHANGED, b"2")]


def test_failing_callbacks_are_logged_not_raised(s: MemoryZkSession) -> None:
    def broken(_: object) -> None:
        raise RuntimeError("boom")

    s.create("/x")
    s.get("/x", watch=broken)
    s.add_session_listener(broken)
    with capture_logs() as logs:
        s.set("/x", b"1")
        s.stop()
    assert [e["event"] for e in logs] == ["zk callback failed", "zk callback failed"]


# --- sessions and faults --------------------------------------------------------------------


def test_watches_survive_a_disconnect(zk: MemoryZooKeeper) -> None:
    s, other = zk.open_session(), zk.open_session()
    states = Recorder()
    s.add_session_listener(states)
    sid = s.session_id
    s.create("/e", ephemeral=True)
    for path in ("/quiet", "/kids", "/gone", "/kidsgone"):
        other.create(path)
    changed, quiet, created, kids, gone, kidsgone = (Recorder() for _ in range(6))
    s.get("/e", watch=changed)
    s.get("/quiet", watch=quiet)
    s.exists("/later", watch=created)
    s.get_children("/kids", watch=kids)
    s.get("/gone", watch=gone)
    s.get_children("/kidsgone", watch=kidsgone)

    zk.disconnect(s)
    assert states.items == [SessionState.SUSPENDED]
    assert s.session_id == sid and s.client_id is None  # the session lives on
    with pytest.raises(ConnectionLossError):
        s.get("/e")
    other.set("/e", b"1")
    other.set("/e", b"2")
    other.create("/later")
    other.create("/kids/a")
    other.delete("/gone")
    other.delete("/kidsgone")
    assert [changed.items, created.items, kids.items, gone.items] == [[], [], [], []]

    zk.reconnect(s)
    assert states.items[-1] is SessionState.CONNECTED and s.session_id == sid
    # One event per changed watch, as ZooKeeper's SetWatches would decide them.
    assert changed.items == [WatchEvent(EventType.CHANGED, "/e")]
    assert created.items == [WatchEvent(EventType.CREATED, "/later")]
    assert kids.items == [WatchEvent(EventType.CHILD, "/kids")]
    assert gone.items == [WatchEvent(EventType.DELETED, "/gone")]
    assert kidsgone.items == [WatchEvent(EventType.DELETED, "/kidsgone")]
    assert quiet.items == []
    # An unchanged watch is simply set again; a fired one stays set (as if re-read).
    other.set("/quiet", b"now")
    other.set("/e", b"3")
    assert quiet.items == [WatchEvent(EventType.CHANGED, "/quiet")]
    assert changed.items[-1] == WatchEvent(EventType.CHANGED, "/e") and len(changed.items) == 2


def test_a_lost_session_gives_its_watches_none(zk: MemoryZooKeeper, s: MemoryZkSession) -> None:
    s.create("/n")
    data, kids = Recorder(), Recorder()
    s.get("/n", watch=data)
    zk.disconnect(s)
    s.start()  # start() on a disconnected session reconnects it, like reconnect()
    s.get_children("/n", watch=kids)
    zk.expire(s)
    assert data.items == [WatchEvent(EventType.NONE, "/n")]
    assert kids.items == [WatchEvent(EventType.NONE, "/n")]
    s.create("/n/child")  # the new session has no watches
    assert len(data.items) == len(kids.items) == 1


def test_expire_without_reconnect(zk: MemoryZooKeeper) -> None:
    s, observer = zk.open_session(), zk.open_session()
    states = Recorder()
    s.add_session_listener(states)
    s.create("/p")
    s.create("/p/e1", ephemeral=True)
    s.create("/p/e2", ephemeral=True)
    children, e1 = Recorder(), Recorder()
    observer.get_children("/p", watch=children)
    observer.exists("/p/e1", watch=e1)
    zxid, old = zk.zxid, s.session_id
    zk.expire(s, reconnect=False)
    assert states.items == [SessionState.SUSPENDED, SessionState.LOST]
    assert observer.get_children("/p") == [] and zk.zxid == zxid + 1  # one closeSession txn
    assert children.items == [WatchEvent(EventType.CHILD, "/p")]
    assert e1.items == [WatchEvent(EventType.DELETED, "/p/e1")]
    with pytest.raises(SessionExpiredError):
        s.get("/p")
    s.start()
    assert states.items[-1] is SessionState.CONNECTED
    assert s.session_id is not None and s.session_id != old
    zk.expire(s, reconnect=False)
    zk.expire(s)  # no session: nothing happens
    assert s.session_id is None


def test_stop_is_idempotent_and_start_opens_a_new_session(s: MemoryZkSession) -> None:
    states = Recorder()
    s.add_session_listener(states)
    first = s.session_id
    s.stop()
    s.stop()
    assert states.items == [SessionState.LOST] and s.state is SessionState.LOST
    s.restart()
    assert states.items == [SessionState.LOST, SessionState.CONNECTED]
    assert s.session_id not in (None, first)
    assert s.client_id is not None and s.client_id[0] == s.session_id
    s.remove_session_listener(states)
    s.stop()
    assert len(states.items) == 2


# --- chroot ---------------------------------------------------------------------------------


def test_chroot_is_invisible_to_the_session(zk: MemoryZooKeeper) -> None:
    root = zk.open_session()
    root.create("/kafka")
    s = zk.open_session(chroot="/kafka")
    events = Recorder()
    assert s.exists("/brokers", watch=events) is None
    assert s.create("/brokers/ids/1", b"b1", ephemeral=True, makepath=True) == "/brokers/ids/1"
    assert events.items == [WatchEvent(EventType.CREATED, "/brokers")]
    assert root.get("/kafka/brokers/ids/1")[0] == b"b1"
    assert s.get_children("/") == ["brokers"]
    assert s.create("/seq-", sequential=True) == "/seq-0000000001"
    with pytest.raises(NoNodeError) as err:
        s.get("/missing")
    assert err.value.path == "/missing"
    results = s.multi([Create("/x"), SetData("/nope", b"")])
    assert results[1].error is not None and results[1].error.path == "/nope"
    assert [r.path for r in s.get_many(["/brokers/ids/1", "/zz"])] == ["/brokers/ids/1", "/zz"]
    s.delete("/brokers", recursive=True)
    assert root.get_children("/kafka") == ["seq-0000000001"]


# --- threads --------------------------------------------------------------------------------


def test_concurrent_compare_and_set_loses_no_update(zk: MemoryZooKeeper) -> None:
    zk.open_session().create("/n", b"0")
    sessions = [zk.open_session() for _ in range(4)]
    changes = Recorder()
    watcher = zk.open_session()

    def rearm(event: WatchEvent) -> None:
        changes(event)
        watcher.exists("/n", watch=rearm)

    watcher.exists("/n", watch=rearm)

    def bump(session: MemoryZkSession) -> None:
        done = 0
        while done < 250:
            data, stat = session.get("/n")
            try:
                session.set("/n", str(int(data) + 1).encode(), version=stat.version)
                done += 1
            except BadVersionError:
                continue

    threads = [threading.Thread(target=bump, args=(x,)) for x in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    data, stat = watcher.get("/n")
    assert data == b"1000" and stat.version == 1000
    assert 1 <= len(changes.items) <= 1000  # one-shot: changes between re-arms coalesce
