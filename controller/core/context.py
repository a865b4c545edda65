"""``ControllerContext``: the controller's in-memory model of the cluster (spec 3.1).

Threading: the context is mutable and has no locks. It must only be touched from the
controller event thread (the single consumer of the event queue, spec 0.3); other threads
enqueue events instead of reading or writing it.

Layout. Per-partition data lives in a ``PartitionTable`` (``controller.core.partition_table``):
one compact entry per partition with interned values, Kafka's independent maps kept as
independent fields. Each may be absent on its own, e.g. ``remove_topic`` drops assignments and
leadership but, as in Kafka, leaves partition and replica states behind.

Metric bookkeeping follows Kafka exactly (spec 3.1, pitfalls 15 and 16); see
``put_partition_state`` and ``rebalance.has_preferred_leader``. Per-state counts are maintained
incrementally so metrics and ``status`` are O(1).
"""

from __future__ import annotations

from collections.abc import Collection, Container, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from types import MappingProxyType

from controller.core import transitions
from controller.core.model import (
    EMPTY_ASSIGNMENT,
    EPOCH_DURING_DELETE,
    NO_EPOCH,
    Broker,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from controller.core.partition_table import PartitionTable
from controller.core.rebalance import has_preferred_leader

INITIAL_CONTROLLER_EPOCH = 0
INITIAL_CONTROLLER_EPOCH_ZK_VERSION = 0

# NewPartition is 0, so a state is falsy: test for a missing state with ``is None``.
_OFFLINE = PartitionState.OfflinePartition
_NON_EXISTENT = PartitionState.NonExistentPartition
_NON_EXISTENT_REPLICA = ReplicaState.NonExistentReplica


class _OnlineReplicas(Container[int]):
    """``b in view`` == ``ctx.is_replica_online(b, tp, include_shutting_down)``."""

    __slots__ = ("_ctx", "_include_shutting_down", "_tp")

    def __init__(self, ctx: ControllerContext, tp: TopicPartition, include: bool) -> None:
        self._ctx = ctx
        self._tp = tp
        self._include_shutting_down = include

    def __contains__(self, broker_id: object) -> bool:
        return isinstance(broker_id, int) and self._ctx.is_replica_online(
            broker_id, self._tp, self._include_shutting_down
        )


def _imbalanced(assignment: ReplicaAssignment, info: LeaderIsrAndControllerEpoch) -> int:
    return 0 if has_preferred_leader(assignment, info) else 1


class ControllerContext:
    """In-memory cluster model of the active controller. Event-thread only; see module doc."""

    def __init__(self) -> None:
        self.epoch: int = INITIAL_CONTROLLER_EPOCH
        self.epoch_zk_version: int = INITIAL_CONTROLLER_EPOCH_ZK_VERSION
        self.shutting_down_broker_ids: set[int] = set()
        self._live_brokers: dict[int, Broker] = {}
        self._broker_epochs: dict[int, int] = {}

        self.all_topics: set[str] = set()
        self.topic_ids: dict[str, str] = {}
        self.topic_names: dict[str, str] = {}
        self.partitions_being_reassigned: set[TopicPartition] = set()
        self.replicas_on_offline_dirs: dict[int, set[TopicPartition]] = {}

        # Written only through queue_topic_deletion / begin_topic_deletion / remove_topic,
        # because the metric counters depend on them; exposed read-only.
        self._topics_to_be_deleted: set[str] = set()
        self._topics_with_deletion_started: set[str] = set()
        self.topics_ineligible_for_deletion: set[str] = set()

        self._table = PartitionTable()
        self._reset_counters()

    def _reset_counters(self) -> None:
        # The counts that depend on deletion bookkeeping; the table keeps the others.
        self._offline_partition_count = 0
        self._preferred_replica_imbalance_count = 0

    # ------------------------------------------------------------------ metrics (read-only)

    @property
    def offline_partition_count(self) -> int:
        """Partitions in OfflinePartition, excluding topics whose deletion has *started*."""
        return self._offline_partition_count

    @property
    def preferred_replica_imbalance_count(self) -> int:
        """Partitions not led by their preferred replica, excluding *queued* topics."""
        return self._preferred_replica_imbalance_count

    def partitions_states_summary(self) -> dict[PartitionState, int]:
        """Number of partitions per recorded state (unrecorded partitions are not counted)."""
        return dict(self._table.partition_state_counts)

    def replica_states_summary(self) -> dict[ReplicaState, int]:
        return dict(self._table.replica_state_counts)

    def partition_count(self) -> int:
        """Partitions with an assignment."""
        return self._table.assignment_count

    def partition_with_leaders_count(self) -> int:
        """Partitions with leadership info (Kafka's ``GlobalPartitionCount``)."""
        return self._table.leadership_count

    # ------------------------------------------------------------------ brokers

    def set_live_brokers(self, broker_and_epochs: Mapping[Broker, int]) -> None:
        self._live_brokers.clear()
        self._broker_epochs.clear()
        self.add_live_brokers(broker_and_epochs)

    def add_live_brokers(self, broker_and_epochs: Mapping[Broker, int]) -> None:
        for broker, epoch in broker_and_epochs.items():
            self._live_brokers[broker.id] = broker
            self._broker_epochs[broker.id] = epoch

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for b in broker_ids:
            self._live_brokers.pop(b, None)
            self._broker_epochs.pop(b, None)

    def update_broker_metadata(self, old: Broker, new: Broker) -> None:
        """Replace a broker's registration data; its epoch is unchanged."""
        self._live_brokers.pop(old.id, None)
        self._live_brokers[new.id] = new

    def live_broker_ids(self) -> set[int]:
        return self._broker_epochs.keys() - self.shutting_down_broker_ids

    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self._broker_epochs)

    def live_or_shutting_down_brokers(self) -> list[Broker]:
        """Accepted brokers, in broker-id order."""
        return [self._live_brokers[b] for b in sorted(self._live_brokers)]

    def live_or_shutting_down_broker(self, broker_id: int) -> Broker | None:
        return self._live_brokers.get(broker_id)

    def live_broker_id_and_epochs(self) -> Mapping[int, int]:
        """Read-only live view of broker id -> broker epoch (czxid)."""
        return MappingProxyType(self._broker_epochs)

    def is_replica_online(
        self, broker_id: int, tp: TopicPartition, include_shutting_down: bool = False
    ) -> bool:
        if broker_id not in self._broker_epochs:
            return False
        if not include_shutting_down and broker_id in self.shutting_down_broker_ids:
            return False
        offline = self.replicas_on_offline_dirs.get(broker_id)
        return not offline or tp not in offline

    def online_replicas(
        self, tp: TopicPartition, include_shutting_down: bool = False
    ) -> Container[int]:
        """A membership view for the election wrappers: ``b in view`` iff b's replica is online."""
        return _OnlineReplicas(self, tp, include_shutting_down)

    # ------------------------------------------------------------------ topics and ids

    def set_all_topics(self, topics: Iterable[str]) -> None:
        self.all_topics.clear()
        self.all_topics.update(topics)

    def add_topic_id(self, topic: str, topic_id: str) -> None:
        """Record a topic id; the topic must be known and neither mapping may conflict."""
        if topic not in self.all_topics:
            raise ValueError(f"topic {topic} is not contained in all topics.")
        existing_id = self.topic_ids.get(topic)
        if existing_id is not None and existing_id != topic_id:
            raise ValueError(
                f"topic ID map already contained ID for topic {topic} and new ID {topic_id} "
                f"did not match existing ID {existing_id}"
            )
        existing_name = self.topic_names.get(topic_id)
        if existing_name is not None and existing_name != topic:
            raise ValueError(
                f"topic name map already contained ID {topic_id} and new name {topic} "
                f"did not match existing name {existing_name}"
            )
        self.topic_ids[topic] = topic_id
        self.topic_names[topic_id] = topic

    def topic_name(self, topic_id: str) -> str | None:
        return self.topic_names.get(topic_id)

    # ------------------------------------------------------------------ assignments

    def partition_replica_assignment(self, tp: TopicPartition) -> tuple[int, ...]:
        """RS of the partition; empty if the topic or partition is unknown."""
        entry = self._table.get(tp)
        if entry is None or entry.assignment is None:
            return ()
        return entry.assignment.replicas

    def partition_full_replica_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        entry = self._table.get(tp)
        if entry is None or entry.assignment is None:
            return EMPTY_ASSIGNMENT
        return entry.assignment

    def update_partition_full_replica_assignment(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        entry, previous = self._table.set_assignment(tp, assignment)
        self._update_imbalance(tp, previous, entry.leadership, entry.assignment, entry.leadership)

    def partition_replica_assignment_for_topic(
        self, topic: str
    ) -> dict[TopicPartition, tuple[int, ...]]:
        return {tp: a.replicas for tp, a in self._table.assignments(topic)}

    def partition_full_replica_assignment_for_topic(
        self, topic: str
    ) -> dict[TopicPartition, ReplicaAssignment]:
        return dict(self._table.assignments(topic))

    def iter_assignments(self) -> Iterator[tuple[TopicPartition, ReplicaAssignment]]:
        """(tp, full assignment) of every assigned partition, lazily, in insertion order."""
        return self._table.assignments()

    def iter_partitions(self, topic: str | None = None) -> Iterator[TopicPartition]:
        """Partitions with an assignment, lazily, in insertion order."""
        return (tp for tp, _ in self._table.assignments(topic))

    def all_partitions(self) -> set[TopicPartition]:
        return set(self.iter_partitions())

    def partitions_for_topic(self, topic: str) -> set[TopicPartition]:
        return set(self.iter_partitions(topic))

    def partitions_on_broker(self, broker_id: int) -> set[TopicPartition]:
        return {tp for tp, a in self._table.assignments() if broker_id in a.replicas}

    def replicas_on_brokers(self, broker_ids: Collection[int]) -> set[PartitionAndReplica]:
        return {
            PartitionAndReplica(tp, r)
            for tp, a in self._table.assignments()
            for r in a.replicas
            if r in broker_ids
        }

    def replicas_for_topic(self, topic: str) -> set[PartitionAndReplica]:
        return {
            PartitionAndReplica(tp, r)
            for tp, a in self._table.assignments(topic)
            for r in a.replicas
        }

    def replicas_for_partitions(self, tps: Iterable[TopicPartition]) -> set[PartitionAndReplica]:
        return {
            PartitionAndReplica(tp, r) for tp in tps for r in self.partition_replica_assignment(tp)
        }

    def online_and_offline_replicas(
        self,
    ) -> tuple[set[PartitionAndReplica], set[PartitionAndReplica]]:
        """All assigned replicas split by ``is_replica_online`` (shutting down = offline)."""
        online: set[PartitionAndReplica] = set()
        offline: set[PartitionAndReplica] = set()
        for tp, a in self._table.assignments():
            for r in a.replicas:
                is_online = self.is_replica_online(r, tp)
                (online if is_online else offline).add(PartitionAndReplica(tp, r))
        return online, offline

    # ------------------------------------------------------------------ leadership

    def partition_leadership_info(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        entry = self._table.get(tp)
        return None if entry is None else entry.leadership

    def partition_leadership_and_assignment(
        self, tp: TopicPartition
    ) -> tuple[LeaderIsrAndControllerEpoch | None, ReplicaAssignment]:
        """``(partition_leadership_info(tp), partition_full_replica_assignment(tp))`` in one
        lookup (the state machines' and the request batch's bulk paths)."""
        entry = self._table.get(tp)
        if entry is None:
            return None, EMPTY_ASSIGNMENT
        assignment = entry.assignment
        return entry.leadership, EMPTY_ASSIGNMENT if assignment is None else assignment

    def partition_leader_and_isr(self, tp: TopicPartition) -> LeaderAndIsr | None:
        info = self.partition_leadership_info(tp)
        return None if info is None else info.leader_and_isr

    def put_partition_leadership_info(
        self, tp: TopicPartition, info: LeaderIsrAndControllerEpoch
    ) -> None:
        entry, previous = self._table.set_leadership(tp, info)
        assignment = entry.assignment if entry.assignment is not None else EMPTY_ASSIGNMENT
        self._update_imbalance(tp, assignment, previous, assignment, entry.leadership)

    def remove_partition_leadership_info(self, tp: TopicPartition) -> None:
        """Drop one cache entry (not in Kafka's context; keeps the imbalance metric exact)."""
        entry = self._table.get(tp)
        if entry is None or entry.leadership is None:
            return
        assignment = entry.assignment if entry.assignment is not None else EMPTY_ASSIGNMENT
        self._update_imbalance(tp, assignment, entry.leadership, None, None)
        self._table.clear_leadership(tp, entry)

    def partitions_leadership_info(
        self,
    ) -> Iterator[tuple[TopicPartition, LeaderIsrAndControllerEpoch]]:
        return self._table.leaderships()

    def clear_partition_leadership_info(self) -> None:
        self._table.clear_all_leadership()
        # Kafka leaves the counter alone; it only ever clears an already-empty cache (after
        # resetContext). Zeroing keeps counter == recount in every case.
        self._preferred_replica_imbalance_count = 0

    def leader_epoch(self, tp: TopicPartition) -> int:
        """-2 if the topic is queued for deletion, else the cached leader epoch, else -1."""
        if tp.topic in self._topics_to_be_deleted:
            return EPOCH_DURING_DELETE
        info = self.partition_leadership_info(tp)
        return NO_EPOCH if info is None else info.leader_and_isr.leader_epoch

    def partitions_with_leaders(self) -> set[TopicPartition]:
        queued = self._topics_to_be_deleted
        return {tp for tp, _ in self.partitions_leadership_info() if tp.topic not in queued}

    def partitions_with_offline_leader(self) -> set[TopicPartition]:
        """Leader not online (dead, shutting down, offline dir or -1); queued topics excluded."""
        queued = self._topics_to_be_deleted
        return {
            tp
            for tp, info in self.partitions_leadership_info()
            if tp.topic not in queued and not self.is_replica_online(info.leader_and_isr.leader, tp)
        }

    def partition_leaders_on_broker(self, broker_id: int) -> set[TopicPartition]:
        """Partitions led by the broker with RF > 1, queued topics excluded."""
        queued = self._topics_to_be_deleted
        return {
            tp
            for tp, e in self._table.entries()
            if e.leadership is not None
            and tp.topic not in queued
            and e.leadership.leader_and_isr.leader == broker_id
            and e.assignment is not None
            and len(e.assignment.replicas) > 1
        }

    def _update_imbalance(
        self,
        tp: TopicPartition,
        old_assignment: ReplicaAssignment | None,
        old_info: LeaderIsrAndControllerEpoch | None,
        new_assignment: ReplicaAssignment | None,
        new_info: LeaderIsrAndControllerEpoch | None,
    ) -> None:
        """Kafka's ``updatePreferredReplicaImbalanceMetric``: subtract old status, add new."""
        if tp.topic in self._topics_to_be_deleted:
            return
        if old_assignment is not None and old_info is not None:
            self._preferred_replica_imbalance_count -= _imbalanced(old_assignment, old_info)
        if new_assignment is not None and new_info is not None:
            self._preferred_replica_imbalance_count += _imbalanced(new_assignment, new_info)

    def _clean_imbalance(self, topic: str) -> None:
        """Kafka's ``cleanPreferredReplicaImbalanceMetric``: drop a topic's contribution."""
        for _, e in self._table.entries(topic):
            if e.assignment is not None and e.leadership is not None:
                self._preferred_replica_imbalance_count -= _imbalanced(e.assignment, e.leadership)

    # ------------------------------------------------------------------ partition states

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        """The recorded state; NonExistentPartition when none is recorded."""
        entry = self._table.get(tp)
        if entry is None or entry.state is None:
            return _NON_EXISTENT
        return entry.state

    def has_partition_state(self, tp: TopicPartition) -> bool:
        entry = self._table.get(tp)
        return entry is not None and entry.state is not None

    def put_partition_state(self, tp: TopicPartition, state: PartitionState) -> None:
        previous = self._table.set_state(tp, state)
        self._update_offline_count(tp, _NON_EXISTENT if previous is None else previous, state)

    def put_partition_state_if_not_exists(self, tp: TopicPartition, state: PartitionState) -> None:
        """Insert ``state`` if none is recorded; counts as a NonExistent -> state transition.

        Kafka also re-counts when the recorded state already equals ``state``; that path is
        unreachable there (only NonExistentPartition is ever passed) and is not reproduced.
        """
        if self._table.set_state_if_absent(tp, state):
            self._update_offline_count(tp, _NON_EXISTENT, state)

    def _update_offline_count(
        self, tp: TopicPartition, current: PartitionState, target: PartitionState
    ) -> None:
        # Topics whose deletion has started are not tracked (pitfall 16): the deletion manager
        # moves their partitions Offline -> NonExistent *before* begin_topic_deletion.
        if tp.topic in self._topics_with_deletion_started:
            return
        if current != _OFFLINE and target == _OFFLINE:
            self._offline_partition_count += 1
        elif current == _OFFLINE and target != _OFFLINE:
            self._offline_partition_count -= 1

    def partition_states(self) -> Iterator[tuple[TopicPartition, PartitionState]]:
        """Every recorded partition state."""
        return self._table.states()

    def partitions_in_states(
        self, states: Collection[PartitionState], topic: str | None = None
    ) -> set[TopicPartition]:
        """Recorded partitions in ``states``; with ``topic``, that topic's *assigned* partitions."""
        if topic is None:
            return {tp for tp, s in self.partition_states() if s in states}
        return {
            tp
            for tp, e in self._table.entries(topic)
            if e.assignment is not None
            and (_NON_EXISTENT if e.state is None else e.state) in states
        }

    def partitions_in_state(
        self, state: PartitionState, topic: str | None = None
    ) -> set[TopicPartition]:
        return self.partitions_in_states((state,), topic)

    def check_valid_partition_state_change(
        self, partitions: Iterable[TopicPartition], target: PartitionState
    ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        return transitions.check_valid_partition_transitions(
            ((tp, self.partition_state(tp)) for tp in partitions), target
        )

    # ------------------------------------------------------------------ replica states

    def replica_state(self, replica: PartitionAndReplica) -> ReplicaState:
        """The recorded state; NonExistentReplica when none is recorded."""
        state = self._table.replica_state(replica.tp, replica.replica)
        return _NON_EXISTENT_REPLICA if state is None else state

    def replica_states_or_insert(
        self, replicas: Iterable[PartitionAndReplica], default: ReplicaState
    ) -> list[ReplicaState]:
        """Each replica's state, recording ``default`` first for those without one (Kafka's
        ``putReplicaStateIfNotExists`` then ``replicaState``, in one pass)."""
        table = self._table
        out: list[ReplicaState] = []
        for tp, replica in replicas:
            state = table.replica_state(tp, replica)
            if state is None:
                table.set_replica_state(tp, replica, default, overwrite=False)
                state = default
            out.append(state)
        return out

    def put_replica_states(
        self, tp: TopicPartition, states: tuple[tuple[int, ReplicaState], ...]
    ) -> None:
        """``put_replica_state`` of each ``(replica, state)`` of one partition."""
        self._table.set_replica_states(tp, states)

    def has_replica_state(self, replica: PartitionAndReplica) -> bool:
        return self._table.replica_state(replica.tp, replica.replica) is not None

    def put_replica_state(self, replica: PartitionAndReplica, state: ReplicaState) -> None:
        self._table.set_replica_state(replica.tp, replica.replica, state, overwrite=True)

    def put_replica_state_if_not_exists(
        self, replica: PartitionAndReplica, state: ReplicaState
    ) -> None:
        self._table.set_replica_state(replica.tp, replica.replica, state, overwrite=False)

    def remove_replica_state(self, replica: PartitionAndReplica) -> None:
        self._table.remove_replica_state(replica.tp, replica.replica)

    def replica_states(self) -> Iterator[tuple[PartitionAndReplica, ReplicaState]]:
        """Every recorded replica state."""
        return ((PartitionAndReplica(tp, r), s) for tp, r, s in self._table.replica_states())

    def replicas_in_state(self, topic: str, state: ReplicaState) -> set[PartitionAndReplica]:
        """Assigned replicas of ``topic`` in ``state``."""
        return {r for r in self.replicas_for_topic(topic) if self.replica_state(r) == state}

    def are_all_replicas_in_state(self, topic: str, state: ReplicaState) -> bool:
        return all(self.replica_state(r) == state for r in self.replicas_for_topic(topic))

    def are_all_replicas_for_topic_deleted(self, topic: str) -> bool:
        return self.are_all_replicas_in_state(topic, ReplicaState.ReplicaDeletionSuccessful)

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        return any(self.replica_state(r) == state for r in self.replicas_for_topic(topic))

    def check_valid_replica_state_change(
        self, replicas: Iterable[PartitionAndReplica], target: ReplicaState
    ) -> tuple[list[PartitionAndReplica], list[PartitionAndReplica]]:
        return transitions.check_valid_replica_transitions(
            ((r, self.replica_state(r)) for r in replicas), target
        )

    # ------------------------------------------------------------------ topic deletion

    @property
    def topics_to_be_deleted(self) -> AbstractSet[str]:
        return self._topics_to_be_deleted

    @property
    def topics_with_deletion_started(self) -> AbstractSet[str]:
        return self._topics_with_deletion_started

    def topics_queued_for_deletion(self) -> AbstractSet[str]:
        return self._topics_to_be_deleted

    def queue_topic_deletion(self, topics: Iterable[str]) -> None:
        # Only newly queued topics give up their imbalance contribution: a topic can be passed
        # again while its deletion is pending, and must not be subtracted twice.
        newly = [t for t in dict.fromkeys(topics) if t not in self._topics_to_be_deleted]
        self._topics_to_be_deleted.update(newly)
        for topic in newly:
            self._clean_imbalance(topic)

    def begin_topic_deletion(self, topics: Iterable[str]) -> None:
        self._topics_with_deletion_started.update(topics)

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return topic in self._topics_with_deletion_started

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return topic in self._topics_to_be_deleted

    def is_topic_eligible_for_deletion(self, topic: str) -> bool:
        return (
            topic in self._topics_to_be_deleted and topic not in self.topics_ineligible_for_deletion
        )

    def remove_topic(self, topic: str) -> None:
        """Forget a topic's assignments, leadership, id and deletion marks (not its states)."""
        # A queued topic's imbalance was already subtracted when it was queued.
        if topic not in self._topics_to_be_deleted:
            self._clean_imbalance(topic)
        self._topics_to_be_deleted.discard(topic)
        self._topics_with_deletion_started.discard(topic)
        # Kafka leaves these behind; here a topic created again under the same name would
        # then be held back from deletion (a leftover reassignment entry makes it
        # "reassigning", a leftover ineligible mark keeps it waiting).
        self.topics_ineligible_for_deletion.discard(topic)
        self.partitions_being_reassigned.difference_update(
            [tp for tp in self.partitions_being_reassigned if tp.topic == topic]
        )
        self.all_topics.discard(topic)
        topic_id = self.topic_ids.pop(topic, None)
        if topic_id is not None:
            self.topic_names.pop(topic_id, None)
        # Kafka drops leadership only for partitions that had an assignment.
        for tp, entry in list(self._table.entries(topic)):
            if entry.assignment is not None:
                self._table.clear_leadership(tp, entry)
                self._table.clear_assignment(tp, entry)

    # ------------------------------------------------------------------ reset

    def reset_context(self) -> None:
        """Forget everything (on resignation): brokers, topics, states, counters, epoch."""
        self._topics_to_be_deleted.clear()
        self._topics_with_deletion_started.clear()
        self.topics_ineligible_for_deletion.clear()
        self.shutting_down_broker_ids.clear()
        self.epoch = INITIAL_CONTROLLER_EPOCH
        self.epoch_zk_version = INITIAL_CONTROLLER_EPOCH_ZK_VERSION
        self.all_topics.clear()
        self.topic_ids.clear()
        self.topic_names.clear()
        self._table.clear()
        self.partitions_being_reassigned.clear()
        self.replicas_on_offline_dirs.clear()
        self._live_brokers.clear()
        self._broker_epochs.clear()
        self._reset_counters()
