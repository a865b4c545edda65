"""The chaos suite's checkers on made-up histories: the live checker (snapshots, logs,
liveness deadlines), the transaction-log reader and the audit. Each violation kind is
produced once on purpose, so a checker that never complains cannot pass."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

from controller import invariants as inv
from controller.chaos.audit import audit_transactions
from controller.chaos.checker import EpochWindows, LiveChecker
from controller.chaos.observe import BrokerLogRecord, Registration, StateNode, ZkSnapshot
from controller.chaos.txnlog import (
    CHECK,
    CREATE,
    ERROR,
    MULTI,
    SET_DATA,
    Op,
    Txn,
    parse_txn,
    read_log,
)
from controller.invariants import PartitionAssignment

# -- the live checker -------------------------------------------------------------------------


def _state(version: int, mzxid: int, epoch: int, leader: int = 1, leader_epoch: int = 0,
           isr: tuple[int, ...] = (1, 2), czxid: int = 10) -> StateNode:  # fmt: skip
    return StateNode("t", 0, czxid, mzxid, version, epoch, leader, leader_epoch, isr)


def _snap(t: float, *states: StateNode, registrations: tuple[Registration, ...] = (),
          live: frozenset[int] = frozenset({1, 2}), topic: bool = True) -> ZkSnapshot:  # fmt: skip
    snap = ZkSnapshot(t=t, registrations=list(registrations), live_brokers=live)
    if topic:
        snap.topics = {"t": _topic()}
    snap.states = {(s.topic, s.partition): s for s in states}
    return snap


def _topic() -> object:
    from controller.chaos.observe import TopicNode

    return TopicNode("t", 5, 5, {0: PartitionAssignment((1, 2))}, "id-t")


def _checker() -> LiveChecker:
    checker = LiveChecker(session_timeout_s=4.0)
    checker.request(inv.AssignmentRequest("create", "t", {0: (1, 2)}))
    return checker


def _kinds(checker: LiveChecker) -> list[str]:
    return [v.invariant for v in checker.violations()]


def test_epoch_windows() -> None:
    windows = EpochWindows()
    windows.add(Registration(1, 100, 0, 0xA))
    windows.add(Registration(2, 200, 1, 0xB))
    windows.add(Registration(4, 400, 2, 0xC))  # epoch 3 was never seen
    assert windows.epoch_at(150) == 1
    assert windows.epoch_at(250) is None  # epoch 3 began somewhere in 200..400
    assert windows.epoch_at(500) == 4
    assert windows.window_problem(1, 150, "w") is None
    assert "after controller 1 registered epoch 2" in (windows.window_problem(1, 250, "w") or "")
    assert "before epoch 2 was registered" in (windows.window_problem(2, 150, "w") or "")
    assert windows.add(Registration(2, 201, 0, 0xD)) is not None  # epoch 2 registered twice


def test_a_clean_history_has_no_violation() -> None:
    checker = _checker()
    reg = (Registration(1, 100, 0, 0xA),)
    checker.observe_snapshot(_snap(1.0, _state(0, 110, 1), registrations=reg))
    checker.observe_snapshot(_snap(2.0, _state(1, 120, 1, leader_epoch=1), registrations=reg))
    assert checker.violations() == []


def test_a_write_of_the_old_epoch_after_the_next_election_is_flagged() -> None:
    checker = _checker()
    a, b = Registration(1, 100, 0, 0xA), Registration(2, 200, 1, 0xB)
    checker.observe_snapshot(_snap(1.0, _state(0, 110, 1), registrations=(a,)))
    checker.observe_snapshot(_snap(2.0, _state(1, 210, 1, leader_epoch=1), registrations=(b,)))
    assert _kinds(checker) == [inv.SINGLE_WRITER]
    assert "controllers 1 and 0" in str(checker.violations()[0])


def test_the_same_controller_reelected_is_checked_by_zxid() -> None:
    checker = _checker()
    a, b = Registration(1, 100, 0, 0xA), Registration(2, 200, 0, 0xB)  # both controller 0
    checker.observe_snapshot(_snap(1.0, _state(0, 110, 1), registrations=(a,)))
    checker.observe_snapshot(_snap(2.0, _state(1, 210, 1, leader_epoch=1), registrations=(b,)))
    assert _kinds(checker) == [inv.SINGLE_WRITER]
    assert "after controller 0 registered epoch 2" in str(checker.violations()[0])


def test_epoch_regressions_on_a_state_znode() -> None:
    checker = _checker()
    reg = (Registration(1, 100, 0, 0xA), Registration(2, 200, 1, 0xB))
    checker.observe_snapshot(_snap(1.0, _state(3, 210, 2, leader_epoch=5), registrations=reg))
    checker.observe_snapshot(_snap(2.0, _state(4, 220, 1, leader_epoch=4), registrations=reg))
    kinds = _kinds(checker)
    assert inv.CONTROLLER_EPOCH_REGRESSED in kinds and inv.LEADER_EPOCH_REGRESSED in kinds


def test_a_recreated_state_znode_starts_afresh() -> None:
    checker = _checker()
    reg = (Registration(1, 100, 0, 0xA),)
    checker.observe_snapshot(_snap(1.0, _state(3, 110, 1, leader_epoch=5), registrations=reg))
    checker.observe_snapshot(_snap(2.0, registrations=reg, topic=False))  # topic deleted
    checker.request(inv.AssignmentRequest("delete", "t"))
    checker.request(inv.AssignmentRequest("create", "t", {0: (1, 2)}))
    checker.observe_snapshot(_snap(3.0, _state(0, 130, 1, czxid=125), registrations=reg))
    assert _kinds(checker) == [inv.ASSIGNMENT_CHANGED]  # the deletion nobody requested (yet)


def test_leader_outside_isr_needs_an_unclean_record() -> None:
    from controller.chaos.observe import ControllerLogRecord

    reg = (Registration(1, 100, 0, 0xA),)
    checker = _checker()
    checker.observe_snapshot(_snap(1.0, _state(1, 110, 1, leader=3, isr=(1,)), registrations=reg))
    assert _kinds(checker) == [inv.LEADER_OUTSIDE_ISR]
    unclean = ControllerLogRecord(0, 1, "unclean", "t", 0, 3, 0)
    checker.allow_unclean("t")
    checker.observe_logs([unclean], [], 2.0)
    assert checker.violations() == []


def test_an_unclean_election_nobody_allowed() -> None:
    from controller.chaos.observe import ControllerLogRecord

    checker = _checker()
    checker.allow_unclean("other")
    checker.observe_logs([ControllerLogRecord(0, 1, "unclean", "t", 0, 3, 0)], [], 2.0)
    assert _kinds(checker) == [inv.UNCLEAN_NOT_ALLOWED]


def test_a_topic_changed_by_nobody() -> None:
    from controller.chaos.observe import TopicNode

    checker = _checker()
    snap = _snap(1.0)
    snap.topics = {"t": TopicNode("t", 5, 6, {0: PartitionAssignment((3, 4))}, "id-t")}
    checker.observe_snapshot(snap)
    assert _kinds(checker) == [inv.ASSIGNMENT_CHANGED]


def test_stale_controller_epoch_accepted_by_a_broker() -> None:
    checker = _checker()

    def rec(epoch: int, incarnation: int = 1, accepted: bool = True) -> BrokerLogRecord:
        return BrokerLogRecord(2, incarnation, "LeaderAndIsr", 0, epoch, accepted, None, -1, -1)

    checker.observe_logs([], [rec(5), rec(4, accepted=False), rec(3, incarnation=2)], 1.0)
    assert checker.violations() == []  # refused, or a new process that knows no epoch yet
    checker.observe_logs([], [rec(4)], 2.0)
    assert _kinds(checker) == [inv.STALE_CONTROLLER_ACCEPTED]


def test_leaderless_counts_only_after_the_deadline_and_with_a_confirmed_leader() -> None:
    checker = _checker()
    reg = (Registration(1, 100, 0, 0xA),)
    orphan = _state(0, 110, 1, leader=1, isr=(1, 2))
    snap = _snap(10.0, orphan, registrations=reg)
    checker.observe_snapshot(snap)
    checker.fault_started()
    # During a fault nothing is flagged; broker 1 does not confirm its leadership.
    assert len(checker.observe_leadership(snap, {}, {1, 2})) == 1
    checker.fault_stopped(10.0)
    late = _snap(18.0, orphan, registrations=reg)
    checker.observe_leadership(late, {}, {1, 2})  # 8 s < 4 s + 5 s
    assert checker.violations() == []
    led = {(1, ("t", 0)): 0}
    assert checker.observe_leadership(_snap(19.5, orphan, registrations=reg), led, {1, 2}) == []
    checker.observe_leadership(_snap(20.0, orphan, registrations=reg), {}, {1, 2})
    assert _kinds(checker) == [inv.LEADERLESS]
    # Without a live ISR member the partition is not leaderless (unclean election is off).
    checker.fault_stopped(30.0)
    checker.observe_leadership(_snap(60.0, orphan, registrations=reg), {}, {3})
    assert _kinds(checker) == [inv.LEADERLESS]


# -- transaction logs -------------------------------------------------------------------------


def _jute_string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">i", len(raw)) + raw


def _jute_buffer(raw: bytes) -> bytes:
    return struct.pack(">i", len(raw)) + raw


def _header(zxid: int, session: int, txn_type: int) -> bytes:
    return struct.pack(">qiqqi", session, 1, zxid, 1_700_000_000_000, txn_type)


def _set_data(path: str, data: bytes, version: int) -> bytes:
    return _jute_string(path) + _jute_buffer(data) + struct.pack(">i", version)


def _create(path: str, data: bytes, ephemeral: bool = False) -> bytes:
    acl = struct.pack(">ii", 1, 31) + _jute_string("world") + _jute_string("anyone")
    return _jute_string(path) + _jute_buffer(data) + acl + bytes([ephemeral]) + struct.pack(">i", 0)


def _multi(*ops: tuple[int, bytes]) -> bytes:
    body = struct.pack(">i", len(ops))
    for op_type, record in ops:
        body += struct.pack(">i", op_type) + _jute_buffer(record)
    return body


def test_parse_txn_plain_multi_and_failed() -> None:
    txn = parse_txn(_header(7, 0xAB, SET_DATA) + _set_data("/a", b"x", 3) + b"digest")
    assert txn == Txn(7, 0xAB, 1_700_000_000_000, SET_DATA, (Op(SET_DATA, "/a", b"x", 3),))
    multi = parse_txn(
        _header(8, 0xAB, MULTI)
        + _multi((CHECK, _jute_string("/e") + struct.pack(">i", 2)), (CREATE, _create("/b", b"y")))
    )
    assert [op.type for op in multi.ops] == [CHECK, CREATE] and multi.ops[1].data == b"y"
    failed = parse_txn(_header(9, 0xAB, MULTI) + _multi((ERROR, struct.pack(">i", -103))))
    assert failed.failed and failed.ops == ()


def test_read_log_stops_at_the_zero_tail_and_at_a_torn_entry(tmp_path: Path) -> None:
    entries = [_header(z, 1, SET_DATA) + _set_data("/a", b"v", z) for z in (1, 2, 3)]
    body = b"ZKLG" + struct.pack(">iq", 2, 0)
    for i, payload in enumerate(entries):
        crc = zlib.adler32(payload) if i < 2 else 12345  # the third one is torn
        body += struct.pack(">qi", crc, len(payload)) + payload + b"B"
    path = tmp_path / "log.1"
    path.write_bytes(body + bytes(64))
    assert [t.zxid for t in read_log(path)] == [1, 2]


# -- the audit --------------------------------------------------------------------------------


def _txn(zxid: int, session: int, *ops: Op, txn_type: int = MULTI) -> Txn:
    return Txn(zxid, session, 0, txn_type, ops)


def _election(zxid: int, session: int, controller: int, epoch: int) -> Txn:
    return _txn(
        zxid, session,
        Op(CREATE, "/c/controller", json.dumps({"brokerid": controller}).encode(), 0, True),
        Op(SET_DATA, "/c/controller_epoch", str(epoch).encode(), epoch),
    )  # fmt: skip


def _state_write(zxid: int, session: int, epoch: int, version: int, leader_epoch: int) -> Txn:
    data = json.dumps({"controller_epoch": epoch, "leader": 1, "version": 1,
                       "leader_epoch": leader_epoch, "isr": [1, 2]}).encode()  # fmt: skip
    return _txn(
        zxid, session,
        Op(CHECK, "/c/controller_epoch", version=epoch),
        Op(SET_DATA, "/c/brokers/topics/t/partitions/0/state", data, version),
    )  # fmt: skip


def test_audit_of_a_clean_history() -> None:
    result = audit_transactions(
        [_election(1, 0xA, 0, 1), _state_write(2, 0xA, 1, 1, 0),
         _election(3, 0xB, 1, 2), _state_write(4, 0xB, 2, 2, 1)],
        chroot="/c",
    )  # fmt: skip
    assert result.violations == [] and result.elections == 2 and result.state_versions == 2


def test_audit_flags_a_zombie_session_of_the_same_controller() -> None:
    result = audit_transactions(
        [_election(1, 0xA, 0, 1), _election(3, 0xB, 0, 2), _state_write(4, 0xA, 1, 2, 1)],
        chroot="/c",
    )
    assert any("session 0xa of controller 0 wrote in epoch 2" in v for v in result.violations)
    assert any(
        "carries controller epoch 1 but committed in epoch 2" in v for v in result.violations
    )


def test_audit_flags_regressions_and_unfenced_writes() -> None:
    unfenced = _txn(5, 0xA, Op(SET_DATA, "/c/admin/reassign_partitions", b"{}", 1))
    result = audit_transactions(
        [_election(1, 0xA, 0, 1), _state_write(2, 0xA, 1, 1, 3), _state_write(3, 0xA, 1, 2, 2),
         unfenced],
        chroot="/c",
    )  # fmt: skip
    assert any(v.startswith(f"[{inv.LEADER_EPOCH_REGRESSED}]") for v in result.violations)
    assert result.unfenced == ["zxid 0x5: controller 0 wrote /admin/reassign_partitions unfenced"]


def test_the_live_checker_flags_overlapping_producer_id_blocks() -> None:
    checker = LiveChecker(6.0)
    checker.producer_id_block(1, 0, 999, 1.0)
    checker.producer_id_block(2, 1000, 1999, 2.0)
    assert checker.violations() == []
    checker.producer_id_block(3, 1500, 2499, 3.0)
    found = checker.violations()
    assert [(v.at, v.invariant) for v in found] == [(3.0, "producer-id-blocks-overlap")]
