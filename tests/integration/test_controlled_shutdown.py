"""Controlled shutdown end to end (§2.9): a real ZooKeeper, a controller daemon, reference
brokers over real gRPC. The ControlledShutdown RPC is sent the way the reference broker sends
it (``controller.broker.shutdown``), and the broker's own SIGTERM path is run as a process."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from controller.api.errors import Errors, controller_hint
from controller.api.v1 import broker_pb2, controller_pb2, controller_pb2_grpc
from controller.broker.shutdown import (
    ControlledShutdownSettings,
    ShutdownAttempt,
    controlled_shutdown,
    request_controlled_shutdown,
)
from controller.core.model import TopicPartition
from controller.zk import paths
from controller.zk.codecs import encode_controller
from controller.zk.endpoints import ControllerEndpoint, encode_controller_endpoint
from tests.cluster import Cluster
from tests.support import REPO, kazoo, wait_until

CONTROLLER = 9
NO_AUTO_REBALANCE = {"auto.leader.rebalance.enable": "false"}
T0 = TopicPartition("t", 0)


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


def start(cluster: Cluster, brokers: tuple[int, ...] = (0, 1, 2)) -> None:
    for b in brokers:
        cluster.start_broker(b)
    cluster.start_controller(CONTROLLER, **NO_AUTO_REBALANCE)
    cluster.active_controller()


def ask(cluster: Cluster, broker_id: int, epoch: int | None = None) -> ShutdownAttempt:
    """One ControlledShutdown from the broker's own ZooKeeper session, as the broker sends it."""
    broker = cluster.brokers[broker_id]
    return request_controlled_shutdown(
        cluster.broker_port(broker_id),
        broker_id,
        broker.broker_epoch if epoch is None else epoch,
        timeout_s=15,
    )


def shutting_down(cluster: Cluster) -> set[int]:
    ctl = cluster.active_controller().controller
    return set(ctl.call(lambda c: set(c.context.shutting_down_broker_ids)))


def role(cluster: Cluster, broker: int, tp: TopicPartition) -> int:
    hosted = cluster.hosted(broker).get(tp)
    return broker_pb2.PARTITION_ROLE_UNSPECIFIED if hosted is None else hosted.role


def test_each_broker_in_turn_down_to_the_last_isr_member(cluster: Cluster) -> None:
    """§2.9's integration example: replicas [0, 1, 2], leader 0."""
    start(cluster)
    cluster.create_topic("t", {0: [0, 1, 2]})
    cluster.wait_state("t", 0, leader=0, isr=[0, 1, 2])

    # Follower 2: nothing remains; it leaves the ISR (leader epoch + 1) and is stopped.
    assert ask(cluster, 2) == ShutdownAttempt(None, ())
    s = cluster.state("t", 0)
    assert (s["leader"], s["isr"], s["leader_epoch"]) == (0, [0, 1], 1)
    wait_until(lambda: role(cluster, 2, T0) == broker_pb2.PARTITION_ROLE_STOPPED,
               what="broker 2 stops its replica")  # fmt: skip
    cluster.kill_broker(2)

    # Follower 1: the same.
    assert ask(cluster, 1) == ShutdownAttempt(None, ())
    s = cluster.state("t", 0)
    assert (s["leader"], s["isr"], s["leader_epoch"]) == (0, [0], 2)
    cluster.kill_broker(1)

    # Leader 0, the last ISR member: no eligible leader, so it stays leader and the
    # partition is reported as remaining.
    assert ask(cluster, 0) == ShutdownAttempt(None, ("t-0",))
    s = cluster.state("t", 0)
    assert (s["leader"], s["isr"], s["leader_epoch"]) == (0, [0], 2)
    assert role(cluster, 0, T0) == broker_pb2.PARTITION_ROLE_LEADER
    assert shutting_down(cluster) == {0}


def test_leader_moves_to_the_next_isr_replica(cluster: Cluster) -> None:
    start(cluster)
    cluster.create_topic("t", {0: [0, 1, 2], 1: [1, 2, 0], 2: [0]})
    cluster.wait_state("t", 0, leader=0)
    cluster.wait_state("t", 1, leader=1)
    cluster.wait_state("t", 2, leader=0)
    assert ask(cluster, 0) == ShutdownAttempt(None, ())  # t-2 has RF 1: not counted
    s0 = cluster.state("t", 0)
    assert (s0["leader"], s0["isr"], s0["leader_epoch"]) == (1, [1, 2], 1)
    s1 = cluster.state("t", 1)
    assert (s1["leader"], s1["isr"], s1["leader_epoch"]) == (1, [1, 2], 1)
    assert cluster.state("t", 2)["leader_epoch"] == 0  # RF 1 is left alone
    wait_until(
        lambda: (
            role(cluster, 1, T0) == broker_pb2.PARTITION_ROLE_LEADER
            and role(cluster, 0, T0) == broker_pb2.PARTITION_ROLE_FOLLOWER
            and role(cluster, 0, TopicPartition("t", 1)) == broker_pb2.PARTITION_ROLE_STOPPED
        ),
        what="the departing broker hears about the new leader and stops its follower",
    )
    # Shutting-down brokers are offline replicas in the metadata the others get (pitfall 7).
    wait_until(lambda: list(cluster.metadata(2)[T0].offline_replicas) == [0],
               what="UpdateMetadata lists broker 0 as offline")  # fmt: skip
    # A retry is harmless and answers the same.
    assert ask(cluster, 0) == ShutdownAttempt(None, ())
    assert cluster.state("t", 0)["leader_epoch"] == 1


