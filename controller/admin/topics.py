"""Topic administration over ZooKeeper: Kafka's ``AdminZkClient`` (kafka-topics.sh --zookeeper).

Admin writes are unfenced. They only change the znodes Kafka's tools change, in Kafka's
formats; the controller's watches (TopicChange, PartitionModifications, TopicDeletion) do the
rest. Every operation validates everything it can *before* writing, and writes with a single
ZooKeeper multi (missing parents included), so a refused or failed request changes nothing.

One deliberate difference: Kafka writes ``/config/topics/T`` and then ``/brokers/topics/T`` as
two requests ("this isn't transactional"); here the same two writes, in the same order, form
one multi, so a topic never appears without its config and a lost race leaves no stray config.
Checks that read one znode and write another (marked for deletion, name collisions, registered
brokers) are not atomic with the write, as in Kafka.

Reads (``list_topics``, ``describe_topics``, ``list_brokers``) live in ``topic_reads``; they
and the errors (``topic_errors``) are re-exported here, the module the tools import.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from controller.admin.assignment import (
    AdminError,
    InvalidPartitionsError,
    RackAwareMode,
    assign_replicas_to_brokers,
    broker_metadatas,
    validate_replica_assignment,
)
from controller.admin.topic_configs import (
    InvalidConfigError,
    validate_topic_config_combination,
    validate_topic_configs,
)
from controller.admin.topic_errors import (
    ConcurrentModificationError,
    CorruptMetadataError,
    InvalidRequestError,
    InvalidTopicError,
    ReassignmentInProgressError,
    TopicExistsError,
    TopicMarkedForDeletionError,
    UnknownTopicError,
)
from controller.admin.topic_reads import (
    BrokerInfo,
    ClusterBrokers,
    PartitionDescription,
    TopicDescription,
    TopicListing,
    check_readable,
    children,
    describe_topics,
    existing_topic_path,
    left_out,
    list_brokers,
    list_topics,
    live_brokers,
    read_assignment,
)
from controller.admin.writes import commit, holds, missing_parents
from controller.core.model import ReplicaAssignment, TopicAssignment, new_topic_id
from controller.zk import codecs, limits, paths
from controller.zk.errors import (
    BadVersionError,
    MalformedZnodeError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
)
from controller.zk.port import Check, Create, Op, SetData, ZkPort

# The tools' whole topic API, the reads and the errors included, is importable from here.
__all__ = [
    "COLLISION_WARNING",
    "INTERNAL_TOPICS",
    "MAX_TOPIC_ZNODE_BYTES",
    "AdminError",
    "BrokerInfo",
    "ClusterBrokers",
    "ConcurrentModificationError",
    "CorruptMetadataError",
    "InvalidConfigError",
    "InvalidPartitionsError",
    "InvalidRequestError",
    "InvalidTopicError",
    "PartitionDescription",
    "ReassignmentInProgressError",
    "TopicChange",
    "TopicDescription",
    "TopicExistsError",
    "TopicListing",
    "TopicMarkedForDeletionError",
    "UnknownTopicError",
    "add_partitions",
    "create_topic",
    "delete_topic",
    "describe_topics",
    "list_brokers",
    "list_topics",
]

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
COLLISION_WARNING = (
    "Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
    "could collide. To avoid issues it is best to use either, but not both."
)
# ZooKeeper's default jute.maxbuffer is just under 1 MiB per request, path included: a larger
# topic znode would be refused mid-operation (as a connection loss), so refuse it up front.
MAX_TOPIC_ZNODE_BYTES = 1_000_000  # at the default jute.maxbuffer (controller.zk.limits)
_WRITE_ATTEMPTS = 3

# --- results ----------------------------------------


@dataclass(frozen=True, slots=True)
class TopicChange:
    """What ``create_topic`` / ``add_partitions`` wrote."""

    name: str
    topic_id: str | None
    assignment: dict[int, tuple[int, ...]]  # the topic's full assignment after the change
    added: tuple[int, ...]  # the partitions this call created
    configs: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


# --- validation helpers ----------------------------------------


def _check_not_marked_for_deletion(port: ZkPort, name: str) -> None:
    if port.exists(paths.delete_topic_path(name)) is not None:
        raise TopicMarkedForDeletionError(f"topic '{name}' is marked for deletion")


def _max_topic_znode_bytes() -> int:
    configured = limits.current()
    return MAX_TOPIC_ZNODE_BYTES if configured.is_default else configured.topic_znode_bytes


def _encode_checked(assignment: TopicAssignment) -> bytes:
    data = codecs.encode_topic_assignment(assignment)
    if len(data) > (limit := _max_topic_znode_bytes()):
        raise InvalidPartitionsError(
            f"the assignment of topic '{assignment.topic}' ({len(assignment.partitions)} "
            f"partitions) would be {len(data)} bytes, over the {limit}-byte "
            "limit of a ZooKeeper znode (zookeeper.jute.maxbuffer)"
        )
    return data


def _check_size_bound(name: str, partitions: int, replication_factor: int) -> None:
    """Refuse at once a partition count whose assignment cannot fit in a znode (each
    partition takes at least ``"0":[0]`` plus ``,0`` per further replica), before spending
    time and memory assigning it; ``_encode_checked`` has the exact word on the rest."""
    smallest = partitions * (7 + 2 * max(0, replication_factor - 1))
    if smallest > (limit := _max_topic_znode_bytes()):
        raise InvalidPartitionsError(
            f"the assignment of topic '{name}' ({partitions} partitions) would be at least "
            f"{smallest} bytes, over the {limit}-byte limit of a ZooKeeper "
            "znode (zookeeper.jute.maxbuffer)"
        )


# --- operations ----------------------------------------


def create_topic(
    port: ZkPort,
    name: str,
    partitions: int | None = None,
    replication_factor: int | None = None,
    *,
    replica_assignment: Mapping[int, Sequence[int]] | None = None,
    configs: Mapping[str, str] | None = None,
    rack_aware_mode: RackAwareMode = RackAwareMode.ENFORCED,
    rng: random.Random | None = None,
) -> TopicChange:
    """Kafka's ``createTopic`` / ``createTopicWithAssignment``.

    Give ``partitions`` and ``replication_factor`` (assigned by Kafka's algorithm over the
    registered brokers) or ``replica_assignment`` ({partition: [broker, ...]}, partitions
    0..N-1). Writes ``/config/topics/T`` then ``/brokers/topics/T`` (v3, a new topic id).
    """
    try:
        paths.validate_topic_name(name)
    except paths.InvalidTopicError as exc:
        raise InvalidTopicError(str(exc)) from None
    config = validate_topic_configs(configs or {})
    validate_topic_config_combination(config)
    if replica_assignment is not None and (
        partitions is not None or replication_factor is not None
    ):
        raise InvalidRequestError(
            "a replica assignment replaces the number of partitions and the replication "
            "factor: give one or the other"
        )
    if replica_assignment is None and (partitions is None or replication_factor is None):
        raise InvalidRequestError(
            "the number of partitions and the replication factor are both required "
            "(or a replica assignment)"
        )
    _check_not_marked_for_deletion(port, name)
    if port.exists(paths.topic_path(name)) is not None:
        raise TopicExistsError(f"topic '{name}' already exists")
    warnings: tuple[str, ...] = ()
    if paths.has_collision_chars(name):
        warnings = (COLLISION_WARNING,)
        unified = name.replace(".", "_")
        topics = children(port, paths.BROKERS_TOPICS)
        if name in topics:
            raise TopicExistsError(f"topic '{name}' already exists")
        colliding = sorted(t for t in topics if t.replace(".", "_") == unified)
        if colliding:
            raise InvalidTopicError(
                f"topic '{name}' collides with existing topic(s): {', '.join(colliding)}"
            )
    brokers, unreadable = live_brokers(port)
    warnings += left_out(unreadable)
    if replica_assignment is not None:
        check_readable((b for r in replica_assignment.values() for b in r), unreadable)
        assignment = validate_replica_assignment(replica_assignment, (b.id for b in brokers))
    else:
        assert partitions is not None and replication_factor is not None
        # (an RF over the broker count gets Kafka's own error from the assignment)
        _check_size_bound(name, partitions, min(replication_factor, len(brokers)))
        metadata = broker_metadatas(brokers, rack_aware_mode)
        raw = assign_replicas_to_brokers(metadata, partitions, replication_factor, rng=rng)
        assignment = {p: tuple(r) for p, r in raw.items()}
    topic_id = new_topic_id()
    model = TopicAssignment(
        name, topic_id, {p: ReplicaAssignment(r) for p, r in assignment.items()}
    )
    data = _encode_checked(model)
    topic_path, config_path = paths.topic_path(name), paths.topic_config_path(name)
    config_data = codecs.encode_topic_config(config)
    for _ in range(_WRITE_ATTEMPTS):
        # Kafka's setOrCreateEntityConfigs: overwrite a leftover config znode, else create it.
        seen: set[str] = set()
        stat = port.exists(config_path)
        ops: list[Op] = (
            [SetData(config_path, config_data, stat.version)]
            if stat is not None
            else [*missing_parents(port, config_path, seen), Create(config_path, config_data)]
        )
        ops += [*missing_parents(port, topic_path, seen), Create(topic_path, data)]
        failure = commit(port, ops)
        if failure is None:
            return TopicChange(name, topic_id, assignment, tuple(assignment), config, warnings)
        index, error = failure
        if index == len(ops) - 1 and isinstance(error, NodeExistsError):
            # Our own multi, resent after a connection loss (the fresh random topic id in
            # the data makes equal bytes ours).
            if holds(port, topic_path, data):
                return TopicChange(name, topic_id, assignment, tuple(assignment), config, warnings)
            raise TopicExistsError(f"topic '{name}' already exists")
        if not isinstance(error, BadVersionError | NodeExistsError | NoNodeError):
            raise error  # e.g. NOAUTH: no race, and retrying cannot help
        # Otherwise a parent or the config znode changed under us: read again and retry.
    raise ConcurrentModificationError(
        f"could not create topic '{name}': its config znode kept changing; nothing was written"
    )


def _zk_reassignment_partitions(port: ZkPort, topic: str) -> list[int]:
    """The partitions of ``topic`` that ``/admin/reassign_partitions`` names, sorted. As
    Kafka's createPartitions, only this topic's reassignments refuse an addition: an
    unreadable znode (the controller ignores it) or another topic's entries do not."""
    try:
        data, _ = port.get(paths.REASSIGN_PARTITIONS)
        request = codecs.decode_reassignment_request(data)
    except (NoNodeError, MalformedZnodeError):
        return []
    named = set(request.targets) | set(request.invalid)
    return sorted(tp.partition for tp in named if tp.topic == topic)


