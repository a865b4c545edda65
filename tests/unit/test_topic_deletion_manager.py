"""Topic deletion (reference §2.6).

Part 1 ports Kafka's ``TopicDeletionManagerTest`` (§6.4): the manager over a real
``ControllerContext`` with recording state machines that apply valid transitions, refuse invalid
ones and count calls per target state (Kafka's ``MockReplicaStateMachine`` /
``MockPartitionStateMachine``), and a fake ``DeletionClient``.

Part 2 drives the real controller (``tests.harness``: real gateway on MemoryZooKeeper, real
state machines and request batch) through ``/admin/delete_topics`` and StopReplica responses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

import pytest

from controller.api.errors import Errors
from controller.channel.sender import RequestKind
from controller.core.context import ControllerContext
from controller.core.deletion import TopicDeletionManager
from controller.core.events import TopicDeletionStopReplicaResponseReceived
from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from controller.zk import paths
from tests.harness import ControllerHarness, make_broker

Started = ReplicaState.ReplicaDeletionStarted
Successful = ReplicaState.ReplicaDeletionSuccessful
Ineligible = ReplicaState.ReplicaDeletionIneligible
Offline = ReplicaState.OfflineReplica
NonExistentPartition = PartitionState.NonExistentPartition

# -- part 1: TopicDeletionManagerTest ------------------------------------------------------


class RecordingReplicaStateMachine:
    """Kafka's ``MockReplicaStateMachine``."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.calls: Counter[ReplicaState] = Counter()

    def startup(self) -> None:
        online, offline = self.ctx.online_and_offline_replicas()
        for pr in online:
            self.ctx.put_replica_state(pr, ReplicaState.OnlineReplica)
        for pr in offline:
            self.ctx.put_replica_state(pr, Ineligible)
        self.handle_state_changes(sorted(online), ReplicaState.OnlineReplica)
        self.handle_state_changes(sorted(offline), Offline)

    def handle_state_changes(
        self, replicas: Iterable[PartitionAndReplica], target: ReplicaState
    ) -> None:
        replicas = list(replicas)
        self.calls[target] += 1  # counted even for an empty list, as Kafka's mock does
        for pr in replicas:
            self.ctx.put_replica_state_if_not_exists(pr, ReplicaState.NonExistentReplica)
        valid, invalid = self.ctx.check_valid_replica_state_change(replicas, target)
        if invalid:
            states = {str(r): self.ctx.replica_state(r).name for r in invalid}
            raise AssertionError(f"invalid transition to {target.name} for {states}")
        for pr in valid:
            if target is ReplicaState.NonExistentReplica:
                self.ctx.remove_replica_state(pr)
            else:
                self.ctx.put_replica_state(pr, target)


