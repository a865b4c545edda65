"""``ControllerContext`` (spec 3.1, catalogue 6.5).

Kafka's ``ControllerContextTest`` tests #1-#5, #9 and #10 are ported here under their catalogue
names; #6-#8 exercise only the ``ReplicaAssignment`` algebra and live in
``test_reassignment_algebra.py``. ``testRemoveMetricsOnResetContext`` is about Yammer metric
registration and has no counterpart (the context holds no metrics registry).

The stateful test against a naive reference model is in ``test_context_model.py``.
"""

from __future__ import annotations

import pytest

from controller.core.context import ControllerContext
from controller.core.model import (
    Broker,
    EndPoint,
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
TP1 = TopicPartition("A", 0)
TP2 = TopicPartition("A", 1)
TP3 = TopicPartition("B", 0)


def broker(broker_id: int, host: str = "localhost") -> Broker:
    return Broker(broker_id, (EndPoint("PLAINTEXT", host, 9900 + broker_id),))


def lice(leader: int, isr: tuple[int, ...], epoch: int = 0) -> LeaderIsrAndControllerEpoch:
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, epoch, isr), 0)


@pytest.fixture
def ctx() -> ControllerContext:
    """Kafka's fixture: brokers 1-3 (epoch 1); A-0 = [1,2,3], A-1 = [2,3,1], B-0 = [3,1,2]."""
    c = ControllerContext()
    c.set_live_brokers({broker(b): 1 for b in (1, 2, 3)})
    for tp, replicas in ((TP1, (1, 2, 3)), (TP2, (2, 3, 1)), (TP3, (3, 1, 2))):
        c.update_partition_full_replica_assignment(tp, ReplicaAssignment(replicas))
    return c


# --------------------------------------------------------------------------------------------
# 6.5 ControllerContextTest
# --------------------------------------------------------------------------------------------


def test_update_partition_full_replica_assignment_updates_replica_assignment(
    ctx: ControllerContext,
) -> None:
    ctx.update_partition_full_replica_assignment(TP1, ReplicaAssignment((4,)))
    full = ctx.partition_full_replica_assignment(TP1)
    assert (full.replicas, full.adding_replicas, full.removing_replicas) == ((4,), (), ())

    expected = ReplicaAssignment.of([3], [1], [2])
    ctx.update_partition_full_replica_assignment(TP1, expected)
    assert ctx.partition_full_replica_assignment(TP1) == expected


def test_partition_replica_assignment_returns_empty_seq_if_topic_or_partition_does_not_exist(
    ctx: ControllerContext,
) -> None:
    assert ctx.partition_replica_assignment(TopicPartition("NONEXISTENT", 0)) == ()
    assert ctx.partition_replica_assignment(TopicPartition("A", 100)) == ()


def test_partition_full_replica_assignment_returns_empty_assignment_if_topic_or_partition_does_not_exist(  # noqa: E501
    ctx: ControllerContext,
) -> None:
    empty = ReplicaAssignment((), (), ())
    assert ctx.partition_full_replica_assignment(TopicPartition("NONEXISTENT", 0)) == empty
    assert ctx.partition_full_replica_assignment(TopicPartition("A", 100)) == empty


def test_partition_replica_assignment_for_topic_returns_empty_map_if_topic_does_not_exist(
    ctx: ControllerContext,
) -> None:
    assert ctx.partition_replica_assignment_for_topic("NONEXISTENT") == {}


def test_partition_replica_assignment_for_topic_returns_expected_replica_assignments(
    ctx: ControllerContext,
) -> None:
    assert ctx.partition_replica_assignment_for_topic("A") == {TP1: (1, 2, 3), TP2: (2, 3, 1)}


