"""Prometheus metrics of one controller, mirroring Kafka's controller metrics (reference §5.1).

Names: prefix ``kafka_controller_``, base units (seconds), ``_total`` counters, no topic or
partition labels (that detail is in the state-change log). Every daemon instance owns its own
``CollectorRegistry``; nothing touches the global ``REGISTRY``.

The gauges Kafka computes from the controller context (``updateMetrics`` after every event)
come from an immutable ``ControllerMetricsSnapshot`` that the event thread publishes with
``update()``; scrapes only read that reference, never the context or ZooKeeper. As in Kafka,
they read 0 unless the snapshot says this controller is active; ``active_controller_count``,
``controller_state`` and ``zk_migration_state`` are reported regardless.

Kafka clears ``EventQueueTimeMs`` after 300 s with an empty queue so its sampled percentiles
reflect recent events. That is not done here: a Prometheus histogram is cumulative and
recency comes from ``rate()`` over a window in the query; clearing would only show up as a
counter reset.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata

import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram, Info
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, RestrictedRegistry

from controller.core.controller_state import TIMED_STATES, ControllerState

log = structlog.stdlib.get_logger("controller.metrics")

PREFIX = "kafka_controller_"
ZK_MIGRATION_STATE_ZK = 4  # Kafka's ZkMigrationState.ZK: a ZooKeeper-mode controller

# From sub-millisecond queue waits to multi-minute failovers of very large clusters.
DURATION_BUCKETS: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
)  # fmt: skip


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
     "Partitions without a live leader, excluding topics being deleted."),
    ("preferred_replica_imbalance_count", "preferred_replica_imbalance_count",
     "Partitions whose leader is not the preferred replica."),
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
        return self._families(INACTIVE, ControllerState.Idle, 0)

    def collect(self) -> Iterable[Metric]:
        owner = self._owner
        return self._families(owner.snapshot, owner.read_state(), owner.read_queue_size())

    @staticmethod
    def _families(
        snap: ControllerMetricsSnapshot, state: ControllerState, queue_size: int
    ) -> list[Metric]:
        families: list[Metric] = [
            GaugeMetricFamily(
                PREFIX + "active_controller_count",
                "1 if this process is the active controller, else 0.",
                value=1 if snap.active else 0,
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
            value = getattr(snap, attr) if snap.active and attr is not None else 0
            families.append(GaugeMetricFamily(PREFIX + suffix, doc, value=value))
        return families


class ControllerMetrics:
    """All metrics of one controller instance, on its own registry.

    Observer methods match the event manager's hooks: ``observe_event_queue_time`` is an
    ``on_queue_time`` and ``observe_event_processing`` an ``on_processed`` callback.
    """

    def __init__(
        self,
        *,
        state_source: Callable[[], ControllerState] | None = None,
        queue_size_source: Callable[[], int] | None = None,
    ) -> None:
        self._registry = _Registry()
        self._snapshot = INACTIVE
        self._state_source = state_source
        self._queue_size_source = queue_size_source
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
        Info(PREFIX + "build", "Build information.", registry=r).info(
            {"version": _version(), "python_version": platform.python_version()}
        )
        r.register(_ContextGauges(self))

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
