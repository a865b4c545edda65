"""The controller's gRPC listener: a port is never shared, a bind failure is a clear
OSError (the daemon reports it and exits), not a traceback from grpcio, and bytes that are no
request are INVALID_ARGUMENT naming the method."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from controller.api.errors import Errors
from controller.api.v1 import broker_pb2, broker_pb2_grpc, controller_pb2, controller_pb2_grpc
from controller.broker import BrokerConfig, BrokerServer
from controller.rpc.server import ControllerGrpcServer
from controller.rpc.service import ControllerServicer


def test_a_second_controller_cannot_share_the_grpc_port() -> None:
    """gRPC enables SO_REUSEPORT by default: both would serve, brokers and admin tools would
    reach the standby at random."""
    first = ControllerGrpcServer("127.0.0.1:0")
    first.start()
    try:
        with pytest.raises(OSError, match=f"127.0.0.1:{first.port}"):
            ControllerGrpcServer(f"127.0.0.1:{first.port}")
    finally:
        first.stop(grace=0)


def test_a_port_held_by_another_program_is_an_oserror() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot bind the gRPC listener to 127.0.0.1:{port}"):
            ControllerGrpcServer(f"127.0.0.1:{port}")
        # The reason is in the one line (gRPC's own error says only "Failed to bind").
        with pytest.raises(OSError, match=r": Address already in use$"):
            ControllerGrpcServer(f"127.0.0.1:{port}")


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("192.0.2.1:0", "Cannot assign requested address"),  # not this machine's (TEST-NET-1)
        ("no-such-host.invalid:0", "cannot resolve 'no-such-host.invalid'"),
        (f"{'a' * 64}.invalid:0", f"cannot resolve '{'a' * 64}.invalid'"),  # label > 63
    ],
)
def test_an_address_that_cannot_be_bound_says_why(address: str, reason: str) -> None:
    with pytest.raises(OSError, match=f"cannot bind the gRPC listener to {address}: {reason}"):
        ControllerGrpcServer(address)


# Not a message: field 1, length-delimited, 5 bytes announced and 2 sent (a truncated request).
GARBAGE = b"\x0a\x05ab"


def raw_call(channel: grpc.Channel, method: str) -> Callable[..., Any]:
    """A call that sends bytes as they are (no serializer) and gets the raw answer back."""
    return channel.unary_unary(method, request_serializer=None, response_deserializer=None)


def assert_malformed(channel: grpc.Channel, method: str) -> None:
    with pytest.raises(grpc.RpcError) as failure:
        raw_call(channel, method)(GARBAGE, timeout=10)
    assert failure.value.code() is grpc.StatusCode.INVALID_ARGUMENT, failure.value.details()
    name = method.rsplit("/", 1)[-1]
    assert (failure.value.details() or "").startswith(f"malformed {name} request: ")


class Standby:
    """A controller that is not active: its answers need no event thread."""

    controller_id = 1
    active_controller_id = 2
    is_active = False
    serving_active = False  # no session loss pending


def test_malformed_request_bytes_are_invalid_argument_naming_the_method() -> None:
    # grpcio parses before any servicer code runs; it answered INTERNAL "Exception
    # deserializing request!", which reads as a server bug, not as the caller's.
    server = ControllerGrpcServer("127.0.0.1:0")
    server.add_controller_service(ControllerServicer(Standby()))  # type: ignore[arg-type]
    server.start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            assert_malformed(channel, "/zkcontroller.v1.ControllerService/ControlledShutdown")
            assert_malformed(channel, "/grpc.health.v1.Health/Check")
            # The server goes on answering well-formed requests.
            response = controller_pb2_grpc.ControllerServiceStub(channel).ControlledShutdown(
                controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=1), timeout=10
            )
            assert response.error_code == Errors.NOT_CONTROLLER
            health = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=10
            )
            assert health.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        server.stop(grace=0)


def test_the_reference_broker_also_answers_malformed_bytes_invalid_argument() -> None:
    broker = BrokerServer(BrokerConfig(1), broker_epoch=10).start()
    try:
        with grpc.insecure_channel(broker.address) as channel:
            assert_malformed(channel, "/zkcontroller.v1.BrokerService/LeaderAndIsr")
            response = broker_pb2_grpc.BrokerServiceStub(channel).UpdateMetadata(
                broker_pb2.UpdateMetadataRequest(controller_id=1, broker_epoch=10), timeout=10
            )
            assert response.error_code == Errors.NONE
    finally:
        broker.stop(grace=0)


def test_a_bind_failure_on_a_host_without_ipv6_is_still_explained(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With ipv6.disable=1 an AF_INET6 socket cannot even be created: that is the reason, not
    # an error escaping the explanation.
    from controller.security import tls

    real_socket = socket.socket

    def no_ipv6(family: int = socket.AF_INET, *args: Any, **kwargs: Any) -> socket.socket:
        if family == socket.AF_INET6:
            raise OSError(97, "Address family not supported by protocol")
        return real_socket(family, *args, **kwargs)

    monkeypatch.setattr(tls.socket, "socket", no_ipv6)
    assert tls.bind_failure_reason("[::1]:0") == "Address family not supported by protocol"
