"""Kafka's znode formats (reference §1.4): exact bytes, round trips, old versions, strictness."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError

# The reference's examples, verbatim (§1.4).
REF_CONTROLLER_V1 = b'{"version":1,"brokerid":3,"timestamp":"1700000000000"}'
REF_CONTROLLER_V2 = (
    b'{"version":2,"brokerid":3,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
)
REF_BROKER = b"""{"version":5,"host":"h1","port":9092,"jmx_port":-1,"timestamp":"1700000000000",
 "endpoints":["PLAINTEXT://h1:9092","CONTROLLER://h1:9093"],
 "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","CONTROLLER":"PLAINTEXT"},
 "rack":"rack-a",
 "features":{"some.feature":{"min_version":1,"max_version":3}}}"""
REF_TOPIC = b"""{"version":3,
 "topic_id":"pL9sH1X2QfGkT4a1b2c3dA",
 "partitions":{"0":[1,2,3],"1":[2,3,1]},
 "adding_replicas":{"0":[4]},
 "removing_replicas":{"0":[1]}}"""
REF_STATE = b'{"controller_epoch":7,"leader":1,"version":1,"leader_epoch":4,"isr":[1,3,2]}'
REF_REASSIGN = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6]}]}'
REF_PREFERRED = b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
REF_ISR_CHANGE = (
    b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}'
)
REF_LOG_DIR = b'{"version":1,"broker":3,"event":1}'
REF_TOPIC_CONFIG = b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}'
REF_FEATURE = b'{"version":2,"status":1,"features":{"feature.x":{"max_version_level":3}}}'
REF_PID_BLOCK = b'{"version":1,"broker":2,"block_start":"5000","block_end":"5999"}'

TOPIC_ID = "pL9sH1X2QfGkT4a1b2c3dA"
STATE_PATH = paths.partition_state_path("t", 0)


def assert_same_json(encoded: bytes, expected: bytes) -> None:
    """Same document, and written with Jackson's compact separators."""
    assert json.loads(encoded) == json.loads(expected)
    assert encoded == json.dumps(json.loads(encoded), separators=(",", ":")).encode()


def ref_broker_registration() -> codecs.BrokerRegistration:
    return codecs.BrokerRegistration(
        broker_id=1,
        endpoints=(
            EndPoint("PLAINTEXT", "h1", 9092, "PLAINTEXT"),
            EndPoint("CONTROLLER", "h1", 9093, "PLAINTEXT"),
        ),
        rack="rack-a",
        jmx_port=-1,
        timestamp_ms=1700000000000,
        features={"some.feature": (1, 3)},
    )


# --------------------------------------------------------------------------------------------
# Exact output against the reference's examples


class TestEncodeMatchesReference:
    def test_controller(self) -> None:
        assert codecs.encode_controller(3, 1700000000000) == REF_CONTROLLER_V1
        assert codecs.encode_controller(3, 1700000000000, version=2) == REF_CONTROLLER_V2

    def test_controller_epoch_is_a_bare_decimal(self) -> None:
        assert codecs.encode_controller_epoch(5) == b"5"
        assert codecs.encode_controller_epoch(0) == b"0"

    # The reference lays its examples out by hand; the key order Kafka writes (and so do we)
    # is pinned byte for byte against Kafka's own output in test_kafka_json_bytes.py.
    def test_broker(self) -> None:
        encoded = codecs.encode_broker_registration(ref_broker_registration())
        assert_same_json(encoded, REF_BROKER)

    def test_topic(self) -> None:
        assignment = TopicAssignment(
            "t",
            TOPIC_ID,
            {0: ReplicaAssignment((1, 2, 3), (4,), (1,)), 1: ReplicaAssignment((2, 3, 1))},
        )
        assert_same_json(codecs.encode_topic_assignment(assignment), REF_TOPIC)

    def test_partition_state(self) -> None:
        state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 4, (1, 3, 2), partition_epoch=9), 7)
        assert codecs.encode_partition_state(state) == REF_STATE

    def test_reassignment(self) -> None:
        encoded = codecs.encode_reassignment({TopicPartition("t", 0): [4, 5, 6]})
        assert encoded == REF_REASSIGN

    def test_preferred_replica_election(self) -> None:
        encoded = codecs.encode_preferred_replica_election([TopicPartition("t", 0)])
        assert encoded == REF_PREFERRED

    def test_isr_change(self) -> None:
        tps = [TopicPartition("t", 0), TopicPartition("u", 3)]
        assert codecs.encode_isr_change_notification(tps) == REF_ISR_CHANGE

    def test_log_dir_event(self) -> None:
        assert codecs.encode_log_dir_event(3) == REF_LOG_DIR

    def test_topic_config(self) -> None:
        encoded = codecs.encode_topic_config({"unclean.leader.election.enable": "true"})
        assert encoded == REF_TOPIC_CONFIG

    def test_feature(self) -> None:
        node = codecs.FeatureZNode(2, codecs.FEATURE_STATUS_ENABLED, {"feature.x": (3, 3)})
        assert_same_json(codecs.encode_feature_znode(node), REF_FEATURE)

    def test_producer_id_block(self) -> None:
        encoded = codecs.encode_producer_id_block(codecs.ProducerIdBlock(2, 5000, 5999))
        assert encoded == REF_PID_BLOCK


