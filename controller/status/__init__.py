"""The cluster at a glance, for ``zk-controller status``: read from ZooKeeper (the same znodes
the controller uses, through ``controller.admin.topics``) and from the controllers' own
``/metrics`` (their addresses come from ``/zk-controller/controllers/<id>``).

``collect_status`` returns plain data (``ClusterStatus.to_json()`` is the ``--json`` output);
``render`` turns it into the text view. ``ElectionTracker`` remembers leader changes between
two refreshes of the live view ("recent elections"); the controllers' election counters by
type (since each became active) are shown too.
"""

from __future__ import annotations

import http.client
import math
import time
import urllib.request
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from controller.admin.assignment import AdminError
from controller.admin.configs import describe_broker_default_config
from controller.admin.features import ClusterFeatures, describe_features
from controller.admin.topics import TopicDescription, describe_topics, list_brokers
from controller.core.election import UNCLEAN_CONFIG, invalid_unclean_value
from controller.zk import codecs, paths
from controller.zk.endpoints import CLIENT_AUTH_REQUIRED, SSL, decode_controller_endpoint
from controller.zk.errors import MalformedZnodeError, NoNodeError
from controller.zk.port import ZkPort

#: Partitions listed by name per category; the counts are always complete.
LIST_LIMIT = 20
SCRAPE_TIMEOUT_S = 2.0


@dataclass(slots=True)
class ControllerStatus:
    id: int
    grpc: str | None = None
    metrics_address: str | None = None
    # How its gRPC listener is spoken to (None: a controller that does not say).
    grpc_security_protocol: str | None = None
    grpc_client_auth: str | None = None
    active: bool = False  # holds /controller
    reachable: bool | None = None  # None: no metrics address to try
    metrics: dict[str, float] = field(default_factory=dict)  # a few scraped values
    elections: dict[str, float] = field(default_factory=dict)  # leader elections by type
    error: str | None = None
    # Set for a KRaft controller holding /controller (kraftControllerEpoch >= 0): a
    # ZooKeeper-to-KRaft migration's controller, not one of ours nor a Kafka broker.
    kraft_controller_epoch: int | None = None


@dataclass(slots=True)
class BrokerStatus:
    id: int
    rack: str | None
    endpoints: list[str]
    epoch: int
    error: str | None = None
    # Finalized features ("f=2") this broker does not support: the controller keeps it out.
    unsupported_features: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Election:
    partition: str
    old_leader: int | None
    new_leader: int | None
    seen_at: float  # unix time of the refresh that saw it


@dataclass(slots=True)
class ClusterStatus:
    time: float
    active_controller: int | None
    controller_epoch: int | None
    controllers: list[ControllerStatus]
    brokers: list[BrokerStatus]
    topics: int
    partitions: dict[str, int]  # total, online, offline, under_replicated, no_state
    offline: list[str]
    under_replicated: list[str]
    reassigning: list[str]
    reassignment_requested: bool  # /admin/reassign_partitions exists
    deleting: list[str]
    elections: dict[str, float]  # the active controller's counters by type
    recent_elections: list[Election] = field(default_factory=list)
    # unclean.leader.election.enable: the brokers' dynamic default (None: not set, each
    # controller's own setting applies) and the topics that set it.
    unclean_default: str | None = None
    unclean_default_error: str | None = None
    unclean_topics: dict[str, str] = field(default_factory=dict)
    # Finalized feature levels in /feature, its epoch (None: absent), and why it is unreadable.
    finalized_features: dict[str, int] = field(default_factory=dict)
    feature_epoch: int | None = None
    features_error: str | None = None
    controller_error: str | None = None  # /controller exists but is unreadable
    controller_epoch_error: str | None = None  # /controller_epoch exists but is unreadable
    # /controller written by a KRaft controller (a ZK->KRaft migration): its id, its
    # kraftControllerEpoch and whether the znode is persistent (no session ends it).
    kraft_controller: dict[str, Any] | None = None
    # /admin/reassign_partitions exists but the controller ignores it as malformed (None: absent
    # or readable): why, and what to do. It is never acted on nor removed by the controller.
    reassignment_request_malformed: dict[str, Any] | None = None
    leaders: dict[str, int | None] = field(default_factory=dict)  # for the tracker
    # Topic or topic-config znodes that cannot be read (a topic whose assignment is
    # unreadable has no partitions counted above).
    topic_errors: list[str] = field(default_factory=list)
    # False where no cluster has ever run (neither /brokers/ids nor /controller_epoch):
    # most often a connect string without the cluster's chroot.
    cluster_found: bool = True

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc.pop("leaders")
        return doc