def test_preferred_replica_imbalance_metric(ctx: ControllerContext) -> None:
    for tp in (TP1, TP2, TP3):
        ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment((1, 2, 3)))
    assert ctx.preferred_replica_imbalance_count == 0

    ctx.put_partition_leadership_info(TP1, lice(1, (1, 2, 3)))
    assert ctx.preferred_replica_imbalance_count == 0
    ctx.put_partition_leadership_info(TP2, lice(2, (2, 3, 1)))
    assert ctx.preferred_replica_imbalance_count == 1
    ctx.put_partition_leadership_info(TP3, lice(3, (3, 1, 2)))
    assert ctx.preferred_replica_imbalance_count == 2

    ctx.update_partition_full_replica_assignment(TP1, ReplicaAssignment((2, 3, 1)))
    ctx.update_partition_full_replica_assignment(TP2, ReplicaAssignment((2, 3, 1)))
    assert ctx.preferred_replica_imbalance_count == 2  # A-0 now imbalanced, A-1 balanced

    ctx.queue_topic_deletion({TP3.topic})
    assert ctx.preferred_replica_imbalance_count == 1

    ctx.put_partition_leadership_info(TP3, lice(1, (3, 1, 2)))  # queued: ignored
    assert ctx.preferred_replica_imbalance_count == 1

    ctx.remove_topic(TP1.topic)
    ctx.remove_topic(TP2.topic)
    ctx.remove_topic(TP3.topic)
    assert ctx.preferred_replica_imbalance_count == 0


def test_preferred_replica_imbalance_metric_on_concurrent_topic_deletion(
    ctx: ControllerContext,
) -> None:
    tp_a, tp_b = TopicPartition("A", 0), TopicPartition("B", 0)
    ctx.update_partition_full_replica_assignment(tp_a, ReplicaAssignment((1, 2, 3)))
    ctx.update_partition_full_replica_assignment(tp_b, ReplicaAssignment((1, 2, 3)))
    assert ctx.preferred_replica_imbalance_count == 0

    ctx.queue_topic_deletion({"A"})
    ctx.put_partition_leadership_info(tp_a, lice(-1, (1, 2, 3)))
    assert ctx.preferred_replica_imbalance_count == 0

    # B is queued before A's deletion completes, so A is passed again: no double decrement.
    ctx.queue_topic_deletion(["A", "B"])
    assert ctx.preferred_replica_imbalance_count == 0


# --------------------------------------------------------------------------------------------
# Metric bookkeeping details
# --------------------------------------------------------------------------------------------


def test_imbalance_quirk_for_adding_preferred_replica(ctx: ControllerContext) -> None:
    # head(RS) = 4 is an adding replica: imbalanced only while 4 IS in the ISR (pitfall 15).
    ctx.update_partition_full_replica_assignment(TP1, ReplicaAssignment.of([1, 2, 3]))
    ctx.put_partition_leadership_info(TP1, lice(1, (1, 2, 3)))
    assert ctx.preferred_replica_imbalance_count == 0

    reassigning = ReplicaAssignment.of([1, 2, 3]).reassign_to([4, 2, 3])
    assert reassigning.replicas[0] == 4 and 4 in reassigning.adding_replicas
    ctx.update_partition_full_replica_assignment(TP1, reassigning)
    assert ctx.preferred_replica_imbalance_count == 0  # 4 not in ISR: "balanced"

    ctx.put_partition_leadership_info(TP1, lice(1, (1, 2, 3, 4)))
    assert ctx.preferred_replica_imbalance_count == 1  # 4 joined the ISR: imbalanced

    ctx.put_partition_leadership_info(TP1, lice(4, (1, 2, 3, 4)))
    assert ctx.preferred_replica_imbalance_count == 1  # even though 4 now leads


def test_imbalance_with_removing_head_uses_plain_rule(ctx: ControllerContext) -> None:
    # head(RS) is a removing replica: the plain leader == head(RS) rule applies.
    reassigning = ReplicaAssignment.of([1, 2, 3]).reassign_to([2, 3, 1])
    assert not reassigning.is_being_reassigned
    ctx.update_partition_full_replica_assignment(TP1, ReplicaAssignment.of([1, 2, 4], [4], [1]))
    ctx.put_partition_leadership_info(TP1, lice(1, (1, 2)))
    assert ctx.preferred_replica_imbalance_count == 0
    ctx.put_partition_leadership_info(TP1, lice(2, (1, 2)))
    assert ctx.preferred_replica_imbalance_count == 1


def test_leadership_without_assignment_counts_as_balanced() -> None:
    # Kafka would throw on replicas.head here; the port treats an empty RS as balanced.
    c = ControllerContext()
    c.put_partition_leadership_info(TP1, lice(1, (1,)))
    assert c.preferred_replica_imbalance_count == 0
    c.update_partition_full_replica_assignment(TP1, ReplicaAssignment((2, 1)))
    assert c.preferred_replica_imbalance_count == 1


