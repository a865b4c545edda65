"""Prometheus metrics of one controller, mirroring Kafka's controller metrics (reference §5.1).

Names: prefix ``kafka_controller_``, base units (seconds), ``_total`` counters, no topic or
partition labels (that detail is in the state-change log). Every daemon instance owns its own
``CollectorRegistry``; nothing touches the global ``REGISTRY``.

The gauges Kafka computes from the controller context (``updateMetrics`` after every event)
come from an immutable ``ControllerMetricsSnapshot`` that the event thread publishes with
``update()``; scrapes only read that reference, never the context or ZooKeeper. As in Kafka,
they read 0 unless the snapshot says this controller is active; ``controller_state`` and
``zk_migration_state`` are reported regardless. ``active_controller_count`` and
``controller_epoch`` are read live (Kafka's gauge reads ``isActive``), so they are 1 and the
won epoch from the election on, also during a long failover whose snapshot is published only
when the failover event ends.

Beyond Kafka's controller metrics: the channel's per-broker queues (Kafka's
``ControllerChannelManager`` group, label ``broker_id``), send latency per broker and request,
ZooKeeper request latency and batch sizes (from ``KazooPort``'s observer hook), the ZooKeeper
session state, leader elections by type and ``build_info``. The channel and ZooKeeper hooks are
methods of ``ControllerMetrics`` itself, so one object is handed to every component.

Kafka clears ``EventQueueTimeMs`` after 300 s with an empty queue so its sampled percentiles
reflect recent events. That is not done here: a Prometheus histogram is cumulative and
recency comes from ``rate()`` over a window in the query; clearing would only show up as a
counter reset.
"""

from __future__ import annotations

import contextlib
import math
import platform
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, RestrictedRegistry

from controller.core.controller_state import TIMED_STATES, ControllerState
from controller.core.events import event_names

log = structlog.stdlib.get_logger("controller.metrics")

PREFIX = "kafka_controller_"
ZK_MIGRATION_STATE_ZK = 4  # Kafka's ZkMigrationState.ZK: a ZooKeeper-mode controller

# From sub-millisecond queue waits to multi-minute failovers of very large clusters.
DURATION_BUCKETS: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
)  # fmt: skip

# ZooKeeper round trips on a LAN or loopback are sub-millisecond; a slow ensemble takes seconds.
ZK_LATENCY_BUCKETS: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
# Ops per multi, paths per batched read: from single writes to 100K-partition failovers.
BATCH_SIZE_BUCKETS: tuple[float, ...] = (
    1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 100000,
)  # fmt: skip

#: The election types (``controller.core.election.ElectionKind``), one counter series each.
ELECTION_TYPES: tuple[str, ...] = (
    "offline", "offline_unclean", "reassign", "preferred", "controlled_shutdown",
)  # fmt: skip
#: ZooKeeper session states, as ``controller.zk.port.SessionState`` values.
SESSION_STATES: tuple[str, ...] = ("connected", "suspended", "lost")
#: The controller-to-broker requests (``channel.sender.RequestKind`` values).
REQUEST_KINDS: tuple[str, ...] = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")


@dataclass(frozen=True, slots=True)
class ControllerMetricsSnapshot:
    """The controller-context values behind Kafka's ``KafkaController`` gauges."""

    active: bool = False
    epoch: int = 0
    global_topic_count: int = 0
    global_partition_count: int = 0  # partitions with leadership info, as in Kafka
    active_broker_count: int = 0  # live or shutting down
    offline_partitions_count: int = 0
    preferred_replica_imbalance_count: int = 0
    topics_to_delete_count: int = 0
    replicas_to_delete_count: int = 0
    topics_ineligible_to_delete_count: int = 0
    replicas_ineligible_to_delete_count: int = 0


INACTIVE = ControllerMetricsSnapshot()

