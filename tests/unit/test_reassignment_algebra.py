"""``ReplicaAssignment`` algebra (spec 2.7.1).

Holds the three algebra tests of Kafka's ``ControllerContextTest`` (catalogue 6.5 #6-#8), the
2.7.1 example table, and property tests of ``reassign_to`` / ``remove_replica``.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core.model import ReplicaAssignment

RA = ReplicaAssignment.of


# 6.5 #6
def test_partition_replica_assignment() -> None:
    reassigning = RA([1, 2, 3, 4, 5, 6], [2, 3, 4], [1, 5, 6])
    assert reassigning.is_being_reassigned
    assert reassigning.target_replicas == (2, 3, 4)

    reassigning2 = RA([1, 2, 3, 4], [], [1, 4])
    assert reassigning2.is_being_reassigned
    assert reassigning2.target_replicas == (2, 3)

    reassigning3 = RA([1, 2, 3, 4], [4], [2])
    assert reassigning3.is_being_reassigned
    assert reassigning3.target_replicas == (1, 3, 4)

    partition = RA([1, 2, 3, 4, 5, 6])
    assert not partition.is_being_reassigned
    assert partition.target_replicas == (1, 2, 3, 4, 5, 6)

    reassigning4 = RA([1, 2, 3, 4]).reassign_to([4, 2, 5, 3])
    assert reassigning4.replicas == (4, 2, 5, 3, 1)
    assert reassigning4.target_replicas == (4, 2, 5, 3)
    assert reassigning4.adding_replicas == (5,)
    assert reassigning4.removing_replicas == (1,)
    assert reassigning4.is_being_reassigned

    reassigning5 = RA([1, 2, 3]).reassign_to([4, 5, 6])
    assert reassigning5.replicas == (4, 5, 6, 1, 2, 3)
    assert reassigning5.target_replicas == (4, 5, 6)
    assert reassigning5.adding_replicas == (4, 5, 6)
    assert reassigning5.removing_replicas == (1, 2, 3)
    assert reassigning5.is_being_reassigned

    non_reassigning = RA([1, 2, 3]).reassign_to([3, 1, 2])
    assert non_reassigning.replicas == (3, 1, 2)
    assert non_reassigning.target_replicas == (3, 1, 2)
    assert non_reassigning.adding_replicas == ()
    assert non_reassigning.removing_replicas == ()
    assert not non_reassigning.is_being_reassigned


# 6.5 #7
def test_reassign_to_idempotence() -> None:
    for a in (
        RA([1, 2, 3]),
        RA([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3]),
        RA([4, 2, 3, 1], [4], [1]),
    ):
        assert a.reassign_to(a.target_replicas) == a


# 6.5 #8
def test_reassign_to() -> None:
    assignment = RA([1, 2, 3])
    first = assignment.reassign_to([4, 5, 6])
    assert first == RA([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3])
    assert first.reassign_to([7, 8, 9]) == RA([7, 8, 9, 1, 2, 3], [7, 8, 9], [1, 2, 3])
    assert assignment.reassign_to([7, 8, 9]) == RA([7, 8, 9, 1, 2, 3], [7, 8, 9], [1, 2, 3])
    assert first.reassign_to([1, 2, 3]) == assignment


STARTED = RA([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3])


@pytest.mark.parametrize(
    ("start", "target", "expected"),
    [
        (RA([1, 2, 3, 4]), [4, 2, 5, 3], RA([4, 2, 5, 3, 1], [5], [1])),
        (RA([1, 2, 3]), [4, 5, 6], RA([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3])),
        (RA([1, 2, 3]), [3, 1, 2], RA([3, 1, 2])),
        (STARTED, [7, 8, 9], RA([7, 8, 9, 1, 2, 3], [7, 8, 9], [1, 2, 3])),
        (STARTED, [1, 2, 3], RA([1, 2, 3])),
    ],
)
def test_spec_2_7_1_examples(
    start: ReplicaAssignment, target: list[int], expected: ReplicaAssignment
) -> None:
    assert start.reassign_to(target) == expected


def test_origin_and_target() -> None:
    assert STARTED.origin_replicas == (1, 2, 3)
    assert STARTED.target_replicas == (4, 5, 6)


def test_remove_replica_from_all_three_lists() -> None:
    assert STARTED.remove_replica(4) == RA([5, 6, 1, 2, 3], [5, 6], [1, 2, 3])
    assert STARTED.remove_replica(1) == RA([4, 5, 6, 2, 3], [4, 5, 6], [2, 3])
    assert STARTED.remove_replica(99) == STARTED


def test_str_matches_kafka() -> None:
    assert str(RA([1, 2], [2], [])) == (
        "ReplicaAssignment(replicas=1,2, addingReplicas=2, removingReplicas=)"
    )


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

replica_lists = st.lists(st.integers(0, 12), unique=True, min_size=1, max_size=6)


@st.composite
def assignments(draw: st.DrawFn) -> ReplicaAssignment:
    """A plain assignment, or one produced by a (possibly repeated) reassignment."""
    a = RA(draw(replica_lists))
    for target in draw(st.lists(replica_lists, max_size=3)):
        a = a.reassign_to(target)
    return a


@given(assignments())
def test_reassign_to_own_target_is_identity(a: ReplicaAssignment) -> None:
    assert a.reassign_to(a.target_replicas) == a


@given(assignments(), replica_lists)
def test_reassign_to_invariants(a: ReplicaAssignment, target: list[int]) -> None:
    r = a.reassign_to(target)
    assert r.target_replicas == tuple(target)
    # The origin survives re-reassignment as a set; its order follows the new RS.
    assert set(r.origin_replicas) == set(a.origin_replicas)
    assert r.replicas[: len(target)] == tuple(target)
    assert len(set(r.replicas)) == len(r.replicas)
    assert set(r.replicas) == set(target) | set(a.origin_replicas)
    assert set(r.adding_replicas) == set(target) - set(a.origin_replicas)
    assert set(r.removing_replicas) == set(a.origin_replicas) - set(target)
    assert r.is_being_reassigned == (set(target) != set(a.origin_replicas))


@given(assignments(), replica_lists)
def test_cancel_returns_to_origin(a: ReplicaAssignment, target: list[int]) -> None:
    origin = a.origin_replicas
    assert a.reassign_to(target).reassign_to(origin) == RA(origin)


@given(assignments(), st.integers(0, 12))
def test_remove_replica(a: ReplicaAssignment, replica: int) -> None:
    r = a.remove_replica(replica)
    for before, after in (
        (a.replicas, r.replicas),
        (a.adding_replicas, r.adding_replicas),
        (a.removing_replicas, r.removing_replicas),
    ):
        assert after == tuple(x for x in before if x != replica)