class RecordingPartitionStateMachine:
    """Kafka's ``MockPartitionStateMachine`` (elections only as far as start-up needs)."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.calls: Counter[PartitionState] = Counter()

    def startup(self) -> None:
        for tp in sorted(self.ctx.all_partitions()):
            live = [
                r
                for r in self.ctx.partition_replica_assignment(tp)
                if r in self.ctx.live_broker_ids()
            ]
            lai = LeaderAndIsr(live[0], 0, tuple(live))
            self.ctx.put_partition_leadership_info(tp, LeaderIsrAndControllerEpoch(lai, 1))
            self.ctx.put_partition_state(tp, PartitionState.OnlinePartition)

    def handle_state_changes(
        self, partitions: Sequence[TopicPartition], target: PartitionState
    ) -> dict:
        self.calls[target] += 1
        for tp in partitions:
            self.ctx.put_partition_state_if_not_exists(tp, NonExistentPartition)
        valid, invalid = self.ctx.check_valid_partition_state_change(partitions, target)
        if invalid:
            raise AssertionError(f"invalid transition to {target.name} for {invalid}")
        for tp in valid:
            self.ctx.put_partition_state(tp, target)
        return {}


class FakeDeletionClient:
    def __init__(self, pending: Sequence[str] = ()) -> None:
        self.pending = list(pending)
        self.deleted_topics: list[str] = []
        self.deleted_requests: list[list[str]] = []
        self.muted: list[str] = []
        self.forgotten: list[str] = []
        self.metadata_updates: list[set[TopicPartition]] = []

    def get_topic_deletions(self) -> list[str]:
        return list(self.pending)

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        self.deleted_topics.append(topic)

    def delete_topic_deletions(self, topics: Sequence[str], epoch_zk_version: int) -> None:
        self.deleted_requests.append(list(topics))

    def mute_partition_modifications(self, topic: str) -> None:
        self.muted.append(topic)

    def forget_reassignments(self, topic: str) -> None:
        self.forgotten.append(topic)

    def send_metadata_update(self, partitions: Iterable[TopicPartition]) -> None:
        self.metadata_updates.append(set(partitions))


def init_context(
    brokers: Sequence[int], topics: Sequence[str], num_partitions: int, replication_factor: int
) -> ControllerContext:
    """Kafka's fixture: live brokers with epoch 1 and a round-robin assignment."""
    ctx = ControllerContext()
    ctx.set_live_brokers({make_broker(b): 1 for b in brokers})
    leader_index = 0
    for topic in topics:
        ctx.all_topics.add(topic)
        for p in range(num_partitions):
            replicas = [
                brokers[(i + leader_index) % len(brokers)] for i in range(replication_factor)
            ]
            ctx.update_partition_full_replica_assignment(
                TopicPartition(topic, p), ReplicaAssignment(tuple(replicas))
            )
            leader_index += 1
    return ctx


class Setup:
    def __init__(self, topics: Sequence[str], *, enabled: bool = True) -> None:
        self.ctx = init_context([1, 2, 3], topics, num_partitions=2, replication_factor=3)
        self.rsm = RecordingReplicaStateMachine(self.ctx)
        self.rsm.startup()
        self.psm = RecordingPartitionStateMachine(self.ctx)
        self.psm.startup()
        self.client = FakeDeletionClient()
        self.manager = TopicDeletionManager(enabled, self.ctx, self.rsm, self.psm, self.client)

    def replicas(self, topic: str) -> set[PartitionAndReplica]:
        return self.ctx.replicas_for_partitions(self.ctx.partitions_for_topic(topic))

    def replica_states_of(self, topic: str) -> set[PartitionAndReplica]:
        return {pr for pr, _ in self.ctx.replica_states() if pr.tp.topic == topic}

    def take_broker_offline(self, broker_id: int) -> tuple[object, int]:
        broker = self.ctx.live_or_shutting_down_broker(broker_id)
        epoch = self.ctx.live_broker_id_and_epochs()[broker_id]
        self.ctx.remove_live_brokers([broker_id])
        return broker, epoch


def test_initialization() -> None:
    s = Setup(["foo", "bar", "baz"])
    assert s.manager.enabled
    s.manager.init({"foo", "bar"}, {"bar", "baz"})
    assert set(s.ctx.topics_to_be_deleted) == {"foo", "bar"}
    assert s.ctx.topics_ineligible_for_deletion == {"bar"}  # only queued topics are marked


def test_basic_deletion() -> None:
    s = Setup(["foo", "bar"])
    s.manager.init(set(), set())
    foo_partitions = s.ctx.partitions_for_topic("foo")
    foo_replicas = s.replicas("foo")
    bar_partitions = s.ctx.partitions_for_topic("bar")
    bar_replicas = s.replicas("bar")
    s.rsm.calls.clear()
    s.psm.calls.clear()

    s.manager.enqueue_topics_for_deletion({"foo", "bar"})

    assert s.ctx.partitions_in_state(NonExistentPartition, "foo") == foo_partitions
    assert s.ctx.replicas_in_state("foo", Started) == foo_replicas
    assert s.ctx.partitions_in_state(NonExistentPartition, "bar") == bar_partitions
    assert s.ctx.replicas_in_state("bar", Started) == bar_replicas
    assert s.client.metadata_updates == [foo_partitions | bar_partitions]
    assert set(s.ctx.topics_to_be_deleted) == {"foo", "bar"}
    assert set(s.ctx.topics_with_deletion_started) == {"foo", "bar"}
    assert s.ctx.topics_ineligible_for_deletion == set()

    s.manager.complete_replica_deletion(foo_replicas | bar_replicas)

    for topic in ("foo", "bar"):
        assert s.ctx.partitions_for_topic(topic) == set()
        assert s.replica_states_of(topic) == set()
    assert set(s.ctx.topics_to_be_deleted) == set()
    assert set(s.ctx.topics_with_deletion_started) == set()
    assert s.ctx.topics_ineligible_for_deletion == set()
    assert sorted(s.client.deleted_topics) == ["bar", "foo"]
    assert sorted(s.client.muted) == ["bar", "foo"]
    assert sorted(s.client.forgotten) == ["bar", "foo"]

    assert s.psm.calls[PartitionState.OfflinePartition] == 1
    assert s.psm.calls[NonExistentPartition] == 1
    assert s.rsm.calls[Ineligible] == 1  # with an empty list: no dead replicas
    assert s.rsm.calls[Offline] == 1
    assert s.rsm.calls[Started] == 1
    assert s.rsm.calls[Successful] == 1


