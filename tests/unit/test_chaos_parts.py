"""The chaos suite's pure parts: session passwords, log parsing, the seeded workload and
fault schedule, and the report."""

from __future__ import annotations

import json
from pathlib import Path

from controller.chaos.faults import ALL_FAULTS, FaultPlan, FaultRecord, schedule
from controller.chaos.observe import (
    BrokerLogReader,
    ControllerLogRecord,
    LogTail,
    StateChangeLogReader,
)
from controller.chaos.report import ChaosReport
from controller.chaos.sessions import JavaRandom, session_password
from controller.chaos.workload import Planner, WorkloadSettings


def test_java_random_matches_the_jdk() -> None:
    # new java.util.Random(42).nextInt() and new Random(0).nextInt(), from the JDK.
    assert JavaRandom(42).next_int() == -1170105035
    assert JavaRandom(0).next_int() == -1155484576


def test_session_password_of_a_real_zookeeper_session() -> None:
    # The client_id a real ZooKeeper 3.8.0 handed out (password read back from kazoo).
    assert session_password(0x100002E364B0000).hex() == "37cf8679f8d5da616db60a3f01e393bf"


def test_log_tail_waits_for_complete_lines(tmp_path: Path) -> None:
    path = tmp_path / "log"
    tail = LogTail(path)
    assert list(tail.lines()) == []  # no file yet
    path.write_bytes(b"one\ntw")
    assert list(tail.lines()) == [b"one"]
    with path.open("ab") as f:
        f.write(b"o\nthree\n")
    assert list(tail.lines()) == [b"two", b"three"]


def test_broker_log_records_per_incarnation(tmp_path: Path) -> None:
    path = tmp_path / "broker-2.log"
    lines = [
        "--- chaos: starting broker 2 at 1.0",
        json.dumps({"event": "applied LeaderAndIsr", "controller_id": 0, "controller_epoch": 3}),
        json.dumps({"event": "kazoo noise", "controller_epoch": 1}),
        "--- chaos: starting broker 2 at 2.0",
        json.dumps({"event": "rejected controller request", "request": "StopReplica",
                    "error": "STALE_CONTROLLER_EPOCH", "controller_id": 1,
                    "controller_epoch": 2, "request_broker_epoch": 40, "broker_epoch": 41}),
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    records = list(BrokerLogReader(2, path).records())
    assert [(r.incarnation, r.kind, r.controller_epoch, r.accepted) for r in records] == [
        (1, "LeaderAndIsr", 3, True),
        (2, "StopReplica", 2, False),
    ]
    assert records[1].error == "STALE_CONTROLLER_EPOCH" and records[1].broker_epoch == 41


def test_state_change_log_records(tmp_path: Path) -> None:
    path = tmp_path / "state-change.log"
    base = {"controller_id": 1, "controller_epoch": 7, "result": "ok", "topic": None,
            "partition": None, "leader": None, "leader_epoch": None, "election": None}  # fmt: skip
    lines = [
        {**base, "kind": "controller", "to_state": "elected"},
        {**base, "kind": "partition", "to_state": "OnlinePartition", "topic": "t",
         "partition": 0, "leader": 3, "leader_epoch": 9, "election": "offline_unclean"},
        {**base, "kind": "partition", "to_state": "OnlinePartition", "election": "offline"},
        {**base, "kind": "controller", "to_state": "elected", "result": "failed"},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert list(StateChangeLogReader(path).records()) == [
        ControllerLogRecord(1, 7, "elected"),
        ControllerLogRecord(1, 7, "unclean", "t", 0, 3, 9),
    ]


def test_the_workload_is_a_function_of_the_seed() -> None:
    settings = WorkloadSettings(min_topics=2, max_topics=4)

    def run(seed: int) -> list[str]:
        planner = Planner(seed, range(5), settings)
        return [planner.next().describe() for _ in range(60)]

    assert run(7) == run(7)
    assert run(7) != run(8)
    planner = Planner(3, range(5), settings)
    for i in range(200):
        op = planner.next()
        # A deletion happens only above the minimum, a creation only below the maximum.
        assert len(planner.alive) <= settings.max_topics
        assert i < settings.min_topics or len(planner.alive) >= settings.min_topics - 1
        if op.kind == "create":
            assert all(len(set(r)) == len(r) for r in op.assignment.values())


def test_the_fault_schedule_is_a_function_of_the_seed() -> None:
    def plans(seed: int) -> list[FaultPlan]:
        gen = schedule(seed, 6.0)
        return [next(gen) for _ in range(50)]

    assert plans(1) == plans(1)
    assert plans(1) != plans(2)
    assert {p.kind for p in plans(1)} == set(ALL_FAULTS)
    for plan in plans(1):
        if plan.kind == "zk_freeze_all":
            assert plan.hold_s < 6.0  # a whole-ensemble freeze must not expire sessions
    assert [p.kind for p in schedule(1, 6.0, ("zk_leader_stop", "broker_kill"))] == [
        "zk_leader_stop",
        "broker_kill",
    ]


def test_report() -> None:
    report = ChaosReport(seed=5, mode="long", session_timeout_ms=6000, first_epoch=3,
                         last_epoch=110)  # fmt: skip
    record = FaultRecord(FaultPlan(1, "controller_kill"), injected_at=10.0, healed_at=17.0,
                         recovered_at=17.5)  # fmt: skip
    report.faults.append(record)
    assert report.failovers == 107 and report.passed
    data = report.to_json()
    assert data["longest_time_to_full_leadership_s"] == 7.5
    assert data["longest_after_fault_end_s"] == 0.5
    assert "PASSED" in report.render()
    report.violations.append("[leaderless] t-0")
    assert not report.passed and "FAILED" in report.render()