def add_partitions(
    port: ZkPort,
    name: str,
    new_total: int,
    replica_assignment: Mapping[int, Sequence[int]] | None = None,
    *,
    rack_aware_mode: RackAwareMode = RackAwareMode.ENFORCED,
    rng: random.Random | None = None,
) -> TopicChange:
    """Kafka's ``addPartitions``: grow the topic to ``new_total`` partitions.

    Existing partitions and the topic id are kept. New partitions come from
    ``replica_assignment`` (keyed by the new partition ids) or from Kafka's algorithm, started
    at the position of partition 0's first replica among the brokers, as Kafka does.
    """
    if type(new_total) is not int:
        raise InvalidPartitionsError(f"number of partitions must be an integer, got {new_total!r}")
    if name in INTERNAL_TOPICS:
        raise InvalidRequestError(
            f"the number of partitions for the internal topic {name} cannot be changed"
        )
    current, version = read_assignment(port, name)
    _check_not_marked_for_deletion(port, name)
    requested = _zk_reassignment_partitions(port, name)
    if requested:
        raise ReassignmentInProgressError(
            f"a partition reassignment is in progress for topic '{name}' "
            f"(partition(s) {_ids(requested)} in {paths.REASSIGN_PARTITIONS})"
        )
    moving = sorted(p for p, ra in current.partitions.items() if ra.is_being_reassigned)
    if moving:
        raise ReassignmentInProgressError(
            f"a partition reassignment is in progress for topic '{name}' "
            f"(partition(s) {_ids(moving)} have adding or removing replicas)"
        )
    existing = len(current.partitions)
    if sorted(current.partitions) != list(range(existing)):
        raise CorruptMetadataError(
            f"topic '{name}' has partitions {sorted(current.partitions)}, not 0..{existing - 1}; "
            "refusing to add partitions"
        )
    if new_total < existing:
        raise InvalidPartitionsError(
            f"topic '{name}' currently has {existing} partitions, which is higher than the "
            f"requested {new_total}"
        )
    if new_total == existing:
        raise InvalidPartitionsError(f"topic '{name}' already has {existing} partitions")
    first = current.partitions[0].replicas
    if not first:
        raise CorruptMetadataError(f"partition 0 of topic '{name}' has no replicas")
    _check_size_bound(name, new_total, len(first))
    brokers, unreadable = live_brokers(port)
    if replica_assignment is not None:
        check_readable((b for r in replica_assignment.values() for b in r), unreadable)
        added = validate_replica_assignment(
            replica_assignment, (b.id for b in brokers),
            first_partition=existing, count=new_total - existing, expected_rf=len(first),
        )  # fmt: skip
    else:
        metadata = broker_metadatas(brokers, rack_aware_mode)
        start = next((i for i, b in enumerate(metadata) if b.id >= first[0]), 0)
        raw = assign_replicas_to_brokers(
            metadata, new_total - existing, len(first),
            fixed_start_index=start, start_partition_id=existing, rng=rng,
        )  # fmt: skip
        added = {p: tuple(r) for p, r in raw.items()}
    merged = dict(current.partitions)
    merged.update({p: ReplicaAssignment(r) for p, r in added.items()})
    data = _encode_checked(TopicAssignment(name, current.topic_id, merged))
    failure = commit(port, [SetData(paths.topic_path(name), data, version)])
    if failure is not None and not isinstance(failure[1], BadVersionError | NoNodeError):
        raise failure[1]  # e.g. NOAUTH: no race, and running it again cannot help
    if failure is not None and not holds(port, paths.topic_path(name), data):
        raise ConcurrentModificationError(
            f"{paths.topic_path(name)} changed while partitions were being added "
            f"({failure[1]}); nothing was written, run the command again"
        )
    full = {p: ra.replicas for p, ra in sorted(merged.items())}
    return TopicChange(
        name, current.topic_id, full, tuple(sorted(added)), warnings=left_out(unreadable)
    )


