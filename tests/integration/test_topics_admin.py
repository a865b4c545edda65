"""Topic administration against a real ZooKeeper: the admin API and the CLI as a subprocess.

Brokers are registered by writing their ``/brokers/ids/N`` JSON as ephemeral znodes, and
partition state znodes are written by hand in Kafka's JSON, so no broker or controller runs.
Every refused request is checked to leave the whole ZooKeeper tree (data, versions, children)
exactly as it was.
"""

from __future__ import annotations

import json
import random
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.admin import configs, reassignment
from controller.admin import topics as admin
from controller.admin.assignment import (
    AdminError,
    IncompleteRackInfoError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    RackAwareMode,
)
from controller.admin.client import AdminConnectError, admin_session
from controller.core.model import TopicAssignment, TopicPartition
from controller.zk import codecs, paths
from controller.zk.kazoo_port import KazooPort
from tests.integration.admin_support import brokers, cli, one_error_line, snapshot
from tests.support import CLI

TOPIC_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}")


class StartAt(random.Random):
    """An RNG whose draws are all ``value``: a random start index that is known."""

    def __init__(self, value: int) -> None:
        super().__init__(0)
        self.value = value

    def randrange(self, *args: Any, **kwargs: Any) -> int:  # type: ignore[override]
        return self.value


@pytest.fixture
def port(zk_connect: str) -> Iterator[KazooPort]:
    with admin_session(zk_connect, 10_000) as p:
        yield p


def refused(port: KazooPort, error: type[Exception], match: str, call: Callable[[], Any]) -> str:
    """Run ``call``: it must raise ``error`` matching ``match`` and change nothing."""
    before = snapshot(port)
    with pytest.raises(error, match=match) as info:
        call()
    assert snapshot(port) == before
    return str(info.value)


def write_state(port: KazooPort, topic: str, partition: int, doc: dict[str, Any]) -> None:
    port.create(
        paths.partition_state_path(topic, partition),
        json.dumps(doc, separators=(",", ":")).encode(),
        makepath=True,
    )


# --- create ----------------------------------------


def test_create_writes_kafkas_config_and_topic_znodes(port: KazooPort) -> None:
    brokers(port, 0, 1, 2, 3, 4)
    configs = {"retention.ms": "1000", "cleanup.policy": "compact"}
    result = admin.create_topic(port, "orders", 10, 3, configs=configs, rng=StartAt(0))

    config_data, config_stat = port.get("/config/topics/orders")
    # Kafka's config is a java.util.Properties: its hash order puts cleanup.policy first.
    assert (
        config_data == b'{"version":1,"config":{"cleanup.policy":"compact","retention.ms":"1000"}}'
    )
    topic_data, topic_stat = port.get("/brokers/topics/orders")
    assert TOPIC_ID.fullmatch(result.topic_id or "")
    # The classic rack-unaware map (start index 0), in the key order Kafka's Jackson writes.
    expected_partitions = (
        '{"0":[0,1,2],"1":[1,2,3],"2":[2,3,4],"3":[3,4,0],"4":[4,0,1],'
        '"5":[0,2,3],"6":[1,3,4],"7":[2,4,0],"8":[3,0,1],"9":[4,1,2]}'
    )
    assert (
        topic_data
        == (
            f'{{"partitions":{expected_partitions},"topic_id":"{result.topic_id}",'
            '"adding_replicas":{},"removing_replicas":{},"version":3}'
        ).encode()
    )
    assert result.assignment[5] == (0, 2, 3)
    assert result.added == tuple(range(10))
    # Written together, config op first, in one transaction (one zxid).
    assert config_stat.czxid == topic_stat.czxid
    # Creation writes no config-change notification and no partition state (the controller's).
    assert port.exists("/config/changes") is None or port.get_children("/config/changes") == []
    assert port.get_children("/brokers/topics/orders") == []
    assert result.warnings == ()


def test_create_with_empty_config_still_writes_the_config_znode(port: KazooPort) -> None:
    brokers(port, 0)
    admin.create_topic(port, "t", 1, 1)
    assert port.get("/config/topics/t")[0] == b'{"version":1,"config":{}}'


def test_create_overwrites_a_leftover_config_znode(port: KazooPort) -> None:
    # Kafka's setOrCreateEntityConfigs: a config left by an unfinished deletion is replaced.
    brokers(port, 0)
    port.create("/config/topics/t", b'{"version":1,"config":{"retention.ms":"5"}}', makepath=True)
    admin.create_topic(port, "t", 1, 1, configs={"min.insync.replicas": "1"})
    assert port.get("/config/topics/t")[0] == b'{"version":1,"config":{"min.insync.replicas":"1"}}'


def test_topic_ids_are_new_each_time(port: KazooPort) -> None:
    brokers(port, 0)
    ids = {admin.create_topic(port, f"t{i}", 1, 1).topic_id for i in range(20)}
    assert len(ids) == 20
    assert all(TOPIC_ID.fullmatch(i or "") for i in ids)


def test_create_with_manual_assignment(port: KazooPort) -> None:
    brokers(port, 0, 1, 2, 3, 4)
    result = admin.create_topic(port, "test", replica_assignment={0: [0, 1, 2], 1: [1, 2, 3]})
    decoded = codecs.decode_topic_assignment("test", port.get("/brokers/topics/test")[0])
    assert {p: ra.replicas for p, ra in decoded.partitions.items()} == {0: (0, 1, 2), 1: (1, 2, 3)}
    assert decoded.topic_id == result.topic_id


