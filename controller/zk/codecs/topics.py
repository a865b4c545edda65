"""``/brokers/topics/T``, its partition ``state`` znodes and ``/config/topics/T`` (§1.4)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicAssignment,
)
from controller.zk import paths
from controller.zk.codecs._json import (
    INT32_MAX,
    MISSING,
    bad,
    broker_ids,
    dumps,
    int_field,
    load,
    partition_key,
    typed_field,
)
from controller.zk.codecs.key_order import (
    java_properties_order,
    ordered,
    scala_mutable_order,
    scala_presized,
)

_PARTITION_STATE_PATH = "/brokers/topics/<topic>/partitions/<partition>/state"
_TOPIC_ID = re.compile(r"[A-Za-z0-9_-]{22}")  # Kafka Uuid: 16 bytes, URL-safe base64, no padding


# --- /brokers/topics/T ---


# Kafka's TopicZNode.encode fills a mutable.Map of four keys and adds topic_id when known.
_TOPIC_KEYS = ("version", "partitions", "adding_replicas", "removing_replicas")
_TOPIC_ORDER = scala_mutable_order(_TOPIC_KEYS, scala_presized(4))
_TOPIC_ORDER_WITH_ID = scala_mutable_order((*_TOPIC_KEYS, "topic_id"), scala_presized(4))


def _partition_map(replicas: Mapping[int, tuple[int, ...]]) -> dict[str, list[int]]:
    """Partition -> replicas in the key order of Kafka's ``mutable.Map[String, ...]``."""
    keys = [str(p) for p in sorted(replicas)]
    return {key: list(replicas[int(key)]) for key in scala_mutable_order(keys)}


def encode_topic_assignment(assignment: TopicAssignment) -> bytes:
    """Version 3: ``topic_id`` only when known; adding/removing only for reassigning partitions.

    Keys in Kafka's order, so the bytes are the ones Kafka 3.6 writes for the same topic.
    """
    parts = assignment.partitions
    doc: dict[str, Any] = {
        "version": 3,
        "partitions": _partition_map({p: ra.replicas for p, ra in parts.items()}),
        "adding_replicas": _partition_map(
            {p: ra.adding_replicas for p, ra in parts.items() if ra.adding_replicas}
        ),
        "removing_replicas": _partition_map(
            {p: ra.removing_replicas for p, ra in parts.items() if ra.removing_replicas}
        ),
    }
    if assignment.topic_id is None:
        return dumps(ordered(doc, _TOPIC_ORDER))
    doc["topic_id"] = assignment.topic_id
    return dumps(ordered(doc, _TOPIC_ORDER_WITH_ID))


class TopicAssignmentSize:
    """The length of ``encode_topic_assignment``'s output, kept up to date as partitions
    change: O(1) a change where encoding is O(partitions). For fitting many partitions'
    changes under ZooKeeper's size limit without encoding the topic once per partition.

    Exact for the compact encoding: a map of k entries is ``{`` + entries + k-1 commas + ``}``
    and an entry ``"p":[r1,r2]``; the rest of the document is measured once.
    """

    def __init__(self, assignment: TopicAssignment) -> None:
        self._partitions = dict(assignment.partitions)
        # Per map (partitions, adding_replicas, removing_replicas): entry count, entry bytes.
        self._counts = [0, 0, 0]
        self._bytes = [0, 0, 0]
        for p, ra in self._partitions.items():
            self._account(p, ra, 1)
        self._fixed = len(encode_topic_assignment(assignment)) - self._maps()

    @property
    def size(self) -> int:
        return self._fixed + self._maps()

    def size_with(self, partition: int, assignment: ReplicaAssignment) -> int:
        """The size were ``partition`` given ``assignment`` (nothing changes)."""
        self.set(partition, assignment)
        size = self.size
        self._undo()
        return size

    def set(self, partition: int, assignment: ReplicaAssignment) -> None:
        old = self._partitions.get(partition)
        self._last = (partition, old)
        if old is not None:
            self._account(partition, old, -1)
        self._account(partition, assignment, 1)
        self._partitions[partition] = assignment

    def _undo(self) -> None:
        partition, old = self._last
        self._account(partition, self._partitions[partition], -1)
        if old is None:
            del self._partitions[partition]
        else:
            self._account(partition, old, 1)
            self._partitions[partition] = old

    def _maps(self) -> int:
        return sum(2 + b + max(k - 1, 0) for k, b in zip(self._counts, self._bytes, strict=True))

    def _account(self, partition: int, ra: ReplicaAssignment, sign: int) -> None:
        key = len(str(partition)) + 5  # "p":[]
        for i, replicas in enumerate((ra.replicas, ra.adding_replicas, ra.removing_replicas)):
            if i == 0 or replicas:  # adding/removing entries only for reassigning partitions
                self._counts[i] += sign
                self._bytes[i] += sign * (key + len(",".join(map(str, replicas))))


