"""The controller's channels to brokers (Kafka's ``ControllerChannelManager``, reference §4.1).

One entry per broker the controller accepted (live or shutting down): a FIFO queue and a
single-flight sender thread (``sender.RequestSendThread``). The target address is the broker's
registered endpoint for the configured listener (``CONTROLLER`` by default), taken from its
``/brokers/ids/N`` registration.

* ``send`` to a broker that is not registered here drops the request with a warning: Kafka
  treats such a broker as offline, and the controller resends everything a broker needs when
  it comes (back) up.
* ``remove_broker`` stops the thread (aborting the call in flight) and discards the queue.
* A broker without the configured listener is registered but has no sender: its requests are
  dropped and logged as errors (a configuration problem to fix, not to retry).
* The channel is TLS when the broker registered that listener with security protocol SSL
  (Kafka's ``listener_security_protocol_map``), with the controller's ``ClientTls`` (trust and
  client certificate, reloaded when the files change); plaintext otherwise.

All map access is serialised by one lock; threads are stopped outside it, so that a response
callback running on a sender thread can never deadlock against ``remove_broker``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

import structlog

from controller.channel.sender import (
    RECONNECT_BACKOFF_S,
    ChannelMetricsHooks,
    NoMetrics,
    OutboundRequest,
    QueueItem,
    RequestSendThread,
    ResponseCallback,
)
from controller.core.model import Broker, BrokerAndEpoch, EndPoint
from controller.security.tls import PLAINTEXT, ChannelOpener, ClientTls, TlsFiles

log = structlog.get_logger("controller.channel")

DEFAULT_LISTENER = "CONTROLLER"
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})


@dataclass(slots=True)
class _BrokerState:
    broker: Broker
    broker_epoch: int
    sender: RequestSendThread | None  # None: the broker has no endpoint for our listener


class ControllerChannelManager:
    def __init__(
        self,
        controller_id: int,
        listener_name: str = DEFAULT_LISTENER,
        request_timeout_s: float = 30.0,
        metrics_hooks: ChannelMetricsHooks | None = None,
        *,
        reconnect_backoff_s: float = RECONNECT_BACKOFF_S,
        tls: ClientTls | None = None,
        connect_timeout_s: float | None = None,
    ) -> None:
        if request_timeout_s <= 0:
            raise ValueError(f"request_timeout_s must be positive, got {request_timeout_s}")
        if connect_timeout_s is not None and connect_timeout_s <= 0:
            raise ValueError(f"connect_timeout_s must be positive, got {connect_timeout_s}")
        self.controller_id = controller_id
        self.listener_name = listener_name
        self.request_timeout_s = request_timeout_s
        # Kafka's controller.socket.timeout.ms; None: the request timeout.
        self.connect_timeout_s = connect_timeout_s or request_timeout_s
        self._metrics: ChannelMetricsHooks = metrics_hooks or NoMetrics()
        self._backoff = reconnect_backoff_s
        self._tls_opener = ChannelOpener(tls) if tls is not None else None
        self._lock = threading.Lock()  # Kafka's brokerLock
        self._brokers: dict[int, _BrokerState] = {}

    # -- membership ---------------------------------------------------------------------------

    def startup(self, brokers: Iterable[BrokerAndEpoch]) -> None:
        """Add every live-or-shutting-down broker (at controller failover)."""
        for b in brokers:
            self.add_broker(b.broker, b.epoch)

    def add_broker(self, broker: Broker, broker_epoch: int) -> None:
        """Start a queue and sender for ``broker``. Idempotent: a known id is left as is
        (a bounced broker is removed and re-added by the controller)."""
        with self._lock:
            if broker.id in self._brokers:
                return
            endpoint = broker.endpoint(self.listener_name)
            sender: RequestSendThread | None = None
            if endpoint is None:
                log.error(
                    "broker has no endpoint for the controller's listener; "
                    "requests to it will be dropped",
                    broker_id=broker.id,
                    listener=self.listener_name,
                    endpoints=[e.connection_string() for e in broker.endpoints],
                )
            else:
                sender = RequestSendThread(
                    controller_id=self.controller_id,
                    broker_id=broker.id,
                    target=endpoint.address,
                    request_timeout_s=self.request_timeout_s,
                    connect_timeout_s=self.connect_timeout_s,
                    metrics=self._metrics,
                    reconnect_backoff_s=self._backoff,
                    channel_opener=self._opener_for(broker.id, endpoint),
                )
            self._brokers[broker.id] = _BrokerState(broker, broker_epoch, sender)
            if sender is not None:
                self._metrics.broker_added(broker.id, sender.queue_size)
                sender.start()
        log.info(
            "added broker to the controller channel",
            broker_id=broker.id,
            broker_epoch=broker_epoch,
            target=endpoint.address if endpoint else None,
        )

    def _opener_for(self, broker_id: int, endpoint: EndPoint) -> ChannelOpener:
        if endpoint.security_protocol not in TLS_PROTOCOLS:
            return PLAINTEXT
        if self._tls_opener is None:
            # No grpc.tls.* configured: trust the system's roots, present no certificate.
            log.warning(
                "broker's controller listener is SSL but grpc.tls.ca.file is not set; "
                "verifying it against the system's CA roots",
                broker_id=broker_id,
            )
            self._tls_opener = ChannelOpener(ClientTls(TlsFiles()))
        return self._tls_opener

    def update_broker(self, broker: Broker, broker_epoch: int) -> None:
        """A registered broker changed its registration (Kafka's BrokerModifications). Its
        queued requests are kept: Kafka leaves the channel alone; here the sender follows a
        new address of the controller's listener, resending the request in flight there."""
        with self._lock:
            state = self._brokers.get(broker.id)
            if state is None:
                return
            old = state.broker.endpoint(self.listener_name)
            new = broker.endpoint(self.listener_name)
            state.broker, state.broker_epoch = broker, broker_epoch
            sender = state.sender
            if new == old or sender is None:
                retarget = None
            elif new is None:
                log.warning(
                    "broker's new registration has no endpoint for the controller's listener; "
                    "still sending to its previous one",
                    broker_id=broker.id,
                    listener=self.listener_name,
                )
                retarget = None
            else:
                retarget = (new.address, self._opener_for(broker.id, new))
        if sender is None and new is not None:
            # It had no endpoint for our listener (its requests were dropped); it has one now.
            self.remove_broker(broker.id)
            self.add_broker(broker, broker_epoch)
        elif sender is not None and retarget is not None:
            sender.retarget(*retarget)
            log.info("broker moved; the controller channel follows it", broker_id=broker.id,
                     target=retarget[0])  # fmt: skip

    def remove_broker(self, broker_id: int) -> None:
        """Stop the broker's sender and discard its queued requests."""
        with self._lock:
            state = self._brokers.pop(broker_id, None)
        if state is None:
            return
        self._stop(state)
        log.info("removed broker from the controller channel", broker_id=broker_id)

    def shutdown(self) -> None:
        """Remove every broker. Senders are stopped together, then joined."""
        with self._lock:
            states = list(self._brokers.values())
            self._brokers.clear()
        for state in states:
            if state.sender is not None:
                state.sender.stop(wait=False)
        for state in states:
            self._stop(state)

    def _stop(self, state: _BrokerState) -> None:
        if state.sender is not None:
            state.sender.stop()
            self._metrics.broker_removed(state.broker.id)

    # -- sending ------------------------------------------------------------------------------

    def send(
        self,
        broker_id: int,
        request: OutboundRequest,
        callback: ResponseCallback | None = None,
    ) -> None:
        """Queue ``request`` for ``broker_id``; ``callback(response)`` runs on its sender thread."""
        with self._lock:
            state = self._brokers.get(broker_id)
            if state is not None and state.sender is not None:
                state.sender.enqueue(QueueItem(request, callback))
                return
        if state is None:
            log.warning(
                "dropping request to a broker that is not registered with the channel",
                broker_id=broker_id,
                request=request.kind.value,
            )
        else:
            log.error(
                "dropping request: broker has no endpoint for the controller's listener",
                broker_id=broker_id,
                listener=self.listener_name,
                request=request.kind.value,
            )

    # -- introspection ------------------------------------------------------------------------

    def broker_ids(self) -> set[int]:
        with self._lock:
            return set(self._brokers)

    def broker_epoch(self, broker_id: int) -> int | None:
        """The epoch the broker had when it was added (for logs and diagnostics)."""
        with self._lock:
            state = self._brokers.get(broker_id)
            return state.broker_epoch if state else None

    def target(self, broker_id: int) -> str | None:
        """The ``host:port`` the broker's requests go to, if it has our listener."""
        with self._lock:
            state = self._brokers.get(broker_id)
            return state.sender.target if state and state.sender else None

    def queue_size(self, broker_id: int) -> int:
        """Requests queued for the broker, not counting the one in flight; 0 if unknown."""
        with self._lock:
            state = self._brokers.get(broker_id)
            return state.sender.queue_size() if state and state.sender else 0

    def total_queue_size(self) -> int:
        with self._lock:
            return sum(s.sender.queue_size() for s in self._brokers.values() if s.sender)