class TestEncodeDetails:
    def test_state_writes_recovery_state_only_when_recovering(self) -> None:
        recovering = LeaderAndIsr(1, 4, (1,), LeaderRecoveryState.RECOVERING)
        doc = json.loads(codecs.encode_partition_state(LeaderIsrAndControllerEpoch(recovering, 7)))
        assert doc["leader_recovery_state"] == 1
        recovered = LeaderAndIsr(1, 4, (1,), LeaderRecoveryState.RECOVERED)
        doc = json.loads(codecs.encode_partition_state(LeaderIsrAndControllerEpoch(recovered, 7)))
        assert "leader_recovery_state" not in doc

    def test_state_never_writes_the_partition_epoch(self) -> None:
        state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 4, (1,), partition_epoch=55), 7)
        assert b"55" not in codecs.encode_partition_state(state)

    def test_topic_without_id_or_reassignment(self) -> None:
        encoded = codecs.encode_topic_assignment(
            TopicAssignment("t", None, {1: ReplicaAssignment((2,)), 0: ReplicaAssignment((1,))})
        )
        # No topic_id; empty adding/removing written as {}; string keys; Kafka's key order.
        assert encoded == (
            b'{"partitions":{"0":[1],"1":[2]},"adding_replicas":{},"removing_replicas":{},'
            b'"version":3}'
        )

    def test_topic_partitions_in_kafkas_hash_order(self) -> None:
        # Kafka's partitions map is a hash table: with 12 entries "11" hashes first.
        parts = {p: ReplicaAssignment((0,)) for p in reversed(range(12))}
        doc = json.loads(codecs.encode_topic_assignment(TopicAssignment("t", None, parts)))
        assert list(doc["partitions"]) == ["11", *map(str, range(11))]

    def test_broker_without_plaintext_has_null_host_and_port_minus_one(self) -> None:
        reg = codecs.BrokerRegistration(1, (EndPoint("SSL", "h", 9093, "SSL"),), None)
        doc = json.loads(codecs.encode_broker_registration(reg))
        assert doc["host"] is None and doc["port"] == -1
        assert "rack" not in doc
        assert doc["features"] == {}

    def test_broker_top_level_host_is_the_first_plaintext_endpoint(self) -> None:
        reg = codecs.BrokerRegistration(
            1,
            (
                EndPoint("SSL", "s", 1, "SSL"),
                EndPoint("INTERNAL", "i", 2, "PLAINTEXT"),
                EndPoint("PLAINTEXT", "p", 3, "PLAINTEXT"),
            ),
        )
        doc = json.loads(codecs.encode_broker_registration(reg))
        assert (doc["host"], doc["port"]) == ("i", 2)

    @pytest.mark.parametrize("host", ["bad host", "h/1", "[::1]", "héte", "a:b]x"])
    def test_broker_endpoint_hosts_the_decoder_would_refuse_are_not_encoded(
        self, host: str
    ) -> None:
        # Such a registration would be written, then ignored by every controller as malformed.
        reg = codecs.BrokerRegistration(1, (EndPoint("PLAINTEXT", host, 9092),))
        with pytest.raises(ValueError, match="is not a valid endpoint host"):
            codecs.encode_broker_registration(reg)

    def test_broker_ipv6_endpoint_is_bracketed(self) -> None:
        reg = codecs.BrokerRegistration(1, (EndPoint("PLAINTEXT", "::1", 9092),))
        doc = json.loads(codecs.encode_broker_registration(reg))
        assert doc["endpoints"] == ["PLAINTEXT://[::1]:9092"]
        assert codecs.decode_broker(1, codecs.encode_broker_registration(reg)).endpoints[
            0
        ].host == ("::1")

    @pytest.mark.parametrize(
        ("version", "keys"),
        [
            (2, {"version", "host", "port", "jmx_port", "timestamp", "endpoints"}),
            (3, {"version", "host", "port", "jmx_port", "timestamp", "endpoints", "rack"}),
            (
                4,
                {"version", "host", "port", "jmx_port", "timestamp", "endpoints", "rack"}
                | {"listener_security_protocol_map"},
            ),
        ],
    )
    def test_broker_fields_by_version(self, version: int, keys: set[str]) -> None:
        reg = codecs.BrokerRegistration(
            1, (EndPoint("PLAINTEXT", "h", 9092),), "r", version=version
        )
        assert set(json.loads(codecs.encode_broker_registration(reg))) == keys

    def test_non_ascii_is_raw_utf8_like_jackson(self) -> None:
        encoded = codecs.encode_topic_config({"k": "é"})
        assert "é".encode() in encoded and b"\\u" not in encoded

    def test_feature_v1_writes_min_and_max(self) -> None:
        node = codecs.FeatureZNode(1, 1, {"f": (2, 2)})
        assert json.loads(codecs.encode_feature_znode(node))["features"] == {
            "f": {"min_version_level": 2, "max_version_level": 2}
        }

    def test_preferred_election_encoding_drops_duplicates(self) -> None:
        tp = TopicPartition("t", 0)
        data = codecs.encode_preferred_replica_election([tp, tp])
        assert codecs.decode_preferred_replica_election(data) == {tp}

    def test_preferred_election_keeps_entries_that_name_no_partition_of_any_cluster(
        self,
    ) -> None:
        # Kafka's decoder takes any string and int; the controller skips them as unknown
        # and elects the rest (refusing the whole znode elected nothing).
        data = (
            b'{"version":1,"partitions":[{"topic":"a/b","partition":0},'
            b'{"topic":"t","partition":-1},{"topic":"t","partition":0}]}'
        )
        assert codecs.decode_preferred_replica_election(data) == {
            TopicPartition("a/b", 0), TopicPartition("t", -1), TopicPartition("t", 0)
        }  # fmt: skip

    def test_deep_nesting_with_an_escape_is_malformed_or_read_never_a_recursion_error(
        self,
    ) -> None:
        # The surrogate check ran json.dumps, a few frames deeper than the decoder: nesting
        # just below the decoder's limit raised RecursionError, which failed the failover.
        inner = '{"version":2,"entity_path":"topics/t","x":"\\u00e9"}'
        for depth in range(850, 1000):
            data = ('{"a":' * depth + inner + "}" * depth).encode()
            with contextlib.suppress(MalformedZnodeError):
                codecs.decode_config_change(data, "/p")

    def test_an_escaped_surrogate_pair_is_text(self) -> None:
        # A pair (an emoji) is one character, unlike the lone surrogates in MALFORMED below.
        data = b'{"version":2,"entity_path":"topics/a\\ud83d\\ude00"}'
        assert codecs.decode_config_change(data, "/p") == ("topics", "a\U0001f600")

    @pytest.mark.parametrize(
        "data",
        [
            b'{"partitions":[{"topic":"t","partition":0}]}',  # the old tool's file, by hand
            b'{"version":1,"partitions":[{"topic":"t","partition":0},'
            b'{"topic":"t","partition":0}]}',
            b'{"version":2,"partitions":[{"topic":"t","partition":0}]}',
        ],
        ids=["no-version", "duplicates", "other-version"],
    )
    def test_preferred_election_reads_only_the_partitions_as_kafka_does(self, data: bytes) -> None:
        # PreferredReplicaElectionZNode.decode reads "partitions" into a set, nothing else.
        assert codecs.decode_preferred_replica_election(data) == {TopicPartition("t", 0)}


