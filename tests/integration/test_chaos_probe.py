"""The chaos run's broker probe against real gRPC servers: a broker restarted on the port it
had before is seen as serving at once, not after gRPC's reconnect backoff (up to two minutes)
on a channel that failed while it was down."""

from __future__ import annotations

from collections.abc import Callable
from concurrent import futures

import grpc

from controller.api.v1 import broker_pb2, broker_pb2_grpc
from controller.chaos.observe import BrokerProbe


class _Describing(broker_pb2_grpc.BrokerServiceServicer):
    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id

    def Describe(
        self, request: broker_pb2.DescribeRequest, context: grpc.ServicerContext
    ) -> broker_pb2.DescribeResponse:
        return broker_pb2.DescribeResponse(broker_id=self.broker_id)


def _serve(port: int, broker_id: int) -> grpc.Server:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    broker_pb2_grpc.add_BrokerServiceServicer_to_server(_Describing(broker_id), server)
    assert server.add_insecure_port(f"127.0.0.1:{port}") == port
    server.start()
    return server


def test_a_broker_back_on_its_old_port_is_seen_at_once(free_port: Callable[[], int]) -> None:
    port = free_port()
    address = f"127.0.0.1:{port}"
    probe = BrokerProbe(timeout_s=1.0)
    server = _serve(port, broker_id=1)
    try:
        first = probe.describe(address)
        assert first is not None and first.broker_id == 1
        server.stop(0).wait()
        # Down: every probe fails (a cached channel would now be backing off).
        assert [probe.describe(address) for _ in range(3)] == [None, None, None]
        server = _serve(port, broker_id=1)
        again = probe.describe(address)
        assert again is not None and again.broker_id == 1
    finally:
        server.stop(0).wait()
        probe.close()