def test_remove_partition_leadership_info_keeps_imbalance_exact(ctx: ControllerContext) -> None:
    ctx.put_partition_leadership_info(TP1, lice(2, (1, 2)))
    assert ctx.preferred_replica_imbalance_count == 1
    ctx.remove_partition_leadership_info(TP1)
    assert ctx.preferred_replica_imbalance_count == 0
    assert ctx.partition_leadership_info(TP1) is None
    assert ctx.partition_with_leaders_count() == 0
    ctx.remove_partition_leadership_info(TP1)  # absent: no-op
    assert ctx.preferred_replica_imbalance_count == 0


def test_updating_offline_partitions_count(ctx: ControllerContext) -> None:
    # Context half of PartitionStateMachineTest #20.
    tps = [TopicPartition("test", p) for p in range(4)]
    for tp in tps:
        ctx.put_partition_state_if_not_exists(tp, P.NonExistentPartition)
        ctx.put_partition_state(tp, P.NewPartition)
    for tp in tps:
        ctx.put_partition_state(tp, P.OfflinePartition)
    assert ctx.offline_partition_count == 4
    ctx.put_partition_state(tps[0], P.OfflinePartition)  # Offline -> Offline: no change
    assert ctx.offline_partition_count == 4
    for tp in tps:
        ctx.put_partition_state(tp, P.OnlinePartition)
    assert ctx.offline_partition_count == 0


def test_no_offline_partitions_change_for_topics_being_deleted(ctx: ControllerContext) -> None:
    # Context half of PartitionStateMachineTest #21.
    ctx.queue_topic_deletion({"test"})
    ctx.begin_topic_deletion({"test"})
    for p in range(4):
        tp = TopicPartition("test", p)
        ctx.put_partition_state(tp, P.NewPartition)
        ctx.put_partition_state(tp, P.OfflinePartition)
    assert ctx.offline_partition_count == 0
    assert ctx.partitions_states_summary()[P.OfflinePartition] == 4


def test_updating_offline_partitions_count_during_topic_deletion(ctx: ControllerContext) -> None:
    # Context half of PartitionStateMachineTest #22: Offline -> NonExistent is counted before
    # the deletion is marked started.
    tps = [TopicPartition("test", p) for p in range(4)]
    for tp in tps:
        ctx.put_partition_state(tp, P.NewPartition)
        ctx.put_partition_state(tp, P.OfflinePartition)
    assert ctx.offline_partition_count == 4
    ctx.queue_topic_deletion({"test"})
    assert ctx.offline_partition_count == 4  # queued is not enough
    for tp in tps:
        ctx.put_partition_state(tp, P.NonExistentPartition)
    ctx.begin_topic_deletion({"test"})
    assert ctx.offline_partition_count == 0


def test_offline_count_is_not_corrected_when_deletion_starts_on_offline_partitions(
    ctx: ControllerContext,
) -> None:
    # Kafka parity: begin_topic_deletion does not touch the counter, which is why the deletion
    # manager moves partitions to NonExistent first.
    ctx.put_partition_state(TP1, P.OfflinePartition)
    ctx.queue_topic_deletion({"A"})
    ctx.begin_topic_deletion({"A"})
    ctx.put_partition_state(TP1, P.NonExistentPartition)  # not counted: deletion started
    assert ctx.offline_partition_count == 1


def test_put_partition_state_if_not_exists(ctx: ControllerContext) -> None:
    ctx.put_partition_state_if_not_exists(TP1, P.OfflinePartition)
    assert ctx.partition_state(TP1) is P.OfflinePartition
    assert ctx.offline_partition_count == 1
    ctx.put_partition_state_if_not_exists(TP1, P.OfflinePartition)  # exists: nothing counted
    ctx.put_partition_state_if_not_exists(TP1, P.NewPartition)
    assert ctx.partition_state(TP1) is P.OfflinePartition
    assert ctx.offline_partition_count == 1


# --------------------------------------------------------------------------------------------
# Brokers and online checks
# --------------------------------------------------------------------------------------------


