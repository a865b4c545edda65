"""``ControllerService``: the RPCs brokers send to the controller.

Each call becomes a controller event carrying a reply future; the event thread answers it.
A node that is not the active controller answers ``NOT_CONTROLLER`` with the active
controller's id in trailing metadata (``controller.api.errors.set_controller_hint``).
"""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

import grpc
import structlog

from controller.api.errors import Errors, error_for_exception, set_controller_hint
from controller.api.v1 import common_pb2, controller_pb2, controller_pb2_grpc
from controller.core.events import (
    AlterPartitionReceived,
    ControlledShutdown,
    NotControllerError,
    ReplyingEvent,
)

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.rpc")

DEFAULT_DEADLINE_S = 30.0


class ControllerServicer(controller_pb2_grpc.ControllerServiceServicer):
    def __init__(self, controller: Controller) -> None:
        self._ctl = controller

    def _await(self, event: ReplyingEvent, context: grpc.ServicerContext) -> Any:
        """Queue ``event`` and wait for its answer within the caller's deadline."""
        if not self._ctl.is_active:
            raise NotControllerError(self._ctl.active_controller_id)
        self._ctl.put(event)
        remaining = context.time_remaining()
        timeout = DEFAULT_DEADLINE_S if remaining is None else max(remaining - 0.05, 0.0)
        try:
            return event.reply.result(timeout)
        except FutureTimeout:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, f"{event.name} did not finish in time")
        except NotImplementedError:
            context.abort(
                grpc.StatusCode.UNIMPLEMENTED, f"{event.name} is not handled by this controller"
            )

    def ControlledShutdown(
        self, request: controller_pb2.ControlledShutdownRequest, context: grpc.ServicerContext
    ) -> controller_pb2.ControlledShutdownResponse:
        event = ControlledShutdown(broker_id=request.broker_id, broker_epoch=request.broker_epoch)
        try:
            remaining = self._await(event, context)
        except Exception as exc:
            return controller_pb2.ControlledShutdownResponse(
                error_code=self._error(exc, context, "ControlledShutdown")
            )
        return controller_pb2.ControlledShutdownResponse(
            error_code=Errors.NONE,
            remaining_partitions=[
                common_pb2.TopicPartition(topic=tp.topic, partition=tp.partition)
                for tp in sorted(remaining)
            ],
        )

    def AlterPartition(
        self, request: controller_pb2.AlterPartitionRequest, context: grpc.ServicerContext
    ) -> controller_pb2.AlterPartitionResponse:
        event = AlterPartitionReceived(request=request)
        try:
            return self._await(event, context)
        except Exception as exc:
            return controller_pb2.AlterPartitionResponse(
                error_code=self._error(exc, context, "AlterPartition")
            )

    def _error(self, exc: Exception, context: grpc.ServicerContext, rpc: str) -> int:
        code = error_for_exception(exc)
        if code == Errors.NOT_CONTROLLER:
            set_controller_hint(context, self._ctl.active_controller_id)
        elif code == Errors.UNKNOWN_SERVER_ERROR:
            log.error("controller RPC failed", rpc=rpc, error=str(exc))
        return int(code)