# --------------------------------------------------------------------------------------------
# Decoding the reference's examples verbatim, and older versions


class TestDecodeReference:
    def test_controller(self) -> None:
        assert codecs.decode_controller(REF_CONTROLLER_V1) == 3
        full = codecs.decode_controller_full(REF_CONTROLLER_V2)
        assert full == codecs.ControllerRegistration(2, 3, 1700000000000, -1)

    def test_controller_v2_written_by_a_kraft_controller_still_decodes(self) -> None:
        data = b'{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":12}'
        assert codecs.decode_controller(data) == 3000
        assert codecs.decode_controller_full(data).kraft_controller_epoch == 12

    def test_controller_epoch(self) -> None:
        assert codecs.decode_controller_epoch(b"5") == 5
        assert codecs.decode_controller_epoch(b"2147483647") == 2**31 - 1

    def test_broker(self) -> None:
        reg = codecs.decode_broker_registration(1, REF_BROKER)
        assert reg == ref_broker_registration()
        assert codecs.decode_broker(1, REF_BROKER) == Broker(
            1, reg.endpoints, "rack-a", {"some.feature": (1, 3)}
        )

    def test_topic(self) -> None:
        assert codecs.decode_topic_assignment("t", REF_TOPIC) == TopicAssignment(
            "t",
            TOPIC_ID,
            {0: ReplicaAssignment((1, 2, 3), (4,), (1,)), 1: ReplicaAssignment((2, 3, 1))},
        )

    def test_partition_state_takes_the_epoch_from_the_zk_version(self) -> None:
        state = codecs.decode_partition_state(REF_STATE, 9, STATE_PATH)
        assert state == LeaderIsrAndControllerEpoch(
            LeaderAndIsr(1, 4, (1, 3, 2), LeaderRecoveryState.RECOVERED, 9), 7
        )

    def test_partition_state_recovering_and_no_leader(self) -> None:
        data = b'{"controller_epoch":7,"leader":-1,"version":1,"leader_epoch":4,"isr":[1],'
        data += b'"leader_recovery_state":1}'
        lai = codecs.decode_partition_state(data, 0, STATE_PATH).leader_and_isr
        assert (lai.leader, lai.leader_recovery_state) == (-1, LeaderRecoveryState.RECOVERING)

    def test_admin_and_notifications(self) -> None:
        assert codecs.decode_reassignment(REF_REASSIGN) == {TopicPartition("t", 0): (4, 5, 6)}
        assert codecs.decode_preferred_replica_election(REF_PREFERRED) == {TopicPartition("t", 0)}
        assert codecs.decode_isr_change_notification(REF_ISR_CHANGE, paths.isr_change_path(42)) == {
            TopicPartition("t", 0),
            TopicPartition("u", 3),
        }
        assert codecs.decode_log_dir_event(REF_LOG_DIR, paths.log_dir_event_path(7)) == 3

    def test_topic_config(self) -> None:
        path = paths.topic_config_path("t")
        config = codecs.decode_topic_config(REF_TOPIC_CONFIG, path)
        assert config == {"unclean.leader.election.enable": "true"}

    def test_feature(self) -> None:
        node = codecs.decode_feature_znode(REF_FEATURE)
        assert node == codecs.FeatureZNode(2, 1, {"feature.x": (3, 3)})
        assert node.levels() == {"feature.x": 3}
        v1 = b'{"version":1,"status":0,"features":{"f":'
        v1 += b'{"min_version_level":1,"max_version_level":2}}}'
        assert codecs.decode_feature_znode(v1) == codecs.FeatureZNode(1, 0, {"f": (1, 2)})
        assert codecs.decode_feature_znode(b'{"version":2,"status":1,"features":{}}').features == {}

    def test_producer_id_block(self) -> None:
        block = codecs.decode_producer_id_block(REF_PID_BLOCK)
        assert block == codecs.ProducerIdBlock(2, 5000, 5999)
        assert block is not None and block.size == codecs.PRODUCER_ID_BLOCK_SIZE

    @pytest.mark.parametrize("empty", [None, b""])
    def test_producer_id_block_absent_before_first_allocation(self, empty: bytes | None) -> None:
        # Kafka creates the znode empty at startup (PersistentZkPaths): no block allocated yet.
        assert codecs.decode_producer_id_block(empty) is None


