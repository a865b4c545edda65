"""Reads of topics and brokers for the admin tools: Kafka's ``AdminZkClient`` lookups.

``list_topics``, ``describe_topics`` and ``list_brokers`` batch their znode reads. The
lookups below them (registered brokers, a topic's assignment) are also the checks that
``topics`` makes before it writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from controller.admin.topic_errors import CorruptMetadataError, InvalidTopicError, UnknownTopicError
from controller.core.model import Broker, ReplicaAssignment, TopicAssignment
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError, NoNodeError, ZkError
from controller.zk.port import ReadResult, ZkPort

# --- results ----------------------------------------


@dataclass(frozen=True, slots=True)
class TopicListing:
    name: str
    marked_for_deletion: bool


@dataclass(frozen=True, slots=True)
class PartitionDescription:
    """One partition: its assignment, plus its state znode when there is one."""

    partition: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    leader: int | None = None  # None: no state znode yet; -1: no leader (Kafka's NoLeader)
    isr: tuple[int, ...] = ()
    leader_epoch: int | None = None
    controller_epoch: int | None = None
    partition_epoch: int | None = None  # the state znode's zkVersion
    leader_recovering: bool = False
    offline_replicas: tuple[int, ...] = ()  # replicas whose broker is not in /brokers/ids
    leader_registered: bool = False
    state_error: str | None = None  # the state znode exists but could not be decoded

    @property
    def offline(self) -> bool:
        """No leader: no state yet, or leader -1 (the controller's OfflinePartition)."""
        return self.leader is None or self.leader < 0

    @property
    def unavailable(self) -> bool:
        """Kafka's --unavailable-partitions: no leader, or a leader that is not registered."""
        return self.offline or not self.leader_registered

    @property
    def under_replicated(self) -> bool:
        """ISR smaller than the replication factor (replicas minus adding ones, as Kafka)."""
        return len(self.isr) < len(self.replicas) - len(self.adding_replicas)


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    topic_id: str | None = None
    partitions: tuple[PartitionDescription, ...] = ()
    configs: dict[str, str] = field(default_factory=dict)
    marked_for_deletion: bool = False
    error: str | None = None  # the topic znode could not be read or decoded
    # /config/topics/T could not be read or decoded: the partitions are still described
    # (the controller manages them), with no configs.
    config_error: str | None = None

    @property
    def replication_factor(self) -> int:
        if not self.partitions:
            return 0
        first = self.partitions[0]
        return len(first.replicas) - len(first.adding_replicas)


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    id: int
    epoch: int  # czxid of the registration znode
    broker: Broker | None = None
    error: str | None = None  # registration present but undecodable


@dataclass(frozen=True, slots=True)
class ClusterBrokers:
    controller_id: int | None
    brokers: tuple[BrokerInfo, ...]
    controller_error: str | None = None  # /controller exists but cannot be read


# --- lookups (also the checks before a write) ----------------------------------------


def existing_topic_path(name: str) -> str:
    # Existing topics may predate Kafka's naming rules: only refuse what cannot be a znode name.
    if not isinstance(name, str):
        raise InvalidTopicError(f"topic name must be a string, got {name!r}")
    try:
        return paths.topic_path(name)
    except ValueError as exc:
        raise InvalidTopicError(str(exc)) from None


# --- ZooKeeper helpers ----------------------------------------


def children(port: ZkPort, path: str) -> list[str]:
    try:
        return port.get_children(path)
    except NoNodeError:
        return []


def registered_ids(port: ZkPort) -> set[int]:
    # Children of /brokers/ids that are not broker ids are not registrations: skip them.
    return {int(c) for c in children(port, paths.BROKERS_IDS) if c.isascii() and c.isdigit()}


def registered_brokers(port: ZkPort) -> list[BrokerInfo]:
    """Kafka's getAllBrokersInCluster: every registration, sorted by id (ids that vanish skip)."""
    ids = sorted(registered_ids(port))
    out: list[BrokerInfo] = []
    for bid, read in zip(ids, port.get_many([paths.broker_path(i) for i in ids]), strict=True):
        if read.error is not None or read.stat is None:
            continue
        try:
            out.append(BrokerInfo(bid, read.stat.czxid, codecs.decode_broker(bid, read.data)))
        except MalformedZnodeError as exc:
            out.append(BrokerInfo(bid, read.stat.czxid, None, str(exc)))
    return out


def live_brokers(port: ZkPort) -> tuple[list[Broker], dict[int, str]]:
    """The readable registrations, and the unreadable ones' problems by broker id. Like the
    controller, the tools leave out a registration they cannot read rather than refuse to
    create or grow any topic until it is repaired."""
    infos = registered_brokers(port)
    unreadable = {
        i.id: i.error or f"broker {i.id}: unreadable registration"
        for i in infos
        if i.broker is None
    }
    return [i.broker for i in infos if i.broker is not None], unreadable


def check_readable(named: Iterable[object], unreadable: Mapping[int, str]) -> None:
    """Refuse a broker the operator named whose registration cannot be read (anything that
    is not a broker id is left to the assignment's validation)."""
    for broker_id in named:
        if type(broker_id) is int and broker_id in unreadable:
            raise CorruptMetadataError(unreadable[broker_id])


def left_out(unreadable: Mapping[int, str]) -> tuple[str, ...]:
    """One warning per unreadable registration."""
    return tuple(
        f"broker {b} left out (its registration is unreadable): {unreadable[b]}"
        for b in sorted(unreadable)
    )


def read_assignment(port: ZkPort, name: str) -> tuple[TopicAssignment, int]:
    path = existing_topic_path(name)
    try:
        data, stat = port.get(path)
    except NoNodeError:
        raise UnknownTopicError(f"topic '{name}' does not exist") from None
    try:
        return codecs.decode_topic_assignment(name, data, path), stat.version
    except MalformedZnodeError as exc:
        raise CorruptMetadataError(str(exc)) from None


# --- listings and descriptions ----------------------------------------


def list_topics(port: ZkPort) -> list[TopicListing]:
    """Every topic, sorted, with its pending-deletion flag."""
    deleting = set(children(port, paths.DELETE_TOPICS))
    return [TopicListing(t, t in deleting) for t in sorted(children(port, paths.BROKERS_TOPICS))]


def describe_topics(port: ZkPort, names: Sequence[str] | None = None) -> list[TopicDescription]:
    """Assignment, configs and partition state of ``names`` (default: every topic), sorted.

    Raises ``UnknownTopicError`` naming every requested topic that does not exist. A topic
    whose znodes cannot be decoded is returned with ``error`` set, not raised.
    """
    all_topics = set(children(port, paths.BROKERS_TOPICS))
    if names is not None:
        for n in names:
            existing_topic_path(n)
        missing = sorted(set(names) - all_topics)
        if missing:
            raise UnknownTopicError(f"topic(s) {', '.join(missing)} do not exist")
    wanted = sorted(set(names) if names is not None else all_topics)
    deleting = set(children(port, paths.DELETE_TOPICS))
    registered = registered_ids(port)
    reads = port.get_many(
        [paths.topic_path(t) for t in wanted] + [paths.topic_config_path(t) for t in wanted]
    )
    topics: list[tuple[str, TopicAssignment | None, dict[str, str], str | None]] = []
    config_errors: dict[str, str] = {}
    for t, topic_read, config_read in zip(
        wanted, reads[: len(wanted)], reads[len(wanted) :], strict=True
    ):
        if isinstance(topic_read.error, NoNodeError) and names is None:
            continue  # deleted since the listing
        try:
            if topic_read.error is not None:
                raise topic_read.error
            assignment = codecs.decode_topic_assignment(t, topic_read.data)
        except (MalformedZnodeError, NoNodeError) as exc:
            topics.append((t, None, {}, str(exc)))
            continue
        config: dict[str, str] = {}
        try:
            if config_read.error is None:
                config = codecs.decode_topic_config(config_read.data, config_read.path)
            elif not isinstance(config_read.error, NoNodeError):
                raise config_read.error
        except (MalformedZnodeError, ZkError) as exc:
            config_errors[t] = str(exc)
        topics.append((t, assignment, config, None))
    state_paths = [
        paths.partition_state_path(t, p)
        for t, a, _, _ in topics
        if a is not None
        for p in sorted(a.partitions)
    ]
    states = iter(port.get_many(state_paths))
    out: list[TopicDescription] = []
    for t, maybe_assignment, config, error in topics:
        if maybe_assignment is None:
            out.append(TopicDescription(t, None, (), {}, t in deleting, error))
            continue
        assignment = maybe_assignment
        parts = []
        for p, ra in sorted(assignment.partitions.items()):
            parts.append(_describe_partition(p, ra, next(states), registered))
        out.append(
            TopicDescription(
                t,
                assignment.topic_id,
                tuple(parts),
                config,
                t in deleting,
                config_error=config_errors.get(t),
            )
        )
    return out


def _describe_partition(
    p: int, ra: ReplicaAssignment, read: ReadResult, registered: set[int]
) -> PartitionDescription:
    base = PartitionDescription(
        p,
        ra.replicas,
        ra.adding_replicas,
        ra.removing_replicas,
        offline_replicas=tuple(b for b in ra.replicas if b not in registered),
    )
    if read.error is not None or read.stat is None:
        if isinstance(read.error, NoNodeError):
            return base
        return replace(base, state_error=str(read.error))
    try:
        state = codecs.decode_partition_state(read.data, read.stat.version, read.path)
    except MalformedZnodeError as exc:
        return replace(base, state_error=str(exc))
    lai = state.leader_and_isr
    return replace(
        base,
        leader=lai.leader,
        isr=lai.isr,
        leader_epoch=lai.leader_epoch,
        controller_epoch=state.controller_epoch,
        partition_epoch=lai.partition_epoch,
        leader_recovering=bool(lai.leader_recovery_state),
        leader_registered=lai.leader in registered,
    )


def list_brokers(port: ZkPort) -> ClusterBrokers:
    """Every broker registration (sorted by id) and the active controller's id, if any."""
    controller: int | None = None
    error = None
    try:
        data, _ = port.get(paths.CONTROLLER)
        controller = codecs.decode_controller(data)
    except NoNodeError:
        pass
    except MalformedZnodeError as exc:
        # Not "no controller": a controller cannot be elected while this znode exists.
        error = str(exc)
    return ClusterBrokers(controller, tuple(registered_brokers(port)), error)