def test_deletion_with_broker_offline() -> None:
    s = Setup(["foo", "bar"])
    s.manager.init(set(), set())
    foo_partitions = s.ctx.partitions_for_topic("foo")
    foo_replicas = s.replicas("foo")

    broker, last_epoch = s.take_broker_offline(2)
    assert s.ctx.live_broker_ids() == {1, 3}
    offline = {r for r in foo_replicas if r.replica == 2}
    online = foo_replicas - offline
    s.rsm.handle_state_changes(sorted(offline), Offline)

    s.manager.enqueue_topics_for_deletion({"foo"})
    assert s.ctx.partitions_in_state(NonExistentPartition, "foo") == foo_partitions
    assert s.client.metadata_updates == [foo_partitions]
    assert s.ctx.replicas_in_state("foo", Started) == online
    assert s.ctx.replicas_in_state("foo", Ineligible) == offline
    assert set(s.ctx.topics_to_be_deleted) == {"foo"}
    assert set(s.ctx.topics_with_deletion_started) == {"foo"}
    assert s.ctx.topics_ineligible_for_deletion == {"foo"}

    # Deletion succeeds for the online replicas; the offline ones are reset for a retry.
    s.manager.complete_replica_deletion(online)
    assert s.ctx.partitions_in_state(NonExistentPartition, "foo") == foo_partitions
    assert set(s.ctx.topics_to_be_deleted) == {"foo"}
    assert set(s.ctx.topics_with_deletion_started) == {"foo"}
    assert s.ctx.topics_ineligible_for_deletion == {"foo"}
    assert s.ctx.replicas_in_state("foo", Successful) == online
    assert s.ctx.replicas_in_state("foo", Offline) == offline

    # Broker 2 comes back and deletion resumes.
    s.ctx.add_live_brokers({broker: last_epoch + 1})  # type: ignore[dict-item]
    s.manager.resume_deletion_for_topics({"foo"})
    assert s.ctx.replicas_in_state("foo", Successful) == online
    assert s.ctx.replicas_in_state("foo", Started) == offline

    s.manager.complete_replica_deletion(offline)
    assert s.ctx.partitions_for_topic("foo") == set()
    assert s.replica_states_of("foo") == set()
    assert set(s.ctx.topics_to_be_deleted) == set()
    assert set(s.ctx.topics_with_deletion_started) == set()
    assert s.ctx.topics_ineligible_for_deletion == set()
    assert s.client.deleted_topics == ["foo"]


