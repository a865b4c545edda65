"""``zk-controller status`` against a live cluster (real ZooKeeper, an active and a standby
controller, reference brokers): the text view, ``--json``, the live view redrawn in place on a
terminal, and what it shows as the cluster changes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.admin import configs
from controller.admin.client import admin_session
from controller.status import ElectionTracker, collect_status
from controller.zk import paths
from controller.zk.kazoo_port import KazooPort
from tests.cluster import Cluster
from tests.support import CLI, REPO, wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


def status(connect: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "status", "--zookeeper", connect, *args],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip


def status_json(connect: str) -> dict[str, Any]:
    result = status(connect, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_status_shows_controllers_brokers_partitions_and_changes(cluster: Cluster) -> None:
    connect = cluster.connect
    for b in (1, 2, 3):
        cluster.start_broker(b)
    active = cluster.start_controller(0)
    assert cluster.active_controller() is active
    cluster.start_controller(1)
    cluster.create_topic("t", {0: [1, 2], 1: [3, 2], 2: [3]})
    cluster.create_topic("r", {0: [1, 2]})
    for p, leader in ((0, 1), (1, 3), (2, 3)):
        cluster.wait_state("t", p, leader=leader)
    cluster.wait_state("r", 0, leader=1)

    doc = status_json(connect)
    assert doc["active_controller"] == 0
    assert doc["controller_epoch"] == active.controller.epoch
    assert [(c["id"], c["active"], c["reachable"]) for c in doc["controllers"]] == [
        (0, True, True), (1, False, True),
    ]  # fmt: skip
    assert doc["controllers"][0]["metrics"]["active_controller_count"] == 1
    assert doc["controllers"][1]["metrics"]["active_controller_count"] == 0
    assert {(c["grpc_security_protocol"], c["grpc_client_auth"]) for c in doc["controllers"]} == {
        ("PLAINTEXT", None)
    }
    assert [b["id"] for b in doc["brokers"]] == [1, 2, 3]
    assert doc["topics"] == 2
    assert doc["partitions"] == {
        "total": 4, "online": 4, "offline": 0, "under_replicated": 0, "no_state": 0,
    }  # fmt: skip
    assert doc["offline"] == [] and doc["deleting"] == [] and doc["reassigning"] == []

    text = status(connect, "--once")
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert f"Active controller: 0   epoch: {active.controller.epoch}" in out
    assert "controller 0    active" in out and "controller 1    standby" in out
    assert "gRPC TLS" not in out
    assert "Brokers: 3" in out
    assert "Topics: 2   Partitions: 4   online 4   offline 0   under-replicated 0" in out
    assert "\x1b[" not in out  # --once never redraws

    # Broker 3 dies: t-2 (only on 3) goes offline, t-1 is led by 2 (an offline election) with
    # a one-replica ISR.
    cluster.kill_broker(3)
    cluster.wait_state("t", 1, leader=2, isr=[2])
    doc = wait_until(
        lambda: (d := status_json(connect))["partitions"]["offline"] == 1 and d,
        what="t-2 offline in status",
    )
    assert doc["offline"] == ["t-2"]
    assert doc["under_replicated"] == ["t-1"]
    assert [b["id"] for b in doc["brokers"]] == [1, 2]
    assert doc["elections"]["offline"] >= 1  # the active controller's counters by type
    out = status(connect, "--once").stdout
    assert "offline: t-2" in out and "under-replicated: t-1" in out
    assert "offline 1   under-replicated 1" in out

    # A deletion whose replicas sit on the dead broker waits (ineligible in Kafka), and a
    # reassignment onto the dead broker cannot complete: both show as in progress.
    cluster.zk.create("/admin/delete_topics/t")
    cluster.zk.create(
        "/admin/reassign_partitions",
        json.dumps({"version": 1, "partitions": [
            {"topic": "r", "partition": 0, "replicas": [1, 2, 3]},
        ]}).encode(),
    )  # fmt: skip
    doc = wait_until(
        lambda: (d := status_json(connect))["deleting"] == ["t"] and d, what="deletion shown"
    )
    # The controller records the adding replica in the topic znode (KIP-455); broker 3 never
    # joins, so the reassignment stays in progress.
    doc = wait_until(
        lambda: (d := status_json(connect))["reassigning"] == ["r-0"] and d,
        what="reassignment shown",
    )
    out = status(connect, "--once").stdout
    assert f"Reassignments in progress: {len(doc['reassigning'])}" in out
    assert ("request pending" in out) == doc["reassignment_requested"]
    out = status(connect, "--once").stdout
    assert "Topic deletions in progress: 1" in out and "\n  t\n" in out

    # Failover: the standby becomes active; status follows /controller.
    cluster.stop_controller(0)
    doc = wait_until(
        lambda: (d := status_json(connect))["active_controller"] == 1 and d,
        what="controller 1 active in status",
    )
    assert [c["id"] for c in doc["controllers"]] == [1]
    assert doc["controllers"][0]["metrics"]["active_controller_count"] == 1


def test_recent_leader_changes_are_tracked_between_refreshes(cluster: Cluster) -> None:
    for b in (1, 2):
        cluster.start_broker(b)
    cluster.start_controller(0)
    cluster.active_controller()
    cluster.create_topic("e", {0: [1, 2]})
    cluster.wait_state("e", 0, leader=1)
    port = KazooPort(cluster.connect, 10)
    port.start()
    try:
        tracker = ElectionTracker()
        first = tracker.update(collect_status(port))
        assert first.recent_elections == [] and first.leaders == {"e-0": 1}
        cluster.kill_broker(1)
        cluster.wait_state("e", 0, leader=2)
        second = tracker.update(collect_status(port))
        assert [(e.partition, e.old_leader, e.new_leader) for e in second.recent_elections] == [
            ("e-0", 1, 2)
        ]
        assert second.to_json()["recent_elections"][0]["partition"] == "e-0"
        third = tracker.update(collect_status(port))  # remembered, not repeated
        assert len(third.recent_elections) == 1
    finally:
        port.stop()


def test_a_partition_never_elected_is_offline_without_a_state(cluster: Cluster) -> None:
    cluster.start_broker(1)
    cluster.start_controller(0)
    cluster.active_controller()
    cluster.create_topic("ok", {0: [1]})
    cluster.create_topic("orphan", {0: [9]})  # broker 9 never registered: nothing to elect
    cluster.wait_state("ok", 0, leader=1)
    doc = wait_until(
        lambda: (d := status_json(cluster.connect))["partitions"]["total"] == 2 and d,
        what="both topics in status",
    )
    assert doc["partitions"] == {
        "total": 2, "online": 1, "offline": 1, "under_replicated": 0, "no_state": 1,
    }  # fmt: skip
    assert doc["offline"] == ["orphan-0"]
    out = status(cluster.connect, "--once").stdout
    assert "online 1   offline 1 (1 never elected: no state znode)   under-replicated 0" in out


def test_status_shows_where_unclean_elections_are_allowed(cluster: Cluster) -> None:
    cluster.start_broker(1)
    cluster.start_controller(0, **{"unclean.leader.election.enable": "true"})
    cluster.active_controller()
    cluster.create_topic("t", {0: [1]})
    cluster.create_topic("u", {0: [1]})
    doc = status_json(cluster.connect)
    assert (doc["unclean_default"], doc["unclean_default_error"], doc["unclean_topics"]) == (
        None,
        None,
        {},
    )
    text = status(cluster.connect, "--once").stdout
    # The active controller's own setting, which applies with no brokers' default.
    assert (
        "Unclean leader election: brokers' default not set (each controller's own setting; "
        "the active controller's: true)" in text
    )
    assert "topics setting it: none" in text
    with admin_session(cluster.connect, 10_000) as port:
        configs.alter_topic_config(port, "t", {"unclean.leader.election.enable": "true"})
        configs.alter_topic_config(port, "u", {"unclean.leader.election.enable": "false"})
        configs.alter_broker_default_config(port, {"unclean.leader.election.enable": "false"})
    doc = status_json(cluster.connect)
    assert doc["unclean_default"] == "false"
    assert doc["unclean_topics"] == {"t": "true", "u": "false"}
    text = status(cluster.connect, "--once").stdout
    assert (
        "Unclean leader election: brokers' default false; topics setting it: t=true, u=false"
        in text
    )
    # A value the tools refuse, written by hand: shown as what the controller makes of it.
    with admin_session(cluster.connect, 10_000) as port:
        port.set(
            paths.topic_config_path("u"),
            b'{"version":1,"config":{"unclean.leader.election.enable":"yes"}}',
        )
    text = status(cluster.connect, "--once").stdout
    assert "topics setting it: t=true, u='yes' (invalid: read as false)" in text


def test_status_shows_finalized_features_and_the_brokers_kept_out(cluster: Cluster) -> None:
    cluster.start_broker(1, supported_features={"f": (1, 3)})
    cluster.start_controller(0)
    cluster.active_controller()
    text = status(cluster.connect, "--once").stdout
    assert "Finalized features: none (epoch 0)" in text
    # f=2 is finalized; broker 2 then registers supporting only level 1.
    finalized = b'{"version":2,"status":1,"features":{"f":{"max_version_level":2}}}'
    cluster.zk.set(paths.FEATURE, finalized)
    cluster.start_broker(2, supported_features={"f": (1, 1)})
    doc = status_json(cluster.connect)
    assert (doc["finalized_features"], doc["feature_epoch"], doc["features_error"]) == (
        {"f": 2},
        1,
        None,
    )
    assert {b["id"]: b["unsupported_features"] for b in doc["brokers"]} == {1: [], 2: ["f=2"]}
    text = status(cluster.connect, "--once").stdout
    assert "Finalized features: f=2 (epoch 1)" in text
    assert "KEPT OUT: does not support the finalized f=2" in text
    cluster.zk.set(paths.FEATURE, b'{"version":9}')
    assert "Finalized features: unreadable (malformed data in znode /feature" in (
        status(cluster.connect, "--once").stdout
    )


def test_live_view_redraws_in_place_on_a_terminal(cluster: Cluster) -> None:
    cluster.start_broker(1)
    cluster.start_controller(0)
    cluster.active_controller()
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*CLI, "status", "--zookeeper", cluster.connect, "--interval", "0.2", "--count", "3"],
            stdout=follower, stderr=subprocess.PIPE, cwd=REPO,
        )  # fmt: skip
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is done
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(30) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        os.close(leader)
    screen = b"".join(chunks).decode()
    assert screen.count("\x1b[H\x1b[2J") == 3  # three refreshes, each redrawn from the top
    assert screen.count("Active controller: 0") == 3


def test_status_fails_cleanly_without_zookeeper(free_port: Any) -> None:
    result = status(f"127.0.0.1:{free_port()}", "--once", "--session-timeout-ms", "1000")
    assert result.returncode == 1
    assert "could not connect to ZooKeeper" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_connect_string_where_no_cluster_ran_says_so(zk_connect: str) -> None:
    # An ensemble's root (the chroot left out) showed an empty cluster and nothing else.
    out = status(zk_connect, "--once")
    assert out.returncode == 0, out.stderr
    assert "No cluster here: neither /brokers/ids nor /controller_epoch exists" in out.stdout
    assert "Is the chroot missing from the connect string" in out.stdout
    assert status_json(zk_connect)["cluster_found"] is False
    from tests.support import kazoo

    client = kazoo(zk_connect)
    try:
        client.ensure_path("/brokers/ids")  # a cluster's first broker or controller made it
    finally:
        client.stop()
    assert "No cluster here" not in status(zk_connect, "--once").stdout
    assert status_json(zk_connect)["cluster_found"] is True


def test_an_unreadable_controller_znode_is_shown_not_hidden(zk_connect: str) -> None:
    """A malformed /controller blocks every election; status and brokers list say so
    instead of "none"."""
    from tests.support import kazoo

    client = kazoo(zk_connect)
    try:
        client.create("/controller", b"not json", ephemeral=True, makepath=True)
        out = status(zk_connect, "--once")
        assert out.returncode == 0, out.stderr
        assert "/controller is unreadable, so no controller can be elected" in out.stdout
        doc = status_json(zk_connect)
        assert doc["active_controller"] is None and "invalid JSON" in doc["controller_error"]
        listed = subprocess.run(
            [*CLI, "brokers", "list", "--zookeeper", zk_connect],
            capture_output=True, text=True, timeout=60, cwd=REPO,
        )  # fmt: skip
        assert "Controller: unreadable /controller:" in listed.stdout
        # ...and exits 1 with it, as for an unreadable broker (it used to exit 0).
        assert listed.returncode == 1
        assert listed.stderr.splitlines() == [
            f"zk-controller: error: unreadable /controller: {doc['controller_error']}"
        ]
    finally:
        client.stop()


def test_an_unreadable_controller_epoch_is_shown_with_why(zk_connect: str) -> None:
    """A malformed /controller_epoch fails every election; status names the znode and the
    reason instead of a bare "-" (which means: no epoch yet)."""
    from tests.support import kazoo

    client = kazoo(zk_connect)
    try:
        out = status(zk_connect, "--once")
        assert "epoch: -" in out.stdout and "/controller_epoch is unreadable" not in out.stdout
        client.create("/controller_epoch", b"five", makepath=True)
        out = status(zk_connect, "--once")
        assert out.returncode == 0, out.stderr
        assert "Active controller: none   epoch: unreadable" in out.stdout
        assert "/controller_epoch is unreadable: controller elections fail" in out.stdout
        doc = status_json(zk_connect)
        assert doc["controller_epoch"] is None
        assert "/controller_epoch" in doc["controller_epoch_error"]
        assert "five" in doc["controller_epoch_error"]
        client.set("/controller_epoch", b"7")
        doc = status_json(zk_connect)
        assert doc["controller_epoch"] == 7 and doc["controller_epoch_error"] is None
    finally:
        client.stop()


def test_a_kraft_controller_holding_the_controller_znode_is_identified(
    cluster: Cluster,
) -> None:
    """A ZK->KRaft migration's controller takes /controller as Kafka's
    tryRegisterKRaftControllerAsActiveController does: epoch bumped, our ephemeral node
    replaced in one transaction by a persistent one with kraftControllerEpoch >= 0. Status
    showed just "controller 3000 active"; it now names a KRaft controller and the persistent
    znode no stop of ours clears."""
    cluster.start_broker(1)
    ours = cluster.start_controller(0)
    assert cluster.active_controller() is ours
    zk = cluster.zk
    epoch, epoch_stat = zk.get(paths.CONTROLLER_EPOCH)
    _, controller_stat = zk.get(paths.CONTROLLER)
    takeover = zk.transaction()
    takeover.set_data(paths.CONTROLLER_EPOCH, str(int(epoch) + 1).encode(), epoch_stat.version)
    takeover.delete(paths.CONTROLLER, controller_stat.version)
    takeover.create(
        paths.CONTROLLER,
        b'{"version":2,"brokerid":3000,"timestamp":"1700000000000","kraftControllerEpoch":7}',
    )
    assert not [r for r in takeover.commit() if isinstance(r, Exception)]
    wait_until(lambda: not ours.controller.is_active, what="ours resigned")

    doc = status_json(cluster.connect)
    assert doc["active_controller"] == 3000
    assert doc["kraft_controller"] == {"id": 3000, "kraft_controller_epoch": 7, "persistent": True}
    kraft = next(c for c in doc["controllers"] if c["id"] == 3000)
    assert kraft["active"] and kraft["kraft_controller_epoch"] == 7
    standby = next(c for c in doc["controllers"] if c["id"] == 0)
    assert not standby["active"] and standby["kraft_controller_epoch"] is None
    out = status(cluster.connect, "--once").stdout
    assert (
        "/controller is a persistent znode of a KRaft controller (ZooKeeper-to-KRaft migration, "
        "kraftControllerEpoch 7)"
    ) in out
    assert "stopping them will not clear it" in out
    assert "KRaft controller (migration), kraftControllerEpoch 7" in out
    # Our own controller's /controller (kraftControllerEpoch -1, ephemeral) is not one.
    zk.delete(paths.CONTROLLER)
    wait_until(lambda: ours.controller.is_active, what="ours elected again")
    doc = status_json(cluster.connect)
    assert doc["active_controller"] == 0 and doc["kraft_controller"] is None
    assert "KRaft" not in status(cluster.connect, "--once").stdout


# What Kafka 3.6's `kafka-reassign-partitions.sh --generate` proposes: its "log_dirs" is for
# the Admin API; in the znode, Kafka's strict mapper refuses the whole request (so do we).
GENERATED_PLAN = (
    b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,1],'
    b'"log_dirs":["any","any"]}]}'
)


def test_a_reassignment_request_the_controller_ignores_is_shown_malformed(
    zk_connect: str,
) -> None:
    """A malformed /admin/reassign_partitions is never acted on nor removed by the controller:
    status said "request pending" for ever. It now says malformed, why, and to delete it."""
    from tests.support import kazoo

    client = kazoo(zk_connect)
    try:
        client.create(paths.REASSIGN_PARTITIONS, GENERATED_PLAN, makepath=True)
        out = status(zk_connect, "--once")
        assert out.returncode == 0, out.stderr
        assert "request pending" not in out.stdout
        assert (
            "Reassignments in progress: 0 (request in /admin/reassign_partitions MALFORMED, "
            "ignored by the controller)"
        ) in out.stdout
        assert "unknown field(s) ['log_dirs']" in out.stdout
        assert "Delete it (e.g. zkCli.sh delete /admin/reassign_partitions" in out.stdout
        doc = status_json(zk_connect)
        assert doc["reassignment_requested"] is True
        bad = doc["reassignment_request_malformed"]
        assert "unknown field(s) ['log_dirs']" in bad["problem"]
        assert bad["ignored_by_controller"] is True
        assert bad["remedy"].startswith("delete it")
        # An entry the controller fails alone (an empty replica list) leaves the rest of the
        # request to act on: pending, as the controller's own decoder reads it.
        client.set(
            paths.REASSIGN_PARTITIONS,
            b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,1]},'
            b'{"topic":"t","partition":1,"replicas":[]}]}',
        )
        doc = status_json(zk_connect)
        assert doc["reassignment_requested"] and doc["reassignment_request_malformed"] is None
        out = status(zk_connect, "--once").stdout
        assert "(request pending in /admin/reassign_partitions)" in out and "MALFORMED" not in out
    finally:
        client.stop()


def test_a_metrics_address_that_answers_garbage_is_reported_not_a_crash(
    zk_connect: str,
) -> None:
    """A controller endpoint whose metrics port speaks something other than HTTP: that
    controller is shown "metrics unreachable"; status itself does not fail."""
    import socket
    import threading

    from controller.zk.endpoints import ControllerEndpoint, encode_controller_endpoint
    from tests.support import kazoo

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"127.0.0.1:{server.getsockname()[1]}"

        def answer() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(1024)
                    conn.sendall(b"garbage, not HTTP\r\n\r\n")

        threading.Thread(target=answer, daemon=True).start()
        client = kazoo(zk_connect)
        try:
            client.create(
                paths.controller_endpoint_path(7),
                encode_controller_endpoint(ControllerEndpoint(7, "127.0.0.1:1", address)),
                ephemeral=True,
                makepath=True,
            )
            with admin_session(zk_connect, 10_000) as port:
                found = collect_status(port)
            (c7,) = [c for c in found.controllers if c.id == 7]
            assert c7.reachable is False and c7.error.startswith("metrics unreachable")
        finally:
            client.stop()
