from __future__ import annotations

import io
import json
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.core.model import PartitionState, ReplicaState, TopicPartition
from controller.state_change_log import (
    FIELDS,
    NullStateChangeLog,
    StateChangeLog,
    StateChangeRecorder,
)

TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
TP = TopicPartition("orders", 3)


def records(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def check_schema(rec: dict[str, Any]) -> None:
    """The Spark pipeline's contract: every key, in order, with its type."""
    assert tuple(rec) == FIELDS
    assert TS.fullmatch(rec["ts"])
    assert type(rec["seq"]) is int
    assert type(rec["controller_id"]) is int
    assert rec["controller_epoch"] is None or type(rec["controller_epoch"]) is int
    assert rec["kind"] in ("partition", "replica", "controller")
    assert rec["result"] in ("ok", "invalid", "failed")
    assert rec["error"] is None or isinstance(rec["error"], str)
    assert rec["event"] is None or isinstance(rec["event"], str)
    assert rec["election"] in (
        None, "offline", "offline_unclean", "reassign", "preferred", "controlled_shutdown",
    )  # fmt: skip
    for key in ("leader", "leader_epoch"):
        assert rec[key] is None or type(rec[key]) is int
    assert rec["isr"] is None or all(type(r) is int for r in rec["isr"])
    if rec["kind"] == "controller":
        assert rec["to_state"] in ("elected", "ready", "resigned")
        assert rec["topic"] is rec["partition"] is rec["replica"] is None
        assert rec["from_state"] is None
    else:
        assert isinstance(rec["topic"], str) and type(rec["partition"]) is int
        assert isinstance(rec["to_state"], str)
        assert (type(rec["replica"]) is int) == (rec["kind"] == "replica")


def test_every_line_follows_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "logs" / "state-change.log"  # parent created on open
    with StateChangeLog(path, controller_id=7) as log:
        log.controller("elected")  # before the epoch is known
        log.set_epoch(12)
        log.set_event("BrokerChange")
        log.partition(TP, PartitionState.OnlinePartition, PartitionState.OfflinePartition)
        log.partition(
            TP, "OfflinePartition", "OnlinePartition",
            leader=2, leader_epoch=5, isr=[2, 1], election="offline_unclean",
        )  # fmt: skip
        log.replica(TP, 4, ReplicaState.OnlineReplica, ReplicaState.OfflineReplica,
                    leader=2, leader_epoch=6, isr=(2,))  # fmt: skip
        log.set_event(None)
        log.partition(TopicPartition("t", 0), PartitionState.NewPartition,
                      PartitionState.OnlinePartition, result="failed",
                      error='ZooKeeper said "no"\nretrying')  # fmt: skip
        log.controller("resigned")

    recs = records(path.read_text())
    assert len(recs) == 6
    for rec in recs:
        check_schema(rec)
    seqs = [r["seq"] for r in recs]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)

    elected, offline, online, replica, failed, resigned = recs
    assert elected["controller_epoch"] is None and elected["to_state"] == "elected"
    assert offline == {**offline, "controller_id": 7, "controller_epoch": 12, "kind": "partition",
                       "topic": "orders", "partition": 3, "replica": None,
                       "from_state": "OnlinePartition", "to_state": "OfflinePartition",
                       "leader": None, "isr": None, "election": None, "event": "BrokerChange",
                       "result": "ok", "error": None}  # fmt: skip
    assert (online["leader"], online["leader_epoch"], online["isr"]) == (2, 5, [2, 1])
    assert online["election"] == "offline_unclean"
    assert replica["kind"] == "replica" and replica["replica"] == 4
    assert (replica["from_state"], replica["to_state"]) == ("OnlineReplica", "OfflineReplica")
    assert replica["election"] is None
    assert failed["event"] is None and failed["result"] == "failed"
    assert failed["error"] == 'ZooKeeper said "no"\nretrying'
    assert resigned["kind"] == "controller" and resigned["controller_epoch"] == 12


def test_timestamp_is_utc_with_microseconds() -> None:
    instant = datetime(2026, 11, 22, 10, 15, 30, 123456, tzinfo=UTC)
    ns = int(instant.timestamp()) * 1_000_000_000 + 123_456_789
    out = io.StringIO()
    log = StateChangeLog(out, 1, clock_ns=lambda: ns)
    log.partition(TP, None, PartitionState.NewPartition)
    log.flush()
    assert records(out.getvalue())[0]["ts"] == "2026-11-22T10:15:30.123456Z"


