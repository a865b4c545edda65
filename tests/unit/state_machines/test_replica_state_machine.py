"""Kafka's ``ReplicaStateMachineTest`` (catalogue §6.3), on the in-memory controller harness.

The 45 tests keep Kafka's names, snake_cased. Kafka verifies calls on a mocked ZooKeeper
client and request batch; here the real gateway and batch run, so the tests assert what
happened: replica states, the ISR in ZooKeeper, the leadership cache, the state-change log
and the requests each broker received (brokers are made live where Kafka's test expects a
request, since the real batch drops requests to other brokers).

Every "Invalid X -> Y" test puts the replica in X, asks for Y, and checks that the state is
still X, that nothing was written or sent, and that the state-change log has an "invalid"
record. What Kafka's suite does not cover is in ``test_replica_state_machine_zk.py``.
"""

from __future__ import annotations

from typing import Any

from controller.core.model import (
    PartitionAndReplica,
    ReplicaAssignment,
    ReplicaState,
)
from tests.harness import ControllerHarness
from tests.unit.state_machines.kafka_fixture import (
    BROKER,
    EPOCH,
    LAI,
    REPLICA,
    SR,
    TP,
    UMR,
    DeletionIneligible,
    DeletionStarted,
    DeletionSuccessful,
    NewReplica,
    NonExistentReplica,
    OfflineReplica,
    OnlineReplica,
    lice,
)


def state(h: ControllerHarness, replica: PartitionAndReplica = REPLICA) -> ReplicaState:
    return h.ctx.replica_state(replica)


def move(h: ControllerHarness, target: ReplicaState) -> None:
    h.rsm.handle_state_changes([REPLICA], target)


def assert_invalid(h: ControllerHarness, current: ReplicaState, target: ReplicaState) -> None:
    if current is not NonExistentReplica:
        h.ctx.put_replica_state(REPLICA, current)
    zxid = h.zxid
    move(h, target)
    assert state(h) is current
    assert h.zxid == zxid
    assert h.channel.sent == []
    [record] = h.state_changes("replica")
    assert (record["from_state"], record["to_state"], record["result"]) == (
        current.name,
        target.name,
        "invalid",
    )
    assert record["error"].endswith(f"Instead it is in {current.name} state")


def only_leader_and_isr(h: ControllerHarness, broker: int = BROKER) -> tuple[Any, ...]:
    """The single LeaderAndIsr broker got for t-0 (also checks it came with an UMR)."""
    assert h.channel.kinds(broker) == [LAI, UMR]
    return h.channel.only(broker, LAI).leader_and_isr(TP)


# -- start-up ----------------------------------------------------------------------------------


def test_startup_online_partition(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    assert not h.ctx.has_replica_state(REPLICA)
    h.rsm.startup()
    assert state(h) is OnlineReplica
    assert h.channel.sent == []  # no leadership yet: nothing to tell the broker


def test_startup_offline_partition(h: ControllerHarness) -> None:
    h.set_live_brokers([])
    h.create_topic("t", {0: [BROKER]})
    h.rsm.startup()
    # Via ReplicaDeletionIneligible, then OfflineReplica.
    assert state(h) is OfflineReplica
    assert [r["to_state"] for r in h.state_changes("replica")] == ["OfflineReplica"]
    assert h.state_changes("replica")[0]["from_state"] == "ReplicaDeletionIneligible"
    assert h.channel.sent == []  # the StopReplica is for a dead broker: dropped


def test_startup_with_replica_without_leader(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [100]})
    h.rsm.startup()
    assert state(h, PartitionAndReplica(TP, 100)) is OfflineReplica


# -- from NonExistentReplica -------------------------------------------------------------------


def test_nonexistent_replica_to_new_replica_transition(h: ControllerHarness) -> None:
    zxid = h.zxid
    move(h, NewReplica)
    assert state(h) is NewReplica
    assert h.zxid == zxid and h.channel.sent == []


def test_invalid_nonexistent_replica_to_online_replica_transition(h: ControllerHarness) -> None:
    assert_invalid(h, NonExistentReplica, OnlineReplica)


def test_invalid_nonexistent_replica_to_offline_replica_transition(h: ControllerHarness) -> None:
    assert_invalid(h, NonExistentReplica, OfflineReplica)


def test_invalid_nonexistent_replica_to_replica_deletion_started_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, NonExistentReplica, DeletionStarted)


