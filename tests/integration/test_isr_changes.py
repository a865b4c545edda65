"""ISR changes end to end (reference §2.10): a real ZooKeeper, a controller daemon, reference
brokers over real gRPC.

* AlterPartition sent straight to the controller's gRPC port, rule by rule of the validation
  ladder, with Kafka's exact error codes, and the znodes left untouched by every refusal;
* successful shrinks and expansions: partition epoch +1, leader epoch unchanged, every broker
  told; the conditional write losing to another writer (INVALID_UPDATE_VERSION);
* the reference brokers doing it themselves: a follower that stops fetching (paused, told to
  stop, crashed) leaves the ISR through its leader's AlterPartition, and rejoins once it
  fetches again;
* ``/isr_change_notification`` written the way Kafka's pre-2.7 brokers write it: processed and
  deleted; malformed ones logged and deleted while the controller keeps serving.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from kazoo.client import KazooClient

from controller.api.errors import Errors
from controller.api.v1 import broker_pb2, broker_pb2_grpc, controller_pb2, controller_pb2_grpc
from controller.core.model import TopicPartition
from controller.zk import paths
from controller.zk.server import ZooKeeperHandle
from tests.cluster import Cluster
from tests.support import kazoo, wait_until

NO_AUTO_REBALANCE = {"auto.leader.rebalance.enable": "false"}
# Fast replication for tests: a follower fetches every 100 ms and is out of sync after 1 s.
FAST = {"replica_lag_time_max_ms": 1000, "replica_fetch_interval_ms": 100}
# Followers fetch often, but leaders never shrink during a test: nothing moves unless the
# test moves it.
STEADY = {"replica_fetch_interval_ms": 100}
RECOVERING = 1
UNKNOWN_ID = "AAAAAAAAAAAAAAAAAAAAAA"
T0, T1, F0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("f", 0)


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


# -- helpers ---------------------------------------------------------------------------------


def state_and_version(cluster: Cluster, tp: TopicPartition) -> tuple[dict[str, Any], int]:
    data, stat = cluster.zk.get(paths.partition_state_path(tp.topic, tp.partition))
    return json.loads(data), stat.version


def topic_id(cluster: Cluster, topic: str) -> str:
    return json.loads(cluster.zk.get(paths.topic_path(topic))[0])["topic_id"]


def partition(
    index: int,
    leader_epoch: int,
    partition_epoch: int,
    isr: list[int],
    recovery: int = 0,
) -> controller_pb2.AlterPartitionPartitionData:
    return controller_pb2.AlterPartitionPartitionData(
        partition_index=index,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        new_isr_with_epochs=[controller_pb2.BrokerState(broker_id=b, broker_epoch=-1) for b in isr],
        leader_recovery_state=recovery,
    )


def by_name(topic: str, *partitions: Any) -> controller_pb2.AlterPartitionTopicData:
    return controller_pb2.AlterPartitionTopicData(topic_name=topic, partitions=partitions)


def by_id(tid: str, *partitions: Any) -> controller_pb2.AlterPartitionTopicData:
    return controller_pb2.AlterPartitionTopicData(topic_id=tid, partitions=partitions)


def alter(
    cluster: Cluster, broker_id: int, *topics: Any, broker_epoch: int | None = None
) -> controller_pb2.AlterPartitionResponse:
    """One AlterPartition to the active controller, as broker ``broker_id`` would send it."""
    epoch = cluster.brokers[broker_id].broker_epoch if broker_epoch is None else broker_epoch
    request = controller_pb2.AlterPartitionRequest(
        broker_id=broker_id, broker_epoch=epoch, topics=topics
    )
    with grpc.insecure_channel(cluster.active_controller().grpc.address) as channel:
        return controller_pb2_grpc.ControllerServiceStub(channel).AlterPartition(
            request, timeout=10
        )


def only_partition(
    response: controller_pb2.AlterPartitionResponse,
) -> controller_pb2.AlterPartitionPartitionResponse:
    assert response.error_code == Errors.NONE
    assert len(response.topics) == 1 and len(response.topics[0].partitions) == 1
    return response.topics[0].partitions[0]


def cached(cluster: Cluster, tp: TopicPartition) -> Any:
    """The controller's cached leadership of ``tp`` (read on its event thread)."""
    return cluster.active_controller().controller.call(
        lambda c: c.context.partition_leader_and_isr(tp)
    )


