"""Partition reassignment end to end (KIP-455, reference §2.7): a real ZooKeeper, controller
daemons, reference brokers over real gRPC; through Kafka's ``/admin/reassign_partitions``, the
admin gRPC API and the ``zk-controller reassign`` CLI.

Reference brokers replicate nothing but follow Kafka's ISR rules: a follower that fetches from
its leader is added to the ISR through AlterPartition, which completes a reassignment. Tests
that need a reassignment to stay in progress ``hold`` the target broker's fetcher (a follower
that has not caught up) and ``release`` it later. ``catch_up`` plays instead the leader of a
ZooKeeper-ISR-mode Kafka broker: it writes the grown ISR into the state znode (conditional
write, leader and controller epochs unchanged), which the controller's watch on reassigning
partitions notices. Neither path bumps the leader epoch, so the figures of §2.7.4 are the
controller's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest
from kazoo.exceptions import BadVersionError

from controller.admin.controller_client import ControllerClient
from controller.api.errors import Errors, controller_hint
from controller.api.v1 import admin_pb2, admin_pb2_grpc
from controller.core.controller import Controller
from controller.core.events import Probe
from controller.core.model import TopicPartition
from controller.daemon import ControllerDaemon
from controller.zk import paths
from controller.zk.kazoo_port import KazooPort
from tests.cluster import Cluster
from tests.support import scrape, wait_until

pytestmark = pytest.mark.zookeeper

CLI = str(Path(sys.executable).with_name("zk-controller"))
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


@pytest.fixture
def client(cluster: Cluster) -> Iterator[ControllerClient]:
    port = KazooPort(cluster.connect, session_timeout=10)
    port.start()
    c = ControllerClient(port, timeout_s=20)
    yield c
    c.close()
    port.stop()


# -- helpers -------------------------------------------------------------------------------


def topic_znode(cluster: Cluster, topic: str = "t") -> dict[str, Any]:
    return json.loads(cluster.zk.get(paths.topic_path(topic))[0])


def wait_topic(cluster: Cluster, topic: str = "t", **expected: Any) -> dict[str, Any]:
    """Wait until the topic znode's fields (partitions, adding_replicas, ...) equal ``expected``."""

    def matches() -> dict[str, Any] | None:
        doc = topic_znode(cluster, topic)
        return doc if all(doc.get(k) == v for k, v in expected.items()) else None

    return wait_until(matches, what=f"/brokers/topics/{topic} with {expected}")


def hold(cluster: Cluster, *brokers: int) -> None:
    """These brokers' followers stop fetching: they do not join any ISR."""
    for b in brokers:
        cluster.brokers[b].replication.fetcher.pause()


def release(cluster: Cluster, *brokers: int) -> None:
    for b in brokers:
        cluster.brokers[b].replication.fetcher.resume()


def catch_up(cluster: Cluster, tp: TopicPartition, replicas: Sequence[int]) -> None:
    """``replicas`` caught up with the leader: once each hosts ``tp``, add them to the ISR
    the way a ZooKeeper-ISR-mode leader does (conditional write of the state znode)."""
    for b in replicas:
        wait_until(lambda b=b: tp in cluster.hosted(b), what=f"broker {b} hosts {tp}")
    path = paths.partition_state_path(tp.topic, tp.partition)

    def expanded() -> bool:
        data, stat = cluster.zk.get(path)
        state = json.loads(data)
        missing = [r for r in replicas if r not in state["isr"]]
        if not missing:
            return True
        state["isr"] = state["isr"] + missing
        try:
            cluster.zk.set(path, json.dumps(state).encode(), version=stat.version)
        except BadVersionError:
            return False  # the controller wrote in between: read again
        return True

    wait_until(expanded, what=f"ISR of {tp} expanded with {list(replicas)}")


def write_zk_reassignment(cluster: Cluster, plan: Mapping[TopicPartition, Sequence[int]]) -> None:
    """What Kafka's pre-2.4 kafka-reassign-partitions.sh --zookeeper writes."""
    doc = {"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(r)}
        for tp, r in plan.items()
    ]}  # fmt: skip
    cluster.zk.create(paths.REASSIGN_PARTITIONS, json.dumps(doc).encode(), makepath=True)


def alter(
    client: ControllerClient, targets: Mapping[TopicPartition, Sequence[int] | None]
) -> dict[TopicPartition, tuple[int, str]]:
    request = admin_pb2.AlterPartitionReassignmentsRequest(
        partitions=[
            admin_pb2.ReassignablePartition(
                topic=tp.topic, partition=tp.partition, replicas=list(r or ()), cancel=r is None
            )
            for tp, r in targets.items()
        ],
        timeout_ms=10_000,
    )
    response = client.admin("AlterPartitionReassignments", request)
    assert response.error_code == Errors.NONE, response
    return {
        TopicPartition(r.topic, r.partition): (r.error_code, r.error_message)
        for r in response.results
    }