def test_invalid_nonexistent_replica_to_replica_deletion_ineligible_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, NonExistentReplica, DeletionIneligible)


def test_invalid_nonexistent_replica_to_replica_deletion_successful_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, NonExistentReplica, DeletionSuccessful)


# -- from NewReplica ---------------------------------------------------------------------------


def test_invalid_new_replica_to_nonexistent_replica_transition(h: ControllerHarness) -> None:
    assert_invalid(h, NewReplica, NonExistentReplica)


def test_new_replica_to_online_replica_transition(h: ControllerHarness) -> None:
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_replica_state(REPLICA, NewReplica)
    move(h, OnlineReplica)
    assert state(h) is OnlineReplica
    assert h.ctx.partition_replica_assignment(TP) == (BROKER,)
    assert h.channel.sent == []  # New -> Online sends nothing


def test_new_replica_to_offline_replica_transition(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.ctx.put_replica_state(REPLICA, NewReplica)
    zxid = h.zxid

    move(h, OfflineReplica)

    assert state(h) is OfflineReplica
    assert h.zxid == zxid  # no leadership: no ISR to shrink
    # SR([5], t-0, delete=false) and UMR([5], {t-0}); t-0 has no leadership, so the UMR
    # carries the broker list only. UpdateMetadata goes before StopReplica.
    assert h.channel.kinds(BROKER) == [UMR, SR]
    assert h.channel.only(BROKER, UMR).partitions() == []
    assert h.channel.only(BROKER, SR).stop_replica(TP) == (-1, False)
    assert all(r.message.controller_epoch == EPOCH for r in h.channel.sent)


def test_invalid_new_replica_to_replica_deletion_started_transition(h: ControllerHarness) -> None:
    assert_invalid(h, NewReplica, DeletionStarted)


def test_invalid_new_replica_to_replica_deletion_ineligible_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, NewReplica, DeletionIneligible)


def test_invalid_new_replica_to_replica_deletion_successful_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, NewReplica, DeletionSuccessful)


# -- from OnlineReplica ------------------------------------------------------------------------


def test_invalid_online_replica_to_nonexistent_replica_transition(h: ControllerHarness) -> None:
    assert_invalid(h, OnlineReplica, NonExistentReplica)


def test_invalid_online_replica_to_new_replica_transition(h: ControllerHarness) -> None:
    assert_invalid(h, OnlineReplica, NewReplica)


def test_online_replica_to_online_replica_transition(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_replica_state(REPLICA, OnlineReplica)
    cached = h.set_leadership(TP, BROKER, [BROKER], in_zk=False)
    zxid = h.zxid

    move(h, OnlineReplica)

    assert state(h) is OnlineReplica
    assert h.zxid == zxid  # the cached leadership is sent as is
    assert only_leader_and_isr(h) == (cached, ReplicaAssignment((BROKER,)), False)


def test_online_replica_to_offline_replica_transition(h: ControllerHarness) -> None:
    other = BROKER + 1
    h.set_live_brokers([BROKER, other])
    h.create_topic("t", {0: [BROKER, other]})
    h.ctx.put_replica_state(REPLICA, OnlineReplica)
    h.set_leadership(TP, BROKER, [BROKER, other])  # cached and in ZooKeeper at version 0

    move(h, OfflineReplica)

    # newLeaderAndIsr(-1, [6]): leader epoch 1, written at version 0 -> 1.
    updated = lice(-1, (other,), leader_epoch=1, partition_epoch=1)
    assert h.zk_state(TP) == updated
    assert h.ctx.partition_leadership_info(TP) == updated
    assert state(h) is OfflineReplica
    assert h.channel.kinds(BROKER) == [UMR, SR]
    # The StopReplica is queued before the ISR shrink, with the leader epoch cached then (0).
    assert h.channel.only(BROKER, SR).stop_replica(TP) == (0, False)
    assert h.channel.only(other, LAI).leader_and_isr(TP) == (
        updated,
        ReplicaAssignment((BROKER, other)),
        False,
    )


def test_invalid_online_replica_to_replica_deletion_started_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, OnlineReplica, DeletionStarted)


def test_invalid_online_replica_to_replica_deletion_ineligible_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, OnlineReplica, DeletionIneligible)


def test_invalid_online_replica_to_replica_deletion_successful_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, OnlineReplica, DeletionSuccessful)


# -- from OfflineReplica -----------------------------------------------------------------------


