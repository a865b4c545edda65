"""Election algorithms and strategy wrappers (spec 3.3, catalogue 6.1).

The first block ports Kafka's ``PartitionLeaderElectionAlgorithmsTest`` one to one; the unclean
meter of the original is the ``was_unclean`` flag here. Then the wrappers of ``Election.scala``
against the "How each strategy wraps its algorithm" table, and property tests.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core.election import (
    CONTROLLED_SHUTDOWN_STRATEGY,
    PREFERRED_STRATEGY,
    REASSIGN_STRATEGY,
    ControlledShutdownPartitionLeaderElectionStrategy,
    ElectionResult,
    OfflinePartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy,
    ReassignPartitionLeaderElectionStrategy,
    controlled_shutdown_partition_leader_election,
    election_kind,
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred,
    leader_for_reassign,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)
from controller.core.model import (
    LeaderAndIsr,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)

TP = TopicPartition("t", 0)

# --------------------------------------------------------------------------------------------
# 6.1 PartitionLeaderElectionAlgorithmsTest (13 tests)
# --------------------------------------------------------------------------------------------


def test_offline_partition_leader_election() -> None:
    assert offline_partition_leader_election([2, 4], [2, 4], {4}, False) == (4, False)


def test_offline_partition_leader_election_last_isr_offline_unclean_leader_election_disabled() -> (
    None
):
    leader, unclean = offline_partition_leader_election([2, 4], [2], {4}, False)
    assert leader is None
    assert unclean is False  # meter count 0


def test_offline_partition_leader_election_last_isr_offline_unclean_leader_election_enabled() -> (
    None
):
    leader, unclean = offline_partition_leader_election([2, 4], [2], {4}, True)
    assert leader == 4
    assert unclean is True  # meter count 1


def test_reassign_partition_leader_election() -> None:
    assert reassign_partition_leader_election([2, 4], [2, 4], {4}) == 4


def test_reassign_partition_leader_election_with_no_live_isr() -> None:
    assert reassign_partition_leader_election([2, 4], [2], set()) is None


def test_reassign_partition_leader_election_with_empty_isr() -> None:
    assert reassign_partition_leader_election([2, 4], [], {2}) is None


def test_preferred_replica_partition_leader_election() -> None:
    assert preferred_replica_partition_leader_election([2, 4], [2, 4], {2, 4}) == 2


def test_preferred_replica_partition_leader_election_preferred_replica_in_isr_not_live() -> None:
    assert preferred_replica_partition_leader_election([2, 4], [2], set()) is None


def test_preferred_replica_partition_leader_election_preferred_replica_not_in_isr_live() -> None:
    # No fallback to 4, although 4 is live and in the ISR.
    assert preferred_replica_partition_leader_election([2, 4], [4], {2, 4}) is None


def test_preferred_replica_partition_leader_election_preferred_replica_not_in_isr_not_live() -> (
    None
):
    assert preferred_replica_partition_leader_election([2, 4], [], set()) is None


def test_controlled_shutdown_partition_leader_election() -> None:
    assert controlled_shutdown_partition_leader_election([2, 4], [2, 4], {2, 4}, {2}) == 4


def test_controlled_shutdown_partition_leader_election_last_isr_shutting_down() -> None:
    assert controlled_shutdown_partition_leader_election([2, 4], [2], {2, 4}, {2}) is None


def test_controlled_shutdown_partition_leader_election_all_isr_simultaneously_shutdown() -> None:
    assert controlled_shutdown_partition_leader_election([2, 4], [2, 4], {2, 4}, {2, 4}) is None


# --------------------------------------------------------------------------------------------
# Algorithm details beyond the catalogue
# --------------------------------------------------------------------------------------------


def test_offline_election_follows_assignment_order_not_isr_order() -> None:
    assert offline_partition_leader_election([3, 1, 2], [1, 2, 3], {1, 2, 3}, False) == (3, False)


def test_offline_election_prefers_clean_leader_even_when_unclean_enabled() -> None:
    # 2 is first in RS and live but not in the ISR; the clean candidate 4 wins.
    assert offline_partition_leader_election([2, 4], [4], {2, 4}, True) == (4, False)


def test_offline_unclean_with_no_live_replica_is_not_counted() -> None:
    assert offline_partition_leader_election([2, 4], [2], set(), True) == (None, False)


def test_preferred_election_with_empty_assignment() -> None:
    assert preferred_replica_partition_leader_election([], [1], {1}) is None


def test_reassign_election_uses_target_order() -> None:
    assert reassign_partition_leader_election([5, 4], [4, 5], {4, 5}) == 5


# --------------------------------------------------------------------------------------------
# Strategy wrappers (Election.scala)
# --------------------------------------------------------------------------------------------


def test_offline_wrapper_clean_filters_isr_to_online_and_bumps_epoch() -> None:
    # Leader 1 died, 3 is shutting down (not online); 2 is the first online ISR member.
    old = LeaderAndIsr(1, leader_epoch=7, isr=(1, 2, 3), partition_epoch=11)
    result = leader_for_offline(TP, [1, 2, 3], old, {2}, allow_unclean=False)
    assert result == ElectionResult(
        TP, LeaderAndIsr(2, leader_epoch=8, isr=(2,), partition_epoch=11), (2,), False
    )


def test_offline_wrapper_keeps_online_isr_members_outside_rs() -> None:
    # Kafka filters the ISR by isReplicaOnline, not by RS membership.
    old = LeaderAndIsr(1, isr=(1, 2, 9))
    result = leader_for_offline(TP, [1, 2], old, {2, 9}, allow_unclean=False)
    assert result.leader_and_isr is not None
    assert result.leader_and_isr.isr == (2, 9)
    assert result.recipients == (2,)


def test_offline_to_online_partition_transition_shape() -> None:
    # 6.2 #14: live {5}, RS [5], ZK (leader -1, isr [5]) -> (5, epoch 1, isr [5]) to [5].
    result = leader_for_offline(TP, [5], LeaderAndIsr(-1, 0, (5,)), {5}, allow_unclean=False)
    assert result.leader_and_isr == LeaderAndIsr(5, 1, (5,))
    assert result.recipients == (5,)
    assert not result.unclean


@pytest.mark.parametrize("recovery_supported", [True, False])
def test_offline_to_unclean_online_partition_transition(recovery_supported: bool) -> None:
    # 6.2 #15: live {5}, RS [6,5], ZK (leader 6, isr [6]), allowUnclean.
    old = LeaderAndIsr(6, 0, (6,))
    result = leader_for_offline(TP, [6, 5], old, {5}, True, recovery_supported)
    expected_state = (
        LeaderRecoveryState.RECOVERING if recovery_supported else LeaderRecoveryState.RECOVERED
    )
    assert result.leader_and_isr == LeaderAndIsr(5, 1, (5,), expected_state)
    assert result.recipients == (5,)
    assert result.unclean


def test_offline_wrapper_unclean_without_recovery_support_keeps_old_recovery_state() -> None:
    old = LeaderAndIsr(6, 3, (6,), LeaderRecoveryState.RECOVERING)
    result = leader_for_offline(TP, [6, 5], old, {5}, True, leader_recovery_supported=False)
    assert result.leader_and_isr is not None
    assert result.leader_and_isr.leader_recovery_state is LeaderRecoveryState.RECOVERING


def test_offline_wrapper_clean_keeps_recovering_state() -> None:
    old = LeaderAndIsr(6, 3, (6, 5), LeaderRecoveryState.RECOVERING)
    result = leader_for_offline(TP, [6, 5], old, {5}, allow_unclean=False)
    assert result.leader_and_isr is not None
    assert result.leader_and_isr.leader_recovery_state is LeaderRecoveryState.RECOVERING


def test_offline_wrapper_without_leader_and_isr_fails_with_live_recipients() -> None:
    assert leader_for_offline(TP, [1, 2, 3], None, {3, 1}, True) == ElectionResult(
        TP, None, (1, 3), False
    )


def test_offline_wrapper_no_candidate() -> None:
    old = LeaderAndIsr(1, 4, (1,))
    result = leader_for_offline(TP, [1, 2], old, {2}, allow_unclean=False)
    assert result == ElectionResult(TP, None, (2,), False)
    assert not result.succeeded


def test_reassign_wrapper_elects_from_target_and_sends_to_all_target_replicas() -> None:
    # 2.7.4 step B3: RS [4,5,6,1,2,3], TRS [4,5,6]; 4 is dead, so 5 leads. ISR is untouched.
    assignment = ReplicaAssignment.of([4, 5, 6, 1, 2, 3], [4, 5, 6], [1, 2, 3])
    old = LeaderAndIsr(1, 9, (1, 2, 3, 4, 5, 6), partition_epoch=4)
    result = leader_for_reassign(TP, assignment, old, {1, 2, 3, 5, 6})
    assert result == ElectionResult(TP, old.new_leader(5), (4, 5, 6), False)
    assert result.leader_and_isr == LeaderAndIsr(5, 10, (1, 2, 3, 4, 5, 6), partition_epoch=4)


def test_reassign_wrapper_failure_still_names_target_replicas() -> None:
    assignment = ReplicaAssignment.of([4, 1], [4], [1])
    result = leader_for_reassign(TP, assignment, LeaderAndIsr(1, 0, (1,)), {1, 4})
    assert result == ElectionResult(TP, None, (4,), False)


def test_online_partition_to_online_transition_preferred_shape() -> None:
    # 6.2 #9: RS [5], (5,[5]) at v0, strategy Preferred -> newLeader(5): epoch 1, pe 0.
    result = leader_for_preferred(TP, [5], LeaderAndIsr(5, 0, (5,)), {5})
    assert result == ElectionResult(TP, LeaderAndIsr(5, 1, (5,), partition_epoch=0), (5,))


def test_preferred_wrapper_sends_to_all_rs_even_dead_ones() -> None:
    old = LeaderAndIsr(2, 3, (1, 2))
    result = leader_for_preferred(TP, [1, 2, 3], old, {1, 2})
    assert result == ElectionResult(TP, LeaderAndIsr(1, 4, (1, 2)), (1, 2, 3))


def test_preferred_wrapper_no_fallback() -> None:
    result = leader_for_preferred(TP, [1, 2, 3], LeaderAndIsr(2, 3, (2, 3)), {1, 2, 3})
    assert result == ElectionResult(TP, None, (1, 2, 3))


def test_online_partition_to_online_transition_for_controlled_shutdown_shape() -> None:
    # 6.2 #10: live {5,6}, shutting down {5}, RS [5,6], leader 5 isr [5,6].
    old = LeaderAndIsr(5, 0, (5, 6))
    result = leader_for_controlled_shutdown(TP, [5, 6], old, {5, 6}, {5})
    assert result.leader_and_isr == LeaderAndIsr(6, 1, (6,))
    assert result.recipients == (5, 6)  # the shutting-down broker hears about it too


def test_controlled_shutdown_wrapper_drops_all_shutting_down_brokers_from_isr() -> None:
    old = LeaderAndIsr(1, 2, (1, 2, 3))
    result = leader_for_controlled_shutdown(TP, [1, 2, 3], old, {1, 2, 3}, {1, 3})
    assert result.leader_and_isr == LeaderAndIsr(2, 3, (2,))


def test_controlled_shutdown_wrapper_failure_keeps_live_or_shutting_down_recipients() -> None:
    old = LeaderAndIsr(1, 2, (1,))
    result = leader_for_controlled_shutdown(TP, [1, 2, 3], old, {1, 2}, {1})
    assert result == ElectionResult(TP, None, (1, 2))


# --------------------------------------------------------------------------------------------
# Strategy descriptions
# --------------------------------------------------------------------------------------------


def test_election_kinds() -> None:
    assert election_kind(OfflinePartitionLeaderElectionStrategy(False)) == "offline"
    assert election_kind(OfflinePartitionLeaderElectionStrategy(True)) == "offline"
    assert election_kind(OfflinePartitionLeaderElectionStrategy(True), True) == "offline_unclean"
    assert election_kind(REASSIGN_STRATEGY) == "reassign"
    assert election_kind(PREFERRED_STRATEGY) == "preferred"
    assert election_kind(CONTROLLED_SHUTDOWN_STRATEGY) == "controlled_shutdown"
    assert election_kind(CONTROLLED_SHUTDOWN_STRATEGY, True) == "controlled_shutdown"
    with pytest.raises(TypeError):
        election_kind("offline", False)  # type: ignore[arg-type]


def test_strategies_are_value_objects() -> None:
    assert OfflinePartitionLeaderElectionStrategy(True) == OfflinePartitionLeaderElectionStrategy(
        True
    )
    assert OfflinePartitionLeaderElectionStrategy(True) != OfflinePartitionLeaderElectionStrategy()
    assert ReassignPartitionLeaderElectionStrategy() == REASSIGN_STRATEGY
    assert PreferredReplicaPartitionLeaderElectionStrategy() == PREFERRED_STRATEGY
    assert ControlledShutdownPartitionLeaderElectionStrategy() == CONTROLLED_SHUTDOWN_STRATEGY
    assert len({REASSIGN_STRATEGY, PREFERRED_STRATEGY, CONTROLLED_SHUTDOWN_STRATEGY}) == 3


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------

brokers = st.integers(min_value=0, max_value=9)
assignments = st.lists(brokers, unique=True, max_size=6)
broker_sets = st.sets(brokers, max_size=10)
isrs = st.lists(brokers, unique=True, max_size=6)


@given(assignments, isrs, broker_sets, st.booleans())
def test_offline_election_properties(
    assignment: list[int], isr: list[int], live: set[int], unclean_enabled: bool
) -> None:
    leader, was_unclean = offline_partition_leader_election(assignment, isr, live, unclean_enabled)
    candidates = [r for r in assignment if r in live]
    clean = [r for r in candidates if r in isr]
    if leader is None:
        assert not clean
        assert not (unclean_enabled and candidates)
        assert not was_unclean
        return
    # A member of assignment ∩ live, and the first such in assignment order among its class.
    assert leader in assignment and leader in live
    if clean:
        assert (leader, was_unclean) == (clean[0], False)
    else:
        assert unclean_enabled and was_unclean
        assert leader == candidates[0]
    # Never a non-ISR member unless unclean.
    assert (leader in isr) or was_unclean


@given(assignments, isrs, broker_sets, broker_sets)
def test_controlled_shutdown_never_elects_a_shutting_down_broker(
    assignment: list[int], isr: list[int], live: set[int], shutting_down: set[int]
) -> None:
    leader = controlled_shutdown_partition_leader_election(assignment, isr, live, shutting_down)
    eligible = [r for r in assignment if r in live and r in isr and r not in shutting_down]
    assert leader == (eligible[0] if eligible else None)


@given(assignments, isrs, broker_sets)
def test_preferred_election_only_ever_returns_the_head(
    assignment: list[int], isr: list[int], live: set[int]
) -> None:
    leader = preferred_replica_partition_leader_election(assignment, isr, live)
    assert leader is None or (leader == assignment[0] and leader in isr and leader in live)
    if assignment and assignment[0] in isr and assignment[0] in live:
        assert leader == assignment[0]


@given(assignments, isrs, broker_sets, st.booleans(), st.booleans(), st.integers(0, 100))
def test_offline_wrapper_properties(
    assignment: list[int],
    isr: list[int],
    online: set[int],
    allow_unclean: bool,
    recovery: bool,
    epoch: int,
) -> None:
    old = LeaderAndIsr(-1, epoch, tuple(isr), partition_epoch=epoch + 3)
    result = leader_for_offline(TP, assignment, old, online, allow_unclean, recovery)
    assert result.recipients == tuple(r for r in assignment if r in online)
    new = result.leader_and_isr
    if new is None:
        return
    assert new.leader_epoch == epoch + 1
    assert new.partition_epoch == old.partition_epoch  # written conditionally on the read
    assert new.leader in result.recipients
    assert all(r in online for r in new.isr)
    assert new.leader in new.isr
    if result.unclean:
        assert new.isr == (new.leader,)
        assert allow_unclean


@given(assignments, isrs, broker_sets, broker_sets)
def test_controlled_shutdown_wrapper_properties(
    assignment: list[int], isr: list[int], online: set[int], shutting_down: set[int]
) -> None:
    old = LeaderAndIsr(-1, 5, tuple(isr))
    result = leader_for_controlled_shutdown(TP, assignment, old, online, shutting_down)
    assert result.recipients == tuple(r for r in assignment if r in online)
    if result.leader_and_isr is not None:
        assert result.leader_and_isr.leader not in shutting_down
        assert not set(result.leader_and_isr.isr) & shutting_down
        assert result.leader_and_isr.leader_epoch == 6