# (metric suffix, snapshot attribute or None for a constant 0, help text)
_CONTEXT_GAUGES: tuple[tuple[str, str | None, str], ...] = (
    ("controller_epoch", "epoch", "Epoch of this controller while it is active."),
    ("global_topic_count", "global_topic_count", "Topics in the cluster."),
    ("global_partition_count", "global_partition_count",
     "Partitions with leadership information."),
    ("active_broker_count", "active_broker_count", "Live (including shutting-down) brokers."),
    ("fenced_broker_count", None, "Fenced brokers; always 0 in ZooKeeper mode."),
    ("offline_partitions_count", "offline_partitions_count",
     "Partitions without a live leader, excluding topics whose deletion has started."),
    ("preferred_replica_imbalance_count", "preferred_replica_imbalance_count",
     "Partitions whose leader is not the preferred replica, topics queued for deletion "
     "excluded."),
    ("topics_to_delete_count", "topics_to_delete_count", "Topics queued for deletion."),
    ("replicas_to_delete_count", "replicas_to_delete_count",
     "Replicas of queued topics not yet deleted."),
    ("topics_ineligible_to_delete_count", "topics_ineligible_to_delete_count",
     "Queued topics whose deletion is currently blocked."),
    ("replicas_ineligible_to_delete_count", "replicas_ineligible_to_delete_count",
     "Replicas of queued topics whose deletion is currently blocked."),
)  # fmt: skip


def _version() -> str:
    try:
        return metadata.version("zk-controller")
    except metadata.PackageNotFoundError:
        from controller import __version__

        return __version__


def _without_created(metrics: Iterable[Metric]) -> Iterable[Metric]:
    for metric in metrics:
        created = metric.name + "_created"
        if any(s.name == created for s in metric.samples):
            metric.samples = [s for s in metric.samples if s.name != created]
        yield metric


class _Restricted:
    def __init__(self, inner: RestrictedRegistry) -> None:
        self._inner = inner

    def collect(self) -> Iterable[Metric]:
        return _without_created(self._inner.collect())


class _Registry(CollectorRegistry):
    """A registry that leaves out the ``_created`` series of counters and histograms.

    prometheus_client's switch for this (``disable_created_metrics``) is process-global;
    filtering here keeps the choice per instance.
    """

    def collect(self) -> Iterable[Metric]:
        return _without_created(super().collect())

    def restricted_registry(self, names: Iterable[str]) -> RestrictedRegistry:
        # The stock RestrictedRegistry reads the collectors directly, bypassing collect().
        return _Restricted(super().restricted_registry(names))  # type: ignore[return-value]


class _ContextGauges(Collector):
    """Computed gauges, read on each scrape from published values only."""

    def __init__(self, owner: ControllerMetrics) -> None:
        self._owner = owner

    def describe(self) -> Iterable[Metric]:
        return self._families(INACTIVE, False, 0, ControllerState.Idle, 0)

    def collect(self) -> Iterable[Metric]:
        owner = self._owner
        snap = owner.snapshot
        active, epoch = owner.read_leadership(snap)
        return self._families(snap, active, epoch, owner.read_state(), owner.read_queue_size())

    @staticmethod
    def _families(
        snap: ControllerMetricsSnapshot,
        active: bool,
        epoch: int,
        state: ControllerState,
        queue_size: int,
    ) -> list[Metric]:
        families: list[Metric] = [
            GaugeMetricFamily(
                PREFIX + "active_controller_count",
                "1 if this process is the active controller, else 0.",
                value=1 if active else 0,
            ),
            GaugeMetricFamily(
                PREFIX + "controller_state",
                "ControllerState value of the event being processed; 0 when idle.",
                value=int(state),
            ),
            GaugeMetricFamily(
                PREFIX + "zk_migration_state",
                "Kafka's ZkMigrationState; always 4 (ZK) for a ZooKeeper-mode controller.",
                value=ZK_MIGRATION_STATE_ZK,
            ),
            GaugeMetricFamily(
                PREFIX + "event_queue_size", "Controller events waiting.", value=queue_size
            ),
        ]
        for suffix, attr, doc in _CONTEXT_GAUGES:
            if suffix == "controller_epoch":
                value = epoch if active else 0
            else:
                # Gated on the live reading too: a controller whose session expired must not
                # count its partitions beside its successor's while its Expire waits.
                value = getattr(snap, attr) if active and snap.active and attr is not None else 0
            families.append(GaugeMetricFamily(PREFIX + suffix, doc, value=value))
        return families