@pytest.mark.parametrize(
    ("assignment", "match"),
    [
        ({0: [0, 0]}, "partition 0 lists broker 0 more than once"),
        ({0: [0, 1], 1: [0]}, r"inconsistent replication factor.*partition\(s\) 1 have 1"),
        ({1: [1, 2], 2: [1, 2]}, "consecutive 0-based"),
        ({0: [1, 2], 3: [1, 2]}, "consecutive 0-based"),
        ({-1: [1, 2], 0: [1, 2]}, "not a non-negative integer"),
        ({0: [0, 7]}, r"broker\(s\) 7 not registered .*registered brokers: 0, 1, 2, 3, 4"),
        ({0: []}, "partition 0 has no replicas"),
        ({}, "consecutive 0-based"),
    ],
)
def test_bad_manual_assignments_change_nothing(
    port: KazooPort, assignment: dict[int, list[int]], match: str
) -> None:
    brokers(port, 0, 1, 2, 3, 4)
    refused(
        port,
        InvalidReplicaAssignmentError,
        match,
        lambda: admin.create_topic(port, "test", replica_assignment=assignment),
    )


def test_create_refusals_change_nothing(port: KazooPort) -> None:
    brokers(port, 0, 1)
    admin.create_topic(port, "existing", 1, 1)
    admin.create_topic(port, "a_b", 1, 1)
    port.create("/admin/delete_topics/doomed", makepath=True)

    def create(name: str, *args: Any, **kwargs: Any) -> Callable[[], Any]:
        return lambda: admin.create_topic(port, name, *args, **kwargs)

    refused(port, admin.TopicExistsError, "'existing' already exists", create("existing", 1, 1))
    refused(port, admin.TopicMarkedForDeletionError, "marked for deletion", create("doomed", 1, 1))
    refused(port, admin.InvalidTopicError, "collides with existing topic.*a_b", create("a.b", 1, 1))
    for bad in ("bad/name", "", ".", "..", "x" * 250, "white space", "ünï"):
        refused(port, admin.InvalidTopicError, "illegal", create(bad, 1, 1))
    message = refused(port, InvalidReplicationFactorError, "larger", create("t", 1, 3))
    assert "3" in message and "(2: 0, 1)" in message
    refused(port, InvalidReplicationFactorError, "larger than 0", create("t", 1, 0))
    refused(port, InvalidPartitionsError, "larger than 0, got 0", create("t", 0, 1))
    refused(port, admin.InvalidConfigError, "unknown topic config name", create(
        "t", 1, 1, configs={"retention.msec": "1"}))  # fmt: skip
    refused(port, admin.InvalidConfigError, r"retention.ms: expected an integer in \[-1", create(
        "t", 1, 1, configs={"retention.ms": "-5"}))  # fmt: skip
    for bad_number in ("--5", "²", "1.5", "", "9223372036854775808"):
        refused(port, admin.InvalidConfigError, "expected an integer", create(
            "t", 1, 1, configs={"segment.ms": bad_number}))  # fmt: skip
    refused(port, admin.InvalidConfigError, "expected true or false", create(
        "t", 1, 1, configs={"preallocate": "yes"}))  # fmt: skip
    refused(port, admin.InvalidConfigError, r"expected a number in \[0, 1\]", create(
        "t", 1, 1, configs={"min.cleanable.dirty.ratio": "1.5"}))  # fmt: skip
    refused(port, admin.InvalidConfigError, "comma-separated list of compact, delete", create(
        "t", 1, 1, configs={"cleanup.policy": "compact,forever"}))  # fmt: skip
    refused(port, admin.InvalidConfigError, "expected one of", create(
        "t", 1, 1, configs={"compression.type": "brotli"}))  # fmt: skip
    refused(port, admin.InvalidRequestError, "one or the other", create(
        "t", 1, None, replica_assignment={0: [0]}))  # fmt: skip
    refused(port, admin.InvalidRequestError, "both required", create("t", 1))
    # Over ZooKeeper's znode size limit: refused before anything is written.
    refused(port, InvalidPartitionsError, "limit of a ZooKeeper znode", create("big", 200_000, 1))


def test_rack_aware_creation(port: KazooPort) -> None:
    racks = {0: "r1", 1: "r2", 2: "r2", 3: "r3", 4: "r3", 5: "r1"}
    brokers(port, *racks, racks=racks)
    result = admin.create_topic(port, "racked", 12, 3)
    for replicas in result.assignment.values():
        assert len({racks[b] for b in replicas}) == 3


def test_partial_rack_information_needs_disable_rack_aware(port: KazooPort) -> None:
    brokers(port, 0, 1, 2, racks={0: "r1", 1: "r2"})
    refused(
        port,
        IncompleteRackInfoError,
        r"broker\(s\) 2 have no rack.*--disable-rack-aware",
        lambda: admin.create_topic(port, "t", 3, 2),
    )
    result = admin.create_topic(port, "t", 3, 2, rack_aware_mode=RackAwareMode.DISABLED)
    assert len(result.assignment) == 3


class ResendingPort:
    """Sends every multi and create twice to the real server: the reply the caller sees is
    the resend's, as when a reply is lost to a connection loss and KazooPort resends the
    request. ``between`` runs between the two (e.g. the controller acting on the first)."""

    def __init__(self, port: KazooPort, between: Callable[[], object] = lambda: None) -> None:
        self._port = port
        self._between = between

    def multi(self, ops: Any) -> Any:
        self._port.multi(ops)
        self._between()
        return self._port.multi(ops)

    def create(self, *args: Any, **kwargs: Any) -> Any:
        self._port.create(*args, **kwargs)
        self._between()
        return self._port.create(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._port, name)


