"""Reassignment rules over plain data (KIP-455, reference §2.7): which API targets are
valid, and which assignment a request or a cancellation moves a partition to."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from controller.api.errors import ApiError, Errors
from controller.core.model import ReplicaAssignment


def validate_replicas(
    current: ReplicaAssignment, target: Sequence[int], live_broker_ids: Iterable[int]
) -> ApiError | None:
    """Kafka's ``validateReplicas`` for an API target (the ZooKeeper path does not check)."""
    if not target:
        return ApiError(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "Empty replica list specified in partition reassignment.",
        )
    if len(set(target)) != len(target):
        return ApiError(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            f"Duplicate replica ids in partition reassignment replica list: {list(target)}",
        )
    if any(r < 0 for r in target):
        return ApiError(
            Errors.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {list(target)}"
        )
    adding = current.reassign_to(target).adding_replicas
    live = set(live_broker_ids)
    if not set(adding) <= live:
        return ApiError(
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "Replica assignment has brokers that are not alive. Replica list: "
            f"{list(adding)}, live broker list: {sorted(live)}",
        )
    return None


def maybe_build_reassignment(
    current: ReplicaAssignment, target: Sequence[int] | None
) -> ReplicaAssignment | None:
    """The assignment to move to: ``target`` (None = cancel, back to the origin replicas);
    None when there is nothing to cancel."""
    if current.is_being_reassigned:
        return current.reassign_to(current.origin_replicas if target is None else target)
    return None if target is None else current.reassign_to(target)