def ongoing(client: ControllerClient) -> dict[TopicPartition, tuple[list[int], ...]]:
    response = client.admin(
        "ListPartitionReassignments", admin_pb2.ListPartitionReassignmentsRequest()
    )
    assert response.error_code == Errors.NONE, response
    return {
        TopicPartition(r.topic, r.partition): (
            list(r.replicas),
            list(r.adding_replicas),
            list(r.removing_replicas),
        )
        for r in response.reassignments
    }


def cli(*args: str, zk: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ZK_CONNECT": zk}
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=60)


def write_json(path: Path, doc: Any) -> str:
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return str(path)


def reassignment_events(daemon: ControllerDaemon) -> float:
    """How many reassignment events (ZooKeeper, API, ISR change) the controller processed."""
    assert daemon.http is not None
    series = 'kafka_controller_event_processing_seconds_count{state="AlterPartitionReassignment"}'
    return scrape(f"{daemon.http.url}/metrics").get(series, 0.0)


def two_brokers_topic_on_1(cluster: Cluster) -> int:
    """Brokers 1 and 2, controller 0, t-0 on [1]; returns the initial leader epoch."""
    for b in (1, 2):
        cluster.start_broker(b)
    cluster.start_controller(0)
    cluster.active_controller()
    cluster.create_topic("t", {0: [1]})
    return cluster.wait_state("t", 0, leader=1)["leader_epoch"]


# -- the ZooKeeper path and §2.7.4's leader-epoch figures ----------------------------------


def test_zk_reassignment_moves_replica_and_leader_with_leader_epoch_plus_3(cluster: Cluster):
    e = two_brokers_topic_on_1(cluster)
    hold(cluster, 2)
    write_zk_reassignment(cluster, {T0: [2]})
    # U1/A1: the full RS (target first) with AR/RR is persisted; one epoch bump.
    wait_topic(cluster, partitions={"0": [2, 1]}, adding_replicas={"0": [2]},
               removing_replicas={"0": [1]})  # fmt: skip
    cluster.wait_state("t", 0, leader_epoch=e + 1, leader=1)
    wait_until(lambda: T0 in cluster.hosted(2), what="broker 2 started the adding replica")
    assert cluster.hosted(2)[T0].is_new
    assert cluster.state("t", 0)["isr"] == [1]
    # Broker 2 catches up: its leader adds it to the ISR (AlterPartition), which completes it.
    release(cluster, 2)
    # B3 (leader 1 not in the target: reassign election) and one B4 ISR removal: +3 in all.
    final = cluster.wait_state("t", 0, leader=2, isr=[2])
    assert final["leader_epoch"] == e + 3
    wait_topic(cluster, partitions={"0": [2]}, adding_replicas={}, removing_replicas={})
    wait_until(lambda: not cluster.zk.exists(paths.REASSIGN_PARTITIONS), what="znode removed")
    # The old replica was stopped and deleted; the new one leads; brokers know it.
    wait_until(lambda: T0 not in cluster.hosted(1), what="broker 1 deleted t-0")
    wait_until(lambda: cluster.metadata(1)[T0].leader == 2, what="broker 1 metadata")
    assert cluster.hosted(2)[T0].leader_epoch == e + 3
    # The creation watch is re-armed: a second request through ZooKeeper is seen too.
    hold(cluster, 1)
    write_zk_reassignment(cluster, {T0: [1]})
    wait_topic(cluster, partitions={"0": [1, 2]}, adding_replicas={"0": [1]},
               removing_replicas={"0": [2]})  # fmt: skip


def test_offline_target_halts_at_plus_1_and_resumes_at_plus_4_when_it_returns(cluster: Cluster):
    e = two_brokers_topic_on_1(cluster)
    cluster.kill_broker(2)
    wait_until(
        lambda: cluster.active_controller().controller.call(
            lambda c: 2 not in c.context.live_broker_ids()
        ),
        what="broker 2 seen dead",
    )
    write_zk_reassignment(cluster, {T0: [2]})
    wait_topic(cluster, partitions={"0": [2, 1]}, adding_replicas={"0": [2]})
    state = cluster.wait_state("t", 0, leader_epoch=e + 1)
    assert (state["leader"], state["isr"]) == (1, [1])
    daemon = cluster.active_controller()
    assert daemon.controller.call(lambda c: T0 in c.context.partitions_being_reassigned)
    # The target broker returns: broker start-up resumes the (incomplete) reassignment, A1 again.
    cluster.start_broker(2)
    cluster.wait_state("t", 0, leader_epoch=e + 2, leader=1)
    catch_up(cluster, T0, [2])
    final = cluster.wait_state("t", 0, leader=2, isr=[2])
    assert final["leader_epoch"] == e + 4
    wait_topic(cluster, partitions={"0": [2]}, adding_replicas={}, removing_replicas={})
    wait_until(lambda: not cluster.zk.exists(paths.REASSIGN_PARTITIONS), what="znode removed")