def test_broker_failure_after_deletion_started() -> None:
    s = Setup(["foo", "bar"])
    s.manager.init(set(), set())
    foo_partitions = s.ctx.partitions_for_topic("foo")
    foo_replicas = s.replicas("foo")

    s.manager.enqueue_topics_for_deletion({"foo"})
    assert s.ctx.partitions_in_state(NonExistentPartition, "foo") == foo_partitions
    assert s.ctx.replicas_in_state("foo", Started) == foo_replicas

    broker, last_epoch = s.take_broker_offline(2)
    assert s.ctx.live_broker_ids() == {1, 3}
    offline = {r for r in foo_replicas if r.replica == 2}
    online = foo_replicas - offline

    s.manager.fail_replica_deletion(offline)
    assert set(s.ctx.topics_to_be_deleted) == {"foo"}
    assert set(s.ctx.topics_with_deletion_started) == {"foo"}
    assert s.ctx.topics_ineligible_for_deletion == {"foo"}
    assert s.ctx.replicas_in_state("foo", Ineligible) == offline
    assert s.ctx.replicas_in_state("foo", Started) == online

    # Broker 2 restarts: the topic is eligible again, but replicas still in flight (Started)
    # block a new round, so the failed ones stay ineligible for now.
    s.ctx.add_live_brokers({broker: last_epoch + 1})  # type: ignore[dict-item]
    s.manager.resume_deletion_for_topics({"foo"})
    assert set(s.ctx.topics_to_be_deleted) == {"foo"}
    assert set(s.ctx.topics_with_deletion_started) == {"foo"}
    assert s.ctx.topics_ineligible_for_deletion == set()
    assert s.ctx.replicas_in_state("foo", Started) == online
    assert s.ctx.replicas_in_state("foo", Ineligible) == offline

    # Once the started ones complete, the failed ones go back through Offline to Started.
    s.manager.complete_replica_deletion(online)
    assert set(s.ctx.topics_to_be_deleted) == {"foo"}
    assert set(s.ctx.topics_with_deletion_started) == {"foo"}
    assert s.ctx.topics_ineligible_for_deletion == set()
    assert s.ctx.replicas_in_state("foo", Successful) == online
    assert s.ctx.replicas_in_state("foo", Started) == offline


# -- beyond Kafka's suite: the manager on its own -------------------------------------------


def test_disabled_deletion_drops_requests_and_does_nothing() -> None:
    s = Setup(["foo"], enabled=False)
    s.manager.init({"foo"}, set())
    assert s.client.deleted_requests == [["foo"]]
    assert set(s.ctx.topics_to_be_deleted) == set()
    s.manager.enqueue_topics_for_deletion({"foo"})
    s.manager.fail_replica_deletion(s.replicas("foo"))
    s.manager.resume_deletion_for_topics({"foo"})
    assert set(s.ctx.topics_to_be_deleted) == set()
    assert not s.manager.is_topic_queued_up_for_deletion("foo")
    assert s.ctx.replicas_in_state("foo", ReplicaState.OnlineReplica) == s.replicas("foo")


def test_topic_without_replicas_completes_at_once() -> None:
    # A request whose topic znode is already gone (a crash mid-deletion, pitfall 26): no
    # replicas, so "every replica deleted" holds and the remaining znodes are removed.
    s = Setup(["foo"])
    s.manager.init({"ghost"}, set())
    s.manager.try_topic_deletion()
    assert s.client.deleted_topics == ["ghost"]
    assert set(s.ctx.topics_to_be_deleted) == set()
    assert s.ctx.replicas_in_state("foo", ReplicaState.OnlineReplica) == s.replicas("foo")


def test_requested_during_reassignment_is_held_back() -> None:
    # Kafka marks before queueing, which is a no-op for a new request (pitfall 27); marking
    # after queueing holds the topic back until the reassignment completes.
    s = Setup(["foo"])
    s.manager.enqueue_topics_for_deletion({"foo"}, ineligible={"foo"})
    assert s.ctx.topics_ineligible_for_deletion == {"foo"}
    assert s.ctx.replicas_in_state("foo", Started) == set()
    assert s.client.metadata_updates == []
    s.manager.resume_deletion_for_topics({"foo"})  # the reassignment completed
    assert s.ctx.replicas_in_state("foo", Started) == s.replicas("foo")


def test_init_from_zookeeper_marks_offline_and_reassigning_topics_ineligible() -> None:
    s = Setup(["foo", "bar", "baz", "qux"])
    s.client.pending = ["foo", "bar", "baz"]
    s.take_broker_offline(3)  # every topic has a replica on 3 ...
    s.ctx.add_live_brokers({make_broker(3): 2})  # ... until it returns
    s.ctx.replicas_on_offline_dirs[1] = {TopicPartition("foo", 0)}  # foo-0 on 1: offline dir
    s.ctx.partitions_being_reassigned.add(TopicPartition("bar", 1))
    s.ctx.partitions_being_reassigned.add(TopicPartition("qux", 0))  # not requested
    s.manager.init_from_zookeeper()
    assert set(s.ctx.topics_to_be_deleted) == {"foo", "bar", "baz"}
    assert s.ctx.topics_ineligible_for_deletion == {"foo", "bar"}


