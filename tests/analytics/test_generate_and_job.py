"""The synthetic log generator, the whole job end to end, and the CLI."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from controller.analytics.generate import Noise, generate

ROOT = Path(__file__).resolve().parents[2]


def _records(path: Path) -> tuple[list[dict], int]:
    good, bad = [], 0
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(record.get("seq"), int):
            good.append(record)
        else:
            bad += 1
    return good, bad


def test_generator_writes_a_realistic_log(tmp_path: Path) -> None:
    out = tmp_path / "log.jsonl"
    result = generate(40_000, out, clusters=2, seed=5)
    good, bad = _records(out)
    assert result.lines == 40_000 == len(good) + bad
    assert {r["cluster"] for r in good} == {"prod-eu-1", "prod-us-1"}
    kinds = Counter(r["kind"] for r in good)
    assert kinds["partition"] and kinds["replica"] and kinds["controller"]
    elections = Counter(r["election"] for r in good if r["election"])
    assert {"offline", "controlled_shutdown", "preferred"} <= set(elections)
    states = Counter(r["to_state"] for r in good if r["kind"] == "partition")
    assert states["OfflinePartition"] > 0 and states["NonExistentPartition"] >= 0
    events = {r["event"] for r in good}
    assert {"BrokerChange", "ControlledShutdown", "IsrChangeNotification",
            "TopicChange"} <= events
    for r in good:
        if r["kind"] == "partition" and r["to_state"] == "OnlinePartition" \
                and r["result"] == "ok":
            assert r["leader"] >= 0  # an online partition always has a leader
    # Per controller process and epoch, seq only grows (before the injected disorder).
    assert len({(r["cluster"], r["controller_id"], r["controller_epoch"], r["seq"])
                for r in good}) >= len(good) - 200


def test_generator_is_deterministic_and_noise_is_optional(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    generate(5_000, a, seed=9, noise=Noise.none())
    generate(5_000, b, seed=9, noise=Noise.none())
    assert a.read_bytes() == b.read_bytes()
    good, bad = _records(a)
    assert bad == 0
    keys = [(r["cluster"], r["controller_epoch"], r["seq"]) for r in good]
    assert len(set(keys)) == len(keys)  # no duplicates without noise


def test_generator_small_logs_span_about_the_days_asked_for(tmp_path: Path) -> None:
    """A small log's first gaps had a mean of the whole span: one long draw made a 30-day log
    of 2,000 lines span 87 days. Now no cluster runs past the end (an incident's own
    aftermath aside), and none is squeezed into its first days either."""
    from datetime import datetime

    from controller.analytics.generate import DEFAULT_START

    for seed in (1, 2, 3):
        out = tmp_path / f"log-{seed}.jsonl"
        generate(2_000, out, clusters=3, seed=seed, days=30, noise=Noise.none())
        spans: dict[str, list[float]] = {}
        for r in _records(out)[0]:
            at = datetime.fromisoformat(r["ts"].replace("Z", "+00:00"))
            spans.setdefault(r["cluster"], []).append((at - DEFAULT_START).total_seconds())
        for cluster, seconds in spans.items():
            days = (min(seconds) / 86400, max(seconds) / 86400)
            assert days[0] < 1 and 10 < days[1] <= 31, (seed, cluster, days)
    with pytest.raises(ValueError, match="days must be positive"):
        generate(10, tmp_path / "none.jsonl", days=0)


def test_generator_directory_mode_without_cluster_field(tmp_path: Path) -> None:
    out = tmp_path / "logs"
    out.mkdir()
    result = generate(3_000, out, clusters=3, write_cluster=False, noise=Noise.none())
    assert sorted(p.name for p in result.paths) == [
        "prod-eu-1.jsonl", "prod-us-1.jsonl", "staging-1.jsonl"]
    good, _ = _records(result.paths[0])
    assert "cluster" not in good[0]


@pytest.mark.spark
def test_job_end_to_end(spark, tmp_path: Path) -> None:
    from controller.analytics.job import JobConfig, analyze
    from controller.analytics.outputs import CATALOGUE

    log = tmp_path / "in" / "log.jsonl"
    generate(20_000, log, clusters=2, seed=3, days=3)
    out = tmp_path / "out"
    result = analyze(spark, JobConfig(inputs=[str(tmp_path / "in")], output=str(out)))
    for name, by_date, _ in CATALOGUE:
        assert (out / name).is_dir(), name
        if by_date:
            df = spark.read.parquet(str(out / name))
            assert "dt" in df.columns, name
    windows = spark.read.parquet(str(out / "unavailability_windows"))
    assert windows.count() > 0
    assert any(p.name.startswith("dt=") for p in (out / "unavailability_windows").iterdir())
    assert spark.read.parquet(str(out / "bad_records")).count() == result.bad
    # The report's facts come from the written datasets.
    unclean = spark.read.parquet(str(out / "unclean_elections")).count()
    assert result.facts["unclean_total"] == unclean
    assert sum(len(v) for v in result.facts["availability_hourly"].values()) == (
        spark.read.parquet(str(out / "availability_hourly"))
        .where("availability_pct IS NOT NULL").count()
    )
    html = (out / "report.html").read_text()
    assert html.count("<svg") >= 4 and "Partition availability" in html
    assert "prod-eu-1" in result.summary and "availability" in result.summary
    summary = json.loads((out / "summary.json").read_text())
    assert sum(c["lines"] for c in summary["clusters"]) == 20_000
    with_records = [c for c in result.clusters if c.records > 0]
    assert sorted(c.cluster for c in with_records) == ["prod-eu-1", "prod-us-1"]
    # A torn line that lost its "cluster" is a bad record of the cluster its file names.
    assert all(c.records == 0 and c.bad == c.lines for c in result.clusters if c.records == 0)


def test_periods_are_a_relation_held_by_the_jvm(spark) -> None:
    """Python rows through createDataFrame would be a Python RDD: every output broadcasting
    the periods would run Python workers, which executors on a cluster may not have."""
    from datetime import datetime

    from controller.analytics.job import _local_periods

    start, end = datetime(2026, 3, 1, 4, 5, 6, 7), datetime(2026, 3, 2)
    rows = [("prod's \"eu\" `1`", start, end), ("b", start, start)]
    df = _local_periods(spark, rows)
    plan = df._jdf.queryExecution().optimizedPlan()
    assert plan.getClass().getSimpleName() == "LocalRelation", plan.toString()
    assert sorted(tuple(r) for r in df.collect()) == sorted(rows)
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields] == [
        ("cluster", "string", True), ("period_start", "timestamp", True),
        ("period_end", "timestamp", True)]
    empty = _local_periods(spark, [])
    assert empty.schema == df.schema and empty.count() == 0


def test_cli_help_does_not_need_pyspark() -> None:
    code = (
        "import sys; from controller.cli.main import build_parser; "
        "build_parser().parse_args(['analyze', 'run', '--input', 'x', '--output', 'y']); "
        "print('pyspark' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_cli_generate_and_package(tmp_path: Path) -> None:
    from controller.analytics.cli import main

    assert main(["generate", "--records", "500", "--out", str(tmp_path / "g.jsonl")]) == 0
    assert len((tmp_path / "g.jsonl").read_text().splitlines()) == 500
    assert main(["package", "--out", str(tmp_path / "dist")]) == 0
    with zipfile.ZipFile(tmp_path / "dist" / "zk_controller_analytics.zip") as zf:
        names = set(zf.namelist())
    assert {"controller/__init__.py", "controller/analytics/job.py",
            "controller/analytics/transforms/timeline.py"} <= names
    assert not any(n.startswith("controller/cli/") for n in names)
    entry = (tmp_path / "dist" / "analyze_main.py").read_text()
    assert "controller.analytics.cli" in entry


def test_cli_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    from controller.analytics.cli import main

    with pytest.raises(SystemExit):
        main(["run", "--input", "x", "--output", "y", "--from", "yesterday"])
    assert main(["run", "--input", "x", "--output", "y", "--from", "2026-02-01",
                 "--to", "2026-01-01"]) == 2
    assert main(["generate", "--records", "10", "--out", "unused.jsonl", "--days", "0"]) == 2
    assert "--days must be positive" in capsys.readouterr().err


def test_missing_local_inputs_are_found_before_spark(tmp_path: Path) -> None:
    from controller.analytics.cli import missing_local_inputs

    log = tmp_path / "logs" / "a.jsonl"
    log.parent.mkdir()
    log.write_text("{}\n")
    present = [str(log), str(log.parent), f"{tmp_path}/logs/*.jsonl", f"file://{log}",
               f"file:{log}", "hdfs://nn:8020/logs/x.jsonl", f"{tmp_path}/logs/{{a,b}}.jsonl"]
    assert missing_local_inputs(present) == []
    absent = [str(tmp_path / "nope.jsonl"), f"{tmp_path}/logs/*.gz", f"file://{tmp_path}/nope"]
    assert missing_local_inputs([*present, *absent]) == absent


def test_cli_run_names_a_missing_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from controller.analytics.cli import main

    missing = str(tmp_path / "typo.jsonl")
    assert main(["run", "--input", missing, "--output", str(tmp_path / "out")]) == 2
    assert f"error: no such input: {missing}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_output_inside_an_input_is_refused_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Directories are read with everything under them: an output there would be read back as
    logs by the next run (bad records growing run by run, a "cluster" per output file)."""
    from controller.analytics.cli import main, output_inside_input

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text("{}\n")
    assert main(["run", "--input", str(logs), "--output", str(logs / "analysis")]) == 2
    assert f"--output {logs / 'analysis'} is inside the input {logs}" in capsys.readouterr().err
    assert not (logs / "analysis").exists()
    inside = [([str(logs)], str(logs)), ([f"{logs}/"], f"{logs}/out/x"),
              ([f"{logs}/*"], f"{logs}/out"), ([f"file://{logs}"], f"{logs}/out"),
              (["hdfs://nn/logs"], "hdfs://nn/logs/out"), ([f"{logs}/a.jsonl"], f"{logs}/a.jsonl")]
    outside = [([f"{logs}/*.jsonl"], f"{logs}/out"), ([f"{logs}/a.jsonl"], f"{logs}/out"),
               ([str(logs)], f"{logs}2"), (["hdfs://nn/logs"], f"{logs}/out"),
               ([f"{logs}/*/x.jsonl"], str(logs))]  # fmt: skip
    assert [output_inside_input(i, o) for i, o in inside] == [i[0] for i, _ in inside]
    assert [output_inside_input(i, o) for i, o in outside] == [None] * len(outside)


