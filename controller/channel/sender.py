"""One broker's outbound queue and its single-flight sender thread (Kafka's ``RequestSendThread``).

Each registered broker gets a FIFO queue and one thread that sends the queued requests one at
a time, waiting for each response before sending the next (reference §4.2). A failed call (any
gRPC error: UNAVAILABLE, DEADLINE_EXCEEDED, ...) closes the gRPC channel, backs off 100 ms,
opens a fresh channel and resends the *same* request, for as long as the broker stays
registered; ``stop`` (called by ``remove_broker``) is the only way out. The response callback
runs on this thread and must only enqueue a controller event.

A fresh channel per retry (with a local subchannel pool) gives Kafka's "no reconnect backoff"
behaviour: gRPC's own reconnect backoff grows to minutes and would otherwise delay the first
request to a broker that comes up late.

A fresh channel must connect within ``connect_timeout_s`` (Kafka's
``controller.socket.timeout.ms``) before the request is sent with its own deadline
(``request.timeout.ms``): a refused connection fails at once, a host that never completes the
handshake (a dead machine, a dropped SYN) fails after the connect timeout; either way the
channel is closed and the request resent after the backoff, as Kafka's ``awaitReady`` does.
"""

from __future__ import annotations

import enum
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import grpc
import structlog

from controller.api import MESSAGE_SIZE_OPTIONS
from controller.api.errors import error_name
from controller.api.v1 import broker_pb2, broker_pb2_grpc
from controller.security.tls import PLAINTEXT, ChannelOpener

log = structlog.get_logger("controller.channel")

RECONNECT_BACKOFF_S = 0.1
# Repeated failures of one request are logged at most this often (a dead broker is retried
# every 100 ms until the controller removes it, which takes a ZooKeeper session timeout).
FAILURE_LOG_INTERVAL_S = 5.0

RequestMessage = (
    broker_pb2.LeaderAndIsrRequest
    | broker_pb2.UpdateMetadataRequest
    | broker_pb2.StopReplicaRequest
)
ResponseMessage = (
    broker_pb2.LeaderAndIsrResponse
    | broker_pb2.UpdateMetadataResponse
    | broker_pb2.StopReplicaResponse
)
ResponseCallback = Callable[[ResponseMessage], None]


class RequestKind(enum.Enum):
    """The three controller-to-broker requests; the value is the RPC method name."""

    LEADER_AND_ISR = "LeaderAndIsr"
    UPDATE_METADATA = "UpdateMetadata"
    STOP_REPLICA = "StopReplica"


_MESSAGE_TYPES: dict[RequestKind, type] = {
    RequestKind.LEADER_AND_ISR: broker_pb2.LeaderAndIsrRequest,
    RequestKind.UPDATE_METADATA: broker_pb2.UpdateMetadataRequest,
    RequestKind.STOP_REPLICA: broker_pb2.StopReplicaRequest,
}


@dataclass(frozen=True, slots=True)
class OutboundRequest:
    """A request for one broker: its kind and the protobuf message, sent as is (resends too)."""

    kind: RequestKind
    message: RequestMessage

    def __post_init__(self) -> None:
        expected = _MESSAGE_TYPES[self.kind]
        if not isinstance(self.message, expected):
            raise TypeError(
                f"{self.kind.value} needs a {expected.__name__}, got {type(self.message).__name__}"
            )

    @classmethod
    def leader_and_isr(cls, message: broker_pb2.LeaderAndIsrRequest) -> OutboundRequest:
        return cls(RequestKind.LEADER_AND_ISR, message)

    @classmethod
    def update_metadata(cls, message: broker_pb2.UpdateMetadataRequest) -> OutboundRequest:
        return cls(RequestKind.UPDATE_METADATA, message)

    @classmethod
    def stop_replica(cls, message: broker_pb2.StopReplicaRequest) -> OutboundRequest:
        return cls(RequestKind.STOP_REPLICA, message)


class ChannelMetricsHooks(Protocol):
    """What the channel reports; the metrics module implements it (Kafka's ``QueueSize``
    gauge and ``RequestRateAndQueueTimeMs`` timer, both per broker)."""

    def broker_added(self, broker_id: int, queue_size: Callable[[], int]) -> None: ...

    def broker_removed(self, broker_id: int) -> None: ...

    def request_dequeued(self, broker_id: int, queue_time_s: float) -> None: ...


