"""ControllerChannelManager against real gRPC broker servers on 127.0.0.1 (reference §4.1-4.2)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from structlog.testing import capture_logs

from controller.api.v1 import broker_pb2, broker_pb2_grpc, common_pb2
from controller.channel import convert
from controller.channel.manager import ControllerChannelManager
from controller.channel.sender import (
    NoMetrics,
    OutboundRequest,
    QueueItem,
    RequestKind,
    RequestSendThread,
)
from controller.core.model import (
    Broker,
    BrokerAndEpoch,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from controller.security.tls import ChannelOpener, ChannelOptions


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


class RecordingBroker(broker_pb2_grpc.BrokerServiceServicer):
    """A real BrokerService that records what arrives, in arrival order.

    ``delay_s`` slows each call down so that concurrent calls (if the sender ever made any)
    would overlap and show up in ``max_in_flight``. ``gate``, when set, holds every call until
    it is opened. ``slow_first_s`` delays only the first call (to force a client deadline).
    """

    def __init__(self, delay_s: float = 0.0) -> None:
        self.received: list[tuple[str, object]] = []
        self.delay_s = delay_s
        self.gate: threading.Event | None = None
        self.slow_first_s = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def _enter(self, kind: str, request: object) -> None:
        with self._lock:
            first = not self.received
            self.received.append((kind, request))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        if self.gate is not None:
            self.gate.wait(10)
        if first and self.slow_first_s:
            time.sleep(self.slow_first_s)
        if self.delay_s:
            time.sleep(self.delay_s)

    def _exit(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def LeaderAndIsr(
        self, request: broker_pb2.LeaderAndIsrRequest, context: grpc.ServicerContext
    ) -> broker_pb2.LeaderAndIsrResponse:
        self._enter("LeaderAndIsr", request)
        try:
            resp = broker_pb2.LeaderAndIsrResponse(error_code=common_pb2.NONE)
            for t in request.topic_states:
                topic = resp.topics.add(topic_id=t.topic_id, topic_name=t.topic_name)
                for p in t.partition_states:
                    # Odd partitions report a failed log dir, to check parsing end to end.
                    code = common_pb2.KAFKA_STORAGE_ERROR if p.partition_index % 2 else 0
                    topic.partition_errors.add(partition_index=p.partition_index, error_code=code)
            return resp
        finally:
            self._exit()

    def UpdateMetadata(
        self, request: broker_pb2.UpdateMetadataRequest, context: grpc.ServicerContext
    ) -> broker_pb2.UpdateMetadataResponse:
        self._enter("UpdateMetadata", request)
        try:
            return broker_pb2.UpdateMetadataResponse(error_code=common_pb2.STALE_BROKER_EPOCH)
        finally:
            self._exit()

    def StopReplica(
        self, request: broker_pb2.StopReplicaRequest, context: grpc.ServicerContext
    ) -> broker_pb2.StopReplicaResponse:
        self._enter("StopReplica", request)
        try:
            return broker_pb2.StopReplicaResponse(error_code=common_pb2.NONE)
        finally:
            self._exit()


class BrokerHost:
    """A gRPC server hosting one RecordingBroker on 127.0.0.1."""

    def __init__(self, servicer: RecordingBroker, port: int = 0) -> None:
        self.servicer = servicer
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        broker_pb2_grpc.add_BrokerServiceServicer_to_server(servicer, self.server)
        self.port = self.server.add_insecure_port(f"127.0.0.1:{port}")
        assert self.port, "could not bind"
        self.server.start()

    def broker(self, broker_id: int, listener: str = "CONTROLLER") -> Broker:
        return Broker(broker_id, (EndPoint(listener, "127.0.0.1", self.port),))

    def stop(self) -> None:
        self.server.stop(0).wait()


@pytest.fixture
def hosts() -> Iterator[list[BrokerHost]]:
    started: list[BrokerHost] = []
    yield started
    for h in started:
        h.stop()


@pytest.fixture
def channel() -> Iterator[ControllerChannelManager]:
    manager = ControllerChannelManager(1, "CONTROLLER", request_timeout_s=5.0)
    yield manager
    manager.shutdown()


def lai(topic: str, partitions: int = 1) -> OutboundRequest:
    parts = {
        TopicPartition(topic, p): convert.LeaderAndIsrPartition(
            LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1,)), 1),
            ReplicaAssignment.of([1]),
            False,
        )
        for p in range(partitions)
    }
    msg = convert.leader_and_isr_request(
        controller_id=1,
        controller_epoch=1,
        broker_epoch=10,
        partitions=parts,
        topic_ids={},
        live_leaders=(),
    )
    return OutboundRequest.leader_and_isr(msg)


def test_requests_arrive_in_fifo_order_with_one_in_flight_and_callbacks_get_responses(
    hosts: list[BrokerHost], channel: ControllerChannelManager
) -> None:
    host = BrokerHost(RecordingBroker(delay_s=0.01))
    hosts.append(host)
    channel.add_broker(host.broker(1), 10)
    answered: list[tuple[str, str]] = []  # (topic, thread name), in callback order

    def callback_for(topic: str) -> Callable[[object], None]:
        def cb(response: object) -> None:
            assert isinstance(response, broker_pb2.LeaderAndIsrResponse)
            assert response.topics[0].topic_name == topic
            answered.append((topic, threading.current_thread().name))

        return cb

    topics = [f"t{i}" for i in range(25)]
    for t in topics:
        channel.send(1, lai(t), callback_for(t))

    assert wait_until(lambda: len(answered) == len(topics))
    received_topics = [req.topic_states[0].topic_name for _, req in host.servicer.received]
    assert received_topics == topics
    assert host.servicer.max_in_flight == 1
    assert [t for t, _ in answered] == topics
    # Callbacks run on the broker's sender thread, not on the caller's.
    assert {name for _, name in answered} == {"Controller-1-to-broker-1-send-thread"}
    assert channel.queue_size(1) == 0


def test_response_callback_parses_partition_errors(
    hosts: list[BrokerHost], channel: ControllerChannelManager
) -> None:
    host = BrokerHost(RecordingBroker())
    hosts.append(host)
    channel.add_broker(host.broker(1), 10)
    results: list[convert.LeaderAndIsrResult] = []
    channel.send(
        1, lai("foo", 3), lambda r: results.append(convert.parse_leader_and_isr_response(r))
    )
    umr_codes: list[int] = []
    umr = OutboundRequest.update_metadata(broker_pb2.UpdateMetadataRequest(controller_epoch=1))
    channel.send(1, umr, lambda r: umr_codes.append(convert.parse_update_metadata_response(r)))

    assert wait_until(lambda: len(results) == 1 and len(umr_codes) == 1)
    assert results[0].error_code == 0
    assert results[0].partition_errors == {
        TopicPartition("foo", 0): 0,
        TopicPartition("foo", 1): common_pb2.KAFKA_STORAGE_ERROR,
        TopicPartition("foo", 2): 0,
    }
    assert umr_codes == [common_pb2.STALE_BROKER_EPOCH]


def test_broker_that_is_down_at_first_receives_the_request_once_it_starts(
    hosts: list[BrokerHost], free_port: Callable[[], int]
) -> None:
    port = free_port()
    manager = ControllerChannelManager(1, "CONTROLLER", request_timeout_s=2.0)
    try:
        broker = Broker(1, (EndPoint("CONTROLLER", "127.0.0.1", port),))
        manager.add_broker(broker, 10)
        answered = threading.Event()
        with capture_logs() as logs:
            manager.send(1, lai("late"), lambda r: answered.set())
            time.sleep(0.6)  # several failed attempts at 100 ms backoff
        assert not answered.is_set()
        failures = [e for e in logs if e["event"].startswith("request to broker failed")]
        assert failures and failures[0]["code"] == "UNAVAILABLE"
        assert len(failures) == 1  # repeated failures of one request are rate-limited

        host = BrokerHost(RecordingBroker(), port=port)
        hosts.append(host)
        assert answered.wait(5), "request never reached the broker after it started"
        assert [req.topic_states[0].topic_name for _, req in host.servicer.received] == ["late"]
    finally:
        manager.shutdown()


def test_deadline_exceeded_resends_the_same_request(hosts: list[BrokerHost]) -> None:
    servicer = RecordingBroker()
    servicer.slow_first_s = 1.0  # the first attempt outlives the 0.3 s deadline
    host = BrokerHost(servicer)
    hosts.append(host)
    manager = ControllerChannelManager(1, "CONTROLLER", request_timeout_s=0.3)
    try:
        manager.add_broker(host.broker(1), 10)
        answers: list[object] = []
        request = lai("slow", 2)
        manager.send(1, request, answers.append)
        assert wait_until(lambda: len(answers) == 1)
        time.sleep(0.2)
        assert len(answers) == 1  # one callback, for the attempt that was answered
        kinds = [k for k, _ in servicer.received]
        assert kinds == ["LeaderAndIsr", "LeaderAndIsr"]
        assert servicer.received[0][1] == servicer.received[1][1] == request.message
    finally:
        manager.shutdown()


def test_remove_broker_aborts_in_flight_and_drops_the_queue(
    hosts: list[BrokerHost], channel: ControllerChannelManager
) -> None:
    servicer = RecordingBroker()
    servicer.gate = threading.Event()  # hold the first call on the server
    host = BrokerHost(servicer)
    hosts.append(host)
    channel.add_broker(host.broker(1), 10)
    answered: list[object] = []
    for i in range(5):
        channel.send(1, lai(f"t{i}"), answered.append)
    assert wait_until(lambda: len(servicer.received) == 1)
    assert channel.queue_size(1) == 4
    assert channel.total_queue_size() == 4

    started = time.monotonic()
    channel.remove_broker(1)
    assert time.monotonic() - started < 2.0, "remove_broker waited for the call in flight"
    servicer.gate.set()
    time.sleep(0.3)
    assert len(servicer.received) == 1
    assert answered == []
    assert channel.queue_size(1) == 0
    assert channel.broker_ids() == set()
    assert not any(t.name.startswith("Controller-1-to-broker-1") for t in threading.enumerate())


def test_a_broker_that_moves_gets_every_queued_request_at_its_new_address(
    hosts: list[BrokerHost], channel: ControllerChannelManager, free_port: Callable[[], int]
) -> None:
    """BrokerModifications with a new controller endpoint: Kafka keeps the queue (it leaves
    the channel alone); here the sender follows the broker, the request in flight and the
    queued ones included, in order (they used to be dropped with the old sender)."""
    gone = Broker(1, (EndPoint("CONTROLLER", "127.0.0.1", free_port()),))  # nobody listens
    channel.add_broker(gone, 10)
    answered: list[object] = []
    for i in range(3):
        channel.send(1, lai(f"t{i}"), answered.append)
    assert wait_until(lambda: channel.queue_size(1) == 2)  # one in flight, failing
    host = BrokerHost(RecordingBroker())
    hosts.append(host)
    channel.update_broker(host.broker(1), 10)
    assert wait_until(lambda: len(answered) == 3)
    assert [req.topic_states[0].topic_name for _, req in host.servicer.received] == [
        "t0", "t1", "t2",
    ]  # fmt: skip
    assert channel.target(1) == f"127.0.0.1:{host.port}"
    # The same address again changes nothing; a registration without our listener keeps
    # the last address (as Kafka keeps sending to it).
    channel.update_broker(host.broker(1), 10)
    channel.update_broker(host.broker(1, listener="OTHER"), 10)
    channel.send(1, lai("after"), answered.append)
    assert wait_until(lambda: len(answered) == 4)


def test_requests_for_unknown_brokers_are_dropped_with_a_warning(
    hosts: list[BrokerHost], channel: ControllerChannelManager
) -> None:
    host = BrokerHost(RecordingBroker())
    hosts.append(host)
    channel.add_broker(host.broker(1), 10)
    with capture_logs() as logs:
        channel.send(2, lai("nowhere"), lambda r: None)
    dropped = [e for e in logs if e["log_level"] == "warning"]
    assert dropped and dropped[0]["broker_id"] == 2 and dropped[0]["request"] == "LeaderAndIsr"
    assert channel.total_queue_size() == 0
    time.sleep(0.1)
    assert host.servicer.received == []


def test_broker_without_the_controller_listener_is_logged_and_its_requests_dropped(
    hosts: list[BrokerHost], channel: ControllerChannelManager
) -> None:
    host = BrokerHost(RecordingBroker())
    hosts.append(host)
    with capture_logs() as logs:
        channel.add_broker(host.broker(7, listener="PLAINTEXT"), 10)
        channel.send(7, lai("t"), lambda r: None)
    errors = [e for e in logs if e["log_level"] == "error"]
    assert errors[0]["broker_id"] == 7 and errors[0]["listener"] == "CONTROLLER"
    assert "no endpoint" in errors[0]["event"]
    assert errors[1]["request"] == "LeaderAndIsr"  # the dropped request is logged too
    assert channel.broker_ids() == {7}
    assert channel.target(7) is None
    time.sleep(0.1)
    assert host.servicer.received == []


def test_startup_adds_brokers_and_add_broker_is_idempotent(
    hosts: list[BrokerHost], channel: ControllerChannelManager
) -> None:
    a, b = BrokerHost(RecordingBroker()), BrokerHost(RecordingBroker())
    hosts.extend([a, b])
    channel.startup([BrokerAndEpoch(a.broker(1), 100), BrokerAndEpoch(b.broker(2), 200)])
    channel.add_broker(b.broker(2), 999)  # known id: ignored, as in Kafka
    assert channel.broker_ids() == {1, 2}
    assert channel.broker_epoch(2) == 200
    assert channel.target(2) == f"127.0.0.1:{b.port}"
    done = threading.Barrier(3, timeout=5)
    for broker_id in (1, 2):
        msg = broker_pb2.StopReplicaRequest(controller_epoch=1)
        channel.send(broker_id, OutboundRequest.stop_replica(msg), lambda r: done.wait())
    done.wait()
    assert [k for k, _ in a.servicer.received] == ["StopReplica"]
    assert [k for k, _ in b.servicer.received] == ["StopReplica"]


def test_outbound_request_checks_the_message_type() -> None:
    with pytest.raises(TypeError, match="StopReplica needs a StopReplicaRequest"):
        OutboundRequest(RequestKind.STOP_REPLICA, broker_pb2.UpdateMetadataRequest())
    assert OutboundRequest.update_metadata(broker_pb2.UpdateMetadataRequest()).kind is (
        RequestKind.UPDATE_METADATA
    )


def test_metrics_hooks_see_brokers_and_queue_times(hosts: list[BrokerHost]) -> None:
    class Hooks:
        def __init__(self) -> None:
            self.added: dict[int, Callable[[], int]] = {}
            self.removed: list[int] = []
            self.queue_times: list[tuple[int, float]] = []

        def broker_added(self, broker_id: int, queue_size: Callable[[], int]) -> None:
            self.added[broker_id] = queue_size

        def broker_removed(self, broker_id: int) -> None:
            self.removed.append(broker_id)

        def request_dequeued(self, broker_id: int, queue_time_s: float) -> None:
            self.queue_times.append((broker_id, queue_time_s))

    hooks = Hooks()
    servicer = RecordingBroker(delay_s=0.05)
    host = BrokerHost(servicer)
    hosts.append(host)
    manager = ControllerChannelManager(1, "CONTROLLER", 5.0, hooks)
    try:
        manager.add_broker(host.broker(3), 1)
        answers: list[object] = []
        for i in range(3):
            manager.send(3, lai(f"t{i}"), answers.append)
        assert wait_until(lambda: hooks.added[3]() == 0 and len(answers) == 3)
        assert [b for b, _ in hooks.queue_times] == [3, 3, 3]
        # The third request waited behind two 50 ms calls.
        assert hooks.queue_times[2][1] >= 0.09
    finally:
        manager.shutdown()
    assert hooks.removed == [3]


class _ClosedBeforeTheCall(grpc.Channel):
    """A real channel that another thread closes after the stub was made and before the
    call starts (as stop() or a TLS rotation can). A stub made on an already closed channel
    would crash grpc itself, so the close happens inside the call."""

    def __init__(self, real: grpc.Channel) -> None:
        self._real = real

    def unary_unary(self, method: str, *args: object, **kwargs: object) -> Any:
        real = self._real.unary_unary(method, *args, **kwargs)

        def call(request: object, *a: object, **kw: object) -> object:
            self._real.close()
            return real(request, *a, **kw)

        return call

    def unary_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._real.unary_stream(*args, **kwargs)

    def stream_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self._real.stream_unary(*args, **kwargs)

    def stream_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._real.stream_stream(*args, **kwargs)

    def subscribe(self, *args: Any, **kwargs: Any) -> None:
        self._real.subscribe(*args, **kwargs)

    def unsubscribe(self, *args: Any, **kwargs: Any) -> None:
        self._real.unsubscribe(*args, **kwargs)

    def close(self) -> None:
        self._real.close()

    def __enter__(self) -> _ClosedBeforeTheCall:
        return self

    def __exit__(self, *exc_info: object) -> bool:
        self.close()
        return False


class _FirstChannelClosed(ChannelOpener):
    def __init__(self) -> None:
        super().__init__()
        self.opened = 0

    def open(self, target: str, options: ChannelOptions = ()) -> grpc.Channel:
        self.opened += 1
        channel = super().open(target, options)
        return _ClosedBeforeTheCall(channel) if self.opened == 1 else channel


def _first_send_fails(
    hosts: list[BrokerHost], opener: ChannelOpener
) -> tuple[RecordingBroker, list[object], list[dict[str, Any]]]:
    """Send one request through a sender whose first channel ``opener`` breaks, then a second;
    both must be answered by the same (still living) thread. The servicer, the answers and
    the first send's logs."""
    servicer = RecordingBroker()
    host = BrokerHost(servicer)
    hosts.append(host)
    sender = RequestSendThread(
        controller_id=1,
        broker_id=1,
        target=f"127.0.0.1:{host.port}",
        request_timeout_s=5.0,
        metrics=NoMetrics(),
        reconnect_backoff_s=0.05,
        channel_opener=opener,
    )
    sender.start()
    try:
        answers: list[object] = []
        with capture_logs() as logs:
            sender.enqueue(QueueItem(lai("first"), answers.append))
            assert wait_until(lambda: len(answers) == 1)
        sender.enqueue(QueueItem(lai("second"), answers.append))
        assert wait_until(lambda: len(answers) == 2)
        assert sender.is_alive()
    finally:
        sender.stop()
    return servicer, answers, logs


