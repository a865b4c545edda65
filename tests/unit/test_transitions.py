"""Partition and replica transition tables (spec 3.2, 3.4), checked for every from x to pair.

The expected tables are written out independently of the module (as sets of allowed pairs),
so a typo in either copy shows up.
"""

from __future__ import annotations

import itertools

import pytest

from controller.core.model import PartitionAndReplica, PartitionState, ReplicaState, TopicPartition
from controller.core.transitions import (
    PARTITION_VALID_PREVIOUS_STATES,
    REPLICA_VALID_PREVIOUS_STATES,
    check_valid_partition_transitions,
    check_valid_replica_transitions,
    failed_partition_state_change_message,
    failed_replica_state_change_message,
    invalid_partition_transition_message,
    invalid_replica_transition_message,
    is_valid_partition_transition,
    is_valid_replica_transition,
)

P = PartitionState
R = ReplicaState

# (from, to) pairs that are allowed; every other pair is invalid.
ALLOWED_PARTITION = {
    (P.NonExistentPartition, P.NewPartition),
    (P.NewPartition, P.OnlinePartition),
    (P.OnlinePartition, P.OnlinePartition),
    (P.OfflinePartition, P.OnlinePartition),
    (P.NewPartition, P.OfflinePartition),
    (P.OnlinePartition, P.OfflinePartition),
    (P.OfflinePartition, P.OfflinePartition),
    (P.OfflinePartition, P.NonExistentPartition),
}

ALLOWED_REPLICA = {
    (R.NonExistentReplica, R.NewReplica),
    (R.NewReplica, R.OnlineReplica),
    (R.OnlineReplica, R.OnlineReplica),
    (R.OfflineReplica, R.OnlineReplica),
    (R.ReplicaDeletionIneligible, R.OnlineReplica),
    (R.NewReplica, R.OfflineReplica),
    (R.OnlineReplica, R.OfflineReplica),
    (R.OfflineReplica, R.OfflineReplica),
    (R.ReplicaDeletionIneligible, R.OfflineReplica),
    (R.OfflineReplica, R.ReplicaDeletionStarted),
    (R.ReplicaDeletionStarted, R.ReplicaDeletionSuccessful),
    (R.OfflineReplica, R.ReplicaDeletionIneligible),
    (R.ReplicaDeletionStarted, R.ReplicaDeletionIneligible),
    (R.ReplicaDeletionSuccessful, R.NonExistentReplica),
}


@pytest.mark.parametrize(
    ("current", "target"),
    list(itertools.product(PartitionState, PartitionState)),
    ids=lambda s: s.name,
)
def test_partition_transition(current: PartitionState, target: PartitionState) -> None:
    expected = (current, target) in ALLOWED_PARTITION
    assert is_valid_partition_transition(current, target) is expected
    assert (current in PARTITION_VALID_PREVIOUS_STATES[target]) is expected


@pytest.mark.parametrize(
    ("current", "target"),
    list(itertools.product(ReplicaState, ReplicaState)),
    ids=lambda s: s.name,
)
def test_replica_transition(current: ReplicaState, target: ReplicaState) -> None:
    expected = (current, target) in ALLOWED_REPLICA
    assert is_valid_replica_transition(current, target) is expected
    assert (current in REPLICA_VALID_PREVIOUS_STATES[target]) is expected


def test_tables_cover_every_target_and_kafka_byte_codes() -> None:
    assert set(PARTITION_VALID_PREVIOUS_STATES) == set(PartitionState)
    assert set(REPLICA_VALID_PREVIOUS_STATES) == set(ReplicaState)
    assert [int(s) for s in PartitionState] == [0, 1, 2, 3]
    assert [int(s) for s in ReplicaState] == [1, 2, 3, 4, 5, 6, 7]


def test_valid_previous_states_keep_kafka_declaration_order() -> None:
    # The order is visible in the invalid-transition log line.
    assert PARTITION_VALID_PREVIOUS_STATES[P.OnlinePartition] == (
        P.NewPartition,
        P.OnlinePartition,
        P.OfflinePartition,
    )
    assert REPLICA_VALID_PREVIOUS_STATES[R.OfflineReplica] == (
        R.NewReplica,
        R.OnlineReplica,
        R.OfflineReplica,
        R.ReplicaDeletionIneligible,
    )
    assert REPLICA_VALID_PREVIOUS_STATES[R.ReplicaDeletionIneligible] == (
        R.OfflineReplica,
        R.ReplicaDeletionStarted,
    )


def test_check_valid_partition_transitions_splits_in_input_order() -> None:
    states = [
        ("a", P.NewPartition),
        ("b", P.NonExistentPartition),
        ("c", P.OfflinePartition),
        ("d", P.OnlinePartition),
        ("e", P.NonExistentPartition),
    ]
    assert check_valid_partition_transitions(states, P.OnlinePartition) == (
        ["a", "c", "d"],
        ["b", "e"],
    )
    assert check_valid_partition_transitions(states, P.NewPartition) == (
        ["b", "e"],
        ["a", "c", "d"],
    )
    assert check_valid_partition_transitions([], P.NewPartition) == ([], [])


def test_check_valid_replica_transitions_splits_in_input_order() -> None:
    r = [PartitionAndReplica(TopicPartition("t", 0), b) for b in range(4)]
    states = [
        (r[0], R.ReplicaDeletionStarted),
        (r[1], R.OfflineReplica),
        (r[2], R.OnlineReplica),
        (r[3], R.ReplicaDeletionStarted),
    ]
    assert check_valid_replica_transitions(states, R.ReplicaDeletionIneligible) == (
        [r[0], r[1], r[3]],
        [r[2]],
    )


def test_invalid_partition_transition_message() -> None:
    msg = invalid_partition_transition_message(
        TopicPartition("t", 0), P.NonExistentPartition, P.OnlinePartition
    )
    assert msg == (
        "Partition t-0 should be in one of NewPartition,OnlinePartition,OfflinePartition states "
        "before moving to OnlinePartition state. Instead it is in NonExistentPartition state"
    )


def test_invalid_replica_transition_message() -> None:
    replica = PartitionAndReplica(TopicPartition("t", 0), 5)
    msg = invalid_replica_transition_message(replica, R.OnlineReplica, R.ReplicaDeletionStarted)
    assert msg == (
        "Replica [Topic=t,Partition=0,Replica=5] should be in the OfflineReplica states before "
        "moving to ReplicaDeletionStarted state. Instead it is in OnlineReplica state"
    )


def test_failed_state_change_messages() -> None:
    tp = TopicPartition("t", 0)
    assert failed_partition_state_change_message(5, 50, tp, P.NewPartition, P.OnlinePartition) == (
        "Controller 5 epoch 50 failed to change state for partition t-0 "
        "from NewPartition to OnlinePartition"
    )
    replica = PartitionAndReplica(tp, 5)
    assert failed_replica_state_change_message(
        5, 50, replica, R.OnlineReplica, R.OfflineReplica
    ) == (
        "Controller 5 epoch 50 initiated state change of replica 5 for partition t-0 "
        "from OnlineReplica to OfflineReplica failed"
    )