def test_live_broker_views(ctx: ControllerContext) -> None:
    ctx.shutting_down_broker_ids.add(2)
    assert ctx.live_broker_ids() == {1, 3}
    assert ctx.live_or_shutting_down_broker_ids() == {1, 2, 3}
    assert [b.id for b in ctx.live_or_shutting_down_brokers()] == [1, 2, 3]
    assert dict(ctx.live_broker_id_and_epochs()) == {1: 1, 2: 1, 3: 1}

    ctx.add_live_brokers({broker(4): 7})
    assert ctx.live_broker_id_and_epochs()[4] == 7
    ctx.remove_live_brokers({1, 4})
    assert ctx.live_or_shutting_down_broker_ids() == {2, 3}
    assert ctx.live_or_shutting_down_broker(1) is None

    ctx.set_live_brokers({broker(9): 3})
    assert ctx.live_or_shutting_down_broker_ids() == {9}
    assert ctx.live_broker_ids() == {9}


def test_update_broker_metadata_keeps_epoch(ctx: ControllerContext) -> None:
    moved = broker(2, host="elsewhere")
    ctx.update_broker_metadata(broker(2), moved)
    assert ctx.live_or_shutting_down_broker(2) == moved
    assert ctx.live_broker_id_and_epochs()[2] == 1


def test_is_replica_online(ctx: ControllerContext) -> None:
    assert ctx.is_replica_online(1, TP1)
    assert not ctx.is_replica_online(7, TP1)

    ctx.shutting_down_broker_ids.add(1)
    assert not ctx.is_replica_online(1, TP1)
    assert ctx.is_replica_online(1, TP1, include_shutting_down=True)

    ctx.replicas_on_offline_dirs[2] = {TP1}
    assert not ctx.is_replica_online(2, TP1)
    assert not ctx.is_replica_online(2, TP1, include_shutting_down=True)
    assert ctx.is_replica_online(2, TP2)

    view = ctx.online_replicas(TP1)
    assert [b for b in (1, 2, 3, 7) if b in view] == [3]
    view_sd = ctx.online_replicas(TP1, include_shutting_down=True)
    assert [b for b in (1, 2, 3, 7) if b in view_sd] == [1, 3]


def test_online_and_offline_replicas(ctx: ControllerContext) -> None:
    ctx.remove_live_brokers({3})
    ctx.shutting_down_broker_ids.add(2)
    online, offline = ctx.online_and_offline_replicas()
    assert online == {PartitionAndReplica(tp, 1) for tp in (TP1, TP2, TP3)}
    assert offline == {PartitionAndReplica(tp, b) for tp in (TP1, TP2, TP3) for b in (2, 3)}


def test_replica_and_partition_queries(ctx: ControllerContext) -> None:
    ctx.update_partition_full_replica_assignment(TopicPartition("C", 0), ReplicaAssignment((4,)))
    assert ctx.partitions_on_broker(4) == {TopicPartition("C", 0)}
    assert ctx.partitions_on_broker(1) == {TP1, TP2, TP3}
    assert ctx.replicas_on_brokers({4, 9}) == {PartitionAndReplica(TopicPartition("C", 0), 4)}
    assert ctx.replicas_for_topic("A") == {
        PartitionAndReplica(tp, b) for tp in (TP1, TP2) for b in (1, 2, 3)
    }
    assert ctx.partitions_for_topic("B") == {TP3}
    assert ctx.all_partitions() == {TP1, TP2, TP3, TopicPartition("C", 0)}
    assert ctx.partition_count() == 4
    assert ctx.replicas_for_partitions([TP3, TopicPartition("Z", 0)]) == {
        PartitionAndReplica(TP3, b) for b in (1, 2, 3)
    }


# --------------------------------------------------------------------------------------------
# Topic ids
# --------------------------------------------------------------------------------------------


def test_add_topic_id_requires_known_topic(ctx: ControllerContext) -> None:
    with pytest.raises(ValueError, match="not contained in all topics"):
        ctx.add_topic_id("A", "id-a")


def test_add_topic_id_rejects_conflicts(ctx: ControllerContext) -> None:
    ctx.set_all_topics({"A", "B"})
    ctx.add_topic_id("A", "id-a")
    ctx.add_topic_id("A", "id-a")  # same pair again is fine
    assert ctx.topic_ids == {"A": "id-a"}
    assert ctx.topic_name("id-a") == "A"

    with pytest.raises(ValueError, match=r"id-other.*id-a"):
        ctx.add_topic_id("A", "id-other")
    with pytest.raises(ValueError, match=r"id-a.*B.*A"):
        ctx.add_topic_id("B", "id-a")
    assert ctx.topic_ids == {"A": "id-a"}
    assert ctx.topic_names == {"id-a": "A"}


