"""The partition state machine beyond Kafka's unit suite (reference §3.2, §3.3, §7).

Kafka's ``PartitionStateMachineTest`` mocks ZooKeeper, so it cannot show what the reference
demands of the real read-elect-write cycle: the BADVERSION retry loop (pitfall 2), state
written by a newer controller (pitfall 23), fencing with a stale epoch zkVersion (§1.2), the
controlled-shutdown ISR shrink (pitfall 8), the routing and order of the requests (pitfalls 7
and 10), the results map (pitfall 28), the topic-config lookup of unclean elections, and
start-up. All on the in-memory harness: real gateway, real batch, recording channel.
"""

from __future__ import annotations

import pytest

from controller.core.election import OfflinePartitionLeaderElectionStrategy
from controller.core.errors import StateChangeFailedError
from controller.core.model import (
    LeaderAndIsr,
    LeaderRecoveryState,
    TopicPartition,
)
from controller.zk import codecs, paths
from controller.zk.errors import ConnectionLossError, ControllerMovedError
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
    Offline,
    Online,
    assert_untouched,
    lice,
)


def test_election_is_retried_when_the_state_znode_changes_between_read_and_write(
    h: ControllerHarness,
) -> None:
    """BADVERSION loop (pitfall 2): the write is conditional on the version read; a writer in
    between makes it fail, and the whole read-elect-write runs again on the new state."""
    other = BROKER + 1
    h.set_live_brokers([BROKER, other])
    h.create_topic("t", {0: [BROKER, other]})
    h.ctx.put_partition_state(TP, Offline)
    h.set_leadership(TP, -1, [BROKER])  # version 0

    def broker_expands_isr() -> None:  # e.g. a legacy ISR write, after our read
        h.write_partition_state(TP, lice(-1, (BROKER, other), leader_epoch=0))

    h.port.before("multi_many", broker_expands_isr, when=touches(STATE_PATH))

    results = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    # Elected on the re-read state (ISR [5, 6]), written at version 1 -> 2.
    written = lice(BROKER, (BROKER, other), leader_epoch=1, partition_epoch=2)
    assert results == {TP: written.leader_and_isr}
    assert h.zk_state(TP) == written
    assert h.ctx.partition_leadership_info(TP) == written
    assert h.ctx.partition_state(TP) is Online
    for broker in (BROKER, other):  # one LeaderAndIsr each, with the final state
        assert h.channel.only(broker, LAI).leader_and_isr(TP)[0] == written
    assert [r["result"] for r in h.state_changes("partition")] == ["ok"]


def test_state_written_by_a_newer_controller_aborts_the_election_without_resigning(
    h: ControllerHarness,
) -> None:
    """Pitfall 23: controller_epoch > ours fails that partition (StateChangeFailed); it is not
    ControllerMoved, so nothing is written and we stay active."""
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, Offline)
    h.set_leadership(TP, -1, [BROKER])
    newer = h.write_partition_state(TP, lice(-1, (BROKER,), controller_epoch=EPOCH + 1))
    zxid = h.zxid

    results = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    assert isinstance(results[TP], StateChangeFailedError)
    # Kafka's words (doElectLeaderForPartitions), which admin clients get back.
    assert str(results[TP]) == (
        "Aborted leader election for partition t-0 since the LeaderAndIsr path was already "
        "written by another controller. This probably means that the current controller 5 "
        "went through a soft failure and another controller was elected with epoch 51."
    )
    assert h.zk_state(TP) == newer
    assert h.ctx.partition_state(TP) is Offline
    assert_untouched(h, zxid)
    assert h.controller.is_active and h.ctx.epoch == EPOCH
    assert h.read(paths.CONTROLLER) is not None