# -- collection ----------------------------------------------------------------------------


_SCRAPED = {
    "kafka_controller_active_controller_count": "active_controller_count",
    "kafka_controller_controller_epoch": "controller_epoch",
    "kafka_controller_event_queue_size": "event_queue_size",
    "kafka_controller_offline_partitions_count": "offline_partitions_count",
    "kafka_controller_preferred_replica_imbalance_count": "preferred_replica_imbalance_count",
    "kafka_controller_failovers_total": "failovers_total",
    "kafka_controller_unclean_leader_elections_total": "unclean_leader_elections_total",
    "kafka_controller_channel_total_queue_size": "channel_total_queue_size",
    "kafka_controller_unclean_leader_election_enabled": "unclean_leader_election_enabled",
}


MAX_SCRAPE_BYTES = 16 << 20  # a controller's /metrics is far smaller
# The advertised address is dialled directly: an http_proxy set for the admin host's web
# traffic would otherwise carry (and fail) every scrape, loopback included.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ScrapeError(Exception):
    """What answered at a controller's metrics address is not its metrics."""


def scrape_controller(address: str, timeout: float = SCRAPE_TIMEOUT_S) -> tuple[dict, dict]:
    """A controller's headline metrics and its leader elections by type. Raises OSError,
    HTTPException or ScrapeError."""
    with _DIRECT.open(f"http://{address}/metrics", timeout=timeout) as resp:
        body = resp.read(MAX_SCRAPE_BYTES + 1)
    if len(body) > MAX_SCRAPE_BYTES:
        raise ScrapeError(f"more than {MAX_SCRAPE_BYTES} bytes: not a controller's metrics")
    values: dict[str, float] = {}
    elections: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(body.decode()):
            for sample in family.samples:
                if sample.name in _SCRAPED:
                    values[_SCRAPED[sample.name]] = sample.value
                elif sample.name == "kafka_controller_leader_elections_total":
                    elections[sample.labels.get("type", "")] = sample.value
    except Exception as exc:  # the parser raises more than ValueError on garbage
        raise ScrapeError(f"not Prometheus metrics ({type(exc).__name__}: {exc})") from None
    return values, elections


def _controllers(port: ZkPort, active: int | None, timeout: float) -> list[ControllerStatus]:
    try:
        children = port.get_children(paths.CONTROLLER_ENDPOINTS)
        ids = sorted(int(c) for c in children if c.isascii() and c.isdigit())
    except NoNodeError:
        ids = []
    out: list[ControllerStatus] = []
    for cid in ids:
        status = ControllerStatus(cid, active=cid == active)
        try:
            data, _ = port.get(paths.controller_endpoint_path(cid))
            endpoint = decode_controller_endpoint(cid, data)
            status.grpc, status.metrics_address = endpoint.grpc, endpoint.metrics
            status.grpc_security_protocol = endpoint.grpc_security_protocol
            status.grpc_client_auth = endpoint.grpc_client_auth
        except NoNodeError:
            continue  # its session ended since the listing
        except MalformedZnodeError as exc:
            status.error = str(exc)
        if status.metrics_address:
            try:
                status.metrics, status.elections = scrape_controller(
                    status.metrics_address, timeout
                )
                status.reachable = True
            except (OSError, ScrapeError, http.client.HTTPException) as exc:
                status.reachable = False
                status.error = f"metrics unreachable: {exc}"
        out.append(status)
    if active is not None and active not in ids:
        # Active per /controller but no endpoint znode (e.g. a Kafka broker as controller).
        out.append(ControllerStatus(active, active=True))
        out.sort(key=lambda c: c.id)
    return out


def _kraft_controller(port: ZkPort, active: int | None) -> dict[str, Any] | None:
    """``/controller`` as a KRaft controller writes it during a ZooKeeper migration (Kafka's
    tryRegisterKRaftControllerAsActiveController: persistent, ``kraftControllerEpoch`` >= 0),
    or None. Only when it still names ``active`` (read just before)."""
    try:
        data, stat = port.get(paths.CONTROLLER)
        registration = codecs.decode_controller_full(data)
    except (NoNodeError, MalformedZnodeError):
        return None
    if registration.kraft_controller_epoch < 0 or registration.broker_id != active:
        return None
    return {
        "id": registration.broker_id,
        "kraft_controller_epoch": registration.kraft_controller_epoch,
        "persistent": stat.ephemeral_owner == 0,
    }


