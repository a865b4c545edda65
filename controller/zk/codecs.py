"""Kafka's znode formats (reference §1.4): encoders and strict decoders.

Encoders write exactly what Kafka's Jackson writes: compact separators, non-ASCII as raw UTF-8,
keys in the order of the reference's examples, numbers as strings where Kafka uses strings
(pitfall 25). Encoders trust the model they are given.

Decoders are stricter than Kafka about shape and types: every problem raises
``MalformedZnodeError(path, problem)`` whose problem names the field, and the caller decides
what to do (log and skip, treat as empty...). They do not check controller semantics (e.g.
reassignment invariants), which Kafka does not check either. Unknown fields are ignored, as
Kafka's readers do, except in ``/admin/reassign_partitions`` (Kafka's strict mapper). Duplicate
JSON keys keep the last value, as Jackson does. Decoding runs for every partition at failover,
so each decoder parses once and does cheap type checks, building error text only on failure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from controller.core.model import (
    Broker,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from controller.zk import paths
from controller.zk.errors import MalformedZnodeError

# ZooKeeper's default jute.maxbuffer (just under 1 MiB) bounds any znode; anything larger than
# 1 MiB cannot have come from a default-configured ZooKeeper, so it is refused before parsing.
MAX_ZNODE_BYTES = 1024 * 1024

INT16_MAX = 2**15 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MAX = 2**63 - 1

SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
FEATURE_STATUS_DISABLED = 0
FEATURE_STATUS_ENABLED = 1
LOG_DIR_FAILURE_EVENT = 1
PRODUCER_ID_BLOCK_SIZE = 1000

_PARTITION_STATE_PATH = "/brokers/topics/<topic>/partitions/<partition>/state"
_DIGITS = re.compile(r"[0-9]+")
_TOPIC_ID = re.compile(r"[A-Za-z0-9_-]{22}")  # Kafka Uuid: 16 bytes, URL-safe base64, no padding
# Kafka's endpoint grammar (SocketServerConfigs): LISTENER://host:port, IPv6 hosts in brackets.
_ENDPOINT = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")
_MISSING: Any = object()
_Obj = Mapping[str, Any]
_T = TypeVar("_T")


# --- Shared helpers ---


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _kind(value: object) -> str:
    """How a JSON value looks, for error messages."""
    if value is _MISSING or value is None:
        return "nothing (field missing)" if value is _MISSING else "null"
    if isinstance(value, bool | int | float | str):
        name = {bool: "boolean", str: "string"}.get(type(value), "number")
        return f"{name} {json.dumps(value)[:40]}"
    return "array" if isinstance(value, list) else "object"


def _fail(path: str, where: str, problem: str) -> NoReturn:
    raise MalformedZnodeError(path, f"field {where!r}: {problem}")


def _bad(path: str, where: str, expected: str, value: object) -> NoReturn:
    _fail(path, where, f"expected {expected}, got {_kind(value)}")


# One shared decoder: json.loads(..., parse_constant=...) would build a new one per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _load(data: bytes | None, path: str) -> dict[str, Any]:
    """Parse a znode payload that must be a JSON object."""
    if not data:
        raise MalformedZnodeError(path, "no data (null or empty); a JSON object is required")
    if len(data) > MAX_ZNODE_BYTES:
        raise MalformedZnodeError(
            path, f"payload of {len(data)} bytes exceeds MAX_ZNODE_BYTES ({MAX_ZNODE_BYTES})"
        )
    try:
        text = str(data, "utf-8")
    except UnicodeDecodeError as e:
        raise MalformedZnodeError(path, f"invalid UTF-8 at byte {e.start}") from None
    try:
        obj = _DECODER.decode(text)
    except ValueError as e:
        raise MalformedZnodeError(path, f"invalid JSON: {e}") from None
    except RecursionError:
        raise MalformedZnodeError(path, "invalid JSON: nested too deeply") from None
    if type(obj) is not dict:
        raise MalformedZnodeError(path, f"top level: expected a JSON object, got {_kind(obj)}")
    return obj


def _int(
    obj: _Obj, key: str, path: str, lo: int = INT32_MIN, hi: int = INT32_MAX, prefix: str = ""
) -> int:
    v = obj.get(key, _MISSING)
    if type(v) is int and lo <= v <= hi:  # `type is`: a JSON boolean is not an integer
        return v
    _bad(path, prefix + key, f"an integer in [{lo}, {hi}]", v)


_EXPECTED = {str: "a string", dict: "a JSON object", list: "a JSON array"}


def _get(obj: _Obj, key: str, path: str, kind: type[_T], prefix: str = "") -> _T:
    v = obj.get(key, _MISSING)
    if type(v) is kind:
        return v
    _bad(path, prefix + key, _EXPECTED[kind], v)


def _decimal_str(obj: _Obj, key: str, path: str, hi: int = INT64_MAX) -> int:
    """A non-negative number Kafka stores as a JSON string (pitfall 25)."""
    v = obj.get(key, _MISSING)
    if type(v) is str and _DIGITS.fullmatch(v) and int(v) <= hi:
        return int(v)
    _bad(path, key, f"a string of decimal digits up to {hi}", v)


def _version(obj: _Obj, path: str, supported: Sequence[int]) -> int:
    v = obj.get("version", _MISSING)
    if type(v) is int and v in supported:
        return v
    _bad(path, "version", f"a supported version (one of {list(supported)})", v)


def _broker_ids(
    value: object, path: str, where: str, *, non_empty: bool = False
) -> tuple[int, ...]:
    """A list of distinct broker ids (replicas, ISR, adding/removing replicas)."""
    if type(value) is not list:
        _bad(path, where, "an array of broker ids", value)
    for i, b in enumerate(value):
        if type(b) is not int or b < 0 or b > INT32_MAX:
            _bad(path, f"{where}[{i}]", f"a broker id in [0, {INT32_MAX}]", b)
    ids = tuple(value)
    if len(set(ids)) != len(ids):
        dup = next(b for i, b in enumerate(ids) if b in ids[:i])
        _fail(path, where, f"duplicate broker id {dup} in {list(ids)}")
    if non_empty and not ids:
        _fail(path, where, "the replica list is empty")
    return ids


def _partition_key(key: str, path: str, where: str) -> int:
    """A partition id stored as a JSON object key (canonical decimal, like Kafka writes)."""
    if key.isascii() and key.isdigit() and (key == "0" or key[0] != "0"):
        p = int(key)
        if p <= INT32_MAX:
            return p
        problem = f"partition id {key} is larger than {INT32_MAX}"
    elif key[:1] == "-" and key[1:].isascii() and key[1:].isdigit():
        problem = f"negative partition id {key}"
    else:
        problem = f"partition key {key!r} is not a non-negative decimal integer"
    _fail(path, where, problem)


def _topic_partition(entry: object, path: str, where: str) -> TopicPartition:
    if type(entry) is not dict:
        _bad(path, where, 'an object {"topic":..,"partition":..}', entry)
    topic = _get(entry, "topic", path, str, f"{where}.")
    try:
        paths.validate_topic_name(topic)
    except paths.InvalidTopicError as e:
        _fail(path, f"{where}.topic", str(e))
    return TopicPartition(topic, _int(entry, "partition", path, 0, INT32_MAX, f"{where}."))


def _partition_list(tps: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in dict.fromkeys(tps)]


# --- /controller and /controller_epoch ---


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    """The full content of ``/controller``."""

    version: int
    broker_id: int
    timestamp_ms: int
    kraft_controller_epoch: int = -1  # -1: a ZK controller (v1 nodes have no such field)


def encode_controller(
    broker_id: int, timestamp_ms: int, *, version: int = 1, kraft_controller_epoch: int = -1
) -> bytes:
    """v1 (Kafka <= 3.3) or v2 (3.4+, adds ``kraftControllerEpoch``)."""
    doc: dict[str, Any] = {"version": version, "brokerid": broker_id}
    doc["timestamp"] = str(timestamp_ms)
    if version == 2:
        doc["kraftControllerEpoch"] = kraft_controller_epoch
    elif version != 1:
        raise ValueError(f"unsupported /controller version {version}")
    return _dumps(doc)


def decode_controller_full(
    data: bytes | None, path: str = paths.CONTROLLER
) -> ControllerRegistration:
    obj = _load(data, path)
    version = _version(obj, path, (1, 2))
    broker_id = _int(obj, "brokerid", path, 0)
    timestamp = _decimal_str(obj, "timestamp", path)
    kraft_epoch = _int(obj, "kraftControllerEpoch", path, -1) if version == 2 else -1
    return ControllerRegistration(version, broker_id, timestamp, kraft_epoch)


def decode_controller(data: bytes | None, path: str = paths.CONTROLLER) -> int:
    """The active controller's id. A v2 node of a migrating KRaft controller decodes too."""
    return decode_controller_full(data, path).broker_id


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes | None, path: str = paths.CONTROLLER_EPOCH) -> int:
    """A bare decimal string, not JSON (pitfall 25)."""
    raw = bytes(data or b"")
    if not raw.isdigit() or len(raw) > 10 or int(raw) > INT32_MAX:  # isdigit: ASCII only
        _fail(path, "epoch", f"expected a decimal string up to {INT32_MAX}, got {raw[:40]!r}")
    return int(raw)