# --------------------------------------------------------------------------------------------
# Leadership views
# --------------------------------------------------------------------------------------------


def test_leadership_views(ctx: ControllerContext) -> None:
    ctx.put_partition_leadership_info(TP1, lice(1, (1, 2, 3), epoch=4))
    ctx.put_partition_leadership_info(TP2, lice(-1, (2,)))
    ctx.put_partition_leadership_info(TP3, lice(3, (3,)))
    ctx.shutting_down_broker_ids.add(3)

    assert ctx.partitions_with_leaders() == {TP1, TP2, TP3}
    assert ctx.partitions_with_offline_leader() == {TP2, TP3}
    assert ctx.partition_leaders_on_broker(1) == {TP1}
    assert ctx.partition_with_leaders_count() == 3
    assert ctx.leader_epoch(TP1) == 4
    assert ctx.leader_epoch(TopicPartition("A", 9)) == -1

    ctx.queue_topic_deletion({"B"})
    assert ctx.partitions_with_leaders() == {TP1, TP2}
    assert ctx.partitions_with_offline_leader() == {TP2}
    assert ctx.partition_leaders_on_broker(3) == set()
    assert ctx.leader_epoch(TP3) == -2


def test_partition_leaders_on_broker_skips_single_replica_partitions(
    ctx: ControllerContext,
) -> None:
    ctx.update_partition_full_replica_assignment(TP1, ReplicaAssignment((1,)))
    ctx.put_partition_leadership_info(TP1, lice(1, (1,)))
    ctx.put_partition_leadership_info(TP2, lice(1, (1, 2)))
    assert ctx.partition_leaders_on_broker(1) == {TP2}


def test_clear_partition_leadership_info(ctx: ControllerContext) -> None:
    ctx.put_partition_leadership_info(TP1, lice(2, (1, 2)))
    ctx.clear_partition_leadership_info()
    assert list(ctx.partitions_leadership_info()) == []
    assert ctx.partition_with_leaders_count() == 0
    assert ctx.preferred_replica_imbalance_count == 0
    assert ctx.partition_replica_assignment(TP1) == (1, 2, 3)  # assignments untouched


def test_leadership_isr_is_interned_but_equal(ctx: ControllerContext) -> None:
    ctx.put_partition_leadership_info(TP1, lice(1, (1, 2, 3), epoch=1))
    ctx.put_partition_leadership_info(TP2, lice(2, (1, 2, 3), epoch=9))
    a, b = ctx.partition_leader_and_isr(TP1), ctx.partition_leader_and_isr(TP2)
    assert a == LeaderAndIsr(1, 1, (1, 2, 3)) and b == LeaderAndIsr(2, 9, (1, 2, 3))
    assert a is not None and b is not None and a.isr is b.isr


# --------------------------------------------------------------------------------------------
# Partition and replica states
# --------------------------------------------------------------------------------------------


def test_partition_state_defaults_and_queries(ctx: ControllerContext) -> None:
    assert ctx.partition_state(TP1) is P.NonExistentPartition
    assert not ctx.has_partition_state(TP1)
    ctx.put_partition_state(TP1, P.NewPartition)
    ctx.put_partition_state(TP3, P.OfflinePartition)
    ctx.put_partition_state(TopicPartition("Z", 0), P.OfflinePartition)  # no assignment
    assert ctx.partitions_in_states({P.NewPartition, P.OfflinePartition}) == {
        TP1,
        TP3,
        TopicPartition("Z", 0),
    }
    assert ctx.partitions_in_state(P.OfflinePartition, topic="Z") == set()  # not assigned
    assert ctx.partitions_in_state(P.NonExistentPartition, topic="A") == {TP2}  # unrecorded
    assert ctx.partitions_states_summary() == {
        P.NewPartition: 1,
        P.OnlinePartition: 0,
        P.OfflinePartition: 2,
        P.NonExistentPartition: 0,
    }


def test_check_valid_state_changes(ctx: ControllerContext) -> None:
    ctx.put_partition_state(TP1, P.NewPartition)
    assert ctx.check_valid_partition_state_change([TP1, TP2], P.OnlinePartition) == ([TP1], [TP2])
    r1, r2 = PartitionAndReplica(TP1, 1), PartitionAndReplica(TP1, 2)
    ctx.put_replica_state(r1, R.OfflineReplica)
    assert ctx.check_valid_replica_state_change([r1, r2], R.ReplicaDeletionStarted) == (
        [r1],
        [r2],
    )