def test_a_resent_write_that_already_succeeded_is_a_success(port: KazooPort) -> None:
    brokers(port, 0, 1)
    resending: Any = ResendingPort(port)
    created = admin.create_topic(resending, "t", 2, 2)
    decoded = codecs.decode_topic_assignment("t", port.get("/brokers/topics/t")[0])
    assert decoded.topic_id == created.topic_id
    added = admin.add_partitions(resending, "t", 3)
    assert added.added == (2,)
    assert (
        len(codecs.decode_topic_assignment("t", port.get("/brokers/topics/t")[0]).partitions) == 3
    )
    # A real conflict is still one: another writer's topic is not mistaken for ours.
    with pytest.raises(admin.TopicExistsError):
        admin.create_topic(resending, "t", 1, 1)
    # Config alters: the resend meets our own write, which is then found done.
    configs.alter_topic_config(resending, "t", {"retention.ms": "5", "segment.ms": "9"}, [])
    assert configs.alter_topic_config(resending, "t", {}, ["retention.ms"]) == {"segment.ms": "9"}
    unclean = "unclean.leader.election.enable"
    assert configs.alter_broker_default_config(resending, {unclean: "true"}, []) == {
        unclean: "true"
    }
    assert configs.alter_broker_default_config(resending, {}, [unclean]) == {}
    # A reassignment submitted through ZooKeeper finds its own request, not "one running".
    reassignment.write_reassignment_znode(resending, {TopicPartition("t", 0): (1, 0)})
    assert port.exists(paths.REASSIGN_PARTITIONS) is not None


def test_a_deletion_completed_before_its_resend_is_a_success(port: KazooPort) -> None:
    brokers(port, 0)
    admin.create_topic(port, "t", 1, 1)

    def controller_deletes_it() -> None:
        port.delete(paths.topic_path("t"), recursive=True)
        port.delete(paths.delete_topic_path("t"))

    admin.delete_topic(ResendingPort(port, controller_deletes_it), "t")  # type: ignore[arg-type]
    assert port.exists(paths.topic_path("t")) is None


# --- add partitions ----------------------------------------


def test_add_partitions_keeps_existing_and_topic_id(port: KazooPort) -> None:
    # Kafka's AddPartitionsTest.testReplicaPlacementAllServers: partition 0 is [2,3,0,1].
    brokers(port, 0, 1, 2, 3)
    created = admin.create_topic(port, "new-topic3", replica_assignment={0: [2, 3, 0, 1]})
    version = port.get("/brokers/topics/new-topic3")[1].version
    result = admin.add_partitions(port, "new-topic3", 7)
    data, stat = port.get("/brokers/topics/new-topic3")
    decoded = codecs.decode_topic_assignment("new-topic3", data)
    assert stat.version == version + 1
    assert decoded.topic_id == result.topic_id == created.topic_id
    assert result.added == (1, 2, 3, 4, 5, 6)
    replicas = {p: ra.replicas for p, ra in decoded.partitions.items()}
    assert replicas[0] == (2, 3, 0, 1)
    assert [replicas[p][0] for p in range(1, 7)] == [3, 0, 1, 2, 3, 0]
    assert replicas[1] == (3, 2, 0, 1)
    assert data.startswith(b'{"partitions":{"0":[2,3,0,1],') and b'"topic_id":' in data


def test_add_partitions_with_manual_assignment(port: KazooPort) -> None:
    brokers(port, 0, 1, 2, 3)
    admin.create_topic(port, "new-topic2", replica_assignment={0: [1, 2]})
    admin.add_partitions(port, "new-topic2", 3, {1: [0, 1], 2: [2, 3]})
    decoded = codecs.decode_topic_assignment(
        "new-topic2", port.get("/brokers/topics/new-topic2")[0]
    )
    assert {p: ra.replicas for p, ra in decoded.partitions.items()} == {
        0: (1, 2),
        1: (0, 1),
        2: (2, 3),
    }


def test_add_partitions_to_a_topic_without_id_keeps_it_without(port: KazooPort) -> None:
    # A v1 znode from an old tool: the controller assigns the id, not the admin tool.
    brokers(port, 0, 1)
    port.create("/brokers/topics/old", b'{"version":1,"partitions":{"0":[0,1]}}', makepath=True)
    admin.add_partitions(port, "old", 2)
    data = port.get("/brokers/topics/old")[0]
    assert json.loads(data) == {
        "version": 3,
        "partitions": {"0": [0, 1], "1": [1, 0]},
        "adding_replicas": {},
        "removing_replicas": {},
    }


def test_add_partitions_refusals_change_nothing(port: KazooPort) -> None:
    brokers(port, 0, 1, 2)
    admin.create_topic(port, "t", replica_assignment={0: [0, 1], 1: [1, 2]})
    admin.create_topic(port, "doomed", 1, 1)
    port.create("/admin/delete_topics/doomed", makepath=True)
    moving = (
        b'{"version":3,"topic_id":"AAAAAAAAAAAAAAAAAAAAAg","partitions":{"0":[0,1,2]},'
        b'"adding_replicas":{"0":[2]},"removing_replicas":{}}'
    )
    port.create("/brokers/topics/moving", moving)

    def add(name: str, total: int, assignment: Any = None) -> Callable[[], Any]:
        return lambda: admin.add_partitions(port, name, total, assignment)

    refused(port, InvalidPartitionsError, "currently has 2 partitions.*requested 1", add("t", 1))
    refused(port, InvalidPartitionsError, "already has 2 partitions", add("t", 2))
    refused(port, admin.UnknownTopicError, "'nope' does not exist", add("nope", 3))
    refused(port, admin.TopicMarkedForDeletionError, "marked for deletion", add("doomed", 2))
    refused(port, admin.ReassignmentInProgressError, r"partition\(s\) 0", add("moving", 2))
    refused(port, InvalidReplicaAssignmentError, "by 2 but 1 assignments", add("t", 4, {2: [0, 1]}))
    refused(port, InvalidReplicaAssignmentError, "new partitions are 2", add("t", 3, {5: [0, 1]}))
    refused(
        port, InvalidReplicaAssignmentError, "partition 0 has 2 replicas", add("t", 3, {2: [0]})
    )
    refused(port, InvalidReplicaAssignmentError, r"broker\(s\) 9", add("t", 3, {2: [0, 9]}))
    refused(port, admin.InvalidRequestError, "internal topic", add("__consumer_offsets", 60))
    # As Kafka's createPartitions: only a reassignment of this topic refuses the addition,
    # not an empty or unreadable znode, nor another topic's entries.
    port.create(paths.REASSIGN_PARTITIONS, codecs.encode_reassignment({}))
    assert add("t", 3)().added == (2,)
    port.set(paths.REASSIGN_PARTITIONS, b"{oops")
    assert add("t", 4)().added == (3,)
    port.set(paths.REASSIGN_PARTITIONS, codecs.encode_reassignment({TopicPartition("t", 1): (1, 0),
                                                                    TopicPartition("u", 0): (0,)}))
    refused(port, admin.ReassignmentInProgressError, r"partition\(s\) 1 in /admin", add("t", 5))