# --- /brokers/ids/N ---


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """The full content of a broker's registration znode."""

    broker_id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    timestamp_ms: int = 0
    features: dict[str, tuple[int, int]] = field(default_factory=dict, hash=False)
    version: int = 5

    def to_broker(self) -> Broker:
        return Broker(self.broker_id, self.endpoints, self.rack, dict(self.features))


def encode_broker_registration(reg: BrokerRegistration) -> bytes:
    """Kafka's BrokerIdZNode.encode: rack from v3, protocol map from v4, features from v5."""
    if not 1 <= reg.version <= 5:
        raise ValueError(f"unsupported broker registration version {reg.version}")
    # Old clients read the top-level host/port: the first PLAINTEXT endpoint, if any.
    plain = next((e for e in reg.endpoints if e.security_protocol == "PLAINTEXT"), None)
    doc: dict[str, Any] = {
        "version": reg.version,
        "host": plain.host if plain else None,
        "port": plain.port if plain else -1,
        "jmx_port": reg.jmx_port,
        "timestamp": str(reg.timestamp_ms),
        "endpoints": [f"{e.listener}://{e.address}" for e in reg.endpoints],
    }
    if reg.version >= 4:
        doc["listener_security_protocol_map"] = {
            e.listener: e.security_protocol for e in reg.endpoints
        }
    if reg.rack is not None and reg.version >= 3:
        doc["rack"] = reg.rack
    if reg.version >= 5:
        doc["features"] = {
            name: {"min_version": lo, "max_version": hi} for name, (lo, hi) in reg.features.items()
        }
    return _dumps(doc)


