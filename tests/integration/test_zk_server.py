"""The real-ZooKeeper tiers and the fixtures built on them (controller.zk.server)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.retry import KazooRetry

from controller.zk.server import (
    MIN_SESSION_TIMEOUT_MS,
    LocalEnsemble,
    LocalZooKeeper,
    ZooKeeperHandle,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
    four_letter_word,
    zookeeper_classpath,
    zookeeper_jar,
)
from controller.zk.tiers import (
    ExternalZooKeeper,
    docker_problem,
    resolve_zookeeper,
)
from tests.support import process_alive

REPO_ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def kazoo_client(hosts: str, session_timeout: float = 6.0) -> Iterator[KazooClient]:
    client = KazooClient(
        hosts=hosts,
        timeout=session_timeout,
        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
        command_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0, deadline=30.0),
    )
    client.start(timeout=20)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.05)


def listening_addresses(port: int) -> set[str]:
    """Hex local addresses of LISTEN sockets on ``port`` (Linux /proc/net/tcp{,6})."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                address, port_hex = fields[1].rsplit(":", 1)
                if fields[3] == "0A" and int(port_hex, 16) == port:
                    found.add(address)
    return found


# --- the local server -----------------------------------------------------------------------


def test_local_server_answers_binds_loopback_and_restarts(zk_standalone: LocalZooKeeper) -> None:
    zk = zk_standalone
    assert zk.ruok()
    assert zk.mode() == "standalone"
    assert zk.startup_seconds is not None and zk.startup_seconds > 0  # measured and kept
    assert listening_addresses(zk.port) == {"0100007F"}  # 127.0.0.1 only, never 0.0.0.0
    assert "Mode: standalone" in four_letter_word(zk.host, zk.port, "srvr")
    with kazoo_client(zk.hosts) as client:
        client.create("/survives-restart", b"v1")

    zk.stop()
    assert not zk.running and not zk.ruok(timeout=0.5)
    assert zk.log_path.is_file()  # kept for post-mortems

    zk.start()
    assert zk.ruok()
    with kazoo_client(zk.hosts) as client:
        assert client.get("/survives-restart")[0] == b"v1"


def test_close_kills_the_jvm_and_removes_its_temp_dir(zk_standalone: LocalZooKeeper) -> None:
    pid, work_dir = zk_standalone.pid, zk_standalone.work_dir
    assert pid is not None and work_dir.is_dir()
    zk_standalone.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not work_dir.exists()