def test_replica_states(ctx: ControllerContext) -> None:
    r1, r2 = PartitionAndReplica(TP1, 1), PartitionAndReplica(TP1, 2)
    assert ctx.replica_state(r1) is R.NonExistentReplica
    ctx.put_replica_state_if_not_exists(r1, R.NewReplica)
    ctx.put_replica_state_if_not_exists(r1, R.OnlineReplica)
    assert ctx.replica_state(r1) is R.NewReplica
    ctx.put_replica_state(r1, R.OnlineReplica)
    ctx.put_replica_state(r2, R.OnlineReplica)
    assert ctx.replica_state(r1) is R.OnlineReplica
    assert ctx.replica_states_summary()[R.OnlineReplica] == 2
    assert ctx.replicas_in_state("A", R.OnlineReplica) == {r1, r2}
    assert ctx.is_any_replica_in_state("A", R.OnlineReplica)
    assert not ctx.are_all_replicas_in_state("A", R.OnlineReplica)  # A-1 has no states

    ctx.remove_replica_state(r1)
    assert not ctx.has_replica_state(r1)
    assert ctx.has_replica_state(r2)
    assert ctx.replica_states_summary()[R.OnlineReplica] == 1
    ctx.remove_replica_state(r1)  # absent: no-op
    assert ctx.replica_states_summary()[R.OnlineReplica] == 1


def test_are_all_replicas_for_topic_deleted(ctx: ControllerContext) -> None:
    for r in ctx.replicas_for_topic("B"):
        ctx.put_replica_state(r, R.ReplicaDeletionSuccessful)
    assert ctx.are_all_replicas_for_topic_deleted("B")
    assert not ctx.are_all_replicas_for_topic_deleted("A")


# --------------------------------------------------------------------------------------------
# Deletion bookkeeping, remove_topic, reset
# --------------------------------------------------------------------------------------------


def test_deletion_flags(ctx: ControllerContext) -> None:
    ctx.queue_topic_deletion({"A", "B"})
    ctx.topics_ineligible_for_deletion.add("B")
    ctx.begin_topic_deletion({"A"})
    assert ctx.topics_queued_for_deletion() == {"A", "B"}
    assert ctx.is_topic_queued_up_for_deletion("B")
    assert ctx.is_topic_deletion_in_progress("A") and not ctx.is_topic_deletion_in_progress("B")
    assert ctx.is_topic_eligible_for_deletion("A")
    assert not ctx.is_topic_eligible_for_deletion("B")
    assert not ctx.is_topic_eligible_for_deletion("C")


def test_remove_topic_subtracts_imbalance_only_if_not_queued(ctx: ControllerContext) -> None:
    ctx.put_partition_leadership_info(TP1, lice(2, (1, 2)))  # imbalanced
    ctx.put_partition_leadership_info(TP3, lice(1, (1, 2)))  # imbalanced
    assert ctx.preferred_replica_imbalance_count == 2
    ctx.queue_topic_deletion({"B"})
    assert ctx.preferred_replica_imbalance_count == 1
    ctx.remove_topic("B")  # already subtracted when queued
    assert ctx.preferred_replica_imbalance_count == 1
    ctx.remove_topic("A")  # never queued: subtracted now
    assert ctx.preferred_replica_imbalance_count == 0


