"""Strict JSON parsing and field validation shared by every codec module.

Every helper raises ``MalformedZnodeError(path, problem)`` with a problem naming the field, so
callers can log and skip one bad znode. The checks are cheap ``type(...) is`` tests (a JSON
boolean is not an integer) and build error text only on failure, because decoding runs for
every partition at failover.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

from controller.core.model import TopicPartition
from controller.zk import limits, paths
from controller.zk.errors import MalformedZnodeError

# ZooKeeper's jute.maxbuffer (just under 1 MiB by default) bounds any znode; anything larger
# cannot have come from the ensemble (controller.zk.limits), so it is refused before parsing.
MAX_ZNODE_BYTES = 1024 * 1024  # the bound at the default jute.maxbuffer

INT16_MAX = 2**15 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MAX = 2**63 - 1

# At most 19 digits (INT64_MAX): Python refuses to convert more than 4300 with a plain ValueError.
_DIGITS = re.compile(r"[0-9]{1,19}")
MISSING: Any = object()  # a field absent from the JSON object (distinct from null)
Obj = Mapping[str, Any]
_T = TypeVar("_T")


# A JSON escape: an escaped backslash, or a control character's \u00xx, which Python spells in
# lower case and Jackson (Kafka's writer) in upper case.
_ESCAPE = re.compile(r"\\(\\|u00[01][0-9a-f])")


def _upper_hex(match: re.Match[str]) -> str:
    escape = match.group(1)
    return "\\" + (escape if escape == "\\" else "u00" + escape[3:].upper())


def dumps(obj: object) -> bytes:
    """Compact JSON, escaped as Jackson escapes it (non-ASCII as is, controls in upper hex)."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if "\\u00" in text:
        text = _ESCAPE.sub(_upper_hex, text)
    return text.encode()


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def kind_of(value: object) -> str:
    """How a JSON value looks, for error messages."""
    if value is MISSING or value is None:
        return "nothing (field missing)" if value is MISSING else "null"
    if isinstance(value, bool | int | float | str):
        name = {bool: "boolean", str: "string"}.get(type(value), "number")
        return f"{name} {json.dumps(value)[:40]}"
    return "array" if isinstance(value, list) else "object"


def fail(path: str, where: str, problem: str) -> NoReturn:
    raise MalformedZnodeError(path, f"field {where!r}: {problem}")


def bad(path: str, where: str, expected: str, value: object) -> NoReturn:
    fail(path, where, f"expected {expected}, got {kind_of(value)}")