def _endpoints(obj: dict[str, Any], version: int, path: str) -> tuple[EndPoint, ...]:
    if version == 1 or (version == 2 and "endpoints" not in obj):
        host = _get(obj, "host", path, str)
        return (EndPoint("PLAINTEXT", host, _int(obj, "port", path, 0, 65535), "PLAINTEXT"),)
    raw_map = obj.get("listener_security_protocol_map")
    protocols: dict[str, str] | None = None
    if raw_map is not None:
        if type(raw_map) is not dict:
            _bad(path, "listener_security_protocol_map", "a JSON object", raw_map)
        protocols = {}
        for name, proto in raw_map.items():
            if type(proto) is not str or proto.upper() not in SECURITY_PROTOCOLS:
                _bad(path, f"listener_security_protocol_map.{name}", "a security protocol", proto)
            protocols[name.upper()] = proto.upper()
    out: list[EndPoint] = []
    for i, conn in enumerate(_get(obj, "endpoints", path, list)):
        where = f"endpoints[{i}]"
        m = _ENDPOINT.fullmatch(conn) if type(conn) is str else None
        if m is None:
            _bad(path, where, "a string LISTENER://host:port", conn)
        listener, host, port = m.group(1).upper(), m.group(2), int(m.group(3))
        if not listener or not 0 <= port <= 65535:
            _bad(path, where, "a listener name and a port in [0, 65535]", conn)
        # Without a map, the listener name is the protocol name (pre-v4 registrations).
        proto = protocols.get(listener) if protocols is not None else listener
        if proto not in SECURITY_PROTOCOLS:
            _fail(path, where, f"no security protocol known for listener {listener!r}")
        if any(e.listener == listener for e in out):
            _fail(path, where, f"duplicate listener {listener!r}")
        out.append(EndPoint(listener, host, port, proto))
    return tuple(out)


def _supported_features(obj: dict[str, Any], path: str) -> dict[str, tuple[int, int]]:
    raw = obj.get("features")
    if raw is None:
        return {}
    if type(raw) is not dict:
        _bad(path, "features", "a JSON object", raw)
    out: dict[str, tuple[int, int]] = {}
    for name, rng in raw.items():
        where = f"features.{name}"
        if type(rng) is not dict:
            _bad(path, where, 'an object {"min_version":..,"max_version":..}', rng)
        lo = _int(rng, "min_version", path, 0, INT16_MAX, f"{where}.")
        hi = _int(rng, "max_version", path, lo, INT16_MAX, f"{where}.")
        out[name] = (lo, hi)
    return out