# --- describe, list, brokers ----------------------------------------


def test_describe_reads_leader_and_isr_from_state_znodes(port: KazooPort) -> None:
    brokers(port, 1, 2, 3)
    admin.create_topic(
        port,
        "t",
        replica_assignment={0: [1, 2, 3], 1: [3, 1, 2], 2: [2, 1, 3], 3: [1, 2, 3]},
        configs={"min.insync.replicas": "2"},
    )
    port.delete(paths.broker_path(3))  # broker 3 has gone away since
    write_state(port, "t", 0, {"controller_epoch": 7, "leader": 1, "version": 1,
                               "leader_epoch": 4, "isr": [1, 3, 2]})  # fmt: skip
    port.set(
        "/brokers/topics/t/partitions/0/state", port.get("/brokers/topics/t/partitions/0/state")[0]
    )
    write_state(port, "t", 1, {"controller_epoch": 7, "leader": -1, "version": 1,
                               "leader_epoch": 9, "isr": [3]})  # fmt: skip
    write_state(port, "t", 2, {"controller_epoch": 8, "leader": 3, "version": 1, "leader_epoch": 2,
                               "isr": [3], "leader_recovery_state": 1})  # fmt: skip
    # partition 3: no state znode yet (the controller has not initialised it)

    (t,) = admin.describe_topics(port, ["t"])
    assert t.configs == {"min.insync.replicas": "2"}
    assert t.replication_factor == 3 and not t.marked_for_deletion
    p0, p1, p2, p3 = t.partitions
    assert (p0.leader, p0.isr, p0.leader_epoch, p0.controller_epoch) == (1, (1, 3, 2), 4, 7)
    assert p0.partition_epoch == 1  # the state znode's zkVersion
    assert p0.offline_replicas == (3,)
    assert not p0.under_replicated and not p0.unavailable and not p0.offline
    assert (p1.leader, p1.isr, p1.offline, p1.unavailable, p1.under_replicated) == (
        -1, (3,), True, True, True)  # fmt: skip
    assert p2.leader == 3 and p2.leader_recovering and p2.unavailable and not p2.offline
    assert p3.leader is None and p3.isr == () and p3.offline and p3.partition_epoch is None


def test_describe_reports_reassignment_deletion_and_bad_state(port: KazooPort) -> None:
    brokers(port, 0, 1, 2)
    port.create(
        "/brokers/topics/r",
        b'{"version":3,"topic_id":"AAAAAAAAAAAAAAAAAAAAAg","partitions":{"0":[2,0,1]},'
        b'"adding_replicas":{"0":[2]},"removing_replicas":{"0":[1]}}',
        makepath=True,
    )
    write_state(port, "r", 0, {"controller_epoch": 1, "leader": 0, "version": 1,
                               "leader_epoch": 0, "isr": [0, 1]})  # fmt: skip
    admin.create_topic(port, "bad", 1, 1)
    port.create("/brokers/topics/bad/partitions/0/state", b"{not json", makepath=True)
    port.create("/admin/delete_topics/r", makepath=True)

    bad, r = admin.describe_topics(port)
    (p,) = r.partitions
    assert r.marked_for_deletion and r.topic_id == "AAAAAAAAAAAAAAAAAAAAAg"
    assert (p.adding_replicas, p.removing_replicas) == ((2,), (1,))
    assert r.replication_factor == 2 and not p.under_replicated  # RF excludes adding replicas
    assert bad.partitions[0].state_error and "invalid JSON" in bad.partitions[0].state_error
    with pytest.raises(admin.UnknownTopicError, match="nope, other do not exist"):
        admin.describe_topics(port, ["r", "other", "nope"])


def test_list_topics_and_brokers(port: KazooPort) -> None:
    assert admin.list_topics(port) == []
    assert admin.list_brokers(port) == admin.ClusterBrokers(None, ())
    brokers(port, 2, 0, racks={0: "rack-a"})
    admin.create_topic(port, "b", 1, 1, rack_aware_mode=RackAwareMode.SAFE)
    admin.create_topic(port, "a", 1, 1, rack_aware_mode=RackAwareMode.DISABLED)
    admin.delete_topic(port, "b")
    assert admin.list_topics(port) == [
        admin.TopicListing("a", False),
        admin.TopicListing("b", True),
    ]
    port.create(paths.CONTROLLER, codecs.encode_controller(2, 1700000000000), ephemeral=True)
    cluster = admin.list_brokers(port)
    assert cluster.controller_id == 2
    assert [(b.id, b.broker.rack if b.broker else "?") for b in cluster.brokers] == [
        (0, "rack-a"),
        (2, None),
    ]
    assert cluster.brokers[0].epoch == port.exists(paths.broker_path(0)).czxid  # type: ignore[union-attr]


# --- delete ----------------------------------------