class ChannelSendObserver(Protocol):
    """Optional on a ``ChannelMetricsHooks``: the time from the first send of a request to its
    response, resends included (the broker's request latency as the controller sees it)."""

    def request_sent(self, broker_id: int, request: str, seconds: float) -> None: ...


class NoMetrics:
    def broker_added(self, broker_id: int, queue_size: Callable[[], int]) -> None:
        pass

    def broker_removed(self, broker_id: int) -> None:
        pass

    def request_dequeued(self, broker_id: int, queue_time_s: float) -> None:
        pass


@dataclass(slots=True)
class QueueItem:
    request: OutboundRequest
    callback: ResponseCallback | None
    enqueue_time: float = field(default_factory=time.monotonic)


_STOP = object()  # queue sentinel that wakes the thread up for shutdown
_STOP_POLL_S = 0.1  # how often a connect wait checks for stop()
# Connectivity states that end a connect wait: ready, or failed (refused, reset, closed).
_SETTLED = frozenset(
    {
        grpc.ChannelConnectivity.READY,
        grpc.ChannelConnectivity.TRANSIENT_FAILURE,
        grpc.ChannelConnectivity.SHUTDOWN,
    }
)


class RequestSendThread(threading.Thread):
    """Sends one broker's requests in FIFO order, exactly one in flight, resending on failure."""

    def __init__(
        self,
        *,
        controller_id: int,
        broker_id: int,
        target: str,
        request_timeout_s: float,
        metrics: ChannelMetricsHooks,
        reconnect_backoff_s: float = RECONNECT_BACKOFF_S,
        channel_opener: ChannelOpener = PLAINTEXT,
        connect_timeout_s: float | None = None,
    ) -> None:
        super().__init__(
            name=f"Controller-{controller_id}-to-broker-{broker_id}-send-thread", daemon=True
        )
        # Plaintext or TLS, per the broker's listener security protocol (controller.security).
        self._opener = channel_opener
        self.broker_id = broker_id
        self.target = target
        self._timeout = request_timeout_s
        self._connect_timeout = connect_timeout_s or request_timeout_s
        self._metrics = metrics
        # Optional so that existing hooks without it keep working.
        self._on_sent: Callable[[int, str, float], None] | None = getattr(
            metrics, "request_sent", None
        )
        self._backoff = reconnect_backoff_s
        self._queue: queue.SimpleQueue[QueueItem | object] = queue.SimpleQueue()
        self._size = 0  # items queued, excluding the one in flight (Kafka's QueueSize)
        self._size_lock = threading.Lock()
        self._stopping = threading.Event()
        self._channel_lock = threading.Lock()  # guards _channel against a concurrent stop()
        self._channel: grpc.Channel | None = None
        self._stub: broker_pb2_grpc.BrokerServiceStub | None = None

    # -- called by the channel manager -------------------------------------------------------

    def enqueue(self, item: QueueItem) -> None:
        with self._size_lock:
            self._size += 1
        self._queue.put(item)

    def queue_size(self) -> int:
        return self._size

    def retarget(self, target: str, channel_opener: ChannelOpener) -> None:
        """Send to ``target`` from now on. The queue is kept, and the request in flight (its
        call fails as the channel closes) is sent again, to the new address."""
        with self._channel_lock:
            self.target = target
            self._opener = channel_opener
        self._close_channel()

    def stop(self, wait: bool = True) -> None:
        """Stop sending: abort the call in flight, drop the queue, and (by default) join."""
        self._stopping.set()
        self._queue.put(_STOP)
        self._close_channel()  # cancels the RPC in flight, which unblocks the thread
        if wait and self.is_alive() and threading.current_thread() is not self:
            self.join()

    # -- the thread ------------------------------------------------------------------------------

    def run(self) -> None:
        structlog.contextvars.bind_contextvars(broker_id=self.broker_id)
        try:
            while not self._stopping.is_set():
                item = self._queue.get()
                if item is _STOP or not isinstance(item, QueueItem):
                    break
                with self._size_lock:
                    self._size -= 1
                self._metrics.request_dequeued(self.broker_id, time.monotonic() - item.enqueue_time)
                sent = time.monotonic()
                response = self._send_until_answered(item.request)
                if response is None:  # stopped while sending
                    break
                if self._on_sent is not None:
                    self._on_sent(self.broker_id, item.request.kind.value, time.monotonic() - sent)
                self._deliver(item, response)
                # Drop them before waiting for the next one: an UpdateMetadata of 100K
                # partitions is ~10 MB, and each broker's thread would hold its last one.
                del item, response
        finally:
            self._close_channel()

    def _attempt(self, request: OutboundRequest) -> ResponseMessage | tuple[str, str] | None:
        """One send: the response, the failure as (code, details), or None once stopping."""
        connected = self._connect()
        if connected is None:
            return None
        stub, fresh = connected
        failure = self._await_ready() if fresh else None
        if failure is not None:
            return failure
        method = getattr(stub, request.kind.value)
        try:
            response: ResponseMessage = method(request.message, timeout=self._timeout)
        except (grpc.RpcError, ValueError) as exc:
            # ValueError: grpc's "Cannot invoke RPC on closed channel", when the channel was
            # closed (by stop(), or a TLS channel replaced on rotation) between taking the
            # stub and the call starting. The thread must survive it like any failed send.
            code, details = _code_name(exc), _details(exc)
            if self._opener.secure and code == "UNAVAILABLE" and _closed_on_us(details):
                details += f"; {CLIENT_CERT_HINT}"
            return (code, details)
        return response

    def _send_until_answered(self, request: OutboundRequest) -> ResponseMessage | None:
        failures = 0
        last_logged = 0.0
        while not self._stopping.is_set():
            try:
                outcome = self._attempt(request)
            except Exception as exc:
                # Opening or connecting the channel broke (e.g. TLS files that cannot be
                # loaded): as Kafka's send thread, log, reconnect and carry on; a dead thread
                # would leave this broker's queue growing with nothing sent.
                log.exception("unexpected error sending to broker", request=request.kind.value)
                outcome = ("INTERNAL", f"{type(exc).__name__}: {exc}")
            if outcome is None:
                return None
            if not isinstance(outcome, tuple):
                if failures:
                    log.info(
                        "request to broker succeeded after retries",
                        request=request.kind.value,
                        attempts=failures + 1,
                    )
                return outcome
            failure = outcome
            if self._stopping.is_set():
                return None
            failures += 1
            now = time.monotonic()
            if failures == 1 or now - last_logged >= FAILURE_LOG_INTERVAL_S:
                last_logged = now
                log.warning(
                    "request to broker failed; reconnecting and resending",
                    request=request.kind.value,
                    target=self.target,
                    code=failure[0],
                    details=failure[1],
                    attempts=failures,
                )
            self._close_channel()
            self._stopping.wait(self._backoff)
        return None

    def _deliver(self, item: QueueItem, response: ResponseMessage) -> None:
        code = getattr(response, "error_code", 0)
        if code:
            log.debug(
                "broker answered with an error",
                request=item.request.kind.value,
                error=error_name(code),
            )
        if item.callback is None:
            return
        try:
            item.callback(response)
        except Exception:
            # Kafka loses the item in this case and keeps the thread alive; so do we.
            log.exception("response callback failed", request=item.request.kind.value)

    def _connect(self) -> tuple[broker_pb2_grpc.BrokerServiceStub, bool] | None:
        """The stub, and whether its channel was just opened; None once stopping."""
        with self._channel_lock:
            if self._stopping.is_set():
                return None
            if self._stub is not None:
                return self._stub, False
            self._channel = self._opener.open(
                self.target,
                options=[*MESSAGE_SIZE_OPTIONS, ("grpc.use_local_subchannel_pool", 1)],
            )
            self._stub = broker_pb2_grpc.BrokerServiceStub(self._channel)
            return self._stub, True

    def _await_ready(self) -> tuple[str, str] | None:
        """Connect the fresh channel, waiting up to the connect timeout; the failure as
        (code, details), or None once it is ready."""
        with self._channel_lock:
            channel = self._channel
        if channel is None:  # closed by stop() meanwhile
            return ("CANCELLED", "the channel was closed")
        settled: list[grpc.ChannelConnectivity] = []
        changed = threading.Event()

        def on_change(state: grpc.ChannelConnectivity) -> None:
            if state in _SETTLED:
                settled.append(state)
                changed.set()

        channel.subscribe(on_change, try_to_connect=True)
        subscribed = channel  # the loop's `self._channel is channel` widens channel for mypy
        try:
            deadline = time.monotonic() + self._connect_timeout
            # Sliced, so that stop() or retarget() (which close the channel: gRPC does not tell
            # its subscribers) is noticed promptly.
            while (
                not changed.is_set() and not self._stopping.is_set() and self._channel is channel
            ):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                changed.wait(min(remaining, _STOP_POLL_S))
        finally:
            subscribed.unsubscribe(on_change)
        if settled and settled[0] is grpc.ChannelConnectivity.READY:
            return None
        if not settled and self._channel is not channel:
            return ("CANCELLED", "the channel was closed (the broker moved, or stopping)")
        if settled:
            details = f"could not connect to {self.target} ({settled[0].name})"
            cause = _connect_error(channel)
            if cause:
                details += f": {cause}"
            if self._opener.secure and (hint := _tls_hint(cause)) is not None:
                details += f"; {hint}"
            return ("UNAVAILABLE", details)
        return (
            "DEADLINE_EXCEEDED",
            f"no connection to {self.target} within the connect timeout "
            f"(controller.socket.timeout.ms, {self._connect_timeout * 1000:.0f} ms)",
        )

    def _close_channel(self) -> None:
        with self._channel_lock:
            channel, self._channel, self._stub = self._channel, None, None
        if channel is not None:
            channel.close()


