"""``ControllerService``: the RPCs brokers send to the controller.

Each call becomes a controller event carrying a reply future; the event thread answers it.
A node that is not the active controller answers ``NOT_CONTROLLER`` with the active
controller's id in trailing metadata (``controller.api.errors.set_controller_hint``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc

from controller.api.errors import Errors, wire_code
from controller.api.v1 import common_pb2, controller_pb2, controller_pb2_grpc
from controller.core.events import AllocateProducerIds, AlterPartitionReceived, ControlledShutdown
from controller.rpc.calls import UNBOUNDED, WaitingSlots, await_reply, error_code

if TYPE_CHECKING:
    from controller.core.controller import Controller


class ControllerServicer(controller_pb2_grpc.ControllerServiceServicer):
    def __init__(self, controller: Controller, slots: WaitingSlots = UNBOUNDED) -> None:
        self._ctl = controller
        self._slots = slots  # the server's bulkhead (``WaitingSlots``)

    def ControlledShutdown(
        self, request: controller_pb2.ControlledShutdownRequest, context: grpc.ServicerContext
    ) -> controller_pb2.ControlledShutdownResponse:
        event = ControlledShutdown(broker_id=request.broker_id, broker_epoch=request.broker_epoch)
        try:
            remaining = await_reply(self._ctl, event, context, slots=self._slots)
        except Exception as exc:
            return controller_pb2.ControlledShutdownResponse(
                error_code=error_code(self._ctl, exc, context, "ControlledShutdown")
            )
        return controller_pb2.ControlledShutdownResponse(
            error_code=wire_code(Errors.NONE),
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
            return await_reply(self._ctl, event, context, slots=self._slots)
        except Exception as exc:
            return controller_pb2.AlterPartitionResponse(
                error_code=error_code(self._ctl, exc, context, "AlterPartition")
            )

    def AllocateProducerIds(
        self, request: controller_pb2.AllocateProducerIdsRequest, context: grpc.ServicerContext
    ) -> controller_pb2.AllocateProducerIdsResponse:
        event = AllocateProducerIds(broker_id=request.broker_id, broker_epoch=request.broker_epoch)
        try:
            block = await_reply(self._ctl, event, context, slots=self._slots)
        except Exception as exc:
            return controller_pb2.AllocateProducerIdsResponse(
                error_code=error_code(self._ctl, exc, context, "AllocateProducerIds")
            )
        return controller_pb2.AllocateProducerIdsResponse(
            error_code=wire_code(Errors.NONE),
            producer_id_start=block.block_start,
            producer_id_len=block.size,
        )
