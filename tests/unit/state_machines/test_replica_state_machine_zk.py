"""The replica state machine beyond Kafka's unit suite (reference §3.4, §7).

The OfflineReplica ISR removal against a real (in-memory) ZooKeeper: the ISR is never emptied
(pitfall 1), BADVERSION is retried (pitfall 2), state from a newer controller aborts without
resigning (pitfall 23), a stale epoch zkVersion is fenced (§1.2), a missing state znode is
tolerated only for topics queued for deletion, unchanged partitions are re-tagged with our
epoch, the LeaderAndIsr goes to every other replica (pitfall 3) but not for queued topics.
Also NewReplica's rules (pitfall 18), liveness not being checked (pitfall 17), request order
per broker and grouping by broker.
"""

from __future__ import annotations

import pytest

from controller.core.model import (
    PartitionAndReplica,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from controller.zk import paths
from controller.zk.errors import ConnectionLossError, ControllerMovedError
from tests.harness import ControllerHarness, touches
from tests.unit.state_machines.kafka_fixture import (
    BROKER,
    EPOCH,
    LAI,
    REPLICA,
    SR,
    STATE_PATH,
    TP,
    UMR,
    NewReplica,
    OfflineReplica,
    OnlineReplica,
    lice,
)

OTHER = 6


def online(h: ControllerHarness, *replicas: PartitionAndReplica) -> None:
    for pr in replicas:
        h.ctx.put_replica_state(pr, OnlineReplica)


def offline(h: ControllerHarness, *replicas: PartitionAndReplica) -> None:
    h.rsm.handle_state_changes(list(replicas), OfflineReplica)


# -- ISR removal -------------------------------------------------------------------------------


def test_offline_replica_never_empties_the_isr(h: ControllerHarness) -> None:
    """Pitfall 1: the last ISR member going offline leaves leader -1 and ISR [it]."""
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("t", {0: [BROKER]})
    online(h, REPLICA)
    h.set_leadership(TP, BROKER, [BROKER])

    offline(h, REPLICA)

    updated = lice(-1, (BROKER,), leader_epoch=1, partition_epoch=1)
    assert h.zk_state(TP) == updated
    assert h.ctx.partition_leadership_info(TP) == updated
    assert h.ctx.replica_state(REPLICA) is OfflineReplica
    assert h.channel.requests(kind=LAI) == []  # RS minus the replica: nobody
    # Every live broker learns the leaderless state.
    assert h.channel.only(OTHER, UMR).update_metadata(TP)[0] == updated


def test_offline_follower_leaves_the_isr_and_the_leader_stays(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("t", {0: [OTHER, BROKER]})
    online(h, REPLICA)
    h.set_leadership(TP, OTHER, [OTHER, BROKER])

    offline(h, REPLICA)

    updated = lice(OTHER, (OTHER,), leader_epoch=1, partition_epoch=1)
    assert h.zk_state(TP) == updated
    assert h.channel.only(OTHER, LAI).leader_and_isr(TP)[0] == updated


def test_isr_removal_is_retried_when_the_state_znode_changes_between_read_and_write(
    h: ControllerHarness,
) -> None:
    third = 7
    h.set_live_brokers([BROKER, OTHER, third])
    h.create_topic("t", {0: [OTHER, BROKER, third]})
    online(h, REPLICA)
    h.set_leadership(TP, OTHER, [OTHER, BROKER])

    def leader_expands_isr() -> None:  # lands after our read, before our write
        h.write_partition_state(TP, lice(OTHER, (OTHER, BROKER, third)))

    h.port.before("multi_many", leader_expands_isr, when=touches(STATE_PATH))

    offline(h, REPLICA)

    # Computed again from the re-read state: 5 leaves [6, 5, 7]; versions 1 -> 2.
    updated = lice(OTHER, (OTHER, third), leader_epoch=1, partition_epoch=2)
    assert h.zk_state(TP) == updated
    assert h.ctx.partition_leadership_info(TP) == updated
    assert h.ctx.replica_state(REPLICA) is OfflineReplica
    for broker in (OTHER, third):
        assert h.channel.only(broker, LAI).leader_and_isr(TP)[0] == updated


def test_state_written_by_a_newer_controller_aborts_the_isr_removal_without_resigning(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("t", {0: [BROKER, OTHER]})
    online(h, REPLICA)
    h.set_leadership(TP, BROKER, [BROKER, OTHER])
    newer = h.write_partition_state(TP, lice(BROKER, (BROKER, OTHER), controller_epoch=EPOCH + 1))

    offline(h, REPLICA)

    assert h.zk_state(TP) == newer
    assert h.ctx.replica_state(REPLICA) is OnlineReplica
    assert h.channel.requests(kind=LAI) == []
    assert h.channel.only(BROKER, SR).stop_replica(TP) == (0, False)  # still stopped
    [record] = h.state_changes("replica", result="failed")
    assert "another controller" in record["error"]
    assert h.controller.is_active and h.read(paths.CONTROLLER) is not None


def test_stale_epoch_zk_version_raises_controller_moved_and_sends_nothing(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("t", {0: [BROKER, OTHER]})
    online(h, REPLICA)
    before = h.set_leadership(TP, BROKER, [BROKER, OTHER])
    h.elect_rival()

    with pytest.raises(ControllerMovedError):
        offline(h, REPLICA)

    assert h.zk_state(TP) == before
    assert h.ctx.replica_state(REPLICA) is OnlineReplica
    assert h.rsm.batch.is_empty  # the queued StopReplica was discarded, not sent
    assert h.channel.sent == []


@pytest.mark.parametrize("queued", [False, True], ids=["live-topic", "queued-for-deletion"])
def test_missing_state_znode_fails_the_replica_unless_its_topic_is_queued_for_deletion(
    h: ControllerHarness, queued: bool
) -> None:
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("t", {0: [BROKER, OTHER]})
    online(h, REPLICA)
    h.set_leadership(TP, BROKER, [BROKER, OTHER], in_zk=False)  # cached, no znode
    if queued:
        h.ctx.queue_topic_deletion(["t"])
    zxid = h.zxid

    offline(h, REPLICA)

    assert h.zxid == zxid
    # Either way the state is not updated; only a live topic logs a failure.
    assert h.ctx.replica_state(REPLICA) is OnlineReplica
    failures = h.state_changes("replica", result="failed")
    assert len(failures) == (0 if queued else 1)
    assert h.channel.only(BROKER, SR).stop_replica(TP) == ((-2 if queued else 0), False)


def test_partition_without_the_replica_in_its_isr_is_not_written_but_cached_with_our_epoch(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("t", {0: [OTHER, BROKER]})
    online(h, REPLICA)
    h.set_leadership(TP, OTHER, [OTHER], controller_epoch=40)  # written by an older controller
    zxid = h.zxid

    offline(h, REPLICA)

    assert h.zxid == zxid
    cached = lice(OTHER, (OTHER,), controller_epoch=EPOCH)  # same state, our epoch
    assert h.ctx.partition_leadership_info(TP) == cached
    assert h.channel.only(OTHER, LAI).leader_and_isr(TP)[0] == cached
    assert h.ctx.replica_state(REPLICA) is OfflineReplica


def test_isr_removal_sends_no_leader_and_isr_for_a_topic_queued_for_deletion(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("t", {0: [OTHER, BROKER]})
    online(h, REPLICA)
    h.set_leadership(TP, OTHER, [OTHER, BROKER])
    h.ctx.queue_topic_deletion(["t"])

    offline(h, REPLICA)

    assert h.zk_state(TP) == lice(OTHER, (OTHER,), leader_epoch=1, partition_epoch=1)
    assert h.channel.requests(kind=LAI) == []
    assert h.channel.only(BROKER, SR).stop_replica(TP) == (-2, False)
    assert h.ctx.replica_state(REPLICA) is OfflineReplica


def test_failure_reading_the_state_znodes_still_stops_the_replicas(h: ControllerHarness) -> None:
    """Kafka's getTopicPartitionStatesFromZk turns a thrown read error into a failure of those
    partitions; the StopReplica requests and the replicas without leadership go on."""
    no_leader = TopicPartition("t", 1)
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("t", {0: [BROKER, OTHER], 1: [BROKER]})
    online(h, REPLICA, PartitionAndReplica(no_leader, BROKER))
    before = h.set_leadership(TP, BROKER, [BROKER, OTHER])
    h.port.fail("get_many", ConnectionLossError("injected"), when=touches(STATE_PATH))

    offline(h, REPLICA, PartitionAndReplica(no_leader, BROKER))

    assert h.zk_state(TP) == before
    assert h.ctx.replica_state(REPLICA) is OnlineReplica
    assert h.ctx.replica_state(PartitionAndReplica(no_leader, BROKER)) is OfflineReplica
    assert set(h.channel.only(BROKER, SR).partitions()) == {TP, no_leader}
    [record] = h.state_changes("replica", result="failed")
    assert (record["partition"], "injected" in record["error"]) == (0, True)


# -- ordering and grouping ---------------------------------------------------------------------


def test_each_broker_gets_leader_and_isr_then_update_metadata_then_stop_replica(
    h: ControllerHarness,
) -> None:
    """Broker 5's StopReplica is queued first (its replica of a is handled first), yet it is
    sent last: LeaderAndIsr -> UpdateMetadata -> StopReplica per broker (§4.3)."""
    a, b = TopicPartition("a", 0), TopicPartition("b", 0)
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("a", {0: [BROKER]})
    h.create_topic("b", {0: [OTHER, BROKER]})
    online(h, PartitionAndReplica(a, BROKER), PartitionAndReplica(b, OTHER))
    h.set_leadership(b, OTHER, [OTHER, BROKER])

    offline(h, PartitionAndReplica(a, BROKER), PartitionAndReplica(b, OTHER))

    assert h.channel.kinds(BROKER) == [LAI, UMR, SR]
    assert h.channel.only(BROKER, LAI).leader_and_isr(b)[0] == lice(
        -1, (BROKER,), leader_epoch=1, partition_epoch=1
    )
    assert h.channel.only(BROKER, SR).partitions() == [a]
    assert h.channel.kinds(OTHER) == [UMR, SR]


def test_replicas_of_one_partition_leave_the_isr_one_broker_at_a_time(
    h: ControllerHarness,
) -> None:
    """Grouped by broker: two removals, two writes, one leader-epoch bump each (pitfall 4);
    the batch keeps the last state per (broker, partition)."""
    h.set_live_brokers([5, 6, 7])
    h.create_topic("t", {0: [5, 6, 7]})
    online(h, PartitionAndReplica(TP, 5), PartitionAndReplica(TP, 6))
    h.set_leadership(TP, 5, [5, 6, 7])

    offline(h, PartitionAndReplica(TP, 6), PartitionAndReplica(TP, 5))

    final = lice(-1, (7,), leader_epoch=2, partition_epoch=2)
    assert h.zk_state(TP) == final
    assert h.channel.only(7, LAI).leader_and_isr(TP)[0] == final
    # 6 heard of the first removal (5 leaving), 5 of the second (6 leaving).
    assert h.channel.only(6, LAI).leader_and_isr(TP)[0] == lice(
        -1, (6, 7), leader_epoch=1, partition_epoch=1
    )
    assert h.channel.only(5, LAI).leader_and_isr(TP)[0] == final


# -- NewReplica and OnlineReplica --------------------------------------------------------------


def test_new_replica_refuses_the_current_leader(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.set_leadership(TP, BROKER, [BROKER], in_zk=False)

    h.rsm.handle_state_changes([REPLICA], NewReplica)

    assert not h.ctx.has_replica_state(REPLICA) or (
        h.ctx.replica_state(REPLICA) is ReplicaState.NonExistentReplica
    )
    assert h.channel.sent == []
    [record] = h.state_changes("replica", result="failed")
    assert "requested to become leader" in record["error"]


def test_new_replica_gets_an_is_new_leader_and_isr_when_the_partition_has_a_leader(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("t", {0: [OTHER, BROKER]})
    cached = h.set_leadership(TP, OTHER, [OTHER], in_zk=False)

    h.rsm.handle_state_changes([REPLICA], NewReplica)

    assert h.ctx.replica_state(REPLICA) is NewReplica
    assert h.channel.only(BROKER, LAI).leader_and_isr(TP) == (
        cached,
        ReplicaAssignment((OTHER, BROKER)),
        True,
    )
    assert h.channel.recipients(LAI) == {BROKER}  # only the new replica


def test_new_replica_not_in_the_assignment_is_appended_when_it_comes_online(
    h: ControllerHarness,
) -> None:
    h.create_topic("t", {0: [OTHER]})
    h.ctx.put_replica_state(REPLICA, NewReplica)

    h.rsm.handle_state_changes([REPLICA], OnlineReplica)

    assert h.ctx.partition_replica_assignment(TP) == (OTHER, BROKER)
    assert h.ctx.replica_state(REPLICA) is OnlineReplica


def test_online_transition_does_not_check_liveness_and_dead_brokers_get_nothing(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([OTHER])
    h.create_topic("t", {0: [OTHER, BROKER]})
    h.ctx.put_replica_state(REPLICA, OfflineReplica)
    h.set_leadership(TP, OTHER, [OTHER], in_zk=False)

    h.rsm.handle_state_changes([REPLICA], OnlineReplica)

    assert h.ctx.replica_state(REPLICA) is OnlineReplica  # pitfall 17
    assert h.channel.recipients(LAI) == set()  # addressed to 5, dropped: 5 is not live
    assert h.channel.recipients(UMR) == {OTHER}


def test_startup_sends_leader_and_isr_to_online_replicas_and_shrinks_offline_ones(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER, OTHER]})
    h.set_leadership(TP, BROKER, [BROKER, OTHER])

    h.rsm.startup()

    assert h.ctx.replica_state(REPLICA) is OnlineReplica
    assert h.ctx.replica_state(PartitionAndReplica(TP, OTHER)) is OfflineReplica
    shrunk = lice(BROKER, (BROKER,), leader_epoch=1, partition_epoch=1)
    assert h.zk_state(TP) == shrunk
    # Two batches: OnlineReplica (cached state), then OfflineReplica (the shrunk one).
    assert h.channel.kinds(BROKER) == [LAI, UMR, LAI, UMR]
    first, second = h.channel.requests(BROKER, LAI)
    assert first.leader_and_isr(TP)[0] == lice(BROKER, (BROKER, OTHER))
    assert second.leader_and_isr(TP)[0] == shrunk


def test_startup_sends_leader_and_isr_for_partitions_whose_replicas_are_all_online(
    h: ControllerHarness,
) -> None:
    """The common failover case: every replica online. Kafka's startup moves them all to
    OnlineReplica, which sends each broker LeaderAndIsr for its partitions (the state a
    previous controller may have written without telling anyone)."""
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("t", {0: [BROKER, OTHER]})
    h.set_leadership(TP, BROKER, [BROKER, OTHER])

    h.rsm.startup()

    for broker in (BROKER, OTHER):
        assert h.ctx.replica_state(PartitionAndReplica(TP, broker)) is OnlineReplica
        assert h.channel.kinds(broker) == [LAI, UMR]
        assert h.channel.only(broker, LAI).leader_and_isr(TP)[0] == lice(BROKER, (BROKER, OTHER))


def test_failed_isr_write_fails_only_that_replica(h: ControllerHarness) -> None:
    """Kafka's updateLeaderAndIsr turns a thrown write into a failure of those partitions;
    the other brokers' replicas in the same call still go offline."""
    other_tp = TopicPartition("o", 0)
    h.set_live_brokers([BROKER, OTHER, 7])
    h.create_topic("t", {0: [BROKER, 7]})
    h.create_topic("o", {0: [OTHER, 7]})
    online(h, REPLICA, PartitionAndReplica(other_tp, OTHER))
    before = h.set_leadership(TP, 7, [7, BROKER])
    h.set_leadership(other_tp, 7, [7, OTHER])
    h.port.fail("multi_many", ConnectionLossError("injected"), when=touches(STATE_PATH))

    offline(h, REPLICA, PartitionAndReplica(other_tp, OTHER))

    assert h.zk_state(TP) == before
    assert h.ctx.replica_state(REPLICA) is OnlineReplica
    assert h.zk_state(other_tp) == lice(7, (7,), leader_epoch=1, partition_epoch=1)
    assert h.ctx.replica_state(PartitionAndReplica(other_tp, OTHER)) is OfflineReplica
    assert h.channel.only(7, LAI).partitions() == [other_tp]
    assert h.channel.only(BROKER, SR).partitions() == [TP]


def test_a_failed_send_leaves_the_batch_empty_and_the_machine_usable(
    h: ControllerHarness,
) -> None:
    """An unexpected error (the channel refusing a send) is logged and clears the batch:
    otherwise every later ``new_batch`` would raise IllegalRequestBatchState and no replica
    could change state again."""
    h.set_live_brokers([BROKER, OTHER])
    h.create_topic("t", {0: [OTHER, BROKER]})
    h.set_leadership(TP, OTHER, [OTHER])
    h.channel.fail_next_send(RuntimeError("channel broken"))

    h.rsm.handle_state_changes([REPLICA], NewReplica)

    assert h.rsm.batch.is_empty
    h.rsm.handle_state_changes([REPLICA], OnlineReplica)
    offline(h, REPLICA)  # a transition that sends: the broker is told to stop the replica
    assert h.ctx.replica_state(REPLICA) is OfflineReplica
    assert h.channel.only(BROKER, SR).partitions() == [TP]