def _epoch(port: ZkPort) -> tuple[int | None, str | None]:
    """The controller epoch, or None with why when ``/controller_epoch`` is unreadable (None,
    None: absent, as before the first election)."""
    try:
        data, _ = port.get(paths.CONTROLLER_EPOCH)
        return codecs.decode_controller_epoch(data), None
    except NoNodeError:
        return None, None
    except MalformedZnodeError as exc:
        return None, str(exc)


REASSIGN_REQUEST_REMEDY = (
    f"delete it (e.g. zkCli.sh delete {paths.REASSIGN_PARTITIONS}, under the chroot if any) "
    "and submit the plan again: the controller never acts on it, ZooKeeper submissions are "
    "refused while it exists, and it is only removed, unrun, when a reassignment submitted "
    "through the API starts or completes (as Kafka removes it)"
)


def _reassignment_request(port: ZkPort) -> tuple[bool, dict[str, Any] | None]:
    """Whether ``/admin/reassign_partitions`` exists, and why the controller ignores it if
    so: read with the controller's own decoder, so "pending" means what it will act on."""
    try:
        data, _ = port.get(paths.REASSIGN_PARTITIONS)
    except NoNodeError:
        return False, None
    try:
        codecs.decode_reassignment_request(data)
    except MalformedZnodeError as exc:
        return True, {
            "problem": exc.problem,
            "ignored_by_controller": True,
            "remedy": REASSIGN_REQUEST_REMEDY,
        }
    return True, None


def _partition_lists(
    topics: list[TopicDescription],
) -> tuple[dict[str, int], list[str], list[str], list[str], dict[str, int | None]]:
    counts = {"total": 0, "online": 0, "offline": 0, "under_replicated": 0, "no_state": 0}
    offline: list[str] = []
    under: list[str] = []
    reassigning: list[str] = []
    leaders: dict[str, int | None] = {}
    for topic in topics:
        for p in topic.partitions:
            name = f"{topic.name}-{p.partition}"
            counts["total"] += 1
            leaders[name] = p.leader
            if p.leader is None and p.state_error is None:
                counts["no_state"] += 1
            if p.unavailable:
                counts["offline"] += 1
                offline.append(name)
            else:
                counts["online"] += 1
                if p.under_replicated:
                    counts["under_replicated"] += 1
                    under.append(name)
            if p.adding_replicas or p.removing_replicas:
                reassigning.append(name)
    return counts, offline, under, reassigning, leaders


def _unsupported(features: ClusterFeatures | None) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for f in features.features if features is not None else ():
        if f.finalized is not None:
            for broker_id in f.unsupported_by:
                out.setdefault(broker_id, []).append(f"{f.name}={f.finalized}")
    return out


def collect_status(port: ZkPort, *, scrape_timeout: float = SCRAPE_TIMEOUT_S) -> ClusterStatus:
    cluster = list_brokers(port)
    features: ClusterFeatures | None = None
    features_error = None
    finalized: dict[str, int] = {}
    try:
        features = describe_features(port, cluster.brokers)
    except AdminError as exc:
        features_error = str(exc)
    else:
        finalized = {f.name: f.finalized for f in features.features if f.finalized is not None}
    unsupported = _unsupported(features)
    brokers = [
        BrokerStatus(
            b.id,
            b.broker.rack if b.broker else None,
            [e.connection_string() for e in b.broker.endpoints] if b.broker else [],
            b.epoch,
            b.error,
            unsupported.get(b.id, []),
        )
        for b in cluster.brokers
    ]
    topics = describe_topics(port)
    counts, offline, under, reassigning, leaders = _partition_lists(topics)
    controllers = _controllers(port, cluster.controller_id, scrape_timeout)
    active = next((c for c in controllers if c.active), None)
    kraft = _kraft_controller(port, cluster.controller_id)
    if kraft is not None and active is not None:
        active.kraft_controller_epoch = kraft["kraft_controller_epoch"]
    broker_default = describe_broker_default_config(port)
    requested, malformed_request = _reassignment_request(port)
    epoch, epoch_error = _epoch(port)
    found = (
        port.exists(paths.BROKERS_IDS) is not None
        or port.exists(paths.CONTROLLER_EPOCH) is not None
    )
    return ClusterStatus(
        cluster_found=found,
        time=time.time(),
        active_controller=cluster.controller_id,
        controller_error=cluster.controller_error,
        kraft_controller=kraft,
        controller_epoch=epoch,
        controller_epoch_error=epoch_error,
        controllers=controllers,
        brokers=brokers,
        topics=len(topics),
        partitions=counts,
        offline=offline,
        under_replicated=under,
        reassigning=reassigning,
        reassignment_requested=requested,
        reassignment_request_malformed=malformed_request,
        deleting=sorted(t.name for t in topics if t.marked_for_deletion),
        elections=dict(active.elections) if active else {},
        unclean_default=broker_default.config.get(UNCLEAN_CONFIG),
        unclean_default_error=broker_default.error,
        unclean_topics={
            t.name: t.configs[UNCLEAN_CONFIG] for t in topics if UNCLEAN_CONFIG in t.configs
        },
        finalized_features=finalized,
        feature_epoch=features.epoch if features is not None else None,
        features_error=features_error,
        leaders=leaders,
        topic_errors=[f"topic {t.name}: {t.error}" for t in topics if t.error]
        + [
            f"topic {t.name}: configs unreadable: {t.config_error}"
            for t in topics
            if t.config_error
        ],
    )