def test_session_timeout_is_clamped_to_the_server_minimum(
    zk_standalone: LocalZooKeeper, caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger("tests.zk_server.negotiation")
    with caplog.at_level(5, logger=logger.name):  # kazoo logs the negotiation at BLATHER (5)
        client = KazooClient(hosts=zk_standalone.hosts, timeout=0.2, logger=logger)
        client.start(timeout=20)
        client.stop()
        client.close()
    negotiated = re.search(r"negotiated session timeout: (\d+)", caplog.text)
    assert negotiated is not None, caplog.text
    assert int(negotiated.group(1)) == MIN_SESSION_TIMEOUT_MS


def test_freeze_suspends_clients_and_thaw_recovers(zk_standalone: LocalZooKeeper) -> None:
    states: list[KazooState] = []
    with kazoo_client(zk_standalone.hosts, session_timeout=6.0) as client:
        client.add_listener(states.append)
        client.create("/before-freeze", b"x")

        zk_standalone.freeze()
        assert zk_standalone.frozen
        assert not zk_standalone.ruok(timeout=0.5)
        wait_for(lambda: KazooState.SUSPENDED in states, 20, "the client to notice the outage")

        zk_standalone.thaw()
        wait_for(lambda: client.state == KazooState.CONNECTED, 30, "the client to reconnect")
        assert zk_standalone.ruok()
        assert client.exists("/before-freeze") is not None


# --- fixtures: shared server, per-test chroot ---------------------------------------------------


def test_zk_connect_is_a_private_existing_chroot(
    zk_server: ZooKeeperHandle, zk_connect: str
) -> None:
    hosts_and_base = f"{zk_server.hosts}{zk_server.chroot}/zkc-"
    assert zk_connect.startswith(hosts_and_base)
    chroot = zk_connect[len(zk_server.hosts) :]
    with kazoo_client(zk_connect) as client:
        client.create("/brokers/ids/0", b"{}", makepath=True)
        assert client.get_children("/") == ["brokers"]
    with kazoo_client(zk_server.hosts) as root:
        assert root.exists(f"{chroot}/brokers/ids/0") is not None


# --- the ensemble -------------------------------------------------------------------------------


def test_ensemble_elects_a_leader_and_survives_losing_a_follower(
    zk_ensemble: LocalEnsemble,
) -> None:
    leader = zk_ensemble.leader_index()
    assert leader is not None
    assert sorted(m or "" for m in zk_ensemble.modes()) == ["follower", "follower", "leader"]
    assert zk_ensemble.hosts.count(",") == 2
    follower = (leader + 1) % 3

    with kazoo_client(zk_ensemble.hosts) as client:
        client.create("/before", b"1")
        zk_ensemble.stop(follower)
        assert zk_ensemble.wait_for_quorum(timeout=30) == leader
        client.create("/after", b"2")  # a majority (2 of 3) still commits writes

        zk_ensemble.start(follower)
        assert zk_ensemble.modes()[follower] == "follower"
    with kazoo_client(zk_ensemble.node_hosts(follower)) as client:
        client.sync("/")
        assert client.exists("/after") is not None  # the restarted node caught up


def test_ensemble_elects_a_new_leader_when_the_leader_stops(zk_ensemble: LocalEnsemble) -> None:
    old_leader = zk_ensemble.wait_for_quorum()
    zk_ensemble.stop(old_leader)
    new_leader = zk_ensemble.wait_for_quorum(timeout=30)
    assert new_leader != old_leader
    with kazoo_client(zk_ensemble.hosts) as client:
        client.create("/after-failover", b"ok")


def test_frozen_ensemble_node_reports_no_mode(zk_ensemble: LocalEnsemble) -> None:
    zk_ensemble.freeze(0)
    try:
        assert zk_ensemble.modes()[0] is None
        assert zk_ensemble.wait_for_quorum(timeout=30) is not None
    finally:
        zk_ensemble.thaw(0)
    wait_for(lambda: zk_ensemble.modes()[0] in ("leader", "follower"), 30, "node 0 to serve")


# --- the command ----------------------------------------------------------------------------


@contextlib.contextmanager
def zookeeper_command(port: int) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """Run ``zk-controller zookeeper start``; yield it and its JVM's pid once it serves."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller", "zookeeper", "start", "--port", str(port)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    work_dir = None
    try:
        assert proc.stdout is not None and proc.stderr is not None
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stderr, selectors.EVENT_READ)
            assert selector.select(timeout=60), "zookeeper start printed nothing within 60 s"
        banner = proc.stderr.readline()
        details = re.search(r"pid (\d+).*; data (\S+), log", banner)
        assert details is not None, banner + proc.stderr.read()
        work_dir = Path(details.group(2)).parent
        assert proc.stdout.readline().strip() == f"127.0.0.1:{port}"
        yield proc, int(details.group(1))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if work_dir is not None and work_dir.name.startswith("zkc-zookeeper-"):
            shutil.rmtree(work_dir, ignore_errors=True)  # left behind when the test kills -9


def test_zookeeper_start_command_serves_until_sigterm(
    zk_local_install: Path, free_port: Callable[[], int]
) -> None:
    port = free_port()
    with zookeeper_command(port) as (proc, jvm_pid):
        assert four_letter_word("127.0.0.1", port, "ruok") == "imok"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert not process_alive(jvm_pid)
        assert listening_addresses(port) == set()  # nothing listens on the port any more


def test_zookeeper_dies_with_its_owner(
    zk_local_install: Path, free_port: Callable[[], int]
) -> None:
    """No orphaned JVMs: a kill -9 of the owning process takes ZooKeeper down too."""
    if shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is missing, so orphaned ZooKeeper JVMs would survive")
    port = free_port()
    with zookeeper_command(port) as (proc, jvm_pid):
        proc.kill()
        proc.wait()
        wait_for(lambda: not process_alive(jvm_pid), 15, "the orphaned JVM to die")


# --- tier resolution (no server needed) -----------------------------------------------------


def test_zk_connect_env_wins_and_starts_nothing() -> None:
    server = resolve_zookeeper(env={"ZK_CONNECT": "zk1:2181,zk2:2181/kafka"}, allow_docker=False)
    assert isinstance(server, ExternalZooKeeper)
    assert (server.tier, server.hosts, server.chroot) == ("external", "zk1:2181,zk2:2181", "/kafka")
    server.close()


def test_missing_java_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on PATH
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(ZooKeeperUnavailable) as excinfo:
        resolve_zookeeper(env={}, allow_docker=False)
    message = str(excinfo.value)
    assert "apt-get install zookeeper" in message
    assert "java" in message
    server = LocalZooKeeper()
    try:
        with pytest.raises(ZooKeeperUnavailable, match="apt-get install zookeeper"):
            server.start()
    finally:
        server.close()


def test_zookeeper_classpath_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZOOKEEPER_CLASSPATH", "/opt/zk/lib/a.jar:/opt/zk/zookeeper-3.8.4.jar")
    assert zookeeper_classpath() == "/opt/zk/lib/a.jar:/opt/zk/zookeeper-3.8.4.jar"
    assert zookeeper_jar() == Path("/opt/zk/zookeeper-3.8.4.jar")


def test_docker_probe_reports_instead_of_raising(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An engine that cannot answer (a socket nobody listens on) is a reason, not an error.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    problem = docker_problem()
    assert problem is not None
    assert "Docker" in problem or "docker" in problem


def test_a_taken_port_is_refused_not_borrowed(zk_standalone: LocalZooKeeper) -> None:
    """A second server on a port another ZooKeeper answers on must fail, not report itself
    ready on the strength of the other server's answers (its own JVM dies on the bind)."""
    second = LocalZooKeeper(port=zk_standalone.port)
    with pytest.raises(ZooKeeperStartError, match="already in use"):
        second.start()
    assert not second.running
    assert zk_standalone.ruok()


def test_an_ensemble_node_that_loses_its_port_is_retried_on_fresh_ports(
    zk_local_install: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node's client port, picked free, is taken before its JVM starts: the ensemble
    starts again on fresh ports, and leaves no node of the failed attempt running."""
    import controller.zk.server_ensemble as ensemble_module

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        real = ensemble_module.free_ports
        calls: list[list[int]] = []

        def rigged(count: int, host: str = "127.0.0.1") -> list[int]:
            ports = real(count, host)
            if not calls:
                ports[3] = taken.getsockname()[1]  # node 1's client port
            calls.append(ports)
            return ports

        monkeypatch.setattr(ensemble_module, "free_ports", rigged)
        ensemble = LocalEnsemble(3, start_timeout=60)
        try:
            ensemble.start()
            assert len(calls) == 2
            assert sorted(ensemble.modes()) == ["follower", "follower", "leader"]
        finally:
            ensemble.close()
