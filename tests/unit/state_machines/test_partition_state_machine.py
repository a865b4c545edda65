"""Kafka's ``PartitionStateMachineTest`` (catalogue §6.2), on the in-memory controller harness.

The 22 tests keep Kafka's names, snake_cased.
Kafka mocks the ZooKeeper client and the request batch and verifies calls; here the real
gateway runs on ``MemoryZooKeeper`` and the real batch sends to a recording channel, so the
tests assert outcomes instead: the state znode, the context, the state-change log and the
requests each broker received. Mocked failures are reproduced for real: a thrown client error
via ``FaultInjectingPort``, NODEEXISTS via a pre-created znode, NONODE via a missing one.

What Kafka's suite does not cover (races, fencing, routing) is in
``test_partition_state_machine_zk.py``.
"""

from __future__ import annotations

import pytest

from controller.core.election import (
    OfflinePartitionLeaderElectionStrategy,
)
from controller.core.errors import StateChangeFailedError
from controller.core.model import (
    LeaderAndIsr,
    LeaderRecoveryState,
    PartitionAndReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from controller.zk.errors import ConnectionLossError
from tests.harness import ControllerHarness, touches
from tests.unit.state_machines.kafka_fixture import (
    BROKER,
    CONTROLLED_SHUTDOWN,
    EPOCH,
    LAI,
    OFFLINE_STRATEGY,
    PREFERRED,
    STATE_PATH,
    TP,
    UMR,
    New,
    NonExistent,
    Offline,
    Online,
    assert_untouched,
    lice,
)


def assert_invalid(h: ControllerHarness, current: PartitionState, target: PartitionState) -> None:
    zxid = h.zxid
    assert h.psm.handle_state_changes([TP], target, OFFLINE_STRATEGY) == {}
    assert h.ctx.partition_state(TP) is current
    assert_untouched(h, zxid)
    [record] = h.state_changes("partition", to_state=target.name)
    assert record["from_state"] == current.name
    assert record["result"] == "invalid"
    assert record["error"].endswith(
        f"before moving to {target.name} state. Instead it is in {current.name} state"
    )


def test_nonexistent_partition_to_new_partition_transition(h: ControllerHarness) -> None:
    zxid = h.zxid
    assert h.psm.handle_state_changes([TP], New) == {}
    assert h.ctx.partition_state(TP) is New
    assert_untouched(h, zxid)  # NewPartition is bookkeeping only
    [record] = h.state_changes("partition")
    assert (record["from_state"], record["to_state"], record["result"]) == (
        "NonExistentPartition",
        "NewPartition",
        "ok",
    )


@pytest.mark.parametrize(
    "strategy", [None, OFFLINE_STRATEGY], ids=["no-strategy", "offline-strategy"]
)
def test_invalid_nonexistent_partition_to_online_partition_transition(
    h: ControllerHarness, strategy: OfflinePartitionLeaderElectionStrategy | None
) -> None:
    zxid = h.zxid
    assert h.psm.handle_state_changes([TP], Online, strategy) == {}
    assert h.ctx.partition_state(TP) is NonExistent
    assert_untouched(h, zxid)


def test_invalid_nonexistent_partition_to_offline_partition_transition(
    h: ControllerHarness,
) -> None:
    assert_invalid(h, NonExistent, Offline)


def test_new_partition_to_online_partition_transition(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, New)

    results = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    assert results == {}  # initialisations are not election results (pitfall 28)
    expected = lice(BROKER, (BROKER,))
    assert h.zk_state(TP) == expected  # leader 5, isr [5], epochs 0, controller epoch 50
    assert h.ctx.partition_leadership_info(TP) == expected
    assert h.ctx.partition_state(TP) is Online
    assert h.channel.kinds(BROKER) == [LAI, UMR]
    lai = h.channel.only(BROKER, LAI)
    assert lai.message.controller_id == BROKER and lai.message.controller_epoch == EPOCH
    assert lai.leader_and_isr(TP) == (expected, ReplicaAssignment((BROKER,)), True)
    assert h.channel.only(BROKER, UMR).update_metadata(TP) == (expected, (BROKER,), ())
    [record] = h.state_changes("partition", to_state="OnlinePartition")
    assert (record["from_state"], record["leader"], record["isr"], record["result"]) == (
        "NewPartition",
        BROKER,
        [BROKER],
        "ok",
    )


def test_new_partition_to_online_partition_transition_zoo_keeper_client_exception_from_create_states(  # noqa: E501
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, New)
    h.port.fail("multi_many", ConnectionLossError("injected"))
    zxid = h.zxid

    assert h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY) == {}

    assert h.ctx.partition_state(TP) is New
    assert h.ctx.partition_leadership_info(TP) is None
    assert_untouched(h, zxid)  # the (empty) batch was sent: nothing to anyone
    assert h.psm.batch.is_empty
    [record] = h.state_changes("partition", result="failed")
    assert "injected" in record["error"]