def test_a_file_spark_would_skip_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from controller.analytics.cli import hidden_local_files, main

    (tmp_path / "_part.jsonl").write_text("{}\n")
    (tmp_path / ".log").write_text("{}\n")
    (tmp_path / "ok.jsonl").write_text("{}\n")
    (tmp_path / "_dir").mkdir()
    given = [str(tmp_path / "_part.jsonl"), f"file://{tmp_path}/.log", str(tmp_path / "ok.jsonl"),
             str(tmp_path / "_dir"), f"{tmp_path}/_*.jsonl", "hdfs://nn/_x.jsonl"]  # fmt: skip
    assert hidden_local_files(given) == given[:2]
    assert main(["run", "--input", given[0], "--output", str(tmp_path / "out")]) == 2
    assert "Spark skips files whose names start with '_' or '.'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_generate_to_a_pipe_whose_reader_goes_away(tmp_path: Path) -> None:
    """``analyze generate --out /dev/stdout | head``: no traceback, the shell's 141, and no
    per-cluster parts left behind (they go to the temp directory, not next to /dev/stdout)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller", "analyze", "generate", "--records", "300000",
         "--out", "/dev/stdout"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.read(200)
    proc.stdout.close()  # the reader goes away
    stderr = proc.stderr.read().decode()
    assert proc.wait(120) == 141, stderr
    assert first.startswith(b'{"ts":')
    assert "Traceback" not in stderr, stderr
    assert list(tmp_path.iterdir()) == []


def test_one_period_bound_alone_and_utc_whatever_the_local_time_zone(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --from or --to alone took the other end from the log, as naive local-time datetimes:
    # comparing them with the (UTC) bound crashed the job, and a driver outside UTC printed
    # local times as UTC.
    import time as time_module
    from datetime import UTC, datetime

    from controller.analytics.job import JobConfig, analyze

    log = tmp_path / "in" / "log.jsonl"
    lines = [
        {"ts": "2026-11-22T10:00:00.000000Z", "to_state": "NewPartition"},
        {"ts": "2026-11-22T10:00:01.000000Z", "to_state": "OnlinePartition",
         "from_state": "NewPartition", "leader": 1},
        {"ts": "2026-11-22T12:30:00.000000Z", "to_state": "OnlinePartition",
         "from_state": "OnlinePartition", "leader": 1, "isr": [1]},
    ]  # fmt: skip
    base = {"seq": 0, "controller_id": 0, "controller_epoch": 1, "kind": "partition",
            "topic": "t", "partition": 0, "replica": None, "from_state": None,
            "leader": -1, "leader_epoch": 0, "isr": [1, 2], "election": None,
            "event": "TopicChange", "result": "ok", "error": None}  # fmt: skip
    log.parent.mkdir(parents=True)
    log.write_text("".join(json.dumps({**base, "seq": i, **r}) + "\n" for i, r in enumerate(lines)))
    monkeypatch.setenv("TZ", "America/New_York")
    time_module.tzset()
    try:
        start = datetime(2026, 11, 22, 10, 30, tzinfo=UTC)
        result = analyze(
            spark, JobConfig(inputs=[str(log)], output=str(tmp_path / "a"), start=start)
        )
        [stats] = result.clusters
        assert stats.period_start == start
        assert stats.period_end == datetime(2026, 11, 22, 12, 30, tzinfo=UTC)
        end = datetime(2026, 11, 22, 11, 0, tzinfo=UTC)
        result = analyze(spark, JobConfig(inputs=[str(log)], output=str(tmp_path / "b"), end=end))
        [stats] = result.clusters
        assert (stats.period_start, stats.period_end) == (
            datetime(2026, 11, 22, 10, 0, tzinfo=UTC), end
        )
        assert "2026-11-22 10:00:00" in (tmp_path / "b" / "report.html").read_text()
        # No unclean election: the dataset is still readable without being told its schema
        # (a partitioned write of no rows leaves no file).
        empty = spark.read.parquet(str(tmp_path / "b" / "unclean_elections"))
        assert empty.count() == 0 and "dt" in empty.columns and "topic" in empty.columns
    finally:
        monkeypatch.undo()
        time_module.tzset()


def test_an_input_scheme_without_its_connector_is_one_clear_error(tmp_path: Path) -> None:
    # gs:// without Google's connector: the JVM's ClassNotFoundException in one line and a
    # hint, exit 2; not a Python and a Java traceback.
    done = subprocess.run(
        [sys.executable, "-m", "controller", "analyze", "run", "--input", "gs://bucket/logs/",
         "--output", str(tmp_path / "out"), "--master", "local[1]"],
        capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "error: java.lang.ClassNotFoundException" in done.stderr
    assert "hint: an input URI's scheme needs its Hadoop connector" in done.stderr
    assert "Traceback" not in done.stderr


def test_generator_a_crashed_controller_records_nothing_its_successor_finds_the_rest(
    tmp_path: Path,
) -> None:
    """A controller that crashes records nothing more. A broker that dies before its session
    has expired is found dead by the successor (its led partitions NonExistent -> Offline,
    then elected, all under the new epoch); what needs a controller waits for it."""
    import heapq
    import io
    import random

    from controller.analytics.generate.sim import SECOND, ClusterSim, ClusterSpec
    from controller.analytics.generate.writer import RecordWriter

    out = io.StringIO()
    rng = random.Random(4)
    writer = RecordWriter(out, "c", 1_000_000, rng, Noise.none())
    start = 1_700_000_000 * SECOND
    spec = ClusterSpec("c", brokers=5, partitions=60, min_failover_gap_h=0.0)
    sim = ClusterSim(spec, writer, rng, start, start * 2)
    sim._create_initial_topics()
    old_controller, old_epoch = sim.controller, sim.epoch
    victim = 3
    led = {(p.topic, p.index) for p in sim.hosted[victim] if p.leader == victim}
    assert led
    sim._crash_controller()
    sim._later(1 * SECOND, sim._fail, victim)
    sim._later(2 * SECOND, sim._create_topic)  # a topic created in the gap waits
    while sim.queue:
        t, _, fn, args = heapq.heappop(sim.queue)
        sim._handle(t, fn, *args)
    writer.close()
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    first_new = next(i for i, r in enumerate(records) if r["controller_epoch"] != old_epoch)
    before, after = records[:first_new], records[first_new:]
    assert {r["event"] for r in before} == {"TopicChange"}  # only the topics' creation
    assert after[0]["to_state"] == "elected" and after[0]["event"] == "Reelect"
    assert all(r["controller_epoch"] == old_epoch + 1 for r in after)
    assert all(r["controller_id"] != old_controller for r in after)
    assert not any(r["event"] == "BrokerChange" for r in after)
    ready = next(i for i, r in enumerate(after) if r["to_state"] == "ready")
    failover, later = after[: ready + 1], after[ready + 1 :]
    parts = [r for r in failover if r["kind"] == "partition"]
    found = {(r["topic"], r["partition"]) for r in parts if r["to_state"] == "OfflinePartition"}
    assert found == led
    elected = {
        (r["topic"], r["partition"]): r for r in parts
        if r["to_state"] == "OnlinePartition" and r["result"] == "ok"
    }
    assert elected and set(elected) <= led
    for r in elected.values():
        assert r["event"] == "Reelect" and r["leader"] != victim
        assert victim not in r["isr"]
    assert later and {r["event"] for r in later} == {"TopicChange"}
    assert failover[-1]["ts"] <= later[0]["ts"]


def test_naive_job_bounds_are_utc() -> None:
    # A library caller's naive --from/--to: the fact pass read it as UTC, Spark's literal as
    # the driver's local time.
    from datetime import UTC, datetime

    from controller.analytics.job import JobConfig

    cfg = JobConfig(["in"], "out", start=datetime(2026, 11, 1, 12), end=None)
    assert cfg.start == datetime(2026, 11, 1, 12, tzinfo=UTC) and cfg.end is None


def test_an_input_without_lines_writes_nothing(spark, tmp_path: Path) -> None:
    """An empty directory (a cron job pointed at the wrong one) used to succeed, replacing an
    earlier run's results with empty ones."""
    from controller.analytics.job import JobConfig, NoRecordsError, analyze

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "empty.jsonl").write_text("")
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text('{"earlier": true}')
    with pytest.raises(NoRecordsError, match="no lines in the input"):
        analyze(spark, JobConfig(inputs=[str(tmp_path / "in")], output=str(out)))
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]
    assert (out / "summary.json").read_text() == '{"earlier": true}'
    # The output directory the run made to check it can write there is gone again.
    fresh = tmp_path / "fresh" / "out"
    with pytest.raises(NoRecordsError):
        analyze(spark, JobConfig(inputs=[str(tmp_path / "in")], output=str(fresh)))
    assert not fresh.exists()