def metadata_isr(cluster: Cluster, broker_id: int, tp: TopicPartition) -> tuple[list[int], int]:
    state = cluster.metadata(broker_id).get(tp)
    return (list(state.isr), state.zk_version) if state is not None else ([], -1)


# -- the validation ladder, rule by rule -----------------------------------------------------


@dataclass
class Ladder:
    cluster: Cluster
    t_id: str
    f_id: str
    znodes: dict[TopicPartition, tuple[dict[str, Any], int]]

    def unchanged(self) -> bool:
        return all(state_and_version(self.cluster, tp) == v for tp, v in self.znodes.items())


@pytest.fixture(scope="module")
def ladder(
    zk_server: ZooKeeperHandle, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Ladder]:
    """One cluster for every refusal (a refusal writes nothing, so cases cannot interfere):

    * t-0 [1,2,3], leader 1, ISR [1,2,3], leader epoch 0, partition epoch 0;
    * t-1 [1,2,3,4], broker 4 never registered: ISR [1,2,3];
    * f-0 [1,5]: broker 5 died, so the controller removed it: ISR [1], epochs 1 and 1.
    """
    chroot = f"{zk_server.chroot}/zkc-ladder-{uuid.uuid4().hex}"
    admin: KazooClient = kazoo(zk_server.hosts)
    admin.ensure_path(chroot)
    admin.stop()
    c = Cluster(f"{zk_server.hosts}{chroot}", tmp_path_factory.mktemp("ladder"))
    try:
        for b in (1, 2, 3, 5):
            c.start_broker(b, **STEADY)
        c.start_controller(0, **NO_AUTO_REBALANCE)
        c.active_controller()
        c.create_topic("t", {0: [1, 2, 3], 1: [1, 2, 3, 4]})
        c.create_topic("f", {0: [1, 5]})
        c.wait_state("t", 0, leader=1, isr=[1, 2, 3])
        c.wait_state("t", 1, leader=1, isr=[1, 2, 3])
        c.wait_state("f", 0, leader=1, isr=[1, 5])
        c.kill_broker(5)
        c.wait_state("f", 0, leader=1, isr=[1], leader_epoch=1)
        assert state_and_version(c, F0)[1] == 1
        znodes = {tp: state_and_version(c, tp) for tp in (T0, T1, F0)}
        yield Ladder(c, topic_id(c, "t"), topic_id(c, "f"), znodes)
    finally:
        c.close()