def test_zk_request_entries_that_cannot_start_are_removed_and_the_rest_proceeds(cluster: Cluster):
    two_brokers_topic_on_1(cluster)
    cluster.create_topic("u", {0: [1]})
    cluster.wait_state("u", 0, leader=1)
    unknown_partition = TopicPartition("t", 7)
    unknown_topic = TopicPartition("nope", 0)
    hold(cluster, 2)
    write_zk_reassignment(cluster, {unknown_partition: [2], T0: [2, 1], unknown_topic: [1]})
    wait_topic(cluster, partitions={"0": [2, 1]}, adding_replicas={"0": [2]},
               removing_replicas={})  # fmt: skip

    def remaining() -> list[dict[str, Any]] | None:
        data = json.loads(cluster.zk.get(paths.REASSIGN_PARTITIONS)[0])
        return data["partitions"] if len(data["partitions"]) == 1 else None

    # Kafka removes the failed entries (UNKNOWN_TOPIC_OR_PARTITION) and keeps the live one.
    assert wait_until(remaining, what="failed entries removed") == [
        {"topic": "t", "partition": 0, "replicas": [2, 1]}
    ]
    # This time the leader writes the ISR itself (ZooKeeper-ISR mode); the watch completes it.
    catch_up(cluster, T0, [2])
    wait_topic(cluster, partitions={"0": [2, 1]}, adding_replicas={}, removing_replicas={})
    wait_until(lambda: not cluster.zk.exists(paths.REASSIGN_PARTITIONS), what="znode removed")
    # Leader 1 is in the target and alive: it stays, with a new epoch (B3).
    assert cluster.state("t", 0)["leader"] == 1
    assert topic_znode(cluster, "u")["partitions"] == {"0": [1]}


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b'{"version":"v2","partitions":[]}',
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2],"x":1}]}',
    ],
    ids=["not-json", "bad-version", "unknown-field"],
)
def test_malformed_zk_request_is_ignored_and_nothing_is_lost(cluster: Cluster, client, content):
    two_brokers_topic_on_1(cluster)
    hold(cluster, 2)
    before = cluster.zk.get(paths.topic_path("t"))[0]
    cluster.zk.create(paths.REASSIGN_PARTITIONS, content, makepath=True)
    # Kafka logs it and treats it as empty: no reassignment, the znode is left for the operator.
    daemon = cluster.active_controller()
    wait_until(lambda: reassignment_events(daemon) >= 1, what="the request was processed")
    assert daemon.controller.call(lambda c: not c.context.partitions_being_reassigned)
    assert cluster.zk.get(paths.REASSIGN_PARTITIONS)[0] == content
    assert cluster.zk.get(paths.topic_path("t"))[0] == before
    # `reassign list` says it is there and ignored (it listed nothing, silently).
    listed = cli("reassign", "list", zk=cluster.connect)
    assert listed.returncode == 0, listed.stderr
    assert "No partition reassignments found." in listed.stdout
    assert "WARNING: the controller ignores the pending ZooKeeper request" in listed.stderr
    assert f"delete {paths.REASSIGN_PARTITIONS}" in listed.stderr
    # The controller keeps serving; the next API reassignment also clears the stale znode
    # (Kafka's maybeRemoveFromZkReassignment finds nothing left in it).
    assert alter(client, {T0: [2]}) == {T0: (Errors.NONE, "")}
    wait_topic(cluster, partitions={"0": [2, 1]}, adding_replicas={"0": [2]})
    wait_until(lambda: not cluster.zk.exists(paths.REASSIGN_PARTITIONS), what="znode removed")