def test_new_partition_to_online_partition_transition_error_code_from_create_states(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, New)
    # Someone else created the state znode first: the create gets NODEEXISTS.
    other = h.write_partition_state(TP, lice(6, (6,), controller_epoch=EPOCH - 1))
    zxid = h.zxid

    assert h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY) == {}

    assert h.ctx.partition_state(TP) is New
    assert h.zk_state(TP) == other
    assert h.ctx.partition_leadership_info(TP) is None
    assert_untouched(h, zxid)
    [record] = h.state_changes("partition", result="failed")
    assert "NODEEXISTS" in record["error"]


def test_new_partition_to_offline_partition_transition(h: ControllerHarness) -> None:
    h.ctx.put_partition_state(TP, New)
    zxid = h.zxid
    h.psm.handle_state_changes([TP], Offline)
    assert h.ctx.partition_state(TP) is Offline
    assert_untouched(h, zxid)


def test_invalid_new_partition_to_nonexistent_partition_transition(h: ControllerHarness) -> None:
    h.ctx.put_partition_state(TP, New)
    assert_invalid(h, New, NonExistent)


def test_online_partition_to_online_transition(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, Online)
    h.set_leadership(TP, BROKER, [BROKER])  # cached and in ZooKeeper at zkVersion 0

    results = h.psm.handle_state_changes([TP], Online, PREFERRED)

    # newLeader(5): leader epoch + 1, ISR kept; written at version 0, so now at version 1.
    written = lice(BROKER, (BROKER,), leader_epoch=1, partition_epoch=1)
    assert results == {TP: written.leader_and_isr}
    assert h.zk_state(TP) == written
    assert h.ctx.partition_leadership_info(TP) == written
    assert h.ctx.partition_state(TP) is Online
    assert h.channel.kinds(BROKER) == [LAI, UMR]
    assert h.channel.only(BROKER, LAI).leader_and_isr(TP) == (
        written,
        ReplicaAssignment((BROKER,)),
        False,
    )
    [record] = h.state_changes("partition")
    assert (record["election"], record["leader_epoch"]) == ("preferred", 1)


def test_online_partition_to_online_transition_for_controlled_shutdown(
    h: ControllerHarness,
) -> None:
    other = BROKER + 1
    h.set_live_brokers([BROKER, other], shutting_down=[BROKER])
    h.create_topic("t", {0: [BROKER, other]})
    h.ctx.put_partition_state(TP, Online)
    h.set_leadership(TP, BROKER, [BROKER, other])

    results = h.psm.handle_state_changes([TP], Online, CONTROLLED_SHUTDOWN)

    written = lice(other, (other,), leader_epoch=1, partition_epoch=1)
    assert results == {TP: written.leader_and_isr}
    assert h.zk_state(TP) == written
    assert h.ctx.partition_state(TP) is Online
    # The shutting-down broker hears about it too.
    assert h.channel.recipients(LAI) == {BROKER, other}
    for broker in (BROKER, other):
        assert h.channel.only(broker, LAI).leader_and_isr(TP)[0] == written


def test_online_partition_to_offline_transition(h: ControllerHarness) -> None:
    h.ctx.put_partition_state(TP, Online)
    zxid = h.zxid
    h.psm.handle_state_changes([TP], Offline)
    assert h.ctx.partition_state(TP) is Offline
    assert_untouched(h, zxid)


def test_invalid_online_partition_to_nonexistent_partition_transition(
    h: ControllerHarness,
) -> None:
    h.ctx.put_partition_state(TP, Online)
    assert_invalid(h, Online, NonExistent)


def test_invalid_online_partition_to_new_partition_transition(h: ControllerHarness) -> None:
    h.ctx.put_partition_state(TP, Online)
    assert_invalid(h, Online, New)


def test_offline_partition_to_online_partition_transition(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, Offline)
    h.set_leadership(TP, -1, [BROKER])
    # Kafka checks that getLogConfigs is asked for no topic: the ISR has a live member, so
    # the unclean-election setting must not matter. Watch for any topic-config read.
    config_reads: list[object] = []
    h.port.before(
        "get_many", lambda: config_reads.append(1), times=-1, when=touches("/config/topics")
    )

    results = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    written = lice(BROKER, (BROKER,), leader_epoch=1, partition_epoch=1)
    assert results == {TP: written.leader_and_isr}
    assert h.zk_state(TP) == written
    assert h.ctx.partition_state(TP) is Online
    assert h.channel.only(BROKER, LAI).leader_and_isr(TP) == (
        written,
        ReplicaAssignment((BROKER,)),
        False,
    )
    assert config_reads == []
    assert h.controller.unclean_leader_elections == 0