class _LiveGauges(Collector):
    """Gauges read from live sources at scrape time: channel queues and the ZooKeeper session."""

    def __init__(self, owner: ControllerMetrics) -> None:
        self._owner = owner

    def describe(self) -> Iterable[Metric]:
        return self._families({}, None, self._owner.controller_id)

    def collect(self) -> Iterable[Metric]:
        owner = self._owner
        return self._families(owner.read_queue_sizes(), owner.read_session_state(),
                              owner.controller_id)  # fmt: skip

    @staticmethod
    def _families(
        queues: dict[int, int], session: str | None, controller_id: int | None
    ) -> list[Metric]:
        per_broker = GaugeMetricFamily(
            PREFIX + "channel_queue_size",
            "Requests queued for one broker, excluding the one in flight (Kafka's QueueSize).",
            labels=("broker_id",),
        )
        for broker_id, size in sorted(queues.items()):
            per_broker.add_metric((str(broker_id),), size)
        # The enum pattern (one 0/1 series per state): alerts select {state="connected"}.
        session_family = GaugeMetricFamily(
            PREFIX + "zookeeper_session_state",
            "State of this process's ZooKeeper session: the series of the current state is 1.",
            labels=("state",),
        )
        for state in SESSION_STATES:
            session_family.add_metric((state,), 1 if state == session else 0)
        families: list[Metric] = [
            per_broker,
            GaugeMetricFamily(
                PREFIX + "channel_total_queue_size",
                "Requests queued for all brokers (Kafka's TotalQueueSize).",
                value=sum(queues.values()),
            ),
            session_family,
        ]
        if controller_id is not None:
            families.append(
                GaugeMetricFamily(
                    PREFIX + "controller_id", "controller.id of this process.", value=controller_id
                )
            )
        return families


