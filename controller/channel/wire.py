"""LeaderAndIsr and UpdateMetadata partition states encoded straight to protobuf's wire format.

A failover sends every partition to every broker: ~300K LeaderAndIsr and 100K UpdateMetadata
partition states at 100K partitions. Adding them one by one to protobuf messages costs ~5 us
each in Python; here each state is encoded once per request batch (a LeaderAndIsr state
goes to every replica of the partition unchanged), the request is assembled as bytes and
parsed once, in C. The wire format is protobuf's (proto3: fields in number order, packed
repeated ints, defaults omitted, negative int32 as 10-byte varints), so the parsed message
equals the one the protobuf API builds; tests compare the two on random inputs.

Field numbers are those of ``proto/controller/api/v1/broker.proto``; ``check_field_numbers``
(run by the tests) fails if the .proto changes under this module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from controller.api.v1 import broker_pb2

# (message, field) -> number, as this module encodes them.
FIELD_NUMBERS: dict[tuple[str, str], int] = {
    ("LeaderAndIsrRequest", "topic_states"): 6,
    ("UpdateMetadataRequest", "topic_states"): 6,
    ("LeaderAndIsrTopicState", "topic_name"): 1,
    ("LeaderAndIsrTopicState", "topic_id"): 2,
    ("LeaderAndIsrTopicState", "partition_states"): 3,
    ("UpdateMetadataTopicState", "topic_name"): 1,
    ("UpdateMetadataTopicState", "topic_id"): 2,
    ("UpdateMetadataTopicState", "partition_states"): 3,
    ("LeaderAndIsrPartitionState", "partition_index"): 1,
    ("LeaderAndIsrPartitionState", "controller_epoch"): 2,
    ("LeaderAndIsrPartitionState", "leader"): 3,
    ("LeaderAndIsrPartitionState", "leader_epoch"): 4,
    ("LeaderAndIsrPartitionState", "isr"): 5,
    ("LeaderAndIsrPartitionState", "partition_epoch"): 6,
    ("LeaderAndIsrPartitionState", "replicas"): 7,
    ("LeaderAndIsrPartitionState", "adding_replicas"): 8,
    ("LeaderAndIsrPartitionState", "removing_replicas"): 9,
    ("LeaderAndIsrPartitionState", "is_new"): 10,
    ("LeaderAndIsrPartitionState", "leader_recovery_state"): 11,
    ("UpdateMetadataPartitionState", "partition_index"): 1,
    ("UpdateMetadataPartitionState", "controller_epoch"): 2,
    ("UpdateMetadataPartitionState", "leader"): 3,
    ("UpdateMetadataPartitionState", "leader_epoch"): 4,
    ("UpdateMetadataPartitionState", "isr"): 5,
    ("UpdateMetadataPartitionState", "zk_version"): 6,
    ("UpdateMetadataPartitionState", "replicas"): 7,
    ("UpdateMetadataPartitionState", "offline_replicas"): 8,
}


def check_field_numbers() -> None:
    for (message, field), number in FIELD_NUMBERS.items():
        descriptor = getattr(broker_pb2, message).DESCRIPTOR.fields_by_name[field]
        if descriptor.number != number:
            raise AssertionError(f"{message}.{field} is field {descriptor.number}, not {number}")


# -- varints ---------------------------------------------------------------------------------

_SMALL = 1 << 14  # 1- and 2-byte varints, precomputed


def _encode_varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int32/int64: two's complement, 10 bytes
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_VARINTS = [_encode_varint(i) for i in range(_SMALL)]


def varint(value: int) -> bytes:
    return _VARINTS[value] if 0 <= value < _SMALL else _encode_varint(value)


def _tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


_LENGTH_TAGS = [_tag(n, 2) for n in range(16)]


def length_delimited(number: int, payload: bytes) -> bytes:
    size = len(payload)
    return _LENGTH_TAGS[number] + (_VARINTS[size] if size < _SMALL else varint(size)) + payload


class _Packed:
    """Packed repeated int32 fields, memoized per (field, tuple): replica lists and ISRs are a
    handful of distinct interned tuples."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, tuple[int, ...]], bytes] = {}

    def __call__(self, number: int, values: tuple[int, ...]) -> bytes:
        if not values:
            return b""
        key = (number, values)
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) > 1 << 16:
                self._cache.clear()
            found = self._cache[key] = length_delimited(
                number, b"".join([varint(v) for v in values])
            )
        return found


_packed = _Packed()
_V = _VARINTS