@pytest.mark.parametrize(
    "replicas",
    [b"[]", b"[2,2]", b"[-1]", b'"2"'],
    ids=["empty-replicas", "duplicate-brokers", "negative-broker", "not-a-list"],
)
def test_an_invalid_zk_entry_is_refused_and_removed_and_the_valid_one_runs(
    cluster: Cluster, client, replicas
):
    two_brokers_topic_on_1(cluster)
    cluster.create_topic("u", {0: [1]})
    cluster.wait_state("u", 0, leader=1)
    hold(cluster, 2)
    before = cluster.zk.get(paths.topic_path("t"))[0]
    cluster.zk.create(
        paths.REASSIGN_PARTITIONS,
        b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":' + replicas + b"},"
        b'{"topic":"u","partition":0,"replicas":[2,1]}]}',
        makepath=True,
    )
    # u-0 is reassigned; t-0's entry is refused (INVALID_REPLICA_ASSIGNMENT, logged) and
    # removed from the znode, which keeps only u-0's request.
    wait_topic(cluster, "u", partitions={"0": [2, 1]}, adding_replicas={"0": [2]})

    def remaining() -> list[dict[str, Any]] | None:
        data = json.loads(cluster.zk.get(paths.REASSIGN_PARTITIONS)[0])
        return data["partitions"] if len(data["partitions"]) == 1 else None

    assert wait_until(remaining, what="the invalid entry removed") == [
        {"topic": "u", "partition": 0, "replicas": [2, 1]}
    ]
    assert cluster.zk.get(paths.topic_path("t"))[0] == before
    daemon = cluster.active_controller()
    assert daemon.controller.call(lambda c: T0 not in c.context.partitions_being_reassigned)


# -- the admin API -------------------------------------------------------------------------


def test_api_reassignment_list_and_cancel_restores_the_original_replicas(cluster: Cluster, client):
    for b in (1, 2, 3):
        cluster.start_broker(b)
    cluster.start_controller(0)
    cluster.create_topic("t", {0: [1, 2], 1: [2, 3]})
    e = cluster.wait_state("t", 0, leader=1, isr=[1, 2])["leader_epoch"]
    cluster.wait_state("t", 1, leader=2)
    assert ongoing(client) == {}
    hold(cluster, 3)
    assert alter(client, {T0: [3]}) == {T0: (Errors.NONE, "")}
    assert ongoing(client) == {T0: ([3, 1, 2], [3], [1, 2])}
    wait_until(lambda: T0 in cluster.hosted(3), what="broker 3 started the adding replica")
    assert cluster.hosted(3)[T0].is_new
    # Cancel: back to the origin replicas; the adding replica is stopped and deleted.
    assert alter(client, {T0: None}) == {T0: (Errors.NONE, "")}
    assert ongoing(client) == {}
    wait_topic(cluster, partitions={"0": [1, 2], "1": [2, 3]}, adding_replicas={},
               removing_replicas={})  # fmt: skip
    wait_until(lambda: T0 not in cluster.hosted(3), what="broker 3 deleted t-0")
    state = cluster.wait_state("t", 0, leader=1, isr=[1, 2])
    assert state["leader_epoch"] == e + 2  # A1 of the start, then B3 of the cancel
    # Nothing to cancel any more.
    code, message = alter(client, {T0: None})[T0]
    assert code == Errors.NO_REASSIGNMENT_IN_PROGRESS
    assert "t-0" in message


def test_api_rejects_invalid_requests_with_clear_errors_and_changes_nothing(
    cluster: Cluster, client
):
    for b in (1, 2):
        cluster.start_broker(b)
    cluster.start_controller(0)
    cluster.create_topic("t", {0: [1], 1: [2]})
    cluster.wait_state("t", 0, leader=1)
    cluster.create_topic("doomed", {0: [1]})
    cluster.wait_state("doomed", 0, leader=1)
    before = cluster.zk.get(paths.topic_path("t"))[0]
    results = alter(
        client,
        {
            TopicPartition("nope", 0): [1],
            TopicPartition("t", 9): [1],
            TopicPartition("t", -1): [1],
            T0: [],
            T1: [2, 2],
        },
    )
    expected = {
        TopicPartition("nope", 0): (Errors.UNKNOWN_TOPIC_OR_PARTITION, "does not exist"),
        TopicPartition("t", 9): (Errors.UNKNOWN_TOPIC_OR_PARTITION, "does not exist"),
        TopicPartition("t", -1): (Errors.UNKNOWN_TOPIC_OR_PARTITION, "does not exist"),
        T0: (Errors.INVALID_REPLICA_ASSIGNMENT, "Empty replica list"),
        T1: (Errors.INVALID_REPLICA_ASSIGNMENT, "Duplicate replica ids"),
    }
    for tp, (code, fragment) in expected.items():
        assert results[tp][0] == code, (tp, results[tp])
        assert fragment in results[tp][1], (tp, results[tp])
    for target, fragment in (([-3], "Invalid broker id"), ([5], "not alive")):
        code, message = alter(client, {T0: target})[T0]
        assert (code, fragment in message) == (Errors.INVALID_REPLICA_ASSIGNMENT, True), message
    # A topic queued for deletion cannot be reassigned (deletion halted by a dead replica).
    cluster.kill_broker(2)
    cluster.create_topic("held", {0: [1, 2]})
    cluster.zk.create(paths.delete_topic_path("held"), makepath=True)
    wait_until(
        lambda: cluster.active_controller().controller.call(
            lambda c: c.context.is_topic_queued_up_for_deletion("held")
        ),
        what="held queued for deletion",
    )
    code, _ = alter(client, {TopicPartition("held", 0): [1]})[TopicPartition("held", 0)]
    assert code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert cluster.zk.get(paths.topic_path("t"))[0] == before
    assert ongoing(client) == {}
    # Still serving: a valid request goes through.
    assert alter(client, {T1: [1]}) == {T1: (Errors.NONE, "")}