class ControllerMetrics:
    """All metrics of one controller instance, on its own registry.

    Observer methods match the event manager's hooks: ``observe_event_queue_time`` is an
    ``on_queue_time`` and ``observe_event_processing`` an ``on_processed`` callback. It is also
    the channel's ``ChannelMetricsHooks`` (``broker_added``, ``broker_removed``,
    ``request_dequeued``, ``request_sent``) and ``KazooPort``'s observer
    (``zookeeper_request``, ``zookeeper_batch``).
    """

    def __init__(
        self,
        *,
        controller_id: int | None = None,
        state_source: Callable[[], ControllerState] | None = None,
        queue_size_source: Callable[[], int] | None = None,
        session_state_source: Callable[[], str] | None = None,
    ) -> None:
        self.controller_id = controller_id
        self._registry = _Registry()
        self._snapshot = INACTIVE
        self._state_source = state_source
        self._queue_size_source = queue_size_source
        self._session_state_source = session_state_source
        self._leadership_source: Callable[[], tuple[bool, int]] | None = None
        self._broker_queues: dict[int, Callable[[], int]] = {}
        self._broker_lock = threading.Lock()
        r = self._registry
        self._queue_time = Histogram(
            PREFIX + "event_queue_time_seconds",
            "Time controller events wait in the queue before processing starts.",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._processing = Histogram(
            PREFIX + "event_processing_seconds",
            "Time spent processing controller events, by ControllerState "
            "(Kafka's <State>RateAndTimeMs).",
            labelnames=("state",),
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        for state in TIMED_STATES:  # every series exists from the start, as Kafka's timers
            self._processing.labels(state=state.name)
        self._unclean = Counter(
            PREFIX + "unclean_leader_elections_total",
            "Leaders elected from outside the ISR (Kafka's UncleanLeaderElectionsPerSec).",
            registry=r,
        )
        self._failovers = Counter(
            PREFIX + "failovers_total",
            "Times this process won the election and took over as the active controller.",
            registry=r,
        )
        self._expirations = Counter(
            PREFIX + "zookeeper_session_expirations_total",
            "ZooKeeper sessions of this process that expired.",
            registry=r,
        )
        self._elections = Counter(
            PREFIX + "leader_elections_total",
            "Partition leaders elected by this controller, by election type.",
            labelnames=("type",),
            registry=r,
        )
        for kind in ELECTION_TYPES:
            self._elections.labels(type=kind)
        self._event_errors = Counter(
            PREFIX + "event_errors_total",
            "Controller events whose handler failed with an unexpected error (logged as "
            "'error processing event'; the event's work may be unfinished).",
            labelnames=("event",),
            registry=r,
        )
        # Every series at 0 from the start: Prometheus' increase() sees a first failure.
        for name in event_names():
            self._event_errors.labels(event=name)
        self._scl_write_errors = Counter(
            PREFIX + "state_change_log_write_errors_total",
            "Failed writes, flushes or rotations of the state-change log (a full disk, ...): "
            "its lines are retried, and lost past a bound ('state-change log write failed' "
            "in the log says how many).",
            registry=r,
        )
        self._rpcs_refused = Counter(
            PREFIX + "rpc_requests_refused_total",
            "RPCs answered RESOURCE_EXHAUSTED unprocessed because every gRPC thread that may "
            "wait for the event thread was already waiting (grpc.max.workers); callers resend "
            "them. By RPC (event) name.",
            labelnames=("rpc",),
            registry=r,
        )
        self._disconnects = Counter(
            PREFIX + "zookeeper_disconnects_total",
            "Times this process's ZooKeeper connection was suspended (Kafka's "
            "ZooKeeperDisconnectsPerSec).",
            registry=r,
        )
        self._zk_latency = Histogram(
            PREFIX + "zookeeper_request_seconds",
            "Latency of ZooKeeper calls, by operation (a batched call counts once).",
            labelnames=("operation",),
            buckets=ZK_LATENCY_BUCKETS,
            registry=r,
        )
        self._zk_batch = Histogram(
            PREFIX + "zookeeper_batch_size",
            "Ops per multi and paths per batched read, by operation.",
            labelnames=("operation",),
            buckets=BATCH_SIZE_BUCKETS,
            registry=r,
        )
        self._channel_queue_time = Histogram(
            PREFIX + "channel_request_queue_time_seconds",
            "Time requests waited in a broker's queue (Kafka's RequestRateAndQueueTimeMs).",
            labelnames=("broker_id",),
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self._channel_send = Histogram(
            PREFIX + "channel_request_send_seconds",
            "Time from sending a request to a broker to its response, retries included.",
            labelnames=("broker_id", "request"),
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        Info(PREFIX + "build", "Build information.", registry=r).info(
            {"version": _version(), "python_version": platform.python_version()}
        )
        r.register(_ContextGauges(self))
        r.register(_LiveGauges(self))

    @property
    def registry(self) -> CollectorRegistry:
        return self._registry

    # -- gauges ----------------------------------------------------------------------------

    @property
    def snapshot(self) -> ControllerMetricsSnapshot:
        return self._snapshot

    def update(self, snapshot: ControllerMetricsSnapshot) -> None:
        """Publish new context values (the event thread, after every event)."""
        self._snapshot = snapshot  # one reference swap: scrapes see old or new, never a mix

    def set_state_source(self, source: Callable[[], ControllerState] | None) -> None:
        self._state_source = source

    def set_leadership_source(self, source: Callable[[], tuple[bool, int]] | None) -> None:
        """(whether this process is the active controller, its epoch), read at scrape time."""
        self._leadership_source = source

    def read_leadership(self, snapshot: ControllerMetricsSnapshot) -> tuple[bool, int]:
        if self._leadership_source is not None:
            try:
                active, epoch = self._leadership_source()
                return bool(active), int(epoch)
            except Exception:
                log.exception("leadership source failed")
        return snapshot.active, snapshot.epoch

    def set_queue_size_source(self, source: Callable[[], int] | None) -> None:
        self._queue_size_source = source

    def read_state(self) -> ControllerState:
        if self._state_source is None:
            return ControllerState.Idle
        try:
            return self._state_source()
        except Exception:  # a broken source must not fail the whole scrape
            log.exception("controller state source failed")
            return ControllerState.Idle

    def set_session_state_source(self, source: Callable[[], str] | None) -> None:
        self._session_state_source = source

    def _scrape_time_gauge(
        self, name: str, documentation: str, what: str, source: Callable[[], float | None]
    ) -> None:
        """A gauge read from ``source`` at scrape time (NaN when it has no value or fails:
        a broken source must not fail the whole scrape)."""

        def read() -> float:
            try:
                value = source()
            except Exception:
                log.exception(f"{what} source failed")
                return math.nan
            return math.nan if value is None else float(value)

        Gauge(PREFIX + name, documentation, registry=self._registry).set_function(read)

    def watch_tls_certificate(self, source: Callable[[], float | None]) -> None:
        """Export the gRPC server certificate's expiry (``source``: its notAfter as a Unix
        time, read at scrape time so rotations show); call once, only with TLS on."""
        self._scrape_time_gauge(
            "tls_certificate_expiry_timestamp_seconds",
            "When the TLS certificate the gRPC server presents expires (notAfter, Unix "
            "time); follows certificate rotations. Absent without TLS.",
            "TLS certificate",
            source,
        )

    def watch_unclean_default(self, source: Callable[[], bool]) -> None:
        """Export the unclean-election default this controller applies (``source``: read at
        scrape time, so a SIGHUP reload or a change of the brokers' default shows)."""
        self._scrape_time_gauge(
            "unclean_leader_election_enabled",
            "1 when unclean leader election is allowed by default here: the brokers' dynamic "
            "default (/config/brokers/<default>) if set, else this controller's "
            "unclean.leader.election.enable; topics' configs override it.",
            "unclean default",
            lambda: 1.0 if source() else 0.0,
        )

    def read_session_state(self) -> str | None:
        if self._session_state_source is None:
            return None
        try:
            return str(self._session_state_source()).lower()
        except Exception:
            log.exception("session state source failed")
            return None

    def read_queue_sizes(self) -> dict[int, int]:
        with self._broker_lock:
            sources = dict(self._broker_queues)
        sizes = {}
        for broker_id, source in sources.items():
            try:
                sizes[broker_id] = source()
            except Exception:
                log.exception("broker queue size source failed", broker_id=broker_id)
        return sizes

    def read_queue_size(self) -> int:
        if self._queue_size_source is None:
            return 0
        try:
            return self._queue_size_source()
        except Exception:
            log.exception("event queue size source failed")
            return 0

    # -- event manager hooks ---------------------------------------------------------------

    def observe_event_queue_time(self, seconds: float) -> None:
        self._queue_time.observe(seconds)

    def observe_event_processing(
        self, state: ControllerState, seconds: float, event: object = None
    ) -> None:
        """Time one processed event; states without a Kafka timer are not recorded."""
        if state.is_timed:
            self._processing.labels(state=state.name).observe(seconds)

    # -- counters --------------------------------------------------------------------------

    def inc_unclean_leader_elections(self, count: int = 1) -> None:
        self._unclean.inc(count)

    def inc_failovers(self) -> None:
        self._failovers.inc()

    def inc_zookeeper_session_expirations(self) -> None:
        self._expirations.inc()

    def inc_leader_elections(self, election_type: str, count: int = 1) -> None:
        self._elections.labels(type=election_type).inc(count)

    def inc_event_errors(self, event_name: str) -> None:
        self._event_errors.labels(event=event_name).inc()

    def inc_state_change_log_write_errors(self) -> None:
        self._scl_write_errors.inc()

    def inc_rpc_requests_refused(self, rpc: str) -> None:
        self._rpcs_refused.labels(rpc=rpc).inc()

    def on_session_state(self, state: object) -> None:
        """A ZooKeeper session listener: counts suspensions (disconnects)."""
        if str(getattr(state, "value", state)).lower() == "suspended":
            self._disconnects.inc()

    # -- ZooKeeper observer (KazooPort) ----------------------------------------------------

    def zookeeper_request(self, operation: str, seconds: float) -> None:
        self._zk_latency.labels(operation=operation).observe(seconds)

    def zookeeper_batch(self, operation: str, size: int) -> None:
        self._zk_batch.labels(operation=operation).observe(size)

    # -- channel hooks (controller.channel.sender.ChannelMetricsHooks) ---------------------

    def broker_added(self, broker_id: int, queue_size: Callable[[], int]) -> None:
        with self._broker_lock:
            self._broker_queues[broker_id] = queue_size

    def broker_removed(self, broker_id: int) -> None:
        """Drop the broker's series, as Kafka removes its per-broker metrics."""
        with self._broker_lock:
            self._broker_queues.pop(broker_id, None)
        label = str(broker_id)
        with contextlib.suppress(KeyError):  # never observed
            self._channel_queue_time.remove(label)
        for kind in REQUEST_KINDS:
            with contextlib.suppress(KeyError):
                self._channel_send.remove(label, kind)

    def request_dequeued(self, broker_id: int, queue_time_s: float) -> None:
        self._channel_queue_time.labels(broker_id=str(broker_id)).observe(queue_time_s)

    def request_sent(self, broker_id: int, request: str, seconds: float) -> None:
        self._channel_send.labels(broker_id=str(broker_id), request=request).observe(seconds)
