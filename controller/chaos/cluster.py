"""The chaos cluster: a 3-node ZooKeeper ensemble, controller processes and reference brokers.

Every piece is a real process on 127.0.0.1, started the way an operator would start it
(``zk-controller run``, ``zk-controller broker``), so ``kill -9``, SIGSTOP and session expiry
hit exactly what they would hit in production. Each process gets its own process group (a
terminal's Ctrl-C reaches only the chaos driver, which then stops everything in order) and,
where ``setpriv`` exists, a parent-death signal so nothing outlives a crashed driver.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.retry import KazooRetry

from controller.chaos.sessions import expire_session
from controller.zk.server import LocalEnsemble, free_port

CHROOT = "/chaos"
# Brokers run with a shorter lag limit than Kafka's 30 s so that ISR shrink and expansion
# through AlterPartition happen within one fault's window.
BROKER_REPLICA_LAG_MS = 8000


@dataclass(frozen=True)
class ClusterSettings:
    controllers: int = 3
    brokers: int = 5
    # zookeeper.session.timeout.ms of controllers and brokers alike: a dead process is noticed
    # after this long, so it sets the pace of every fault.
    session_timeout_ms: int = 6000
    zk_heap: str = "192m"


class ChaosProcess:
    """One child process: start, SIGKILL, SIGSTOP/SIGCONT, SIGTERM. Output appends to one log
    file across restarts (a marker line separates the lives)."""

    def __init__(self, name: str, log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.frozen = False
        self.starts = 0
        # Whether the process should be running: the supervisor restarts a desired process
        # that exited, as systemd or Kubernetes would.
        self.desired = False

    def command(self) -> list[str]:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        if self.running:
            return
        command = [sys.executable, "-m", "controller", *self.command()]
        # Nothing may outlive a crashed driver (a broker would retry ZooKeeper forever). The
        # death signal is tied to the forking *thread*: processes are started by the main
        # thread and the supervisor, which both live until the cluster is closed.
        setpriv = shutil.which("setpriv")
        if setpriv:
            command = [setpriv, "--pdeathsig", "KILL", *command]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("ZK_CONNECT", None)  # the command line says where ZooKeeper is
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"--- chaos: starting {self.name} at {time.time():.3f}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                process_group=0,
            )
        self.frozen = False
        self.starts += 1
        self.desired = True

    def _signal(self, signum: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signum)

    def kill(self) -> None:
        """``kill -9``: no resignation, no session close; ZooKeeper notices after the timeout."""
        if self.proc is None:
            return
        self._signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        self.frozen = False

    def freeze(self) -> None:
        self._signal(signal.SIGSTOP)
        self.frozen = True

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)
        self.frozen = False

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM (after SIGCONT: a frozen process cannot act on it), then SIGKILL."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self._signal(signal.SIGCONT)
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self.frozen = False


class ControllerNode(ChaosProcess):
    def __init__(self, controller_id: int, connect: str, work_dir: Path, session_ms: int) -> None:
        self.controller_id = controller_id
        self.connect = connect
        self.log_dir = work_dir / f"controller-{controller_id}"
        self.session_ms = session_ms
        self.metrics_port = 0
        super().__init__(f"controller {controller_id}", self.log_dir / "stdout.log")

    @property
    def state_change_log(self) -> Path:
        return self.log_dir / "state-change.log"

    def command(self) -> list[str]:
        self.metrics_port = free_port()
        return [
            "run",
            "--zookeeper", self.connect,
            "--controller-id", str(self.controller_id),
            "--metrics-listen", f"127.0.0.1:{self.metrics_port}",
            "--grpc-listen", "127.0.0.1:0",
            "--log-dir", str(self.log_dir),
            "--log-format", "json",
            "--zookeeper-session-timeout-ms", str(self.session_ms),
            "--request-timeout-ms", "5000",
        ]  # fmt: skip


class BrokerNode(ChaosProcess):
    def __init__(self, broker_id: int, connect: str, work_dir: Path, session_ms: int) -> None:
        self.broker_id = broker_id
        self.connect = connect
        self.session_ms = session_ms
        super().__init__(f"broker {broker_id}", work_dir / f"broker-{broker_id}.log")

    def command(self) -> list[str]:
        return [
            "broker",
            "--zookeeper", self.connect,
            "--broker-id", str(self.broker_id),
            "--listen", "127.0.0.1:0",
            "--session-timeout-ms", str(self.session_ms),
            "--replica-lag-time-max-ms", str(BROKER_REPLICA_LAG_MS),
            # A chaos stop is a crash or a restart, never a planned drain.
            "--controlled-shutdown-enable", "false",
            # DEBUG: every controller request the broker accepts is logged (the checker reads
            # them); rejections are logged at WARNING anyway.
            "--log-level", "DEBUG",
        ]  # fmt: skip


def admin_client(hosts: str, timeout_s: float = 10.0) -> KazooClient:
    """A client that rides out the ensemble's own faults (bounded retries per call)."""
    client = KazooClient(
        hosts=hosts,
        timeout=timeout_s,
        connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
        command_retry=KazooRetry(max_tries=20, delay=0.1, max_delay=1.0),
    )
    client.start(timeout=30)
    return client