def decode_broker_registration(
    broker_id: int, data: bytes | None, path: str | None = None
) -> BrokerRegistration:
    """Versions 1-5. v1 (and a v2 without ``endpoints``) yields one PLAINTEXT endpoint."""
    path = path or paths.broker_path(broker_id)
    obj = _load(data, path)
    version = _version(obj, path, (1, 2, 3, 4, 5))
    jmx_port = _int(obj, "jmx_port", path)
    timestamp = _decimal_str(obj, "timestamp", path)
    endpoints = _endpoints(obj, version, path)
    rack = obj.get("rack")
    if rack is not None and type(rack) is not str:
        _bad(path, "rack", "a string or null", rack)
    features = _supported_features(obj, path)
    return BrokerRegistration(broker_id, endpoints, rack, jmx_port, timestamp, features, version)


def decode_broker(broker_id: int, data: bytes | None, path: str | None = None) -> Broker:
    return decode_broker_registration(broker_id, data, path).to_broker()


# --- /brokers/topics/T ---


def encode_topic_assignment(assignment: TopicAssignment) -> bytes:
    """Version 3: ``topic_id`` only when known; adding/removing only for reassigning partitions."""
    doc: dict[str, Any] = {"version": 3}
    if assignment.topic_id is not None:
        doc["topic_id"] = assignment.topic_id
    ordered = sorted(assignment.partitions.items())
    doc["partitions"] = {str(p): list(ra.replicas) for p, ra in ordered}
    doc["adding_replicas"] = {
        str(p): list(ra.adding_replicas) for p, ra in ordered if ra.adding_replicas
    }
    doc["removing_replicas"] = {
        str(p): list(ra.removing_replicas) for p, ra in ordered if ra.removing_replicas
    }
    return _dumps(doc)


def _reassigning(obj: dict[str, Any], key: str, path: str) -> dict[int, tuple[int, ...]]:
    raw = obj.get(key)
    if raw is None:  # v1 nodes predate KIP-455
        return {}
    if type(raw) is not dict:
        _bad(path, key, "a JSON object", raw)
    return {
        _partition_key(k, path, key): _broker_ids(v, path, f"{key}.{k}") for k, v in raw.items()
    }


def decode_topic_assignment(
    topic: str, data: bytes | None, path: str | None = None
) -> TopicAssignment:
    """Versions 1-3; missing ``adding_replicas``/``removing_replicas``/``topic_id`` mean none.

    Like Kafka, the decoder checks types, not reassignment semantics: an empty replica list,
    adding/removing replicas outside ``replicas`` (the reference's own example has one) and
    adding/removing entries for unlisted partitions (ignored) are all accepted.
    """
    path = path or paths.topic_path(topic)
    obj = _load(data, path)
    _version(obj, path, (1, 2, 3))
    topic_id = obj.get("topic_id")
    if topic_id is not None and (type(topic_id) is not str or not _TOPIC_ID.fullmatch(topic_id)):
        _bad(path, "topic_id", "a 22-character URL-safe base64 Kafka Uuid", topic_id)
    adding = _reassigning(obj, "adding_replicas", path)
    removing = _reassigning(obj, "removing_replicas", path)
    partitions: dict[int, ReplicaAssignment] = {}
    for key, replicas in _get(obj, "partitions", path, dict).items():
        where = f"partitions.{key}"
        p = _partition_key(key, path, "partitions")
        rs = _broker_ids(replicas, path, where)
        partitions[p] = ReplicaAssignment(rs, adding.get(p, ()), removing.get(p, ()))
    return TopicAssignment(topic, topic_id, partitions)


# --- /brokers/topics/T/partitions/P/state ---


def encode_partition_state(state: LeaderIsrAndControllerEpoch) -> bytes:
    """``partition_epoch`` is the znode's zkVersion and is never written."""
    lai = state.leader_and_isr
    doc: dict[str, Any] = {
        "controller_epoch": state.controller_epoch,
        "leader": lai.leader,
        "version": 1,
        "leader_epoch": lai.leader_epoch,
        "isr": list(lai.isr),
    }
    if lai.leader_recovery_state != LeaderRecoveryState.RECOVERED:
        doc["leader_recovery_state"] = int(lai.leader_recovery_state)
    return _dumps(doc)


_RECOVERY_STATES = {s.value: s for s in LeaderRecoveryState}