def test_an_output_that_cannot_be_written_is_found_before_the_input_is_read(
    spark, tmp_path: Path
) -> None:
    """It was found by the first write, after the whole parse (~100 s on the benchmark).
    The input here does not exist: reading it would fail with Spark's AnalysisException."""
    from controller.analytics.errors import OutputNotWritableError
    from controller.analytics.job import JobConfig, analyze

    taken = tmp_path / "a-file"
    taken.write_text("")
    for output, reason in ((taken / "out", "ParentNotDirectoryException"),
                           (taken, "not a directory")):  # fmt: skip
        cfg = JobConfig(inputs=[str(tmp_path / "no-such-log")], output=str(output))
        with pytest.raises(OutputNotWritableError, match=f"cannot write the output .*{reason}"):
            analyze(spark, cfg)
    assert taken.read_text() == ""
    # A run that fails after the check leaves no directory it made, and no probe in one that
    # was there.
    out = tmp_path / "out"
    with pytest.raises(Exception, match="PATH_NOT_FOUND"):
        analyze(spark, JobConfig(inputs=[str(tmp_path / "no-such-log")], output=str(out)))
    assert not out.exists()
    out.mkdir()
    with pytest.raises(Exception, match="PATH_NOT_FOUND"):
        analyze(spark, JobConfig(inputs=[str(tmp_path / "no-such-log")], output=str(out)))
    assert out.is_dir() and list(out.iterdir()) == []


