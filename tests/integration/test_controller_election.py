"""Controller election, failover, expiry, fencing and graceful stop on a real ZooKeeper
(issue: foundation). Controllers run as real processes where the test needs signals, and
in-process where it needs to reach inside (session ids, blocking the event thread)."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from structlog.testing import capture_logs

from controller.bench.cluster import last_record_ts
from controller.config import load_config
from controller.core.controller import Controller
from controller.core.events import NotControllerError, Probe, TopicChange
from controller.core.model import EndPoint
from controller.daemon import ControllerDaemon
from controller.zk import codecs
from controller.zk.port import SessionState
from controller.zk.server import free_port
from tests.support import ControllerProcess, controller_in_zk, kazoo, wait_until

SESSION_TIMEOUT_MS = 4000


@pytest.fixture
def zk(zk_connect: str) -> Iterator[KazooClient]:
    client = kazoo(zk_connect)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def processes(zk_connect: str, tmp_path: Path) -> Iterator[Callable[[int], ControllerProcess]]:
    started: list[ControllerProcess] = []

    def start(controller_id: int) -> ControllerProcess:
        proc = ControllerProcess(
            zk_connect, controller_id, tmp_path, session_timeout_ms=SESSION_TIMEOUT_MS
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.close()
        # Shown by pytest only when the test failed: the controller's side of the story.
        print(f"--- controller {proc.controller_id} output ---\n{proc.output()}")


@pytest.fixture
def daemons(zk_connect: str, tmp_path: Path) -> Iterator[Callable[[int], ControllerDaemon]]:
    started: list[ControllerDaemon] = []

    def start(controller_id: int) -> ControllerDaemon:
        config = load_config(
            flags={
                "zookeeper.connect": zk_connect,
                "controller.id": str(controller_id),
                "metrics.listen": f"127.0.0.1:{free_port()}",
                "grpc.listen": f"127.0.0.1:{free_port()}",
                "log.dir": str(tmp_path / f"controller-{controller_id}"),
                "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            },
            env={},
        )
        daemon = ControllerDaemon(config, configure_logs=False)
        daemon.start()
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        daemon.stop(resign_timeout=2)


def register_broker_1(zk: KazooClient) -> None:
    """A broker registration (no broker behind it), so that topics get partition states."""
    registration = codecs.BrokerRegistration(
        1, (EndPoint("CONTROLLER", "127.0.0.1", free_port()),), timestamp_ms=0
    )
    zk.create(
        "/brokers/ids/1",
        codecs.encode_broker_registration(registration),
        ephemeral=True,
        makepath=True,
    )


def expirations(daemon: ControllerDaemon) -> float:
    value = daemon.metrics.registry.get_sample_value(
        "kafka_controller_zookeeper_session_expirations_total"
    )
    return -1.0 if value is None else value


def active_ones(procs: list[ControllerProcess]) -> list[ControllerProcess]:
    return [p for p in procs if p.active() == 1.0]


def test_two_controllers_exactly_one_active_and_kill9_failover(zk, processes):
    c1, c2 = processes(1), processes(2)
    c1.wait_serving()
    c2.wait_serving()
    wait_until(
        lambda: len(active_ones([c1, c2])) == 1 and controller_in_zk(zk)[0] is not None,
        what="one active controller",
    )
    (active,) = active_ones([c1, c2])
    standby = c2 if active is c1 else c1
    assert standby.active() == 0.0
    assert controller_in_zk(zk) == (active.controller_id, 1)
    assert active.metrics()["kafka_controller_controller_epoch"] == 1.0

    active.kill()  # kill -9: the session lingers until it times out
    started = time.monotonic()
    wait_until(
        lambda: standby.active() == 1.0,
        timeout=SESSION_TIMEOUT_MS / 1000 + 10,
        what="standby takes over",
    )
    elapsed = time.monotonic() - started
    # The session timeout, ZooKeeper's expiry tick and a slow VM hour's slack: a takeover
    # that waited for anything else (a second session timeout, a poll) would exceed it.
    assert elapsed <= SESSION_TIMEOUT_MS / 1000 + 4, f"took over after {elapsed:.2f}s"
    assert controller_in_zk(zk) == (standby.controller_id, 2)
    assert standby.metrics()["kafka_controller_controller_epoch"] == 2.0


def _wait_resigned_record(daemon: ControllerDaemon) -> None:
    """The resigned record is written late in the resignation event and flushed at its end,
    after ``is_active`` already reads False: wait for it rather than read once."""
    scl = Path(daemon.config.log_dir) / "state-change.log"
    wait_until(
        lambda: last_record_ts(scl, "resigned") is not None,
        what="the resigned record in the state-change log",
    )


def test_a_dropped_connection_is_a_disconnect_not_an_expiry(zk, daemons):
    d1 = daemons(1)
    wait_until(lambda: d1.controller.is_active, what="d1 active")
    session = d1.port.session_id
    registry = d1.metrics.registry
    assert registry.get_sample_value("kafka_controller_zookeeper_disconnects_total") == 0.0
    # Cut the client's TCP connection under it (the test reaches into kazoo for the socket):
    # kazoo reconnects within the session, as after a network blip.
    d1.port._client._connection._socket.shutdown(socket.SHUT_RDWR)
    wait_until(
        lambda: registry.get_sample_value("kafka_controller_zookeeper_disconnects_total") == 1.0,
        what="the disconnect counted",
    )
    wait_until(lambda: d1.port.state is SessionState.CONNECTED, what="reconnected")
    assert d1.port.session_id == session
    assert expirations(d1) == 0.0
    assert d1.controller.is_active and controller_in_zk(zk)[0] == 1


def test_stop_with_a_backlog_resigns_first_and_answers_the_queued_requests(zk, daemons):
    d1 = daemons(1)
    wait_until(lambda: d1.controller.is_active, what="d1 active")
    gate = threading.Event()
    d1.controller.events.put(Probe(fn=lambda c: gate.wait(10)))  # the event in progress
    backlog = [Probe(fn=lambda c: time.sleep(1)) for _ in range(20)]  # 20 s of queued work
    for probe in backlog:
        d1.controller.events.put(probe)
    with capture_logs() as logs:
        stopper = threading.Thread(target=d1.stop, kwargs={"resign_timeout": 5})
        stopper.start()
        # Queued requests are answered at once, before the event in progress ends.
        wait_until(lambda: all(p.reply.done() for p in backlog), what="backlog answered")
        gate.set()
        stopper.join(15)
    assert all(isinstance(p.reply.exception(0), NotControllerError) for p in backlog)
    assert "resignation did not finish in time" not in [e["event"] for e in logs]
    _wait_resigned_record(d1)
    assert controller_in_zk(zk)[0] is None


def test_server_side_session_expiry_resigns_and_one_controller_remains(zk, zk_connect, daemons):
    d1 = daemons(1)
    wait_until(lambda: d1.controller.is_active, what="d1 active")
    d2 = daemons(2)
    wait_until(lambda: d2.controller.active_controller_id == 1, what="d2 sees d1")

    # A real expiry: a second client takes over d1's session and closes it.
    session_id, password = d1.port.client_id
    thief = KazooClient(hosts=zk_connect, client_id=(session_id, password))
    thief.start(timeout=10)
    thief.stop()
    thief.close()

    wait_until(lambda: d1.port.session_id not in (None, session_id), what="d1 on a new session")

    def settled() -> bool:
        owner, epoch = controller_in_zk(zk)
        actives = [d for d in (d1, d2) if d.controller.is_active]
        return len(actives) == 1 and owner == actives[0].config.controller_id and epoch >= 2

    wait_until(settled, timeout=20, what="exactly one active controller at a higher epoch")
    # Counted once, as an expiry; d2's session did not expire, and stopping it (which closes
    # its session, LOST to the listeners) is not one either.
    assert expirations(d1) == 1.0
    assert expirations(d2) == 0.0
    d2.stop(resign_timeout=5)
    assert expirations(d2) == 0.0
    _wait_resigned_record(d1)


def test_zombie_fenced_write_is_rejected_and_nothing_reaches_zookeeper(zk, daemons):
    register_broker_1(zk)  # live, so a new topic's partition would be written
    d1 = daemons(1)
    wait_until(
        lambda: (
            d1.controller.is_active
            and d1.controller.call(lambda c: c.context.live_broker_ids()) == {1}
        ),
        what="d1 active with broker 1",
    )

    gate = threading.Event()
    blocked = threading.Event()

    def block(ctl: Controller) -> None:
        blocked.set()
        gate.wait(20)

    d1.controller.events.put(Probe(fn=block))
    assert blocked.wait(10)
    # While d1 is stuck: a topic is created, then another controller takes over.
    zk.create(
        "/brokers/topics/fenced",
        b'{"version":3,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}',
        makepath=True,
    )
    # The TopicChange is queued before the takeover, so the zombie processes it first.
    wait_until(
        lambda: any(isinstance(e, TopicChange) for e in d1.controller.events.pending()),
        what="TopicChange queued behind the stuck event",
    )
    zk.set("/controller_epoch", b"2")
    zk.delete("/controller")
    zk.create("/controller", codecs.encode_controller(99, 0), ephemeral=True)
    with capture_logs() as logs:
        gate.set()
        wait_until(lambda: not d1.controller.is_active, what="zombie resigns")

    # Its write was attempted and fenced (ControllerMovedError on the epoch check), not
    # skipped: that is what made it resign.
    moved = [e for e in logs if e["event"] == "controller moved to another node"]
    assert [e["controller_event"] for e in moved] == ["TopicChange"]
    assert d1.controller.active_controller_id == 99
    assert zk.exists("/brokers/topics/fenced/partitions/0/state") is None
    assert controller_in_zk(zk) == (99, 2)
    _wait_resigned_record(d1)


def _state_znodes(zk: KazooClient) -> dict[str, tuple[int, int]]:
    """Every partition state znode: (mzxid, the controller_epoch written in it)."""
    out = {}
    for topic in zk.get_children("/brokers/topics"):
        base = f"/brokers/topics/{topic}/partitions"
        for partition in zk.get_children(base) if zk.exists(base) else []:
            data, stat = zk.get(f"{base}/{partition}/state")
            out[f"{topic}-{partition}"] = (stat.mzxid, json.loads(data)["controller_epoch"])
    return out


def test_sigstop_zombie_resigns_after_thaw(zk, processes):
    register_broker_1(zk)
    topic = b'{"version":3,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}'
    c1 = processes(1)
    c1.wait_serving()
    wait_until(lambda: c1.active() == 1.0, what="c1 active")
    zk.create("/brokers/topics/before", topic, makepath=True)
    wait_until(lambda: "before-0" in _state_znodes(zk), what="c1 writes before's state")
    c2 = processes(2)
    c2.wait_serving()
    c1.signal(signal.SIGSTOP)
    try:
        wait_until(
            lambda: c2.active() == 1.0,
            timeout=SESSION_TIMEOUT_MS / 1000 + 10,
            what="c2 takes over from the frozen c1",
        )
        # Work for both: c1 saw nothing of it; c2 writes it at its epoch.
        zk.create("/brokers/topics/during", topic)
        wait_until(lambda: "during-0" in _state_znodes(zk), what="c2 writes during's state")
    finally:
        c1.signal(signal.SIGCONT)
    takeover = zk.exists("/controller").czxid
    wait_until(lambda: c1.active() == 0.0, what="thawed zombie is not active")
    assert controller_in_zk(zk) == (2, 2)
    wait_until(
        lambda: '"to_state":"resigned"' in c1.state_change_log.read_text(),
        what="zombie recorded its resignation",
    )
    # Nothing the thawed zombie did reached ZooKeeper: every state written since the
    # takeover carries the new epoch.
    assert c1.proc.poll() is None, "the zombie keeps running"
    assert c2.active() == 1.0
    states = _state_znodes(zk)
    assert set(states) == {"before-0", "during-0"}
    assert all(epoch == 2 for mzxid, epoch in states.values() if mzxid > takeover), states


def test_sigterm_deletes_controller_znode_and_standby_takes_over_fast(zk, processes):
    c1 = processes(1)
    c1.wait_serving()
    wait_until(lambda: c1.active() == 1.0, what="c1 active")
    c2 = processes(2)
    c2.wait_serving()
    started = time.monotonic()
    assert c1.terminate() == 0
    wait_until(lambda: c2.active() == 1.0, timeout=10, what="standby active")
    elapsed = time.monotonic() - started
    # Well before c1's session could have timed out: its exit released /controller.
    assert elapsed < SESSION_TIMEOUT_MS / 1000, f"standby took {elapsed:.2f}s"
    assert controller_in_zk(zk) == (2, 2)


def test_malformed_controller_znode_is_reported_and_recovered(zk, processes):
    zk.create("/controller", b"{not json", makepath=True)  # persistent: it stays malformed
    c1 = processes(1)
    c1.wait_serving()
    wait_until(
        lambda: "malformed data in znode /controller" in c1.output(),
        what="an error naming /controller",
    )
    assert c1.active() == 0.0
    assert c1.proc.poll() is None
    # Repaired to name another controller (c1 stays a standby), then the node goes away:
    # c1 is elected.
    zk.set("/controller", codecs.encode_controller(7, 0))
    zk.delete("/controller")
    wait_until(lambda: c1.active() == 1.0, what="c1 elected after the repair")
    assert controller_in_zk(zk)[0] == 1


def test_malformed_controller_epoch_is_reported_and_recovered(zk, processes):
    zk.create("/controller_epoch", b"five", makepath=True)
    c1 = processes(1)
    c1.wait_serving()
    wait_until(
        lambda: "/controller_epoch" in c1.output() and "malformed" in c1.output(),
        what="an error naming /controller_epoch",
    )
    assert c1.active() == 0.0
    assert zk.exists("/controller") is None
    zk.set("/controller_epoch", b"5")
    wait_until(lambda: c1.active() == 1.0, timeout=15, what="c1 elected after the repair")
    assert controller_in_zk(zk) == (1, 6)
    registration = json.loads(zk.get("/controller")[0])
    assert registration["version"] == 2 and registration["kraftControllerEpoch"] == -1


def test_a_hand_written_controller_epoch_makes_the_active_controller_resign_and_re_elect(
    zk, processes
):
    # /controller still names c1, but /controller_epoch's version moved (same value written
    # back by hand): every fenced write fails. Kafka's controller stays active and stuck.
    c1 = processes(1)
    c1.wait_serving()
    wait_until(lambda: c1.active() == 1.0, timeout=15, what="c1 elected")
    _, epoch = controller_in_zk(zk)
    zk.set("/controller_epoch", str(epoch).encode())
    # A topic without an id: the controller gives it one with a fenced write.
    zk.create("/brokers/topics/t", b'{"version":2,"partitions":{"0":[1]}}', makepath=True)
    wait_until(
        lambda: controller_in_zk(zk) == (1, epoch + 1),
        timeout=20,
        what="c1 resigned and elected again with the next epoch",
    )
    wait_until(
        lambda: "topic_id" in json.loads(zk.get("/brokers/topics/t")[0]),
        timeout=15,
        what="the topic id written under the new epoch",
    )
    assert "/controller_epoch" in c1.output()
    assert c1.active() == 1.0