# How long the probe for gRPC's last connection error may take (it fails fast: no wait for
# the channel to be ready).
_PROBE_TIMEOUT_S = 1.0
# "verification": gRPC's "Hostname Verification Check failed" (a certificate not naming the
# host the broker registered).
_TLS_MARKERS = ("tls", "ssl", "handshake", "certificate", "tsi_", "verification")
TLS_HINT = (
    "the broker's controller listener is SSL: check that its certificate chains to "
    "grpc.tls.ca.file and names the host it registers, and that it trusts our "
    "grpc.tls.cert.file (mutual TLS)"
)
CLIENT_CERT_HINT = (
    "the broker closed the TLS connection: it may refuse our grpc.tls.cert.file (mutual TLS: "
    "check that it chains to the broker's CA file and has the clientAuth extended key usage; "
    "the broker's log says why)"
)


def _connect_error(channel: grpc.Channel) -> str | None:
    """gRPC's last connection error on ``channel`` (e.g. the TLS handshake's
    CERTIFICATE_VERIFY_FAILED), which its connectivity states do not carry: a call that does
    not wait for the channel fails at once with it. A read-only Describe, should the channel
    have connected meanwhile."""
    try:
        broker_pb2_grpc.BrokerServiceStub(channel).Describe(
            broker_pb2.DescribeRequest(), timeout=_PROBE_TIMEOUT_S, wait_for_ready=False
        )
    except grpc.RpcError as exc:
        if exc.code() is not grpc.StatusCode.UNAVAILABLE:
            return None
        details = exc.details() or ""
        return details.partition("last error: ")[2] or details or None
    except ValueError:  # the channel was closed meanwhile
        return None
    return None


def _looks_like_tls(error: str) -> bool:
    lowered = error.lower()
    return any(marker in lowered for marker in _TLS_MARKERS)


def _closed_on_us(error: str) -> bool:
    # TLS 1.3: our side of the handshake completes before the broker checks our certificate;
    # a broker refusing it just closes the connection.
    return "socket closed" in error.lower()


def _tls_hint(cause: str | None) -> str | None:
    """What to check after a TLS connection to a broker failed with ``cause``."""
    if cause is None or _looks_like_tls(cause):
        return TLS_HINT
    if _closed_on_us(cause):
        return CLIENT_CERT_HINT
    return None


def _code_name(exc: Exception) -> str:
    code = exc.code() if isinstance(exc, grpc.Call) else None
    return code.name if code is not None else type(exc).__name__


def _details(exc: Exception) -> str:
    return (exc.details() or "") if isinstance(exc, grpc.Call) else str(exc)