def decode_partition_state(
    data: bytes | None, zk_version: int, path: str | None = None
) -> LeaderIsrAndControllerEpoch:
    """The state znode; ``partition_epoch`` is set to ``zk_version`` (the znode's stat.version)."""
    path = path or _PARTITION_STATE_PATH
    obj = _load(data, path)
    get = obj.get
    version, leader, leader_epoch = get("version"), get("leader"), get("leader_epoch")
    controller_epoch, raw = get("controller_epoch"), get("leader_recovery_state")
    # Runs per partition at failover: one inlined test for the common valid case, the
    # field-by-field checks (and their messages) only when it fails.
    if not (
        version == 1
        and type(version) is type(leader) is type(leader_epoch) is type(controller_epoch) is int
        and -1 <= leader <= INT32_MAX
        and 0 <= leader_epoch <= INT32_MAX
        and 0 <= controller_epoch <= INT32_MAX
        and raw is None
    ):
        _version(obj, path, (1,))
        leader = _int(obj, "leader", path, -1)  # -1: no leader
        leader_epoch = _int(obj, "leader_epoch", path, 0)
        controller_epoch = _int(obj, "controller_epoch", path, 0)
    isr = _broker_ids(get("isr", _MISSING), path, "isr")
    recovery = LeaderRecoveryState.RECOVERED
    if raw is not None:
        if type(raw) is not int or raw not in _RECOVERY_STATES:
            _bad(path, "leader_recovery_state", "0 (RECOVERED) or 1 (RECOVERING)", raw)
        recovery = _RECOVERY_STATES[raw]
    return LeaderIsrAndControllerEpoch(
        LeaderAndIsr(leader, leader_epoch, isr, recovery, zk_version), controller_epoch
    )


# --- /admin/reassign_partitions and /admin/preferred_replica_election (legacy admin requests) ---
_REASSIGN_KEYS = frozenset({"version", "partitions"})
_REASSIGN_ENTRY_KEYS = frozenset({"topic", "partition", "replicas"})


