"""Malformed znode content: one case per problem; the error names the path and the field.
Also what Kafka reads without checking, read the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from controller.core.model import ReplicaAssignment, TopicAssignment
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError
from tests.unit.codec_samples import STATE_PATH, broker_json, state_json

# --------------------------------------------------------------------------------------------
# Malformed content: one case per problem; the error names the path and the field

Decoder = Callable[[bytes | None], Any]
TOPIC_PATH = paths.topic_path("t")
BROKER_PATH = paths.broker_path(1)


def _topic(data: bytes | None) -> Any:
    return codecs.decode_topic_assignment("t", data)


def _state(data: bytes | None) -> Any:
    return codecs.decode_partition_state(data, 0, STATE_PATH)


def _broker(data: bytes | None) -> Any:
    return codecs.decode_broker(1, data)


def _config(data: bytes | None) -> Any:
    return codecs.decode_topic_config(data, paths.topic_config_path("t"))


def _log_dir(data: bytes | None) -> Any:
    return codecs.decode_log_dir_event(data, paths.log_dir_event_path(7))


def _config_change(data: bytes | None) -> Any:
    return codecs.decode_config_change(data, "/config/changes/config_change_0000000001")


def _isr(data: bytes | None) -> Any:
    return codecs.decode_isr_change_notification(data, paths.isr_change_path(42))


MALFORMED: list[tuple[str, Decoder, bytes | None, str, str]] = [
    # (case id, decoder, data, expected path, fragment naming the field or problem)
    ("null data", _state, None, STATE_PATH, "no data"),
    ("empty data", _topic, b"", TOPIC_PATH, "no data"),
    ("invalid utf-8", _state, b'{"leader":"\xff"}', STATE_PATH, "invalid UTF-8 at byte 11"),
    ("invalid json", _topic, b'{"version":3,', TOPIC_PATH, "invalid JSON"),
    ("NaN is not json", _state, state_json()[:-1] + b',"x":NaN}', STATE_PATH, "NaN"),
    ("top-level array", _state, b"[1,2]", STATE_PATH, "top level: expected a JSON object"),
    ("top-level string", codecs.decode_controller, b'"3"', "/controller", "top level"),
    ("missing leader", _state, state_json(leader=...), STATE_PATH, "'leader'"),
    ("missing isr", _state, state_json(isr=...), STATE_PATH, "'isr'"),
    ("bool is not int", _state, state_json(leader=True), STATE_PATH, "'leader'"),
    ("bool in isr", _state, state_json(isr=[1, False]), STATE_PATH, "'isr[1]'"),
    ("float epoch", _state, state_json(leader_epoch=4.0), STATE_PATH, "'leader_epoch'"),
    ("string epoch", _state, state_json(controller_epoch="7"), STATE_PATH, "'controller_epoch'"),
    ("int32 overflow", _state, state_json(leader_epoch=2**31), STATE_PATH, "'leader_epoch'"),
    ("leader below -1", _state, state_json(leader=-2), STATE_PATH, "'leader'"),
    ("negative isr id", _state, state_json(isr=[1, -3]), STATE_PATH, "'isr[1]'"),
    ("duplicate isr id", _state, state_json(isr=[1, 3, 1]), STATE_PATH, "duplicate broker id 1"),
    ("isr not a list", _state, state_json(isr="1,2"), STATE_PATH, "'isr'"),
    (
        "bad recovery state",
        _state,
        state_json(leader_recovery_state=2),
        STATE_PATH,
        "'leader_recovery_state'",
    ),
    (
        "oversized payload",
        _topic,
        b'{"version":3,"partitions":{},"x":"' + b"a" * codecs.MAX_ZNODE_BYTES + b'"}',
        TOPIC_PATH,
        "byte znode limit (zookeeper.jute.maxbuffer)",
    ),
    # /brokers/topics/T
    ("topic partitions null", _topic, b'{"version":3,"partitions":null}', TOPIC_PATH,
     "'partitions'"),
    (
        "negative partition",
        _topic,
        b'{"version":3,"partitions":{"-1":[1]}}',
        TOPIC_PATH,
        "negative partition id -1",
    ),
    (
        "non-integer partition key",
        _topic,
        b'{"version":3,"partitions":{"p0":[1]}}',
        TOPIC_PATH,
        "partition key 'p0'",
    ),
    (
        "non-canonical partition key",
        _topic,
        b'{"version":3,"partitions":{"01":[1]}}',
        TOPIC_PATH,
        "partition key '01'",
    ),
    (
        "duplicate replica",
        _topic,
        b'{"version":3,"partitions":{"0":[1,2,1]}}',
        TOPIC_PATH,
        "'partitions.0'",
    ),
    (
        "negative replica",
        _topic,
        b'{"version":3,"partitions":{"0":[1,-2]}}',
        TOPIC_PATH,
        "'partitions.0[1]'",
    ),
    (
        "replicas not a list",
        _topic,
        b'{"version":3,"partitions":{"0":{"1":2}}}',
        TOPIC_PATH,
        "'partitions.0'",
    ),
    (
        "bad topic id",
        _topic,
        b'{"version":3,"topic_id":"short","partitions":{}}',
        TOPIC_PATH,
        "'topic_id'",
    ),
    (
        "adding not an object",
        _topic,
        b'{"version":3,"partitions":{},"adding_replicas":[]}',
        TOPIC_PATH,
        "'adding_replicas'",
    ),
    # /brokers/ids/N
    ("broker v0", _broker, broker_json(version=0), BROKER_PATH, "'version'"),
    ("broker version a string", _broker, broker_json(version="5"), BROKER_PATH, "'version'"),
    ("broker no jmx_port", _broker, broker_json(jmx_port=...), BROKER_PATH, "'jmx_port'"),
    ("broker no endpoints", _broker, broker_json(endpoints=...), BROKER_PATH, "'endpoints'"),
    (
        "broker bad endpoint",
        _broker,
        broker_json(endpoints=["PLAINTEXT:h1:9092"]),
        BROKER_PATH,
        "'endpoints[0]'",
    ),
    (
        "broker bad port",
        _broker,
        broker_json(endpoints=["PLAINTEXT://h1:99999"]),
        BROKER_PATH,
        "'endpoints[0]'",
    ),
    (
        "listener missing from map",
        _broker,
        broker_json(endpoints=["PLAINTEXT://h1:9092", "OTHER://h1:1"]),
        BROKER_PATH,
        "listener 'OTHER'",
    ),
    (
        "unknown protocol in map",
        _broker,
        broker_json(listener_security_protocol_map={"PLAINTEXT": "TLS"}),
        BROKER_PATH,
        "'listener_security_protocol_map.PLAINTEXT'",
    ),
    (
        "duplicate listener",
        _broker,
        broker_json(endpoints=["PLAINTEXT://h1:9092", "PLAINTEXT://h2:9092"]),
        BROKER_PATH,
        "duplicate listener",
    ),
    ("rack not a string", _broker, broker_json(rack=5), BROKER_PATH, "'rack'"),
    (
        "feature max below min",
        _broker,
        broker_json(features={"f": {"min_version": 3, "max_version": 1}}),
        BROKER_PATH,
        "'features.f.max_version'",
    ),
    (
        "v1 without host",
        _broker,
        b'{"version":1,"port":9092,"jmx_port":-1,"timestamp":"1"}',
        BROKER_PATH,
        "'host'",
    ),
    # /controller, /controller_epoch
    (
        "controller negative id",
        codecs.decode_controller,
        b'{"version":1,"brokerid":-1,"timestamp":"1"}',
        "/controller",
        "'brokerid'",
    ),
    (
        "controller missing brokerid",
        codecs.decode_controller,
        b'{"version":1,"timestamp":"1"}',
        "/controller",
        "'brokerid'",
    ),
    (
        "controller kraft epoch a string",
        codecs.decode_controller,
        b'{"version":2,"brokerid":1,"timestamp":"1","kraftControllerEpoch":"7"}',
        "/controller",
        "'kraftControllerEpoch'",
    ),
    ("epoch empty", codecs.decode_controller_epoch, b"", "/controller_epoch", "'epoch'"),
    ("epoch json", codecs.decode_controller_epoch, b'"5"', "/controller_epoch", "'epoch'"),
    ("epoch negative", codecs.decode_controller_epoch, b"-1", "/controller_epoch", "'epoch'"),
    ("epoch newline", codecs.decode_controller_epoch, b"5\n", "/controller_epoch", "'epoch'"),
    ("epoch int32", codecs.decode_controller_epoch, b"2147483648", "/controller_epoch", "'epoch'"),
    (
        "epoch unicode digit",
        codecs.decode_controller_epoch,
        "\uff15".encode(),  # FULLWIDTH DIGIT FIVE: a Unicode digit, not an ASCII one
        "/controller_epoch",
        "'epoch'",
    ),
    # /admin/reassign_partitions (strict)
    (
        "reassign empty replicas",
        codecs.decode_reassignment,
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}',
        paths.REASSIGN_PARTITIONS,
        "'partitions[0].replicas': the replica list is empty",
    ),
    (
        "reassign unknown top-level field",
        codecs.decode_reassignment,
        b'{"version":1,"partitions":[],"comment":"x"}',
        paths.REASSIGN_PARTITIONS,
        "unknown field(s) ['comment']",
    ),
    (
        "reassign unknown entry field",
        codecs.decode_reassignment,
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":[]}]}',
        paths.REASSIGN_PARTITIONS,
        "'partitions[0]': unknown field(s) ['log_dirs']",
    ),
    (
        "reassign duplicate partition",
        codecs.decode_reassignment,
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},'
        b'{"topic":"t","partition":0,"replicas":[2]}]}',
        paths.REASSIGN_PARTITIONS,
        "'partitions[1]': duplicate partition t-0",
    ),
    (
        "reassign duplicate replica",
        codecs.decode_reassignment,
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}',
        paths.REASSIGN_PARTITIONS,
        "'partitions[0].replicas'",
    ),
    (
        "reassign negative partition",
        codecs.decode_reassignment,
        b'{"version":1,"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}',
        paths.REASSIGN_PARTITIONS,
        "'partitions[0].partition'",
    ),
    (
        "reassign version no integer",
        codecs.decode_reassignment,
        b'{"version":"v1","partitions":[]}',
        paths.REASSIGN_PARTITIONS,
        "'version'",
    ),
    # A JSON escape of a lone surrogate is no Unicode text: refused where it is read.
    (
        "config change lone surrogate",
        _config_change,
        b'{"version":2,"entity_path":"topics/a\\ud800"}',
        "/config/changes/config_change_0000000001",
        "lone surrogate",
    ),
    (
        "feature name lone surrogate",
        codecs.decode_feature_znode,
        b'{"version":1,"status":1,"features":{"f\\uDC00":'
        b'{"min_version_level":1,"max_version_level":1}}}',
        paths.FEATURE,
        "lone surrogate",
    ),
    # /admin/preferred_replica_election
    (
        "preferred topic not a string",
        codecs.decode_preferred_replica_election,
        b'{"version":1,"partitions":[{"topic":7,"partition":0}]}',
        paths.PREFERRED_REPLICA_ELECTION,
        "'partitions[0].topic'",
    ),
    (
        "preferred entry not an object",
        codecs.decode_preferred_replica_election,
        b'{"version":1,"partitions":["t-0"]}',
        paths.PREFERRED_REPLICA_ELECTION,
        "'partitions[0]'",
    ),
    # notifications
    (
        "isr change missing partitions",
        _isr,
        b'{"version":1}',
        paths.isr_change_path(42),
        "'partitions'",
    ),
    (
        "isr change partition as string",
        _isr,
        b'{"version":1,"partitions":[{"topic":"t","partition":"0"}]}',
        paths.isr_change_path(42),
        "'partitions[0].partition'",
    ),
    (
        "log dir negative broker",
        _log_dir,
        b'{"version":1,"broker":-3,"event":1}',
        paths.log_dir_event_path(7),
        "'broker'",
    ),
    # /config/topics/T
    (
        "config non-string value",
        _config,
        b'{"version":1,"config":{"retention.ms":1000}}',
        paths.topic_config_path("t"),
        "'config.retention.ms'",
    ),
    (
        "config bool value",
        _config,
        b'{"version":1,"config":{"unclean.leader.election.enable":true}}',
        paths.topic_config_path("t"),
        "'config.unclean.leader.election.enable'",
    ),
    ("config missing", _config, b'{"version":1}', paths.topic_config_path("t"), "'config'"),
    # /feature
    (
        "feature bad status",
        codecs.decode_feature_znode,
        b'{"version":2,"status":2,"features":{}}',
        paths.FEATURE,
        "'status'",
    ),
    (
        "feature v1 without min",
        codecs.decode_feature_znode,
        b'{"version":1,"status":1,"features":{"f":{"max_version_level":1}}}',
        paths.FEATURE,
        "'features.f.min_version_level'",
    ),
    (
        "feature level zero",
        codecs.decode_feature_znode,
        b'{"version":2,"status":1,"features":{"f":{"max_version_level":0}}}',
        paths.FEATURE,
        "'features.f.max_version_level'",
    ),
    (
        "feature missing features",
        codecs.decode_feature_znode,
        b'{"version":2,"status":1}',
        paths.FEATURE,
        "'features'",
    ),
    # /latest_producer_id_block
    (
        "pid numeric start",
        codecs.decode_producer_id_block,
        b'{"version":1,"broker":2,"block_start":5000,"block_end":"5999"}',
        paths.LATEST_PRODUCER_ID_BLOCK,
        "'block_start'",
    ),
    (
        "pid end before start",
        codecs.decode_producer_id_block,
        b'{"version":1,"broker":2,"block_start":"5000","block_end":"4999"}',
        paths.LATEST_PRODUCER_ID_BLOCK,
        "'block_end'",
    ),
    (
        "pid beyond int64",
        codecs.decode_producer_id_block,
        b'{"version":1,"broker":2,"block_start":"0","block_end":"9223372036854775808"}',
        paths.LATEST_PRODUCER_ID_BLOCK,
        "'block_end'",
    ),
]


@pytest.mark.parametrize(
    ("decoder", "data", "path", "fragment"),
    [case[1:] for case in MALFORMED],
    ids=[case[0] for case in MALFORMED],
)
def test_malformed_content_names_path_and_field(
    decoder: Decoder, data: bytes | None, path: str, fragment: str
) -> None:
    with pytest.raises(MalformedZnodeError) as info:
        decoder(data)
    assert info.value.path == path
    assert path in str(info.value)
    assert fragment in info.value.problem


def test_malformed_error_is_a_value_error() -> None:
    # Callers that catch ValueError (e.g. around parse_sequence_number) also catch these.
    with pytest.raises(ValueError):
        codecs.decode_controller(b"{")


def test_error_message_describes_the_offending_value() -> None:
    with pytest.raises(MalformedZnodeError) as info:
        _state(state_json(leader=True))
    assert "got boolean true" in info.value.problem
    with pytest.raises(MalformedZnodeError) as info:
        _state(state_json(leader=...))
    assert "field missing" in info.value.problem


def test_payload_exactly_at_the_limit_is_parsed() -> None:
    head = b'{"version":1,"config":{"k":"'
    filler = b"a" * (codecs.MAX_ZNODE_BYTES - len(head) - 3)
    data = head + filler + b'"}}'
    assert len(data) == codecs.MAX_ZNODE_BYTES
    assert len(_config(data)["k"]) == len(filler)


def test_default_paths_are_used_when_none_given() -> None:
    with pytest.raises(MalformedZnodeError) as info:
        codecs.decode_broker(7, b"{}")
    assert info.value.path == "/brokers/ids/7"
    with pytest.raises(MalformedZnodeError) as info:
        codecs.decode_topic_assignment("orders", b"[]")
    assert info.value.path == "/brokers/topics/orders"


@pytest.mark.parametrize(
    ("data", "partitions"),
    [
        (b'{"partitions":{"0":[1,2]}}', {0: ReplicaAssignment((1, 2))}),
        (b'{"version":4,"partitions":{"0":[1]}}', {0: ReplicaAssignment((1,))}),
        (b'{"version":"3","partitions":{"0":[1]}}', {0: ReplicaAssignment((1,))}),
        (b'{"version":3}', {}),
        (b"{}", {}),
    ],
)
def test_a_topic_znode_is_read_as_kafka_reads_it(
    data: bytes, partitions: dict[int, ReplicaAssignment]
) -> None:
    # TopicZNode.decode never reads the version; no partitions is an empty assignment.
    assert codecs.decode_topic_assignment("t", data) == TopicAssignment("t", None, partitions)
