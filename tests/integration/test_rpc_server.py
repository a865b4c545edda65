"""The controller's gRPC listener: a port is never shared, and a bind failure is a clear
OSError (the daemon reports it and exits), not a traceback from grpcio."""

from __future__ import annotations

import socket

import pytest

from controller.rpc.server import ControllerGrpcServer


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