def test_standby_answers_not_controller_naming_the_active_one(cluster: Cluster, client):
    cluster.start_broker(1)
    active = cluster.start_controller(0)
    cluster.active_controller()
    standby = cluster.start_controller(1)
    wait_until(lambda: standby.controller.active_controller_id == 0, what="standby knows 0")
    with grpc.insecure_channel(standby.grpc.address) as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        for method, request in (
            ("ListPartitionReassignments", admin_pb2.ListPartitionReassignmentsRequest()),
            ("AlterPartitionReassignments", admin_pb2.AlterPartitionReassignmentsRequest()),
        ):
            response, call = getattr(stub, method).with_call(request, timeout=10)
            assert response.error_code == Errors.NOT_CONTROLLER, method
            assert controller_hint(call.trailing_metadata()) == 0
    assert active.controller.is_active
    assert ongoing(client) == {}  # the client finds the active controller by itself


# -- controller moves -------------------------------------------------------------------------


def test_failover_mid_reassignment_is_completed_by_the_new_controller(cluster: Cluster, client):
    e = two_brokers_topic_on_1(cluster)
    cluster.start_controller(1)
    hold(cluster, 2)
    assert alter(client, {T0: [2]}) == {T0: (Errors.NONE, "")}
    cluster.wait_state("t", 0, leader_epoch=e + 1)
    cluster.stop_controller(0)
    new = cluster.active_controller()
    assert new.config.controller_id == 1
    # The new controller found AR/RR in the topic znode and resumed (A1 again).
    state = cluster.wait_state("t", 0, leader_epoch=e + 2)
    assert state["controller_epoch"] == 2
    assert ongoing(client) == {T0: ([2, 1], [2], [1])}
    release(cluster, 2)
    final = cluster.wait_state("t", 0, leader=2, isr=[2])
    assert final["leader_epoch"] == e + 4
    wait_topic(cluster, partitions={"0": [2]}, adding_replicas={}, removing_replicas={})
    wait_until(lambda: T0 not in cluster.hosted(1), what="broker 1 deleted t-0")


def test_a_deposed_controller_is_fenced_and_the_client_follows_the_new_one(
    cluster: Cluster, client
):
    two_brokers_topic_on_1(cluster)
    old = cluster.active_controller()
    cluster.start_controller(1)
    hold(cluster, 2)
    before = cluster.zk.get(paths.topic_path("t"))[0]
    gate, blocked = threading.Event(), threading.Event()

    def block(_: Controller) -> None:
        blocked.set()
        gate.wait(20)

    old.controller.events.put(Probe(fn=block))
    assert blocked.wait(10)
    # A reassignment is queued on the old controller, which is then deposed: /controller goes
    # away and controller 1 wins while controller 0's event thread is busy.
    outcome: dict[str, Any] = {}
    caller = threading.Thread(target=lambda: outcome.update(r=alter(client, {T0: [2]})))
    caller.start()
    wait_until(lambda: old.controller.events.queue_size() >= 1, what="request queued")
    cluster.zk.delete(paths.CONTROLLER)
    wait_until(lambda: cluster.controllers[1].controller.is_active, what="controller 1 elected")
    assert cluster.zk.get(paths.topic_path("t"))[0] == before
    gate.set()
    caller.join(30)
    # Controller 0's write was fenced (its epoch is stale): it answered NOT_CONTROLLER, and the
    # client re-sent the request to controller 1, which did it.
    assert outcome["r"] == {T0: (Errors.NONE, "")}
    wait_until(lambda: not old.controller.is_active, what="controller 0 resigned")
    wait_topic(cluster, partitions={"0": [2, 1]}, adding_replicas={"0": [2]})
    assert cluster.state("t", 0)["controller_epoch"] == 2


# -- the CLI --------------------------------------------------------------------------------


def execute_and_wait(zk: str, plan: str, *flags: str) -> subprocess.Popen[str]:
    """``reassign execute --wait`` of ``plan`` in the background, its output captured."""
    return subprocess.Popen(
        [CLI, "reassign", "execute", "--reassignment-json-file", plan, "--wait", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "ZK_CONNECT": zk},
    )  # fmt: skip


