"""Controller failovers (also in the middle of an outage), malformed lines, cluster names."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analytics.conftest import Log, at
from tests.analytics.pipeline import analyze_lines

pytestmark = pytest.mark.spark


def failover_during_outage(resign: bool) -> Log:
    log = Log(controller_id=1, epoch=5)
    log.controller(0, "elected")
    log.controller(1, "ready", "elected")
    log.create(2, "t", 0, [1, 2])
    log.offline(100, "t", 0, [1])
    log.replica(110, "t", 0, 1, "OnlineReplica", "OfflineReplica", -1, [1])
    if resign:
        log.controller(120, "resigned", "ready")
    log.new_controller(130, controller_id=2, ready_after=1.0)  # epoch 6, seq from 1 again
    log.online(140, "t", 0, leader=2, isr=[2], election="offline_unclean")
    return log


@pytest.mark.parametrize("resign", [False, True], ids=["crash", "resign"])
def test_failover_in_the_middle_of_an_outage(spark, tmp_path: Path, resign: bool) -> None:
    from pyspark.testing import assertDataFrameEqual

    a = analyze_lines(spark, tmp_path, failover_during_outage(resign).lines)
    windows = a["unavailability_windows"].select(
        "start_ts", "end_ts", "duration_s", "epoch_at_start", "epoch_at_end",
        "controller_failover",
    )
    assertDataFrameEqual(
        windows,
        spark.createDataFrame(
            [(at(100), at(140), 40.0, 5, 6, True)],
            "start_ts timestamp, end_ts timestamp, duration_s double, epoch_at_start int, "
            "epoch_at_end int, controller_failover boolean",
        ),
    )
    tenures = a["controller_tenures"].select(
        "controller_epoch", "controller_id", "elected_ts", "ready_ts", "resigned_ts",
        "last_seen_ts", "elected_to_ready_s", "end_reason", "ended_ts",
    )
    resigned = at(120) if resign else None
    assertDataFrameEqual(
        tenures,
        spark.createDataFrame(
            [
                (5, 1, at(0), at(1), resigned, resigned or at(110), 1.0,
                 "resigned" if resign else "superseded", resigned or at(130)),
                (6, 2, at(130), at(131), None, at(140), 1.0, "active", None),
            ],
            "controller_epoch int, controller_id int, elected_ts timestamp, "
            "ready_ts timestamp, resigned_ts timestamp, last_seen_ts timestamp, "
            "elected_to_ready_s double, end_reason string, ended_ts timestamp",
        ),
    )
    gap = a["controller_gaps"].collect()
    assert len(gap) == 1
    # Resigned: from the resignation. Crashed: one 18 s session timeout before the new
    # election (130 - 18 = 112 s, after the last record at 110 s) until ready at 131 s.
    assert gap[0].gap_s == pytest.approx(11.0 if resign else 19.0)
    assert gap[0].cause == ("resigned" if resign else "crashed")
    assert (gap[0].from_controller, gap[0].to_controller) == (1, 2)


def test_malformed_lines_become_bad_records(spark, tmp_path: Path) -> None:
    log = Log()
    log.create(0, "t", 0, [1])
    good = list(log.lines)
    bad = [
        "this is not json",
        '{"ts":"2026-11-22T10:00:01.000000Z","seq":3,"controller_id":1,',  # torn
        good[0].replace('"seq": 1', '"seq": "one"'),  # wrong type
        good[0].replace('"ts": "2026-11-22T10:00:00.000000Z"', '"ts": null'),
        good[0].replace('"kind": "partition"', '"kind": "broker"'),
        good[0].replace('"topic": "t"', '"topic": null'),
        good[0].replace('"to_state": "NewPartition"', '"to_state": "Sideways"'),
        # Spark reads any JSON value into a string column as its text: an object as a topic
        # is caught by Kafka's topic-name rule, other fields by their vocabulary.
        good[0].replace('"topic": "t"', '"topic": {"name": "t"}'),
        good[0].replace('"topic": "t"', '"topic": "a/b"'),
        good[0].replace('"topic": "t"', '"topic": "t\\n"'),  # Java's $ matches before it
        good[0].replace('"from_state": "NonExistentPartition"', '"from_state": ["x"]'),
        good[1].replace('"election": null', '"election": "sideways"'),
        log.replica(0, "t", 0, 1, "NewReplica", "UpsideDownReplica", 1, [1]),
        log.controller(0, "confused"),
    ]
    del log.lines[len(good):]
    a = analyze_lines(spark, tmp_path, [*good[:1], *bad, "", *good[1:]])
    from controller.analytics.outputs import bad_records

    rows = bad_records(a.facts).collect()
    assert sorted(r.reason for r in rows) == sorted([
        "unparseable", "unparseable", "unparseable", "missing ts", "unknown kind",
        "missing topic or partition", "unknown partition state", "invalid topic name",
        "invalid topic name", "invalid topic name", "unknown partition state", "unknown election",
        "unknown replica state", "unknown controller state",
    ])
    assert {r.raw for r in rows if r.reason == "unparseable"} >= {bad[0], bad[1]}
    assert all(r.source_file.endswith("log.jsonl") for r in rows)
    assert a.timeline.where("live").count() == len(good)
    assert a["availability_summary"].where("topic is null").collect()[0].partitions == 1


def test_cluster_from_record_or_file_name(spark, tmp_path: Path) -> None:
    from controller.analytics.ingest import clean, read_logs

    named = Log(cluster=None)
    named.create(0, "t", 0, [1])
    (tmp_path / "prod-eu-1.jsonl").write_text("\n".join(named.lines) + "\n")
    hive = tmp_path / "logs" / "cluster=blue"
    hive.mkdir(parents=True)
    (hive / "state-change.log").write_text("\n".join(named.lines) + "\n")
    (tmp_path / "state-change.log.3").write_text("\n".join(named.lines) + "\n")
    tagged = Log(cluster="green")
    tagged.create(0, "t", 0, [1])
    (tmp_path / "whatever.jsonl").write_text("\n".join(tagged.lines) + "\n")
    spaced = tmp_path / "logs" / "cluster=eu west"
    spaced.mkdir(parents=True)
    (spaced / "state-change.log").write_text("\n".join(named.lines) + "\n")
    (tmp_path / "us+east 2.jsonl").write_text("\n".join(named.lines) + "\n")
    paths = [str(tmp_path / "*.jsonl"), str(hive / "state-change.log"),
             str(tmp_path / "state-change.log.3"), str(spaced / "state-change.log")]
    got = {r.cluster for r in clean(read_logs(spark, paths)).select("cluster").collect()}
    # names as written, not as the escapes of the file URIs Spark reports
    assert got == {"prod-eu-1", "blue", "default", "green", "eu west", "us+east 2"}


def test_topics_named_as_kafka_no_longer_allows_are_analysed(spark, tmp_path: Path) -> None:
    """The controller manages (and logs) topics other tools or old Kafka versions created: a
    space, non-ASCII letters, 255 characters (Kafka before 0.10). Their records count."""
    log = Log()
    names = ["legacy topic", "zählung", "x" * 255, "[not json"]
    for n, name in enumerate(names):
        log.create(n, name, 0, [1])
        log.offline(10 + n, name, 0, [1])
    a = analyze_lines(spark, tmp_path, log.lines)
    assert a.timeline.where("bad_reason IS NOT NULL").count() == 0
    windows = a["unavailability_windows"].select("topic").collect()
    assert sorted(r.topic for r in windows) == sorted(names)


def test_a_directory_is_read_with_its_subdirectories(spark, tmp_path: Path) -> None:
    """Files next to subdirectories (Spark's partition discovery failed the job on that), in
    nested per-cluster directories, and under a ``cluster=NAME`` directory whose records say
    otherwise (discovery let the directory override them); not hidden files."""
    from controller.analytics.ingest import clean, read_logs

    def write(path: Path, cluster: str | None, seq_from: int) -> None:
        log = Log(cluster=cluster)
        log.seq = seq_from
        log.create(0, "t", 0, [1])
        path.parent.mkdir(parents=True, exist_ok=True)
        log.write(path)

    root = tmp_path / "logs"
    write(root / "top.jsonl", "top", 0)
    write(root / "eu" / "2026-11-22" / "prod-eu-1.jsonl", None, 10)
    write(root / "cluster=blue" / "state-change.log", "green", 20)
    write(root / "cluster=blue" / "more.jsonl", None, 30)
    write(root / ".hidden.jsonl", "hidden", 40)
    rows = clean(read_logs(spark, [str(root)])).select("cluster", "seq", "bad_reason").collect()
    assert all(r.bad_reason is None for r in rows)
    assert sorted((r.cluster, r.seq) for r in rows) == [
        ("blue", 31), ("blue", 32), ("green", 21), ("green", 22),
        ("prod-eu-1", 11), ("prod-eu-1", 12), ("top", 1), ("top", 2),
    ]


def test_a_truncated_gzip_is_named_with_a_way_to_read_what_it_holds(
    spark, tmp_path: Path
) -> None:
    import gzip
    import subprocess
    import sys

    from controller.analytics.ingest import read_logs

    log = Log()
    for p in range(200):
        log.create(p, "t", p, [1, 2])
    packed = gzip.compress(("\n".join(log.lines) + "\n").encode())
    cut = tmp_path / "c1.jsonl.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    done = subprocess.run(
        [sys.executable, "-m", "controller", "analyze", "run", "--input", str(cut),
         "--output", str(tmp_path / "out"), "--master", "local[1]"],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"error: cannot read file://{cut}: java.io.EOFException" in done.stderr
    assert "spark.sql.files.ignoreCorruptFiles=true" in done.stderr
    assert "Traceback" not in done.stderr
    # Spark's own log around it is one line per message, not three copies of a Java trace.
    assert "Lost task" not in done.stderr and "\tat " not in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) <= 6, done.stderr
    # What the hint promises: the lines before the cut, and no failure.
    spark.conf.set("spark.sql.files.ignoreCorruptFiles", "true")
    try:
        read = read_logs(spark, [str(cut)]).where("seq IS NOT NULL").count()
    finally:
        spark.conf.unset("spark.sql.files.ignoreCorruptFiles")
    assert 0 < read < len(log.lines)


def test_two_clusters_are_analysed_apart(spark, tmp_path: Path) -> None:
    one, two = Log(cluster="a"), Log(cluster="b")
    for log, outage in ((one, 10), (two, 30)):
        log.create(0, "t", 0, [1, 2])  # same topic name, same controller id and seqs
        log.offline(100, "t", 0, [1])
        log.online(100 + outage, "t", 0, leader=2, isr=[2])
    a = analyze_lines(spark, tmp_path, one.lines + two.lines)
    got = {(r.cluster, r.duration_s) for r in a["unavailability_windows"].collect()}
    assert got == {("a", 10.0), ("b", 30.0)}
    assert a.timeline.where("dup").count() == 0


def _gaps(a) -> list[tuple]:
    return [
        (g.from_epoch, g.to_epoch, round(g.gap_s, 3), g.cause, g.elections)
        for g in a["controller_gaps"].orderBy("from_epoch").collect()
    ]


def test_a_resignation_logged_after_the_successor_took_over_is_a_lost_session(
    spark, tmp_path: Path
) -> None:
    """After a ZooKeeper session expiry the old controller learns it only on reconnecting:
    its 'resigned' (and any late line) comes after its successor's election. The gap runs
    from one session timeout before that election (30 - 18 = 12 s) to ready (31 s)."""
    log = Log(controller_id=1, epoch=5)
    log.controller(0, "elected")
    log.controller(1, "ready", "elected")
    log.create(2, "t", 0, [1, 2])
    old = Log(controller_id=1, epoch=5)
    old.seq = log.seq
    log.new_controller(30, controller_id=2, ready_after=1.0)
    old.controller(40.1, "resigned", "ready")
    log.controller(100, "ready", "ready")  # a last record: the period runs to 100 s
    a = analyze_lines(spark, tmp_path, log.lines + old.lines)
    assert _gaps(a) == [(5, 6, 19.0, "session_lost", 1)]


def test_a_lost_session_is_never_dated_before_its_controller_was_ready(
    spark, tmp_path: Path
) -> None:
    """Found on a chaos run's real logs: a session ended at once (not timed out) 5 s after
    the controller became ready; its successor was elected at once and the old controller
    resigned 64 ms later. One session timeout (18 s) back from the election is before the
    old controller's own election, overlapping the previous gap: the gap starts at its
    ready (10 s), not at -3 s, and runs to the successor's ready (16 s)."""
    log = Log(controller_id=1, epoch=5)
    log.controller(0, "elected")
    log.controller(1, "ready", "elected")
    log.create(2, "t", 0, [1, 2])
    log.new_controller(9, controller_id=2, ready_after=1.0)  # epoch 6, ready at 10 s
    log.new_controller(15, controller_id=3, ready_after=1.0)  # epoch 7, ready at 16 s
    late = Log(controller_id=2, epoch=6)
    late.seq = 10
    late.controller(15.064, "resigned", "ready")
    log.controller(100, "ready", "ready")  # a last record: the period runs to 100 s
    a = analyze_lines(spark, tmp_path, log.lines + late.lines)
    gaps = {g.from_epoch: g for g in a["controller_gaps"].collect()}
    assert (gaps[6].cause, gaps[6].gap_start.timestamp(), round(gaps[6].gap_s, 3)) == (
        "session_lost", at(10).timestamp(), 6.0
    )
    assert not gaps[6].started_before_period
    assert gaps[6].gap_start >= gaps[5].gap_end  # gaps do not overlap


def test_a_controller_that_resumed_its_epoch_did_not_end_at_its_first_resignation(
    spark, tmp_path: Path
) -> None:
    """A failover fails and is taken up again under the same epoch (the resume path):
    elected, resigned, elected, ready. The epoch ends when its controller dies at 1000 s,
    not at that early resignation: one gap from 1000 s (its last record; 1018 - 18) to the
    successor's ready at 1019 s."""
    log = Log(controller_id=1, epoch=5)
    log.controller(0, "elected")
    log.controller(0.5, "resigned", "elected")
    log.controller(2.5, "elected")
    log.controller(3, "ready", "elected")
    log.create(4, "t", 0, [1, 2])
    log.create(1000, "u", 0, [1, 2])
    log.new_controller(1018, controller_id=2, ready_after=1.0)
    a = analyze_lines(spark, tmp_path, log.lines)
    assert _gaps(a) == [(5, 6, 19.0, "crashed", 1)]


def test_a_successor_that_never_became_ready_is_inside_one_gap(spark, tmp_path: Path) -> None:
    """Epoch 6 is elected at 30 s and never ready; epoch 7 is elected at 60 s, ready at 62 s.
    One gap from the crash estimate before the first of those elections (30 - 18 = 12 s, after
    the last record at 2 s) to 62 s: 50 s, two elections."""
    log = Log(controller_id=1, epoch=5)
    log.controller(0, "elected")
    log.controller(1, "ready", "elected")
    log.create(2, "t", 0, [1, 2])
    log.controller_id, log.epoch, log.seq = 2, 6, 0
    log.controller(30, "elected")
    log.new_controller(60, controller_id=3, ready_after=2.0)
    a = analyze_lines(spark, tmp_path, log.lines)
    assert _gaps(a) == [(5, 7, 50.0, "crashed", 2)]


def test_a_quiet_controller_in_charge_during_the_period_is_one_of_its_tenures(
    spark, tmp_path: Path
) -> None:
    # Epoch 5 logged nothing after 2 s and was in charge until epoch 6's election at 5000 s;
    # epoch 6 logged nothing after 5001 s. Both ran part of 3000 -> 9000 s; only epoch 6 runs
    # 6000 -> 9000 s. Tenures used to count only while a controller logged: neither.
    log = Log(controller_id=1, epoch=5)
    log.controller(0, "elected")
    log.controller(1, "ready", "elected")
    log.create(2, "t", 0, [1, 2])
    log.new_controller(5000, controller_id=2, ready_after=1.0)
    for start, epochs in ((3000, [5, 6]), (6000, [6])):
        (tmp_path / str(start)).mkdir()
        a = analyze_lines(spark, tmp_path / str(start), log.lines, start=at(start), end=at(9000))
        got = a["controller_tenures"].orderBy("controller_epoch").collect()
        assert [t.controller_epoch for t in got] == epochs


def test_a_failover_across_the_period_start_is_clipped_not_lost(spark, tmp_path: Path) -> None:
    log = Log(controller_id=1, epoch=5)
    log.controller(0, "elected")
    log.controller(1, "ready", "elected")
    log.create(2, "t", 0, [1, 2])
    log.new_controller(30, controller_id=2, ready_after=1.0)
    log.controller(100, "ready", "ready")
    from pyspark.testing import assertDataFrameEqual

    a = analyze_lines(spark, tmp_path, log.lines, start=at(20), end=at(100))
    # The gap is 12 -> 31 s; inside the period 20 -> 31 s.
    assertDataFrameEqual(
        a["controller_gaps"].select("gap_start", "gap_end", "gap_s", "started_before_period"),
        spark.createDataFrame(
            [(at(20), at(31), 11.0, True)],
            "gap_start timestamp, gap_end timestamp, gap_s double, "
            "started_before_period boolean",
        ),
    )


def test_a_gap_open_at_the_period_end_is_kept_when_its_election_comes_after_it(
    spark, tmp_path: Path
) -> None:
    """Through the job, whose --to drops later partition records before the pass: epoch 5
    resigns at 1500 s and epoch 6 is elected at 2100 s, after --to (2000 s). The job had
    dropped that election with the rest, so the gap (1500 -> 2000 s in the period) vanished
    from controller_gaps, and the next period's run showed only its own part of it."""
    from controller.analytics.job import JobConfig, analyze

    log = Log(controller_id=1, epoch=5)
    log.controller(0, "elected")
    log.controller(1, "ready", "elected")
    log.create(2, "t", 0, [1, 2])
    log.controller(1500, "resigned", "ready")
    log.new_controller(2100, controller_id=2, ready_after=5.0)
    # Bad lines before --from and after --to: all reported (those after --to were dropped
    # with the partition records there, uncounted).
    bad = [log.lines[2].replace('"to_state": "NewPartition"', '"to_state": "Sideways"')]
    bad += [bad[0].replace("T10:00:02", "T10:50:00"), "not json"]
    path = tmp_path / "in" / "log.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(log.lines + bad) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    result = analyze(
        spark, JobConfig(inputs=[str(path)], output=str(out), start=at(1000), end=at(2000))
    )
    from pyspark.testing import assertDataFrameEqual

    # The successor is ready only after --to: never ready within the period.
    assertDataFrameEqual(
        spark.read.parquet(str(out / "controller_gaps")).select(
            "gap_start", "gap_end", "gap_s", "cause", "never_ready"
        ),
        spark.createDataFrame(
            [(at(1500), at(2000), 500.0, "resigned", True)],
            "gap_start timestamp, gap_end timestamp, gap_s double, cause string, "
            "never_ready boolean",
        ),
    )
    assert result.bad == 3
    assert spark.read.parquet(str(out / "bad_records")).count() == 3