def delete_topic(port: ZkPort, name: str) -> None:
    """Kafka's ``deleteTopic``: create ``/admin/delete_topics/T`` for the controller."""
    topic_path = existing_topic_path(name)
    marker = paths.delete_topic_path(name)
    # Read first, as Kafka's tool does: a topic gone only by the time of the multi was
    # deleted meanwhile, e.g. by the controller acting on our own marker (its create
    # committed and the reply was lost; the resend then finds the topic gone). Existence is
    # checked before the internal-topic rule, in Kafka's order.
    if port.exists(topic_path) is None:
        raise UnknownTopicError(f"topic '{name}' to delete does not exist")
    if name in INTERNAL_TOPICS:
        raise InvalidRequestError(
            f"topic {name} is a Kafka internal topic and is not allowed to be marked for deletion"
        )
    seen: set[str] = set()
    # Check(version -1) fails with NONODE if the topic is gone: existence and marker are atomic.
    ops: list[Op] = [Check(topic_path, -1), *missing_parents(port, marker, seen), Create(marker)]
    failure = commit(port, ops)
    if failure is None:
        return
    index, error = failure
    if index == 0 and isinstance(error, NoNodeError):
        return  # deleted since it was read: what was asked for
    if index == len(ops) - 1 and isinstance(error, NodeExistsError):
        raise TopicMarkedForDeletionError(f"topic '{name}' is already marked for deletion")
    if isinstance(error, NoAuthError):
        raise error  # reported with the credentials hint, as every NOAUTH
    raise ConcurrentModificationError(f"could not mark topic '{name}' for deletion: {error}")


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(str(i) for i in ids)