class TestDecodeOlderVersions:
    def test_topic_v1_has_only_partitions(self) -> None:
        data = b'{"version":1,"partitions":{"0":[1,2],"1":[2,1]}}'
        got = codecs.decode_topic_assignment("t", data)
        assert got == TopicAssignment(
            "t", None, {0: ReplicaAssignment((1, 2)), 1: ReplicaAssignment((2, 1))}
        )

    def test_topic_v2_has_no_topic_id(self) -> None:
        data = (
            b'{"version":2,"partitions":{"0":[4,1,2]},'
            b'"adding_replicas":{"0":[4]},"removing_replicas":{"0":[2]}}'
        )
        got = codecs.decode_topic_assignment("t", data)
        assert got.topic_id is None
        assert got.partitions[0] == ReplicaAssignment((4, 1, 2), (4,), (2,))

    def test_broker_v1_is_one_plaintext_endpoint(self) -> None:
        data = (
            b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
        )
        reg = codecs.decode_broker_registration(0, data)
        assert reg.endpoints == (EndPoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT"),)
        assert (reg.jmx_port, reg.timestamp_ms, reg.rack) == (9999, 2233345666, None)

    def test_broker_v2_takes_the_protocol_from_the_listener_name(self) -> None:
        data = (
            b'{"version":2,"host":"localhost","port":9092,"jmx_port":9999,'
            b'"timestamp":"2233345666","endpoints":["PLAINTEXT://host1:9092","SSL://host1:9093"]}'
        )
        broker = codecs.decode_broker(1, data)
        assert broker.endpoints == (
            EndPoint("PLAINTEXT", "host1", 9092, "PLAINTEXT"),
            EndPoint("SSL", "host1", 9093, "SSL"),
        )
        assert broker.features == {}

    def test_broker_v2_with_only_host_and_port(self) -> None:
        data = b'{"version":2,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1"}'
        assert codecs.decode_broker(1, data).endpoints == (EndPoint("PLAINTEXT", "h", 9092),)

    def test_broker_v4_custom_listeners_and_rack(self) -> None:
        data = (
            b'{"version":4,"host":null,"port":-1,"jmx_port":9999,"timestamp":"2233345666",'
            b'"endpoints":["CLIENT://host1:9092","REPLICATION://[fe80::1]:9093"],'
            b'"listener_security_protocol_map":{"CLIENT":"SSL","REPLICATION":"SASL_PLAINTEXT"},'
            b'"rack":"dc1"}'
        )
        broker = codecs.decode_broker(1, data)
        assert broker.endpoints == (
            EndPoint("CLIENT", "host1", 9092, "SSL"),
            EndPoint("REPLICATION", "fe80::1", 9093, "SASL_PLAINTEXT"),
        )
        assert broker.rack == "dc1"
        assert broker.endpoint("REPLICATION") is not None

    def test_topic_semantics_are_not_checked_like_kafka(self) -> None:
        # Types are strict, reassignment semantics are the controller's business: an empty
        # replica list, AR/RR outside RS, and AR/RR for unlisted partitions (dropped) all decode.
        data = (
            b'{"version":3,"partitions":{"0":[],"1":[1,2]},'
            b'"adding_replicas":{"1":[9],"7":[1]},"removing_replicas":{"1":[9]}}'
        )
        got = codecs.decode_topic_assignment("t", data)
        assert got.partitions == {
            0: ReplicaAssignment(()),
            1: ReplicaAssignment((1, 2), (9,), (9,)),
        }

    def test_unknown_fields_are_ignored_outside_reassignment(self) -> None:
        data = b'{"version":1,"brokerid":3,"timestamp":"1","extra":{"x":[1]}}'
        assert codecs.decode_controller(data) == 3
        feat = b'{"version":5,"host":"h","port":1,"jmx_port":-1,"timestamp":"1","endpoints":[],'
        feat += b'"features":{"f":{"min_version":1,"first_active_version":2,"max_version":3}}}'
        assert codecs.decode_broker(1, feat).features == {"f": (1, 3)}


class TestKafkaReadsWhatItNeverChecks:
    """Bytes Kafka 3.6's ZkData decoders accept: a field they never read (a version, a
    timestamp) refuses nothing here either. Before, each of these was logged as malformed."""

    def test_a_future_broker_version_is_read_as_the_newest_format(self) -> None:
        # BrokerEndPointTest.testFromJsonFutureVersion, verbatim.
        data = (
            b'{"foo":"bar","version":100,"host":"localhost","port":9092,"jmx_port":9999,'
            b'"timestamp":"1416974968782","endpoints":["SSL://localhost:9093"]}'
        )
        reg = codecs.decode_broker_registration(1, data)
        assert reg.endpoints == (EndPoint("SSL", "localhost", 9093, "SSL"),)
        assert (reg.version, reg.jmx_port, reg.timestamp_ms) == (100, 9999, 1416974968782)
        v6 = codecs.decode_broker(1, broker_json(version=6))
        assert v6 == codecs.decode_broker(1, broker_json())

    @pytest.mark.parametrize("timestamp", [..., 1700000000000, "soon"])
    def test_a_broker_registration_without_a_usable_timestamp(self, timestamp: Any) -> None:
        reg = codecs.decode_broker_registration(1, broker_json(timestamp=timestamp))
        assert reg.timestamp_ms == 0
        assert reg.to_broker() == codecs.decode_broker(1, broker_json())

    def test_a_controller_znode_without_timestamp_or_version(self) -> None:
        assert codecs.decode_controller_full(b'{"version":1,"brokerid":5}') == (
            codecs.ControllerRegistration(1, 5, 0, -1)
        )
        assert codecs.decode_controller(b'{"brokerid":5}') == 5
        # kraftControllerEpoch is read whenever present, as Kafka's decodeController does.
        v3_data = b'{"version":3,"brokerid":3000,"kraftControllerEpoch":7}'
        v3 = codecs.decode_controller_full(v3_data)
        assert (v3.broker_id, v3.kraft_controller_epoch) == (3000, 7)
        v2 = codecs.decode_controller_full(b'{"version":2,"brokerid":1,"timestamp":"1"}')
        assert v2.kraft_controller_epoch == -1

    @pytest.mark.parametrize("version", [..., 2, "1"])
    def test_a_partition_state_is_read_whatever_its_version(self, version: Any) -> None:
        expected = codecs.decode_partition_state(REF_STATE, 3)
        assert codecs.decode_partition_state(state_json(version=version), 3) == expected
        recovering = state_json(version=version, leader_recovery_state=1)
        lai = codecs.decode_partition_state(recovering, 3).leader_and_isr
        assert lai.leader_recovery_state is LeaderRecoveryState.RECOVERING

    def test_an_isr_change_notification_without_version(self) -> None:
        data = b'{"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":1}]}'
        got = codecs.decode_isr_change_notification(data, "/isr_change_notification/x")
        assert got == {TopicPartition("t", 0), TopicPartition("t", 1)}

    @pytest.mark.parametrize(
        "data",
        [b'{"config":{"retention.ms":"1"}}', b'{"version":2,"config":{"retention.ms":"1"}}'],
        ids=["no-version", "version-2"],
    )
    def test_a_topic_config_whatever_its_version(self, data: bytes) -> None:
        assert codecs.decode_topic_config(data, "/config/topics/t") == {"retention.ms": "1"}


# --------------------------------------------------------------------------------------------
# Round trips (hypothesis)

broker_ids = st.integers(0, 2**31 - 1)
topics = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=20).filter(
    lambda t: t not in (".", "..")
)
tps = st.builds(TopicPartition, topics, st.integers(0, 2**31 - 1))
distinct_ids = st.lists(broker_ids, unique=True, max_size=6).map(tuple)
epochs = st.integers(0, 2**31 - 1)
topic_ids = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    min_size=22,
    max_size=22,
)