# One shared decoder: json.loads(..., parse_constant=...) would build a new one per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def load(data: bytes | None, path: str) -> dict[str, Any]:
    """Parse a znode payload that must be a JSON object."""
    if not data:
        raise MalformedZnodeError(path, "no data (null or empty); a JSON object is required")
    if len(data) > MAX_ZNODE_BYTES and len(data) > (limit := limits.current().read_bytes):
        raise MalformedZnodeError(
            path,
            f"payload of {len(data)} bytes exceeds the {limit}-byte znode limit "
            "(zookeeper.jute.maxbuffer)",
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
        raise MalformedZnodeError(path, f"top level: expected a JSON object, got {kind_of(obj)}")
    if "\\u" in text:
        _check_encodable(obj, path)
    return obj


def _check_encodable(obj: object, path: str) -> None:
    """JSON's ``\\ud800`` escapes decode to lone surrogates, text no UTF-8 encoder takes: a
    name holding one would fail wherever it is written or sent (kazoo's connection thread
    died encoding such a path), so the znode is refused here, where it is read. Iterative:
    the decoder accepts nesting close to the recursion limit."""
    pending = [obj]
    while pending:
        value = pending.pop()
        if type(value) is dict:
            pending.extend(value)  # the keys
            pending.extend(value.values())
        elif type(value) is list:
            pending.extend(value)
        elif type(value) is str and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as e:
                problem = f"a lone surrogate escape ({e.object[e.start : e.end]!a})"
                raise MalformedZnodeError(path, f"{problem} is not Unicode text") from None


def int_field(
    obj: Obj, key: str, path: str, lo: int = INT32_MIN, hi: int = INT32_MAX, prefix: str = ""
) -> int:
    v = obj.get(key, MISSING)
    if type(v) is int and lo <= v <= hi:  # `type is`: a JSON boolean is not an integer
        return v
    bad(path, prefix + key, f"an integer in [{lo}, {hi}]", v)


_EXPECTED: dict[type, str] = {str: "a string", dict: "a JSON object", list: "a JSON array"}


def typed_field(obj: Obj, key: str, path: str, kind: type[_T], prefix: str = "") -> _T:
    v = obj.get(key, MISSING)
    if type(v) is kind:
        return v
    bad(path, prefix + key, _EXPECTED[kind], v)


def decimal_str(obj: Obj, key: str, path: str, hi: int = INT64_MAX) -> int:
    """A non-negative number Kafka stores as a JSON string (pitfall 25)."""
    v = obj.get(key, MISSING)
    if type(v) is str and _DIGITS.fullmatch(v) and int(v) <= hi:
        return int(v)
    bad(path, key, f"a string of decimal digits up to {hi}", v)


def informational_decimal(obj: Obj, key: str) -> int:
    """A decimal string Kafka writes but never reads (a registration's ``timestamp``): its
    value when well-formed, else 0. Never refuses the znode, as Kafka does not."""
    v = obj.get(key)
    return int(v) if type(v) is str and _DIGITS.fullmatch(v) and int(v) <= INT64_MAX else 0


def version_field(obj: Obj, path: str, supported: Sequence[int]) -> int:
    v = obj.get("version", MISSING)
    if type(v) is int and v in supported:
        return v
    bad(path, "version", f"a supported version (one of {list(supported)})", v)


def broker_ids(value: object, path: str, where: str, *, non_empty: bool = False) -> tuple[int, ...]:
    """A list of distinct broker ids (replicas, ISR, adding/removing replicas)."""
    if type(value) is not list:
        bad(path, where, "an array of broker ids", value)
    for i, b in enumerate(value):
        if type(b) is not int or b < 0 or b > INT32_MAX:
            bad(path, f"{where}[{i}]", f"a broker id in [0, {INT32_MAX}]", b)
    ids = tuple(value)
    if len(set(ids)) != len(ids):
        dup = next(b for i, b in enumerate(ids) if b in ids[:i])
        fail(path, where, f"duplicate broker id {dup} in {list(ids)}")
    if non_empty and not ids:
        fail(path, where, "the replica list is empty")
    return ids


def partition_key(key: str, path: str, where: str) -> int:
    """A partition id stored as a JSON object key (canonical decimal, like Kafka writes)."""
    if key.isascii() and key.isdigit() and (key == "0" or key[0] != "0"):
        p = int(key) if len(key) <= 10 else INT32_MAX + 1
        if p <= INT32_MAX:
            return p
        problem = (
            f"partition id {key[:20]}{'...' if len(key) > 20 else ''} is larger than {INT32_MAX}"
        )
    elif key[:1] == "-" and key[1:].isascii() and key[1:].isdigit():
        problem = f"negative partition id {key}"
    else:
        problem = f"partition key {key!r} is not a non-negative decimal integer"
    fail(path, where, problem)


def topic_partition(entry: object, path: str, where: str) -> TopicPartition:
    if type(entry) is not dict:
        bad(path, where, 'an object {"topic":..,"partition":..}', entry)
    topic = typed_field(entry, "topic", path, str, f"{where}.")
    # Structural only, like the topics loaded from /brokers/topics: a topic another tool
    # created under a name Kafka's rules refuse is still managed, so requests may name it.
    if not paths.is_znode_name(topic):
        fail(path, f"{where}.topic", f"{topic!r} cannot be a topic znode name")
    return TopicPartition(topic, int_field(entry, "partition", path, 0, INT32_MAX, f"{where}."))


def partition_list(tps: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in dict.fromkeys(tps)]