def test_a_newest_controller_never_ready_leaves_a_gap_to_the_period_end(
    spark, tmp_path: Path
) -> None:
    """Epoch 5 works until its last record at 2 s; epoch 6 is elected at 100 s and never
    logs 'ready', though its records run to 1000 s. The gap runs from the crash estimate
    (100 - 18 = 82 s) to the end of the data, 1000 s: it is still open (918 s, not 18 s)."""
    log = Log(controller_id=1, epoch=5)
    log.controller(0, "elected")
    log.controller(1, "ready", "elected")
    log.create(2, "t", 0, [1, 2])
    log.controller_id, log.epoch, log.seq = 2, 6, 0
    log.controller(100, "elected")
    log.create(1000, "u", 0, [1, 2])
    a = analyze_lines(spark, tmp_path, log.lines)
    assert _gaps(a) == [(5, 6, 918.0, "crashed", 1)]
    from pyspark.testing import assertDataFrameEqual

    assertDataFrameEqual(
        a["controller_gaps"].select("gap_end", "never_ready"),
        spark.createDataFrame([(at(1000), True)], "gap_end timestamp, never_ready boolean"),
    )


def test_a_log_starting_mid_tenure_keeps_its_first_failover(spark, tmp_path: Path) -> None:
    """The log's first lines are epoch 5's partition records: its 'elected' and 'ready' were
    rotated away. Epoch 5 goes silent after 2 s; epoch 6 is elected at 100 s, ready at 105 s:
    one gap, 82 -> 105 s."""
    log = Log(controller_id=1, epoch=5)
    log.create(0, "t", 0, [1, 2])
    log.online(2, "t", 0, leader=2, isr=[2, 1], frm="OnlinePartition", election=None,
               event="AlterPartitionReceived")  # fmt: skip
    log.new_controller(100, controller_id=2, ready_after=5.0)
    log.create(200, "u", 0, [1, 2])
    a = analyze_lines(spark, tmp_path, log.lines)
    assert _gaps(a) == [(5, 6, 23.0, "crashed", 1)]