# -- part 2: the real controller on the in-memory harness -----------------------------------

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
SR = RequestKind.STOP_REPLICA


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = ControllerHarness(controller_id=5)
    for b in (1, 2, 3):
        harness.register_broker(b)
    harness.start()
    harness.set_topic_config("t", {"retention.ms": "1000"})
    harness.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]}, in_context=False)
    harness.drain()
    harness.channel.clear()
    yield harness
    harness.close()


def request_deletion(h: ControllerHarness, topic: str = "t") -> None:
    h.admin.create(paths.delete_topic_path(topic), makepath=True)
    h.drain()


def deletes(h: ControllerHarness) -> dict[int, object]:
    """The StopReplica(delete=true) requests sent since the last clear, by broker."""
    out = {}
    for r in h.channel.requests(kind=SR):
        if any(r.stop_replica(tp)[1] for tp in r.partitions()):
            out[r.broker_id] = r
    return out


def topic_gone(h: ControllerHarness, topic: str = "t") -> bool:
    return all(
        h.read(p) is None
        for p in (
            paths.topic_path(topic),
            paths.topic_config_path(topic),
            paths.delete_topic_path(topic),
        )
    )


def test_deletion_round_trip_removes_every_znode(h: ControllerHarness) -> None:
    request_deletion(h)
    sent = deletes(h)
    assert set(sent) == {1, 2, 3}
    for r in sent.values():
        assert {tp: r.stop_replica(tp) for tp in r.partitions()} == {
            T0: (-2, True),  # leader epoch -2: the topic is queued for deletion
            T1: (-2, True),
        }
    assert h.read(paths.topic_path("t")) is not None  # nothing removed before the answers
    for b in (1, 2):
        sent[b].respond()
    h.drain()
    assert h.ctx.is_topic_queued_up_for_deletion("t")
    sent[3].respond()
    h.drain()
    assert topic_gone(h)
    assert "t" not in h.ctx.all_topics
    assert h.ctx.partitions_for_topic("t") == set()


def test_deletion_start_tells_every_broker_the_topic_is_being_deleted(
    h: ControllerHarness,
) -> None:
    """Kafka's ``onTopicDeletion``: ``client.sendMetadataUpdate`` of the topic's partitions,
    so brokers stop serving them (UpdateMetadata with leader -2) before the replicas go."""
    request_deletion(h)
    for b in (1, 2, 3):
        states = [
            r.update_metadata(tp)[0].leader_and_isr.leader
            for r in h.channel.requests(b, RequestKind.UPDATE_METADATA)
            for tp in r.partitions()
            if tp in (T0, T1)
        ]
        assert states.count(-2) >= 2, f"broker {b}: {states}"


def test_a_failed_replica_deletion_waits_for_the_broker_to_restart(h: ControllerHarness) -> None:
    request_deletion(h)
    sent = deletes(h)
    sent[1].respond()
    sent[2].respond(partition_errors={T1: Errors.KAFKA_STORAGE_ERROR})
    sent[3].respond()
    h.channel.clear()
    h.drain()
    # Broker 2's t-1 failed: once nothing is in flight it is reset to Offline, and the topic
    # stays ineligible until something resumes it (Kafka: a broker start, a completed
    # reassignment or a failover), so no StopReplica(delete) is sent meanwhile.
    assert h.ctx.replica_state(PartitionAndReplica(T1, 2)) is Offline
    assert h.ctx.topics_ineligible_for_deletion == {"t"}
    assert deletes(h) == {}
    assert not topic_gone(h)
    h.kill_broker(2)
    h.register_broker(2)
    h.drain()
    retried = deletes(h)
    assert set(retried) == {2}
    assert retried[2].partitions() == [T1]  # t-0 on broker 2 is already deleted
    retried[2].respond()
    h.drain()
    assert topic_gone(h)


