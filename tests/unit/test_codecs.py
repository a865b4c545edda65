"""Kafka's znode formats (reference §1.4): exact bytes of what we write, and the reference's
examples and older versions read back."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

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
from tests.unit.codec_samples import (
    REF_BROKER,
    REF_CONTROLLER_V1,
    REF_CONTROLLER_V2,
    REF_FEATURE,
    REF_ISR_CHANGE,
    REF_LOG_DIR,
    REF_PID_BLOCK,
    REF_PREFERRED,
    REF_REASSIGN,
    REF_STATE,
    REF_TOPIC,
    REF_TOPIC_CONFIG,
    STATE_PATH,
    TOPIC_ID,
    assert_same_json,
    broker_json,
    ref_broker_registration,
    state_json,
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

    @pytest.mark.parametrize(
        "data",
        [
            b'{"broker":2,"block_start":"5000","block_end":"5999"}',
            b'{"version":2,"broker":2,"block_start":"5000","block_end":"5999"}',
            b'{"version":"1","broker":2,"block_start":"5000","block_end":"5999"}',
        ],
        ids=["no-version", "version-2", "version-string"],
    )
    def test_a_producer_id_block_whatever_its_version(self, data: bytes) -> None:
        # It was refused, and every AllocateProducerIds answered UNKNOWN_SERVER_ERROR.
        assert codecs.decode_producer_id_block(data) == codecs.ProducerIdBlock(2, 5000, 5999)

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