def test_stale_broker_epoch_is_rejected_and_changes_nothing(cluster: Cluster) -> None:
    start(cluster, brokers=(0, 1))
    cluster.create_topic("t", {0: [0, 1]})
    before = cluster.wait_state("t", 0, leader=0, isr=[0, 1])
    epoch = cluster.brokers[0].broker_epoch
    assert ask(cluster, 0, epoch - 1) == ShutdownAttempt("STALE_BROKER_EPOCH")
    assert cluster.state("t", 0) == before
    assert shutting_down(cluster) == set()
    # A newer epoch than the controller knows, and -1 (no check), are accepted.
    assert ask(cluster, 1, epoch + 1_000_000) == ShutdownAttempt(None, ())
    assert ask(cluster, 0, -1) == ShutdownAttempt(None, ("t-0",))  # 1 is shutting down too


def test_unknown_broker_is_not_available(cluster: Cluster) -> None:
    start(cluster, brokers=(0,))
    for epoch in (-1, 5):
        assert ask_as(cluster, 42, epoch) == ShutdownAttempt("BROKER_NOT_AVAILABLE")
    assert shutting_down(cluster) == set()


def ask_as(cluster: Cluster, broker_id: int, epoch: int) -> ShutdownAttempt:
    return request_controlled_shutdown(cluster.broker_port(0), broker_id, epoch, timeout_s=15)


def test_standby_answers_not_controller_naming_the_active_one(cluster: Cluster) -> None:
    start(cluster, brokers=(0, 1))
    cluster.create_topic("t", {0: [0, 1]})
    before = cluster.wait_state("t", 0, leader=0)
    standby = cluster.start_controller(CONTROLLER + 1, **NO_AUTO_REBALANCE)
    wait_until(lambda: standby.controller.active_controller_id == CONTROLLER,
               what="the standby knows the active controller")  # fmt: skip
    with grpc.insecure_channel(standby.grpc.address) as channel:
        stub = controller_pb2_grpc.ControllerServiceStub(channel)
        response, call = stub.ControlledShutdown.with_call(
            controller_pb2.ControlledShutdownRequest(
                broker_id=0, broker_epoch=cluster.brokers[0].broker_epoch
            ),
            timeout=10,
        )
    assert response.error_code == Errors.NOT_CONTROLLER
    assert controller_hint(call.trailing_metadata()) == CONTROLLER
    assert cluster.state("t", 0) == before
    assert shutting_down(cluster) == set()


# -- the broker's side ----------------------------------------------------------------------


def test_broker_loop_succeeds_at_once_when_nothing_remains(cluster: Cluster) -> None:
    start(cluster, brokers=(0, 1))
    cluster.create_topic("t", {0: [0, 1]})
    cluster.wait_state("t", 0, leader=0, isr=[0, 1])
    sleeps: list[float] = []
    settings = ControlledShutdownSettings(retry_backoff_ms=250)
    assert controlled_shutdown(
        cluster.broker_port(0), 0, lambda: cluster.brokers[0].broker_epoch, settings,
        sleep=sleeps.append,
    )  # fmt: skip
    assert sleeps == []
    assert cluster.state("t", 0)["leader"] == 1


def test_broker_loop_retries_then_gives_up_when_it_is_the_last_isr_member(
    cluster: Cluster,
) -> None:
    start(cluster, brokers=(0, 1))
    cluster.create_topic("t", {0: [0, 1]})
    cluster.wait_state("t", 0, leader=0, isr=[0, 1])
    cluster.kill_broker(1)
    cluster.wait_state("t", 0, leader=0, isr=[0])
    sleeps: list[float] = []
    settings = ControlledShutdownSettings(max_retries=3, retry_backoff_ms=250)
    assert not controlled_shutdown(
        cluster.broker_port(0), 0, lambda: cluster.brokers[0].broker_epoch, settings,
        sleep=sleeps.append,
    )  # fmt: skip
    assert sleeps == [0.25, 0.25]  # three attempts, a backoff between each
    assert cluster.state("t", 0)["leader"] == 0


