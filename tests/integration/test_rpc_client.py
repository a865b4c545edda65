"""``ControllerClient`` against a real gRPC server (``ControllerGrpcServer``) whose controller
is a stand-in that counts the events it is given: large answers arrive whole, and a request
is sent again only when it certainly was not processed. ZooKeeper, only used to find the
controller's address, is the in-memory fake."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from controller.admin.controller_client import (
    ControllerAnswerLostError,
    ControllerClient,
    ControllerRefusedCallError,
    NoActiveControllerError,
)
from controller.api.errors import ApiError, Errors
from controller.api.v1 import admin_pb2
from controller.core.model import TopicPartition
from controller.rpc.admin_service import AdminServicer
from controller.rpc.server import RESERVED_WORKERS, ControllerGrpcServer
from controller.security.tls import ChannelOpener, ChannelOptions
from controller.zk import paths
from controller.zk.codecs import encode_controller
from controller.zk.endpoints import ControllerEndpoint, encode_controller_endpoint
from controller.zk.memory import MemoryZooKeeper
from controller.zk.memory_session import MemoryZkSession

CONTROLLER_ID = 3
# 60,000 PREFERRED_LEADER_NOT_AVAILABLE results: ~5.5 MB, over gRPC's 4 MiB default limit.
PARTITIONS = 60_000
FOUR_MIB = 4 * 1024 * 1024


class ElectingController:
    """Active; answers every election with a failure for each of ``PARTITIONS`` partitions
    (as when many preferred replicas are out of their ISRs) and counts the elections."""

    controller_id = CONTROLLER_ID
    active_controller_id = CONTROLLER_ID
    is_active = True
    serving_active = True  # no session loss pending

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.delay_s = 0.0
        self.on_put: Callable[[], object] = lambda: None

    def put(self, event: Any) -> None:
        self.events.append(event)
        self.on_put()
        outcome = {
            TopicPartition(f"orders.payments.eu-west-1.settlement-{p % 5}", p): ApiError(
                Errors.PREFERRED_LEADER_NOT_AVAILABLE, "the preferred replica is not in the ISR"
            )
            for p in range(PARTITIONS)
        }
        if self.delay_s:
            threading.Timer(self.delay_s, event.reply.set_result, (outcome,)).start()
        else:
            event.reply.set_result(outcome)


class SmallReceiveLimit(ChannelOpener):
    """Plaintext channels whose receive limit is 1 MiB, whatever the client asks for: the
    answer is refused by the client's own gRPC library, after the server processed it."""

    def open(self, target: str, options: ChannelOptions = ()) -> grpc.Channel:
        limited = [(k, v) for k, v in options if k != "grpc.max_receive_message_length"]
        return super().open(target, [*limited, ("grpc.max_receive_message_length", 1 << 20)])


def naming(address: str) -> MemoryZkSession:
    """ZooKeeper naming controller ``CONTROLLER_ID``, at ``address``, as the active one."""
    zk = MemoryZooKeeper().open_session()
    zk.create(paths.CONTROLLER, encode_controller(CONTROLLER_ID, 1), ephemeral=True)
    endpoint = ControllerEndpoint(CONTROLLER_ID, address, "127.0.0.1:1")
    zk.create(
        paths.controller_endpoint_path(CONTROLLER_ID),
        encode_controller_endpoint(endpoint),
        makepath=True,
    )
    return zk


@pytest.fixture
def served() -> Iterator[tuple[ElectingController, ControllerGrpcServer]]:
    ctl = ElectingController()
    server = ControllerGrpcServer("127.0.0.1:0", max_workers=RESERVED_WORKERS + 1)
    server.add_admin_service(AdminServicer(ctl, server.waiting))  # type: ignore[arg-type]
    server.start()
    try:
        yield ctl, server
    finally:
        server.stop(grace=0)


def elect_all() -> admin_pb2.ElectLeadersRequest:
    return admin_pb2.ElectLeadersRequest(
        election_type=admin_pb2.ELECTION_TYPE_PREFERRED, timeout_ms=20_000
    )