def test_delete_topic_creates_the_marker(port: KazooPort) -> None:
    brokers(port, 0)
    admin.create_topic(port, "t", 1, 1)
    admin.delete_topic(port, "t")
    data, _ = port.get("/admin/delete_topics/t")
    assert data == b""
    refused(port, admin.TopicMarkedForDeletionError, "already marked",
            lambda: admin.delete_topic(port, "t"))  # fmt: skip
    refused(port, admin.UnknownTopicError, "'nope' to delete does not exist",
            lambda: admin.delete_topic(port, "nope"))  # fmt: skip
    # Existence first, then the internal-topic rule (Kafka's order).
    refused(port, admin.UnknownTopicError, "'__transaction_state' to delete does not exist",
            lambda: admin.delete_topic(port, "__transaction_state"))  # fmt: skip
    port.create(paths.topic_path("__transaction_state"), codecs.encode_topic_assignment(
        TopicAssignment("__transaction_state", None, {})))  # fmt: skip
    refused(port, admin.InvalidRequestError, "internal topic",
            lambda: admin.delete_topic(port, "__transaction_state"))  # fmt: skip
    refused(port, admin.InvalidTopicError, "cannot be used as a znode name",
            lambda: admin.delete_topic(port, "a/b"))  # fmt: skip


# --- connection ----------------------------------------


def test_missing_chroot_is_refused(zk_server: Any) -> None:
    with (
        pytest.raises(AdminConnectError, match="chroot /no-such-chroot-x does not exist"),
        admin_session(f"{zk_server.hosts}/no-such-chroot-x", 5000),
    ):
        pass


# --- CLI ----------------------------------------


def test_cli_end_to_end(zk_connect: str, port: KazooPort) -> None:
    brokers(port, 1, 2, 3)
    zk = ["--zookeeper", zk_connect]
    r = cli("topics", "create", "t", "--partitions", "3", "--replication-factor", "2",
            "--config", "retention.ms = 1000", *zk)  # fmt: skip
    assert (r.returncode, r.stdout, r.stderr) == (0, "Created topic t.\n", "")
    assert port.get("/config/topics/t")[0] == b'{"version":1,"config":{"retention.ms":"1000"}}'

    r = cli("topics", "create", "x.y", "--replica-assignment", "1:2, 2:3", *zk)
    assert r.returncode == 0 and "WARNING: Due to limitations in metric names" in r.stderr
    assert codecs.decode_topic_assignment("x.y", port.get("/brokers/topics/x.y")[0]).partitions[
        1
    ].replicas == (2, 3)

    # ZK_CONNECT instead of --zookeeper.
    r = cli("topics", "list", env={"ZK_CONNECT": zk_connect})
    assert (r.returncode, r.stdout) == (0, "t\nx.y\n")

    write_state(port, "t", 0, {"controller_epoch": 3, "leader": 2, "version": 1,
                               "leader_epoch": 5, "isr": [2]})  # fmt: skip
    (desc,) = admin.describe_topics(port, ["t"])
    r = cli("topics", "describe", "t", *zk)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == (
        f"Topic: t\tTopicId: {desc.topic_id}\tPartitionCount: 3\tReplicationFactor: 2\t"
        "Configs: retention.ms=1000"
    )
    p0 = desc.partitions[0]
    assert lines[1] == (
        f"\tTopic: t\tPartition: 0\tLeader: 2\tReplicas: {','.join(map(str, p0.replicas))}\t"
        "Isr: 2\tLeaderEpoch: 5\tOffline: "
    )
    assert lines[2].startswith("\tTopic: t\tPartition: 1\tLeader: none\t")
    assert lines[2].endswith("\tIsr: \tLeaderEpoch: none\tOffline: ")

    r = cli("topics", "describe", "--under-replicated-partitions", *zk)
    assert [line.split("\t")[1:3] for line in r.stdout.splitlines()] == [
        ["Topic: t", "Partition: 0"], ["Topic: t", "Partition: 1"], ["Topic: t", "Partition: 2"],
        ["Topic: x.y", "Partition: 0"], ["Topic: x.y", "Partition: 1"],
    ]  # fmt: skip
    r = cli("topics", "describe", "t", "--json", *zk)
    doc = json.loads(r.stdout)["topics"][0]
    assert doc["partitions"][0]["leader"] == 2 and doc["partitions"][0]["partition_epoch"] == 0
    assert doc["partitions"][1]["offline"] is True and doc["topic_id"] == desc.topic_id

    r = cli("topics", "alter", "t", "--partitions", "5", *zk)
    assert r.returncode == 0 and r.stdout == "Adding partitions succeeded!\n"
    after = codecs.decode_topic_assignment("t", port.get("/brokers/topics/t")[0])
    assert len(after.partitions) == 5 and after.topic_id == desc.topic_id
    full = ",".join(":".join(map(str, after.partitions[p].replicas)) for p in range(5))
    r = cli("topics", "alter", "t", "--partitions", "6", "--replica-assignment", f"{full},3:1", *zk)
    assert r.returncode == 0, r.stderr
    r = cli("topics", "alter", "t", "--partitions", "7", "--replica-assignment", "1:3", *zk)
    assert r.returncode == 0, r.stderr
    final = codecs.decode_topic_assignment("t", port.get("/brokers/topics/t")[0])
    assert (final.partitions[5].replicas, final.partitions[6].replicas) == ((3, 1), (1, 3))

    r = cli("topics", "delete", "t", *zk)
    assert r.returncode == 0 and r.stdout.startswith("Topic t is marked for deletion.\n")
    r = cli("topics", "delete", "t", *zk)
    assert (r.returncode, r.stdout) == (0, "Topic t is already marked for deletion.\n")
    assert cli("topics", "list", *zk).stdout == "t - marked for deletion\nx.y\n"

    port.create(paths.CONTROLLER, codecs.encode_controller(3, 1), ephemeral=True)
    r = cli("brokers", "list", *zk)
    assert r.returncode == 0
    assert r.stdout.splitlines()[0].startswith("Broker: 1\tRack: none\tEpoch: ")
    assert r.stdout.splitlines()[0].endswith("\tEndpoints: PLAINTEXT://host1:9092")
    assert r.stdout.splitlines()[-1] == "Controller: 3"
    doc = json.loads(cli("brokers", "list", "--json", *zk).stdout)
    assert doc["controller"] == 3 and [b["id"] for b in doc["brokers"]] == [1, 2, 3]