def test_cli_generate_execute_wait_verify_list(cluster: Cluster, tmp_path: Path):
    for b in (1, 2, 3):
        cluster.start_broker(b)
    cluster.start_controller(0)
    cluster.create_topic("t", {0: [1], 1: [2]})
    cluster.wait_state("t", 0, leader=1)
    cluster.wait_state("t", 1, leader=2)
    zk = cluster.connect
    topics = write_json(tmp_path / "topics.json", {"version": 1, "topics": [{"topic": "t"}]})

    generated = cli("reassign", "generate", "--topics-to-move-json-file", topics,
                    "--broker-list", "3", zk=zk)  # fmt: skip
    assert generated.returncode == 0, generated.stderr
    lines = generated.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[1] == (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["any"]},'
        '{"topic":"t","partition":1,"replicas":[2],"log_dirs":["any"]}]}'
    )
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])
    assert [(p["partition"], p["replicas"]) for p in proposed["partitions"]] == [(0, [3]), (1, [3])]
    plan = write_json(tmp_path / "plan.json", lines[4])

    hold(cluster, 3)
    execute = execute_and_wait(zk, plan, "--throttle", "5000")
    try:
        wait_topic(cluster, adding_replicas={"0": [3], "1": [3]})
        assert config_of(cluster, "topics", "t") == {
            "leader.replication.throttled.replicas": "0:1,1:2",
            "follower.replication.throttled.replicas": "0:3,1:3",
        }
        listed = cli("reassign", "list", zk=zk)
        assert listed.stdout.splitlines() == [
            "Current partition reassignments:",
            "t-0: replicas: 3,1. adding: 3. removing: 1.",
            "t-1: replicas: 3,2. adding: 3. removing: 2.",
        ]
        verify = cli("reassign", "verify", "--reassignment-json-file", plan, zk=zk)
        assert verify.returncode == 0, verify.stderr
        assert "Reassignment of partition t-0 is still in progress." in verify.stdout
        # stdout is Kafka's status lines only; the summary and details go to stderr.
        assert verify.stdout.splitlines() == [
            "Status of partition reassignment:",
            "Reassignment of partition t-0 is still in progress.",
            "Reassignment of partition t-1 is still in progress.",
        ]
        assert "0 of 2 partition reassignments completed." in verify.stderr
        assert "t-0: replicas: 3,1  adding: 3" in verify.stderr
        catch_up(cluster, T0, [3])
        cluster.wait_state("t", 0, leader=3, isr=[3])
        verify = cli("reassign", "verify", "--reassignment-json-file", plan, "--json", zk=zk)
        status = json.loads(verify.stdout)
        assert (status["completed"], status["in_progress"]) == (1, 1)
        release(cluster, 3)
        out, err = execute.communicate(timeout=30)
    finally:
        if execute.poll() is None:
            execute.kill()
    assert execute.returncode == 0, err
    assert "Successfully started partition reassignments for t-0,t-1" in out
    assert "Save this to use as the --reassignment-json-file option during rollback" in out
    assert "Reassignment of partition t-0 is completed." in out
    assert "Reassignment of partition t-1 is completed." in out
    # --wait ends as verify would: nothing else moves, so the throttle goes.
    assert out.splitlines()[-2:] == [
        "Clearing broker-level throttles on brokers 1,2,3",
        "Clearing topic-level throttles on topic t",
    ]
    assert config_of(cluster, "topics", "t") == {}
    assert config_of(cluster, "brokers", "3") == {}
    assert topic_znode(cluster)["partitions"] == {"0": [3], "1": [3]}
    assert cli("reassign", "list", zk=zk).stdout.strip() == "No partition reassignments found."
    verify = cli("reassign", "verify", "--reassignment-json-file", plan, zk=zk)
    assert "2 of 2 partition reassignments completed." in verify.stderr


def t0_on_1_2_with_a_plan_to_3_2(cluster: Cluster, tmp_path: Path) -> tuple[str, str]:
    """Brokers 1-3, t-0 on [1,2] led by 1, broker 3 held back (a move to it stays in
    progress); returns the ZooKeeper connect string and a plan moving t-0 to [3,2]."""
    for b in (1, 2, 3):
        cluster.start_broker(b)
    cluster.start_controller(0)
    cluster.create_topic("t", {0: [1, 2]})
    cluster.wait_state("t", 0, leader=1)
    hold(cluster, 3)
    plan = write_json(
        tmp_path / "plan.json",
        {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [3, 2]}]},
    )
    return cluster.connect, plan


