"""Log-dir failures end to end (reference §2.11): a real ZooKeeper, a controller daemon,
reference brokers over real gRPC.

A broker's failed log dir reaches the controller two ways, and both must move leadership off
the broker's partitions on that dir while its other partitions stay where they are:

* the ``/log_dir_event_notification/log_dir_event_NNNNNNNNNN`` znode the broker writes, which
  makes the controller send LeaderAndIsr for all the broker's replicas to find out which ones;
* a KAFKA_STORAGE_ERROR in any LeaderAndIsr response (here: the ones a new controller sends at
  failover), with no notification at all.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.core.controller import Controller
from controller.core.events import Probe
from controller.core.model import TopicPartition
from controller.zk import paths
from tests.cluster import Cluster
from tests.support import wait_until

NO_AUTO_REBALANCE = {"auto.leader.rebalance.enable": "false"}
STEADY = {"replica_fetch_interval_ms": 100}
FAST = {"replica_lag_time_max_ms": 1000, "replica_fetch_interval_ms": 100}
T0, T1, T2, T3 = (TopicPartition("t", p) for p in range(4))
FAILED = [T0, T2]  # broker 1's failed dir: t-0 (it leads) and t-2 (it follows)


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


def start(cluster: Cluster, **broker_config: Any) -> None:
    """Brokers 1-3 and topic t: broker 1 leads t-0 and t-1, broker 2 leads t-2 and t-3."""
    for b in (1, 2, 3):
        cluster.start_broker(b, **(broker_config or STEADY))
    cluster.start_controller(0, **NO_AUTO_REBALANCE)
    cluster.active_controller()
    cluster.create_topic("t", {0: [1, 2, 3], 1: [1, 2, 3], 2: [2, 1, 3], 3: [2, 1, 3]})
    for p, leader in ((0, 1), (1, 1), (2, 2), (3, 2)):
        cluster.wait_state("t", p, leader=leader)


def offline_dirs(cluster: Cluster) -> dict[int, set[TopicPartition]]:
    return cluster.active_controller().controller.call(
        lambda c: {b: set(tps) for b, tps in c.context.replicas_on_offline_dirs.items() if tps}
    )


def log_dir_events(cluster: Cluster) -> list[str]:
    return sorted(cluster.zk.get_children(paths.LOG_DIR_EVENT_NOTIFICATION))


def assert_leadership_moved_off_the_failed_dir(cluster: Cluster) -> None:
    # t-0: broker 1 led it; the next ISR replica leads, and 1 is out of the ISR.
    s0 = cluster.wait_state("t", 0, leader=2, isr=[2, 3])
    assert s0["leader_epoch"] >= 1
    # t-2: broker 1 followed it; only the ISR loses it.
    s2 = cluster.wait_state("t", 2, leader=2, isr=[2, 3])
    # t-1 and t-3, on broker 1's healthy dir, are untouched.
    assert cluster.state("t", 1) == {
        "controller_epoch": 1, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1, 2, 3]
    }  # fmt: skip
    assert cluster.state("t", 3)["isr"] == [2, 1, 3]
    assert cluster.state("t", 3)["leader_epoch"] == 0
    assert s2["leader_epoch"] in (0, 1)  # 0 if broker 2 shrank it first (AlterPartition)
    # Every broker learns that broker 1's replicas of t-0 and t-2 are offline, and only those.
    expected = {T0: [1], T1: [], T2: [1], T3: []}

    def told() -> bool:
        for b in (1, 2, 3):
            meta = cluster.metadata(b)
            if {tp: list(meta[tp].offline_replicas) for tp in expected} != expected:
                return False
        return True

    wait_until(told, what="UpdateMetadata lists broker 1's failed replicas as offline")
    # Broker 1 still leads t-1 and keeps answering for it.
    assert cluster.hosted(1)[T1].role == 1  # PARTITION_ROLE_LEADER
    assert cluster.hosted(2)[T0].role == 1
    assert cluster.active_controller().metrics.snapshot.offline_partitions_count == 0


def test_log_dir_failure_notification_moves_leadership_off_the_failed_dir(cluster):
    start(cluster)
    daemon = cluster.active_controller()
    # Hold the controller so the broker's notification can be seen before it is consumed.
    gate, blocked = threading.Event(), threading.Event()

    def hold(ctl: Controller) -> None:
        blocked.set()
        gate.wait(20)

    daemon.controller.events.put(Probe(fn=hold))
    assert blocked.wait(10)
    try:
        cluster.brokers[1].fail_log_dir(FAILED)
        names = log_dir_events(cluster)
        assert len(names) == 1
        assert names[0].startswith("log_dir_event_") and len(names[0]) == len("log_dir_event_") + 10
        data = cluster.zk.get(f"{paths.LOG_DIR_EVENT_NOTIFICATION}/{names[0]}")[0]
        assert json.loads(data) == {"version": 1, "broker": 1, "event": 1}
    finally:
        gate.set()
    assert_leadership_moved_off_the_failed_dir(cluster)
    wait_until(lambda: log_dir_events(cluster) == [], what="notification deleted")
    assert offline_dirs(cluster) == {1: set(FAILED)}


def test_storage_error_in_a_leader_and_isr_response_is_enough(cluster):
    start(cluster)
    cversion = cluster.zk.exists(paths.LOG_DIR_EVENT_NOTIFICATION).cversion
    cluster.brokers[1].fail_log_dir(FAILED, notify=False)  # the controller is not told
    # A new controller sends every replica a LeaderAndIsr at failover; broker 1 answers
    # KAFKA_STORAGE_ERROR for the two partitions on its failed dir.
    cluster.start_controller(9, **NO_AUTO_REBALANCE)
    cluster.stop_controller(0)
    wait_until(lambda: cluster.controllers[9].controller.is_active, what="standby took over")
    s0 = cluster.wait_state("t", 0, leader=2, isr=[2, 3])
    assert s0["controller_epoch"] == 2
    cluster.wait_state("t", 2, leader=2, isr=[2, 3])
    assert cluster.state("t", 1)["leader"] == 1
    assert cluster.state("t", 1)["isr"] == [1, 2, 3]
    assert offline_dirs(cluster) == {1: set(FAILED)}
    # No notification was ever written.
    assert cluster.zk.exists(paths.LOG_DIR_EVENT_NOTIFICATION).cversion == cversion


def test_a_second_failed_dir_adds_to_the_first(cluster):
    start(cluster)
    cluster.brokers[1].fail_log_dir([T0])
    cluster.wait_state("t", 0, leader=2, isr=[2, 3])
    wait_until(lambda: offline_dirs(cluster) == {1: {T0}}, what="t-0 offline on broker 1")
    assert cluster.state("t", 1)["leader"] == 1
    cluster.brokers[1].fail_log_dir([T1])
    cluster.wait_state("t", 1, leader=2, isr=[2, 3])
    wait_until(lambda: offline_dirs(cluster) == {1: {T0, T1}}, what="both offline")
    assert cluster.state("t", 3)["isr"] == [2, 1, 3]


def test_malformed_log_dir_notifications_are_deleted_and_nothing_is_lost(cluster, capfd):
    start(cluster)
    daemon = cluster.active_controller()
    cluster.brokers[1].fail_log_dir(FAILED, notify=False)
    malformed = [
        cluster.zk.create(paths.LOG_DIR_EVENT_CREATE_PATH, data, sequence=True)
        for data in (
            b"not json",
            b'{"version":1,"broker":"one","event":1}',  # not a number
            b'{"version":1,"event":1}',  # no broker
            b"",
        )
    ]
    # Kafka reads only the broker: another version or event is still broker 1's failure.
    for data in (b'{"version":2,"broker":1,"event":1}', b'{"version":1,"broker":1,"event":7}'):
        cluster.zk.create(paths.LOG_DIR_EVENT_CREATE_PATH, data, sequence=True)
    # Well-formed, from a broker that is not registered.
    cluster.zk.create(
        paths.LOG_DIR_EVENT_CREATE_PATH, b'{"version":1,"broker":99,"event":1}', sequence=True
    )
    # The one well-formed notification, as broker 1 would have written it.
    cluster.zk.create(
        paths.LOG_DIR_EVENT_CREATE_PATH, b'{"version":1,"broker":1,"event":1}', sequence=True
    )
    wait_until(lambda: log_dir_events(cluster) == [], what="every notification deleted")
    assert_leadership_moved_off_the_failed_dir(cluster)
    assert daemon.controller.is_active
    logged = capfd.readouterr().out
    for path in malformed:
        assert f"path={path}" in logged or f"path='{path}'" in logged
    assert "ignoring log dir failures of brokers that are not registered" in logged
    cluster.create_topic("after", {0: [3, 2]})
    cluster.wait_state("after", 0, leader=3, isr=[3, 2])


def test_replicas_come_back_when_the_broker_restarts(cluster):
    start(cluster, **FAST)
    cluster.brokers[1].fail_log_dir(FAILED)
    cluster.wait_state("t", 0, leader=2, isr=[2, 3])
    cluster.wait_state("t", 2, leader=2, isr=[2, 3])
    # A restart with the dir repaired: the controller forgets the failed dir (onBrokerStartup)
    # and broker 1 follows again; fetching, it rejoins both ISRs through the leader.
    cluster.kill_broker(1)
    cluster.start_broker(1, **FAST)
    cluster.wait_state("t", 0, leader=2, isr=[2, 3, 1])
    cluster.wait_state("t", 2, leader=2, isr=[2, 3, 1])
    assert offline_dirs(cluster) == {}
    wait_until(
        lambda: all(not cluster.metadata(b)[T0].offline_replicas for b in (1, 2, 3)),
        what="no offline replicas any more",
    )