def test_a_partition_missing_from_the_response_is_neither_deleted_nor_failed(
    h: ControllerHarness,
) -> None:
    request_deletion(h)
    sent = deletes(h)
    sent[1].respond()
    sent[2].respond(omit=[T1])
    sent[3].respond()
    h.drain()
    assert h.ctx.replica_state(PartitionAndReplica(T1, 2)) is Started
    assert h.ctx.replica_state(PartitionAndReplica(T0, 2)) is Successful
    assert not topic_gone(h)


def test_a_request_level_error_fails_every_partition(h: ControllerHarness) -> None:
    request_deletion(h)
    sent = deletes(h)
    sent[2].respond(error=Errors.UNKNOWN_SERVER_ERROR)
    events = h.pending_events()
    assert [type(e) for e in events] == [TopicDeletionStopReplicaResponseReceived]
    assert dict(events[0].partition_errors) == {  # type: ignore[attr-defined]
        T0: Errors.UNKNOWN_SERVER_ERROR,
        T1: Errors.UNKNOWN_SERVER_ERROR,
    }
    h.drain()
    assert h.ctx.topics_ineligible_for_deletion == {"t"}
    assert h.ctx.replicas_in_state("t", Ineligible) == {
        PartitionAndReplica(T0, 2),
        PartitionAndReplica(T1, 2),
    }


@pytest.mark.parametrize("stale_answer", ["before the bounce", "after the bounce"])
def test_a_deletion_answered_by_the_restarted_broker_completes(
    h: ControllerHarness, stale_answer: str
) -> None:
    # Broker 2 restarts while its StopReplica(delete) is in flight; the new instance answers
    # it STALE_BROKER_EPOCH. The BrokerChange fails and re-sends the deletion there. The stale
    # answer, processed after that, used to fail the re-sent deletion's replicas: the topic
    # was held back for good (the real answer then met an invalid transition).
    request_deletion(h)
    sent = deletes(h)
    for b in (1, 3):
        sent[b].respond()
    h.drain()
    if stale_answer == "before the bounce":
        sent[2].respond(error=Errors.STALE_BROKER_EPOCH)
        h.drain()
    h.channel.clear()
    h.kill_broker(2)
    h.register_broker(2)
    h.drain()
    if stale_answer == "after the bounce":
        sent[2].respond(error=Errors.STALE_BROKER_EPOCH)
        h.drain()
    retried = deletes(h)
    assert set(retried) == {2}
    retried[2].respond()
    h.drain()
    assert topic_gone(h)
    assert h.ctx.topics_ineligible_for_deletion == set()


def test_a_replica_on_a_dead_broker_holds_deletion_until_it_returns(h: ControllerHarness) -> None:
    h.kill_broker(3)
    h.drain()
    h.channel.clear()
    request_deletion(h)
    assert h.ctx.topics_ineligible_for_deletion == {"t"}
    assert set(deletes(h)) == {1, 2}
    for r in deletes(h).values():
        r.respond()
    h.drain()
    assert not topic_gone(h)
    h.channel.clear()
    h.register_broker(3)
    h.drain()
    assert set(deletes(h)) == {3}
    deletes(h)[3].respond()
    h.drain()
    assert topic_gone(h)


def test_deletion_disabled_drops_the_request() -> None:
    h = ControllerHarness(controller_id=5, flags={"delete.topic.enable": "false"})
    try:
        h.register_broker(1)
        h.start()
        h.create_topic("t", {0: [1]}, in_context=False)
        h.drain()
        request_deletion(h)
        assert h.read(paths.delete_topic_path("t")) is None
        assert h.read(paths.topic_path("t")) is not None
        assert not h.ctx.is_topic_queued_up_for_deletion("t")
        assert h.channel.requests(kind=SR) == []
    finally:
        h.close()


def test_a_request_for_an_unknown_topic_is_removed(h: ControllerHarness) -> None:
    request_deletion(h, "nope")
    assert h.read(paths.delete_topic_path("nope")) is None
    assert h.ctx.topics_to_be_deleted == set()
    assert h.read(paths.topic_path("t")) is not None