def test_cli_wait_says_which_target_brokers_are_down(cluster: Cluster, tmp_path: Path):
    """A move onto a dead broker waits for it; --wait used to sit silent on "Waiting for ..."
    (with no limit by default), which looked like a slow copy."""
    zk, plan = t0_on_1_2_with_a_plan_to_3_2(cluster, tmp_path)
    execute = execute_and_wait(zk, plan, "--wait-timeout-s", "15", "--throttle", "100000")
    try:
        wait_topic(cluster, partitions={"0": [3, 2, 1]}, adding_replicas={"0": [3]})
        cluster.kill_broker(3)
        out, err = execute.communicate(timeout=60)
    finally:
        if execute.poll() is None:
            execute.kill()
    assert execute.returncode == 1, err
    lines = out.splitlines()
    said = "Broker 3 of the plan is not registered (down?): a move onto it finishes once it " \
        "is back"  # fmt: skip
    assert lines.count(said) == 1, out  # once, not at every poll
    assert lines.index(said) > lines.index("Waiting for 1 partition reassignment to finish...")
    assert "Gave up waiting after 15s: 1 still in progress." in lines
    # The throttles it set stay (the end of the wait clears them): said, with the way out.
    assert "The reassignment goes on; the replication throttles this execute set stay" in err


def test_cli_execute_via_zookeeper_and_cancel(cluster: Cluster, tmp_path: Path):
    zk, plan = t0_on_1_2_with_a_plan_to_3_2(cluster, tmp_path)
    done = cli("reassign", "execute", "--reassignment-json-file", plan, "--via-zookeeper", zk=zk)
    assert done.returncode == 0, done.stderr
    wait_topic(cluster, partitions={"0": [3, 2, 1]}, adding_replicas={"0": [3]})
    # Started, though still listed in the znode until it completes (Kafka's rule).
    verified = cli("reassign", "verify", "--reassignment-json-file", plan, zk=zk)
    assert "Reassignment of partition t-0 is still in progress." in verified.stdout
    assert "not started yet" not in verified.stderr
    # A second submission while one is in progress is refused without --additional.
    again = cli("reassign", "execute", "--reassignment-json-file", plan, zk=zk)
    assert again.returncode == 1
    assert "existing partition assignment" in again.stderr
    assert "can also be used to change the throttle" in again.stderr
    # Through ZooKeeper too, and refused before any throttle is written.
    again = cli("reassign", "execute", "--reassignment-json-file", plan, "--via-zookeeper",
                "--throttle", "100", zk=zk)  # fmt: skip
    assert again.returncode == 1
    assert "existing assignment running" in again.stderr
    assert not cluster.zk.exists(paths.topic_config_path("t"))
    cancelled = cli("reassign", "cancel", "--reassignment-json-file", plan, zk=zk)
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.splitlines() == [
        "Successfully cancelled partition reassignment for: t-0",
        "None of the specified partition moves are active.",  # Kafka's log-dir moves line
        # Kafka's cancel clears the throttles (none here) unless --preserve-throttles.
        "Clearing broker-level throttles on brokers 1,2,3",
        "Clearing topic-level throttles on topic t",
    ]
    # The origin replicas come back, in the order Kafka derives them (RS minus AR: the target
    # [3,2] went first in RS [3,2,1]), so 2 is now the preferred replica; leader 1 stays.
    wait_topic(cluster, partitions={"0": [2, 1]}, adding_replicas={}, removing_replicas={})
    assert cluster.state("t", 0)["leader"] == 1
    wait_until(lambda: T0 not in cluster.hosted(3), what="broker 3 deleted t-0")
    # The ZooKeeper request was superseded by the API cancel (the latest request wins).
    assert not cluster.zk.exists(paths.REASSIGN_PARTITIONS)
    nothing = cli("reassign", "cancel", "--reassignment-json-file", plan, zk=zk)
    assert nothing.stdout.splitlines()[0] == (
        "None of the specified partition reassignments are active."
    )


def config_of(cluster: Cluster, entity_type: str, entity: str) -> dict[str, str]:
    path = paths.config_entity_path(entity_type, entity)
    if not cluster.zk.exists(path):
        return {}
    return json.loads(cluster.zk.get(path)[0])["config"]