def test_output_files_on_a_local_filesystem_configured_raw(spark, tmp_path: Path) -> None:
    """spark.hadoop.fs.file.impl=RawLocalFileSystem (no .crc files) is a common setting; the
    output check and report writing asked it for the raw filesystem under it, and failed."""
    from controller.analytics.job import check_output, write_text

    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
    conf.set("fs.file.impl.disable.cache", "true")
    try:
        assert check_output(spark, str(tmp_path / "out")) is True
        write_text(spark, str(tmp_path / "out" / "report.html"), "<html></html>")
    finally:
        conf.unset("fs.file.impl")
        conf.unset("fs.file.impl.disable.cache")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["report.html"]
    # The default (checksummed) local filesystem: no .crc file beside them either.
    assert check_output(spark, str(tmp_path / "out")) is False
    write_text(spark, str(tmp_path / "out" / "report.html"), "<html></html>")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["report.html"]


@pytest.mark.parametrize("delay_s", [-1.0, 0.0, 2.0], ids=["starting", "planning", "parsing"])
def test_cli_ctrl_c_during_the_job_is_exit_130_without_tracebacks(
    tmp_path: Path, delay_s: float
) -> None:
    """PySpark's SIGINT handler cancelled the jobs through py4j from inside the py4j call the
    main thread was waiting in; both failures were logged with tracebacks (~50 lines). While
    the plan is built, the interrupt came out as py4j's error from the JVM that had gone."""
    import signal
    import time

    log = tmp_path / "log.jsonl"
    generate(300_000, log, clusters=2, seed=4)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller", "analyze", "run", "--input", str(log),
         "--output", str(out), "--master", "local[2]"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )  # fmt: skip
    try:
        if delay_s < 0:  # while the JVM starts and the session is built
            time.sleep(1.5)
        else:
            deadline = time.monotonic() + 120
            while not out.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)  # the output directory is made just before the input is read
            time.sleep(delay_s)  # the main thread waits in one py4j call or another
        assert proc.poll() is None, proc.communicate()
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "py4j" not in err, err
    assert len(err.splitlines()) <= 6, err
    # Not a finished run's output. (Whether the directory it had made is removed again is
    # best effort here: py4j's calls right after an interrupted one can fail.)
    assert not (out / "summary.json").exists()