def test_the_report_weights_hours_by_their_span_and_lists_the_worst_flappers_first(
    spark, tmp_path: Path
) -> None:
    from controller.analytics.report import gather

    # Cluster "a": t-0 led by broker 1 for 30 s of a 3630 s period, then by broker 2
    # (a preferred election). Hour 0 spans 3600 s, hour 1 only 30 s.
    a_log = Log(cluster="a")
    a_log.create(0, "t", 0, [2, 1])
    a_log.online(0.5, "t", 0, leader=1, isr=[1, 2], frm="OnlinePartition",
                 election="controlled_shutdown", event="ControlledShutdown")  # fmt: skip
    a_log.online(30.5, "t", 0, leader=2, isr=[2, 1], frm="OnlinePartition",
                 election="preferred", event="ReplicaLeaderElection")  # fmt: skip
    a_log.create(3630, "u", 0, [2, 1])
    # Cluster "b": its t-0 flaps (ISR shrinks) more often than anything in "a".
    b_log = Log(cluster="b")
    b_log.create(0, "t", 0, [1, 2])
    for k in range(6):
        b_log.online(10 + 10 * k, "t", 0, leader=1, isr=[1] if k % 2 == 0 else [1, 2],
                     frm="OnlinePartition", election=None,
                     event="AlterPartitionReceived")  # fmt: skip
    result = analyze_lines(spark, tmp_path, a_log.lines + b_log.lines)
    facts = gather(result.datasets, [])
    brokers = {r["broker"]: r for r in facts["broker_leaders"]["a"]}
    # Broker 1 led t-0 for 30 s of the period's 3630 (u-0 is led by 2 from 3630 s, a point).
    assert round(brokers[1]["avg_leaders"], 4) == round(30 / 3630, 4)
    assert facts["flapping"][0]["cluster"] == "b"


