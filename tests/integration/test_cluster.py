"""The core control loop end to end (issue: core control loop): a real ZooKeeper, a controller,
reference brokers over real gRPC; topic creation, broker failure and return, bounced brokers,
controller failover."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from controller.api.errors import Errors
from controller.api.v1 import broker_pb2, broker_pb2_grpc
from controller.core.controller import Controller
from controller.core.events import Probe
from controller.core.model import TopicPartition
from tests.cluster import Cluster
from tests.support import wait_until

ROLE_LEADER = broker_pb2.PARTITION_ROLE_LEADER
ROLE_FOLLOWER = broker_pb2.PARTITION_ROLE_FOLLOWER


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


def offline_count(cluster: Cluster) -> float:
    return cluster.active_controller().metrics.snapshot.offline_partitions_count


def three_brokers_and_topic(cluster: Cluster) -> None:
    for b in (1, 2, 3):
        cluster.start_broker(b)
    cluster.start_controller(0)
    cluster.active_controller()
    cluster.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    for p, leader in ((0, 1), (1, 2), (2, 3)):
        cluster.wait_state("t", p, leader=leader)


def test_new_topic_gets_preferred_leaders_full_isr_and_brokers_are_told(cluster):
    three_brokers_and_topic(cluster)
    assignment = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
    for p, replicas in assignment.items():
        state = cluster.state("t", p)
        # Kafka's JSON, exactly: version 1, writer's controller epoch, leader epoch 0.
        assert state == {
            "controller_epoch": 1,
            "leader": replicas[0],
            "version": 1,
            "leader_epoch": 0,
            "isr": replicas,
        }
    topic = cluster.zk.get("/brokers/topics/t")[0]
    assert b'"topic_id":"' in topic  # the controller gave the topic an id

    def brokers_caught_up() -> bool:
        for b in (1, 2, 3):
            hosted = cluster.hosted(b)
            if set(hosted) != {TopicPartition("t", p) for p in range(3)}:
                return False
            for tp, part in hosted.items():
                expected = ROLE_LEADER if assignment[tp.partition][0] == b else ROLE_FOLLOWER
                if part.role != expected or part.leader_epoch != 0 or not part.is_new:
                    return False
            if len(cluster.metadata(b)) != 3:
                return False
        return True

    wait_until(brokers_caught_up, what="every broker got LeaderAndIsr and UpdateMetadata")
    for b in (1, 2, 3):
        described = cluster.brokers[b].describe()
        assert described.controller_epoch == 1
        assert described.requests_received["LeaderAndIsr"] >= 1
        assert described.requests_received["UpdateMetadata"] >= 1
        for tp, state in cluster.metadata(b).items():
            assert state.leader == assignment[tp.partition][0]
            assert list(state.isr) == assignment[tp.partition]
    assert offline_count(cluster) == 0


def test_killed_broker_leadership_moves_to_next_isr_replica(cluster):
    three_brokers_and_topic(cluster)
    # OfflinePartitionsCount, sampled all through the move: the new leader is elected in the
    # same event that takes the old one offline, so the published count never leaves 0.
    samples: list[tuple[float, float]] = []  # (monotonic time, value)
    sampling = threading.Event()
    sampling.set()

    def sample() -> None:
        while sampling.is_set():
            samples.append((time.monotonic(), offline_count(cluster)))
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    wait_until(lambda: len(samples) >= 3, what="the sampler runs")
    killed = time.monotonic()
    cluster.kill_broker(1)
    # t-0 [1,2,3] was led by 1: the next live ISR replica in assignment order is 2.
    s0 = cluster.wait_state("t", 0, leader=2, isr=[2, 3])
    assert s0["leader_epoch"] == 1
    # t-1 [2,3,1] and t-2 [3,1,2] keep their leaders; 1 leaves their ISRs (epoch +1 each).
    s1 = cluster.wait_state("t", 1, isr=[2, 3])
    s2 = cluster.wait_state("t", 2, isr=[3, 2])
    assert (s1["leader"], s1["leader_epoch"]) == (2, 1)
    assert (s2["leader"], s2["leader_epoch"]) == (3, 1)

    def remaining_updated() -> bool:
        for b in (2, 3):
            meta = cluster.metadata(b)
            if meta[TopicPartition("t", 0)].leader != 2:
                return False
            if 1 in meta[TopicPartition("t", 1)].isr:
                return False
        return cluster.hosted(2)[TopicPartition("t", 0)].role == ROLE_LEADER

    wait_until(remaining_updated, what="brokers 2 and 3 learn the new leadership")
    moved = time.monotonic()
    sampling.clear()
    sampler.join(5)
    # Sampled during the move (how often depends on the machine's load, not on the code).
    during = [v for t, v in samples if killed <= t <= moved]
    assert during, "no sample taken between the kill and the brokers' update"
    assert max(v for _, v in samples) == 0, samples


def test_all_replicas_dead_keeps_last_isr_member_and_recovers_cleanly(cluster):
    for b in (1, 2):
        cluster.start_broker(b)
    cluster.start_controller(0)
    cluster.create_topic("u", {0: [1, 2]})
    cluster.wait_state("u", 0, leader=1, isr=[1, 2])
    cluster.kill_broker(1)
    cluster.wait_state("u", 0, leader=2, isr=[2])
    cluster.kill_broker(2)
    # Unclean election is off: no leader, and the ISR keeps its last member (pitfall 1).
    state = cluster.wait_state("u", 0, leader=-1, isr=[2])
    assert state["leader_epoch"] == 2
    wait_until(lambda: offline_count(cluster) == 1, what="one offline partition")
    # Broker 1 returns: it is not in the ISR, so the partition stays offline.
    cluster.start_broker(1)
    # The controller handled broker 1's return (its startup election attempt included):
    # a probe runs on the event thread, after the BrokerChange.
    active = cluster.active_controller().controller
    wait_until(
        lambda: active.call(lambda c: 1 in c.context.live_broker_ids()),
        what="the controller saw broker 1 return",
    )
    assert cluster.state("u", 0)["leader"] == -1
    assert offline_count(cluster) == 1
    # Broker 2, the last ISR member, returns: clean election.
    cluster.start_broker(2)
    state = cluster.wait_state("u", 0, leader=2)
    assert state["leader_epoch"] == 3
    # The election wrote ISR [2]; broker 1 then follows 2 again, fetches, and its leader
    # adds it back through AlterPartition (no new leader epoch), possibly before we look.
    assert state["isr"] in ([2], [2, 1])
    cluster.wait_state("u", 0, leader=2, isr=[2, 1], leader_epoch=3)
    wait_until(lambda: offline_count(cluster) == 0, what="no offline partitions")


def test_topic_creation_with_an_offline_replica(cluster):
    for b in (1, 2):
        cluster.start_broker(b)
    cluster.start_controller(0)
    cluster.create_topic("o", {0: [3, 1, 2]})  # broker 3 is not registered
    state = cluster.wait_state("o", 0, leader=1)
    assert state["isr"] == [1, 2]
    # Broker 3 arrives later: it gets the partition as a follower; leadership stays.
    cluster.start_broker(3)
    wait_until(
        lambda: (
            cluster.hosted(3).get(TopicPartition("o", 0)) is not None
            and cluster.hosted(3)[TopicPartition("o", 0)].role == ROLE_FOLLOWER
        ),
        what="broker 3 follows o-0",
    )
    assert cluster.state("o", 0)["leader"] == 1


def test_partition_expansion(cluster):
    three_brokers_and_topic(cluster)
    data = cluster.zk.get("/brokers/topics/t")[0]
    import json

    topic = json.loads(data)
    topic["partitions"]["3"] = [1, 3, 2]
    cluster.zk.set("/brokers/topics/t", json.dumps(topic).encode())
    state = cluster.wait_state("t", 3, leader=1)
    assert state["isr"] == [1, 3, 2]
    assert state["leader_epoch"] == 0
    wait_until(lambda: TopicPartition("t", 3) in cluster.hosted(2), what="broker 2 hosts t-3")


def test_bounced_broker_is_treated_as_failed_then_started(cluster):
    three_brokers_and_topic(cluster)
    daemon = cluster.active_controller()
    old_epoch = cluster.brokers[2].broker_epoch
    gate, blocked = threading.Event(), threading.Event()

    def block(ctl: Controller) -> None:
        blocked.set()
        gate.wait(20)

    daemon.controller.events.put(Probe(fn=block))
    assert blocked.wait(10)
    # Broker 2 re-registers (a new czxid) while the controller is busy.
    registrar = cluster.brokers[2].registrar
    registrar.stop(deregister=True)
    registrar.start()
    wait_until(lambda: cluster.brokers[2].broker_epoch > old_epoch, what="new broker epoch")
    gate.set()
    new_epoch = cluster.brokers[2].broker_epoch
    wait_until(
        lambda: (
            daemon.controller.call(lambda c: c.context.live_broker_id_and_epochs()[2]) == new_epoch
        ),
        what="controller caches the new epoch",
    )
    # Failed-then-started: broker 2 left t-1's leadership (t-1 [2,3,1]) and got it back later
    # through a new election is not required; what is required is the failure path ran: the
    # ISR shrink removed 2 (a leader epoch bump) and the start-up sent it LeaderAndIsr again.
    scl = (Path(daemon.config.log_dir) / "state-change.log").read_text()
    assert '"replica":2,"from_state":"OnlineReplica","to_state":"OfflineReplica"' in scl
    assert '"replica":2,"from_state":"OfflineReplica","to_state":"OnlineReplica"' in scl
    state = cluster.state("t", 1)
    assert state["leader"] == 3  # t-1's leader 2 failed: the next ISR replica took over
    assert state["leader_epoch"] >= 1
    wait_until(lambda: cluster.brokers[2].describe().broker_epoch == new_epoch)


def test_new_controller_keeps_live_leaders_and_updates_every_broker(cluster):
    three_brokers_and_topic(cluster)
    cluster.start_controller(9)
    before = {p: cluster.state("t", p) for p in range(3)}
    umr_before = {
        b: cluster.brokers[b].describe().requests_received["UpdateMetadata"] for b in (1, 2, 3)
    }
    cluster.stop_controller(0)
    new = wait_until(lambda: cluster.controllers[9].controller.is_active, what="standby active")
    assert new
    wait_until(
        lambda: all(cluster.brokers[b].describe().controller_epoch == 2 for b in (1, 2, 3)),
        what="every broker hears from the new controller",
    )
    # Kafka's failover step 7: UpdateMetadata to every live broker, with all of them in it.
    wait_until(
        lambda: all(
            cluster.brokers[b].describe().requests_received["UpdateMetadata"] > umr_before[b]
            for b in (1, 2, 3)
        ),
        what="UpdateMetadata from the new controller on every broker",
    )
    for b in (1, 2, 3):
        assert {m.id for m in cluster.brokers[b].describe().live_brokers} == {1, 2, 3}
    for p in range(3):
        after = cluster.state("t", p)
        assert (after["leader"], after["leader_epoch"], after["isr"]) == (
            before[p]["leader"],
            before[p]["leader_epoch"],
            before[p]["isr"],
        )
    states = cluster.controllers[9].controller.call(
        lambda c: {tp: c.context.partition_state(tp).name for tp in c.context.all_partitions()}
    )
    assert set(states.values()) == {"OnlinePartition"}


def test_broker_rejects_a_stale_controller_epoch_after_failover(cluster):
    three_brokers_and_topic(cluster)
    cluster.start_controller(9)
    cluster.stop_controller(0)
    wait_until(lambda: cluster.brokers[1].describe().controller_epoch == 2)
    broker = cluster.brokers[1]
    # A request as the deposed controller (epoch 1) would send it.
    with grpc.insecure_channel(broker.address) as channel:
        stub = broker_pb2_grpc.BrokerServiceStub(channel)
        response = stub.LeaderAndIsr(
            broker_pb2.LeaderAndIsrRequest(
                controller_id=0, controller_epoch=1, broker_epoch=broker.broker_epoch
            ),
            timeout=5,
        )
    assert response.error_code == Errors.STALE_CONTROLLER_EPOCH