@dataclass(frozen=True)
class ProcessExit:
    name: str
    code: int
    at: float


class ChaosCluster:
    """Starts and stops everything; ``close()`` stops every process it started, in any state.

    A supervisor thread restarts any process that should run and exited (a broker started
    while its previous session still holds its id exits with code 4 until that session
    expires, as a Kafka broker does); every such exit is recorded."""

    def __init__(self, work_dir: Path, settings: ClusterSettings) -> None:
        # Absolute: ZooKeeper runs in its own directory and must still find its config.
        work_dir = work_dir.resolve()
        self.work_dir = work_dir
        self.settings = settings
        work_dir.mkdir(parents=True, exist_ok=True)
        self.ensemble = LocalEnsemble(3, work_dir=work_dir / "zookeeper", heap=settings.zk_heap)
        self.controllers: dict[int, ControllerNode] = {}
        self.brokers: dict[int, BrokerNode] = {}
        self._zk: KazooClient | None = None
        self.lock = threading.RLock()  # fault injectors and the supervisor
        self.exits: list[ProcessExit] = []
        self._closing = threading.Event()
        self._supervisor: threading.Thread | None = None

    @property
    def hosts(self) -> str:
        return self.ensemble.hosts

    @property
    def connect(self) -> str:
        return self.hosts + CHROOT

    @property
    def zk(self) -> KazooClient:
        """The driver's own session on the chroot (admin operations, fault targeting)."""
        assert self._zk is not None, "cluster not started"
        return self._zk

    def start(self) -> None:
        self.ensemble.start()
        root = admin_client(self.hosts)
        try:
            root.ensure_path(CHROOT)
        finally:
            root.stop()
            root.close()
        self._zk = admin_client(self.connect)
        ms = self.settings.session_timeout_ms
        for i in range(self.settings.controllers):
            self.controllers[i] = ControllerNode(i, self.connect, self.work_dir, ms)
        for i in range(self.settings.brokers):
            self.brokers[i] = BrokerNode(i, self.connect, self.work_dir, ms)
        for node in [*self.controllers.values(), *self.brokers.values()]:
            node.start()
        self._supervisor = threading.Thread(
            target=self._supervise, name="chaos-supervisor", daemon=True
        )
        self._supervisor.start()

    def _supervise(self) -> None:
        while not self._closing.wait(0.5):
            with self.lock:
                for node in [*self.controllers.values(), *self.brokers.values()]:
                    if node.desired and node.proc is not None and node.proc.poll() is not None:
                        self.exits.append(ProcessExit(node.name, node.proc.returncode, time.time()))
                        node.start()

    def close(self) -> None:
        """Thaw and stop every process (brokers, controllers, then ZooKeeper)."""
        self._closing.set()
        if self._supervisor is not None:
            self._supervisor.join(10)
        for index, zk_node in enumerate(self.ensemble.nodes):
            if zk_node.frozen:
                self.ensemble.thaw(index)
        nodes: list[ChaosProcess] = [*self.brokers.values(), *self.controllers.values()]
        for node in nodes:  # SIGTERM all first: they shut down in parallel
            node.desired = False
            node.thaw()
            node._signal(signal.SIGTERM)
        for node in nodes:
            node.stop(timeout=10)
        if self._zk is not None:
            with contextlib.suppress(Exception):
                self._zk.stop()
                self._zk.close()
            self._zk = None
        self.ensemble.stop()

    # -- queries -------------------------------------------------------------------------------

    def active_controller(self) -> tuple[int, int] | None:
        """(controller id, session id) of the ``/controller`` holder, or None."""
        try:
            data, stat = self.zk.get("/controller")
        except NoNodeError:
            return None
        try:
            controller_id = int(json.loads(data)["brokerid"])
        except (ValueError, KeyError, TypeError):
            return None
        return controller_id, stat.ephemeralOwner

    def registered_brokers(self) -> set[int]:
        try:
            return {int(b) for b in self.zk.get_children("/brokers/ids")}
        except NoNodeError:
            return set()

    def wait_for(self, condition: object, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not callable(condition) or not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.1)

    def wait_settled(self, timeout: float = 120.0) -> None:
        """Every controller process up, one of them active, every broker registered."""

        def settled() -> bool:
            return self.active_controller() is not None and self.registered_brokers() == set(
                self.brokers
            )

        self.wait_for(settled, timeout, "an active controller and every broker registered")

    # -- faults' primitives ---------------------------------------------------------------------

    def expire_session(self, session_id: int) -> None:
        expire_session(self.hosts, session_id)

    def controller_node(self, controller_id: int) -> ControllerNode:
        return self.controllers[controller_id]
