"""The gRPC services when the event thread does not answer in time (a real gRPC server; the
controller is a stand-in whose events are never processed)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from structlog.testing import capture_logs

from controller.api.errors import Errors
from controller.api.v1 import admin_pb2, admin_pb2_grpc, controller_pb2, controller_pb2_grpc
from controller.rpc.admin_service import AdminServicer
from controller.rpc.service import ControllerServicer
from tests.harness import ControllerHarness


class StalledController:
    """Active, but its event thread never gets to the queued events."""

    is_active = True
    serving_active = True  # no session loss pending
    active_controller_id = 5

    def __init__(self) -> None:
        self.queued: list[Any] = []

    def put(self, event: Any) -> None:
        self.queued.append(event)


@pytest.fixture
def served() -> Iterator[tuple[StalledController, grpc.Channel]]:
    ctl = StalledController()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    admin_pb2_grpc.add_AdminServiceServicer_to_server(AdminServicer(ctl), server)
    controller_pb2_grpc.add_ControllerServiceServicer_to_server(ControllerServicer(ctl), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield ctl, channel
    finally:
        channel.close()
        server.stop(0)


def test_an_admin_request_that_times_out_says_so_in_its_response(
    served: tuple[StalledController, grpc.Channel],
) -> None:
    # Kafka answers REQUEST_TIMED_OUT: the request may still be applied, so a client must not
    # resend it as it resends "not processed" statuses (a feature upgrade applied twice was
    # reported as failed), and nothing is logged as a server error.
    ctl, channel = served
    stub = admin_pb2_grpc.AdminServiceStub(channel)
    with capture_logs() as logs:
        response = stub.UpdateFeatures(
            admin_pb2.UpdateFeaturesRequest(timeout_ms=200), timeout=10
        )
    assert response.error_code == Errors.REQUEST_TIMED_OUT
    assert "may still be applied" in response.error_message
    assert len(ctl.queued) == 1
    assert not [e for e in logs if e["log_level"] == "error"]


def test_an_admin_request_without_a_deadline_waits_its_own_timeout(
    served: tuple[StalledController, grpc.Channel],
) -> None:
    # No gRPC deadline (grpcurl): the request's timeout_ms is the caller's word, neither the
    # 30 s default nor grpcio's "no deadline" of ~9.2e18 s.
    _, channel = served
    stub = admin_pb2_grpc.AdminServiceStub(channel)
    started = time.monotonic()
    response = stub.UpdateFeatures(admin_pb2.UpdateFeaturesRequest(timeout_ms=300))
    assert response.error_code == Errors.REQUEST_TIMED_OUT
    assert 0.3 <= time.monotonic() - started < 5


def test_a_broker_request_that_times_out_ends_deadline_exceeded(
    served: tuple[StalledController, grpc.Channel],
) -> None:
    # Broker requests are idempotent: "not processed", and the broker resends.
    _, channel = served
    stub = controller_pb2_grpc.ControllerServiceStub(channel)
    with capture_logs() as logs, pytest.raises(grpc.RpcError) as failure:
        stub.ControlledShutdown(
            controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=1), timeout=0.5
        )
    assert failure.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    assert not [e for e in logs if e["log_level"] == "error"]


def test_a_call_without_a_deadline_is_answered() -> None:
    """grpcurl and many clients set no deadline; grpcio then reports ~9.2e18 s remaining,
    which no wait takes (the change was applied and answered UNKNOWN_SERVER_ERROR, and each
    resend of AllocateProducerIds threw a block away)."""
    h = ControllerHarness(controller_id=9)
    epoch = h.register_broker(1).epoch
    h.start()
    h.controller.events.start()  # the real event thread
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    controller_pb2_grpc.add_ControllerServiceServicer_to_server(
        ControllerServicer(h.controller), server
    )
    admin_pb2_grpc.add_AdminServiceServicer_to_server(AdminServicer(h.controller), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub = controller_pb2_grpc.ControllerServiceStub(channel)
        request = controller_pb2.AllocateProducerIdsRequest(broker_id=1, broker_epoch=epoch)
        first, second = stub.AllocateProducerIds(request), stub.AllocateProducerIds(request)
        assert (first.error_code, second.error_code) == (Errors.NONE, Errors.NONE)
        assert second.producer_id_start == first.producer_id_start + first.producer_id_len
        listed = admin_pb2_grpc.AdminServiceStub(channel).ListPartitionReassignments(
            admin_pb2.ListPartitionReassignmentsRequest()
        )
        assert listed.error_code == Errors.NONE
    finally:
        channel.close()
        server.stop(0)
        h.close()