@st.composite
def replica_assignments(draw: st.DrawFn) -> ReplicaAssignment:
    replicas = draw(st.lists(broker_ids, unique=True, max_size=8))
    adding = [r for r in replicas if draw(st.booleans())]
    removing = [r for r in replicas if r not in adding and draw(st.booleans())]
    return ReplicaAssignment(tuple(replicas), tuple(adding), tuple(removing))


@st.composite
def endpoint_lists(draw: st.DrawFn) -> tuple[EndPoint, ...]:
    names = draw(
        st.lists(
            st.sampled_from(["PLAINTEXT", "SSL", "INTERNAL", "CONTROLLER", "X_1"]),
            unique=True,
            max_size=4,
        )
    )
    hosts = st.sampled_from(["h1", "broker-1.example.com", "10.0.0.1", "::1", "fe80::1%eth0", ""])
    return tuple(
        EndPoint(
            n,
            draw(hosts),
            draw(st.integers(0, 65535)),
            draw(st.sampled_from(sorted(codecs.SECURITY_PROTOCOLS))),
        )
        for n in names
    )


features = st.dictionaries(
    st.text(min_size=1, max_size=10),
    st.tuples(st.integers(0, 100), st.integers(0, 100)).map(lambda t: (min(t), max(t))),
    max_size=3,
)


