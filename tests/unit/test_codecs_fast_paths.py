"""The decoders' fast paths (canonical bytes without a JSON decoder) agree with the full
decoders, and near-canonical invalid bytes are still refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicAssignment,
)
from controller.zk import codecs
from controller.zk.errors import MalformedZnodeError

# Partition states: the fast paths (canonical bytes, no JSON decoder) agree with json exactly.

_small_ids = st.lists(st.integers(0, 2**31 - 1), unique=True, max_size=6)


@given(
    st.integers(0, 2**31 - 1),
    st.integers(-1, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    _small_ids,
    st.integers(0, 1000),
)
def test_partition_state_fast_paths_agree_with_json(
    controller_epoch: int, leader: int, leader_epoch: int, isr: list[int], version: int
) -> None:
    state = LeaderIsrAndControllerEpoch(
        LeaderAndIsr(leader, leader_epoch, tuple(isr), LeaderRecoveryState.RECOVERED, version),
        controller_epoch,
    )
    doc = {
        "controller_epoch": controller_epoch,
        "leader": leader,
        "version": 1,
        "leader_epoch": leader_epoch,
        "isr": isr,
    }
    encoded = codecs.encode_partition_state(state)
    assert encoded == json.dumps(doc, separators=(",", ":")).encode()
    assert codecs.decode_partition_state(encoded, version) == state
    # The same document spaced out goes the full (json) path: same result.
    spaced = json.dumps(doc, indent=1).encode()
    assert codecs.decode_partition_state(spaced, version) == state


@pytest.mark.parametrize(
    "data",
    [
        b'{"controller_epoch":01,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}',
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,1]}',
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":2147483648,"isr":[1]}',
        b'{"controller_epoch":1,"leader":-2,"version":1,"leader_epoch":0,"isr":[1]}',
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[9999999999]}',
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,]}',
        b'{"controller_epoch":1,"leader":true,"version":1,"leader_epoch":0,"isr":[1]}',
    ],
)
def test_partition_state_near_canonical_but_invalid_is_malformed(data: bytes) -> None:
    with pytest.raises(MalformedZnodeError):
        codecs.decode_partition_state(data, 0)


# Topic znodes: the fast path (the controller's own format) agrees with the full decoder.

_replica_lists = st.lists(st.integers(0, 2**31 - 1), unique=True, max_size=5).map(tuple)


@given(
    st.dictionaries(st.integers(0, 2**31 - 1), _replica_lists, max_size=6),
    st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", fullmatch=True)),
)
def test_topic_fast_path_agrees_with_json(partitions: dict[int, tuple[int, ...]], tid: Any) -> None:
    assignment = TopicAssignment(
        "t", tid, {p: ReplicaAssignment(r) for p, r in partitions.items()}
    )
    encoded = codecs.encode_topic_assignment(assignment)
    assert codecs.topics._CANONICAL_TOPIC.fullmatch(encoded)  # our bytes take the fast path
    assert codecs.decode_topic_assignment("t", encoded) == assignment
    spaced = json.dumps(json.loads(encoded), indent=1).encode()  # the full decoder's path
    assert codecs.decode_topic_assignment("t", spaced) == assignment


def _kafka_topic(partitions: bytes, topic_id: bytes = b"") -> bytes:
    """A topic znode in Kafka's key order (the decoder's fast path), with no reassignment."""
    return (
        b'{"partitions":{' + partitions + b"}," + topic_id
        + b'"adding_replicas":{},"removing_replicas":{},"version":3}'
    )


@pytest.mark.parametrize(
    "data",
    [
        _kafka_topic(b'"0":[1,1]'),
        _kafka_topic(b'"01":[1]'),
        _kafka_topic(b'"0":[9999999999]'),
        _kafka_topic(b'"2147483648":[1]'),
        _kafka_topic(b"", b'"topic_id":"short",'),
    ],
)
def test_topic_near_canonical_but_invalid_is_malformed(data: bytes) -> None:
    with pytest.raises(MalformedZnodeError):
        codecs.decode_topic_assignment("t", data)


def test_topic_fast_path_repeated_partition_key_as_json() -> None:
    data = _kafka_topic(b'"0":[1],"0":[2]')
    assert codecs.decode_topic_assignment("t", data).partitions == {0: ReplicaAssignment((2,))}


def test_topic_fast_path_reads_kafkas_bytes() -> None:
    # Kafka 3.6's TopicZNode.encode for a topic with an id (tests/unit/kafka_json).
    data = _kafka_topic(b'"0":[1,2,3],"1":[2,3,1]', b'"topic_id":"bK5QnZ9dT7mW1xY3zA2cEg",')
    assert codecs.topics._CANONICAL_TOPIC.fullmatch(data)
    assignment = codecs.decode_topic_assignment("t", data)
    assert assignment.topic_id == "bK5QnZ9dT7mW1xY3zA2cEg"
    assert assignment.partitions == {
        0: ReplicaAssignment((1, 2, 3)),
        1: ReplicaAssignment((2, 3, 1)),
    }