def test_cli_takes_kafkas_topic_option(zk_connect: str, port: KazooPort) -> None:
    """kafka-topics.sh names the topic with --topic (a regular expression for list and
    describe); scripts ported from it work unchanged."""
    brokers(port, 1, 2)
    zk = ["--zookeeper", zk_connect]
    for name in ("orders", "orders-dlq", "audit"):
        r = cli("topics", "create", "--topic", name, "--partitions", "1",
                "--replication-factor", "1", *zk)  # fmt: skip
        assert (r.returncode, r.stdout) == (0, f"Created topic {name}.\n"), r.stderr
    assert cli("topics", "list", "--topic", "orders.*", *zk).stdout == "orders\norders-dlq\n"
    assert cli("topics", "list", "--topic", "audit,orders", *zk).stdout == "audit\norders\n"
    r = cli("topics", "describe", "--topic", "orders", *zk)
    assert [line.split("\t")[0] for line in r.stdout.splitlines() if line[:1] != "\t"] == [
        "Topic: orders"
    ]
    r = cli("topics", "alter", "--topic", "orders", "--partitions", "2", *zk)
    assert r.returncode == 0, r.stderr
    r = cli("topics", "delete", "--topic", "audit", *zk)
    assert r.stdout.startswith("Topic audit is marked for deletion.\n")
    one_error_line(cli("topics", "describe", "--topic", "nope.*", *zk),
                   "Topic 'nope.*' does not exist as expected")  # fmt: skip
    one_error_line(cli("topics", "list", "--topic", "(", *zk), "not a valid regular expression")
    one_error_line(cli("topics", "delete", *zk), "a topic is required: NAME or --topic NAME")
    one_error_line(cli("topics", "delete", "orders", "--topic", "audit", *zk),
                   "two topic names given")  # fmt: skip


def test_cli_alter_and_delete_take_topic_as_a_regex_as_kafka_does(
    zk_connect: str, port: KazooPort
) -> None:
    """kafka-topics.sh --alter/--delete --topic is an include list, as for --list: every topic
    whose whole name matches; NAME stays literal. An internal topic matched refuses the
    whole deletion."""
    brokers(port, 1, 2)
    zk = ["--zookeeper", zk_connect]
    for name in ("logs.a", "logs.b", "logs_c", "logsx", "other", "__consumer_offsets"):
        r = cli("topics", "create", name, "--partitions", "1", "--replication-factor", "1", *zk)
        assert r.returncode == 0, r.stderr

    r = cli("topics", "alter", "--topic", "logs\\..*", "--partitions", "2", *zk)
    assert (r.returncode, r.stdout) == (0, "Adding partitions succeeded!\n" * 2), r.stderr
    counts = {n: len(admin.describe_topics(port, [n])[0].partitions)
              for n in ("logs.a", "logs.b", "logs_c", "logsx")}  # fmt: skip
    assert counts == {"logs.a": 2, "logs.b": 2, "logs_c": 1, "logsx": 1}

    before = snapshot(port)
    one_error_line(
        cli("topics", "delete", "--topic", ".*", *zk),
        "matches Kafka internal topic(s) __consumer_offsets", "nothing was deleted",
    )
    one_error_line(cli("topics", "delete", "--topic", "nope.*", *zk),
                   "Topic 'nope.*' does not exist as expected")  # fmt: skip
    one_error_line(cli("topics", "alter", "--topic", "(", "--partitions", "3", *zk),
                   "not a valid regular expression")  # fmt: skip
    assert snapshot(port) == before
    r = cli("topics", "delete", "--topic", "nope.*", "--if-exists", *zk)
    assert (r.returncode, r.stdout) == (0, "")

    # As in Kafka, '.' is any character: "logs.c" matches logs_c; "," means "|".
    r = cli("topics", "delete", "--topic", "logs.c, other", *zk)
    assert r.returncode == 0, r.stderr
    marked = [line for line in r.stdout.splitlines() if line.startswith("Topic ")]
    assert marked == ["Topic logs_c is marked for deletion.", "Topic other is marked for deletion."]
    assert sorted(port.get_children(paths.DELETE_TOPICS)) == ["logs_c", "other"]
    r = cli("topics", "delete", "--topic", "logs_c|logsx", *zk)
    assert r.stdout.splitlines()[0] == "Topic logs_c is already marked for deletion."
    assert r.stdout.splitlines()[1] == "Topic logsx is marked for deletion."
    # NAME is one literal name.
    one_error_line(cli("topics", "delete", "logs.*", *zk), "'logs.*' to delete does not exist")


