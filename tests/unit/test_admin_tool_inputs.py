"""Admin-tool inputs read as Kafka's tools read them, and bad ones refused in one line:
trailing separators in --replica-assignment, Kafka's --topic filter normalisation, numbers that
do not fit an int32, partition counts that cannot fit a znode, and a topic whose config znode
is unreadable still shown with its partitions (in-memory ZooKeeper; the CLI's own
subprocess runs are in tests/integration/test_topics_admin.py and test_configs_admin.py)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest

from controller.admin import topics as admin
from controller.admin.assignment import InvalidPartitionsError, parse_replica_assignment
from controller.cli.argtypes import INT32_MAX, partition_number, positive_ms, seconds
from controller.cli.main import build_parser
from controller.cli.topics_cmd import topic_pattern
from controller.core.model import EndPoint
from controller.status import collect_status, render
from controller.zk import codecs, paths
from controller.zk.memory import MemoryZooKeeper
from controller.zk.port import ZkPort


@pytest.fixture
def port() -> ZkPort:
    port = MemoryZooKeeper().open_session()
    port.ensure_path(paths.BROKERS_IDS)
    for b in (0, 1, 2):
        reg = codecs.BrokerRegistration(b, (EndPoint("PLAINTEXT", f"h{b}", 9092),), None, 1)
        port.create(paths.broker_path(b), codecs.encode_broker_registration(reg))
    return port  # type: ignore[return-value]


def test_replica_assignment_drops_trailing_empty_fields_as_javas_split() -> None:
    expected = {0: (0, 1), 1: (1, 2)}
    assert parse_replica_assignment("0:1,1:2") == expected
    assert parse_replica_assignment("0:1,1:2,") == expected
    assert parse_replica_assignment("0:1:,1:2:") == expected
    with pytest.raises(Exception, match="empty"):
        parse_replica_assignment(",,")
    with pytest.raises(Exception, match="not a broker id"):
        parse_replica_assignment("0:1,,1:2")  # an empty field inside is still an error


def test_topic_filter_is_normalised_as_kafkas_include_list() -> None:
    names = ["a", "b", "ab", "q"]
    for raw, matched in [
        ("a, b", ["a", "b"]),
        (" a,b ", ["a", "b"]),
        ('"q"', ["q"]),
        ("'a|b'", ["a", "b"]),
        ("a.*", ["a", "ab"]),
    ]:
        assert [n for n in names if topic_pattern(raw).fullmatch(n)] == matched, raw


def test_numbers_that_do_not_fit_are_refused_when_parsed() -> None:
    assert partition_number("0") == 0 and partition_number(str(INT32_MAX)) == INT32_MAX
    assert positive_ms("1") == 1
    assert seconds("2.5") == 2.5
    for parse, text in [
        (partition_number, str(INT32_MAX + 1)),
        (partition_number, "-1"),
        (positive_ms, "0"),
        (positive_ms, "3000000000"),
        (seconds, "inf"),
        (seconds, "nan"),
        (seconds, "-1"),
        (seconds, str(math.ceil(INT32_MAX / 1000) + 1)),
    ]:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
    with pytest.raises(ValueError):  # argparse reports it as "invalid int value: 'x'"
        positive_ms("x")
    parser = build_parser()
    for argv in (
        ["elect", "--type", "preferred", "--topic", "t", "--partition", "2147483648"],
        ["elect", "--type", "preferred", "--all", "--timeout-ms", "3000000000"],
        ["topics", "list", "--session-timeout-ms", "2147483648"],
        ["reassign", "verify", "--reassignment-json-file", "x", "--timeout-s", "inf"],
    ):
        with pytest.raises(SystemExit) as info:
            parser.parse_args(argv)
        assert info.value.code != 0, argv


def test_a_partition_count_that_cannot_fit_a_znode_is_refused_before_assigning(
    port: ZkPort,
) -> None:
    # Without the bound, 2**31-1 partitions would be assigned one by one first: never ending.
    with pytest.raises(InvalidPartitionsError, match=r"at least .* bytes"):
        admin.create_topic(port, "huge", INT32_MAX, 2)
    assert port.exists(paths.topic_path("huge")) is None
    admin.create_topic(port, "t", 1, 2)
    with pytest.raises(InvalidPartitionsError, match=r"at least .* bytes"):
        admin.add_partitions(port, "t", INT32_MAX)
    # The exact check still decides near the limit.
    with pytest.raises(InvalidPartitionsError, match=r"would be .* bytes"):
        admin.create_topic(port, "big", 120_000, 1)


def test_an_unreadable_config_keeps_the_topic_and_its_partitions_in_view(port: ZkPort) -> None:
    admin.create_topic(port, "hidden", 3, 1)
    port.set(paths.topic_config_path("hidden"), b'{"version":1,"config":{"retention.ms":1000}}')
    (described,) = admin.describe_topics(port, ["hidden"])
    assert len(described.partitions) == 3 and described.error is None
    assert described.config_error is not None and "retention.ms" in described.config_error
    status = collect_status(port, scrape_timeout=0.1)
    assert status.partitions["total"] == 3
    assert status.offline == ["hidden-0", "hidden-1", "hidden-2"]  # never elected here
    assert status.topic_errors and "hidden" in status.topic_errors[0]
    assert "configs unreadable" in render(status)


def test_an_election_json_file_partition_must_fit_an_int32(tmp_path: Path) -> None:
    from controller.admin.assignment import AdminError
    from controller.cli.elect_cmd import partitions_from_json_file

    listed = tmp_path / "p.json"
    listed.write_text('{"partitions":[{"topic":"t","partition":2147483647}]}')
    assert partitions_from_json_file(str(listed)) == [("t", INT32_MAX)]
    listed.write_text('{"partitions":[{"topic":"t","partition":4294967296}]}')
    with pytest.raises(AdminError, match="at most 2147483647"):
        partitions_from_json_file(str(listed))


def test_status_skips_a_controller_endpoint_named_with_a_non_ascii_digit(port: ZkPort) -> None:
    port.ensure_path(f"{paths.CONTROLLER_ENDPOINTS}/²")  # isdigit(), but int() refuses it
    status = collect_status(port, scrape_timeout=0.1)
    assert status.controllers == []


def test_the_tools_hand_kazoo_the_connect_string_it_reads() -> None:
    # `topics list --zookeeper "h:2181 ,h2:2181"` used to end in KazooClient's bare
    # ValueError traceback; a string the tools cannot read is refused in one line.
    from kazoo.client import KazooClient

    from controller.admin.client import AdminConnectError, resolve_connect

    connect = resolve_connect("h:2181 ,h2:2181 /kafka")
    assert connect == "h:2181,h2:2181/kafka"
    KazooClient(hosts=connect)
    with pytest.raises(AdminConnectError, match=r"from ZK_CONNECT: .*port"):
        resolve_connect(None, {"ZK_CONNECT": "h:21x1"})


def test_an_unknown_log_level_is_a_usage_error() -> None:
    """It used to reach configure_logging and end in a traceback (exit 1)."""
    parser = build_parser()
    for argv in (
        ["broker", "--broker-id", "1", "--log-level", "LOUD"],
        ["chaos", "--log-level", "trace"],
    ):
        with pytest.raises(SystemExit) as info:
            parser.parse_args(argv)
        assert info.value.code == 2, argv
    args = parser.parse_args(["broker", "--broker-id", "1", "--log-level", "warn"])
    assert args.log_level == "warn"