def test_failed_elections_are_worded_as_kafka_words_them(h: ControllerHarness) -> None:
    # Admin clients get these texts back in ElectLeaders answers (as Kafka's clients do).
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [6]})  # broker 6 is not live
    h.ctx.put_partition_state(TP, Offline)
    h.set_leadership(TP, -1, [6])
    for allow_unclean in (True, False):
        strategy = OfflinePartitionLeaderElectionStrategy(allow_unclean)
        results = h.psm.handle_state_changes([TP], Online, strategy)
        assert str(results[TP]) == (
            "Failed to elect leader for partition t-0 under strategy "
            f"OfflinePartitionLeaderElectionStrategy({str(allow_unclean).lower()})"
        )
    results = h.psm.handle_state_changes([TP], Online, PREFERRED)
    assert str(results[TP]) == (
        "Failed to elect leader for partition t-0 under strategy "
        "PreferredReplicaPartitionLeaderElectionStrategy"
    )
    u0 = TopicPartition("u", 0)
    h.create_topic("u", {0: [6, 7]})
    h.ctx.put_partition_state(u0, New)
    h.psm.handle_state_changes([u0], Online, OFFLINE_STRATEGY)
    [record] = h.state_changes("partition", result="failed")[-1:]
    assert record["error"] == (
        "Controller 5 epoch 50 encountered error during state change of partition u-0 from "
        "New to Online, assigned replicas are [6,7], live brokers are [5]. No assigned "
        "replica is alive."
    )


def test_stale_epoch_zk_version_raises_controller_moved_from_an_election(
    h: ControllerHarness,
) -> None:
    """Fencing (§1.2): a rival bumped /controller_epoch; our conditional write's check fails,
    ControllerMovedError leaves handle_state_changes, and nothing is sent."""
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, Offline)
    before = h.set_leadership(TP, -1, [BROKER])
    h.elect_rival()

    with pytest.raises(ControllerMovedError):
        h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    assert h.zk_state(TP) == before
    assert h.ctx.partition_state(TP) is Offline
    assert h.psm.batch.is_empty
    assert h.channel.sent == []


def test_stale_epoch_zk_version_raises_controller_moved_from_an_initialisation(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, New)
    h.elect_rival()

    with pytest.raises(ControllerMovedError):
        h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    assert h.zk_state(TP) is None
    assert h.read(paths.topic_partitions_path("t")) is None  # the parents were fenced too
    assert h.ctx.partition_state(TP) is New
    assert h.psm.batch.is_empty
    assert h.channel.sent == []


def test_new_partition_without_live_replica_stays_new(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [7, 8]})
    h.ctx.put_partition_state(TP, New)
    zxid = h.zxid

    assert h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY) == {}

    assert h.ctx.partition_state(TP) is New
    assert_untouched(h, zxid)
    [record] = h.state_changes("partition", result="failed")
    assert "No assigned replica is alive" in record["error"]


def test_results_contain_elections_only(h: ControllerHarness) -> None:
    """Pitfall 28: in one call, New -> Online gives no entry, Offline -> Online does."""
    elected = TopicPartition("t", 1)
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER], 1: [BROKER]})
    h.ctx.put_partition_state(TP, New)
    h.ctx.put_partition_state(elected, Offline)
    h.set_leadership(elected, -1, [BROKER])

    results = h.psm.handle_state_changes([TP, elected], Online, OFFLINE_STRATEGY)

    assert set(results) == {elected}
    assert h.ctx.partition_state(TP) is Online and h.ctx.partition_state(elected) is Online
    # One LeaderAndIsr carrying both, isNew only for the initialised partition.
    lai = h.channel.only(BROKER, LAI)
    assert lai.leader_and_isr(TP)[2] is True
    assert lai.leader_and_isr(elected)[2] is False


def test_election_without_a_strategy_fails_every_partition_and_clears_the_batch(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, Offline)
    h.set_leadership(TP, -1, [BROKER])

    results = h.psm.handle_state_changes([TP], Online, None)

    assert isinstance(results[TP], ValueError)
    assert h.ctx.partition_state(TP) is Offline
    # Kafka leaves the batch dirty here (pitfall 9); we clear it, so the next call works.
    assert h.psm.batch.is_empty
    assert isinstance(h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)[TP], LeaderAndIsr)


