"""``AdminService``: reassignments and leader elections on the active controller.

The servicer only translates between protobuf and controller events. The contract with the
handlers (``controller.handlers``) is the value each event's ``reply`` future resolves to:

- ``ApiPartitionReassignment``: ``{TopicPartition: ApiError | None}`` (None = accepted);
- ``ListPartitionReassignments``: ``{TopicPartition: ReplicaAssignment}``;
- ``ReplicaLeaderElection`` (AdminClient-triggered): ``{TopicPartition: int | ApiError}``,
  the new leader id or the per-partition error;
- ``UpdateFeatures``: ``{feature: ApiError | None}`` (None = applied, or valid when only
  validating).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import grpc

from controller.api.errors import ApiError, Errors, wire_code
from controller.api.v1 import admin_pb2, admin_pb2_grpc
from controller.core.events import (
    ApiPartitionReassignment,
    ElectionTrigger,
    ElectionType,
    ListPartitionReassignments,
    ReplicaLeaderElection,
    UpdateFeatures,
)
from controller.core.features import FeatureUpdateItem, UpgradeType
from controller.core.model import ReplicaAssignment, TopicPartition
from controller.rpc.calls import UNBOUNDED, WaitingSlots, await_reply, error_code

if TYPE_CHECKING:
    from controller.core.controller import Controller


_ELECTION_TYPES = {
    admin_pb2.ELECTION_TYPE_PREFERRED: ElectionType.PREFERRED,
    admin_pb2.ELECTION_TYPE_UNCLEAN: ElectionType.UNCLEAN,
}


def _partition_result(tp: TopicPartition, outcome: ApiError | None) -> admin_pb2.PartitionResult:
    if outcome is None:
        return admin_pb2.PartitionResult(topic=tp.topic, partition=tp.partition)
    return admin_pb2.PartitionResult(
        topic=tp.topic,
        partition=tp.partition,
        error_code=wire_code(outcome.error),
        error_message=str(outcome),
    )


class AdminServicer(admin_pb2_grpc.AdminServiceServicer):
    def __init__(self, controller: Controller, slots: WaitingSlots = UNBOUNDED) -> None:
        self._ctl = controller
        self._slots = slots  # the server's bulkhead (``WaitingSlots``)

    def _await(self, event: Any, context: grpc.ServicerContext, timeout_ms: int = 0) -> Any:
        """``await_reply`` as every admin request uses it: a timeout is answered in the
        response (REQUEST_TIMED_OUT, not resent), within the server's bulkhead."""
        return await_reply(
            self._ctl, event, context, timeout_ms, timeout_in_response=True, slots=self._slots
        )

    def AlterPartitionReassignments(
        self,
        request: admin_pb2.AlterPartitionReassignmentsRequest,
        context: grpc.ServicerContext,
    ) -> admin_pb2.AlterPartitionReassignmentsResponse:
        targets: dict[TopicPartition, tuple[int, ...] | None] = {}
        for p in request.partitions:
            targets[TopicPartition(p.topic, p.partition)] = None if p.cancel else tuple(p.replicas)
        event = ApiPartitionReassignment(reassignments=targets)
        try:
            outcome: Mapping[TopicPartition, ApiError | None] = self._await(
                event, context, request.timeout_ms
            )
        except Exception as exc:
            return admin_pb2.AlterPartitionReassignmentsResponse(
                error_code=error_code(self._ctl, exc, context, "AlterPartitionReassignments"),
                error_message=str(exc),
            )
        return admin_pb2.AlterPartitionReassignmentsResponse(
            results=[_partition_result(tp, outcome[tp]) for tp in sorted(outcome)]
        )

    def ListPartitionReassignments(
        self,
        request: admin_pb2.ListPartitionReassignmentsRequest,
        context: grpc.ServicerContext,
    ) -> admin_pb2.ListPartitionReassignmentsResponse:
        wanted = frozenset(TopicPartition(p.topic, p.partition) for p in request.partitions)
        event = ListPartitionReassignments(partitions=wanted or None)
        try:
            ongoing: Mapping[TopicPartition, ReplicaAssignment] = self._await(event, context)
        except Exception as exc:
            return admin_pb2.ListPartitionReassignmentsResponse(
                error_code=error_code(self._ctl, exc, context, "ListPartitionReassignments"),
                error_message=str(exc),
            )
        return admin_pb2.ListPartitionReassignmentsResponse(
            reassignments=[
                admin_pb2.OngoingReassignment(
                    topic=tp.topic,
                    partition=tp.partition,
                    replicas=ra.replicas,
                    adding_replicas=ra.adding_replicas,
                    removing_replicas=ra.removing_replicas,
                )
                for tp, ra in sorted(ongoing.items())
            ]
        )

    def ElectLeaders(
        self, request: admin_pb2.ElectLeadersRequest, context: grpc.ServicerContext
    ) -> admin_pb2.ElectLeadersResponse:
        election_type = _ELECTION_TYPES.get(request.election_type)
        if election_type is None:
            # An enum value this server does not know must not silently become PREFERRED.
            return admin_pb2.ElectLeadersResponse(
                error_code=wire_code(Errors.INVALID_REQUEST),
                error_message=f"unknown election type {request.election_type} "
                "(expected ELECTION_TYPE_PREFERRED or ELECTION_TYPE_UNCLEAN)",
            )
        partitions = frozenset(TopicPartition(p.topic, p.partition) for p in request.partitions)
        event = ReplicaLeaderElection(
            partitions=partitions or None,
            election_type=election_type,
            trigger=ElectionTrigger.ADMIN_CLIENT_TRIGGERED,
        )
        try:
            outcome: Mapping[TopicPartition, int | ApiError] = self._await(
                event, context, request.timeout_ms
            )
        except Exception as exc:
            return admin_pb2.ElectLeadersResponse(
                error_code=error_code(self._ctl, exc, context, "ElectLeaders"),
                error_message=str(exc),
            )
        results = []
        for tp in sorted(outcome):
            result = outcome[tp]
            if (
                not partitions
                and isinstance(result, ApiError)
                and result.error == Errors.ELECTION_NOT_NEEDED
            ):
                # As Kafka's KafkaApis: an election over all partitions reports only those
                # elected or failed, not every partition already led by the right replica.
                continue
            if isinstance(result, ApiError):
                results.append(
                    admin_pb2.ElectionResult(
                        topic=tp.topic,
                        partition=tp.partition,
                        error_code=wire_code(result.error),
                        error_message=str(result),
                        leader=-1,
                    )
                )
            else:
                results.append(
                    admin_pb2.ElectionResult(
                        topic=tp.topic,
                        partition=tp.partition,
                        error_code=wire_code(Errors.NONE),
                        leader=result,
                    )
                )
        return admin_pb2.ElectLeadersResponse(results=results)

    def UpdateFeatures(
        self, request: admin_pb2.UpdateFeaturesRequest, context: grpc.ServicerContext
    ) -> admin_pb2.UpdateFeaturesResponse:
        updates = tuple(
            FeatureUpdateItem(u.feature, u.max_version_level, UpgradeType.from_code(u.upgrade_type))
            for u in request.feature_updates
        )
        event = UpdateFeatures(updates=updates, validate_only=request.validate_only)
        try:
            outcome: Mapping[str, ApiError | None] = self._await(event, context, request.timeout_ms)
        except Exception as exc:
            return admin_pb2.UpdateFeaturesResponse(
                error_code=error_code(self._ctl, exc, context, "UpdateFeatures"),
                error_message=str(exc),
            )
        return admin_pb2.UpdateFeaturesResponse(
            results=[
                admin_pb2.UpdatableFeatureResult(feature=name)
                if result is None
                else admin_pb2.UpdatableFeatureResult(
                    feature=name, error_code=wire_code(result.error), error_message=str(result)
                )
                for name, result in sorted(outcome.items())
            ]
        )