def _failures(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"].startswith("request to broker failed")]


def test_a_channel_closed_under_the_sender_is_a_failed_send_not_a_dead_thread(
    hosts: list[BrokerHost],
) -> None:
    opener = _FirstChannelClosed()
    servicer, _, logs = _first_send_fails(hosts, opener)
    assert opener.opened == 2
    assert [k for k, _ in servicer.received] == ["LeaderAndIsr", "LeaderAndIsr"]
    failed = _failures(logs)
    assert failed and failed[0]["code"] == "ValueError"


class _FirstOpenFails(ChannelOpener):
    """Opening the first channel raises (as TLS credentials that cannot be loaded do)."""

    def __init__(self) -> None:
        super().__init__()
        self.opened = 0

    def open(self, target: str, options: ChannelOptions = ()) -> grpc.Channel:
        self.opened += 1
        if self.opened == 1:
            raise RuntimeError("cannot load the TLS credentials")
        return super().open(target, options)


def test_a_failure_to_open_the_channel_is_retried_not_a_dead_thread(
    hosts: list[BrokerHost],
) -> None:
    # Kafka's send thread logs any exception and carries on; a dead thread would leave the
    # broker's queue growing with nothing sent until it re-registers.
    opener = _FirstOpenFails()
    _, _, logs = _first_send_fails(hosts, opener)
    assert opener.opened == 2
    failed = _failures(logs)
    assert failed and failed[0]["code"] == "INTERNAL"
    assert "cannot load the TLS credentials" in failed[0]["details"]


class SilentListener:
    """A TCP server that accepts connections and never answers: gRPC's HTTP/2 handshake never
    completes, so a channel to it stays CONNECTING (a broker host that hangs)."""

    def __init__(self, port: int) -> None:
        self._server = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self._server.settimeout(0.1)
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._server.close()
        for conn in self.accepted:
            conn.close()


def _channel_to(port: int, connect_timeout_s: float) -> ControllerChannelManager:
    """A channel with broker 1 at 127.0.0.1:``port`` and a 30 s request timeout."""
    manager = ControllerChannelManager(
        1, "CONTROLLER", request_timeout_s=30.0, connect_timeout_s=connect_timeout_s
    )
    manager.add_broker(Broker(1, (EndPoint("CONTROLLER", "127.0.0.1", port),)), 10)
    return manager


def test_a_connection_that_never_becomes_ready_is_retried_after_the_connect_timeout(
    hosts: list[BrokerHost], free_port: Callable[[], int]
) -> None:
    port = free_port()
    silent = SilentListener(port)
    # The request timeout (30 s) alone would hold the first connection for 30 s.
    manager = _channel_to(port, connect_timeout_s=0.3)
    try:
        answered = threading.Event()
        with capture_logs() as logs:
            manager.send(1, lai("hung"), lambda r: answered.set())
            assert wait_until(lambda: len(silent.accepted) >= 3, timeout=15), (
                f"{len(silent.accepted)} connection(s) in 15 s: the connect wait is not bounded"
            )
        assert not answered.is_set()
        failures = [e for e in logs if e["event"].startswith("request to broker failed")]
        assert failures and failures[0]["code"] == "DEADLINE_EXCEEDED"
        assert "controller.socket.timeout.ms" in failures[0]["details"]

        # The same request goes to a broker that answers on that address.
        silent.close()
        host = BrokerHost(RecordingBroker(), port=port)
        hosts.append(host)
        assert answered.wait(10), "request never reached the broker that replaced the hung one"
        assert [req.topic_states[0].topic_name for _, req in host.servicer.received] == ["hung"]
    finally:
        manager.shutdown()
        silent.close()


def test_remove_broker_interrupts_a_connect_wait(free_port: Callable[[], int]) -> None:
    port = free_port()
    silent = SilentListener(port)
    manager = _channel_to(port, connect_timeout_s=30.0)
    try:
        manager.send(1, lai("hung"), None)
        assert wait_until(lambda: len(silent.accepted) == 1)
        started = time.monotonic()
        manager.remove_broker(1)
        assert time.monotonic() - started < 2.0, "remove_broker waited out the connect timeout"
        assert not any(t.name.startswith("Controller-1-to-broker-1") for t in threading.enumerate())
    finally:
        manager.shutdown()
        silent.close()


def test_a_broker_that_moves_during_a_connect_wait_is_followed_at_once(
    hosts: list[BrokerHost], free_port: Callable[[], int]
) -> None:
    # The old address accepts and never answers; the broker re-registers elsewhere. Closing
    # a gRPC channel does not wake its connectivity subscribers: the wait must notice itself.
    port = free_port()
    silent = SilentListener(port)
    manager = _channel_to(port, connect_timeout_s=30.0)
    host = BrokerHost(RecordingBroker())
    hosts.append(host)
    try:
        answered = threading.Event()
        manager.send(1, lai("moved"), lambda r: answered.set())
        assert wait_until(lambda: len(silent.accepted) == 1)
        started = time.monotonic()
        manager.update_broker(host.broker(1), 11)
        assert answered.wait(10)
        assert time.monotonic() - started < 5.0, "waited out the old address's connect timeout"
        assert [req.topic_states[0].topic_name for _, req in host.servicer.received] == ["moved"]
    finally:
        manager.shutdown()
        silent.close()


def test_a_non_positive_connect_timeout_is_refused() -> None:
    with pytest.raises(ValueError, match="connect_timeout_s"):
        ControllerChannelManager(1, "CONTROLLER", connect_timeout_s=0.0)