def test_controlled_shutdown_removes_every_shutting_down_broker_from_the_isr(
    h: ControllerHarness,
) -> None:
    """Pitfall 8: the ISR loses all shutting-down brokers, not only the leader."""
    h.set_live_brokers([5, 6, 7], shutting_down=[5, 6])
    h.create_topic("t", {0: [5, 6, 7]})
    h.ctx.put_partition_state(TP, Online)
    h.set_leadership(TP, 5, [5, 6, 7])

    results = h.psm.handle_state_changes([TP], Online, CONTROLLED_SHUTDOWN)

    written = lice(7, (7,), leader_epoch=1, partition_epoch=1)
    assert results == {TP: written.leader_and_isr}
    assert h.zk_state(TP) == written
    assert h.channel.recipients(LAI) == {5, 6, 7}
    # Shutting-down brokers are offline replicas in the metadata everyone gets (pitfall 7).
    assert h.channel.only(7, UMR).update_metadata(TP)[2] == (5, 6)


def test_controlled_shutdown_fails_when_no_other_isr_member_is_live(h: ControllerHarness) -> None:
    h.set_live_brokers([5, 6], shutting_down=[5])
    h.create_topic("t", {0: [5, 6]})
    h.ctx.put_partition_state(TP, Online)
    before = h.set_leadership(TP, 5, [5])
    zxid = h.zxid

    results = h.psm.handle_state_changes([TP], Online, CONTROLLED_SHUTDOWN)

    assert isinstance(results[TP], StateChangeFailedError)
    assert h.zk_state(TP) == before
    assert_untouched(h, zxid)


def test_offline_election_drops_dead_and_shutting_down_members_from_the_isr(
    h: ControllerHarness,
) -> None:
    h.set_live_brokers([6, 7, 8], shutting_down=[7])
    h.create_topic("t", {0: [5, 6, 7, 8]})
    h.ctx.put_partition_state(TP, Offline)
    h.set_leadership(TP, 5, [5, 6, 7, 8])

    results = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    assert results == {TP: LeaderAndIsr(6, 1, (6, 8), partition_epoch=1)}
    # Recipients: the online RS members; the shutting-down 7 is not one of them.
    assert h.channel.recipients(LAI) == {6, 8}


def test_election_requests_reach_live_brokers_only_and_leader_and_isr_comes_first(
    h: ControllerHarness,
) -> None:
    """Preferred election: LeaderAndIsr is addressed to every RS member; the dead one (7) is
    dropped at send time (pitfall 10). Each broker gets LeaderAndIsr before UpdateMetadata."""
    h.set_live_brokers([5, 6])
    h.create_topic("t", {0: [5, 6, 7]})
    h.ctx.put_partition_state(TP, Online)
    h.set_leadership(TP, 6, [5, 6])

    results = h.psm.handle_state_changes([TP], Online, PREFERRED)

    assert results == {TP: LeaderAndIsr(5, 1, (5, 6), partition_epoch=1)}
    assert h.channel.recipients() == {5, 6}
    assert h.channel.kinds(5) == [LAI, UMR] and h.channel.kinds(6) == [LAI, UMR]
    assert all(r.message.controller_epoch == EPOCH for r in h.channel.sent)
    assert h.channel.only(5, UMR).update_metadata(TP)[2] == (7,)  # 7 is an offline replica


def test_preferred_election_never_falls_back(h: ControllerHarness) -> None:
    h.set_live_brokers([6, 7])
    h.create_topic("t", {0: [5, 6, 7]})
    h.ctx.put_partition_state(TP, Online)
    h.set_leadership(TP, 6, [6, 7])
    zxid = h.zxid

    results = h.psm.handle_state_changes([TP], Online, PREFERRED)

    assert isinstance(results[TP], StateChangeFailedError)
    assert h.ctx.partition_state(TP) is Online
    assert_untouched(h, zxid)


