"""The shared invariant checks (controller.invariants): each flags what it must, and only that."""

from __future__ import annotations

import pytest

from controller import invariants as inv
from controller.invariants import (
    AssignmentRequest,
    BrokerRequest,
    Checker,
    ControllerWrite,
    LivenessSample,
    PartitionAssignment,
    PartitionView,
    StateWrite,
    TopicSnapshot,
    UncleanElection,
)


def state(
    version: int,
    *,
    controller_epoch: int = 1,
    leader: int = 1,
    leader_epoch: int = 0,
    isr: tuple[int, ...] = (1, 2),
    czxid: int = 10,
) -> StateWrite:
    return StateWrite("t", 0, czxid, version, controller_epoch, leader, leader_epoch, isr)


def names(violations: list[inv.Violation]) -> list[str]:
    return [v.invariant for v in violations]


# -- single writer per epoch -----------------------------------------------------------------


def test_one_controller_per_epoch_is_fine_and_two_are_flagged() -> None:
    ok = [ControllerWrite(1, 5, "/a"), ControllerWrite(1, 5, "/b"), ControllerWrite(2, 6, "/a")]
    assert inv.check_controller_writes(ok) == []
    bad = [*ok, ControllerWrite(2, 5, "/c")]
    (v,) = inv.check_controller_writes(bad)
    assert v.invariant == inv.SINGLE_WRITER
    assert "controllers 1 and 2" in v.message and "epoch 5" in v.message and "/c" in v.message


# -- state znodes ----------------------------------------------------------------------------


def test_epochs_moving_forward_are_fine() -> None:
    writes = [
        state(0),
        state(1, controller_epoch=2, leader_epoch=1),
        state(2, controller_epoch=2, leader_epoch=1, isr=(1,)),  # ISR change: same epochs
    ]
    assert inv.check_state_writes(writes) == []


def test_a_lower_controller_epoch_on_the_same_znode_is_flagged() -> None:
    found = inv.check_state_writes([state(0, controller_epoch=3), state(1, controller_epoch=2)])
    assert names(found) == [inv.CONTROLLER_EPOCH_REGRESSED]
    assert "partitions/0/state v1" in found[0].message and "controller_epoch 2" in found[0].message


def test_a_lower_leader_epoch_is_flagged() -> None:
    found = inv.check_state_writes([state(0, leader_epoch=4), state(1, leader_epoch=3)])
    assert names(found) == [inv.LEADER_EPOCH_REGRESSED]


def test_a_recreated_znode_starts_a_new_history() -> None:
    writes = [state(3, controller_epoch=7, leader_epoch=9), state(0, czxid=99)]
    assert inv.check_state_writes(writes) == []
    checker = Checker()
    checker.observe_state_write(state(3, controller_epoch=7, leader_epoch=9))
    checker.observe_state_deleted("t", 0)
    checker.observe_state_write(state(0, czxid=10))  # same czxid after a delete: forgotten
    assert checker.ok


def test_leader_outside_isr_needs_an_unclean_election_at_that_epoch() -> None:
    outside = state(1, leader=3, leader_epoch=2, isr=(1, 2))
    assert names(inv.check_state_writes([outside])) == [inv.LEADER_OUTSIDE_ISR]
    other_epoch = UncleanElection("t", 0, 1)
    assert names(inv.check_state_writes([outside], [other_epoch])) == [inv.LEADER_OUTSIDE_ISR]
    # The record may come after the write (it is logged once the write succeeded).
    assert inv.check_state_writes([outside], [UncleanElection("t", 0, 2)]) == []
    assert inv.check_state_writes([state(1, leader=-1, isr=(1,))]) == []


def test_an_unclean_election_must_be_allowed() -> None:
    checker = Checker()
    checker.observe_unclean_election(UncleanElection("t", 0, 2))
    assert names(checker.violations()) == [inv.UNCLEAN_NOT_ALLOWED]
    assert "t-0 got an unclean leader at leader epoch 2" in checker.violations()[0].message
    # By the topic's config (any partition of that topic, from then on, even once turned off).
    checker = Checker()
    checker.observe_unclean_permission("t")
    checker.observe_unclean_election(UncleanElection("t", 1, 5))
    checker.observe_unclean_election(UncleanElection("u", 0, 1))
    assert [v.message.split()[0] for v in checker.violations()] == ["u-0"]
    # By an admin's request for that partition only.
    checker = Checker()
    checker.observe_unclean_permission("t", 0)
    checker.observe_unclean_election(UncleanElection("t", 0, 3))
    checker.observe_unclean_election(UncleanElection("t", 1, 3))
    assert [v.message.split()[0] for v in checker.violations()] == ["t-1"]
    # By the cluster setting.
    checker = Checker(unclean_default=True)
    checker.observe_unclean_election(UncleanElection("t", 0, 2))
    assert checker.ok


