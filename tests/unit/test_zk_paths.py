"""Kafka's ZooKeeper paths (reference §1.3) and topic-name rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.core.model import TopicPartition
from controller.zk import paths


def test_static_paths_match_kafka() -> None:
    assert paths.CONTROLLER == "/controller"
    assert paths.CONTROLLER_EPOCH == "/controller_epoch"
    assert paths.BROKERS_IDS == "/brokers/ids"
    assert paths.BROKERS_TOPICS == "/brokers/topics"
    assert paths.DELETE_TOPICS == "/admin/delete_topics"
    assert paths.REASSIGN_PARTITIONS == "/admin/reassign_partitions"
    assert paths.PREFERRED_REPLICA_ELECTION == "/admin/preferred_replica_election"
    assert paths.ISR_CHANGE_NOTIFICATION == "/isr_change_notification"
    assert paths.LOG_DIR_EVENT_NOTIFICATION == "/log_dir_event_notification"
    assert paths.CONFIG_TOPICS == "/config/topics"
    assert paths.CONFIG_CHANGES == "/config/changes"
    assert paths.FEATURE == "/feature"
    assert paths.LATEST_PRODUCER_ID_BLOCK == "/latest_producer_id_block"
    assert (paths.ISR_CHANGE_PREFIX, paths.LOG_DIR_EVENT_PREFIX, paths.CONFIG_CHANGE_PREFIX) == (
        "isr_change_",
        "log_dir_event_",
        "config_change_",
    )


def test_persistent_paths_are_kafkas_list_in_order() -> None:
    assert paths.PERSISTENT_PATHS == (
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/brokers/seqid",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
        "/config/ips",
    )
    # Ancestors (/brokers, /admin, /config) come from ensure-path semantics, not from the list.
    assert len(set(paths.PERSISTENT_PATHS)) == len(paths.PERSISTENT_PATHS)


def test_per_entity_paths() -> None:
    assert paths.broker_path(3) == "/brokers/ids/3"
    assert paths.topic_path("t") == "/brokers/topics/t"
    assert paths.topic_partitions_path("t") == "/brokers/topics/t/partitions"
    assert paths.partition_path("t", 2) == "/brokers/topics/t/partitions/2"
    assert paths.partition_state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert paths.state_path(TopicPartition("t", 2)) == "/brokers/topics/t/partitions/2/state"
    assert paths.partition_path_of(TopicPartition("t", 2)) == "/brokers/topics/t/partitions/2"
    assert paths.delete_topic_path("t") == "/admin/delete_topics/t"
    assert paths.topic_config_path("t") == "/config/topics/t"
    assert paths.config_entity_path("brokers", "<default>") == "/config/brokers/<default>"


def test_sequential_paths_use_zookeepers_ten_digit_suffix() -> None:
    assert paths.isr_change_path(42) == "/isr_change_notification/isr_change_0000000042"
    assert paths.isr_change_path("0000000042") == paths.isr_change_path(42)
    assert paths.log_dir_event_path(7) == "/log_dir_event_notification/log_dir_event_0000000007"
    assert paths.config_change_path(1) == "/config/changes/config_change_0000000001"
    assert paths.ISR_CHANGE_CREATE_PATH == "/isr_change_notification/isr_change_"
    assert paths.LOG_DIR_EVENT_CREATE_PATH == "/log_dir_event_notification/log_dir_event_"


@pytest.mark.parametrize("bad", ["", "a/b", ".", "..", "/"])
def test_builders_refuse_names_that_escape_their_parent(bad: str) -> None:
    with pytest.raises(ValueError, match="znode name"):
        paths.topic_path(bad)
    with pytest.raises(ValueError, match="znode name"):
        paths.partition_state_path(bad, 0)
    with pytest.raises(ValueError, match="znode name"):
        paths.delete_topic_path(bad)


def test_builders_accept_existing_topics_that_break_todays_naming_rules() -> None:
    # A pre-0.10 topic may be longer than 249 characters; it must stay addressable.
    old = "x" * 255
    assert paths.topic_path(old) == f"/brokers/topics/{old}"


@pytest.mark.parametrize("bad", [-1, True, 1.0])
def test_builders_refuse_bad_ids(bad: object) -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        paths.broker_path(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-negative integer"):
        paths.partition_path("t", bad)  # type: ignore[arg-type]


def test_parse_state_path() -> None:
    assert paths.parse_state_path("/brokers/topics/t.1/partitions/12/state") == TopicPartition(
        "t.1", 12
    )
    assert paths.parse_state_path("/brokers/topics/t/partitions/01/state") is None
    assert paths.parse_state_path("/brokers/topics/t/partitions/1") is None
    assert paths.parse_state_path("/brokers/topics/a/b/partitions/1/state") is None


@given(st.text(alphabet="abc._-XYZ019", min_size=1, max_size=30), st.integers(0, 2**31 - 1))
def test_state_path_round_trips(topic: str, partition: int) -> None:
    if topic in (".", ".."):
        return
    tp = TopicPartition(topic, partition)
    assert paths.parse_state_path(paths.state_path(tp)) == tp


class TestParseSequenceNumber:
    def test_plain_and_full_path(self) -> None:
        assert paths.parse_sequence_number("isr_change_0000000042", "isr_change_") == 42
        assert paths.parse_sequence_number(paths.isr_change_path(42), "isr_change_") == 42
        assert paths.parse_sequence_number("log_dir_event_2147483647", "log_dir_event_") == (
            2**31 - 1
        )

    def test_overflowed_counter_is_negative(self) -> None:
        # ZooKeeper's signed counter wraps to -2147483648 (still 10 digits after the sign).
        assert paths.parse_sequence_number("isr_change_-2147483648", "isr_change_") == -(2**31)

    @pytest.mark.parametrize(
        "name",
        [
            "isr_change_42",  # not 10 digits
            "isr_change_00000000420",  # 11 digits
            "isr_change_000000004x",
            "isr_change_",
            "log_dir_event_0000000042",  # wrong prefix
            "isr_change_+000000042",
        ],
    )
    def test_rejects_non_zookeeper_suffixes(self, name: str) -> None:
        with pytest.raises(ValueError, match=r"isr_change_|sequence suffix"):
            paths.parse_sequence_number(name, "isr_change_")


class TestValidateTopicName:
    @pytest.mark.parametrize("name", ["t", "a.b_c-D9", "x" * 249, "..a", "_"])
    def test_legal(self, name: str) -> None:
        assert paths.validate_topic_name(name) == name

    @pytest.mark.parametrize(
        ("name", "fragment"),
        [
            ("", "non-empty"),
            (".", '"." or ".."'),
            ("..", '"." or ".."'),
            ("x" * 250, "250 characters long, the maximum is 249"),
            ("a b", "character ' ' at index 1"),
            ("a/b", "character '/' at index 1"),
            ("tópico", "character 'ó' at index 1"),
        ],
    )
    def test_illegal_with_a_clear_message(self, name: str, fragment: str) -> None:
        with pytest.raises(paths.InvalidTopicError) as info:
            paths.validate_topic_name(name)
        assert fragment in str(info.value)

    def test_invalid_topic_error_is_a_value_error(self) -> None:
        with pytest.raises(ValueError):
            paths.validate_topic_name("no!")

    def test_collision_chars(self) -> None:
        assert paths.has_collision_chars("a.b")
        assert paths.has_collision_chars("a_b")
        assert not paths.has_collision_chars("a-b")