def test_an_answer_over_4_mib_arrives_whole(
    served: tuple[ElectingController, ControllerGrpcServer],
) -> None:
    ctl, server = served
    with ControllerClient(naming(server.address), timeout_s=20) as client:
        response = client.admin("ElectLeaders", elect_all())
    assert response.ByteSize() > FOUR_MIB
    assert len(response.results) == PARTITIONS
    assert {r.error_code for r in response.results} == {Errors.PREFERRED_LEADER_NOT_AVAILABLE}
    assert len(ctl.events) == 1


def test_an_answer_the_client_cannot_read_is_reported_and_not_resent(
    served: tuple[ElectingController, ControllerGrpcServer],
) -> None:
    # The controller ran the election: sending it again would run it again (the CLI sent a
    # whole-cluster election ~10 times and then reported REQUEST_TIMED_OUT).
    ctl, server = served
    client = ControllerClient(
        naming(server.address), timeout_s=20, channel_opener=SmallReceiveLimit()
    )
    started = time.monotonic()
    with client, pytest.raises(ControllerAnswerLostError) as lost:
        client.admin("ElectLeaders", elect_all())
    assert len(ctl.events) == 1
    assert time.monotonic() - started < 10  # not retried until the deadline
    message = str(lost.value)
    assert "ElectLeaders" in message and "RESOURCE_EXHAUSTED" in message
    assert "larger than max" in message
    assert "may have been applied" in message


def test_a_connection_lost_mid_call_is_reported_and_not_resent(
    served: tuple[ElectingController, ControllerGrpcServer],
) -> None:
    ctl, server = served
    ctl.delay_s = 5.0  # the event thread is slow to answer; the server stops meanwhile
    received = threading.Event()
    ctl.on_put = received.set

    def stop_once_received() -> None:
        if received.wait(15):  # not before: a call not yet sent would rightly be resent
            server.stop(grace=0)

    threading.Thread(target=stop_once_received, daemon=True).start()
    with (
        ControllerClient(naming(server.address), timeout_s=20) as client,
        pytest.raises(ControllerAnswerLostError, match="may have been applied"),
    ):
        client.admin("ElectLeaders", elect_all())
    assert len(ctl.events) == 1


def test_a_call_the_controller_took_gets_the_answer_grace_and_finding_it_does_not(
    served: tuple[ElectingController, ControllerGrpcServer],
) -> None:
    # The admin tools pass their --timeout-ms to the controller, which answers by then, and
    # give the call 5 s more to bring that answer back; finding a controller is bounded by
    # --timeout-ms alone (it took 5 s more: "--timeout-ms 5000 ... within 10s").
    ctl, server = served
    ctl.delay_s = 1.5  # answers after the client's timeout_s, within its grace
    with ControllerClient(naming(server.address), timeout_s=0.5, answer_grace_s=5) as client:
        assert len(client.admin("ElectLeaders", elect_all()).results) == PARTITIONS
    nobody = naming("127.0.0.1:1")  # registered, but nothing listens there
    started = time.monotonic()
    with (
        ControllerClient(nobody, timeout_s=1, answer_grace_s=5) as client,
        pytest.raises(NoActiveControllerError, match="within 1s"),
    ):
        client.admin("ElectLeaders", elect_all())
    assert time.monotonic() - started < 3


def test_a_refusal_marked_resend_is_resent(
    served: tuple[ElectingController, ControllerGrpcServer],
) -> None:
    """The bulkhead's RESOURCE_EXHAUSTED queued nothing and says "resend it": the client does,
    and the request is processed once, when a waiting slot is free."""
    ctl, server = served
    server.waiting.acquire("AnotherRpc")  # the only waiting slot is held
    threading.Timer(1.0, server.waiting.release).start()
    with ControllerClient(naming(server.address), timeout_s=20) as client:
        response = client.admin("ElectLeaders", elect_all())
    assert len(response.results) == PARTITIONS
    assert len(ctl.events) == 1


def test_a_method_the_server_does_not_serve_is_refused_at_once() -> None:
    server = ControllerGrpcServer("127.0.0.1:0")  # no AdminService: UNIMPLEMENTED
    server.start()
    try:
        started = time.monotonic()
        with (
            ControllerClient(naming(server.address), timeout_s=20) as client,
            pytest.raises(ControllerRefusedCallError, match="UNIMPLEMENTED"),
        ):
            client.admin("ElectLeaders", elect_all())
        assert time.monotonic() - started < 10
    finally:
        server.stop(grace=0)