def test_broker_loop_without_a_controller_fails_each_attempt_quickly(cluster: Cluster) -> None:
    cluster.start_broker(0)  # no controller at all
    sleeps: list[float] = []
    settings = ControlledShutdownSettings(max_retries=2, retry_backoff_ms=100)
    assert not controlled_shutdown(
        cluster.broker_port(0), 0, lambda: cluster.brokers[0].broker_epoch, settings,
        sleep=sleeps.append,
    )  # fmt: skip
    assert sleeps == [0.1]


def test_disabled_controlled_shutdown_sends_nothing(cluster: Cluster) -> None:
    start(cluster, brokers=(0, 1))
    cluster.create_topic("t", {0: [0, 1]})
    before = cluster.wait_state("t", 0, leader=0)
    broker = cluster.brokers[0]
    broker.config = dataclasses.replace(
        broker.config, controlled_shutdown=ControlledShutdownSettings(enable=False)
    )
    assert broker.controlled_shutdown() is False
    assert cluster.state("t", 0) == before
    assert shutting_down(cluster) == set()


def spawn_broker_0(cluster: Cluster, out_path: Path, *, retry_backoff_ms: int) -> subprocess.Popen:
    """``zk-controller broker`` 0 as a process, its output in ``out_path``."""
    with open(out_path, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "controller", "broker", "--zookeeper", cluster.connect,
             "--broker-id", "0", "--session-timeout-ms", "6000",
             "--controlled-shutdown-retry-backoff-ms", str(retry_backoff_ms)],
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
            env={**os.environ, "ZK_CONNECT": "", "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip


def test_broker_process_moves_leadership_away_on_sigterm(cluster: Cluster, tmp_path: Path) -> None:
    """``zk-controller broker`` on SIGTERM: controlled shutdown while still registered, then
    deregistration; the leadership moved by the controlled-shutdown election (ISR shrunk to
    the remaining broker, one epoch bump) before the registration went away."""
    start(cluster, brokers=(1,))
    out_path = tmp_path / "broker-0.log"
    proc = spawn_broker_0(cluster, out_path, retry_backoff_ms=100)
    observer = kazoo(cluster.connect)
    try:
        wait_until(lambda: observer.exists(paths.broker_path(0)) is not None,
                   what="broker 0 registered")  # fmt: skip
        cluster.create_topic("t", {0: [0, 1]})
        cluster.wait_state("t", 0, leader=0, isr=[0, 1])
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert observer.exists(paths.broker_path(0)) is None
        data, state_stat = observer.get(paths.partition_state_path("t", 0))
        state = json.loads(data)
        assert (state["leader"], state["isr"], state["leader_epoch"]) == (1, [1], 1)
        # The state was written before the registration was deleted (the last child change
        # of /brokers/ids): by the controlled shutdown, not by the broker-failure path.
        assert state_stat.mzxid < observer.exists(paths.BROKERS_IDS).pzxid
        assert "controlled shutdown succeeded" in out_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        observer.stop()
        observer.close()


def test_broker_cli_rejects_bad_controlled_shutdown_flags(zk_connect: str) -> None:
    for flags in (
        ["--controlled-shutdown-enable", "maybe"],
        ["--controlled-shutdown-max-retries", "0"],
        ["--controlled-shutdown-retry-backoff-ms", "-1"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "controller", "broker", "--zookeeper", zk_connect,
             "--broker-id", "0", *flags],
            capture_output=True, text=True, cwd=REPO, timeout=30,
        )  # fmt: skip
        assert done.returncode == 2, done
        assert flags[0] in done.stderr


def test_a_second_sigterm_skips_the_remaining_attempts(cluster: Cluster, tmp_path: Path) -> None:
    """/controller names a controller whose address refuses connections (crashed, session
    not expired yet): each attempt fails at once, and a second SIGTERM during the (here one
    minute) backoff ends the controlled shutdown; the broker deregisters and exits 0."""
    observer = kazoo(cluster.connect)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    observer.create(paths.CONTROLLER, encode_controller(7, 1), ephemeral=True, makepath=True)
    observer.create(
        paths.controller_endpoint_path(7),
        encode_controller_endpoint(ControllerEndpoint(7, dead, "127.0.0.1:1")),
        makepath=True,
    )
    out_path = tmp_path / "broker-0.log"
    proc = spawn_broker_0(cluster, out_path, retry_backoff_ms=60000)
    try:
        wait_until(lambda: observer.exists(paths.broker_path(0)) is not None,
                   what="broker 0 registered")  # fmt: skip
        proc.send_signal(signal.SIGTERM)
        wait_until(lambda: "controlled shutdown attempt failed" in out_path.read_text(),
                   what="the first attempt failed")  # fmt: skip
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0  # not the 2 x 60 s of backoff left
        log_text = out_path.read_text()
        assert "skipping the remaining controlled shutdown attempts" in log_text
        assert "SIGTERM received during the controlled shutdown" in log_text
        assert log_text.count("controlled shutdown attempt failed") == 1
        assert observer.exists(paths.broker_path(0)) is None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        observer.stop()
        observer.close()
