"""Admin requests and notifications as the controller reads them: a reassignment request
entry by entry, oversized payloads, log-dir events."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from controller.core.model import TopicPartition
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError


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
