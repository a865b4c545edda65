"""The reference broker's ``BrokerService`` servicer: a thin gRPC adapter over ``ReplicaState``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import grpc
import structlog

from controller.api.errors import Errors, wire_code
from controller.api.v1 import broker_pb2, broker_pb2_grpc
from controller.broker.state import ReplicaState, leader_and_isr_error_response

log = structlog.get_logger("controller.broker")

_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")


class BrokerServicer(broker_pb2_grpc.BrokerServiceServicer):
    def __init__(
        self,
        state: ReplicaState,
        fetch: Callable[[broker_pb2.FetchRequest], broker_pb2.FetchResponse] | None = None,
    ) -> None:
        """``fetch``: the leader side of replication (``Replication.handle_fetch``); without
        it, Fetch answers NOT_LEADER_OR_FOLLOWER for every partition."""
        self._state = state
        self._fetch = fetch

    def _handle(
        self,
        kind: str,
        request: _Req,
        handler: Callable[[_Req], _Resp],
        on_error: Callable[[_Req], _Resp],
    ) -> _Resp:
        structlog.contextvars.bind_contextvars(broker_id=self._state.broker_id)
        try:
            return handler(request)
        except Exception:
            # Kafka answers an unexpected failure with the request's error response
            # (UNKNOWN_SERVER_ERROR) rather than dropping the connection; so do we.
            log.exception("failed to handle controller request", request=kind)
            return on_error(request)

    def LeaderAndIsr(
        self, request: broker_pb2.LeaderAndIsrRequest, context: grpc.ServicerContext
    ) -> broker_pb2.LeaderAndIsrResponse:
        return self._handle(
            "LeaderAndIsr",
            request,
            self._state.leader_and_isr,
            lambda r: leader_and_isr_error_response(r, Errors.UNKNOWN_SERVER_ERROR),
        )

    def UpdateMetadata(
        self, request: broker_pb2.UpdateMetadataRequest, context: grpc.ServicerContext
    ) -> broker_pb2.UpdateMetadataResponse:
        return self._handle(
            "UpdateMetadata",
            request,
            self._state.update_metadata,
            lambda _: broker_pb2.UpdateMetadataResponse(
                error_code=wire_code(Errors.UNKNOWN_SERVER_ERROR)
            ),
        )

    def StopReplica(
        self, request: broker_pb2.StopReplicaRequest, context: grpc.ServicerContext
    ) -> broker_pb2.StopReplicaResponse:
        return self._handle(
            "StopReplica",
            request,
            self._state.stop_replica,
            lambda _: broker_pb2.StopReplicaResponse(
                error_code=wire_code(Errors.UNKNOWN_SERVER_ERROR)
            ),
        )

    def Describe(
        self, request: broker_pb2.DescribeRequest, context: grpc.ServicerContext
    ) -> broker_pb2.DescribeResponse:
        return self._state.describe()

    def Fetch(
        self, request: broker_pb2.FetchRequest, context: grpc.ServicerContext
    ) -> broker_pb2.FetchResponse:
        return self._handle(
            "Fetch",
            request,
            self._fetch or _not_replicating,
            lambda _: broker_pb2.FetchResponse(error_code=wire_code(Errors.UNKNOWN_SERVER_ERROR)),
        )


def _not_replicating(request: broker_pb2.FetchRequest) -> broker_pb2.FetchResponse:
    response = broker_pb2.FetchResponse(error_code=wire_code(Errors.NONE))
    for topic in request.topics:
        out = response.topics.add(topic_name=topic.topic_name, topic_id=topic.topic_id)
        for p in topic.partitions:
            out.partitions.add(
                partition_index=p.partition_index,
                error_code=Errors.NOT_LEADER_OR_FOLLOWER,
                leader_epoch=-1,
            )
    return response
