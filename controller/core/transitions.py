"""Valid state transitions of the partition and replica state machines (spec 3.2, 3.4).

Kafka attaches ``validPreviousStates`` to each state object; here they are two tables keyed
by target state. The tuples keep Kafka's declaration order because Kafka's invalid-transition
message prints them with ``mkString(",")`` in that order (small Scala sets iterate in insertion
order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from controller.core.model import (
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
    TopicPartition,
)

K = TypeVar("K")

_P = PartitionState
_R = ReplicaState

PARTITION_VALID_PREVIOUS_STATES: Mapping[PartitionState, tuple[PartitionState, ...]] = {
    _P.NewPartition: (_P.NonExistentPartition,),
    _P.OnlinePartition: (_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition),
    _P.OfflinePartition: (_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition),
    _P.NonExistentPartition: (_P.OfflinePartition,),
}

REPLICA_VALID_PREVIOUS_STATES: Mapping[ReplicaState, tuple[ReplicaState, ...]] = {
    _R.NewReplica: (_R.NonExistentReplica,),
    _R.OnlineReplica: (
        _R.NewReplica,
        _R.OnlineReplica,
        _R.OfflineReplica,
        _R.ReplicaDeletionIneligible,
    ),
    _R.OfflineReplica: (
        _R.NewReplica,
        _R.OnlineReplica,
        _R.OfflineReplica,
        _R.ReplicaDeletionIneligible,
    ),
    _R.ReplicaDeletionStarted: (_R.OfflineReplica,),
    _R.ReplicaDeletionSuccessful: (_R.ReplicaDeletionStarted,),
    _R.ReplicaDeletionIneligible: (_R.OfflineReplica, _R.ReplicaDeletionStarted),
    _R.NonExistentReplica: (_R.ReplicaDeletionSuccessful,),
}

# Set forms for the hot path (checked once per partition/replica per state change).
_PARTITION_ALLOWED = {t: frozenset(s) for t, s in PARTITION_VALID_PREVIOUS_STATES.items()}
_REPLICA_ALLOWED = {t: frozenset(s) for t, s in REPLICA_VALID_PREVIOUS_STATES.items()}


def is_valid_partition_transition(current: PartitionState, target: PartitionState) -> bool:
    return current in _PARTITION_ALLOWED[target]


def is_valid_replica_transition(current: ReplicaState, target: ReplicaState) -> bool:
    return current in _REPLICA_ALLOWED[target]


def check_valid_partition_transitions(
    states: Iterable[tuple[K, PartitionState]], target: PartitionState
) -> tuple[list[K], list[K]]:
    """Split ``(key, current_state)`` pairs into (valid, invalid) keys, keeping input order."""
    allowed = _PARTITION_ALLOWED[target]
    valid: list[K] = []
    invalid: list[K] = []
    for key, current in states:
        (valid if current in allowed else invalid).append(key)
    return valid, invalid


def check_valid_replica_transitions(
    states: Iterable[tuple[K, ReplicaState]], target: ReplicaState
) -> tuple[list[K], list[K]]:
    """Split ``(key, current_state)`` pairs into (valid, invalid) keys, keeping input order."""
    allowed = _REPLICA_ALLOWED[target]
    valid: list[K] = []
    invalid: list[K] = []
    for key, current in states:
        (valid if current in allowed else invalid).append(key)
    return valid, invalid


# --------------------------------------------------------------------------------------------
# Kafka's log text for invalid and failed transitions. ``.name`` is used because ``str()`` of
# an IntEnum member is its number on Python 3.11+.
# --------------------------------------------------------------------------------------------


def invalid_partition_transition_message(
    tp: TopicPartition, current: PartitionState, target: PartitionState
) -> str:
    """The IllegalStateException message of ``PartitionStateMachine.logInvalidTransition``."""
    allowed = ",".join(s.name for s in PARTITION_VALID_PREVIOUS_STATES[target])
    return (
        f"Partition {tp} should be in one of {allowed} states before moving to "
        f"{target.name} state. Instead it is in {current.name} state"
    )


def invalid_replica_transition_message(
    replica: PartitionAndReplica, current: ReplicaState, target: ReplicaState
) -> str:
    """The IllegalStateException message of ``ReplicaStateMachine.logInvalidTransition``."""
    allowed = ",".join(s.name for s in REPLICA_VALID_PREVIOUS_STATES[target])
    return (
        f"Replica {replica} should be in the {allowed} states before moving to "
        f"{target.name} state. Instead it is in {current.name} state"
    )


def failed_partition_state_change_message(
    controller_id: int,
    controller_epoch: int,
    tp: TopicPartition,
    current: PartitionState,
    target: PartitionState,
) -> str:
    """The state-change-log error line that precedes the exception (``logFailedStateChange``)."""
    return (
        f"Controller {controller_id} epoch {controller_epoch} failed to change state for "
        f"partition {tp} from {current.name} to {target.name}"
    )


def failed_replica_state_change_message(
    controller_id: int,
    controller_epoch: int,
    replica: PartitionAndReplica,
    current: ReplicaState,
    target: ReplicaState,
) -> str:
    """The state-change-log error line that precedes the exception (``logFailedStateChange``)."""
    return (
        f"Controller {controller_id} epoch {controller_epoch} initiated state change of "
        f"replica {replica.replica} for partition {replica.tp} from {current.name} to "
        f"{target.name} failed"
    )