class TestRoundTrips:
    @given(broker_ids, st.integers(0, 2**63 - 1), st.sampled_from([1, 2]), st.integers(-1, 99))
    def test_controller(self, broker: int, ts: int, version: int, kraft: int) -> None:
        data = codecs.encode_controller(broker, ts, version=version, kraft_controller_epoch=kraft)
        full = codecs.decode_controller_full(data)
        assert (full.broker_id, full.timestamp_ms, full.version) == (broker, ts, version)
        assert full.kraft_controller_epoch == (kraft if version == 2 else -1)

    @given(epochs)
    def test_controller_epoch(self, epoch: int) -> None:
        assert codecs.decode_controller_epoch(codecs.encode_controller_epoch(epoch)) == epoch

    @given(
        broker_ids,
        endpoint_lists(),
        st.none() | st.text(max_size=10),
        st.integers(-1, 65535),
        st.integers(0, 2**63 - 1),
        features,
    )
    def test_broker_v5(
        self,
        broker: int,
        endpoints: tuple[EndPoint, ...],
        rack: str | None,
        jmx: int,
        ts: int,
        feats: dict[str, tuple[int, int]],
    ) -> None:
        reg = codecs.BrokerRegistration(broker, endpoints, rack, jmx, ts, feats)
        assert (
            codecs.decode_broker_registration(broker, codecs.encode_broker_registration(reg)) == reg
        )

    @given(
        st.one_of(st.none(), topic_ids),
        st.dictionaries(st.integers(0, 2**31 - 1), replica_assignments(), max_size=10),
    )
    def test_topic(self, topic_id: str | None, parts: dict[int, ReplicaAssignment]) -> None:
        assignment = TopicAssignment("t", topic_id, parts)
        assert (
            codecs.decode_topic_assignment("t", codecs.encode_topic_assignment(assignment))
            == assignment
        )

    @given(
        st.one_of(st.none(), topic_ids),
        st.dictionaries(st.integers(0, 2**31 - 1), replica_assignments(), max_size=10),
        st.lists(st.tuples(st.integers(0, 2**31 - 1), replica_assignments()), max_size=10),
    )
    def test_topic_size_follows_the_encoding(
        self,
        topic_id: str | None,
        parts: dict[int, ReplicaAssignment],
        changes: list[tuple[int, ReplicaAssignment]],
    ) -> None:
        # The reassignment's size check for many partitions' changes relies on it being exact.
        def encoded() -> int:
            return len(codecs.encode_topic_assignment(TopicAssignment("t", topic_id, parts)))

        size = codecs.TopicAssignmentSize(TopicAssignment("t", topic_id, dict(parts)))
        assert size.size == encoded()
        for i, (p, ra) in enumerate(changes):
            would_be = size.size_with(p, ra)
            assert size.size == encoded()  # size_with changed nothing
            if i % 2 == 0:
                size.set(p, ra)
                parts[p] = ra
                assert size.size == would_be == encoded()

    @given(
        st.integers(-1, 2**31 - 1),
        epochs,
        distinct_ids,
        st.sampled_from(LeaderRecoveryState),
        epochs,
        st.integers(0, 2**31 - 1),
    )
    def test_partition_state(
        self,
        leader: int,
        leader_epoch: int,
        isr: tuple[int, ...],
        recovery: LeaderRecoveryState,
        controller_epoch: int,
        zk_version: int,
    ) -> None:
        state = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(leader, leader_epoch, isr, recovery, zk_version), controller_epoch
        )
        data = codecs.encode_partition_state(state)
        assert codecs.decode_partition_state(data, zk_version, STATE_PATH) == state

    @given(st.dictionaries(tps, st.lists(broker_ids, unique=True, min_size=1).map(tuple)))
    def test_reassignment(self, reassignment: dict[TopicPartition, tuple[int, ...]]) -> None:
        data = codecs.encode_reassignment(reassignment)
        assert codecs.decode_reassignment(data) == reassignment

    @given(st.sets(tps))
    def test_partition_sets(self, partitions: set[TopicPartition]) -> None:
        data = codecs.encode_preferred_replica_election(partitions)
        assert codecs.decode_preferred_replica_election(data) == partitions
        data = codecs.encode_isr_change_notification(partitions)
        assert codecs.decode_isr_change_notification(data, paths.isr_change_path(1)) == partitions

    @given(broker_ids)
    def test_log_dir_event(self, broker: int) -> None:
        data = codecs.encode_log_dir_event(broker)
        assert codecs.decode_log_dir_event(data, paths.log_dir_event_path(1)) == broker

    @given(st.dictionaries(st.text(), st.text()))
    def test_topic_config(self, config: dict[str, str]) -> None:
        data = codecs.encode_topic_config(config)
        assert codecs.decode_topic_config(data, paths.topic_config_path("t")) == config

    @given(st.sampled_from([1, 2]), st.sampled_from([0, 1]), features)
    def test_feature(self, version: int, status: int, feats: dict[str, tuple[int, int]]) -> None:
        # Finalized levels start at 1; v2 keeps only the max, so it decodes as (max, max).
        feats = {k: (max(lo, 1), max(hi, 1)) for k, (lo, hi) in feats.items()}
        node = codecs.FeatureZNode(version, status, feats)
        decoded = codecs.decode_feature_znode(codecs.encode_feature_znode(node))
        expected = feats if version == 1 else {k: (hi, hi) for k, (_, hi) in feats.items()}
        assert decoded == codecs.FeatureZNode(version, status, expected)

    @given(broker_ids, st.integers(0, 2**62), st.integers(0, 2**62 - 1))  # end <= int64 max
    def test_producer_id_block(self, broker: int, start: int, length: int) -> None:
        block = codecs.ProducerIdBlock(broker, start, start + length)
        assert codecs.decode_producer_id_block(codecs.encode_producer_id_block(block)) == block


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