class ElectionTracker:
    """Leader changes seen between refreshes of the live view, newest first."""

    def __init__(self, keep: int = 10) -> None:
        self._previous: dict[str, int | None] | None = None
        self._epochs: dict[str, int | None] = {}
        self.recent: deque[Election] = deque(maxlen=keep)

    def update(self, status: ClusterStatus) -> ClusterStatus:
        now = status.time
        if self._previous is not None:
            for name, leader in sorted(status.leaders.items()):
                if name in self._previous and self._previous[name] != leader:
                    self.recent.appendleft(Election(name, self._previous[name], leader, now))
        self._previous = dict(status.leaders)
        status.recent_elections = list(self.recent)
        return status


# -- rendering ----------------------------------------------------------------------------


def _names(items: list[str], limit: int = LIST_LIMIT) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" ... (+{len(items) - limit} more)" if len(items) > limit else "")


def _leader(leader: int | None) -> str:
    return "none" if leader is None or leader < 0 else str(leader)


def _unclean_line(status: ClusterStatus) -> str:
    if status.unclean_default_error is not None:
        default = f"unreadable ({status.unclean_default_error})"
    elif status.unclean_default is None:
        default = "not set (each controller's own setting"
        active = next((c for c in status.controllers if c.active), None)
        own = active.metrics.get("unclean_leader_election_enabled") if active else None
        if own is not None and not math.isnan(own):
            default += f"; the active controller's: {'true' if own else 'false'}"
        default += ")"
    else:
        default = status.unclean_default
    topics = [
        f"{t}={v}" if invalid_unclean_value({UNCLEAN_CONFIG: v}) is None
        else f"{t}={v!r} (invalid: read as false)"
        for t, v in sorted(status.unclean_topics.items())
    ]  # fmt: skip
    return (
        f"Unclean leader election: brokers' default {default}; "
        f"topics setting it: {_names(topics) if topics else 'none'}"
    )


def _features_line(status: ClusterStatus) -> str:
    if status.features_error is not None:
        return f"Finalized features: unreadable ({status.features_error})"
    levels = [f"{name}={level}" for name, level in sorted(status.finalized_features.items())]
    epoch = "" if status.feature_epoch is None else f" (epoch {status.feature_epoch})"
    return f"Finalized features: {', '.join(levels) if levels else 'none'}{epoch}"