# -- brokers ---------------------------------------------------------------------------------


def request(epoch: int, *, accepted: bool = True, incarnation: int = 1, **kw) -> BrokerRequest:
    return BrokerRequest(1, incarnation, "LeaderAndIsr", 100, epoch, accepted, **kw)


def test_brokers_accepting_only_current_or_newer_epochs_is_fine() -> None:
    seen = [request(3), request(3), request(4), request(2, accepted=False)]
    assert inv.check_broker_requests(seen) == []


def test_accepting_an_older_controller_epoch_is_flagged() -> None:
    found = inv.check_broker_requests([request(4), request(3)])
    assert names(found) == [inv.STALE_CONTROLLER_ACCEPTED]
    assert "epoch 3 after accepting epoch 4" in found[0].message


def test_a_restarted_broker_remembers_no_epoch() -> None:
    assert inv.check_broker_requests([request(4), request(3, incarnation=2)]) == []


def test_accepting_a_request_for_an_older_broker_epoch_is_flagged() -> None:
    assert inv.check_broker_requests([request(1, broker_epoch=50, request_broker_epoch=-1)]) == []
    assert inv.check_broker_requests([request(1, broker_epoch=50, request_broker_epoch=60)]) == []
    found = inv.check_broker_requests([request(1, broker_epoch=50, request_broker_epoch=40)])
    assert names(found) == [inv.STALE_CONTROLLER_ACCEPTED]


# -- assignments -----------------------------------------------------------------------------


def snap(**partitions: PartitionAssignment | tuple[int, ...]) -> TopicSnapshot:
    return TopicSnapshot(
        "t",
        {
            int(p[1:]): v if isinstance(v, PartitionAssignment) else PartitionAssignment(v)
            for p, v in partitions.items()
        },
    )


CREATE = AssignmentRequest("create", "t", {0: (1, 2), 1: (2, 3)})


def test_requested_assignments_are_explained() -> None:
    timeline = [
        CREATE,
        snap(p0=(1, 2), p1=(2, 3)),
        AssignmentRequest("add_partitions", "t", {2: (3, 1)}),
        snap(p0=(1, 2), p1=(2, 3), p2=(3, 1)),
        AssignmentRequest("reassign", "t", {0: (3, 4)}),
        snap(p0=PartitionAssignment((3, 4, 1, 2), (3, 4), (1, 2)), p1=(2, 3), p2=(3, 1)),
        snap(p0=(3, 4), p1=(2, 3), p2=(3, 1)),
        AssignmentRequest("delete", "t"),
        TopicSnapshot("t", None),
        AssignmentRequest("create", "t", {0: (5,)}),
        snap(p0=(5,)),
    ]
    assert inv.check_assignments(timeline) == []


@pytest.mark.parametrize(
    ("timeline", "words"),
    [
        ([snap(p0=(1,))], "nobody created it"),
        ([CREATE, TopicSnapshot("t", None)], "deleted but nobody asked"),
        ([CREATE, snap(p0=(1, 2))], "partition 1 disappeared"),
        ([CREATE, snap(p0=(2, 1), p1=(2, 3))], "none of the requested assignments"),
        ([CREATE, snap(p0=(1, 2), p1=(2, 3), p2=(1,))], "nobody added it"),
        (
            [CREATE, snap(p0=PartitionAssignment((1, 2, 4), (4,), ()), p1=(2, 3))],
            "brokers nobody asked for",
        ),
        (
            [
                CREATE,
                TopicSnapshot(
                    "t", {0: PartitionAssignment((1, 2)), 1: PartitionAssignment((2, 3))}, "A"
                ),
                TopicSnapshot(
                    "t", {0: PartitionAssignment((1, 2)), 1: PartitionAssignment((2, 3))}, "B"
                ),
            ],
            "topic id changed",
        ),
    ],
    ids=["appeared", "deleted", "partition-lost", "reordered", "extra-partition", "stray", "id"],
)
def test_unrequested_changes_are_flagged(timeline: list, words: str) -> None:
    found = inv.check_assignments(timeline)
    assert names(found)[:1] == [inv.ASSIGNMENT_CHANGED], found
    assert words in found[0].message