def state_json(**overrides: object) -> bytes:
    doc: dict[str, object] = {
        "controller_epoch": 7,
        "leader": 1,
        "version": 1,
        "leader_epoch": 4,
        "isr": [1, 3, 2],
    }
    doc.update(overrides)
    return json.dumps({k: v for k, v in doc.items() if v is not ...}).encode()


def broker_json(**overrides: object) -> bytes:
    doc = json.loads(REF_BROKER)
    doc.update(overrides)
    return json.dumps({k: v for k, v in doc.items() if v is not ...}).encode()


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


def _after_a_valid_entry(entry: str) -> bytes:
    """A reassignment request: t-0 to [4, 5], then ``entry``."""
    return (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5]},'
        f"{entry}]}}"
    ).encode()


class TestReassignmentRequestEntryByEntry:
    """What the controller reads: a partition's bad entry makes that partition invalid,
    whatever is wrong with it; what names no partition, or Kafka's mapper refuses, refuses
    the whole znode."""

    @pytest.mark.parametrize(
        ("replicas", "problem"),
        [
            ("[]", "the replica list is empty"),
            ("[1,1]", "duplicate broker id 1"),
            ("[-1]", "a broker id in [0, 2147483647]"),
            ('["1"]', "a broker id in [0, 2147483647]"),
            ('"1,2"', "an array of broker ids"),
        ],
    )
    def test_a_bad_target_fails_its_partition_only(self, replicas: str, problem: str) -> None:
        data = _after_a_valid_entry(f'{{"topic":"u","partition":1,"replicas":{replicas}}}')
        request = codecs.decode_reassignment_request(data)
        assert request.targets == {TopicPartition("t", 0): (4, 5)}
        [(tp, error)] = request.invalid.items()
        assert tp == TopicPartition("u", 1)
        assert "'partitions[1].replicas" in error.problem and problem in error.problem
        with pytest.raises(MalformedZnodeError, match=re.escape(problem)):
            codecs.decode_reassignment(data)  # the strict reader refuses the znode

    def test_a_missing_target_fails_its_partition_only(self) -> None:
        data = b'{"version":1,"partitions":[{"topic":"u","partition":1}]}'
        request = codecs.decode_reassignment_request(data)
        assert request.targets == {}
        assert "'partitions[0].replicas'" in request.invalid[TopicPartition("u", 1)].problem

    def test_a_partition_listed_twice_is_invalid_both_times(self) -> None:
        data = (
            b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},'
            b'{"topic":"u","partition":0,"replicas":[3]},'
            b'{"topic":"t","partition":0,"replicas":[2]}]}'
        )
        request = codecs.decode_reassignment_request(data)
        assert request.targets == {TopicPartition("u", 0): (3,)}
        assert "duplicate partition t-0" in request.invalid[TopicPartition("t", 0)].problem

    @pytest.mark.parametrize(
        ("entry", "field", "problem"),
        [
            ('{"topic":"t","partition":-1', "partition", "negative partition id -1"),
            ('{"topic":"a/b","partition":0', "topic", "'a/b' cannot be a topic znode name"),
            ('{"topic":"","partition":0', "topic", "'' cannot be a topic znode name"),
        ],
    )
    def test_a_partition_that_cannot_exist_is_unknown_alone(
        self, entry: str, field: str, problem: str
    ) -> None:
        # Kafka's mapper binds it (a string and an int); the controller finds no such
        # partition and fails that entry only.
        data = _after_a_valid_entry(f'{entry},"replicas":[4,5]}}')
        request = codecs.decode_reassignment_request(data)
        assert request.targets == {TopicPartition("t", 0): (4, 5)}
        assert request.invalid == {}
        [reason] = request.unknown.values()
        assert f"'partitions[1].{field}'" in reason and problem in reason
        with pytest.raises(MalformedZnodeError, match=re.escape(problem)):
            codecs.decode_reassignment(data)  # the strict reader refuses the znode

    @pytest.mark.parametrize(
        "head",
        [b"{", b'{"version":2,', b'{"version":0,', b'{"version":"1",', b'{"version":-1,',
         b'{"version":null,', b'{"version":1.0,', b'{"version":1.5,', b'{"version":1e2,',
         b'{"version":" +1",', b'{"version":"",'],
    )  # fmt: skip
    def test_the_version_is_read_as_kafka_reads_it_and_not_checked(self, head: bytes) -> None:
        # Kafka's mapper binds it to an Int it ignores: hand-written requests without it run.
        data = head + b'"partitions":[{"topic":"t","partition":0,"replicas":[4,5]}]}'
        assert codecs.decode_reassignment(data) == {TopicPartition("t", 0): (4, 5)}

    @pytest.mark.parametrize(
        "data",
        [
            b'{"version":1,"partitions":[{"topic":',
            b'{"version":"one","partitions":[]}',
            b'{"version":"1.0","partitions":[]}',
            b'{"version":2147483648,"partitions":[]}',
            b'{"version":"' + b"1" * 5000 + b'","partitions":[]}',
            b'{"version":1e400,"partitions":[]}',
            b'{"version":true,"partitions":[]}',
            b'{"version":1,"partitions":[],"comment":"x"}',
            b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"x":1}]}',
            b'{"version":1,"partitions":[{"topic":"t","partition":"0","replicas":[1]}]}',
            b'{"version":1,"partitions":[{"topic":"t","partition":2147483648,"replicas":[1]}]}',
            b'{"version":1,"partitions":[{"topic":1,"partition":0,"replicas":[1]}]}',
            b'{"version":1,"partitions":{"t":0}}',
        ],
    )
    def test_what_names_no_partition_refuses_the_whole_znode(self, data: bytes) -> None:
        with pytest.raises(MalformedZnodeError):
            codecs.decode_reassignment_request(data)


