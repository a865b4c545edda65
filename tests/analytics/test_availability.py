"""Unavailability windows, availability % and MTTR on hand-made logs with known answers."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.analytics.conftest import Log, at
from tests.analytics.pipeline import analyze_lines

pytestmark = pytest.mark.spark

WINDOW_COLS = [
    "cluster", "topic", "partition", "start_ts", "end_ts", "window_start", "window_end",
    "duration_s", "end_reason", "start_known", "recovery_election", "leader_after",
]
WINDOW_SCHEMA = (
    "cluster string, topic string, partition int, start_ts timestamp, end_ts timestamp, "
    "window_start timestamp, window_end timestamp, duration_s double, end_reason string, "
    "start_known boolean, recovery_election string, leader_after int"
)


def three_outages() -> Log:
    """t-0 offline 100..160 s; u-0 offline since before the log until 200 s; t-1 offline
    from 300 s to the end (400 s)."""
    log = Log()
    log.create(0, "t", 0, [1, 2])
    log.create(0, "t", 1, [2, 1])
    log.offline(100, "t", 0, [1])
    log.online(160, "t", 0, leader=2, isr=[2])
    log.online(200, "u", 0, leader=3, isr=[3])  # its first record: it was offline before
    log.offline(300, "t", 1, [2])
    log.replica(400, "t", 0, 1, "OfflineReplica", "OnlineReplica", 2, [2])
    return log


EXPECTED_WINDOWS = [
    ("c1", "t", 0, at(100), at(160), at(100), at(160), 60.0, "recovered", True, "offline", 2),
    ("c1", "u", 0, None, at(200), at(0), at(200), 200.0, "recovered", False, "offline", 3),
    ("c1", "t", 1, at(300), None, at(300), at(400), 100.0, "ongoing", True, None, None),
]


def test_windows_offline_at_start_middle_and_end(spark, tmp_path: Path) -> None:
    from pyspark.testing import assertDataFrameEqual

    a = analyze_lines(spark, tmp_path, three_outages().lines)
    expected = spark.createDataFrame(EXPECTED_WINDOWS, WINDOW_SCHEMA)
    assertDataFrameEqual(a["unavailability_windows"].select(WINDOW_COLS), expected)


def test_out_of_order_and_duplicate_lines_change_nothing(spark, tmp_path: Path) -> None:
    from pyspark.testing import assertDataFrameEqual

    lines = three_outages().lines
    noisy = lines + lines[2:5] + lines[:1]  # re-sent lines
    random.Random(7).shuffle(noisy)
    a = analyze_lines(spark, tmp_path, noisy)
    expected = spark.createDataFrame(EXPECTED_WINDOWS, WINDOW_SCHEMA)
    assertDataFrameEqual(a["unavailability_windows"].select(WINDOW_COLS), expected)
    counts = a.timeline.groupBy().agg({"dup": "count"}).collect()[0][0]
    assert counts == len(noisy)
    assert a.timeline.where("dup").count() == 4
    assert a.timeline.where("live").count() == len(lines)


def test_a_stray_controller_epoch_changes_no_window(spark, tmp_path: Path) -> None:
    # One controller record at epoch 2e9: the failover-gap lookup built one row per epoch
    # between gaps' epochs (two billion) and the job ran out of memory.
    from pyspark.testing import assertDataFrameEqual

    log = three_outages()
    stray = Log(controller_id=9, epoch=2_000_000_000)
    stray.controller(250, "elected")
    a = analyze_lines(spark, tmp_path, log.lines + stray.lines)
    expected = spark.createDataFrame(EXPECTED_WINDOWS, WINDOW_SCHEMA)
    assertDataFrameEqual(a["unavailability_windows"].select(WINDOW_COLS), expected)


def _copy(line: str, **changes: object) -> str:
    record = json.loads(line)
    record.update(changes)
    return json.dumps(record)


def test_a_bad_or_failed_copy_never_displaces_the_good_one(spark, tmp_path: Path) -> None:
    """Copies of a record id that are bad (an unknown state) or failed sort before the usable
    copy, whatever the line order: the usable one counts and none is a duplicate."""
    from pyspark.testing import assertDataFrameEqual

    lines = three_outages().lines
    good = lines[4]  # t-0 goes offline at 100 s
    copies = [_copy(good, to_state="Bogus"), _copy(good, result="error")]
    for n, noisy in enumerate([lines[:4] + copies + lines[4:], lines + copies]):
        a = analyze_lines(spark, tmp_path, noisy, name=f"c1.{n}.jsonl")
        expected = spark.createDataFrame(EXPECTED_WINDOWS, WINDOW_SCHEMA)
        assertDataFrameEqual(a["unavailability_windows"].select(WINDOW_COLS), expected)
        assert a.timeline.where("dup").count() == 0
        assert a.timeline.where("live").count() == len(lines)


def test_conflicting_copies_one_counts_whatever_the_line_order(spark, tmp_path: Path) -> None:
    """Two usable copies of one record id that differ (t-0's recovery at 160 s, by broker 2
    and by broker 1): the same one counts in either line order, and the record after them
    sees that copy's leader, not the dropped one's."""
    lines = three_outages().lines
    other = _copy(lines[5], leader=1, isr=[1])
    kept = set()
    for n, noisy in enumerate([[*lines, other], [*lines[:5], other, *lines[5:]]]):
        a = analyze_lines(spark, tmp_path, noisy, name=f"c1.{n}.jsonl")
        tl = a.timeline.where("topic = 't' AND partition = 0")
        (live,) = tl.where("live AND ts = to_timestamp('2026-11-22 10:02:40')").collect()
        (dropped,) = tl.where("dup").collect()
        assert {live.leader, dropped.leader} == {1, 2}
        kept.add(live.leader)
        (after,) = tl.where("kind = 'replica'").collect()
        assert after.leader_before == live.leader
        (window,) = a["unavailability_windows"].where("topic = 't' AND partition = 0").collect()
        assert window.leader_after == live.leader
    assert len(kept) == 1


def test_availability_and_mttr(spark, tmp_path: Path) -> None:
    from pyspark.testing import assertDataFrameEqual

    a = analyze_lines(spark, tmp_path, three_outages().lines)
    got = a["availability_summary"].select(
        "cluster", "topic", "partitions", "exists_partition_s", "offline_partition_s",
        "availability_pct", "windows", "recovered_windows", "ongoing_windows", "mttr_p50_s",
        "mttr_p99_s",
    )
    schema = (
        "cluster string, topic string, partitions long, exists_partition_s double, "
        "offline_partition_s double, availability_pct double, windows long, "
        "recovered_windows long, ongoing_windows long, mttr_p50_s double, mttr_p99_s double"
    )
    expected = spark.createDataFrame(
        [
            # 3 partitions x 400 s exist; 60 + 200 + 100 s offline. Only t-0's window has a
            # known start and a recovery, so it alone makes the MTTR.
            ("c1", None, 3, 1200.0, 360.0, 70.0, 3, 2, 1, 60.0, 60.0),
            ("c1", "t", 2, 800.0, 160.0, 80.0, 2, 1, 1, 60.0, 60.0),
            ("c1", "u", 1, 400.0, 200.0, 50.0, 1, 1, 0, None, None),
        ],
        schema,
    )
    assertDataFrameEqual(got, expected, atol=1e-6)


def test_mttr_percentiles(spark, tmp_path: Path) -> None:
    log = Log()
    for i, outage in enumerate([10, 20, 30, 40, 1000]):
        log.create(0, "t", i, [1, 2])
        log.offline(100, "t", i, [1])
        log.online(100 + outage, "t", i, leader=2, isr=[2])
    a = analyze_lines(spark, tmp_path, log.lines)
    row = a["availability_summary"].where("topic is null").collect()[0]
    assert row.mttr_p50_s == pytest.approx(30.0)
    assert row.mttr_p95_s == pytest.approx(40 + 0.8 * 960)  # linear interpolation
    assert row.mttr_max_s == pytest.approx(1000.0)
    assert row.mttr_mean_s == pytest.approx(220.0)


def test_period_limits_clip_windows_but_history_sets_state(spark, tmp_path: Path) -> None:
    """--from/--to: a window that began before --from starts at --from (its true start is
    still known), and records after --to are outside the period."""
    a = analyze_lines(spark, tmp_path, three_outages().lines, start=at(150), end=at(350))
    rows = {
        (r.topic, r.partition): r
        for r in a["unavailability_windows"].select(WINDOW_COLS).collect()
    }
    # Collected timestamps are naive local time: compare instants.
    assert rows["t", 0].window_start.timestamp() == at(150).timestamp()
    assert rows["t", 0].start_ts.timestamp() == at(100).timestamp()
    assert rows["t", 0].duration_s == pytest.approx(10.0)
    assert rows["u", 0].duration_s == pytest.approx(50.0)
    assert rows["t", 1].window_end.timestamp() == at(350).timestamp()
    assert rows["t", 1].duration_s == pytest.approx(50.0)


def test_topic_deleted_while_offline(spark, tmp_path: Path) -> None:
    log = Log()
    log.create(0, "t", 0, [1])
    log.create(0, "keep", 0, [2])
    log.offline(100, "t", 0, [1])
    # The deletion of an offline topic: Offline -> Offline -> NonExistent.
    log.part(200, "t", 0, "OfflinePartition", "OfflinePartition", -1, [1], None,
             "TopicDeletion")
    log.part(201, "t", 0, "OfflinePartition", "NonExistentPartition", None, None, None,
             "TopicDeletion", None)
    # An online topic's deletion is not an outage.
    log.create(0, "gone", 0, [2])
    log.part(250, "gone", 0, "OnlinePartition", "OfflinePartition", -1, [2], None,
             "TopicDeletion")
    log.part(251, "gone", 0, "OfflinePartition", "NonExistentPartition", None, None, None,
             "TopicDeletion", None)
    # Nor is an online topic whose znode was removed by hand (the controller forgets it
    # under TopicChange, through the same two steps).
    log.create(0, "hand", 0, [2])
    log.part(300, "hand", 0, "OnlinePartition", "OfflinePartition", -1, [2], None,
             "TopicChange")
    log.part(300, "hand", 0, "OfflinePartition", "NonExistentPartition", None, None, None,
             "TopicChange", None)
    log.replica(400, "keep", 0, 2, "OnlineReplica", "OnlineReplica", 2, [2])
    a = analyze_lines(spark, tmp_path, log.lines)
    windows = a["unavailability_windows"].collect()
    assert [(w.topic, w.end_reason, w.duration_s) for w in windows] == [("t", "deleted", 100.0)]
    summary = {r.topic: r for r in a["availability_summary"].collect()}
    assert summary["t"].exists_partition_s == pytest.approx(200.0)  # until the deletion
    assert summary["t"].deleted_while_offline == 1
    assert summary["t"].mttr_p50_s is None  # never recovered
    assert summary["gone"].offline_partition_s == 0.0
    assert summary["hand"].offline_partition_s == 0.0
    assert summary[None].exists_partition_s == pytest.approx(200 + 400 + 250 + 300)


def test_a_deletion_a_new_controller_starts_over_is_no_outage(spark, tmp_path: Path) -> None:
    """A topic deleted while a broker with one of its replicas is down goes at once; a new
    controller loads its partitions Offline and, once the broker is back, deletes them again
    under BrokerChange (Offline -> Offline -> NonExistent): no outage. A partition offline
    that a later broker failure moves Offline again keeps the one outage it had."""
    log = Log()
    log.create(0, "t", 0, [1, 2])
    log.create(0, "down", 0, [3])
    log.create(0, "keep", 0, [2])
    log.part(100, "t", 0, "OnlinePartition", "OfflinePartition", None, None, None,
             "TopicDeletion", None)
    log.part(100, "t", 0, "OfflinePartition", "NonExistentPartition", None, None, None,
             "TopicDeletion", None)
    log.offline(120, "down", 0, [3])
    log.new_controller(150, controller_id=2)
    log.part(170, "down", 0, "OfflinePartition", "OfflinePartition", None, None, None,
             "BrokerChange", None)  # another broker fails: still offline
    log.part(200, "t", 0, "OfflinePartition", "OfflinePartition", None, None, None,
             "BrokerChange", None)
    log.part(200, "t", 0, "OfflinePartition", "NonExistentPartition", None, None, None,
             "BrokerChange", None)
    log.online(300, "down", 0, leader=3, isr=[3])
    log.replica(400, "keep", 0, 2, "OnlineReplica", "OnlineReplica", 2, [2])
    a = analyze_lines(spark, tmp_path, log.lines)
    windows = a["unavailability_windows"].collect()
    assert [
        (w.topic, w.start_ts.timestamp(), w.end_ts.timestamp(), w.end_reason) for w in windows
    ] == [("down", at(120).timestamp(), at(300).timestamp(), "recovered")]
    summary = {r.topic: r for r in a["availability_summary"].collect()}
    assert summary["t"].exists_partition_s == pytest.approx(100.0)
    assert summary["t"].offline_partition_s == 0.0
    churn = {r.topic: r for r in a["partition_churn_daily"].collect()}
    assert (churn["t"].offline_windows, churn["down"].offline_windows) == (0, 1)


def test_a_partition_only_moved_offline_again_in_the_log_was_offline_all_along(
    spark, tmp_path: Path
) -> None:
    """A slice of a longer log: the partition's only records are broker failures moving it
    Offline again (and a failed election). It was offline before the slice and still is."""
    log = Log()
    log.create(0, "keep", 0, [2])
    log.part(100, "t", 0, "OfflinePartition", "OfflinePartition", None, None, None,
             "BrokerChange", None)
    log.part(100, "t", 0, "OfflinePartition", "OnlinePartition", None, None, "offline",
             "BrokerChange", None, result="failed")
    log.part(200, "t", 0, "OfflinePartition", "OfflinePartition", None, None, None,
             "BrokerChange", None)
    log.replica(400, "keep", 0, 2, "OnlineReplica", "OnlineReplica", 2, [2])
    a = analyze_lines(spark, tmp_path, log.lines)
    windows = a["unavailability_windows"].collect()
    assert [(w.topic, w.start_ts, w.end_reason, w.start_known) for w in windows] == [
        ("t", None, "ongoing", False)
    ]
    assert windows[0].duration_s == pytest.approx(400.0)


def test_a_deletion_a_reassignment_held_back_is_no_outage(spark, tmp_path: Path) -> None:
    """A topic deleted while one of its partitions is being reassigned is deleted when the
    reassignment completes, in the event that completes it: Online -> Offline ->
    NonExistent under AlterPartitionReceived is the topic going away, not an outage."""
    log = Log()
    log.create(0, "t", 0, [1, 2])
    log.create(0, "t", 1, [2, 1])
    for p in (0, 1):
        log.part(100, "t", p, "OnlinePartition", "OfflinePartition", None, None, None,
                 "AlterPartitionReceived", None)
    for p in (0, 1):
        log.part(100, "t", p, "OfflinePartition", "NonExistentPartition", None, None, None,
                 "AlterPartitionReceived", None)
    a = analyze_lines(spark, tmp_path, log.lines)
    assert a["unavailability_windows"].count() == 0
    summary = {r.topic: r for r in a["availability_summary"].collect()}
    assert summary["t"].exists_partition_s == pytest.approx(200.0)
    assert summary["t"].offline_partition_s == 0.0
    assert {r.offline_windows for r in a["partition_churn_daily"].collect()} == {0}


def test_a_deletion_resumed_by_a_new_controller_or_a_broker_return_is_no_outage(
    spark, tmp_path: Path
) -> None:
    """Found on a chaos run's real logs: a new controller resumes a deletion requested during
    the failover (under Reelect), a broker's return lets a held-back one go ahead (under
    BrokerChange). Online -> Offline -> NonExistent is the topic going away under any event;
    re-sent copies of the Offline line between them change nothing. A real outage under the
    same event, and a topic deleted while offline, keep theirs."""
    log = Log()
    for topic in ("a", "b", "c", "real"):
        log.create(0, topic, 0, [1, 2])
    log.new_controller(100, controller_id=2)
    offline_a = log.part(110, "a", 0, "OnlinePartition", "OfflinePartition", None, None, None,
                         "Reelect", None)
    log.lines += [offline_a, offline_a]  # re-sent copies (with two, it was an outage)
    log.part(110, "a", 0, "OfflinePartition", "NonExistentPartition", None, None, None,
             "Reelect", None)
    for p_ in (1, 2):
        log.replica(110, "a", 0, p_, "OnlineReplica", "OfflineReplica", -1, [], "Reelect")
        log.replica(110, "a", 0, p_, "OfflineReplica", "ReplicaDeletionStarted", -1, [],
                    "Reelect")
    log.offline(200, "real", 0, [1])
    log.part(200, "b", 0, "OnlinePartition", "OfflinePartition", None, None, None,
             "BrokerChange", None)
    log.part(200, "b", 0, "OfflinePartition", "NonExistentPartition", None, None, None,
             "BrokerChange", None)
    log.offline(250, "c", 0, [1])  # a real outage, then the topic deleted while offline
    log.part(300, "c", 0, "OfflinePartition", "OfflinePartition", None, None, None,
             "BrokerChange", None)
    log.part(300, "c", 0, "OfflinePartition", "NonExistentPartition", None, None, None,
             "BrokerChange", None)
    log.online(400, "real", 0, leader=1, isr=[1])
    a = analyze_lines(spark, tmp_path, log.lines)
    windows = a["unavailability_windows"].collect()
    assert sorted((w.topic, w.duration_s, w.end_reason) for w in windows) == [
        ("c", 50.0, "deleted"), ("real", 200.0, "recovered")
    ]
    summary = {r.topic: r for r in a["availability_summary"].collect()}
    assert (summary["a"].offline_partition_s, summary["b"].offline_partition_s) == (0.0, 0.0)
    assert (summary["a"].deleted_while_offline, summary["c"].deleted_while_offline) == (0, 1)
    # The deletion's replica steps under Reelect are no broker going down.
    assert [(r.broker, r.down_events) for r in a["broker_churn_daily"].collect()
            if r.down_events] == []  # fmt: skip


def test_hourly_and_daily_availability_across_boundaries(spark, tmp_path: Path) -> None:
    from pyspark.testing import assertDataFrameEqual

    log = Log()
    log.create(0, "t", 0, [1, 2])
    log.offline(1800, "t", 0, [1])  # 10:30
    log.online(4500, "t", 0, leader=2, isr=[2])  # 11:15
    log.replica(9000, "t", 0, 1, "OfflineReplica", "OnlineReplica", 2, [2])  # 12:30
    a = analyze_lines(spark, tmp_path, log.lines)
    got = a["availability_hourly"].select(
        "hour", "exists_partition_s", "offline_partition_s", "availability_pct"
    )
    expected = spark.createDataFrame(
        [
            (at(0), 3600.0, 1800.0, 50.0),
            (at(3600), 3600.0, 900.0, 75.0),
            (at(7200), 1800.0, 0.0, 100.0),
        ],
        "hour timestamp, exists_partition_s double, offline_partition_s double, "
        "availability_pct double",
    )
    assertDataFrameEqual(got, expected, atol=1e-6)
    daily = a["availability_daily"].collect()
    assert len(daily) == 1
    assert daily[0].exists_partition_s == pytest.approx(9000.0)
    assert daily[0].offline_partition_s == pytest.approx(2700.0)


def test_online_to_online_is_churn_not_outage(spark, tmp_path: Path) -> None:
    log = Log()
    log.create(0, "t", 0, [1, 2])
    log.online(50, "t", 0, leader=2, isr=[2], frm="OnlinePartition",
               election="controlled_shutdown", event="ControlledShutdown")
    log.online(90, "t", 0, leader=1, isr=[1, 2], frm="OnlinePartition", election="preferred",
               event="AutoPreferredReplicaLeaderElection")
    a = analyze_lines(spark, tmp_path, log.lines)
    assert a["unavailability_windows"].count() == 0
    churn = a["partition_churn_daily"].collect()[0]
    assert (churn.elections, churn.leader_changes, churn.offline_windows) == (2, 2, 0)


def test_failed_records_are_not_transitions(spark, tmp_path: Path) -> None:
    log = Log()
    log.create(0, "t", 0, [1])
    log.offline(100, "t", 0, [1])
    log.part(110, "t", 0, "OfflinePartition", "OnlinePartition", -1, [1], "offline",
             result="failed")
    log.online(200, "t", 0, leader=1, isr=[1])
    a = analyze_lines(spark, tmp_path, log.lines)
    windows = a["unavailability_windows"].collect()
    assert [(w.duration_s, w.end_reason) for w in windows] == [(100.0, "recovered")]


_INSTANTS = ("start_known", "unix_micros(start_ts) AS start_us", "unix_micros(end_ts) AS end_us",
             "duration_s")


def _us(seconds: float) -> int:
    return round(at(seconds).timestamp() * 1_000_000)


_INSTANTS_EST = (*_INSTANTS, "start_estimated")


def test_a_partition_a_new_controller_finds_offline_is_an_outage_of_unknown_start(
    spark, tmp_path: Path
) -> None:
    # The controller records a partition it finds without a live leader at its failover as
    # NonExistentPartition -> OfflinePartition. In the new controller's own log alone (its
    # first record) it was offline since before the log: start unknown, kept out of MTTR.
    alone = Log(controller_id=2, epoch=6)
    alone.part(50, "b", 0, "NonExistentPartition", "OfflinePartition", -1, [1], None,
               "ControllerChange")  # fmt: skip
    alone.online(120, "b", 0, leader=1, isr=[1])
    (tmp_path / "alone").mkdir()
    a = analyze_lines(spark, tmp_path / "alone", alone.lines)
    [w] = a["unavailability_windows"].selectExpr(*_INSTANTS_EST).collect()
    assert (w.start_known, w.start_us, w.end_us, w.start_estimated) == (
        False, None, _us(120), False)
    [summary] = a["availability_summary"].where("topic IS NULL").collect()
    assert summary.mttr_p50_s is None


def test_an_outage_found_at_a_failover_starts_with_the_controller_gap(
    spark, tmp_path: Path
) -> None:
    # With the previous controller's lines, the partition was online under it and it logged
    # no loss: the leader went while no controller worked. Controller 1 (epoch 5) crashed
    # after its last line at 0 s; controller 2 was elected at 40 s, so the gap starts one
    # session timeout (18 s) earlier, at 22 s, and lasts until controller 2 is ready (60 s).
    # Its failover found b-0 offline at 50 s: the window starts at 22 s, an estimate, and
    # counts for MTTR and availability. c-0, which controller 2 saw go offline after it was
    # ready, keeps its logged start.
    log = Log()
    log.create(0, "b", 0, [1])
    log.create(0, "c", 0, [1])
    log.new_controller(40, controller_id=2, ready_after=20)
    log.part(50, "b", 0, "NonExistentPartition", "OfflinePartition", -1, [1], None,
             "ControllerChange")  # fmt: skip
    log.part(50, "c", 0, "NonExistentPartition", "OnlinePartition", 1, [1], None,
             "ControllerChange")  # fmt: skip
    log.online(120, "b", 0, leader=1, isr=[1])
    log.offline(150, "c", 0, [1])
    log.online(160, "c", 0, leader=1, isr=[1])
    log.replica(200, "b", 0, 1, "OnlineReplica", "OnlineReplica", 1, [1])
    a = analyze_lines(spark, tmp_path, log.lines)
    windows = a["unavailability_windows"].orderBy("topic").selectExpr(*_INSTANTS_EST)
    assert [tuple(w) for w in windows.collect()] == [
        (False, _us(22), _us(120), 98.0, True),
        (True, _us(150), _us(160), 10.0, False),
    ]
    [summary] = a["availability_summary"].where("topic IS NULL").collect()
    assert (summary.offline_partition_s, summary.mttr_max_s) == (108.0, 98.0)
    [gap] = a["controller_gaps"].selectExpr(
        "unix_micros(gap_start)", "unix_micros(gap_end)").collect()
    assert tuple(gap) == (_us(22), _us(60))