def test_cli_an_unwritable_output_is_one_line_and_spark_starts_quietly(tmp_path: Path) -> None:
    """Spark's console log for a JVM the command starts: no start-up chatter (hostname,
    native library, log profile) and no Java stack traces around the command's own error."""
    log = tmp_path / "log.jsonl"
    generate(200, log, clusters=1, seed=3, days=1)
    taken = tmp_path / "a-file"
    taken.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "ZK_CONTROLLER_SPARK_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-m", "controller", "analyze", "run", "--input", str(log),
         "--output", str(taken / "out"), "--master", "local[1]"],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    assert lines[-1] == (
        f"error: cannot write the output {taken}/out: org.apache.hadoop.fs."
        f"ParentNotDirectoryException: Parent path is not a directory: {taken}: nothing analysed"
    ), done.stderr
    # Before it, at most the JVM's own notices (incubator modules, JAVA_TOOL_OPTIONS, ...).
    assert all(line.startswith(("WARNING:", "Picked up")) for line in lines[:-1]), done.stderr


def test_an_earlier_runs_report_does_not_outlive_a_new_run(spark, tmp_path: Path) -> None:
    """summary.json marks a finished run; the report and summary of an earlier run into the
    same --output must not sit beside this run's datasets (--no-report left them)."""
    from controller.analytics.job import JobConfig, analyze

    log = tmp_path / "in" / "log.jsonl"
    generate(300, log, clusters=1, seed=5, days=1)
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("<html>an earlier run</html>")
    (out / "summary.json").write_text('{"earlier": true}')
    analyze(spark, JobConfig(inputs=[str(log)], output=str(out), report=False))
    assert not (out / "report.html").exists()
    assert "clusters" in json.loads((out / "summary.json").read_text())


