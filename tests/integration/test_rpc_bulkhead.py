"""The controller's gRPC server while its event thread is busy (a real ``ControllerGrpcServer``
over the in-memory harness's controller, whose real event thread a test keeps busy): RPCs
that wait for the event thread may not take every worker thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from controller.api.errors import Errors
from controller.api.v1 import admin_pb2, admin_pb2_grpc, controller_pb2, controller_pb2_grpc
from controller.metrics import ControllerMetrics
from controller.rpc.admin_service import AdminServicer
from controller.rpc.server import (
    CONTROLLER_SERVICE,
    RESERVED_WORKERS,
    ControllerGrpcServer,
    follow_active_state,
)
from controller.rpc.service import ControllerServicer
from tests.harness import ControllerHarness
from tests.support import wait_until

SERVING = health_pb2.HealthCheckResponse.SERVING
WAITING = 2  # RPCs that may wait for the event thread at once in these tests


@dataclass
class Served:
    harness: ControllerHarness
    server: ControllerGrpcServer
    channel: grpc.Channel
    broker_epoch: int
    release: threading.Event  # set: the event thread is free again


@pytest.fixture
def served() -> Iterator[Served]:
    h = ControllerHarness(controller_id=9)
    epoch = h.register_broker(1).epoch
    h.start()
    server = ControllerGrpcServer("127.0.0.1:0", max_workers=RESERVED_WORKERS + WAITING)
    server.add_controller_service(ControllerServicer(h.controller, server.waiting))
    server.add_admin_service(AdminServicer(h.controller, server.waiting))
    follow_active_state(server, h.controller)
    server.start()
    h.controller.events.start()  # the real event thread
    release = threading.Event()
    channel = grpc.insecure_channel(server.address)
    try:
        yield Served(h, server, channel, epoch, release)
    finally:
        release.set()
        channel.close()
        server.stop(grace=0)
        h.close()


def busy_event_thread(harness: ControllerHarness, release: threading.Event) -> None:
    """Keep the event thread busy until ``release`` is set (a long event in progress)."""
    started = threading.Event()

    def hold(_ctl: object) -> None:
        started.set()
        release.wait(60)

    threading.Thread(target=harness.controller.call, args=(hold, 90), daemon=True).start()
    assert started.wait(10)


def health_status(channel: grpc.Channel, service: str) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status


def test_waiting_rpcs_cannot_take_the_threads_health_checks_need(served: Served) -> None:
    """More broker requests than the server has threads, while the event thread is busy: as
    many as there are waiting slots wait; every other one is answered RESOURCE_EXHAUSTED at
    once (not queued, so nothing is applied twice); health checks and admin requests still
    get answers, and the waiting requests are answered once the event thread is free."""
    s = served
    wait_until(lambda: health_status(s.channel, CONTROLLER_SERVICE) == SERVING, timeout=10)
    busy_event_thread(s.harness, s.release)
    stub = controller_pb2_grpc.ControllerServiceStub(s.channel)
    request = controller_pb2.AllocateProducerIdsRequest(broker_id=1, broker_epoch=s.broker_epoch)
    callers = futures.ThreadPoolExecutor(RESERVED_WORKERS + WAITING + 4)
    try:
        waiting = [callers.submit(stub.AllocateProducerIds, request, timeout=60)]
        wait_until(lambda: s.server.waiting.in_use == 1, timeout=10)
        waiting.append(callers.submit(stub.AllocateProducerIds, request, timeout=60))
        wait_until(lambda: s.server.waiting.in_use == WAITING, timeout=10)
        # As many more as the server has threads: without the bulkhead they would take them.
        extra = [
            callers.submit(stub.AllocateProducerIds, request, timeout=60)
            for _ in range(RESERVED_WORKERS + WAITING)
        ]
        for call in extra:
            with pytest.raises(grpc.RpcError) as refused:
                call.result(timeout=20)  # well before the event thread is released
            assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "resend" in (refused.value.details() or "")
        assert not s.release.is_set()
        assert health_status(s.channel, CONTROLLER_SERVICE) == SERVING
        with pytest.raises(grpc.RpcError) as admin_refused:  # admin requests share the slots
            admin_pb2_grpc.AdminServiceStub(s.channel).ListPartitionReassignments(
                admin_pb2.ListPartitionReassignmentsRequest(), timeout=10
            )
        assert admin_refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert not any(call.done() for call in waiting)

        s.release.set()
        blocks = [call.result(timeout=20) for call in waiting]
        assert [b.error_code for b in blocks] == [Errors.NONE, Errors.NONE]
        assert s.server.waiting.in_use == 0
        # Consecutive blocks: the refused requests were never queued, so none was allocated.
        starts = sorted(b.producer_id_start for b in blocks)
        assert starts[1] - starts[0] == blocks[0].producer_id_len
    finally:
        s.release.set()
        callers.shutdown(wait=False, cancel_futures=True)


@dataclass
class Watched:
    harness: ControllerHarness
    channel: grpc.Channel
    broker_epoch: int


@contextmanager
def active_with_health(metrics: ControllerMetrics | None = None) -> Iterator[Watched]:
    """An active controller on its event thread, its ControllerService health followed as
    the daemon wires it (before the controller starts), SERVING to begin with."""
    h = ControllerHarness(controller_id=9, metrics=metrics)
    epoch = h.register_broker(1).epoch
    server = ControllerGrpcServer("127.0.0.1:0", max_workers=RESERVED_WORKERS + WAITING)
    server.add_controller_service(ControllerServicer(h.controller, server.waiting))
    follow_active_state(server, h.controller)
    server.start()
    channel = grpc.insecure_channel(server.address)
    try:
        h.start()
        h.controller.events.start()
        h.controller.call(lambda ctl: None, 10)  # an event: the hook has run
        assert h.controller.is_active
        assert health_status(channel, CONTROLLER_SERVICE) == SERVING
        yield Watched(h, channel, epoch)
    finally:
        channel.close()
        server.stop(grace=0)
        h.close()


def test_health_is_not_serving_while_the_active_controller_is_cut_off_from_zookeeper() -> None:
    # It stays active, as Kafka's does, until its session expires; another controller may
    # be elected meanwhile, so a load balancer routing by health must not send calls here.
    with active_with_health() as w:
        h, channel = w.harness, w.channel
        h.zk.disconnect(h.port.inner)
        wait_until(
            lambda: health_status(channel, CONTROLLER_SERVICE) != SERVING, what="NOT_SERVING"
        )
        assert h.controller.is_active  # not resigned
        h.zk.reconnect(h.port.inner)
        wait_until(lambda: health_status(channel, CONTROLLER_SERVICE) == SERVING, what="SERVING")


def test_after_a_session_expiry_a_busy_controller_stops_saying_it_is_active() -> None:
    """The session expires while the event thread is busy, and the client gets a new session
    at once: ``is_active`` stays true until the queued Expire is processed (after the event
    in progress), but another controller may already be elected. Meanwhile health is
    NOT_SERVING, the ActiveControllerCount gauge reads 0 and RPCs are refused at once as
    NOT_CONTROLLER (they used to wait and time out, 'may still be applied', never applied)."""
    metrics = ControllerMetrics(controller_id=9)
    gauge = "kafka_controller_active_controller_count"
    release = threading.Event()
    with active_with_health(metrics) as w:
        h, channel, epoch = w.harness, w.channel, w.broker_epoch
        try:
            assert metrics.registry.get_sample_value(gauge) == 1
            busy_event_thread(h, release)
            h.zk.expire(h.port.inner)  # LOST, then CONNECTED on a new session
            assert h.controller.is_active  # the Expire waits behind the event in progress
            assert not h.controller.serving_active
            assert health_status(channel, CONTROLLER_SERVICE) != SERVING
            assert metrics.registry.get_sample_value(gauge) == 0
            stub = controller_pb2_grpc.ControllerServiceStub(channel)
            request = controller_pb2.AllocateProducerIdsRequest(broker_id=1, broker_epoch=epoch)
            started = time.monotonic()
            response = stub.AllocateProducerIds(request, timeout=30)
            assert response.error_code == Errors.NOT_CONTROLLER
            assert time.monotonic() - started < 5  # at once, not after waiting on the event
        finally:
            release.set()


def test_health_is_serving_again_after_a_cut_off_longer_than_the_session_timeout() -> None:
    # A quorum loss longer than the session timeout: no session expires, and the controller
    # comes back on the same one. Health (wired before the controller starts, as in the
    # daemon) used to read the cut-off time before the controller had cleared it, and stayed
    # NOT_SERVING until some event happened to run.
    with active_with_health() as w:
        h, channel = w.harness, w.channel
        now = [1000.0]
        h.controller._clock = lambda: now[0]
        h.zk.disconnect(h.port.inner)
        now[0] += h.controller.config.zookeeper_session_timeout_ms / 1000 + 1
        assert not h.controller.serving_active
        h.zk.reconnect(h.port.inner)  # the same session: no event follows
        assert h.controller.serving_active
        assert health_status(channel, CONTROLLER_SERVICE) == SERVING