# Kafka runs this with isLeaderRecoverySupported = true (IBP 3.2-IV0) and false (3.1-IV0).
# Only the first applies: we speak the newest protocol and have no IBP setting, so the
# partition state machine always marks an unclean leader RECOVERING. (The IBP < 3.2 variant,
# keeping the old recovery state, has no caller here.)
def test_offline_partition_to_unclean_online_partition_transition(h: ControllerHarness) -> None:
    other = BROKER + 1
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [other, BROKER]})
    h.ctx.put_partition_state(TP, Offline)
    h.set_leadership(TP, other, [other])

    results = h.psm.handle_state_changes(
        [TP], Online, OfflinePartitionLeaderElectionStrategy(allow_unclean=True)
    )

    written = lice(BROKER, (BROKER,), 1, 1, LeaderRecoveryState.RECOVERING)
    assert results == {TP: written.leader_and_isr}
    assert h.zk_state(TP) == written
    assert h.ctx.partition_state(TP) is Online
    # LeaderAndIsr goes to the live RS members only.
    assert h.channel.recipients(LAI) == {BROKER}
    assert h.channel.only(BROKER, LAI).leader_and_isr(TP)[0] == written
    assert h.controller.unclean_leader_elections == 1
    [record] = h.state_changes("partition")
    assert record["election"] == "offline_unclean"


def test_offline_partition_to_online_partition_transition_zoo_keeper_client_exception_from_state_lookup(  # noqa: E501
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, Offline)
    h.set_leadership(TP, -1, [BROKER])
    h.port.fail("get_many", ConnectionLossError("injected"), when=touches(STATE_PATH))
    zxid = h.zxid

    results = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    assert isinstance(results[TP], ConnectionLossError)
    assert h.ctx.partition_state(TP) is Offline
    assert_untouched(h, zxid)
    assert h.psm.batch.is_empty


def test_offline_partition_to_online_partition_transition_error_code_from_state_lookup(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, Offline)
    h.set_leadership(TP, -1, [BROKER], in_zk=False)  # no state znode: NONODE
    zxid = h.zxid

    results = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    assert isinstance(results[TP], StateChangeFailedError)
    assert str(results[TP]) == (  # Kafka's words
        "LeaderAndIsr information doesn't exist for partition t-0 in OfflinePartition state"
    )
    assert h.ctx.partition_state(TP) is Offline
    assert_untouched(h, zxid)


def test_offline_partition_to_nonexistent_partition_transition(h: ControllerHarness) -> None:
    h.ctx.put_partition_state(TP, Offline)
    zxid = h.zxid
    h.psm.handle_state_changes([TP], NonExistent)
    assert h.ctx.partition_state(TP) is NonExistent
    assert_untouched(h, zxid)


def test_invalid_offline_partition_to_new_partition_transition(h: ControllerHarness) -> None:
    h.ctx.put_partition_state(TP, Offline)
    assert_invalid(h, Offline, New)


PARTITIONS = [TopicPartition("test", p) for p in range(4)]


def test_updating_offline_partitions_count(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("test", dict.fromkeys(range(4), (BROKER,)))
    for tp in PARTITIONS:  # in ZooKeeper only, as Kafka's mock returns them
        h.set_leadership(tp, BROKER, [BROKER], in_context=False)

    h.psm.handle_state_changes(PARTITIONS, New)
    h.psm.handle_state_changes(PARTITIONS, Offline)
    assert h.ctx.offline_partition_count == 4

    results = h.psm.handle_state_changes(PARTITIONS, Online, OFFLINE_STRATEGY)
    assert h.ctx.offline_partition_count == 0
    assert set(results) == set(PARTITIONS)
    assert all(isinstance(r, LeaderAndIsr) and r.leader_epoch == 1 for r in results.values())


def test_no_offline_partitions_change_for_topics_being_deleted(h: ControllerHarness) -> None:
    h.create_topic("test", dict.fromkeys(range(4), (BROKER,)))
    h.ctx.queue_topic_deletion(["test"])
    h.ctx.begin_topic_deletion(["test"])

    h.psm.handle_state_changes(PARTITIONS, New)
    h.psm.handle_state_changes(PARTITIONS, Offline)
    assert h.ctx.offline_partition_count == 0


def test_updating_offline_partitions_count_during_topic_deletion(h: ControllerHarness) -> None:
    # Kafka uses mock state machines here; ours are the real ones, so the deletion manager
    # really moves the partitions Offline -> NonExistent before marking the deletion started
    # (reference §2.6, onTopicDeletion step 1), which is what keeps the count at 0.
    h.create_topic("test", dict.fromkeys(range(4), (BROKER,)))
    h.psm.handle_state_changes(PARTITIONS, New)
    h.psm.handle_state_changes(PARTITIONS, Offline)
    for tp in PARTITIONS:
        h.ctx.put_replica_state(PartitionAndReplica(tp, BROKER), ReplicaState.OfflineReplica)
    assert h.ctx.offline_partition_count == 4

    h.controller.topic_deletion_manager.enqueue_topics_for_deletion({"test"})

    assert h.ctx.offline_partition_count == 0
    assert h.ctx.is_topic_deletion_in_progress("test")
    assert all(h.ctx.partition_state(tp) is NonExistent for tp in PARTITIONS)