def test_cli_write_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from controller.analytics.cli import main, missing_local_inputs, unreachable_spark_master

    taken = tmp_path / "a-file"
    taken.write_text("")
    assert main(["package", "--out", str(taken)]) == 1
    assert main(["generate", "--records", "10", "--out", f"{taken}/x.jsonl"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: cannot write {taken}: File exists",
                   f"error: cannot write {taken}/x.jsonl: File exists"], err  # fmt: skip
    # A standalone master nobody listens on: said at once, with no JVM started.
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    log = tmp_path / "log.jsonl"
    log.write_text("{}\n")
    master = f"spark://127.0.0.1:{port},nosuchhost.invalid"
    assert main(["run", "--input", str(log), "--output", str(tmp_path / "o"),
                 "--master", master]) == 1  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"error: no Spark master reachable at {master} (127.0.0.1:{port}: Connection refused; "
        "nosuchhost.invalid: "  # the resolver's words: "Name or service not known", ...
    ), err
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        up = f"127.0.0.1:{listening.getsockname()[1]}"
        assert unreachable_spark_master(f"spark://127.0.0.1:{port},{up}") is None
    assert unreachable_spark_master("local[2]") is None
    assert unreachable_spark_master("yarn") is None
    # An unset shell variable (--input "$LOGS") is not the current directory.
    assert missing_local_inputs(["", " "]) == ["''", "' '"]
