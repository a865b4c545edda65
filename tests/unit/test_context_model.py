"""``ControllerContext`` against a naive reference model (one plain dict per Kafka map):
random operation sequences, every view and counter checked after each step."""

from __future__ import annotations

from collections import Counter

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from controller.core.context import ControllerContext
from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)

P = PartitionState
R = ReplicaState

# A small universe, so that random operations keep hitting the same partitions and topics.
TOPICS = ("A", "B")
TPS = [TopicPartition(t, p) for t in TOPICS for p in range(2)]
BROKERS = st.integers(1, 3)
tps = st.sampled_from(TPS)
topics = st.sampled_from(TOPICS)
replica_lists = st.lists(BROKERS, unique=True, min_size=1, max_size=4)


@st.composite
def replica_assignments(draw: st.DrawFn) -> ReplicaAssignment:
    a = ReplicaAssignment(tuple(draw(replica_lists)))
    if draw(st.booleans()):
        a = a.reassign_to(draw(replica_lists))
    return a


def _model_has_preferred_leader(a: ReplicaAssignment, info: LeaderIsrAndControllerEpoch) -> bool:
    if not a.replicas:
        return True
    head = a.replicas[0]
    if (a.adding_replicas or a.removing_replicas) and head in a.adding_replicas:
        return head not in info.leader_and_isr.isr
    return info.leader_and_isr.leader == head