def encode_reassignment(reassignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    entries = [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
        for tp, replicas in reassignment.items()
    ]
    return _dumps({"version": 1, "partitions": entries})


def decode_reassignment(
    data: bytes | None, path: str = paths.REASSIGN_PARTITIONS
) -> dict[TopicPartition, tuple[int, ...]]:
    """Strict, like Kafka's mapper: unknown fields, duplicates and empty replica lists raise.

    Kafka logs invalid content and treats the request as empty; this decoder raises
    MalformedZnodeError instead, and the caller applies Kafka's "treat as empty".
    """
    obj = _load(data, path)
    if not _REASSIGN_KEYS.issuperset(obj):
        raise MalformedZnodeError(path, f"unknown field(s) {sorted(set(obj) - _REASSIGN_KEYS)}")
    _version(obj, path, (1,))
    out: dict[TopicPartition, tuple[int, ...]] = {}
    for i, entry in enumerate(_get(obj, "partitions", path, list)):
        where = f"partitions[{i}]"
        tp = _topic_partition(entry, path, where)
        if not _REASSIGN_ENTRY_KEYS.issuperset(entry):
            unknown = sorted(set(entry) - _REASSIGN_ENTRY_KEYS)
            _fail(path, where, f"unknown field(s) {unknown}")
        replicas = _broker_ids(
            entry.get("replicas", _MISSING), path, f"{where}.replicas", non_empty=True
        )
        if tp in out:
            _fail(path, where, f"duplicate partition {tp}")
        out[tp] = replicas
    return out


def _partition_set(
    data: bytes | None, path: str, *, reject_duplicates: bool
) -> set[TopicPartition]:
    obj = _load(data, path)
    _version(obj, path, (1,))
    out: set[TopicPartition] = set()
    for i, entry in enumerate(_get(obj, "partitions", path, list)):
        tp = _topic_partition(entry, path, f"partitions[{i}]")
        if reject_duplicates and tp in out:
            _fail(path, f"partitions[{i}]", f"duplicate partition {tp}")
        out.add(tp)
    return out


def encode_preferred_replica_election(partitions: Iterable[TopicPartition]) -> bytes:
    return _dumps({"version": 1, "partitions": _partition_list(partitions)})


def decode_preferred_replica_election(
    data: bytes | None, path: str = paths.PREFERRED_REPLICA_ELECTION
) -> set[TopicPartition]:
    """Duplicate partitions raise (Kafka's election tool refuses such a file)."""
    return _partition_set(data, path, reject_duplicates=True)


# --- Notifications: /isr_change_notification/*, /log_dir_event_notification/* ---


def encode_isr_change_notification(partitions: Iterable[TopicPartition]) -> bytes:
    return _dumps({"version": 1, "partitions": _partition_list(partitions)})


def decode_isr_change_notification(data: bytes | None, path: str) -> set[TopicPartition]:
    # Duplicates are harmless here (the content is a set), so they are merged.
    return _partition_set(data, path, reject_duplicates=False)


def encode_log_dir_event(broker_id: int) -> bytes:
    return _dumps({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(data: bytes | None, path: str) -> int:
    """The id of the broker with a failed log dir."""
    obj = _load(data, path)
    _version(obj, path, (1,))
    broker = _int(obj, "broker", path, 0)
    _int(obj, "event", path, LOG_DIR_FAILURE_EVENT, LOG_DIR_FAILURE_EVENT)  # only LogDirFailure
    return broker


# --- /config/topics/T ---


def encode_topic_config(config: Mapping[str, str]) -> bytes:
    return _dumps({"version": 1, "config": dict(config)})


def decode_topic_config(data: bytes | None, path: str) -> dict[str, str]:
    """Topic config overrides; every value is a string in Kafka's format."""
    obj = _load(data, path)
    _version(obj, path, (1,))
    config = _get(obj, "config", path, dict)
    for key, value in config.items():
        if type(value) is not str:
            _bad(path, f"config.{key}", "a string value", value)
    return config


# --- /feature ---


@dataclass(frozen=True, slots=True)
class FeatureZNode:
    """Finalized features. ``features`` maps a name to (min, max) version levels.

    v1 stores both levels; v2 stores only the max, decoded as (max, max): since 3.3 a
    finalized feature is a single level and Kafka itself writes v1 as min = max = level.
    """

    version: int
    status: int
    features: dict[str, tuple[int, int]] = field(default_factory=dict, hash=False)

    def levels(self) -> dict[str, int]:
        return {name: hi for name, (_, hi) in self.features.items()}


def encode_feature_znode(node: FeatureZNode) -> bytes:
    if node.version == 1:
        features = {
            name: {"min_version_level": lo, "max_version_level": hi}
            for name, (lo, hi) in node.features.items()
        }
    elif node.version == 2:
        features = {name: {"max_version_level": hi} for name, (_, hi) in node.features.items()}
    else:
        raise ValueError(f"unsupported /feature version {node.version}")
    return _dumps({"version": node.version, "status": node.status, "features": features})


def decode_feature_znode(data: bytes | None, path: str = paths.FEATURE) -> FeatureZNode:
    obj = _load(data, path)
    version = _version(obj, path, (1, 2))
    status = _int(obj, "status", path, FEATURE_STATUS_DISABLED, FEATURE_STATUS_ENABLED)
    features: dict[str, tuple[int, int]] = {}
    for name, levels in _get(obj, "features", path, dict).items():
        where = f"features.{name}"
        if type(levels) is not dict:
            _bad(path, where, 'an object {"max_version_level":..}', levels)
        if version == 1:
            lo = _int(levels, "min_version_level", path, 1, INT16_MAX, f"{where}.")
            hi = _int(levels, "max_version_level", path, lo, INT16_MAX, f"{where}.")
        else:
            lo = hi = _int(levels, "max_version_level", path, 1, INT16_MAX, f"{where}.")
        features[name] = (lo, hi)
    return FeatureZNode(version, status, features)


# --- /latest_producer_id_block ---


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """The last allocated block of producer ids; ``block_end`` is inclusive."""

    broker: int
    block_start: int
    block_end: int

    @property
    def size(self) -> int:
        return self.block_end - self.block_start + 1


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    start, end = str(block.block_start), str(block.block_end)
    return _dumps({"version": 1, "broker": block.broker, "block_start": start, "block_end": end})


def decode_producer_id_block(
    data: bytes | None, path: str = paths.LATEST_PRODUCER_ID_BLOCK
) -> ProducerIdBlock | None:
    """None when the znode has no data: Kafka creates it empty, before the first allocation."""
    if not data:
        return None
    obj = _load(data, path)
    _version(obj, path, (1,))
    broker = _int(obj, "broker", path, 0)
    start = _decimal_str(obj, "block_start", path)
    end = _decimal_str(obj, "block_end", path)
    if end < start:
        _fail(path, "block_end", f"{end} is before block_start {start}")
    return ProducerIdBlock(broker, start, end)