@pytest.mark.parametrize(
    ("config", "elected"),
    [({"unclean.leader.election.enable": "true"}, True), ({}, False)],
    ids=["topic-enables-unclean", "cluster-default-disabled"],
)
def test_unclean_election_follows_the_topic_config(
    h: ControllerHarness, config: dict[str, str], elected: bool
) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [6, BROKER]})
    h.set_topic_config("t", config)
    h.ctx.put_partition_state(TP, Offline)
    before = h.set_leadership(TP, 6, [6])

    results = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    if elected:
        assert results[TP] == LeaderAndIsr(
            BROKER, 1, (BROKER,), LeaderRecoveryState.RECOVERING, partition_epoch=1
        )
        assert h.ctx.partition_state(TP) is Online
    else:
        assert isinstance(results[TP], StateChangeFailedError)
        assert h.zk_state(TP) == before  # the dead leader stays in ZooKeeper (§3.3)
        assert h.ctx.partition_state(TP) is Offline


def test_unreadable_topic_config_fails_an_election_that_needs_it(h: ControllerHarness) -> None:
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [6, BROKER]})
    h.admin.create(paths.topic_config_path("t"), b"not json", makepath=True)
    h.ctx.put_partition_state(TP, Offline)
    before = h.set_leadership(TP, 6, [6])

    results = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    assert isinstance(results[TP], Exception)
    assert h.zk_state(TP) == before
    assert h.ctx.partition_state(TP) is Offline


@pytest.mark.parametrize(("value", "warned"), [("yes", True), (" TRUE ", False), ("false", False)])
def test_an_invalid_unclean_setting_reads_as_false_and_is_reported(
    h: ControllerHarness, value: str, warned: bool
) -> None:
    """Kafka's boolean parser refuses "yes" and fails the election; here it reads as false
    (no unclean election either) with a warning naming the topic and the value."""
    from structlog.testing import capture_logs

    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [6, BROKER]})
    config = codecs.encode_topic_config({"unclean.leader.election.enable": value})
    h.admin.create(paths.topic_config_path("t"), config, makepath=True)
    h.ctx.put_partition_state(TP, Offline)
    h.set_leadership(TP, 6, [6])

    with capture_logs() as logs:
        results = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    elected = not isinstance(results[TP], Exception)
    assert elected is (value.strip().lower() == "true")
    warnings = [e for e in logs if "neither true nor false" in e["event"]]
    assert len(warnings) == warned
    if warned:
        assert (warnings[0]["topic"], warnings[0]["value"]) == ("t", value)


def test_startup_classifies_partitions_then_brings_them_online(h: ControllerHarness) -> None:
    online, offline, new = (TopicPartition("t", p) for p in range(3))
    h.set_live_brokers([5, 6])
    h.create_topic("t", {0: [5, 6], 1: [7, 6], 2: [6, 5]})
    h.set_leadership(online, 5, [5, 6])
    h.set_leadership(offline, 7, [7, 6])  # leader 7 is dead

    h.psm.startup()

    assert [h.ctx.partition_state(tp) for tp in (online, offline, new)] == [Online] * 3
    assert h.zk_state(online) == lice(5, (5, 6))  # untouched
    assert h.zk_state(offline) == lice(6, (6,), leader_epoch=1, partition_epoch=1)
    assert h.zk_state(new) == lice(6, (6, 5))
    states = {
        (r["partition"], r["from_state"], r["to_state"]) for r in h.state_changes("partition")
    }
    # The partition found without a live leader is recorded as such (for the analytics).
    assert states == {
        (1, "NonExistentPartition", "OfflinePartition"),
        (1, "OfflinePartition", "OnlinePartition"),
        (2, "NewPartition", "OnlinePartition"),
    }


def test_trigger_online_partition_state_change_skips_topics_queued_for_deletion(
    h: ControllerHarness,
) -> None:
    doomed = TopicPartition("doomed", 0)
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.create_topic("doomed", {0: [BROKER]})
    for tp in (TP, doomed):
        h.ctx.put_partition_state(tp, Offline)
        h.set_leadership(tp, -1, [BROKER])
    h.ctx.queue_topic_deletion(["doomed"])

    results = h.psm.trigger_online_partition_state_change()

    assert set(results) == {TP}
    assert h.ctx.partition_state(doomed) is Offline
    assert h.zk_state(doomed) == lice(-1, (BROKER,))