def _reassigning(obj: dict[str, Any], key: str, path: str) -> dict[int, tuple[int, ...]]:
    raw = obj.get(key)
    if raw is None:  # v1 nodes predate KIP-455
        return {}
    if type(raw) is not dict:
        bad(path, key, "a JSON object", raw)
    return {partition_key(k, path, key): broker_ids(v, path, f"{key}.{k}") for k, v in raw.items()}


_NUMBER = rb"(?:0|[1-9][0-9]{0,9})"  # JSON's grammar for a non-negative integer, <= 10 digits
_ID_LIST = rb"(?:" + _NUMBER + rb"(?:," + _NUMBER + rb")*)?"
_PARTITION = rb'"' + _NUMBER + rb'":\[' + _ID_LIST + rb"\]"
# A topic znode as Kafka 3.6 and encode_topic_assignment write it, no reassignment.
_CANONICAL_TOPIC = re.compile(
    rb'\{"partitions":\{((?:' + _PARTITION + rb"(?:," + _PARTITION + rb")*)?)\},"
    rb'(?:"topic_id":"([A-Za-z0-9_-]{22})",)?"adding_replicas":\{\},"removing_replicas":\{\},'
    rb'"version":3\}'
)
_PARTITION_ENTRY = re.compile(rb'"(' + _NUMBER + rb')":\[(' + _ID_LIST + rb")\]")
# Replica lists seen (as written) -> their validated assignment: a cluster has few distinct ones.
_ASSIGNMENTS: dict[bytes, ReplicaAssignment | None] = {}


def _canonical_assignment(ids: bytes) -> ReplicaAssignment | None:
    found = _ASSIGNMENTS.get(ids, False)
    if found is not False:
        return found  # type: ignore[return-value]
    replicas = tuple(map(int, ids.split(b","))) if ids else ()
    valid = len(set(replicas)) == len(replicas) and (not replicas or max(replicas) <= INT32_MAX)
    result = ReplicaAssignment(replicas) if valid else None
    if len(_ASSIGNMENTS) < 1 << 16:
        _ASSIGNMENTS[ids] = result
    return result


def _decode_canonical_topic(topic: str, data: bytes) -> TopicAssignment | None:
    """The fast path of ``decode_topic_assignment`` (failover decodes every topic znode);
    None when the full decoder must look (other forms, bad values, repeated keys)."""
    match = _CANONICAL_TOPIC.fullmatch(data)
    if match is None:
        return None
    body, raw_id = match.groups()
    partitions: dict[int, ReplicaAssignment] = {}
    for key, ids in _PARTITION_ENTRY.findall(body):
        partition = int(key)
        assignment = _canonical_assignment(ids)
        if assignment is None or partition > INT32_MAX or partition in partitions:
            return None
        partitions[partition] = assignment
    return TopicAssignment(topic, raw_id.decode("ascii") if raw_id else None, partitions)


def decode_topic_assignment(
    topic: str, data: bytes | None, path: str | None = None
) -> TopicAssignment:
    """Versions 1-3; missing ``adding_replicas``/``removing_replicas``/``topic_id`` mean none.

    As Kafka's TopicZNode.decode, ``version`` is never read (a tool writing none, or a later
    one, works as against Kafka) and a missing ``partitions`` is a topic without partitions.
    Like Kafka, the decoder checks types, not reassignment semantics: an empty replica list,
    adding/removing replicas outside ``replicas`` (the reference's own example has one) and
    adding/removing entries for unlisted partitions (ignored) are all accepted.
    """
    path = path or paths.topic_path(topic)
    if data is not None:
        fast = _decode_canonical_topic(topic, data)
        if fast is not None:
            return fast
    obj = load(data, path)
    topic_id = obj.get("topic_id")
    if topic_id is not None and (type(topic_id) is not str or not _TOPIC_ID.fullmatch(topic_id)):
        bad(path, "topic_id", "a 22-character URL-safe base64 Kafka Uuid", topic_id)
    adding = _reassigning(obj, "adding_replicas", path)
    removing = _reassigning(obj, "removing_replicas", path)
    partitions: dict[int, ReplicaAssignment] = {}
    listed = typed_field(obj, "partitions", path, dict) if "partitions" in obj else {}
    for key, replicas in listed.items():
        where = f"partitions.{key}"
        p = partition_key(key, path, "partitions")
        rs = broker_ids(replicas, path, where)
        partitions[p] = ReplicaAssignment(rs, adding.get(p, ()), removing.get(p, ()))
    return TopicAssignment(topic, topic_id, partitions)


# --- /brokers/topics/T/partitions/P/state ---


def encode_partition_state(state: LeaderIsrAndControllerEpoch) -> bytes:
    """``partition_epoch`` is the znode's zkVersion and is never written."""
    lai = state.leader_and_isr
    if lai.leader_recovery_state is LeaderRecoveryState.RECOVERED:
        # Every election and ISR change writes one: the bytes json.dumps gives for this
        # document (same key order, no spaces), ~5x faster. A test pins the equality.
        return (
            f'{{"controller_epoch":{int(state.controller_epoch):d},"leader":{int(lai.leader):d},'
            f'"version":1,"leader_epoch":{int(lai.leader_epoch):d},'
            f'"isr":[{",".join([f"{int(r):d}" for r in lai.isr])}]}}'
        ).encode()
    # Kafka adds leader_recovery_state to a Map of five keys, which makes it a hash map: this
    # is its iteration order.
    return dumps(
        {
            "controller_epoch": state.controller_epoch,
            "leader": lai.leader,
            "version": 1,
            "leader_recovery_state": int(lai.leader_recovery_state),
            "leader_epoch": lai.leader_epoch,
            "isr": list(lai.isr),
        }
    )