LADDER_CASES = [
    # (name, requesting broker, topic data (built from the Ladder), expected error)
    ("rule 1: unknown partition", 1, lambda x: by_name("t", partition(9, 0, 0, [1])),
     Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ("rule 1: unknown topic name", 1, lambda x: by_name("nope", partition(0, 0, 0, [1])),
     Errors.UNKNOWN_TOPIC_OR_PARTITION),
    ("unknown topic id", 1, lambda x: by_id(UNKNOWN_ID, partition(0, 0, 0, [1])),
     Errors.UNKNOWN_TOPIC_ID),
    ("rule 2: partition epoch ahead", 1, lambda x: by_id(x.t_id, partition(0, 0, 1, [1, 2])),
     Errors.NOT_CONTROLLER),
    ("rule 2: leader epoch ahead", 1, lambda x: by_id(x.t_id, partition(0, 1, 0, [1, 2])),
     Errors.NOT_CONTROLLER),
    ("rule 3: older leader epoch", 1, lambda x: by_id(x.f_id, partition(0, 0, 1, [1])),
     Errors.FENCED_LEADER_EPOCH),
    ("rule 5: older partition epoch", 1, lambda x: by_id(x.f_id, partition(0, 1, 0, [1, 5])),
     Errors.INVALID_UPDATE_VERSION),
    ("rule 6: RECOVERING with an ISR of two", 1,
     lambda x: by_id(x.t_id, partition(0, 0, 0, [1, 2], RECOVERING)), Errors.INVALID_REQUEST),
    ("rule 7: RECOVERED back to RECOVERING", 1,
     lambda x: by_id(x.t_id, partition(0, 0, 0, [1], RECOVERING)), Errors.INVALID_REQUEST),
    ("rule 8: ISR without the leader", 1, lambda x: by_id(x.t_id, partition(0, 0, 0, [2, 3])),
     Errors.INVALID_REQUEST),
    ("rule 8: ISR with a broker twice", 1, lambda x: by_id(x.t_id, partition(0, 0, 0, [1, 2, 2])),
     Errors.INVALID_REQUEST),
    ("rule 8: ISR with a non-replica", 1, lambda x: by_id(x.t_id, partition(0, 0, 0, [1, 2, 5])),
     Errors.INVALID_REQUEST),
    ("rule 8: not the leader", 2, lambda x: by_id(x.t_id, partition(0, 0, 0, [2, 3])),
     Errors.INVALID_REQUEST),
    ("rule 9: a replica that never registered", 1,
     lambda x: by_id(x.t_id, partition(1, 0, 0, [1, 2, 3, 4])), Errors.INELIGIBLE_REPLICA),
    ("rule 9: a replica that died", 1, lambda x: by_id(x.f_id, partition(0, 1, 1, [1, 5])),
     Errors.INELIGIBLE_REPLICA),
    ("a partition listed twice", 1,
     lambda x: by_id(x.t_id, partition(0, 0, 0, [1, 2]), partition(0, 0, 0, [1, 3])),
     Errors.INVALID_REQUEST),
    ("an unknown recovery state value", 1, lambda x: by_id(x.t_id, partition(0, 0, 0, [1], 7)),
     Errors.INVALID_REQUEST),
]  # fmt: skip


@pytest.mark.parametrize(
    ("broker", "topic", "error"),
    [case[1:] for case in LADDER_CASES],
    ids=[case[0] for case in LADDER_CASES],
)
def test_ladder_refusals_have_kafkas_codes_and_write_nothing(ladder, broker, topic, error):
    response = alter(ladder.cluster, broker, topic(ladder))
    assert response.error_code == Errors.NONE
    codes = [p.error_code for t in response.topics for p in t.partitions]
    assert codes == [error]
    answer = response.topics[0].partitions[0]
    # A refusal carries no state.
    assert (answer.leader_id, answer.leader_epoch, list(answer.isr)) == (0, 0, [])
    assert ladder.unchanged()
    assert ladder.cluster.active_controller().controller.is_active


def test_idempotent_retry_returns_the_current_state(ladder):
    # f-0 is at partition epoch 1; a retry of [1] at leader epoch 1 carrying the partition
    # epoch it was sent with (0) is what a leader sends when the answer to its change was lost.
    answer = only_partition(alter(ladder.cluster, 1, by_id(ladder.f_id, partition(0, 1, 0, [1]))))
    assert answer.error_code == Errors.NONE
    assert (answer.leader_id, answer.leader_epoch, list(answer.isr)) == (1, 1, [1])
    assert answer.partition_epoch == 1  # the current one, not the request's
    assert ladder.unchanged()


@pytest.mark.parametrize("epoch_delta", [-1, +1])
def test_stale_or_newer_broker_epoch_is_refused_as_a_whole(ladder, epoch_delta):
    epoch = ladder.cluster.brokers[1].broker_epoch + epoch_delta
    response = alter(
        ladder.cluster, 1, by_id(ladder.t_id, partition(0, 0, 0, [1, 2])), broker_epoch=epoch
    )
    assert response.error_code == Errors.STALE_BROKER_EPOCH
    assert list(response.topics) == []
    assert ladder.unchanged()


def test_unknown_or_dead_broker_is_a_stale_broker_epoch(ladder):
    for broker_id, epoch in ((9, 1), (5, -1)):
        request = controller_pb2.AlterPartitionRequest(
            broker_id=broker_id,
            broker_epoch=epoch,
            topics=[by_id(ladder.t_id, partition(0, 0, 0, [1]))],
        )
        address = ladder.cluster.active_controller().grpc.address
        with grpc.insecure_channel(address) as channel:
            response = controller_pb2_grpc.ControllerServiceStub(channel).AlterPartition(
                request, timeout=10
            )
        assert response.error_code == Errors.STALE_BROKER_EPOCH
    assert ladder.unchanged()


def test_response_is_grouped_by_topic_as_requested(ladder):
    response = alter(
        ladder.cluster,
        1,
        by_id(ladder.t_id, partition(0, 0, 0, [1, 2, 3]), partition(9, 0, 0, [1])),
        by_name("f", partition(0, 0, 1, [1])),
        by_id(UNKNOWN_ID, partition(0, 0, 0, [1]), partition(1, 0, 0, [1])),
    )
    assert response.error_code == Errors.NONE
    got = [
        (t.topic_id, t.topic_name, [(p.partition_index, p.error_code) for p in t.partitions])
        for t in response.topics
    ]
    assert got == [
        # By id: echoed, with the name it resolved to.
        (ladder.t_id, "t", [(0, Errors.NONE), (9, Errors.UNKNOWN_TOPIC_OR_PARTITION)]),
        # By name: echoed.
        ("", "f", [(0, Errors.FENCED_LEADER_EPOCH)]),
        # An unknown id: every partition gets UNKNOWN_TOPIC_ID, and no name.
        (UNKNOWN_ID, "", [(0, Errors.UNKNOWN_TOPIC_ID), (1, Errors.UNKNOWN_TOPIC_ID)]),
    ]
    current = response.topics[0].partitions[0]  # t-0 asked for exactly its current state
    assert (list(current.isr), current.partition_epoch) == ([1, 2, 3], 0)
    assert ladder.unchanged()


# -- successful changes ----------------------------------------------------------------------


def steady_cluster(cluster: Cluster) -> None:
    for b in (1, 2, 3):
        cluster.start_broker(b, **STEADY)
    cluster.start_controller(0, **NO_AUTO_REBALANCE)
    cluster.active_controller()
    cluster.create_topic("t", {0: [1, 2, 3]})
    cluster.wait_state("t", 0, leader=1, isr=[1, 2, 3])
    wait_until(
        lambda: all(metadata_isr(cluster, b, T0) == ([1, 2, 3], 0) for b in (1, 2, 3)),
        what="every broker caches t-0",
    )


def test_shrink_and_expand_bump_the_partition_epoch_but_not_the_leader_epoch(cluster):
    steady_cluster(cluster)
    tid = topic_id(cluster, "t")
    before, version = state_and_version(cluster, T0)
    answer = only_partition(alter(cluster, 1, by_id(tid, partition(0, 0, 0, [1, 2]))))
    assert answer.error_code == Errors.NONE
    assert (answer.leader_id, answer.leader_epoch, list(answer.isr)) == (1, 0, [1, 2])
    assert (answer.partition_epoch, answer.leader_recovery_state) == (1, 0)
    after, new_version = state_and_version(cluster, T0)
    assert new_version == version + 1
    # Kafka's znode, rewritten by this controller; only the ISR changed.
    assert after == {**before, "isr": [1, 2], "controller_epoch": 1}
    assert cached(cluster, T0).isr == (1, 2) and cached(cluster, T0).partition_epoch == 1
    # Every broker is told (UpdateMetadata); nobody gets a LeaderAndIsr for it.
    wait_until(
        lambda: all(metadata_isr(cluster, b, T0) == ([1, 2], 1) for b in (1, 2, 3)),
        what="UpdateMetadata with the new ISR on every broker",
    )
    assert all(cluster.hosted(b)[T0].leader_epoch == 0 for b in (1, 2, 3))

    answer = only_partition(alter(cluster, 1, by_id(tid, partition(0, 0, 1, [1, 2, 3]))))
    assert (answer.error_code, list(answer.isr), answer.partition_epoch) == (
        Errors.NONE,
        [1, 2, 3],
        2,
    )
    assert state_and_version(cluster, T0) == ({**before, "controller_epoch": 1}, version + 2)
    wait_until(
        lambda: all(metadata_isr(cluster, b, T0) == ([1, 2, 3], 2) for b in (1, 2, 3)),
        what="UpdateMetadata with the expanded ISR on every broker",
    )
    # The same change again, after it was applied: answered with the current state.
    again = only_partition(alter(cluster, 1, by_id(tid, partition(0, 0, 1, [1, 2, 3]))))
    assert (again.error_code, again.partition_epoch) == (Errors.NONE, 2)
    assert state_and_version(cluster, T0)[1] == version + 2


def test_clearing_recovering_through_alter_partition(cluster):
    steady_cluster(cluster)
    # A leader that was elected uncleanly (legacy write + notification, see below).
    write_behind_the_controllers_back(cluster, T0, isr=[1], leader_recovery_state=RECOVERING)
    notify_isr_change(cluster, [T0])
    wait_until(lambda: cached(cluster, T0).isr == (1,), what="controller refreshed t-0")
    answer = only_partition(alter(cluster, 1, by_name("t", partition(0, 0, 1, [1, 2]))))
    assert (answer.error_code, answer.leader_recovery_state, list(answer.isr)) == (
        Errors.NONE,
        0,
        [1, 2],
    )
    state, version = state_and_version(cluster, T0)
    assert "leader_recovery_state" not in state  # RECOVERED is written by leaving it out
    assert (state["isr"], version) == ([1, 2], 2)


def write_behind_the_controllers_back(cluster: Cluster, tp: TopicPartition, **changes: Any) -> int:
    """A pre-AlterPartition leader's own ISR write: a conditional setData of the state znode
    that keeps everything but what it changes. Returns the new zkVersion."""
    state, version = state_and_version(cluster, tp)
    state.update(changes)
    path = paths.partition_state_path(tp.topic, tp.partition)
    return cluster.zk.set(path, json.dumps(state).encode(), version=version).version


def notify_isr_change(cluster: Cluster, partitions: list[TopicPartition]) -> str:
    data = {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    return cluster.zk.create(paths.ISR_CHANGE_CREATE_PATH, json.dumps(data).encode(), sequence=True)


def test_losing_the_conditional_write_is_invalid_update_version(cluster):
    steady_cluster(cluster)
    tid = topic_id(cluster, "t")
    # Someone else rewrites the state without telling the controller: its cache still says
    # partition epoch 0, so the request passes the ladder and the write itself fails.
    assert write_behind_the_controllers_back(cluster, T0, isr=[1, 3]) == 1
    answer = only_partition(alter(cluster, 1, by_id(tid, partition(0, 0, 0, [1, 2]))))
    assert answer.error_code == Errors.INVALID_UPDATE_VERSION
    assert (list(answer.isr), answer.partition_epoch) == ([], 0)
    assert state_and_version(cluster, T0)[0]["isr"] == [1, 3]  # the other write stands
    # Once the controller learns the new state, a request at its epoch goes through.
    notify_isr_change(cluster, [T0])
    wait_until(lambda: cached(cluster, T0).partition_epoch == 1, what="controller refreshed")
    answer = only_partition(alter(cluster, 1, by_id(tid, partition(0, 0, 1, [1, 2]))))
    assert (answer.error_code, list(answer.isr), answer.partition_epoch) == (
        Errors.NONE,
        [1, 2],
        2,
    )


def test_alter_partition_on_a_standby_is_not_controller(cluster):
    steady_cluster(cluster)
    standby = cluster.start_controller(9, **NO_AUTO_REBALANCE)
    wait_until(lambda: standby.controller.active_controller_id == 0, what="standby knows 0")
    request = controller_pb2.AlterPartitionRequest(
        broker_id=1,
        broker_epoch=cluster.brokers[1].broker_epoch,
        topics=[by_name("t", partition(0, 0, 0, [1, 2]))],
    )
    with grpc.insecure_channel(standby.grpc.address) as channel:
        response, call = controller_pb2_grpc.ControllerServiceStub(
            channel
        ).AlterPartition.with_call(request, timeout=10)
    assert response.error_code == Errors.NOT_CONTROLLER
    assert ("controller-id", "0") in tuple(call.trailing_metadata())
    assert state_and_version(cluster, T0)[1] == 0


# -- the reference brokers do it themselves --------------------------------------------------


def fast_cluster(cluster: Cluster, brokers: tuple[int, ...] = (1, 2, 3)) -> None:
    for b in brokers:
        cluster.start_broker(b, **FAST)
    cluster.start_controller(0, **NO_AUTO_REBALANCE)
    cluster.active_controller()
    cluster.create_topic("t", {0: [1, 2, 3]})
    cluster.wait_state("t", 0, leader=1, isr=[1, 2, 3])


def test_paused_follower_leaves_the_isr_and_rejoins_when_it_fetches_again(cluster):
    fast_cluster(cluster)
    cluster.brokers[3].replication.fetcher.pause()
    # The leader's AlterPartition: partition epoch +1, leader epoch and leader unchanged.
    state = cluster.wait_state("t", 0, isr=[1, 2], timeout=10)
    assert (state["leader"], state["leader_epoch"]) == (1, 0)
    assert state_and_version(cluster, T0)[1] == 1
    # The leader applied the answer to its partition table; every broker was told.
    wait_until(
        lambda: (cluster.hosted(1)[T0].isr, cluster.hosted(1)[T0].partition_epoch) == ([1, 2], 1),
        what="leader applied its ISR change",
    )
    wait_until(lambda: metadata_isr(cluster, 3, T0) == ([1, 2], 1), what="broker 3 told")
    cluster.brokers[3].replication.fetcher.resume()
    # Caught up at the current leader epoch: back in, well within the lag time.
    state = cluster.wait_state("t", 0, isr=[1, 2, 3], timeout=3.0)
    assert (state["leader"], state["leader_epoch"]) == (1, 0)
    assert state_and_version(cluster, T0)[1] == 2
    wait_until(lambda: cluster.hosted(1)[T0].partition_epoch == 2, what="leader applied it")


def test_follower_told_to_stop_leaves_the_isr_and_rejoins_after_restarting(cluster):
    fast_cluster(cluster)
    follower = cluster.brokers[3]
    described = follower.describe()
    # A StopReplica(delete=false) as the controller sends it: the follower stops fetching.
    with grpc.insecure_channel(follower.address) as channel:
        response = broker_pb2_grpc.BrokerServiceStub(channel).StopReplica(
            broker_pb2.StopReplicaRequest(
                controller_id=0,
                controller_epoch=described.controller_epoch,
                broker_epoch=follower.broker_epoch,
                topic_states=[
                    broker_pb2.StopReplicaTopicState(
                        topic_name="t",
                        partition_states=[
                            broker_pb2.StopReplicaPartitionState(
                                partition_index=0, leader_epoch=0, delete_partition=False
                            )
                        ],
                    )
                ],
            ),
            timeout=5,
        )
    assert [p.error_code for p in response.partition_errors] == [Errors.NONE]
    assert cluster.hosted(3)[T0].role == broker_pb2.PARTITION_ROLE_STOPPED
    state = cluster.wait_state("t", 0, isr=[1, 2], timeout=10)
    assert state["leader_epoch"] == 0
    # A stopped replica resumes only with a newer leader epoch, or a fresh process: restart
    # it. The controller's LeaderAndIsr makes it a follower again; it fetches and rejoins.
    cluster.kill_broker(3)
    cluster.start_broker(3, **FAST)
    state = cluster.wait_state("t", 0, isr=[1, 2, 3], timeout=10)
    # Broker 3 was out of the ISR when it died: the controller had nothing to remove, so no
    # leader epoch moved anywhere in this story.
    assert (state["leader"], state["leader_epoch"]) == (1, 0)


def test_crashed_follower_leaves_through_its_leader_before_its_session_expires(cluster):
    fast_cluster(cluster)
    cluster.crash_broker(3)  # no more fetches; /brokers/ids/3 stays until the session ends
    state = cluster.wait_state("t", 0, isr=[1, 2], timeout=10)
    assert state["leader_epoch"] == 0
    assert cluster.zk.exists(paths.broker_path(3)) is not None  # the leader was first
    cluster.kill_broker(3)  # the session ends: the controller's OfflineReplica
    wait_until(
        lambda: cluster.active_controller().controller.call(
            lambda c: 3 not in c.context.live_or_shutting_down_broker_ids()
        ),
        what="controller saw broker 3 go",
    )
    # Not in the ISR any more: the controller's ISR removal had nothing to do (no epoch bump).
    assert state_and_version(cluster, T0) == (state, 1)
    cluster.start_broker(3, **FAST)
    state = cluster.wait_state("t", 0, isr=[1, 2, 3], timeout=10)
    assert state["leader_epoch"] == 0


def test_isr_change_follows_the_controller_through_a_failover(cluster):
    fast_cluster(cluster)
    cluster.start_controller(9, **NO_AUTO_REBALANCE)
    cluster.stop_controller(0)
    wait_until(lambda: cluster.controllers[9].controller.is_active, what="standby took over")
    cluster.brokers[2].replication.fetcher.pause()
    # The leader's AlterPartition reaches the new controller, which writes with its epoch.
    state = cluster.wait_state("t", 0, isr=[1, 3], timeout=10)
    assert (state["controller_epoch"], state["leader_epoch"]) == (2, 0)
    cluster.brokers[2].replication.fetcher.resume()
    cluster.wait_state("t", 0, isr=[1, 3, 2], timeout=5)


def test_leader_that_lost_the_race_waits_for_the_next_leader_and_isr(cluster):
    fast_cluster(cluster)
    # Another writer changes the state behind everyone's back; the controller learns it (the
    # notification) but the leader does not: its partition epoch is now stale.
    write_behind_the_controllers_back(cluster, T0, isr=[1, 3])
    notify_isr_change(cluster, [T0])
    wait_until(lambda: cached(cluster, T0).partition_epoch == 1, what="controller refreshed")
    # Broker 3 stops fetching: the leader proposes [1, 2] at partition epoch 0, is refused,
    # and proposes nothing more for the partition until a LeaderAndIsr supersedes its state.
    cluster.brokers[3].replication.fetcher.pause()
    wait_until(
        lambda: (
            (cluster.brokers[1].replication.leader_view(T0) or {}).get("frozen_by")
            == "INVALID_UPDATE_VERSION"
        ),
        timeout=10,
        what="the leader's shrink refused",
    )
    assert state_and_version(cluster, T0) == (state_and_version(cluster, T0)[0], 1)
    assert state_and_version(cluster, T0)[0]["isr"] == [1, 3]
    # The controller removes broker 3 itself when it dies (leader epoch 1): the LeaderAndIsr
    # reaches the leader, whose bookkeeping starts afresh; broker 2, fetching at the new
    # epoch, is added back through the leader's AlterPartition.
    cluster.kill_broker(3)
    state = cluster.wait_state("t", 0, isr=[1, 2], timeout=10)
    assert state["leader_epoch"] == 1
    assert cluster.brokers[1].replication.leader_view(T0)["frozen_by"] is None


# -- /isr_change_notification ----------------------------------------------------------------


def isr_notifications(cluster: Cluster) -> list[str]:
    return sorted(cluster.zk.get_children(paths.ISR_CHANGE_NOTIFICATION))


def test_isr_change_notifications_refresh_the_cache_tell_brokers_and_are_deleted(cluster):
    steady_cluster(cluster)
    cluster.create_topic("u", {0: [2, 3, 1]})
    cluster.wait_state("u", 0, leader=2)
    t_version = write_behind_the_controllers_back(cluster, T0, isr=[1, 3])
    u0 = TopicPartition("u", 0)
    u_version = write_behind_the_controllers_back(cluster, u0, isr=[2, 1])
    # Kafka's broker batches partitions into one sequential znode, several znodes at times.
    first = notify_isr_change(cluster, [T0])
    second = notify_isr_change(cluster, [u0, T0])
    assert first.rsplit("/", 1)[1].startswith("isr_change_")
    assert len(first.rsplit("isr_change_", 1)[1]) == 10  # ten-digit sequence
    assert second > first
    wait_until(lambda: isr_notifications(cluster) == [], what="notifications deleted")
    assert (cached(cluster, T0).isr, cached(cluster, T0).partition_epoch) == ((1, 3), t_version)
    assert (cached(cluster, u0).isr, cached(cluster, u0).partition_epoch) == ((2, 1), u_version)
    wait_until(
        lambda: all(
            metadata_isr(cluster, b, T0) == ([1, 3], t_version)
            and metadata_isr(cluster, b, u0) == ([2, 1], u_version)
            for b in (1, 2, 3)
        ),
        what="every broker told",
    )


def test_malformed_isr_change_notifications_are_deleted_and_nothing_is_lost(cluster, capfd):
    steady_cluster(cluster)
    daemon = cluster.active_controller()
    version = write_behind_the_controllers_back(cluster, T0, isr=[1, 2])
    malformed = [
        cluster.zk.create(paths.ISR_CHANGE_CREATE_PATH, data, sequence=True)
        for data in (
            b"not json at all",
            b'{"version":1,"partitions":"t-0"}',  # wrong shape
            b'{"version":1,"partitions":[{"topic":"t"}]}',  # no partition number
            b"",  # empty
        )
    ]
    # Well-formed, but about a topic that does not exist.
    cluster.zk.create(
        paths.ISR_CHANGE_CREATE_PATH,
        b'{"version":1,"partitions":[{"topic":"gone","partition":0}]}',
        sequence=True,
    )
    notify_isr_change(cluster, [T0])  # the one good notification among them
    wait_until(lambda: isr_notifications(cluster) == [], what="every notification deleted")
    # Each malformed one was logged, naming its znode.
    logged = capfd.readouterr().out
    for path in malformed:
        assert f"path={path}" in logged or f"path='{path}'" in logged
    assert "ignoring malformed ISR change notification" in logged
    assert (cached(cluster, T0).isr, cached(cluster, T0).partition_epoch) == ((1, 2), version)
    assert daemon.controller.is_active
    # Still serving: a new topic gets its leaders.
    cluster.create_topic("after", {0: [3, 1]})
    cluster.wait_state("after", 0, leader=3, isr=[3, 1])


def test_notifications_pending_at_failover_are_deleted_unprocessed(cluster):
    for b in (1, 2, 3):
        cluster.start_broker(b, **STEADY)
    cluster.zk.ensure_path(paths.ISR_CHANGE_NOTIFICATION)
    notify_isr_change(cluster, [T0])
    cluster.zk.create(paths.ISR_CHANGE_CREATE_PATH, b"garbage", sequence=True)
    assert len(isr_notifications(cluster)) == 2
    cluster.start_controller(0, **NO_AUTO_REBALANCE)
    cluster.active_controller()
    wait_until(lambda: isr_notifications(cluster) == [], what="deleted at failover")
    # The controller reads every state at failover instead; it keeps working.
    cluster.create_topic("t", {0: [1, 2, 3]})
    cluster.wait_state("t", 0, leader=1, isr=[1, 2, 3])