def render(status: ClusterStatus, *, source: str = "") -> str:
    lines: list[str] = []
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status.time))
    lines.append(f"zk-controller status  {source}  {when}".rstrip())
    lines.append("")
    active = "none" if status.active_controller is None else str(status.active_controller)
    epoch = "-" if status.controller_epoch is None else str(status.controller_epoch)
    if status.controller_epoch_error:
        epoch = "unreadable"
    if not status.cluster_found:
        lines.append(
            f"No cluster here: neither {paths.BROKERS_IDS} nor {paths.CONTROLLER_EPOCH} exists. "
            "Is the chroot missing from the connect string (e.g. zk1:2181/kafka)? A "
            "cluster's controller and brokers create them when they first start."
        )
        lines.append("")
    lines.append(f"Active controller: {active}   epoch: {epoch}")
    if status.controller_epoch_error:
        lines.append(
            f"  /controller_epoch is unreadable: controller elections fail (retried every 2 s) "
            f"until it holds a decimal epoch again: {status.controller_epoch_error}"
        )
    if status.controller_error:
        lines.append(
            f"  /controller is unreadable, so no controller can be elected until it is "
            f"deleted: {status.controller_error}"
        )
    if status.kraft_controller is not None:
        kraft = status.kraft_controller
        kind = "a persistent" if kraft["persistent"] else "an ephemeral"
        lines.append(
            f"  /controller is {kind} znode of a KRaft controller (ZooKeeper-to-KRaft "
            f"migration, kraftControllerEpoch {kraft['kraft_controller_epoch']}): no controller "
            "here can be elected while it exists, and stopping them will not clear it"
        )
    for c in status.controllers:
        role = "active " if c.active else "standby"
        detail = []
        if c.kraft_controller_epoch is not None:
            detail.append(
                f"KRaft controller (migration), kraftControllerEpoch {c.kraft_controller_epoch}"
            )
        if c.grpc_security_protocol == SSL:
            mutual = c.grpc_client_auth == CLIENT_AUTH_REQUIRED
            detail.append("gRPC TLS, client certificates required" if mutual else "gRPC TLS")
        if c.metrics:
            m = c.metrics
            detail.append(f"queue {int(m.get('event_queue_size', 0))}")
            detail.append(f"failovers {int(m.get('failovers_total', 0))}")
            if c.active and m.get("active_controller_count") != 1:
                detail.append("NOT ACTIVE per its metrics")
        if c.error:
            detail.append(c.error)
        lines.append(
            f"  controller {c.id:<4} {role}  grpc {c.grpc or '-':<22} "
            f"metrics {c.metrics_address or '-':<22} {'  '.join(detail)}".rstrip()
        )
    lines.append("")
    lines.append(f"Brokers: {len(status.brokers)}")
    for b in status.brokers:
        if b.error:
            lines.append(f"  broker {b.id:<4} ERROR {b.error}")
            continue
        endpoints = ",".join(b.endpoints)
        lines.append(f"  broker {b.id:<4} rack {b.rack or '-':<8} epoch {b.epoch:<12} {endpoints}")
        if b.unsupported_features:
            lines.append(
                f"    KEPT OUT: does not support the finalized {', '.join(b.unsupported_features)}"
            )
    p = status.partitions
    lines.append("")
    lines.append(
        f"Topics: {status.topics}   Partitions: {p['total']}   online {p['online']}   "
        f"offline {p['offline']}"
        + (f" ({p['no_state']} never elected: no state znode)" if p["no_state"] else "")
        + f"   under-replicated {p['under_replicated']}"
    )
    if status.offline:
        lines.append(f"  offline: {_names(status.offline)}")
    if status.under_replicated:
        lines.append(f"  under-replicated: {_names(status.under_replicated)}")
    for error in status.topic_errors:
        lines.append(f"  ERROR {error}")
    lines.append(_unclean_line(status))
    lines.append(_features_line(status))
    lines.append("")
    bad_request = status.reassignment_request_malformed
    if bad_request is not None:
        requested = (
            f" (request in {paths.REASSIGN_PARTITIONS} MALFORMED, ignored by the controller)"
        )
    elif status.reassignment_requested:
        requested = f" (request pending in {paths.REASSIGN_PARTITIONS})"
    else:
        requested = ""
    lines.append(f"Reassignments in progress: {len(status.reassigning)}{requested}")
    if bad_request is not None:
        lines.append(f"  {bad_request['problem']}")
        remedy = bad_request["remedy"]
        lines.append(f"  {remedy[:1].upper()}{remedy[1:]}")
    if status.reassigning:
        lines.append(f"  {_names(status.reassigning)}")
    lines.append(f"Topic deletions in progress: {len(status.deleting)}")
    if status.deleting:
        lines.append(f"  {_names(status.deleting)}")
    lines.append("")
    counters = ", ".join(f"{k} {int(v)}" for k, v in status.elections.items() if v)
    lines.append(f"Leader elections by the active controller: {counters or 'none'}")
    if status.recent_elections:
        lines.append("Recent leader changes:")
        for e in status.recent_elections:
            at = time.strftime("%H:%M:%S", time.localtime(e.seen_at))
            lines.append(
                f"  {at}  {e.partition}: {_leader(e.old_leader)} -> {_leader(e.new_leader)}"
            )
    return "\n".join(lines) + "\n"
