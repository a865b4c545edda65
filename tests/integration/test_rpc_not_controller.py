"""NOT_CONTROLLER answers over a real gRPC server: the ``controller-id`` hint never names the
node that answers (the controller is a stand-in caught between losing /controller and
processing its resignation)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from controller.api.errors import Errors, controller_hint
from controller.api.v1 import admin_pb2, admin_pb2_grpc, controller_pb2, controller_pb2_grpc
from controller.rpc.admin_service import AdminServicer
from controller.rpc.calls import WaitingSlots
from controller.rpc.service import ControllerServicer
from controller.zk.errors import ControllerMovedError


class JustMovedController:
    """Still active in its own eyes (its resignation is queued behind the current event), but
    every event finds the controller moved: its ZooKeeper writes are fenced."""

    controller_id = 5
    active_controller_id = 5
    is_active = True
    serving_active = True  # no session loss pending

    def put(self, event: Any) -> None:
        event.reply.set_exception(ControllerMovedError())


@pytest.fixture
def channel() -> Iterator[grpc.Channel]:
    ctl = JustMovedController()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    controller_pb2_grpc.add_ControllerServiceServicer_to_server(ControllerServicer(ctl), server)
    admin_pb2_grpc.add_AdminServiceServicer_to_server(AdminServicer(ctl), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        yield ch
    server.stop(0)


def test_a_controller_that_just_moved_does_not_name_itself_as_the_active_one(
    channel: grpc.Channel,
) -> None:
    stub = controller_pb2_grpc.ControllerServiceStub(channel)
    response, call = stub.ControlledShutdown.with_call(
        controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=1), timeout=10
    )
    assert response.error_code == Errors.NOT_CONTROLLER
    assert controller_hint(call.trailing_metadata()) is None
    admin = admin_pb2_grpc.AdminServiceStub(channel)
    listed, call = admin.ListPartitionReassignments.with_call(
        admin_pb2.ListPartitionReassignmentsRequest(), timeout=10
    )
    assert listed.error_code == Errors.NOT_CONTROLLER
    assert controller_hint(call.trailing_metadata()) is None


class Standby:
    controller_id = 5
    active_controller_id = 7
    is_active = False
    serving_active = False  # no session loss pending

    def put(self, event: Any) -> None:
        raise AssertionError(f"a standby queued {event.name}")


def test_a_standby_answers_not_controller_even_when_no_waiting_slot_is_free() -> None:
    # NOT_CONTROLLER never waits for the event thread, so it needs none of the bulkhead's
    # slots (controller.rpc.server): brokers are told where to go however busy this node is.
    slots = WaitingSlots(1)
    slots.acquire("AnotherRpc")  # the only slot is held
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    controller_pb2_grpc.add_ControllerServiceServicer_to_server(
        ControllerServicer(Standby(), slots), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            response, call = controller_pb2_grpc.ControllerServiceStub(ch).AlterPartition.with_call(
                controller_pb2.AlterPartitionRequest(broker_id=1, broker_epoch=1), timeout=10
            )
        assert response.error_code == Errors.NOT_CONTROLLER
        assert controller_hint(call.trailing_metadata()) == 7
        assert slots.in_use == 1
    finally:
        server.stop(0)