def test_a_pending_request_is_resumed_by_the_next_controller() -> None:
    h = ControllerHarness(controller_id=5)
    try:
        h.register_broker(1)
        h.create_topic("t", {0: [1]}, in_context=False)
        h.admin.create(paths.delete_topic_path("t"), makepath=True)
        h.start()  # failover: init_from_zookeeper, then try_topic_deletion
        [request] = deletes(h).values()
        request.respond()
        h.drain()
        assert topic_gone(h)
    finally:
        h.close()


def test_malformed_topic_znode_can_still_be_deleted(h: ControllerHarness) -> None:
    h.admin.create(paths.topic_path("broken"), b"{not json")
    h.drain()
    assert "broken" in h.ctx.all_topics
    request_deletion(h, "broken")
    assert topic_gone(h, "broken")
    assert h.read(paths.topic_path("t")) is not None


def _reassign(h: ControllerHarness, targets: dict) -> dict:
    from controller.core.events import ApiPartitionReassignment

    event = ApiPartitionReassignment(reassignments=targets)
    h.put(event)
    h.drain()
    return event.reply.result(0)


def _complete_deletion(h: ControllerHarness) -> None:
    for r in h.channel.requests(kind=SR):
        r.respond()
    h.drain()


def test_a_held_deletion_goes_ahead_once_its_reassignment_is_cancelled() -> None:
    """A deletion requested during a reassignment waits for it (pitfall 27, held on
    purpose); cancelling the reassignment lets it go ahead (Kafka refuses any reassignment
    request for a queued topic, which here would leave no way to hurry the deletion)."""
    h = ControllerHarness(controller_id=5)
    for b in (1, 2, 3, 4):
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    h.drain()
    assert _reassign(h, {T0: (3, 4)}) == {T0: None}
    h.channel.clear()
    request_deletion(h)
    assert h.ctx.topics_ineligible_for_deletion == {"t"} and deletes(h) == {}
    assert _reassign(h, {T0: None}) == {T0: None}  # the cancel is accepted
    # The cancel deletes the adding replicas (3, 4); the topic's deletion starts on 1 and 2.
    assert set(deletes(h)) == {1, 2, 3, 4}
    assert h.ctx.topics_ineligible_for_deletion == set()
    assert "t" in h.ctx.topics_with_deletion_started
    _complete_deletion(h)
    assert topic_gone(h)
    h.close()


def test_a_cancel_is_refused_once_the_deletion_has_started() -> None:
    """t-1's reassignment completes and lifts the hold, so t's deletion starts while t-0 is
    still moving; broker 3 (t-0's adding replica) then dies before answering its StopReplica.
    A cancel of t-0 now is refused, as Kafka refuses it: accepted, it dropped replica 3
    without an answer and the topic was reported deleted while broker 3 still held t-0."""
    from controller.core.events import PartitionReassignmentIsrChange

    h = ControllerHarness(controller_id=5)
    for b in (1, 2, 3, 4):
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: [1, 2], 1: [1, 2]}, in_context=False)
    h.drain()
    assert _reassign(h, {T0: (1, 3), T1: (1, 4)}) == {T0: None, T1: None}
    request_deletion(h)
    assert h.ctx.topics_ineligible_for_deletion == {"t"}  # held: reassignments running
    current = h.zk_state(T1)
    assert current is not None
    lai = current.leader_and_isr
    h.write_partition_state(  # t-1's new replica catches up: its reassignment completes
        T1,
        LeaderIsrAndControllerEpoch(
            LeaderAndIsr(lai.leader, lai.leader_epoch, (1, 2, 4)), current.controller_epoch
        ),
    )
    h.put(PartitionReassignmentIsrChange(tp=T1))
    h.drain()
    assert h.ctx.is_topic_deletion_in_progress("t")
    h.kill_broker(3)
    h.drain()
    refused = _reassign(h, {T0: None})[T0]
    assert refused is not None and refused.error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    for r in list(h.channel.requests(kind=SR)):
        if r.callback is not None and r.broker_id != 3:
            r.respond()
    h.drain()
    # Broker 3 never answered for t-0: the deletion waits for it...
    assert h.read(paths.topic_path("t")) is not None
    assert h.ctx.topics_ineligible_for_deletion == {"t"}
    # ...and is completed by it once it returns (Kafka's resumeDeletionForTopics).
    h.channel.clear()
    h.register_broker(3)
    h.drain()
    assert 3 in deletes(h)
    _complete_deletion(h)
    assert topic_gone(h)
    h.close()