def test_topic_names_and_errors_are_escaped() -> None:
    out = io.StringIO()
    log = StateChangeLog(out, 1)
    log.set_event('odd "event"')
    log.partition(TopicPartition('we"ird\\tö', 0), None, "NewPartition", error="\u2603")
    log.flush()
    (rec,) = records(out.getvalue())
    assert rec["topic"] == 'we"ird\\tö'
    assert rec["event"] == 'odd "event"'
    assert rec["error"] == "\u2603"


@pytest.mark.parametrize(
    "bad",
    [
        {"election": "random"},
        {"result": "maybe"},
    ],
)
def test_values_outside_the_contract_are_rejected(bad: dict[str, str]) -> None:
    log = StateChangeLog(io.StringIO(), 1)
    with pytest.raises(ValueError):
        log.partition(TP, None, "NewPartition", **bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        log.controller("promoted")
    with pytest.raises(ValueError):
        log.replica(TP, 1, None, "NewReplica", result="maybe")


def test_lines_are_buffered_until_flush(tmp_path: Path) -> None:
    path = tmp_path / "sc.log"
    log = StateChangeLog(path, 1)
    log.partition(TP, None, "NewPartition")
    assert path.read_text() == ""
    log.flush()
    assert len(records(path.read_text())) == 1
    log.close()


def test_reopen_after_rotation(tmp_path: Path) -> None:
    path = tmp_path / "sc.log"
    log = StateChangeLog(path, 1)
    log.partition(TP, None, "NewPartition")
    log.flush()
    path.rename(tmp_path / "sc.log.1")
    log.partition(TP, "NewPartition", "OnlinePartition")  # buffered, not yet flushed
    reopener = threading.Thread(target=log.reopen)  # SIGHUP handling may run off-thread
    reopener.start()
    reopener.join()
    log.partition(TP, "OnlinePartition", "OfflinePartition")
    log.close()
    rotated = records((tmp_path / "sc.log.1").read_text())
    current = records(path.read_text())
    assert [r["to_state"] for r in rotated] == ["NewPartition"]
    # Lines still in memory at the reopen land in the new file; none is lost.
    assert [r["to_state"] for r in current] == ["OnlinePartition", "OfflinePartition"]


def test_size_based_rotation_keeps_events_whole_and_the_newest_backups(tmp_path: Path) -> None:
    """With state.change.log.max.bytes (no logrotate, e.g. in a container) the file rotates
    at an event boundary: FILE.1 is the newest backup, at most ``backups`` are kept."""
    path = tmp_path / "sc.log"
    log = StateChangeLog(path, 1, max_bytes=1, backups=2)  # every event crosses it
    events = []
    for event in range(8):
        tp = TopicPartition(f"t{event}", 0)
        log.partition(tp, None, "NewPartition")
        log.partition(tp, "NewPartition", "OnlinePartition")
        log.partition(tp, "OnlinePartition", "OfflinePartition")
        log.flush()
        events.append(f"t{event}")
    log.partition(TopicPartition("last", 0), None, "NewPartition")
    log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sc.log", "sc.log.1", "sc.log.2"]
    by_file = {name: records((tmp_path / name).read_text()) for name in ("sc.log.2", "sc.log.1")}
    for lines in by_file.values():
        assert len({r["topic"] for r in lines}) == 1 and len(lines) == 3  # one whole event
    assert [by_file[n][0]["topic"] for n in ("sc.log.2", "sc.log.1")] == events[-2:]
    assert [r["topic"] for r in records(path.read_text())] == ["last"]


def test_rotation_after_lowering_backups_deletes_the_backups_past_the_new_limit(
    tmp_path: Path,
) -> None:
    # Only FILE.N below the limit were shifted: after a restart with fewer backups, the
    # files past it stayed on disk for ever (the setting says the oldest are deleted).
    path = tmp_path / "sc.log"
    for n in range(1, 7):
        (tmp_path / f"sc.log.{n}").write_text(f"backup {n}\n")
    (tmp_path / "sc.log.07").write_text("not a backup\n")
    log = StateChangeLog(path, 1, max_bytes=1, backups=2)
    log.partition(TP, None, "NewPartition")
    log.flush()  # crosses max_bytes: rotated here
    log.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["sc.log", "sc.log.07", "sc.log.1", "sc.log.2"]
    assert records((tmp_path / "sc.log.1").read_text())[0]["to_state"] == "NewPartition"
    assert (tmp_path / "sc.log.2").read_text() == "backup 1\n"


@pytest.mark.timeout(60)
def test_rotation_with_the_largest_backups_setting_moves_only_the_files_there_are(
    tmp_path: Path,
) -> None:
    # It used to stat every possible backup, on the event thread: ~7 hours at this setting.
    (tmp_path / "other.log.1").write_text("not ours\n")
    path = tmp_path / "sc.log"
    log = StateChangeLog(path, 1, max_bytes=1, backups=2**31 - 1)
    for event in range(3):
        log.partition(TopicPartition(f"t{event}", 0), None, "NewPartition")
        log.flush()  # every event crosses max_bytes: rotated here
    log.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["other.log.1", "sc.log", "sc.log.1", "sc.log.2", "sc.log.3"]
    backups = ("sc.log.3", "sc.log.2", "sc.log.1")
    assert [records((tmp_path / n).read_text())[0]["topic"] for n in backups] == [
        "t0", "t1", "t2"]


def test_no_rotation_by_default(tmp_path: Path) -> None:
    path = tmp_path / "sc.log"
    log = StateChangeLog(path, 1)
    for _ in range(50):
        log.partition(TP, None, "NewPartition")
        log.flush()
    log.close()
    assert [p.name for p in tmp_path.iterdir()] == ["sc.log"]
    assert len(records(path.read_text())) == 50


def test_close_is_idempotent_drops_later_lines_and_keeps_borrowed_streams_open() -> None:
    out = io.StringIO()
    log = StateChangeLog(out, 1)
    log.partition(TP, None, "NewPartition")
    log.close()
    log.close()
    log.partition(TP, "NewPartition", "OnlinePartition")
    log.flush()
    assert log.closed and not out.closed
    assert len(records(out.getvalue())) == 1


def test_close_from_another_thread_while_writing(tmp_path: Path) -> None:
    path = tmp_path / "sc.log"
    log = StateChangeLog(path, 1)
    errors: list[BaseException] = []
    started = threading.Event()

    def event_thread() -> None:
        try:
            for i in range(200_000):
                log.partition(TopicPartition("t", i), "OfflinePartition", "OnlinePartition")
                if i % 1000 == 0:
                    started.set()
                    log.flush()
        except BaseException as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    writer = threading.Thread(target=event_thread)
    writer.start()
    started.wait(10)
    log.close()
    writer.join()
    assert errors == []
    recs = records(path.read_text())  # every line complete and valid
    assert recs and [r["partition"] for r in recs] == list(range(len(recs)))
    assert log.write_errors == 0


def test_write_failures_do_not_raise() -> None:
    class FullDisk(io.StringIO):
        def write(self, s: str) -> int:
            raise OSError(28, "No space left on device")

    from controller.metrics import ControllerMetrics

    metrics = ControllerMetrics(controller_id=1)
    log = StateChangeLog(FullDisk(), 1)
    log.on_write_error = metrics.inc_state_change_log_write_errors  # as the daemon wires it
    log.partition(TP, None, "NewPartition")
    log.flush()
    assert log.write_errors == 1
    log.partition(TP, None, "NewPartition")
    log.close()
    assert log.write_errors == 2
    # Visible to Prometheus, not only in the application log.
    name = "kafka_controller_state_change_log_write_errors_total"
    assert metrics.registry.get_sample_value(name) == 2


def test_throughput_smoke_100k_lines(tmp_path: Path) -> None:
    path = tmp_path / "sc.log"
    log = StateChangeLog(path, 1)
    log.set_epoch(3)
    log.set_event("ControllerChange")
    for i in range(100_000):
        log.partition(
            TopicPartition(f"topic-{i % 500}", i // 500), PartitionState.OfflinePartition,
            PartitionState.OnlinePartition, leader=i % 5, leader_epoch=1, isr=(i % 5, 1, 2),
            election="offline",
        )  # fmt: skip
    log.close()
    with path.open() as f:
        lines = f.readlines()
    assert len(lines) == 100_000
    first, last = json.loads(lines[0]), json.loads(lines[-1])
    check_schema(first)
    check_schema(last)
    assert last["seq"] - first["seq"] == 99_999
    assert last["topic"] == "topic-499" and last["partition"] == 199


def test_null_log_satisfies_the_protocol() -> None:
    sinks: list[StateChangeRecorder] = [NullStateChangeLog(), StateChangeLog(io.StringIO(), 1)]
    for sink in sinks:
        sink.set_epoch(1)
        sink.set_event("X")
        sink.partition(TP, None, "NewPartition", leader=1, election="offline")
        sink.replica(TP, 1, None, "NewReplica", isr=[1])
        sink.controller("ready")
        sink.flush()
        sink.reopen()
        sink.close()


def test_bulk_replica_lines_equal_single_lines() -> None:
    """``replicas`` (the state machines' bulk path) writes exactly what ``replica`` would,
    apart from ``ts`` (shared by the rows of one call) and ``seq``."""
    from controller.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch

    info = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, 7, (2, 1)), 4)
    rows = [
        (TP, 1, ReplicaState.OnlineReplica, info),
        (TopicPartition('we"ird\\topic', 0), 2, None, None),
        (TopicPartition("t", 9), 3, ReplicaState.NewReplica, info),
    ]
    single, bulk = io.StringIO(), io.StringIO()
    logs = StateChangeLog(single, 1), StateChangeLog(bulk, 1)
    for log in logs:
        log.set_epoch(5)
        log.set_event("BrokerChange")
    for tp, replica, from_state, leadership in rows:
        lai = leadership.leader_and_isr if leadership else None
        logs[0].replica(
            tp, replica, from_state, ReplicaState.OnlineReplica,
            leader=lai.leader if lai else None, leader_epoch=lai.leader_epoch if lai else None,
            isr=lai.isr if lai else None,
        )  # fmt: skip
    logs[1].replicas(rows, ReplicaState.OnlineReplica)
    for log in logs:
        log.flush()
    expected, got = records(single.getvalue()), records(bulk.getvalue())
    assert len(got) == len(rows)
    assert len({r["ts"] for r in got}) == 1
    assert [r["seq"] for r in got] == sorted(r["seq"] for r in got)
    for rec in got:
        check_schema(rec)
    strip = {"ts", "seq"}
    assert [{k: v for k, v in r.items() if k not in strip} for r in got] == [
        {k: v for k, v in r.items() if k not in strip} for r in expected
    ]
    for rec_a, rec_b in zip(got, expected, strict=True):  # same key order too
        assert list(rec_a) == list(rec_b)