_RECOVERY_STATES = {s.value: s for s in LeaderRecoveryState}


# The state znode as this controller writes it (encode_partition_state), with JSON's own
# number grammar for non-negative integers (no leading zeros) and a leader of -1 allowed.
_CANONICAL_STATE = re.compile(
    rb'\{"controller_epoch":(0|[1-9][0-9]{0,9}),"leader":(-1|0|[1-9][0-9]{0,9}),'
    rb'"version":1,"leader_epoch":(0|[1-9][0-9]{0,9}),'
    rb'"isr":\[((?:0|[1-9][0-9]{0,9})(?:,(?:0|[1-9][0-9]{0,9}))*)?\]\}'
)


def decode_partition_state(
    data: bytes | None, zk_version: int, path: str | None = None
) -> LeaderIsrAndControllerEpoch:
    """The state znode; ``partition_epoch`` is set to ``zk_version`` (the znode's stat.version)."""
    if data is not None:
        # Elections and ISR changes read one per partition: the controller's own format is
        # parsed without the JSON decoder; anything else (and any value out of range or a
        # duplicate ISR member) takes the full path below, which reports the problem.
        match = _CANONICAL_STATE.fullmatch(data)
        if match is not None:
            controller_epoch, leader, leader_epoch, isr_text = match.groups()
            isr = tuple(map(int, isr_text.split(b","))) if isr_text else ()
            numbers = (int(controller_epoch), int(leader), int(leader_epoch))
            if max(numbers) <= INT32_MAX and (not isr or max(isr) <= INT32_MAX) and (
                len(set(isr)) == len(isr)
            ):
                return LeaderIsrAndControllerEpoch(
                    LeaderAndIsr(
                        numbers[1], numbers[2], isr, LeaderRecoveryState.RECOVERED, zk_version
                    ),
                    numbers[0],
                )
    path = path or _PARTITION_STATE_PATH
    obj = load(data, path)
    get = obj.get
    # ``version`` is not read, as in Kafka's TopicPartitionStateZNode.decode: a state a tool
    # wrote without one is read (it was refused: at failover its partition stayed offline).
    leader, leader_epoch = get("leader"), get("leader_epoch")
    controller_epoch, raw = get("controller_epoch"), get("leader_recovery_state")
    # Runs per partition at failover: one inlined test for the common valid case, the
    # field-by-field checks (and their messages) only when it fails.
    if not (
        type(leader) is type(leader_epoch) is type(controller_epoch) is int
        and -1 <= leader <= INT32_MAX
        and 0 <= leader_epoch <= INT32_MAX
        and 0 <= controller_epoch <= INT32_MAX
        and raw is None
    ):
        leader = int_field(obj, "leader", path, -1)  # -1: no leader
        leader_epoch = int_field(obj, "leader_epoch", path, 0)
        controller_epoch = int_field(obj, "controller_epoch", path, 0)
    isr = broker_ids(get("isr", MISSING), path, "isr")
    recovery = LeaderRecoveryState.RECOVERED
    if raw is not None:
        if type(raw) is not int or raw not in _RECOVERY_STATES:
            bad(path, "leader_recovery_state", "0 (RECOVERED) or 1 (RECOVERING)", raw)
        recovery = _RECOVERY_STATES[raw]
    return LeaderIsrAndControllerEpoch(
        LeaderAndIsr(leader, leader_epoch, isr, recovery, zk_version), controller_epoch
    )


# --- /config/topics/T (every /config/<type>/<entity> znode has this format) ---


def encode_topic_config(config: Mapping[str, str], inserted: Iterable[str] | None = None) -> bytes:
    """Any entity's config znode. Kafka's config is a ``java.util.Properties``: its order.

    ``inserted``: the keys in the order Kafka put them into that Properties, when it is not
    ``config``'s own. An altered config is the stored keys (in the znode's order), then the
    added ones, and only then are deleted keys removed: a removal never shrinks the table, so
    the other keys stay where a table sized for all of them put them."""
    order = java_properties_order(config if inserted is None else inserted)
    return dumps({"version": 1, "config": ordered(config, order)})


def decode_topic_config(data: bytes | None, path: str) -> dict[str, str]:
    """Topic config overrides; every value is a string in Kafka's format. ``version`` is not
    read, as in Kafka's ConfigEntityZNode.decode."""
    obj = load(data, path)
    config = typed_field(obj, "config", path, dict)
    for key, value in config.items():
        if type(value) is not str:
            bad(path, f"config.{key}", "a string value", value)
    return config