def test_a_ts_out_of_range_is_a_bad_record_not_a_crash(spark, tmp_path: Path) -> None:
    """A number in ts is read as epoch seconds: milliseconds land past year 9999 (the job died
    with an OverflowError), 12345 in 1970 (the period, and a directory per day, from 1970)."""
    from controller.analytics.job import JobConfig, analyze

    log = Log()
    log.create(0, "t", 0, [1])
    good = list(log.lines)
    stamp = '"ts": "2026-11-22T10:00:00.000000Z"'
    bad = [
        good[0].replace(stamp, '"ts": 1763805600000'),
        good[0].replace(stamp, '"ts": 12345'),
        good[0].replace(stamp, '"ts": "+10000-01-01T00:00:00Z"'),
    ]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "log.jsonl").write_text("\n".join([*good, *bad]) + "\n")
    result = analyze(
        spark, JobConfig(inputs=[str(tmp_path / "in")], output=str(tmp_path / "out"))
    )
    assert result.bad == 3
    bad_records = spark.read.parquet(str(tmp_path / "out" / "bad_records"))
    reasons = [r.reason for r in bad_records.collect()]
    assert sorted(reasons)[0].startswith("ts out of range") and len(set(reasons)) == 1
    (stats,) = result.clusters
    assert stats.period_start is not None and stats.period_start.year == 2026