def test_bulk_partition_lines_equal_single_lines() -> None:
    """``partitions`` (the partition state machine's bulk path) writes what ``partition``
    would, apart from ``ts`` (shared by the rows of one call) and ``seq``."""
    from controller.core.model import LeaderAndIsr

    rows = [
        (TP, PartitionState.OfflinePartition, LeaderAndIsr(2, 7, (2, 1)), "offline"),
        (TopicPartition('we"ird', 0), PartitionState.NewPartition, LeaderAndIsr(1, 0, (1,)), None),
        (TopicPartition("t", 9), PartitionState.OnlinePartition, LeaderAndIsr(-1, 3), "preferred"),
    ]
    single, bulk = io.StringIO(), io.StringIO()
    logs = StateChangeLog(single, 1), StateChangeLog(bulk, 1)
    for log in logs:
        log.set_epoch(5)
        log.set_event("BrokerChange")
    for tp, from_state, lai, election in rows:
        logs[0].partition(
            tp, from_state, PartitionState.OnlinePartition, leader=lai.leader,
            leader_epoch=lai.leader_epoch, isr=lai.isr, election=election,
        )  # fmt: skip
    logs[1].partitions(rows, PartitionState.OnlinePartition)
    for log in logs:
        log.flush()
    expected, got = records(single.getvalue()), records(bulk.getvalue())
    assert len({r["ts"] for r in got}) == 1
    for rec in got:
        check_schema(rec)
    strip = {"ts", "seq"}
    assert [{k: v for k, v in r.items() if k not in strip} for r in got] == [
        {k: v for k, v in r.items() if k not in strip} for r in expected
    ]
    for rec_a, rec_b in zip(got, expected, strict=True):
        assert list(rec_a) == list(rec_b)
    with pytest.raises(ValueError):
        StateChangeLog(io.StringIO(), 1).partitions(
            [(TP, None, LeaderAndIsr(1), "bogus")], PartitionState.OnlinePartition
        )


def test_timestamps_never_go_backwards() -> None:
    # A wall clock stepped back (NTP, a resumed VM) must not order a later record before an
    # earlier one: readers order by ts before seq.
    clock = [2_000_000_000_000_000_000]
    out = io.StringIO()
    log = StateChangeLog(out, 1, clock_ns=lambda: clock[0])
    log.partition(TP, None, PartitionState.OfflinePartition)
    clock[0] -= 5_000_000_000
    log.partition(TP, PartitionState.OfflinePartition, PartitionState.OnlinePartition)
    clock[0] += 10_000_000_000
    log.partition(TP, PartitionState.OnlinePartition, PartitionState.OnlinePartition)
    log.flush()
    stamps = [r["ts"] for r in records(out.getvalue())]
    assert stamps[0] == stamps[1] < stamps[2]