def test_a_topic_re_created_after_a_deletion_mid_reassignment_can_be_deleted() -> None:
    """t-0 completes its reassignment (lifting the hold) and t is deleted while t-1 is
    still moving: nothing of the old topic may hold back the deletion of a new t."""
    from controller.core.events import PartitionReassignmentIsrChange
    from controller.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch

    h = ControllerHarness(controller_id=5)
    for b in (1, 2, 3, 4):
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: [1, 2], 1: [1, 2]}, in_context=False)
    h.drain()
    _reassign(h, {T0: (1, 3), T1: (1, 4)})
    request_deletion(h)
    current = h.zk_state(T0)
    assert current is not None
    lai = current.leader_and_isr
    h.write_partition_state(
        T0,
        LeaderIsrAndControllerEpoch(
            LeaderAndIsr(lai.leader, lai.leader_epoch, (1, 2, 3)), current.controller_epoch
        ),
    )
    h.put(PartitionReassignmentIsrChange(tp=T0))
    h.drain()
    _complete_deletion(h)
    assert topic_gone(h) and "t" not in h.ctx.all_topics
    assert h.ctx.partitions_being_reassigned == set()
    assert h.ctx.topics_ineligible_for_deletion == set()
    h.create_topic("t", {0: [1, 2], 1: [2, 3]}, in_context=False)
    h.drain()
    h.channel.clear()
    request_deletion(h)
    assert h.ctx.topics_ineligible_for_deletion == set()
    assert set(deletes(h)) == {1, 2, 3}
    h.close()


def test_a_deleted_topic_leaves_nothing_in_the_zookeeper_reassignment_request() -> None:
    """t-0's ZooKeeper-submitted reassignment completes (lifting the hold) and t is deleted
    while t-1 is still moving. Its entry must leave /admin/reassign_partitions with the
    topic: left there, a topic re-created under the name could not get partitions added and
    would be moved, unasked, at the next failover."""
    from controller.admin import topics as admin_topics
    from controller.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch
    from controller.zk import codecs

    h = ControllerHarness(controller_id=5)
    for b in (1, 2, 3, 4):
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: [1, 2], 1: [1, 2]}, in_context=False)
    h.drain()
    request = codecs.encode_reassignment({T0: [3, 4], T1: [3, 4]})
    h.admin.create(paths.REASSIGN_PARTITIONS, request, makepath=True)
    h.drain()
    assert h.ctx.partitions_being_reassigned == {T0, T1}
    request_deletion(h)
    assert h.ctx.topics_ineligible_for_deletion == {"t"}
    current = h.zk_state(T0)
    assert current is not None
    lai = current.leader_and_isr
    h.write_partition_state(  # t-0's new replicas catch up: its reassignment completes
        T0,
        LeaderIsrAndControllerEpoch(
            LeaderAndIsr(lai.leader, lai.leader_epoch, (1, 2, 3, 4)), current.controller_epoch
        ),
    )
    h.drain()
    _complete_deletion(h)
    assert topic_gone(h)
    assert h.read(paths.REASSIGN_PARTITIONS) is None
    isr_path = paths.partition_state_path("t", 1)
    assert h.gateway.watches.data_watcher(isr_path) is None  # t-1's ISR watch went too

    h.create_topic("t", {0: [1, 2], 1: [1, 2]}, in_context=False)
    h.drain()
    assert admin_topics.add_partitions(h.admin, "t", 3) is not None  # not refused
    h.zk.expire(h.port.inner, reconnect=True)  # a new session: election and failover
    h.drain()
    assert h.controller.is_active
    assert h.ctx.partitions_being_reassigned == set()
    assert h.ctx.partition_full_replica_assignment(T1).replicas == (1, 2)
    h.close()