class ContextMachine(RuleBasedStateMachine):
    """Kafka's usage protocol is respected where the counters depend on it:

    * ``begin_topic_deletion`` only for queued topics with no partition in OfflinePartition
      (the deletion manager moves them to NonExistent first);
    * ``remove_topic`` of a deletion-started topic only when none of its partitions is Offline
      (they are NonExistent by then and NonExistent -> Offline is invalid).
    """

    def __init__(self) -> None:
        super().__init__()
        self.ctx = ControllerContext()
        self.assignments: dict[TopicPartition, ReplicaAssignment] = {}
        self.leadership: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.pstates: dict[TopicPartition, PartitionState] = {}
        self.rstates: dict[PartitionAndReplica, ReplicaState] = {}
        self.queued: set[str] = set()
        self.started: set[str] = set()

    def _has_offline(self, topic: str) -> bool:
        return any(tp.topic == topic and s == P.OfflinePartition for tp, s in self.pstates.items())

    @rule(tp=tps, a=replica_assignments())
    def update_assignment(self, tp: TopicPartition, a: ReplicaAssignment) -> None:
        self.ctx.update_partition_full_replica_assignment(tp, a)
        self.assignments[tp] = a

    @rule(tp=tps, leader=st.integers(-1, 3), isr=replica_lists, epoch=st.integers(0, 3))
    def put_leadership(self, tp: TopicPartition, leader: int, isr: list[int], epoch: int) -> None:
        info = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, epoch, tuple(isr)), 0)
        self.ctx.put_partition_leadership_info(tp, info)
        self.leadership[tp] = info

    @rule(tp=tps)
    def remove_leadership(self, tp: TopicPartition) -> None:
        self.ctx.remove_partition_leadership_info(tp)
        self.leadership.pop(tp, None)

    @rule(tp=tps, state=st.sampled_from(PartitionState))
    def put_partition_state(self, tp: TopicPartition, state: PartitionState) -> None:
        self.ctx.put_partition_state(tp, state)
        self.pstates[tp] = state

    @rule(tp=tps, state=st.sampled_from(PartitionState))
    def put_partition_state_if_not_exists(self, tp: TopicPartition, state: PartitionState) -> None:
        self.ctx.put_partition_state_if_not_exists(tp, state)
        self.pstates.setdefault(tp, state)

    @rule(tp=tps, b=BROKERS, state=st.sampled_from(ReplicaState), overwrite=st.booleans())
    def put_replica_state(
        self, tp: TopicPartition, b: int, state: ReplicaState, overwrite: bool
    ) -> None:
        r = PartitionAndReplica(tp, b)
        if overwrite:
            self.ctx.put_replica_state(r, state)
            self.rstates[r] = state
        else:
            self.ctx.put_replica_state_if_not_exists(r, state)
            self.rstates.setdefault(r, state)

    @rule(tp=tps, b=BROKERS)
    def remove_replica_state(self, tp: TopicPartition, b: int) -> None:
        r = PartitionAndReplica(tp, b)
        self.ctx.remove_replica_state(r)
        self.rstates.pop(r, None)

    @rule(ts=st.lists(topics, max_size=3))
    def queue_topic_deletion(self, ts: list[str]) -> None:
        self.ctx.queue_topic_deletion(ts)
        self.queued.update(ts)

    @rule(topic=topics)
    def begin_topic_deletion(self, topic: str) -> None:
        if topic not in self.queued or self._has_offline(topic):
            return
        self.ctx.begin_topic_deletion({topic})
        self.started.add(topic)

    @rule(topic=topics)
    def remove_topic(self, topic: str) -> None:
        if topic in self.started and self._has_offline(topic):
            return
        self.ctx.remove_topic(topic)
        self.queued.discard(topic)
        self.started.discard(topic)
        for tp in [tp for tp in self.assignments if tp.topic == topic]:
            del self.assignments[tp]
            self.leadership.pop(tp, None)

    @precondition(lambda self: len(self.leadership) > 0)
    @rule()
    def clear_leadership(self) -> None:
        self.ctx.clear_partition_leadership_info()
        self.leadership.clear()

    @rule()
    def reset(self) -> None:
        self.ctx.reset_context()
        self.__init__()  # type: ignore[misc]

    # ---------------------------------------------------------------- invariants

    @invariant()
    def counters_match_a_recount(self) -> None:
        offline = sum(
            1
            for tp, s in self.pstates.items()
            if s == P.OfflinePartition and tp.topic not in self.started
        )
        imbalance = sum(
            1
            for tp, info in self.leadership.items()
            if tp.topic not in self.queued
            and not _model_has_preferred_leader(
                self.assignments.get(tp, ReplicaAssignment(())), info
            )
        )
        assert self.ctx.offline_partition_count == offline
        assert self.ctx.preferred_replica_imbalance_count == imbalance

    @invariant()
    def state_summaries_match(self) -> None:
        p_counts = Counter(self.pstates.values())
        r_counts = Counter(self.rstates.values())
        assert self.ctx.partitions_states_summary() == {s: p_counts[s] for s in PartitionState}
        assert self.ctx.replica_states_summary() == {s: r_counts[s] for s in ReplicaState}
        assert self.ctx.partition_count() == len(self.assignments)
        assert self.ctx.partition_with_leaders_count() == len(self.leadership)

    @invariant()
    def views_match_the_model(self) -> None:
        ctx = self.ctx
        assert dict(ctx.partition_states()) == self.pstates
        assert dict(ctx.replica_states()) == self.rstates
        assert dict(ctx.partitions_leadership_info()) == self.leadership
        assert ctx.all_partitions() == set(self.assignments)
        for tp in TPS:
            assert ctx.partition_full_replica_assignment(tp) == self.assignments.get(
                tp, ReplicaAssignment(())
            )
            assert ctx.partition_state(tp) == self.pstates.get(tp, P.NonExistentPartition)
            info = self.leadership.get(tp)
            expected_epoch = -1 if info is None else info.leader_and_isr.leader_epoch
            if tp.topic in self.queued:
                expected_epoch = -2
            assert ctx.leader_epoch(tp) == expected_epoch
        for states in ({P.NewPartition}, {P.OfflinePartition, P.NonExistentPartition}):
            assert ctx.partitions_in_states(states) == {
                tp for tp, s in self.pstates.items() if s in states
            }
            for topic in TOPICS:
                assert ctx.partitions_in_states(states, topic) == {
                    tp
                    for tp in self.assignments
                    if tp.topic == topic and self.pstates.get(tp, P.NonExistentPartition) in states
                }
        for topic in TOPICS:
            for state in ReplicaState:
                expected = {
                    PartitionAndReplica(tp, r)
                    for tp, a in self.assignments.items()
                    if tp.topic == topic
                    for r in a.replicas
                    if self.rstates.get(PartitionAndReplica(tp, r), R.NonExistentReplica) == state
                }
                assert ctx.replicas_in_state(topic, state) == expected
        assert set(ctx.topics_to_be_deleted) == self.queued
        assert set(ctx.topics_with_deletion_started) == self.started


TestContextMachine = ContextMachine.TestCase
TestContextMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
