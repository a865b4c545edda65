"""Legacy admin requests and broker notifications (reference §1.4).

``/admin/reassign_partitions``, ``/admin/preferred_replica_election``,
``/isr_change_notification/isr_change_N``, ``/log_dir_event_notification/log_dir_event_N``
and ``/config/changes/config_change_N``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from controller.core.model import TopicPartition
from controller.zk import paths
from controller.zk.codecs._json import (
    INT32_MAX,
    INT32_MIN,
    MISSING,
    bad,
    broker_ids,
    dumps,
    fail,
    int_field,
    load,
    partition_list,
    topic_partition,
    typed_field,
    version_field,
)
from controller.zk.codecs.key_order import (
    partition_entry_hash,
    scala_immutable_order,
    scala_mutable_set_order,
    topic_partition_hash,
)
from controller.zk.errors import MalformedZnodeError

LOG_DIR_FAILURE_EVENT = 1
_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")


# --- /admin/reassign_partitions and /admin/preferred_replica_election ---


_REASSIGN_KEYS = frozenset({"version", "partitions"})
_REASSIGN_ENTRY_KEYS = frozenset({"topic", "partition", "replicas"})


def _tp_hash(tp: TopicPartition) -> int:
    return topic_partition_hash(tp.topic, tp.partition)


def _entry_hash(tp: TopicPartition) -> int:
    return partition_entry_hash(tp.topic, tp.partition)


def encode_reassignment(
    reassignment: Mapping[TopicPartition, Sequence[int]],
    *,
    rewritten_from: Sequence[TopicPartition] | None = None,
) -> bytes:
    """Entries in the order of Kafka's immutable ``Map[TopicPartition, Seq[Int]]``: the
    request's own up to four, else by hash. ``rewritten_from``: the partitions of the znode
    this rewrites (the controller dropping completed entries), whose order Kafka's
    ``partition`` of the decoded map keeps when at most four entries remain."""
    keys = list(reassignment)
    if rewritten_from is not None and len(keys) <= 4:
        order = [tp for tp in scala_immutable_order(rewritten_from, _tp_hash) if tp in reassignment]
        listed = set(order)
        keys = order + [tp for tp in keys if tp not in listed]
    else:
        keys = scala_immutable_order(keys, _tp_hash)
    entries = [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(reassignment[tp])}
        for tp in keys
    ]
    return dumps({"version": 1, "partitions": entries})


@dataclass(frozen=True, slots=True)
class ReassignmentRequest:
    """``/admin/reassign_partitions`` read entry by entry: the valid targets, and each
    partition whose entry is invalid with the error naming the field."""

    targets: dict[TopicPartition, tuple[int, ...]]
    invalid: dict[TopicPartition, MalformedZnodeError]
    # Entries naming a partition that cannot exist (a topic name no znode can have, a
    # negative partition id): Kafka decodes them and fails each as unknown.
    unknown: dict[TopicPartition, str] = field(default_factory=dict)
    # Set when the znode as a whole is malformed (read as empty, as Kafka reads it): why.
    malformed: str | None = None


def decode_reassignment_request(
    data: bytes | None, path: str = paths.REASSIGN_PARTITIONS
) -> ReassignmentRequest:
    """The request as the controller acts on it.

    What Kafka's strict mapper refuses (invalid JSON, an unknown field, a version that is no
    integer, an entry without a string topic and an int32 partition) refuses the whole znode:
    MalformedZnodeError. A partition's bad target (not a list of distinct broker ids, empty)
    or a partition listed twice only makes that partition invalid, and a partition that
    cannot exist (Kafka's mapper binds it; the controller finds no such partition) is only
    unknown, so that the other partitions are still reassigned.
    """
    obj = load(data, path)
    if not _REASSIGN_KEYS.issuperset(obj):
        raise MalformedZnodeError(path, f"unknown field(s) {sorted(set(obj) - _REASSIGN_KEYS)}")
    _ignored_version(obj, path)
    targets: dict[TopicPartition, tuple[int, ...]] = {}
    invalid: dict[TopicPartition, MalformedZnodeError] = {}
    unknown: dict[TopicPartition, str] = {}
    for i, entry in enumerate(typed_field(obj, "partitions", path, list)):
        where = f"partitions[{i}]"
        tp, impossible = _named_partition(entry, path, where)
        if not _REASSIGN_ENTRY_KEYS.issuperset(entry):
            extra = sorted(set(entry) - _REASSIGN_ENTRY_KEYS)
            fail(path, where, f"unknown field(s) {extra}")
        if impossible is not None:
            unknown[tp] = impossible
            continue
        if tp in targets or tp in invalid:
            targets.pop(tp, None)
            invalid[tp] = MalformedZnodeError(path, f"field {where!r}: duplicate partition {tp}")
            continue
        try:
            targets[tp] = broker_ids(
                entry.get("replicas", MISSING), path, f"{where}.replicas", non_empty=True
            )
        except MalformedZnodeError as exc:
            invalid[tp] = exc
    return ReassignmentRequest(targets, invalid, unknown)


def _named_partition(entry: object, path: str, where: str) -> tuple[TopicPartition, str | None]:
    """The entry's partition, and why it cannot exist (None when it can)."""
    if type(entry) is not dict:
        bad(path, where, 'an object {"topic":..,"partition":..}', entry)
    topic = typed_field(entry, "topic", path, str, f"{where}.")
    tp = TopicPartition(topic, int_field(entry, "partition", path, prefix=f"{where}."))
    if not paths.is_znode_name(topic):
        return tp, f"field {where + '.topic'!r}: {topic!r} cannot be a topic znode name"
    if tp.partition < 0:
        return tp, f"field {where + '.partition'!r}: negative partition id {tp.partition}"
    return tp, None


def _ignored_version(obj: dict[str, object], path: str) -> None:
    """Kafka's mapper binds ``version`` to an Int it never checks, with Jackson's default
    coercions: missing or null is 0, a float is truncated, a decimal string is parsed. So a
    hand-written request without it, or with ``1.0``, is still acted on; only what the mapper
    cannot bind (a boolean, other text, a number past int32) refuses the znode."""
    v = obj.get("version", MISSING)
    if v is MISSING or v is None:
        return
    if type(v) is str:
        # Length first: int() refuses more than 4300 digits (ValueError, not malformed).
        v = int(v) if len(v) <= 20 and _INT_TEXT.fullmatch(v) else (0 if v == "" else v)
    if type(v) is float and math.isfinite(v):
        v = int(v)
    if type(v) is int and INT32_MIN <= v <= INT32_MAX:
        return
    bad(path, "version", "an integer (Kafka reads it but does not check it)", obj["version"])


def decode_reassignment(
    data: bytes | None, path: str = paths.REASSIGN_PARTITIONS
) -> dict[TopicPartition, tuple[int, ...]]:
    """Strict: any invalid or impossible entry raises MalformedZnodeError (for tools reading
    the request back; the controller uses ``decode_reassignment_request``)."""
    request = decode_reassignment_request(data, path)
    if request.invalid:
        raise next(iter(request.invalid.values()))
    if request.unknown:
        raise MalformedZnodeError(path, next(iter(request.unknown.values())))
    return request.targets


def _partition_set(data: bytes | None, path: str) -> set[TopicPartition]:
    """The partitions listed; duplicates are merged (the content is a set, as Kafka's).
    ``version`` is not read, as in Kafka's IsrChangeNotificationSequenceZNode.decode."""
    obj = load(data, path)
    return {
        topic_partition(entry, path, f"partitions[{i}]")
        for i, entry in enumerate(typed_field(obj, "partitions", path, list))
    }


def encode_preferred_replica_election(partitions: Iterable[TopicPartition]) -> bytes:
    """In the order of Kafka's immutable Set of ``{"topic", "partition"}`` maps: the given
    order up to four partitions, else by hash."""
    tps = scala_immutable_order(list(dict.fromkeys(partitions)), _entry_hash)
    return dumps({"version": 1, "partitions": partition_list(tps)})


def decode_preferred_replica_election(
    data: bytes | None, path: str = paths.PREFERRED_REPLICA_ELECTION
) -> set[TopicPartition]:
    """As Kafka's ``PreferredReplicaElectionZNode.decode``: only ``partitions`` is read (no
    version is required, as in the old election tool's files written by hand), a partition
    listed twice is elected once, and an entry whose topic cannot be a znode name or whose
    partition is negative is kept: it names no partition of the cluster, so the controller
    skips it as unknown (the other partitions are still elected, as Kafka does)."""
    obj = load(data, path)
    out: set[TopicPartition] = set()
    for i, entry in enumerate(typed_field(obj, "partitions", path, list)):
        where = f"partitions[{i}]"
        if type(entry) is not dict:
            bad(path, where, 'an object {"topic":..,"partition":..}', entry)
        topic = typed_field(entry, "topic", path, str, f"{where}.")
        out.add(TopicPartition(topic, int_field(entry, "partition", path, prefix=f"{where}.")))
    return out


# --- /isr_change_notification/*, /log_dir_event_notification/* ---


def encode_isr_change_notification(partitions: Iterable[TopicPartition]) -> bytes:
    """In the order Kafka's broker writes: its ``mutable.HashSet`` of partitions mapped to a
    ``mutable.HashSet`` of ``{"topic", "partition"}`` maps."""
    tps = scala_mutable_set_order(list(dict.fromkeys(partitions)), _tp_hash)
    return dumps(
        {"version": 1, "partitions": partition_list(scala_mutable_set_order(tps, _entry_hash))}
    )


def decode_isr_change_notification(data: bytes | None, path: str) -> set[TopicPartition]:
    return _partition_set(data, path)


def encode_log_dir_event(broker_id: int) -> bytes:
    return dumps({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(data: bytes | None, path: str) -> int:
    """The id of the broker with a failed log dir. As Kafka's decoder, only ``broker`` is
    read: ``version`` and ``event`` are not checked (LogDirFailure is the only event)."""
    return int_field(load(data, path), "broker", path, 0)


# --- /config/changes/config_change_N ---


def encode_config_change(entity_type: str, name: str) -> bytes:
    """Kafka's ``ConfigEntityChangeNotificationZNode`` (version 2): ``entity_path`` T/N."""
    return dumps({"version": 2, "entity_path": f"{entity_type}/{name}"})


def decode_config_change(data: bytes | None, path: str) -> tuple[str, str]:
    """(entity type, entity name) of a notification, in either of Kafka's two formats.

    ``entity_path`` ``"users/u/clients/c"`` gives ``("users", "u/clients/c")``.
    """
    obj = load(data, path)
    if version_field(obj, path, (1, 2)) == 2:
        entity_path = obj.get("entity_path")
        if not isinstance(entity_path, str) or "/" not in entity_path:
            fail(path, "entity_path", f"must be '<type>/<name>', got {entity_path!r}")
        entity_type, _, name = entity_path.partition("/")
    else:
        raw_type, raw_name = obj.get("entity_type"), obj.get("entity_name")
        if not isinstance(raw_type, str) or not isinstance(raw_name, str):
            fail(path, "entity_type", "version 1 needs string entity_type and entity_name")
        entity_type, name = raw_type, raw_name
    if not entity_type or not name:
        fail(path, "entity_path", "empty entity type or name")
    # Only users/clients names nest ("u/clients/c"); a topic or broker name is read back
    # from /config/<type>/<name>, so it must be a single znode name.
    nested_allowed = entity_type not in (paths.CONFIG_TYPE_TOPICS, paths.CONFIG_TYPE_BROKERS)
    if not nested_allowed and not paths.is_znode_name(name):
        fail(path, "entity_path", f"{entity_type} entity name {name!r} is not a znode name")
    return entity_type, name