def test_cli_describe_takes_kafkas_report_options(zk_connect: str, port: KazooPort) -> None:
    """kafka-topics.sh's --under-min-isr-partitions, --at-min-isr-partitions,
    --topics-with-overrides, --exclude-internal and --if-exists (Kafka's DescribeOptions)."""
    brokers(port, 1, 2, 3)
    zk = ["--zookeeper", zk_connect]
    for name, config in (("a", []), ("b", ["--config", "min.insync.replicas=3"]),
                         ("__consumer_offsets", [])):  # fmt: skip
        r = cli("topics", "create", name, "--replica-assignment", "1:2:3,2:3:1,3:1:2", *config,
                *zk)  # fmt: skip
        assert r.returncode == 0, r.stderr
    state = {"controller_epoch": 1, "version": 1, "leader_epoch": 0}
    for topic in ("a", "b", "__consumer_offsets"):
        write_state(port, topic, 0, {**state, "leader": 1, "isr": [1, 2, 3]})
        write_state(port, topic, 1, {**state, "leader": 2, "isr": [2]})
        write_state(port, topic, 2, {**state, "leader": -1, "isr": [3]})

    def partitions(*args: str) -> list[str]:
        r = cli("topics", "describe", *args, *zk)
        assert r.returncode == 0, r.stderr
        return [":".join(part.split(": ")[1] for part in line.split("\t")[1:3])
                for line in r.stdout.splitlines()]  # fmt: skip

    # min.insync.replicas: b's override (3); else Kafka's default, 1.
    assert partitions("--under-min-isr-partitions", "--exclude-internal") == [
        "a:2", "b:1", "b:2"]  # fmt: skip
    assert partitions("--at-min-isr-partitions", "--topic", "a|b") == ["a:1", "a:2", "b:0"]
    # ... or the cluster default in /config/brokers/<default>.
    port.create(paths.BROKER_DEFAULT_CONFIG,
                b'{"version":1,"config":{"min.insync.replicas":"2"}}', makepath=True)  # fmt: skip
    assert partitions("--under-min-isr-partitions", "a") == ["a:1", "a:2"]
    assert partitions("--at-min-isr-partitions", "a") == []
    r = cli("topics", "describe", "--topics-with-overrides", *zk)
    assert [line.split("\t")[0] for line in r.stdout.splitlines()] == ["Topic: b"]
    assert "Configs: min.insync.replicas=3" in r.stdout
    listed = cli("topics", "list", "--exclude-internal", *zk).stdout
    assert listed == "a\nb\n"
    r = cli("topics", "describe", "--exclude-internal", *zk)
    topic_lines = [line.split("\t")[0] for line in r.stdout.splitlines() if line[:1] != "\t"]
    assert topic_lines == ["Topic: a", "Topic: b"]
    assert "__consumer_offsets" not in r.stdout
    # --if-exists: absent topics are no error.
    r = cli("topics", "describe", "--topic", "nope", "--if-exists", *zk)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = cli("topics", "describe", "nope", "a", "--if-exists", *zk)
    assert r.returncode == 0 and r.stdout.startswith("Topic: a\t")
    # A topic still being deleted exists, for --if-not-exists as for Kafka's.
    cli("topics", "delete", "a", *zk)
    r = cli("topics", "create", "a", "--replica-assignment", "1", "--if-not-exists", *zk)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    one_error_line(cli("topics", "create", "a", "--replica-assignment", "1", *zk),
                   "marked for deletion")  # fmt: skip


def test_cli_errors_are_one_line_and_change_nothing(zk_connect: str, port: KazooPort) -> None:
    brokers(port, 1, 2)
    zk = ["--zookeeper", zk_connect]
    assert cli("topics", "create", "t", "--replica-assignment", "1", *zk).returncode == 0
    before = snapshot(port)
    cases = [
        (["topics", "create", "t", "--partitions", "1", "--replication-factor", "1"],
         ["topic 't' already exists"]),
        (["topics", "create", "u", "--partitions", "2", "--replication-factor", "3"],
         ["replication factor 3", "brokers (2: 1, 2)"]),
        (["topics", "create", "u", "--partitions", "x", "--replication-factor", "1"],
         ["--partitions", "invalid int value: 'x'"]),
        (["topics", "create", "u", "--partitions", "1"], ["--replication-factor are required"]),
        (["topics", "create", "u", "--partitions", "1", "--replica-assignment", "1"],
         ["cannot be combined"]),
        (["topics", "create", "u", "--replica-assignment", "1:a"], ["'a'", "not a broker id"]),
        (["topics", "create", "u", "--replica-assignment", "1:1"], ["more than once"]),
        (["topics", "create", "u", "--replica-assignment", "1:9"], ["broker(s) 9 not registered"]),
        (["topics", "create", "bad/name", "--partitions", "1", "--replication-factor", "1"],
         ["illegal", "'/'"]),
        (["topics", "create", "u", "--partitions", "1", "--replication-factor", "1",
          "--config", "nope"], ["invalid --config 'nope'"]),
        (["topics", "create", "u", "--partitions", "1", "--replication-factor", "1",
          "--config", "retention.ms=1=2"], ["invalid --config 'retention.ms=1=2'", "one '='"]),
        (["topics", "alter", "t", "--partitions", "1"], ["already has 1 partitions"]),
        (["topics", "alter", "nope", "--partitions", "3"], ["nope do not exist"]),
        (["topics", "alter", "t", "--partitions", "3", "--replica-assignment", "1"],
         ["lists 1 partitions: expected 3", "or 2"]),
        (["topics", "alter", "t", "--partitions", "2", "--replica-assignment", "2,1"],
         ["gives partition 0 replicas 2 but it has 1"]),
        (["topics", "describe", "nope"], ["topic(s) nope do not exist"]),
        (["topics", "delete", "nope"], ["'nope' to delete does not exist"]),
        (["topics", "delete", "t", "--session-timeout-ms", "soon"], ["invalid int value"]),
    ]  # fmt: skip
    for args, fragments in cases:
        one_error_line(cli(*args, *zk), *fragments)
    assert snapshot(port) == before
    # --if-not-exists / --if-exists make the expected absence or presence a success.
    assert cli("topics", "create", "t", "--partitions", "1", "--replication-factor", "1",
               "--if-not-exists", *zk).returncode == 0  # fmt: skip
    assert cli("topics", "delete", "nope", "--if-exists", *zk).returncode == 0
    assert snapshot(port) == before


