"""Partition reassignment (§2.7) on the in-memory harness: the real controller, gateway, state
machines and request batch over MemoryZooKeeper, with brokers recorded rather than run.

The §2.7.4 worked example is followed step by step (RS/AR/RR, leader, ISR and leader epoch at
each step), as are the integration figures (+3; +1 then +4 when the target broker is down).
A follower "catching up" is the leader's ISR write into the state znode (ZooKeeper-ISR mode),
which the controller watches for reassigning partitions."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

import pytest
from structlog.testing import capture_logs

from controller.api.errors import ApiError, Errors
from controller.channel.sender import RequestKind
from controller.core.events import (
    ApiPartitionReassignment,
    Expire,
    ListPartitionReassignments,
    NotControllerError,
    ZkPartitionReassignment,
)
from controller.core.model import (
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from controller.core.reassignment import maybe_build_reassignment, validate_replicas
from controller.zk import codecs, fenced, paths
from controller.zk.port import SetData
from tests.harness import ControllerHarness

T0 = TopicPartition("t", 0)
LAI = RequestKind.LEADER_AND_ISR
SR = RequestKind.STOP_REPLICA


# -- pure pieces ---------------------------------------------------------------------------


def test_validate_replicas_is_kafkas() -> None:
    current = ReplicaAssignment((1, 2, 3))
    live = {1, 2, 3, 4}
    assert validate_replicas(current, (4, 2, 3), live) is None
    assert validate_replicas(current, (3, 2, 1), set()) is None  # no adding replica to check
    for target, code_text in (
        ((), "Empty replica list"),
        ((4, 4), "Duplicate replica ids"),
        ((1, -1), "Invalid broker id"),
        ((5, 1), "brokers that are not alive"),
    ):
        error = validate_replicas(current, target, live)
        assert isinstance(error, ApiError)
        assert error.error is Errors.INVALID_REPLICA_ASSIGNMENT
        assert code_text in str(error)


def test_broker_id_zero_is_a_valid_reassignment_target() -> None:
    # Kafka rejects only negative ids (``replicas.exists(_ < 0)``); broker 0 is an ordinary
    # broker (the default broker.id of many clusters).
    current = ReplicaAssignment((1, 2))
    assert validate_replicas(current, (0, 1), {0, 1, 2}) is None
    assert validate_replicas(ReplicaAssignment((0, 1)), (1, 0), {0, 1}) is None


def test_maybe_build_reassignment() -> None:
    plain = ReplicaAssignment((1, 2, 3))
    assert maybe_build_reassignment(plain, None) is None  # nothing to cancel
    assert maybe_build_reassignment(plain, (4, 2)) == ReplicaAssignment((4, 2, 1, 3), (4,), (1, 3))
    moving = ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert maybe_build_reassignment(moving, None) == ReplicaAssignment((1, 2, 3))  # cancel
    assert maybe_build_reassignment(moving, (7, 8, 9)) == ReplicaAssignment(
        (7, 8, 9, 1, 2, 3), (7, 8, 9), (1, 2, 3)
    )


# -- the controller ------------------------------------------------------------------------


def harness(brokers: Sequence[int], assignment: Sequence[int]) -> ControllerHarness:
    h = ControllerHarness(controller_id=5)
    for b in brokers:
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: list(assignment)}, in_context=False)
    h.drain()
    h.channel.clear()
    return h


@pytest.fixture
def h6() -> Iterator[ControllerHarness]:
    h = harness([1, 2, 3, 4, 5, 6], [1, 2, 3])
    yield h
    h.close()


def reassign(h: ControllerHarness, targets: dict[TopicPartition, tuple[int, ...] | None]) -> dict:
    event = ApiPartitionReassignment(reassignments=targets)
    h.put(event)
    h.drain()
    return event.reply.result(0)


def state(h: ControllerHarness) -> tuple[int, tuple[int, ...], int]:
    info = h.zk_state(T0)
    assert info is not None
    lai = info.leader_and_isr
    return lai.leader, lai.isr, lai.leader_epoch


def topic_znode(h: ControllerHarness) -> dict:
    data = h.read(paths.topic_path("t"))
    assert data is not None
    return json.loads(data)


def rs_ar_rr(h: ControllerHarness) -> tuple[list[int], list[int], list[int]]:
    doc = topic_znode(h)
    return (
        doc["partitions"]["0"],
        doc["adding_replicas"].get("0", []),
        doc["removing_replicas"].get("0", []),
    )


def leader_writes_isr(h: ControllerHarness, isr: Sequence[int]) -> None:
    """The partition leader (ZooKeeper-ISR mode) records followers that caught up."""
    info = h.zk_state(T0)
    assert info is not None
    lai = info.leader_and_isr
    grown = LeaderIsrAndControllerEpoch(
        type(lai)(lai.leader, lai.leader_epoch, tuple(isr), lai.leader_recovery_state),
        info.controller_epoch,
    )
    h.admin.set(
        paths.partition_state_path("t", 0),
        codecs.encode_partition_state(grown),
        lai.partition_epoch,
    )
    h.drain()


def test_worked_example_step_by_step(h6: ControllerHarness) -> None:
    h = h6
    e = state(h)[2]
    assert state(h) == (1, (1, 2, 3), e)
    # U1/A1
    assert reassign(h, {T0: (4, 5, 6)}) == {T0: None}
    assert rs_ar_rr(h) == ([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3])
    assert state(h) == (1, (1, 2, 3), e + 1)
    # A1 sent the full assignment: isNew=false to the origin replicas, isNew=true to AR; A2
    # (each adding replica -> NewReplica, one call each) sent AR another isNew LeaderAndIsr.
    for b, is_new in ((1, False), (2, False), (3, False), (4, True), (5, True), (6, True)):
        requests = h.channel.requests(b, LAI)
        assert len(requests) == (2 if is_new else 1), b
        for request in requests:
            info, assignment, new = request.leader_and_isr(T0)
            assert new is is_new, b
            assert info.leader_and_isr.leader_epoch == e + 1
            assert assignment == ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert h.channel.requests(kind=SR) == []
    # Followers catch up: only the zkVersion changes.
    h.channel.clear()
    leader_writes_isr(h, [1, 2, 3, 4, 5, 6])
    # B3 elected 4 (first live ISR member of the target, e+2); B4 took 1, 2, 3 out of the ISR
    # one at a time (e+5); B6 persisted RS = target.
    assert state(h) == (4, (4, 5, 6), e + 5)
    assert rs_ar_rr(h) == ([4, 5, 6], [], [])
    assert h.ctx.partitions_being_reassigned == set()
    # The removed replicas were stopped, then deleted, without waiting for answers.
    for b in (1, 2, 3):
        stops = [r.stop_replica(T0)[1] for r in h.channel.requests(b, SR)]
        assert stops == [False, True], b
        assert all(r.callback is None for r in h.channel.requests(b, SR))
        assert not h.ctx.has_replica_state(PartitionAndReplica(T0, b))
    assert h.ctx.partition_full_replica_assignment(T0) == ReplicaAssignment((4, 5, 6))
    elections = h.state_changes("partition", topic="t", election="reassign")
    assert [(r["leader"], r["leader_epoch"]) for r in elections] == [(4, e + 2)]


def test_one_replica_moved_with_both_brokers_alive_is_plus_3() -> None:
    h = harness([1, 2], [1])
    try:
        e = state(h)[2]
        assert reassign(h, {T0: (2,)}) == {T0: None}
        assert state(h) == (1, (1,), e + 1)
        leader_writes_isr(h, [1, 2])
        assert state(h) == (2, (2,), e + 3)
    finally:
        h.close()


def test_target_broker_down_stops_at_plus_1_and_ends_at_plus_4() -> None:
    h = harness([1, 2], [1])
    try:
        e = state(h)[2]
        h.kill_broker(2)
        h.drain()
        h.admin.create(
            paths.REASSIGN_PARTITIONS, codecs.encode_reassignment({T0: (2,)}), makepath=True
        )
        h.drain()
        assert rs_ar_rr(h) == ([2, 1], [2], [1])
        assert state(h) == (1, (1,), e + 1)
        h.register_broker(2)  # onBrokerStartup resumes: A1 again
        h.drain()
        assert state(h) == (1, (1,), e + 2)
        [request] = h.channel.requests(2, LAI)[-1:]
        assert request.leader_and_isr(T0)[2] is True  # isNew for the adding replica
        leader_writes_isr(h, [1, 2])
        assert state(h) == (2, (2,), e + 4)
        assert rs_ar_rr(h) == ([2], [], [])
        assert h.read(paths.REASSIGN_PARTITIONS) is None
    finally:
        h.close()


def test_a_new_target_during_a_reassignment_stops_the_unneeded_adding_replicas(
    h6: ControllerHarness,
) -> None:
    h = h6
    reassign(h, {T0: (4, 5, 6)})
    h.channel.clear()
    assert reassign(h, {T0: (6, 2)}) == {T0: None}
    # The origin is kept; 4 and 5 (adding, no longer wanted) are stopped and deleted (U3).
    assert rs_ar_rr(h) == ([6, 2, 1, 3], [6], [1, 3])
    for b in (4, 5):
        assert [r.stop_replica(T0)[1] for r in h.channel.requests(b, SR)] == [False, True]
        assert not h.ctx.has_replica_state(PartitionAndReplica(T0, b))
    assert h.channel.requests(6, SR) == []


def test_cancel_goes_back_to_the_origin_replicas(h6: ControllerHarness) -> None:
    h = h6
    e = state(h)[2]
    reassign(h, {T0: (4, 5, 6)})
    assert reassign(h, {T0: None}) == {T0: None}
    assert rs_ar_rr(h) == ([1, 2, 3], [], [])
    assert state(h) == (1, (1, 2, 3), e + 2)  # A1, then B3's epoch bump (leader stays)
    assert h.ctx.partitions_being_reassigned == set()
    error = reassign(h, {T0: None})[T0]
    assert error.error is Errors.NO_REASSIGNMENT_IN_PROGRESS


def test_list_reports_only_partitions_being_reassigned(h6: ControllerHarness) -> None:
    h = h6
    h.create_topic("u", {0: [1]}, in_context=False)
    h.drain()
    reassign(h, {T0: (4, 5, 6)})
    for partitions, expected in (
        (None, {T0: ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))}),
        (frozenset({TopicPartition("u", 0), TopicPartition("x", 3)}), {}),
        # Malformed names and ids are not errors: they are simply not being reassigned.
        (frozenset({TopicPartition("", 0), TopicPartition("t", -1), T0}), {
            T0: ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
        }),
    ):
        event = ListPartitionReassignments(partitions=partitions)
        h.put(event)
        h.drain()
        assert event.reply.result(0) == expected


def test_a_standby_answers_not_controller() -> None:
    h = ControllerHarness(controller_id=5)
    try:
        for event in (ApiPartitionReassignment(reassignments={T0: (1,)}),
                      ListPartitionReassignments()):  # fmt: skip
            h.process(event)
            with pytest.raises(NotControllerError):
                event.reply.result(0)
    finally:
        h.close()


def test_zk_entries_that_fail_are_removed_and_the_rest_kept(h6: ControllerHarness) -> None:
    h = h6
    request = {TopicPartition("t", 4): (1,), T0: (4, 2, 3), TopicPartition("zz", 0): (1,)}
    h.admin.create(paths.REASSIGN_PARTITIONS, codecs.encode_reassignment(request), makepath=True)
    h.drain()
    assert rs_ar_rr(h) == ([4, 2, 3, 1], [4], [1])
    data = h.read(paths.REASSIGN_PARTITIONS)
    assert data is not None
    assert codecs.decode_reassignment(data) == {T0: (4, 2, 3)}
    leader_writes_isr(h, [1, 2, 3, 4])
    assert h.read(paths.REASSIGN_PARTITIONS) is None
    # Deleted by the controller; the creation watch is re-armed for the next request.
    h.admin.create(paths.REASSIGN_PARTITIONS, codecs.encode_reassignment({T0: (1, 2, 3)}))
    h.drain()
    assert rs_ar_rr(h) == ([1, 2, 3, 4], [1], [4])


def test_an_api_request_supersedes_the_zk_request_for_the_same_partition(
    h6: ControllerHarness,
) -> None:
    h = h6
    h.create_topic("u", {0: [1]}, in_context=False)
    h.drain()
    u0 = TopicPartition("u", 0)
    h.admin.create(
        paths.REASSIGN_PARTITIONS,
        codecs.encode_reassignment({T0: (4, 5, 6), u0: (2,)}),
        makepath=True,
    )
    h.drain()
    reassign(h, {T0: (1, 2, 4)})
    data = h.read(paths.REASSIGN_PARTITIONS)
    assert data is not None
    assert codecs.decode_reassignment(data) == {u0: (2,)}
    assert rs_ar_rr(h) == ([1, 2, 4, 3], [4], [3])


def test_a_malformed_zk_request_is_ignored_and_left_in_place(h6: ControllerHarness) -> None:
    h = h6
    before = h.read(paths.topic_path("t"))
    h.admin.create(
        paths.REASSIGN_PARTITIONS, b'{"version":1,"partitions":[{"topic":', makepath=True
    )
    h.drain()
    assert h.read(paths.REASSIGN_PARTITIONS) is not None
    assert h.read(paths.topic_path("t")) == before
    assert h.ctx.partitions_being_reassigned == set()
    # The operator deletes it; the next request is seen (the deletion re-arms the watch).
    h.admin.delete(paths.REASSIGN_PARTITIONS)
    h.drain()
    h.admin.create(paths.REASSIGN_PARTITIONS, codecs.encode_reassignment({T0: (4, 2, 3)}))
    h.drain()
    assert rs_ar_rr(h) == ([4, 2, 3, 1], [4], [1])


def test_a_malformed_zk_request_is_deleted_unrun_when_an_api_reassignment_starts(
    h6: ControllerHarness,
) -> None:
    """It reads as empty, so Kafka's maybeRemoveFromZkReassignment deletes it when a
    reassignment submitted through the API starts; the deletion is logged as a warning
    naming the problem, since none of its plan ran."""
    h = h6
    plan = (
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],'
        b'"log_dirs":[]}]}'
    )
    h.admin.create(paths.REASSIGN_PARTITIONS, plan, makepath=True)
    h.drain()
    assert h.read(paths.REASSIGN_PARTITIONS) == plan
    with capture_logs() as logs:
        assert reassign(h, {T0: (4, 2, 3)}) == {T0: None}
    assert h.read(paths.REASSIGN_PARTITIONS) is None
    [deleted] = [e for e in logs if "deleting the malformed" in e["event"]]
    assert deleted["log_level"] == "warning" and "log_dirs" in deleted["error"]
    assert rs_ar_rr(h) == ([4, 2, 3, 1], [4], [1])  # the API's reassignment, not the znode's


@pytest.mark.parametrize(
    "request_data",
    [b'{"version":1,"partitions":[{"topic":', b'{"version":1,"partitions":[]}'],
    ids=["malformed", "empty"],
)
def test_a_request_naming_no_deleted_topic_outlives_that_deletion(
    h6: ControllerHarness, request_data: bytes
) -> None:
    # Only the deleted topic's entries leave the request: one that names none (here, one
    # the operator is still looking at) stays, as Kafka's deletion never touches it.
    h6.create_topic("u", {0: [1]}, in_context=False)
    h6.drain()
    h6.admin.create(paths.REASSIGN_PARTITIONS, request_data, makepath=True)
    h6.drain()
    h6.admin.create(paths.delete_topic_path("u"), b"", makepath=True)
    h6.drain()
    for broker in (1, 2, 3):
        for request in h6.channel.requests(broker, SR):
            request.respond()
    h6.drain()
    assert h6.read(paths.topic_path("u")) is None  # the deletion completed
    assert h6.read(paths.REASSIGN_PARTITIONS) == request_data


@pytest.mark.parametrize("version", ["", '"version":2,', '"version":"1",'])
def test_a_hand_written_request_kafka_acts_on_is_acted_on(
    h6: ControllerHarness, version: str
) -> None:
    # Kafka's mapper never checks the version: a request written by hand without it runs.
    request = f'{{{version}"partitions":[{{"topic":"t","partition":0,"replicas":[4,2,3]}}]}}'
    h6.admin.create(paths.REASSIGN_PARTITIONS, request.encode(), makepath=True)
    h6.drain()
    assert rs_ar_rr(h6) == ([4, 2, 3, 1], [4], [1])


def test_an_invalid_entry_fails_its_partition_only_and_is_removed(h6: ControllerHarness) -> None:
    h = h6
    h.create_topic("u", {0: [1], 1: [1]}, in_context=False)
    h.drain()
    u0, u1 = TopicPartition("u", 0), TopicPartition("u", 1)
    # t-0 is valid; u-0 has an empty target, u-1 a duplicate broker (Kafka's mapper takes both).
    h.admin.create(
        paths.REASSIGN_PARTITIONS,
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,2,3]},'
        b'{"topic":"u","partition":0,"replicas":[]},'
        b'{"topic":"u","partition":1,"replicas":[2,2]}]}',
        makepath=True,
    )
    with capture_logs() as logs:
        h.drain()
    # The valid partition is reassigned; the invalid ones are untouched, reported by name...
    assert rs_ar_rr(h) == ([4, 2, 3, 1], [4], [1])
    assert h.ctx.partition_replica_assignment(u0) == (1,)
    assert h.ctx.partition_replica_assignment(u1) == (1,)
    [failed] = [e for e in logs if e["event"].startswith("reassignment requests in ZooKeeper")]
    assert set(failed["errors"]) == {"u-0", "u-1"}
    assert "the replica list is empty" in failed["errors"]["u-0"]
    assert "duplicate broker id 2" in failed["errors"]["u-1"]
    # ...and removed from the znode, which keeps the valid request until it completes.
    data = h.read(paths.REASSIGN_PARTITIONS)
    assert data is not None and codecs.decode_reassignment(data) == {T0: (4, 2, 3)}


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (b'{"topic":"t","partition":-1,"replicas":[4,2,3]}', "negative partition id -1"),
        (b'{"topic":"a/b","partition":0,"replicas":[4,2,3]}', "'a/b' cannot be a topic"),
        (b'{"topic":"","partition":0,"replicas":[4,2,3]}', "'' cannot be a topic"),
    ],
)
def test_an_entry_naming_an_impossible_partition_fails_only_itself(
    h6: ControllerHarness, entry: bytes, problem: str
) -> None:
    # Kafka's mapper binds any string topic and int partition; the controller then answers
    # UNKNOWN_TOPIC_OR_PARTITION for that entry alone and removes it. Refusing the whole
    # znode left the valid moves undone and the node in place, blocking every later request.
    h = h6
    h.admin.create(
        paths.REASSIGN_PARTITIONS,
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,2,3]},'
        + entry
        + b"]}",
        makepath=True,
    )
    with capture_logs() as logs:
        h.drain()
    assert rs_ar_rr(h) == ([4, 2, 3, 1], [4], [1])
    [failed] = [e for e in logs if e["event"].startswith("reassignment requests in ZooKeeper")]
    [error] = failed["errors"].values()
    assert error.startswith("UNKNOWN_TOPIC_OR_PARTITION") and problem in error
    data = h.read(paths.REASSIGN_PARTITIONS)
    assert data is not None and codecs.decode_reassignment(data) == {T0: (4, 2, 3)}


def test_a_request_with_only_invalid_entries_is_removed(h6: ControllerHarness) -> None:
    h = h6
    before = h.read(paths.topic_path("t"))
    h.admin.create(
        paths.REASSIGN_PARTITIONS,
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[-1]}]}',
        makepath=True,
    )
    h.drain()
    assert h.read(paths.REASSIGN_PARTITIONS) is None
    assert h.read(paths.topic_path("t")) == before
    # The deletion re-armed the watch: the next request is seen.
    h.admin.create(paths.REASSIGN_PARTITIONS, codecs.encode_reassignment({T0: (4, 2, 3)}))
    h.drain()
    assert rs_ar_rr(h) == ([4, 2, 3, 1], [4], [1])


def test_failover_resumes_reassignments_from_the_topic_znode(h6: ControllerHarness) -> None:
    h = h6
    reassign(h, {T0: (4, 5, 6)})
    e = state(h)[2]
    # A new controller (same ZooKeeper) reads AR/RR from the topic znode and resumes (A1).
    other = ControllerHarness(controller_id=6, zk=h.zk)
    try:
        h.controller.shutdown()
        h.admin.delete(paths.CONTROLLER)
        other.start()
        assert other.ctx.partitions_being_reassigned == {T0}
        info = other.zk_state(T0)
        assert info is not None
        assert info.leader_and_isr.leader_epoch == e + 1
        assert info.controller_epoch == 2
    finally:
        other.close()


def test_a_request_queued_when_the_controller_resigns_is_answered_not_controller(
    h6: ControllerHarness,
) -> None:
    h = h6
    before = h.read(paths.topic_path("t"))
    event = ApiPartitionReassignment(reassignments={T0: (4, 5, 6)})
    h.put(event)
    h.controller.events.clear_and_put(Expire())  # session expiry: queued events are preempted
    with pytest.raises(NotControllerError):
        event.reply.result(0)
    h.drain()
    assert not h.controller.is_active
    assert h.read(paths.topic_path("t")) == before


def _six_brokers_t_and_u() -> ControllerHarness:
    h = ControllerHarness(controller_id=9)
    for b in (1, 2, 3, 4, 5, 6):
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: [1, 2, 3]}, in_context=False)
    h.create_topic("u", {0: [1]}, in_context=False)
    h.drain()
    return h


def test_a_request_created_right_after_the_controller_deletes_the_znode_runs_once() -> None:
    # Deleting the znode queues our re-arm and fires its deletion watch: two triggers. A
    # request created before they run must still be started once (one leader-epoch bump, one
    # LeaderAndIsr per adding replica), not twice.
    h = _six_brokers_t_and_u()
    u0 = TopicPartition("u", 0)
    before = h.zk_state(T0)
    assert before is not None
    h.admin.create(paths.REASSIGN_PARTITIONS, codecs.encode_reassignment({u0: (1,)}))
    queued = h.controller.events.poll()
    assert queued is not None
    queued.process(h.controller)  # a no-op request: completes at once, the znode is deleted
    assert h.read(paths.REASSIGN_PARTITIONS) is None
    assert [type(e) for e in h.pending_events()].count(ZkPartitionReassignment) == 2
    h.admin.create(paths.REASSIGN_PARTITIONS, codecs.encode_reassignment({T0: (4, 5, 6)}))
    h.channel.clear()
    h.drain()
    after = h.zk_state(T0)
    assert after is not None
    assert after.leader_and_isr.leader_epoch == before.leader_and_isr.leader_epoch + 1
    assert len(h.channel.requests(4, LAI)) == 2  # A1's, then A2's NewReplica


def test_after_the_controller_rewrites_the_znode_a_new_request_is_still_seen() -> None:
    # A failed entry is removed by rewriting the znode, which fires (and uses up) its watch;
    # an operator then deletes the node by hand and submits a new request.
    h = _six_brokers_t_and_u()
    u0, zz0 = TopicPartition("u", 0), TopicPartition("zz", 0)
    h.admin.create(
        paths.REASSIGN_PARTITIONS, codecs.encode_reassignment({T0: (4, 5, 6), zz0: (1,)})
    )
    h.drain()
    assert codecs.decode_reassignment(h.read(paths.REASSIGN_PARTITIONS) or b"") == {
        T0: (4, 5, 6)
    }
    h.admin.delete(paths.REASSIGN_PARTITIONS)
    h.drain()
    h.admin.create(paths.REASSIGN_PARTITIONS, codecs.encode_reassignment({u0: (2,)}))
    h.drain()
    assert h.ctx.partition_full_replica_assignment(u0).target_replicas == (2,)


def test_a_topic_znode_grown_past_a_request_fails_the_step_and_writes_nothing(
    h6: ControllerHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real limit is ~1 MiB (a topic of ~20K partitions all moving); a small one here. The
    # write is refused unsent: the partition's reassignment fails with the reason, nothing
    # is written, and the controller carries on (sent, the write hung the event thread).
    h = h6
    before = h.read(paths.topic_path("t"))
    assert before is not None
    monkeypatch.setattr(fenced, "MAX_ITEM_BYTES", len(before) + 10)
    result = reassign(h, {T0: (4, 5, 6)})
    assert result[T0] is not None and result[T0].error is Errors.UNKNOWN_SERVER_ERROR
    assert "jute.maxbuffer" in str(result[T0])
    assert h.read(paths.topic_path("t")) == before
    assert state(h)[2] == 0  # no new leader epoch
    assert h.controller.is_active
    monkeypatch.undo()
    assert reassign(h, {T0: (4, 5, 6)}) == {T0: None}


def _topic_version(h: ControllerHarness, topic: str) -> int:
    stat = h.stat(paths.topic_path(topic))
    assert stat is not None
    return stat.version


def test_a_whole_topic_reassigned_in_one_request_writes_its_znode_once(
    h6: ControllerHarness,
) -> None:
    # Kafka rewrites the whole topic znode once per partition (and this controller also
    # re-read and decoded it each time): a 3,000-partition topic took minutes, with the event
    # thread blocked. The partitions of one request now share one write per step.
    h = h6
    n = 1000
    h.create_topic("big", {p: [1 + p % 3, 1 + (p + 1) % 3] for p in range(n)}, in_context=False)
    h.drain()
    before = _topic_version(h, "big")
    targets = {TopicPartition("big", p): (4, 5) for p in range(n)}
    targets[T0] = (4, 5, 6)
    assert reassign(h, targets) == dict.fromkeys(sorted(targets))
    assert _topic_version(h, "big") == before + 1  # U1 for all 1,000 partitions
    doc = codecs.decode_topic_assignment("big", h.read(paths.topic_path("big")) or b"")
    for p in range(n):
        origin = (1 + p % 3, 1 + (p + 1) % 3)
        assert doc.partitions[p] == ReplicaAssignment((4, 5, *origin), (4, 5), origin), p
    assert rs_ar_rr(h) == ([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3])
    assert len(h.ctx.partitions_being_reassigned) == n + 1
    # A cancel completes at once (B path): U1 and B6, each one write for the whole topic.
    before = _topic_version(h, "big")
    assert reassign(h, dict.fromkeys(targets)) == dict.fromkeys(sorted(targets))
    assert _topic_version(h, "big") == before + 2
    doc = codecs.decode_topic_assignment("big", h.read(paths.topic_path("big")) or b"")
    assert doc.partitions == {
        p: ReplicaAssignment((1 + p % 3, 1 + (p + 1) % 3)) for p in range(n)
    }
    assert h.ctx.partitions_being_reassigned == set()


def test_partitions_of_one_request_past_the_znode_size_limit_fail_alone(
    h6: ControllerHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One write for the whole request must not fail every partition when the znode would pass
    # ZooKeeper's limit: those that fit, in partition order, are written (as one write per
    # partition would have written them); the others fail with the reason.
    h = h6
    h.create_topic("big", {p: [1, 2, 3] for p in range(10)}, in_context=False)
    h.drain()
    moving = ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    data = h.read(paths.topic_path("big"))
    assert data is not None
    current = codecs.decode_topic_assignment("big", data)
    four = dict(current.partitions) | dict.fromkeys(range(4), moving)
    fits = codecs.encode_topic_assignment(TopicAssignment("big", current.topic_id, four))
    op = SetData(paths.topic_path("big"), fits, -1)
    monkeypatch.setattr(fenced, "MAX_ITEM_BYTES", fenced.op_size(op))
    results = reassign(h, {TopicPartition("big", p): (4, 5, 6) for p in range(10)})
    assert [p.partition for p, e in results.items() if e is None] == [0, 1, 2, 3]
    for p in range(4, 10):
        error = results[TopicPartition("big", p)]
        assert error is not None and error.error is Errors.UNKNOWN_SERVER_ERROR
        assert "jute.maxbuffer" in str(error)
    assert h.read(paths.topic_path("big")) == fits
    assert h.ctx.partitions_being_reassigned == {TopicPartition("big", p) for p in range(4)}
