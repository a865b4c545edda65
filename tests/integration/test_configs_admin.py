"""``zk-controller configs`` against a real ZooKeeper, run as a subprocess: Kafka's bytes in
``/config/topics/T`` and ``/config/changes``, Kafka's output lines, and refusals that change
nothing in the tree. What a controller does with the notification is tested in
``test_elections.py`` (an unclean election turned on for a topic)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from controller.admin.client import admin_session
from controller.admin.topics import create_topic
from controller.zk import paths
from controller.zk.kazoo_port import KazooPort
from tests.integration.admin_support import brokers, cli, one_error_line, snapshot


@pytest.fixture
def port(zk_connect: str) -> Iterator[KazooPort]:
    with admin_session(zk_connect, 10_000) as p:
        brokers(p, 1, 2)
        create_topic(p, "t", 1, 2, configs={"retention.ms": "1000"})
        yield p


def notifications(port: KazooPort) -> list[bytes]:
    names = sorted(port.get_children(paths.CONFIG_CHANGES))
    return [port.get(f"{paths.CONFIG_CHANGES}/{name}")[0] for name in names]


def test_alter_and_describe(zk_connect: str, port: KazooPort) -> None:
    zk = ["--zookeeper", zk_connect]
    r = cli("configs", "alter", "--topic", "t",
            "--add-config", "unclean.leader.election.enable=true,cleanup.policy=[compact,delete]",
            *zk)  # fmt: skip
    assert (r.returncode, r.stdout, r.stderr) == (0, "Completed updating config for topic t.\n", "")
    assert port.get("/config/topics/t")[0] == (  # in the hash order of Kafka's Properties
        b'{"version":1,"config":{"cleanup.policy":"compact,delete","retention.ms":"1000",'
        b'"unclean.leader.election.enable":"true"}}'
    )
    assert notifications(port) == [b'{"version":2,"entity_path":"topics/t"}']

    r = cli("configs", "describe", "--topic", "t", *zk)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == (
        "Configs for topic 't' are cleanup.policy=compact,delete,retention.ms=1000,"
        "unclean.leader.election.enable=true\n"
    )

    # Kafka's spelling of the entity; deleting overrides.
    r = cli("configs", "alter", "--entity-type", "topics", "--entity-name", "t",
            "--delete-config", "retention.ms,cleanup.policy", *zk)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert port.get("/config/topics/t")[0] == (
        b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}'
    )
    assert len(notifications(port)) == 2

    # Every topic with a config znode, as JSON; topics without overrides show an empty config.
    create_topic(port, "u", 1, 1)
    r = cli("configs", "describe", "--json", *zk)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {
        "topics": [
            {"topic": "t", "config": {"unclean.leader.election.enable": "true"}, "error": None},
            {"topic": "u", "config": {}, "error": None},
        ]
    }


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--topic", "t", "--add-config", "no.such.config=1"], ["unknown topic config name"]),
        (["--topic", "t", "--add-config", "retention.ms=soon"], ["retention.ms"]),
        (["--topic", "t", "--delete-config", "segment.ms"], ["does not set: segment.ms"]),
        (["--topic", "missing", "--add-config", "retention.ms=1"], ["'missing' does not exist"]),
        (["--topic", "t", "--add-config", "retention.ms"], ["KEY=VALUE"]),
        (["--topic", "t"], ["--add-config or --delete-config"]),
        (["--add-config", "retention.ms=1"], ["exactly one --topic"]),
        (
            ["--topic", "t", "--add-config", "retention.ms=1", "--delete-config", "retention.ms"],
            ["both added and deleted"],
        ),
    ],
)
def test_refused_alters_name_the_problem_and_change_nothing(
    zk_connect: str, port: KazooPort, args: list[str], fragments: list[str]
) -> None:
    before = snapshot(port)
    r = cli("configs", "alter", *args, "--zookeeper", zk_connect)
    one_error_line(r, *fragments)
    assert r.stdout == ""
    assert snapshot(port) == before


def test_describe_of_an_unknown_topic_or_an_unreadable_config(
    zk_connect: str, port: KazooPort
) -> None:
    one_error_line(
        cli("configs", "describe", "--topic", "missing", "--zookeeper", zk_connect),
        "topic 'missing' does not exist",
    )
    port.set("/config/topics/t", b'{"version":1,"config":{"retention.ms":1000}}')
    r = cli("configs", "describe", "--zookeeper", zk_connect)
    line = one_error_line(r, "topic t", "/config/topics/t", "retention.ms")
    assert "a string value" in line
    # An unreadable config is never overwritten by an alter.
    alter = ["--topic", "t", "--add-config", "segment.ms=1000", "--zookeeper", zk_connect]
    one_error_line(cli("configs", "alter", *alter), "fixed or removed")
    assert port.get("/config/topics/t")[0] == b'{"version":1,"config":{"retention.ms":1000}}'


def test_the_brokers_cluster_default(zk_connect: str, port: KazooPort) -> None:
    zk = ["--zookeeper", zk_connect]
    brokers_default = ["--entity-type", "brokers", "--entity-default"]
    r = cli("configs", "alter", *brokers_default,
            "--add-config", "unclean.leader.election.enable=true", *zk)  # fmt: skip
    assert (r.returncode, r.stdout, r.stderr) == (
        0,
        "Completed updating config for broker <default>.\n",
        "",
    )
    assert port.get("/config/brokers/<default>")[0] == (
        b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}'
    )
    assert notifications(port) == [b'{"version":2,"entity_path":"brokers/<default>"}']
    r = cli("configs", "describe", *brokers_default, *zk)
    assert r.stdout == "Configs for broker '<default>' are unclean.leader.election.enable=true\n"
    r = cli("configs", "describe", *brokers_default, "--json", *zk)
    assert json.loads(r.stdout) == {
        "brokers": [
            {
                "broker": "<default>",
                "config": {"unclean.leader.election.enable": "true"},
                "error": None,
            }
        ]
    }


def test_describe_per_broker_configs(zk_connect: str, port: KazooPort) -> None:
    """Per-broker entities (where reassignment throttles are) are described, not altered."""
    zk = ["--zookeeper", zk_connect]
    port.ensure_path(paths.CONFIG_BROKERS)
    port.create("/config/brokers/10", b'{"version":1,"config":{"a.rate":"5"}}')
    port.create("/config/brokers/2", b'{"version":1,"config":{"b.rate":"6","a.rate":"7"}}')
    port.create("/config/brokers/<default>", b'{"version":1,"config":{}}')
    r = cli("configs", "describe", "--entity-type", "brokers", "--entity-name", "2", *zk)
    assert (r.returncode, r.stdout) == (0, "Configs for broker '2' are a.rate=7,b.rate=6\n")
    r = cli("configs", "describe", "--entity-type", "brokers", "--json", *zk)
    rows = json.loads(r.stdout)["brokers"]
    assert [(row["broker"], row["config"]) for row in rows] == [
        ("<default>", {}), ("2", {"a.rate": "7", "b.rate": "6"}), ("10", {"a.rate": "5"}),
    ]
    r = cli("configs", "describe", "--entity-type", "brokers", "--entity-name", "3", *zk)
    assert (r.returncode, r.stdout) == (0, "Configs for broker '3' are \n")
    one_error_line(
        cli("configs", "describe", "--entity-type", "brokers", "--entity-name", "x", *zk),
        "must be a valid integer broker id",
    )


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--entity-type", "brokers", "--entity-default", "--add-config", "log.retention.ms=1"],
         ["only unclean.leader.election.enable"]),
        (["--entity-type", "brokers", "--entity-name", "1", "--add-config",
          "unclean.leader.election.enable=true"], ["per-broker configs", "kafka-configs.sh"]),
        (["--entity-type", "brokers", "--add-config", "unclean.leader.election.enable=true"],
         ["needs --entity-default"]),
        (["--entity-default", "--add-config", "retention.ms=1"], ["topics have no default"]),
    ],
)  # fmt: skip
def test_refused_brokers_alters_change_nothing(
    zk_connect: str, port: KazooPort, args: list[str], fragments: list[str]
) -> None:
    before = snapshot(port)
    one_error_line(cli("configs", "alter", *args, "--zookeeper", zk_connect), *fragments)
    assert snapshot(port) == before


def test_names_and_stored_values_that_cannot_be_used_give_one_line(
    zk_connect: str, port: KazooPort
) -> None:
    for name in ("orders/", "..", ""):
        one_error_line(
            cli("configs", "describe", "--topic", name, "--zookeeper", zk_connect),
            "cannot be used as a znode name",
        )
    # A value an old tool or a hand edit stored is reported by key and value, as Kafka's
    # LogConfig.validate reports it, and the znode is left as it was.
    stored = b'{"version":1,"config":{"min.compaction.lag.ms":"1h"}}'
    port.set("/config/topics/t", stored)
    alter = ["--topic", "t", "--add-config", "retention.ms=5", "--zookeeper", zk_connect]
    one_error_line(cli("configs", "alter", *alter), "min.compaction.lag.ms", "'1h'")
    assert port.get("/config/topics/t")[0] == stored