def test_cli_refuses_at_once_what_cannot_work(
    zk_server: Any, zk_connect: str, port: KazooPort, tmp_path: Path
) -> None:
    """Found by running the tools where operators get them wrong: each is one line, exit 1,
    and nothing written."""
    # The chroot left out of the connect string: the ensemble's root, where no cluster lives.
    unclean = ["configs", "alter", "--entity-type", "brokers", "--entity-default",
               "--add-config", "unclean.leader.election.enable=true"]  # fmt: skip
    with admin_session(zk_server.hosts, 10_000) as root:
        assert root.exists(paths.BROKERS_IDS) is None
        one_error_line(cli(*unclean, "--zookeeper", zk_server.hosts),
                       "no Kafka cluster here (/brokers/ids does not exist)",
                       "is the chroot missing")  # fmt: skip
        assert root.exists(paths.BROKER_DEFAULT_CONFIG) is None
    # A chroot given is taken as meant, even before the cluster's first start (nothing in it).
    assert port.exists(paths.BROKERS_IDS) is None
    assert cli(*unclean, "--zookeeper", zk_connect).returncode == 0
    assert port.exists(paths.BROKER_DEFAULT_CONFIG) is not None
    before = snapshot(port)
    utf16 = tmp_path / "plan.json"
    utf16.write_text('{"version":1,"partitions":[]}', encoding="utf-16")
    one_error_line(
        cli("reassign", "execute", "--reassignment-json-file", str(utf16),
            "--zookeeper", zk_connect),
        f"the reassignment file {utf16} is not UTF-8 text",
    )  # fmt: skip
    one_error_line(cli("reassign", "list", "--timeout-s", "0", "--zookeeper", zk_connect),
                   "--timeout-s", "expected more than 0 seconds")  # fmt: skip
    one_error_line(cli("elect", "--type", "bogus", "--all", "--zookeeper", zk_connect),
                   "zk-controller elect: error: argument --type", "invalid choice")  # fmt: skip
    assert snapshot(port) == before


def test_ctrl_c_stops_a_waiting_tool_without_a_traceback(free_port: Callable[[], int]) -> None:
    waiting = subprocess.Popen(
        [*CLI, "topics", "list", "--zookeeper", f"127.0.0.1:{free_port()}",
         "--session-timeout-ms", "60000", "--verbose"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert waiting.stderr is not None
    first = waiting.stderr.readline()  # kazoo's first log line: past the imports, connecting
    waiting.send_signal(signal.SIGINT)
    _, err = waiting.communicate(timeout=30)
    assert first, err
    assert waiting.returncode == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def test_cli_connection_errors(zk_server: Any, free_port: Callable[[], int]) -> None:
    one_error_line(cli("topics", "list"), "--zookeeper", "ZK_CONNECT")
    one_error_line(cli("topics", "list", "--zookeeper", "host:notaport"), "invalid", "notaport")
    one_error_line(
        cli("brokers", "list", "--zookeeper", f"{zk_server.hosts}/missing-chroot-y"),
        "chroot /missing-chroot-y does not exist",
    )
    unreachable = f"127.0.0.1:{free_port()}"
    one_error_line(
        cli("topics", "list", "--zookeeper", unreachable, "--session-timeout-ms", "1500"),
        f"could not connect to ZooKeeper at {unreachable}",
    )
    # A name DNS says does not exist will not resolve within the wait (RFC 6761: .invalid
    # never does); a resolver that cannot answer now (no DNS here: EAI_AGAIN) is waited on.
    try:
        socket.getaddrinfo("zk.invalid", None)
        pytest.fail("zk.invalid resolved")
    except socket.gaierror as exc:
        definite = exc.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", None))
    started = time.monotonic()
    wait_ms = "60000" if definite else "1500"
    refused = cli("topics", "list", "--zookeeper", "zk.invalid:2181", "--session-timeout-ms",
                  wait_ms)  # fmt: skip
    if definite:
        one_error_line(
            refused, "cannot resolve the ZooKeeper host(s) zk.invalid: check the connect string"
        )
        assert time.monotonic() - started < 30  # not the 60 s wait
    else:
        one_error_line(refused, "within 1.5s (cannot resolve zk.invalid)")
    one_error_line(
        cli("topics", "list", "--zookeeper", f"zk.invalid:2181,{unreachable}",
            "--session-timeout-ms", "1500"),
        f"could not connect to ZooKeeper at zk.invalid:2181,{unreachable} within 1.5s "
        "(cannot resolve zk.invalid)",
    )  # fmt: skip


# --- an unreadable broker registration ----------------------------------------

BAD_REGISTRATION = b'{"version":5,"host":"h","port":"x"}'


def test_an_unreadable_registration_is_left_out_not_fatal(port: KazooPort) -> None:
    # The controller ignores a registration it cannot read; the tools must not refuse every
    # topic until it is repaired, only a request that names that broker.
    brokers(port, 0, 1, 2)
    port.create(paths.broker_path(7), BAD_REGISTRATION)
    created = admin.create_topic(port, "auto", 6, 3)
    assert {b for r in created.assignment.values() for b in r} == {0, 1, 2}
    (warning,) = created.warnings
    assert warning.startswith("broker 7 left out") and "/brokers/ids/7" in warning
    manual = admin.create_topic(port, "manual", replica_assignment={0: [0, 1]})
    assert manual.assignment == {0: (0, 1)}
    grown = admin.add_partitions(port, "auto", 8)
    assert grown.added == (6, 7)
    assert {b for p in (6, 7) for b in grown.assignment[p]} <= {0, 1, 2}
    assert any("/brokers/ids/7" in w for w in grown.warnings)
    refused(
        port,
        admin.CorruptMetadataError,
        "/brokers/ids/7",
        lambda: admin.create_topic(port, "named", replica_assignment={0: [0, 7]}),
    )
    refused(
        port,
        admin.CorruptMetadataError,
        "/brokers/ids/7",
        lambda: admin.add_partitions(port, "manual", 2, {1: [7, 0]}),
    )


def test_reassignment_tools_leave_an_unreadable_registration_out(port: KazooPort) -> None:
    brokers(port, 0, 1, 2)
    port.create(paths.broker_path(7), BAD_REGISTRATION)
    admin.create_topic(port, "t", replica_assignment={0: [0, 1]})
    reassignment.check_brokers_registered(port, [1, 2])
    _, proposed = reassignment.generate_assignment(port, ["t"], [1, 2], rack_aware=False)
    assert {b for r in proposed.values() for b in r} <= {1, 2}
    with pytest.raises(AdminError, match="cannot read broker 7"):
        reassignment.check_brokers_registered(port, [1, 7])
    with pytest.raises(AdminError, match="cannot read broker 7"):
        reassignment.generate_assignment(port, ["t"], [1, 7], rack_aware=False)