def test_remove_topic_keeps_states_like_kafka(ctx: ControllerContext) -> None:
    ctx.set_all_topics({"A", "B"})
    ctx.add_topic_id("A", "id-a")
    ctx.put_partition_leadership_info(TP1, lice(1, (1,)))
    ctx.put_partition_leadership_info(TopicPartition("A", 7), lice(1, (1,)))  # unassigned
    ctx.put_partition_state(TP1, P.OnlinePartition)
    ctx.put_replica_state(PartitionAndReplica(TP1, 1), R.OnlineReplica)
    ctx.queue_topic_deletion({"A"})
    ctx.begin_topic_deletion({"A"})
    ctx.topics_ineligible_for_deletion.add("A")
    ctx.partitions_being_reassigned.update({TP1, TopicPartition("B", 0)})

    ctx.remove_topic("A")

    assert ctx.all_topics == {"B"}
    assert ctx.topic_ids == {} and ctx.topic_names == {}
    assert ctx.partitions_for_topic("A") == set()
    assert ctx.partition_leadership_info(TP1) is None
    # Kafka only drops leadership of partitions that had an assignment ...
    assert ctx.partition_leadership_info(TopicPartition("A", 7)) is not None
    # ... and leaves state-machine states to their owners.
    assert ctx.partition_state(TP1) is P.OnlinePartition
    assert ctx.replica_state(PartitionAndReplica(TP1, 1)) is R.OnlineReplica
    assert not ctx.is_topic_queued_up_for_deletion("A")
    assert not ctx.is_topic_deletion_in_progress("A")
    # Unlike Kafka, nothing of A may hold back the deletion of a topic created again as A:
    # its ineligible mark and its reassignment entries go (B's stay).
    assert "A" not in ctx.topics_ineligible_for_deletion
    assert ctx.partitions_being_reassigned == {TopicPartition("B", 0)}
    assert ctx.partition_count() == 1
    assert ctx.partition_with_leaders_count() == 1


def test_reset_context(ctx: ControllerContext) -> None:
    ctx.epoch, ctx.epoch_zk_version = 7, 3
    ctx.set_all_topics({"A"})
    ctx.add_topic_id("A", "id")
    ctx.shutting_down_broker_ids.add(1)
    ctx.put_partition_leadership_info(TP2, lice(3, (3,)))
    ctx.put_partition_state(TP1, P.OfflinePartition)
    ctx.put_replica_state(PartitionAndReplica(TP1, 1), R.OnlineReplica)
    ctx.partitions_being_reassigned.add(TP1)
    ctx.replicas_on_offline_dirs[1] = {TP1}
    ctx.queue_topic_deletion({"B"})
    ctx.begin_topic_deletion({"B"})
    ctx.topics_ineligible_for_deletion.add("B")

    ctx.reset_context()

    fresh = ControllerContext()
    assert (ctx.epoch, ctx.epoch_zk_version) == (0, 0)
    assert ctx.live_or_shutting_down_broker_ids() == set()
    assert not ctx.shutting_down_broker_ids
    assert not ctx.all_topics and not ctx.topic_ids and not ctx.topic_names
    assert ctx.all_partitions() == set()
    assert list(ctx.partitions_leadership_info()) == []
    assert list(ctx.partition_states()) == [] and list(ctx.replica_states()) == []
    assert not ctx.partitions_being_reassigned and not ctx.replicas_on_offline_dirs
    assert not ctx.topics_to_be_deleted and not ctx.topics_with_deletion_started
    assert not ctx.topics_ineligible_for_deletion
    assert ctx.offline_partition_count == 0 and ctx.preferred_replica_imbalance_count == 0
    assert ctx.partitions_states_summary() == fresh.partitions_states_summary()
    assert ctx.replica_states_summary() == fresh.replica_states_summary()
    assert ctx.partition_count() == 0 and ctx.partition_with_leaders_count() == 0



def test_partition_table_single_partition_topics_and_growth() -> None:
    """A topic with only partition 0 is stored without a per-topic dict; adding, removing and
    iterating partitions behave exactly as with one (insertion order kept)."""
    from controller.core.partition_table import PartitionTable

    table = PartitionTable()
    a0, a1, a2 = (TopicPartition("a", p) for p in range(3))
    table.set_assignment(a0, ReplicaAssignment((1, 2)))
    assert table.get(a1) is None and table.get(a0) is not None
    table.set_assignment(a2, ReplicaAssignment((2, 3)))
    table.set_assignment(a1, ReplicaAssignment((3, 1)))
    assert [tp for tp, _ in table.entries("a")] == [a0, a2, a1]
    b1, b0 = TopicPartition("b", 1), TopicPartition("b", 0)
    table.set_assignment(b1, ReplicaAssignment((1,)))
    table.set_assignment(b0, ReplicaAssignment((2,)))
    assert [tp for tp, _ in table.entries()] == [a0, a2, a1, b1, b0]
    for tp in (a0, a2, a1, b1, b0):
        entry = table.get(tp)
        assert entry is not None
        table.clear_assignment(tp, entry)
    assert list(table.entries()) == [] and table.assignment_count == 0
    table.set_assignment(a2, ReplicaAssignment((1,)))
    assert [tp for tp, _ in table.entries("a")] == [a2] and table.get(a0) is None