def test_cli_throttle_is_set_by_execute_kept_while_moving_and_cleared_by_verify(
    cluster: Cluster, tmp_path: Path
):
    zk, plan = t0_on_1_2_with_a_plan_to_3_2(cluster, tmp_path)
    done = cli("reassign", "execute", "--reassignment-json-file", plan, "--throttle", "1000",
               zk=zk)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Warning: You must run --verify periodically" in done.stdout
    assert "The inter-broker throttle limit was set to 1000 B/s" in done.stdout
    throttled = {
        "leader.replication.throttled.replicas": "0:1,0:2",
        "follower.replication.throttled.replicas": "0:3",
    }
    rates = {"leader.replication.throttled.rate": "1000",
             "follower.replication.throttled.rate": "1000"}  # fmt: skip
    assert config_of(cluster, "topics", "t") == throttled
    for b in (1, 2, 3):
        assert config_of(cluster, "brokers", str(b)) == rates
    changes = [
        json.loads(cluster.zk.get(f"{paths.CONFIG_CHANGES}/{n}")[0])["entity_path"]
        for n in sorted(cluster.zk.get_children(paths.CONFIG_CHANGES))
    ]
    assert changes[-4:] == ["topics/t", "brokers/1", "brokers/2", "brokers/3"]
    wait_topic(cluster, adding_replicas={"0": [3]})

    # Still moving: verify leaves the throttles; so does a cancel told to preserve them.
    verify = cli("reassign", "verify", "--reassignment-json-file", plan, zk=zk)
    assert verify.stdout.splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition t-0 is still in progress.",
    ]
    kept = cli("reassign", "cancel", "--reassignment-json-file", plan, "--preserve-throttles",
               zk=zk)  # fmt: skip
    assert kept.stdout.splitlines() == [
        "Successfully cancelled partition reassignment for: t-0",
        "None of the specified partition moves are active.",
    ]
    wait_topic(cluster, adding_replicas={}, removing_replicas={})
    assert config_of(cluster, "topics", "t") == throttled

    # Nothing moving: verify clears them, and prints what it cleared as Kafka's tool does.
    verify = cli("reassign", "verify", "--reassignment-json-file", plan, "--json", zk=zk)
    assert json.loads(verify.stdout)["throttles_cleared"] == {"brokers": [1, 2, 3],
                                                             "topics": ["t"]}  # fmt: skip
    assert config_of(cluster, "topics", "t") == {}
    for b in (1, 2, 3):
        assert config_of(cluster, "brokers", str(b)) == {}
    again = cli("reassign", "verify", "--reassignment-json-file", plan, zk=zk)
    assert again.stdout.splitlines()[-2:] == [
        "Clearing broker-level throttles on brokers 1,2,3",
        "Clearing topic-level throttles on topic t",
    ]
    bad = cli("reassign", "execute", "--reassignment-json-file", plan, "--throttle", "-5", zk=zk)
    assert bad.returncode == 1 and "argument --throttle: expected 0.." in bad.stderr
    assert config_of(cluster, "topics", "t") == {}


@pytest.mark.parametrize(
    ("plan", "fragment"),
    [
        ("{nope", "not valid JSON"),
        ({"version": 1, "partitions": []}, "cannot be empty"),
        ({"version": 3, "partitions": []}, "unsupported version"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": []}]}, "cannot be empty: t-0"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]},
         "t-0 contains multiple entries for 1"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": [2]},
                         {"topic": "t", "partition": 0, "replicas": [1]}]},
         "duplicate topic partitions: t-0"),
        ({"partitions": [{"topic": "t", "partition": 5, "replicas": [1]}]},
         "unable to find partition(s): t-5"),
        ({"partitions": [{"topic": "zz", "partition": 0, "replicas": [1]}]},
         "unable to find partition(s): zz-0"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": [9]}]},
         "unknown broker id(s) 9"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": [1],
                          "log_dirs": ["/data"]}]}, "log directories is not supported"),
    ],
    ids=["json", "empty", "version", "empty-replicas", "dup-replicas", "dup-partitions",
         "unknown-partition", "unknown-topic", "unknown-broker", "log-dir"],
)  # fmt: skip
def test_cli_refuses_invalid_plans_and_writes_nothing(
    cluster: Cluster, tmp_path: Path, plan: Any, fragment: str
):
    cluster.start_broker(1)
    cluster.start_controller(0)
    cluster.create_topic("t", {0: [1]})
    cluster.wait_state("t", 0, leader=1)
    before = cluster.zk.get(paths.topic_path("t"))[0]
    path = write_json(tmp_path / "plan.json", plan)
    # Both submission paths share the checks: alternate them to keep the test short. verify
    # refuses only a plan that does not parse (Kafka's verify skips execute's checks).
    commands = [("execute", "--via-zookeeper") if len(fragment) % 2 else ("execute",)]
    if fragment.startswith(("not valid", "unsupported")) or fragment == "cannot be empty":
        commands.append(("verify",))
    for command in commands:
        result = cli("reassign", *command, "--reassignment-json-file", path, zk=cluster.connect)
        assert result.returncode == 1
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("zk-controller: error:"), result.stderr
        assert fragment in lines[0], lines[0]
    assert not cluster.zk.exists(paths.REASSIGN_PARTITIONS)
    assert cluster.zk.get(paths.topic_path("t"))[0] == before