@pytest.mark.parametrize(
    ("decode", "path"),
    [
        (codecs.decode_reassignment_request, paths.REASSIGN_PARTITIONS),
        (codecs.decode_preferred_replica_election, paths.PREFERRED_REPLICA_ELECTION),
        (codecs.decode_isr_change_notification, paths.isr_change_path(1)),
        (codecs.decode_log_dir_event, f"{paths.LOG_DIR_EVENT_NOTIFICATION}/log_dir_event_1"),
        (codecs.decode_config_change, f"{paths.CONFIG_CHANGES}/config_change_1"),
        (codecs.decode_topic_config, "/config/topics/t"),
        (codecs.decode_feature_znode, paths.FEATURE),
        (codecs.decode_producer_id_block, paths.LATEST_PRODUCER_ID_BLOCK),
        (codecs.decode_controller_full, paths.CONTROLLER),
    ],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_every_admin_notification_and_config_decoder_refuses_an_oversized_payload(
    decode: Callable[[bytes, str], object], path: str
) -> None:
    oversized = b'{"version":1,"x":"' + b"a" * codecs.MAX_ZNODE_BYTES + b'"}'
    limit = r"byte znode limit \(zookeeper\.jute\.maxbuffer\)"
    with pytest.raises(MalformedZnodeError, match=limit) as info:
        decode(oversized, path)
    assert info.value.path == path


@pytest.mark.parametrize(
    "data",
    [b'{"version":2,"broker":3,"event":1}', b'{"version":1,"broker":3,"event":7}', b'{"broker":3}'],
)
def test_a_log_dir_event_is_read_as_kafka_reads_it(data: bytes) -> None:
    # LogDirEventNotificationSequenceZNode.decode reads only the broker.
    assert codecs.decode_log_dir_event(data, paths.log_dir_event_path(7)) == 3
