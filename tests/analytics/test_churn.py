"""Elections, unclean elections, leader and ISR churn, flapping, leader imbalance."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analytics.conftest import Log, at
from tests.analytics.pipeline import analyze_lines

pytestmark = pytest.mark.spark


def unclean_log() -> Log:
    """t-0 on [1,2,3]: followers drop out of the ISR, then the leader dies and broker 3,
    outside the ISR, is elected uncleanly."""
    log = Log()
    log.create(0, "t", 0, [1, 2, 3])
    log.replica(10, "t", 0, 2, "OnlineReplica", "OfflineReplica", 1, [1, 3])
    log.online(20, "t", 0, leader=1, isr=[1], frm="OnlinePartition", election=None,
               event="IsrChangeNotification")
    log.offline(100, "t", 0, [1])
    log.online(150, "t", 0, leader=3, isr=[3], election="offline_unclean")
    return log


def test_unclean_election_listed_with_its_outage(spark, tmp_path: Path) -> None:
    from pyspark.testing import assertDataFrameEqual

    a = analyze_lines(spark, tmp_path, unclean_log().lines)
    got = a["unclean_elections"].select(
        "cluster", "ts", "topic", "partition", "leader", "previous_leader", "isr_before",
        "isr_after", "offline_since", "offline_s",
    )
    expected = spark.createDataFrame(
        [("c1", at(150), "t", 0, 3, 1, [1], [3], at(100), 50.0)],
        "cluster string, ts timestamp, topic string, partition int, leader int, "
        "previous_leader int, isr_before array<int>, isr_after array<int>, "
        "offline_since timestamp, offline_s double",
    )
    assertDataFrameEqual(got, expected)
    elections = a["elections_hourly"].select("hour", "election", "elections")
    assertDataFrameEqual(
        elections,
        spark.createDataFrame([(at(0), "unclean", 1)],
                              "hour timestamp, election string, elections long"),
    )


def test_partition_and_broker_churn(spark, tmp_path: Path) -> None:
    from pyspark.testing import assertDataFrameEqual

    a = analyze_lines(spark, tmp_path, unclean_log().lines)
    part = a["partition_churn_daily"].select(
        "topic", "partition", "elections", "leader_changes", "offline_windows", "isr_shrinks",
        "isr_expands",
    )
    # ISR: [1,2,3] -> [1,3] (replica record) -> [1] -> [3] (a shrink and an expand).
    assertDataFrameEqual(
        part,
        spark.createDataFrame(
            [("t", 0, 1, 1, 1, 3, 1)],
            "topic string, partition int, elections long, leader_changes long, "
            "offline_windows long, isr_shrinks long, isr_expands long",
        ),
    )
    broker = a["broker_churn_daily"].select(
        "broker", "leaderships_gained", "leaderships_lost", "isr_removals", "isr_additions",
        "replicas_offline",
    )
    assertDataFrameEqual(
        broker,
        spark.createDataFrame(
            [
                (1, 1, 1, 1, 0, 0),  # led from creation, lost it when it died, left the ISR
                (2, 0, 0, 1, 0, 1),
                (3, 1, 0, 1, 1, 0),
            ],
            "broker int, leaderships_gained long, leaderships_lost long, isr_removals long, "
            "isr_additions long, replicas_offline long",
        ),
    )


def test_elections_by_type_per_hour(spark, tmp_path: Path) -> None:
    from pyspark.testing import assertDataFrameEqual

    log = Log()
    log.create(0, "t", 0, [1, 2])
    kinds = [("controlled_shutdown", 2), ("preferred", 1), ("reassign", 2), ("preferred", 1)]
    for i, (kind, leader) in enumerate(kinds):
        log.online(600 * (i + 1), "t", 0, leader=leader, isr=[1, 2], frm="OnlinePartition",
                   election=kind, event="X")
    log.offline(3700, "t", 0, [1])
    log.online(3710, "t", 0, leader=1, isr=[1])
    a = analyze_lines(spark, tmp_path, log.lines)
    assertDataFrameEqual(
        a["elections_hourly"].select("hour", "election", "elections"),
        spark.createDataFrame(
            [
                (at(0), "controlled_shutdown", 1),
                (at(0), "preferred", 2),
                (at(0), "reassign", 1),
                (at(3600), "offline", 1),
            ],
            "hour timestamp, election string, elections long",
        ),
    )


def test_top_flapping_partitions(spark, tmp_path: Path) -> None:
    log = Log()
    for p in range(3):
        log.create(0, "t", p, [2, 1] if p == 1 else [1, 2])
    for i in range(5):  # t-1 flaps: its follower drops out and back
        log.online(10 + i * 10, "t", 1, leader=2, isr=[2], frm="OnlinePartition",
                   election=None, event="IsrChangeNotification")
        log.online(15 + i * 10, "t", 1, leader=2, isr=[2, 1], frm="OnlinePartition",
                   election=None, event="IsrChangeNotification")
    log.offline(100, "t", 2, [1])
    log.online(110, "t", 2, leader=2, isr=[2])
    a = analyze_lines(spark, tmp_path, log.lines)
    top = [(r.rank, r.partition, r.flaps) for r in a["flapping_partitions"].collect()]
    # t-1: 5 ISR shrinks. t-2: one offline window, one leader change, and two ISR shrinks
    # ([1,2] -> [1] -> [2]). t-0 never changed.
    assert sorted(top) == [(1, 1, 5), (2, 2, 4)]


def test_preferred_leader_imbalance_hourly(spark, tmp_path: Path) -> None:
    from pyspark.testing import assertDataFrameEqual

    log = Log()
    log.create(0, "t", 0, [1, 2])  # preferred 1
    log.create(0, "t", 1, [2, 1])  # preferred 2
    log.online(1800, "t", 0, leader=2, isr=[2], frm="OnlinePartition",
               election="controlled_shutdown", event="ControlledShutdown")
    log.online(5400, "t", 0, leader=1, isr=[1, 2], frm="OnlinePartition",
               election="preferred", event="AutoPreferredReplicaLeaderElection")
    log.online(7200, "t", 1, leader=2, isr=[2, 1], frm="OnlinePartition", election=None,
               event="IsrChangeNotification")
    a = analyze_lines(spark, tmp_path, log.lines)
    got = a["leader_imbalance_hourly"].select(
        "broker", "hour", "avg_leaders", "avg_preferred_partitions", "avg_not_preferred_led",
        "imbalance_ratio",
    )
    expected = spark.createDataFrame(
        [
            (1, at(0), 0.5, 1.0, 0.5, 0.5),
            (1, at(3600), 0.5, 1.0, 0.5, 0.5),
            (2, at(0), 1.5, 1.0, 0.0, 0.0),
            (2, at(3600), 1.5, 1.0, 0.0, 0.0),
        ],
        "broker int, hour timestamp, avg_leaders double, avg_preferred_partitions double, "
        "avg_not_preferred_led double, imbalance_ratio double",
    )
    assertDataFrameEqual(got, expected, atol=1e-9)


def test_broker_down_events(spark, tmp_path: Path) -> None:
    log = Log()
    for p in range(3):
        log.create(0, "t", p, [1, 2])
    for start in (100, 500):  # broker 2 fails twice; each failure is one burst
        for p in range(3):
            log.replica(start, "t", p, 2, "OnlineReplica", "OfflineReplica", 1, [1])
        for p in range(3):
            log.replica(start + 60, "t", p, 2, "OfflineReplica", "OnlineReplica", 1, [1])
    a = analyze_lines(spark, tmp_path, log.lines)
    row = a["broker_churn_daily"].where("broker = 2").collect()[0]
    assert (row.down_events, row.replicas_offline, row.isr_removals) == (2, 6, 3)


def test_a_bounced_broker_is_a_down_event(spark, tmp_path: Path) -> None:
    """A broker that restarted before its session expired: the controller handles its failure
    and its return in one BrokerChange, so its replicas go offline and online again within
    the same second, netting out. It went down once (and again at 500 s, in the same second
    as well)."""
    log = Log()
    for p in range(2):
        log.create(0, "t", p, [1, 2])
    for start in (100.12, 500.3):
        for p in range(2):
            log.replica(start + 0.01 * p, "t", p, 1, "OnlineReplica", "OfflineReplica", 2, [2])
        for p in range(2):
            log.replica(start + 0.08 + 0.01 * p, "t", p, 1, "OfflineReplica", "OnlineReplica",
                        2, [2])
    a = analyze_lines(spark, tmp_path, log.lines)
    row = a["broker_churn_daily"].where("broker = 1").collect()[0]
    assert (row.down_events, row.replicas_offline) == (2, 4)


def test_a_replica_taken_offline_again_counts_once(spark, tmp_path: Path) -> None:
    """Broker 2's controlled shutdown takes its follower replicas offline; its exit moves
    them Offline again (with the one it led): each replica went offline once."""
    log = Log()
    log.create(0, "t", 0, [1, 2])
    log.create(0, "t", 1, [2, 1])
    log.online(10, "t", 1, leader=1, isr=[1], frm="OnlinePartition",
               election="controlled_shutdown", event="ControlledShutdown")
    log.replica(10, "t", 0, 2, "OnlineReplica", "OfflineReplica", 1, [1], "ControlledShutdown")
    log.replica(11, "t", 0, 2, "OfflineReplica", "OfflineReplica", 1, [1], "ControlledShutdown")
    log.replica(20, "t", 0, 2, "OfflineReplica", "OfflineReplica", 1, [1])
    log.replica(20, "t", 1, 2, "OnlineReplica", "OfflineReplica", 1, [1])
    a = analyze_lines(spark, tmp_path, log.lines)
    row = a["broker_churn_daily"].where("broker = 2").collect()[0]
    assert (row.down_events, row.replicas_offline) == (1, 2)


def test_creation_as_the_controller_logs_it_is_no_election(spark, tmp_path: Path) -> None:
    """Controllers before this fix logged a partition's creation (New -> Online) with
    election "offline"; it is an initialization, not an election."""
    log = Log()
    for p in range(3):
        log.part(0, "t", p, "NonExistentPartition", "NewPartition", None, None, None,
                 "TopicChange", None)
        log.part(0, "t", p, "NewPartition", "OnlinePartition", 1, [1, 2], "offline",
                 "TopicChange")
    log.offline(100, "t", 0, [2])
    log.online(110, "t", 0, leader=2, isr=[2])
    a = analyze_lines(spark, tmp_path, log.lines)
    assert [(r.election, r.elections) for r in a["elections_hourly"].collect()] == [
        ("offline", 1)
    ]
    per_partition = {r.partition: r.elections for r in a["partition_churn_daily"].collect()}
    assert per_partition == {0: 1, 1: 0, 2: 0}


def test_a_topic_re_created_under_the_same_name_starts_afresh(spark, tmp_path: Path) -> None:
    """Deleted t-0 on [1,2], re-created on [3,4]: no partition leader change, no ISR change,
    no flap; for brokers, a leadership lost at the deletion and one gained at the creation."""
    log = Log()
    log.create(0, "t", 0, [1, 2])
    log.offline(100, "t", 0, [1, 2], event="TopicDeletion")
    log.part(101, "t", 0, "OfflinePartition", "NonExistentPartition", None, None, None,
             "TopicDeletion", None)
    # The deletion's replica steps take the replicas out of the ISR: the topic going away,
    # not ISR churn.
    log.replica(102, "t", 0, 1, "OnlineReplica", "OfflineReplica", -1, [2], "TopicDeletion")
    log.replica(102, "t", 0, 2, "OnlineReplica", "OfflineReplica", -1, [], "TopicDeletion")
    log.create(200, "t", 0, [3, 4])
    log.controller(300, "ready", "ready")
    a = analyze_lines(spark, tmp_path, log.lines)
    (row,) = a["partition_churn_daily"].collect()
    assert (row.elections, row.leader_changes, row.isr_shrinks, row.isr_expands) == (0, 0, 0, 0)
    assert a["flapping_partitions"].count() == 0
    brokers = {
        b.broker: (b.leaderships_gained, b.leaderships_lost, b.isr_removals, b.isr_additions)
        for b in a["broker_churn_daily"].collect()
    }
    # No row for broker 2: the deletion's replica steps are the topic going away, so no
    # replica of it went offline either.
    assert brokers == {1: (1, 1, 0, 0), 3: (1, 0, 0, 0)}, brokers


def test_a_broker_first_seen_down_by_a_new_controller_is_a_down_event(
    spark, tmp_path: Path
) -> None:
    # The broker died with the old controller: the new one records its replicas offline in
    # its failover's event. Once, however long it stays down.
    log = Log()
    for p in range(2):
        log.create(0, "t", p, [1, 2])
    log.new_controller(100, controller_id=2)
    for p in range(2):
        log.replica(101, "t", p, 1, "ReplicaDeletionIneligible", "OfflineReplica", 2, [2],
                    event="ControllerChange")  # fmt: skip
    log.new_controller(200, controller_id=3)
    for p in range(2):  # a second failover while it is still down: not a second event
        log.replica(201, "t", p, 1, "ReplicaDeletionIneligible", "OfflineReplica", 2, [2],
                    event="Reelect")  # fmt: skip
    a = analyze_lines(spark, tmp_path, log.lines)
    row = a["broker_churn_daily"].where("broker = 1").collect()[0]
    assert (row.down_events, row.replicas_offline) == (1, 4)
    # A period that starts after it went down: the second failover's records find it down
    # already (they used to be an event once the first ones were cut off by --from).
    cut = analyze_lines(spark, tmp_path, log.lines, start=at(150), end=at(300), name="cut.jsonl")
    row = cut["broker_churn_daily"].where("broker = 1").collect()[0]
    assert (row.down_events, row.replicas_offline) == (0, 2)