def test_a_cancelled_reassignment_may_reorder_the_original_replicas() -> None:
    reassigning = snap(p0=PartitionAssignment((2, 3, 1), (3,), (1,)), p1=(2, 3))
    back = snap(p0=(2, 1), p1=(2, 3))  # Kafka's originalReplicas: RS minus adding, RS order
    reassign = AssignmentRequest("reassign", "t", {0: (2, 3)})
    assert names(inv.check_assignments([CREATE, reassign, reassigning, back])) == [
        inv.ASSIGNMENT_CHANGED
    ]
    cancel = AssignmentRequest("cancel", "t", {0: ()})
    assert inv.check_assignments([CREATE, reassign, reassigning, cancel, back]) == []
    other = snap(p0=(2, 4), p1=(2, 3))
    assert names(inv.check_assignments([CREATE, reassign, cancel, other])) == [
        inv.ASSIGNMENT_CHANGED
    ]


def test_partitions_reverted_during_deletion_are_explained() -> None:
    timeline = [
        CREATE,
        AssignmentRequest("delete", "t"),
        AssignmentRequest("add_partitions", "t", {2: (1,)}),
        snap(p0=(1, 2), p1=(2, 3), p2=(1,)),
        snap(p0=(1, 2), p1=(2, 3)),  # the controller restores the znode
    ]
    assert inv.check_assignments(timeline) == []


# -- liveness --------------------------------------------------------------------------------


def test_leaderless_partitions_with_a_live_isr_member() -> None:
    views = {
        ("t", 0): PartitionView(1, (1, 2)),  # fine
        ("t", 1): PartitionView(-1, (3,)),  # offline, ISR member dead: fine (clean)
        ("t", 2): PartitionView(-1, (3, 2)),  # 2 is live: violation
        ("t", 3): PartitionView(3, (3, 1)),  # leader dead, 1 live: violation
        ("gone", 0): PartitionView(-1, (1,)),  # excluded (being deleted)
    }
    found = inv.leaderless_partitions(views, {1, 2}, excluded_topics={"gone"})
    assert [v.message.split(":")[0] for v in found] == ["t-2", "t-3"]
    assert "leader 3 is down" in found[1].message


def test_only_isr_members_that_are_replicas_count_for_liveness() -> None:
    # A cancelled reassignment can leave the ISR holding only a replica that was being added:
    # it cannot be elected, and Kafka keeps the partition offline.
    stranded = {("t", 0): PartitionView(-1, (1,), replicas=(2, 3))}
    assert inv.leaderless_partitions(stranded, {1, 2, 3}) == []
    electable = {("t", 0): PartitionView(-1, (1, 2), replicas=(2, 3))}
    assert len(inv.leaderless_partitions(electable, {1, 2, 3})) == 1


def test_recovery_is_only_required_after_the_deadline() -> None:
    bad = {("t", 0): PartitionView(-1, (1,))}
    good = {("t", 0): PartitionView(1, (1,))}
    deadline = inv.recovery_deadline(faults_stopped_at=100.0, session_timeout_s=6.0)
    assert deadline == 111.0
    samples = [
        LivenessSample(105.0, bad, frozenset({1})),
        LivenessSample(112.0, good, frozenset({1})),
    ]
    assert inv.check_recovery(samples, deadline) == []
    late = [
        *samples,
        LivenessSample(113.0, bad, frozenset({1})),
        LivenessSample(114.0, bad, frozenset({1})),
    ]
    (v,) = inv.check_recovery(late, deadline)
    assert v.invariant == inv.LEADERLESS and "t=113.0s" in v.message


# -- producer-id blocks ----------------------------------------------------------------------


def test_producer_id_blocks_that_follow_each_other_are_fine() -> None:
    checker = Checker()
    checker.observe_producer_id_block(1, 0, 999)
    checker.observe_producer_id_block(2, 2000, 2999)  # a gap (a lost answer) is fine
    checker.observe_producer_id_block(1, 1000, 1999)
    assert checker.violations() == []


@pytest.mark.parametrize(("start", "end"), [(0, 999), (500, 1499), (999, 999), (-10, 0)])
def test_overlapping_producer_id_blocks_are_flagged(start: int, end: int) -> None:
    checker = Checker()
    checker.observe_producer_id_block(1, 0, 999)
    checker.observe_producer_id_block(2, start, end)
    assert names(checker.violations()) == ["producer-id-blocks-overlap"]
    assert "given to broker 1" in checker.violations()[0].message