def _int_field(tag: int, value: int) -> bytes:
    """An int32 field whose tag fits one byte; b"" for 0 (proto3 omits defaults)."""
    if not value:
        return b""
    return bytes((tag,)) + (_V[value] if 0 <= value < _SMALL else _encode_varint(value))


# -- partition states --------------------------------------------------------------------------


def leader_and_isr_partition(
    partition: int,
    controller_epoch: int,
    leader: int,
    leader_epoch: int,
    isr: tuple[int, ...],
    partition_epoch: int,
    replicas: tuple[int, ...],
    adding: tuple[int, ...],
    removing: tuple[int, ...],
    is_new: bool,
    recovery_state: int,
) -> bytes:
    """A ``LeaderAndIsrPartitionState``."""
    return b"".join(
        (
            _int_field(0x08, partition),
            _int_field(0x10, controller_epoch),
            _int_field(0x18, leader),
            _int_field(0x20, leader_epoch),
            _packed(5, isr),
            _int_field(0x30, partition_epoch),
            _packed(7, replicas),
            _packed(8, adding),
            _packed(9, removing),
            b"\x50\x01" if is_new else b"",
            _int_field(0x58, recovery_state),
        )
    )


def update_metadata_partition(
    partition: int,
    controller_epoch: int,
    leader: int,
    leader_epoch: int,
    isr: tuple[int, ...],
    zk_version: int,
    replicas: tuple[int, ...],
    offline: tuple[int, ...],
) -> bytes:
    """An ``UpdateMetadataPartitionState``."""
    return b"".join(
        (
            _int_field(0x08, partition),
            _int_field(0x10, controller_epoch),
            _int_field(0x18, leader),
            _int_field(0x20, leader_epoch),
            _packed(5, isr),
            _int_field(0x30, zk_version),
            _packed(7, replicas),
            _packed(8, offline),
        )
    )


# -- requests ----------------------------------------------------------------------------------


class TopicStates:
    """Builds the ``topic_states`` (field 6 of both requests) of encoded partition states,
    grouped by topic in the order topics first appear, partitions in their order.

    One instance serves all the requests of a batch: each topic's name and id are encoded once,
    and so is a single-partition topic's whole entry (most of a failover's topics)."""

    def __init__(self, topic_id_of: Callable[[str], str | None]) -> None:
        self._topic_id_of = topic_id_of
        self._heads: dict[str, bytes] = {}
        self._singles: dict[tuple[str, int], bytes] = {}

    def _head(self, topic: str) -> bytes:
        head = self._heads.get(topic)
        if head is None:
            head = length_delimited(1, topic.encode()) if topic else b""
            topic_id = self._topic_id_of(topic)
            if topic_id:
                head += length_delimited(2, topic_id.encode())
            self._heads[topic] = head
        return head

    def encode(self, partitions: Iterable[tuple[str, bytes]]) -> bytes:
        grouped: dict[str, list[bytes]] = {}
        for topic, state in partitions:
            group = grouped.get(topic)
            if group is None:
                grouped[topic] = [state]
            else:
                group.append(state)
        out: list[bytes] = []
        singles = self._singles
        for topic, states in grouped.items():
            if len(states) == 1:
                # The states of one batch are cached by the caller, so the same bytes object
                # comes back for the same partition state: its identity is a safe key while
                # the batch (and so the object) lives.
                key = (topic, id(states[0]))
                chunk = singles.get(key)
                if chunk is None:
                    chunk = singles[key] = length_delimited(
                        6, self._head(topic) + length_delimited(3, states[0])
                    )
                out.append(chunk)
            else:
                body = b"".join([length_delimited(3, state) for state in states])
                out.append(length_delimited(6, self._head(topic) + body))
        return b"".join(out)


class EncodingCache:
    """What the LeaderAndIsr requests of one batch share: partition states already encoded
    (keyed by the caller) and the topic entries (``TopicStates``)."""

    def __init__(self, topic_id_of: Callable[[str], str | None]) -> None:
        self.states: dict[Any, bytes] = {}
        self.topics = TopicStates(topic_id_of)


def topic_states(
    partitions: Iterable[tuple[str, bytes]], topic_id_of: Callable[[str], str | None]
) -> bytes:
    """``TopicStates(topic_id_of).encode(partitions)`` for a single request."""
    return TopicStates(topic_id_of).encode(partitions)


def request(message_type: type[Any], header: Any, states: bytes) -> Any:
    """``header`` (a message of ``message_type`` without topic states) plus ``states``."""
    return message_type.FromString(header.SerializeToString() + states)


def packed_field(number: int, values: Sequence[int]) -> bytes:
    """Exposed for tests: a packed repeated int32 field."""
    return _packed(number, tuple(values))
