"""Topic config alters (``controller.admin.configs``) on the in-memory ZooKeeper: the parsing of
kafka-configs.sh's arguments, the merge, the refusals, and the retry of a lost race. The same
operations against a real ZooKeeper and through the CLI are in
``tests/integration/test_configs_admin.py``."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import pytest

from controller.admin import configs
from controller.admin.topic_configs import InvalidConfigError
from controller.admin.topics import (
    ConcurrentModificationError,
    CorruptMetadataError,
    InvalidRequestError,
    UnknownTopicError,
    create_topic,
)
from controller.core.model import EndPoint
from controller.zk import codecs, paths
from controller.zk.codecs.brokers import BrokerRegistration
from controller.zk.errors import NoAuthError, RolledBackError
from controller.zk.memory import MemoryZooKeeper
from controller.zk.memory_session import MemoryZkSession
from controller.zk.port import Op, OpResult

CONFIG = paths.topic_config_path("t")


def zk_with_topic(config: dict[str, str] | None = None) -> MemoryZkSession:
    zk = MemoryZooKeeper().open_session()
    zk.ensure_path(paths.BROKERS_TOPICS)
    zk.create(paths.topic_path("t"), b'{"version":3,"partitions":{"0":[1]},"topic_id":null}')
    if config is not None:
        zk.ensure_path(paths.CONFIG_TOPICS)
        zk.create(CONFIG, codecs.encode_topic_config(config))
    return zk


def notifications(zk: MemoryZkSession) -> list[bytes]:
    if zk.exists(paths.CONFIG_CHANGES) is None:
        return []
    names = sorted(zk.get_children(paths.CONFIG_CHANGES))
    return [zk.get(f"{paths.CONFIG_CHANGES}/{n}")[0] for n in names]


def stored(zk: MemoryZkSession) -> dict[str, str]:
    return codecs.decode_topic_config(zk.get(CONFIG)[0], CONFIG)


# -- argument syntax -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("retention.ms=1000", {"retention.ms": "1000"}),
        (" a = 1 , b=2", {"a": "1", "b": "2"}),
        ("cleanup.policy=[compact,delete],x=1", {"cleanup.policy": "compact,delete", "x": "1"}),
    ],
)
def test_add_config_syntax(text: str, expected: dict[str, str]) -> None:
    assert configs.parse_config_list(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("retention.ms", "KEY=VALUE"),
        ("a=1,,b=2", "KEY=VALUE"),
        ("=1", "KEY=VALUE"),
        # Kafka's ConfigCommand splits on '=' and wants two parts: Java's split drops the
        # trailing empty string of "k=".
        ("k=a=b", "one '=' and a value"),
        ("k=", "one '=' and a value"),
        ("k = ", "one '=' and a value"),
        ("a=1,a=2", "given twice"),
    ],
)
def test_bad_add_config_names_the_entry(text: str, problem: str) -> None:
    with pytest.raises(InvalidConfigError, match=problem):
        configs.parse_config_list(text)


def test_delete_config_syntax() -> None:
    assert configs.parse_config_names("a, b,a") == ["a", "b"]
    with pytest.raises(InvalidConfigError, match="names separated by commas"):
        configs.parse_config_names("a,,b")


def test_the_notification_is_kafkas_version_2_format() -> None:
    data = codecs.encode_config_change("topics", "orders")
    assert data == b'{"version":2,"entity_path":"topics/orders"}'
    assert codecs.decode_config_change(data, "/config/changes/config_change_0000000000") == (
        "topics",
        "orders",
    )


# -- alters ----------------------------------------------------------------------------------


def test_alter_creates_the_config_and_one_notification() -> None:
    zk = zk_with_topic()
    new = configs.alter_topic_config(zk, "t", {"unclean.leader.election.enable": "true"})
    assert new == {"unclean.leader.election.enable": "true"}
    assert zk.get(CONFIG)[0] == b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}'
    assert notifications(zk) == [b'{"version":2,"entity_path":"topics/t"}']


def test_alter_merges_additions_and_deletions_into_the_existing_overrides() -> None:
    zk = zk_with_topic({"retention.ms": "1000", "cleanup.policy": "compact"})
    new = configs.alter_topic_config(
        zk, "t", {"retention.ms": "2000", "max.message.bytes": "1048576"}, ["cleanup.policy"]
    )
    assert new == stored(zk) == {"retention.ms": "2000", "max.message.bytes": "1048576"}
    configs.alter_topic_config(zk, "t", delete=["retention.ms", "max.message.bytes"])
    assert stored(zk) == {}  # the znode stays, empty, as Kafka leaves it
    assert len(notifications(zk)) == 2


@pytest.mark.parametrize(
    ("add", "delete", "error", "problem"),
    [
        ({}, [], InvalidRequestError, "nothing to change"),
        ({"retention.ms": "1"}, ["retention.ms"], InvalidRequestError, "both added and deleted"),
        ({"no.such.config": "1"}, [], InvalidConfigError, "unknown topic config name"),
        ({"retention.ms": "soon"}, [], InvalidConfigError, "retention.ms"),
        ({"unclean.leader.election.enable": "yes"}, [], InvalidConfigError, "unclean"),
        ({}, ["segment.ms"], InvalidConfigError, "does not set: segment.ms"),
    ],
)
def test_refused_alters_write_nothing(
    add: dict[str, str], delete: Sequence[str], error: type[Exception], problem: str
) -> None:
    zk = zk_with_topic({"retention.ms": "1000"})
    before = zk.get(CONFIG)
    with pytest.raises(error, match=problem):
        configs.alter_topic_config(zk, "t", add, delete)
    assert zk.get(CONFIG) == before
    assert notifications(zk) == []


def test_an_unknown_topic_is_refused() -> None:
    zk = zk_with_topic()
    with pytest.raises(UnknownTopicError, match="topic 'other' does not exist"):
        configs.alter_topic_config(zk, "other", {"retention.ms": "1"})
    with pytest.raises(UnknownTopicError, match="topic 'other' does not exist"):
        configs.describe_topic_configs(zk, ["other"])
    assert zk.exists(paths.topic_config_path("other")) is None


def test_an_unreadable_config_is_not_overwritten() -> None:
    zk = zk_with_topic()
    zk.ensure_path(paths.CONFIG_TOPICS)
    zk.create(CONFIG, b'{"version":1,"config":{"retention.ms":1000}}')
    with pytest.raises(CorruptMetadataError, match=r"config\.retention\.ms.*fixed or removed"):
        configs.alter_topic_config(zk, "t", {"segment.ms": "1000"})
    assert zk.get(CONFIG)[0] == b'{"version":1,"config":{"retention.ms":1000}}'
    [described] = configs.describe_topic_configs(zk, ["t"])
    assert described.error is not None and "retention.ms" in described.error


class RacingPort:
    """A session on which another admin alters the config between our read and our write,
    ``races`` times."""

    def __init__(self, session: MemoryZkSession, races: int) -> None:
        self.session = session
        self.races = races

    def __getattr__(self, name: str) -> object:
        return getattr(self.session, name)

    def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        if self.races > 0 and any(getattr(op, "path", None) == CONFIG for op in ops):
            self.races -= 1
            current = json.loads(self.session.get(CONFIG)[0])["config"]
            current["segment.ms"] = str(1000 + self.races)
            self.session.set(CONFIG, codecs.encode_topic_config(current))
        return self.session.multi(ops)


def make_racing(races: int) -> RacingPort:
    return RacingPort(zk_with_topic({"retention.ms": "1000"}), races)


def test_a_lost_race_is_retried_without_losing_the_other_change() -> None:
    zk = make_racing(races=2)
    new = configs.alter_topic_config(zk, "t", {"retention.ms": "5"})  # type: ignore[arg-type]
    assert zk.races == 0
    assert new == stored(zk.session) == {"retention.ms": "5", "segment.ms": "1000"}
    assert notifications(zk.session) == [b'{"version":2,"entity_path":"topics/t"}']


def test_an_endless_race_gives_up_and_writes_nothing_of_ours() -> None:
    zk = make_racing(races=100)
    with pytest.raises(ConcurrentModificationError, match="nothing was written"):
        configs.alter_topic_config(zk, "t", {"retention.ms": "5"})  # type: ignore[arg-type]
    assert stored(zk.session)["retention.ms"] == "1000"
    assert notifications(zk.session) == []


def test_describe_lists_every_topic_with_overrides() -> None:
    zk = zk_with_topic({"retention.ms": "1000"})
    assert configs.describe_topic_configs(zk) == [
        configs.EntityConfig("t", {"retention.ms": "1000"})
    ]
    assert configs.describe_topic_configs(MemoryZooKeeper().open_session()) == []


# -- the brokers' cluster default --------------------------------------------------------------

DEFAULT = paths.BROKER_DEFAULT_CONFIG


def test_the_brokers_default_takes_the_unclean_setting_with_its_notification() -> None:
    zk = MemoryZooKeeper().open_session()  # no topic needed
    zk.ensure_path(paths.BROKERS_IDS)  # a cluster lives here
    assert configs.describe_broker_default_config(zk) == configs.EntityConfig("<default>", {})
    configs.alter_broker_default_config(zk, {"unclean.leader.election.enable": "true"})
    assert zk.get(DEFAULT)[0] == b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}'
    assert notifications(zk) == [b'{"version":2,"entity_path":"brokers/<default>"}']
    assert configs.describe_broker_default_config(zk).config == {
        "unclean.leader.election.enable": "true"
    }
    configs.alter_broker_default_config(zk, delete=["unclean.leader.election.enable"])
    assert zk.get(DEFAULT)[0] == b'{"version":1,"config":{}}'


def test_the_brokers_default_is_not_written_where_no_cluster_lives() -> None:
    """The connect string without its chroot: the write used to land beside the cluster,
    read by nobody, and report success."""
    zk = MemoryZooKeeper().open_session()
    zk.ensure_path("/kafka" + paths.BROKERS_IDS)  # the cluster, under a chroot left out
    with pytest.raises(InvalidRequestError, match=r"no Kafka cluster here \(/brokers/ids does "
                       r"not exist\): is the chroot missing from the connect string"):
        configs.alter_broker_default_config(zk, {"unclean.leader.election.enable": "true"})
    assert zk.exists(paths.CONFIG) is None  # nothing written
    assert notifications(zk) == []


@pytest.mark.parametrize(
    ("add", "delete", "problem"),
    [
        ({"log.retention.ms": "1"}, [], "only unclean.leader.election.enable"),
        ({}, ["min.insync.replicas"], "only unclean.leader.election.enable"),
        ({"unclean.leader.election.enable": "maybe"}, [], "unclean.leader.election.enable"),
        ({}, ["unclean.leader.election.enable"], "does not set"),
    ],
)
def test_refused_brokers_default_alters_write_nothing(
    add: dict[str, str], delete: list[str], problem: str
) -> None:
    zk = MemoryZooKeeper().open_session()
    zk.ensure_path(paths.BROKERS_IDS)
    with pytest.raises(InvalidConfigError, match=problem):
        configs.alter_broker_default_config(zk, add, delete)
    assert zk.exists(DEFAULT) is None
    assert notifications(zk) == []


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        # Java's split drops trailing empty parts: "3.6." is looked up whole and refused,
        # "3.6.1." is "3.6".
        ("message.format.version", ["3.6", "2.8-IV1", "3.6.1", "0.10.2.1", "0.8.0", "3.6.1."],
         ["garbage", "3.9", "0.10.3", "2.8-IV7", "", "3.6.", "3.6..", "2.8-IV1.", "0.10.0.",
          "..."]),
        ("leader.replication.throttled.replicas", ["*", ",*", "0:1,1:2", "0:1 , 1:2", ""],
         ["garbage", "0:1,x", "1", "*,1:2"]),
        ("cleanup.policy", ["compact", "compact,delete", "delete , compact", ""],
         ["compact,,delete", "purge"]),
        ("min.cleanable.dirty.ratio", ["0.5", "1", "0", ".25", "5e-1", "0.5d"],
         ["0.2_5", "1.5", "half", "-0.1"]),
    ],
)  # fmt: skip
def test_topic_config_values_are_checked_as_kafka_checks_them(
    name: str, good: list[str], bad: list[str]
) -> None:
    for value in good:
        zk = zk_with_topic()
        assert configs.alter_topic_config(zk, "t", {name: value})[name] == value
    for value in bad:
        zk = zk_with_topic()
        with pytest.raises(InvalidConfigError, match=re.escape(name)):
            configs.alter_topic_config(zk, "t", {name: value})
        assert zk.exists(CONFIG) is None and notifications(zk) == []


def test_compaction_lags_that_cross_are_refused_on_the_resulting_config() -> None:
    # Kafka validates the topic's whole config: a change that makes min > max is refused even
    # when the other lag was set earlier.
    zk = zk_with_topic({"max.compaction.lag.ms": "10"})
    before = zk.get(CONFIG)
    with pytest.raises(InvalidConfigError, match=r"min\.compaction\.lag\.ms"):
        configs.alter_topic_config(zk, "t", {"min.compaction.lag.ms": "100"})
    assert zk.get(CONFIG) == before and notifications(zk) == []
    configs.alter_topic_config(zk, "t", {"min.compaction.lag.ms": "10"})  # equal is fine
    assert stored(zk)["min.compaction.lag.ms"] == "10"
    crossed = {"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "10"}
    with pytest.raises(InvalidConfigError, match=r"min\.compaction\.lag\.ms"):
        create_topic(zk, "u", replica_assignment={0: [1]}, configs=crossed)
    assert zk.exists(paths.topic_path("u")) is None


def test_a_stored_config_kafka_would_refuse_refuses_additions_until_replaced() -> None:
    # Kafka's changeTopicConfig validates the whole result: a value written by hand (or a
    # name unknown to this version) stops additions until the same command mends it.
    for bad in ({"retention.ms": "soon"}, {"no.such.config": "1"}):
        zk = zk_with_topic({**bad, "cleanup.policy": "compact"})
        before = zk.get(CONFIG)
        [(name, _)] = bad.items()
        with pytest.raises(InvalidConfigError) as refused:
            configs.alter_topic_config(zk, "t", {"segment.ms": "1000"})
        assert "topic 't' stores a config Kafka would refuse" in str(refused.value)
        assert f"--delete-config {name}" in str(refused.value)
        assert zk.get(CONFIG) == before and notifications(zk) == []
        # Mended in the same command: deleted, or (a known name) replaced.
        assert configs.alter_topic_config(zk, "t", {"segment.ms": "1000"}, [name]) == {
            "cleanup.policy": "compact",
            "segment.ms": "1000",
        }
        # A removal alone goes through: it only ever takes a problem away.
        zk = zk_with_topic({**bad, "cleanup.policy": "compact"})
        assert configs.alter_topic_config(zk, "t", {}, ["cleanup.policy"]) == bad
    zk = zk_with_topic({"retention.ms": "soon"})
    assert configs.alter_topic_config(zk, "t", {"retention.ms": "1000"}) == {
        "retention.ms": "1000"
    }


def test_a_create_refused_by_zookeeper_is_reported_as_such_not_retried() -> None:
    # Only a race (BADVERSION, NODEEXISTS, NONODE) is retried; NOAUTH (the topics path
    # belongs to another identity) is raised at once, naming itself.
    zk = zk_with_topic()
    zk.ensure_path(paths.BROKERS_IDS)
    zk.create(paths.broker_path(1), codecs.encode_broker_registration(
        BrokerRegistration(1, (EndPoint("PLAINTEXT", "h", 9092),))))  # fmt: skip
    sent: list[list[Op]] = []

    class NoAuthOnTopics:
        def __getattr__(self, name: str) -> object:
            return getattr(zk, name)

        def multi(self, ops: Sequence[Op]) -> list[OpResult]:
            sent.append(list(ops))
            return [
                OpResult(NoAuthError("NOAUTH", op.path))
                if op.path == paths.topic_path("u")
                else OpResult(RolledBackError("ROLLEDBACK", op.path))
                for op in ops
            ]

    with pytest.raises(NoAuthError):
        create_topic(NoAuthOnTopics(), "u", replica_assignment={0: [1]})  # type: ignore[arg-type]
    assert len(sent) == 1


# Every topic config with a value Kafka takes.
EVERY_TOPIC_CONFIG = {
    "cleanup.policy": "delete", "compression.type": "producer", "delete.retention.ms": "1000",
    "file.delete.delay.ms": "1000", "flush.messages": "1000", "flush.ms": "1000",
    "follower.replication.throttled.replicas": "*", "index.interval.bytes": "4096",
    "leader.replication.throttled.replicas": "*", "local.retention.bytes": "-2",
    "local.retention.ms": "-2", "max.compaction.lag.ms": "1000000", "max.message.bytes": "100000",
    "message.downconversion.enable": "true", "message.format.version": "3.0",
    "message.timestamp.after.max.ms": "1000", "message.timestamp.before.max.ms": "1000",
    "message.timestamp.difference.max.ms": "1000", "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5", "min.compaction.lag.ms": "0", "min.insync.replicas": "1",
    "preallocate": "false", "remote.storage.enable": "false", "retention.bytes": "-1",
    "retention.ms": "1000", "segment.bytes": "1048576", "segment.index.bytes": "4096",
    "segment.jitter.ms": "0", "segment.ms": "1000", "unclean.leader.election.enable": "false",
}  # fmt: skip


def test_the_cli_adds_configs_in_the_order_kafkas_config_command_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ConfigCommand parses --add-config into a Properties and copies that, in its iteration
    order, into the stored config's Properties; with enough keys to grow the table twice, the
    written order differs from one Properties filled in the order given."""
    from controller.cli import configs_cmd
    from controller.cli.main import build_parser
    from controller.zk.codecs.key_order import java_properties_order

    given = sorted(EVERY_TOPIC_CONFIG)
    kafka = java_properties_order(java_properties_order(given))
    assert kafka != java_properties_order(given)  # or the test could not fail
    zk = zk_with_topic()
    monkeypatch.setattr(configs_cmd, "run_admin", lambda args, action: action(zk))
    text = ",".join(f"{k}={EVERY_TOPIC_CONFIG[k]}" for k in given)
    argv = ["configs", "alter", "--entity-type", "topics", "--topic", "t", "--add-config", text]
    assert configs_cmd.alter_command(build_parser().parse_args(argv)) == 0
    assert list(stored(zk)) == kafka and stored(zk) == EVERY_TOPIC_CONFIG