def test_state_znode_with_an_unknown_format_fails_that_partition_only(
    h: ControllerHarness,
) -> None:
    good = TopicPartition("t", 1)
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER], 1: [BROKER]})
    for tp in (TP, good):
        h.ctx.put_partition_state(tp, Offline)
        h.set_leadership(tp, -1, [BROKER])
    h.admin.set(STATE_PATH, codecs.encode_topic_config({"not": "a state"}))

    results = h.psm.handle_state_changes([TP, good], Online, OFFLINE_STRATEGY)

    assert isinstance(results[TP], Exception)
    assert results[good] == LeaderAndIsr(BROKER, 1, (BROKER,), partition_epoch=1)
    assert h.ctx.partition_state(TP) is Offline and h.ctx.partition_state(good) is Online


def test_failed_topic_config_read_fails_only_the_elections_that_need_it(
    h: ControllerHarness,
) -> None:
    """Kafka's getLogConfigs turns a thrown read into a per-topic failure: the partition
    that needs the unclean setting fails, the others in the same call are still elected,
    written and announced."""
    clean, unclean = TopicPartition("t", 1), TopicPartition("u", 0)
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER], 1: [BROKER]})
    h.create_topic("u", {0: [6, BROKER]})
    h.ctx.put_partition_state(TP, New)
    for tp, isr in ((clean, (BROKER,)), (unclean, (6,))):
        h.ctx.put_partition_state(tp, Offline)
        h.set_leadership(tp, -1, isr)
    h.port.fail("get_many", ConnectionLossError("injected"), when=touches("/config/topics"))

    results = h.psm.handle_state_changes([TP, clean, unclean], Online, OFFLINE_STRATEGY)

    assert isinstance(results[unclean], ConnectionLossError)
    assert results[clean] == LeaderAndIsr(BROKER, 1, (BROKER,), partition_epoch=1)
    assert [h.ctx.partition_state(tp) for tp in (TP, clean, unclean)] == [Online, Online, Offline]
    assert set(h.channel.only(BROKER, LAI).partitions()) == {TP, clean}
    assert h.zk_state(unclean) == lice(-1, (6,))


def test_failed_state_write_fails_only_those_elections(h: ControllerHarness) -> None:
    """Kafka's updateLeaderAndIsr turns a thrown write (not ControllerMoved) into a failure of
    the partitions it was writing; a partition initialised in the same call still goes
    Online and its broker still gets the LeaderAndIsr (the state znode exists by then)."""
    elected = TopicPartition("e", 0)
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.create_topic("e", {0: [BROKER]})
    h.ctx.put_partition_state(TP, New)
    h.ctx.put_partition_state(elected, Offline)
    before = h.set_leadership(elected, -1, [BROKER])
    h.port.fail(
        "multi_many", ConnectionLossError("injected"), when=touches(paths.state_path(elected))
    )

    results = h.psm.handle_state_changes([TP, elected], Online, OFFLINE_STRATEGY)

    assert set(results) == {elected} and isinstance(results[elected], ConnectionLossError)
    assert h.zk_state(elected) == before
    assert h.ctx.partition_state(elected) is Offline
    assert h.ctx.partition_state(TP) is Online
    assert h.channel.only(BROKER, LAI).partitions() == [TP]


def test_a_failed_send_leaves_the_batch_empty_and_the_machine_usable(
    h: ControllerHarness,
) -> None:
    """An unexpected error (here the channel refusing a send) fails every partition of the
    call and clears the batch: otherwise every later ``new_batch`` would raise
    IllegalRequestBatchState and the controller would stop electing leaders."""
    h.set_live_brokers([BROKER])
    h.create_topic("t", {0: [BROKER]})
    h.ctx.put_partition_state(TP, Offline)
    h.set_leadership(TP, -1, [BROKER])
    h.channel.fail_next_send(RuntimeError("channel broken"))

    results = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)

    assert set(results) == {TP} and isinstance(results[TP], Exception)
    assert h.psm.batch.is_empty
    h.ctx.put_partition_state(TP, Offline)
    h.write_partition_state(TP, lice(-1, (BROKER,), leader_epoch=1, partition_epoch=1))
    again = h.psm.handle_state_changes([TP], Online, OFFLINE_STRATEGY)
    assert isinstance(again[TP], LeaderAndIsr)