def test_invalid_offline_replica_to_nonexistent_replica_transition(h: ControllerHarness) -> None:
    assert_invalid(h, OfflineReplica, NonExistentReplica)


def test_invalid_offline_replica_to_new_replica_transition(h: ControllerHarness) -> None:
    assert_invalid(h, OfflineReplica, NewReplica)


def test_offline_replica_to_online_replica_transition(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_replica_state(REPLICA, OfflineReplica)
    cached = h.set_leadership(TP, BROKER, [BROKER], in_zk=False)

    move(h, OnlineReplica)

    assert state(h) is OnlineReplica
    assert only_leader_and_isr(h) == (cached, ReplicaAssignment((BROKER,)), False)


def test_offline_replica_to_replica_deletion_started_transition(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.ctx.put_replica_state(REPLICA, OfflineReplica)

    move(h, DeletionStarted)

    assert state(h) is DeletionStarted
    assert h.channel.kinds(BROKER) == [SR]
    assert h.channel.only(BROKER, SR).stop_replica(TP) == (-1, True)  # delete=true


def test_offline_replica_to_replica_deletion_ineligible_transition(h: ControllerHarness) -> None:
    h.ctx.put_replica_state(REPLICA, OfflineReplica)
    move(h, DeletionIneligible)
    assert state(h) is DeletionIneligible
    assert h.channel.sent == []


def test_invalid_offline_replica_to_replica_deletion_successful_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, OfflineReplica, DeletionSuccessful)


# -- from ReplicaDeletionStarted ---------------------------------------------------------------


def test_invalid_replica_deletion_started_to_nonexistent_replica_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionStarted, NonExistentReplica)


def test_invalid_replica_deletion_started_to_new_replica_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionStarted, NewReplica)


def test_invalid_replica_deletion_started_to_online_replica_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionStarted, OnlineReplica)


def test_invalid_replica_deletion_started_to_offline_replica_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionStarted, OfflineReplica)


def test_replica_deletion_started_to_replica_deletion_ineligible_transition(
    h: ControllerHarness,
) -> None:
    h.ctx.put_replica_state(REPLICA, DeletionStarted)
    move(h, DeletionIneligible)
    assert state(h) is DeletionIneligible
    assert h.channel.sent == []


def test_replica_deletion_started_to_replica_deletion_successful_transition(
    h: ControllerHarness,
) -> None:
    h.ctx.put_replica_state(REPLICA, DeletionStarted)
    move(h, DeletionSuccessful)
    assert state(h) is DeletionSuccessful
    assert h.channel.sent == []


# -- from ReplicaDeletionSuccessful ------------------------------------------------------------


def test_replica_deletion_successful_to_nonexistent_replica_transition(
    h: ControllerHarness,
) -> None:
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_replica_state(REPLICA, DeletionSuccessful)

    move(h, NonExistentReplica)

    assert h.ctx.partition_replica_assignment(TP) == ()
    assert not h.ctx.has_replica_state(REPLICA)
    assert h.channel.sent == []


def test_invalid_replica_deletion_successful_to_new_replica_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionSuccessful, NewReplica)


def test_invalid_replica_deletion_successful_to_online_replica_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionSuccessful, OnlineReplica)


def test_invalid_replica_deletion_successful_to_offline_replica_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionSuccessful, OfflineReplica)


def test_invalid_replica_deletion_successful_to_replica_deletion_started_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionSuccessful, DeletionStarted)


def test_invalid_replica_deletion_successful_to_replica_deletion_ineligible_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionSuccessful, DeletionIneligible)


# -- from ReplicaDeletionIneligible ------------------------------------------------------------


def test_invalid_replica_deletion_ineligible_to_nonexistent_replica_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionIneligible, NonExistentReplica)


def test_invalid_replica_deletion_ineligible_to_new_replica_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionIneligible, NewReplica)


def test_replica_deletion_ineligible_to_online_replica_transition(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_replica_state(REPLICA, DeletionIneligible)
    cached = h.set_leadership(TP, BROKER, [BROKER], in_zk=False)

    move(h, OnlineReplica)

    assert state(h) is OnlineReplica
    assert only_leader_and_isr(h) == (cached, ReplicaAssignment((BROKER,)), False)


def test_invalid_replica_deletion_ineligible_to_replica_deletion_started_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionIneligible, DeletionStarted)


def test_invalid_replica_deletion_ineligible_to_replica_deletion_successful_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, DeletionIneligible, DeletionSuccessful)
