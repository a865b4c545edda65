"""Topic deletion (reference §2.6).

Part 1 ports Kafka's ``TopicDeletionManagerTest`` (§6.4): the manager over a real
``ControllerContext`` with recording state machines that apply valid transitions, refuse invalid
ones and count calls per target state (Kafka's ``MockReplicaStateMachine`` /
``MockPartitionStateMachine``), and a fake ``DeletionClient``.

The real controller's deletions on the in-memory harness are in
``test_topic_deletion_handlers.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from controller.core.context import ControllerContext
from controller.core.deletion import TopicDeletionManager
from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from tests.harness import make_broker

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
