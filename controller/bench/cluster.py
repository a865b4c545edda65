"""The benchmark's cluster: one ZooKeeper, a simulated-broker host process, controller processes.

Everything runs on 127.0.0.1. Each population gets its own chroot, so several populations can
share one ZooKeeper (the same server the ``zk_baseline`` scenario measures) without seeing each
other. The controller is the real daemon (``python -m controller run``) in its own process,
configured through ``ZKC_*`` variables; the driver reads its JSON log, its state-change log,
its ``/metrics`` and its ``/proc/PID/status`` from outside, so measuring costs it nothing but
the occasional scrape.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.zk import paths
from controller.zk.endpoints import decode_controller_endpoint
from controller.zk.errors import NoNodeError
from controller.zk.gateway import ZkGateway
from controller.zk.kazoo_port import KazooPort
from controller.zk.server import LocalZooKeeper

# ZooKeeper's heap: 4 znodes per single-partition topic, ~100 B each plus watches.
DEFAULT_ZK_HEAP = "3g"
SESSION_TIMEOUT_MS = 10_000
# The id the driver registers under when it stands in for the previous active controller.
STAND_IN_CONTROLLER_ID = 999


class BenchError(RuntimeError):
    pass


def wait_for(
    condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.05
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def iso_to_epoch(text: str) -> float:
    """``2026-11-22T10:15:30.123456Z`` (or structlog's ``+00:00`` form) as Unix seconds."""
    text = text.replace("Z", "+00:00")
    return datetime.fromisoformat(text).astimezone(UTC).timestamp()


# -- metrics --------------------------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text format as ``{'name{labels}': value}`` (labels as written)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match:
            with contextlib.suppress(ValueError):
                out[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the simulated brokers --------------------------------------------------------------------


class BrokerHost:
    """The ``controller.bench.simbroker`` process, driven over its stdin/stdout."""

    def __init__(self, connect: str, brokers: int, log_path: Path) -> None:
        self._log = log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "controller.bench.simbroker", "--zookeeper", connect,
             "--brokers", str(brokers)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True,
        )  # fmt: skip
        self._lock = threading.Lock()
        hello = self._read()
        if not hello.get("ready"):
            raise BenchError(f"broker host failed to start: {hello}")
        self.ports: dict[int, int] = {int(b): p for b, p in hello["ports"].items()}

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise BenchError(f"broker host exited (code {self.proc.poll()}); see {self._log.name}")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise BenchError(f"broker host: {reply['error']}")
        return reply

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        with self._lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({"cmd": cmd, **args}) + "\n")
            self.proc.stdin.flush()
            return self._read()

    def stats(self) -> dict[str, Any]:
        return self.call("stats")

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.proc.pid)

    def kill(self, broker_id: int) -> float:
        return float(self.call("kill", broker=broker_id)["t0"])

    def start(self, broker_id: int) -> int:
        return int(self.call("start", broker=broker_id)["epoch"])

    def expect(self, broker_id: int, count: int) -> None:
        self.call("expect", broker=broker_id, count=count)

    def reached(self, broker_id: int, count: int) -> float | None:
        at = self.call("reached", broker=broker_id, count=count)["at"]
        return None if at is None else float(at)

    def wait_idle(self, quiet: float = 0.3, timeout: float = 300.0) -> dict[str, Any]:
        """Until no request is being answered and none was for ``quiet`` seconds."""

        def idle() -> dict[str, Any] | None:
            stats = self.stats()
            if stats["inflight"] == 0 and time.time() - stats["last_ack"] >= quiet:
                return stats
            return None

        result: dict[str, Any] = wait_for(idle, timeout, "the brokers to go idle", 0.1)
        return result

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(Exception):
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.flush()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


# -- a controller process -----------------------------------------------------------------------


def last_record_ts(path: Path, to_state: str, tail_bytes: int = 1 << 20) -> float | None:
    """The ts (epoch seconds) of the last whole record ``to_state`` in the last ``tail_bytes``
    of a state-change log, or None. A line still being written (no newline yet) is not read."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    needle = f'"to_state":"{to_state}"'.encode()
    start = max(size - tail_bytes, 0)
    with path.open("rb") as f:
        f.seek(start)
        lines = f.read().split(b"\n")[:-1]
    if start > 0:
        lines = lines[1:]  # the tail began mid-line
    lines = [line for line in lines if needle in line]
    if not lines:
        return None
    return iso_to_epoch(json.loads(lines[-1])["ts"])


class ControllerProcess:
    """``python -m controller run`` with JSON logs to a file, metrics and gRPC on free ports."""

    def __init__(
        self, connect: str, controller_id: int, work_dir: Path, settings: Mapping[str, str]
    ) -> None:
        self.controller_id = controller_id
        self.dir = work_dir / f"controller-{controller_id}-{uuid.uuid4().hex[:6]}"
        self.dir.mkdir(parents=True)
        self.log_path = self.dir / "controller.log"
        self.state_change_log = self.dir / "state-change.log"
        env = {
            **os.environ,
            "ZKC_ZOOKEEPER_CONNECT": connect,
            "ZKC_CONTROLLER_ID": str(controller_id),
            "ZKC_METRICS_LISTEN": "127.0.0.1:0",
            "ZKC_GRPC_LISTEN": "127.0.0.1:0",
            "ZKC_LOG_DIR": str(self.dir),
            "ZKC_LOG_FORMAT": "json",
            "ZKC_ZOOKEEPER_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
            # Leadership only moves when a scenario moves it.
            "ZKC_AUTO_LEADER_REBALANCE_ENABLE": "false",
            **settings,
        }
        env.pop("ZK_CONNECT", None)
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "controller", "run"],
            env=env, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            cwd=self.dir,
        )  # fmt: skip
        self.metrics_address: str | None = None
        self._log_offset = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_advertised(self, port: KazooPort, timeout: float = 60.0) -> None:
        path = paths.controller_endpoint_path(self.controller_id)

        def advertised() -> str | None:
            if self.proc.poll() is not None:
                raise BenchError(f"controller exited with {self.proc.returncode}: {self.tail()}")
            try:
                data, _ = port.get(path)
            except NoNodeError:
                return None
            return decode_controller_endpoint(self.controller_id, data).metrics

        self.metrics_address = wait_for(advertised, timeout, "the controller to start")

    def scrape(self) -> dict[str, float]:
        url = f"http://{self.metrics_address}/metrics"
        with urllib.request.urlopen(url, timeout=30) as response:
            return parse_metrics(response.read().decode())

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise BenchError("no VmRSS in /proc status")

    def mark_log(self) -> None:
        """Later ``log_records`` calls only see records written after this call."""
        self._log.flush()
        self._log_offset = self.log_path.stat().st_size

    def log_records(self) -> Iterator[dict[str, Any]]:
        """JSON log records since ``mark_log``."""
        with self.log_path.open("rb") as f:
            f.seek(self._log_offset)
            for line in f:
                if line.startswith(b"{"):
                    with contextlib.suppress(ValueError):
                        yield json.loads(line)

    def processed(self, event_name: str, since: float) -> float | None:
        """When the last ``event_name`` event finished processing after ``since`` (Unix s)."""
        last = None
        for record in self.log_records():
            if record.get("event") == "processed event" and (
                record.get("controller_event") == event_name
            ):
                at = iso_to_epoch(record["timestamp"])
                if at >= since:
                    last = at
        return last

    def last_state_change(self, to_state: str, tail_bytes: int = 1 << 20) -> float | None:
        """The ts of the last controller record ``to_state`` (e.g. "ready") in the state-change
        log, looking only at its tail (the record is among the last of its event)."""
        return last_record_ts(self.state_change_log, to_state, tail_bytes)

    def tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self, timeout: float = 120.0) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


# -- the cluster --------------------------------------------------------------------------------


class BenchCluster:
    """ZooKeeper (``connect`` given, else a local one), a chroot and the brokers of one
    population, and the controllers started on it."""

    def __init__(
        self,
        work_dir: Path,
        *,
        zookeeper: str | None = None,
        zk_heap: str = DEFAULT_ZK_HEAP,
    ) -> None:
        self.work_dir = work_dir
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self._server: LocalZooKeeper | None = None
        if zookeeper is None:
            self._server = LocalZooKeeper(
                work_dir=work_dir / "zookeeper",
                heap=zk_heap,
                start_timeout=120,
                # G1 as production ZooKeeper runs: the test servers' serial collector stops the
                # server for seconds once it holds millions of znodes (clients then drop their
                # connections on missed pings).
                jvm_args=("-XX:-UseSerialGC", "-XX:+UseG1GC"),
            ).start()
            zookeeper = self._server.hosts
        self.hosts = zookeeper
        self.root = KazooPort(self.hosts, session_timeout=SESSION_TIMEOUT_MS / 1000)
        self.root.start()

    @property
    def zookeeper_pid(self) -> int | None:
        return self._server.pid if self._server is not None else None

    def population(self, name: str, brokers: int) -> Population:
        chroot = f"/zkc-bench-{name}-{uuid.uuid4().hex[:8]}"
        self.root.ensure_path(chroot)
        return Population(self, chroot, brokers)

    def close(self) -> None:
        self.root.stop()
        if self._server is not None:
            self._server.close()


class Population:
    """One chroot: its admin session, its broker host and its controllers."""

    def __init__(self, cluster: BenchCluster, chroot: str, brokers: int) -> None:
        self.cluster = cluster
        self.chroot = chroot
        self.connect = cluster.hosts + chroot
        self.broker_count = brokers
        self.admin = KazooPort(self.connect, session_timeout=SESSION_TIMEOUT_MS / 1000)
        self.admin.start()
        self.broker_host: BrokerHost | None = None
        self.controllers: list[ControllerProcess] = []
        self._stand_in: KazooPort | None = None

    def start_brokers(self) -> BrokerHost:
        log = self.cluster.work_dir / f"brokers{self.chroot.replace('/', '-')}.log"
        self.broker_host = BrokerHost(self.connect, self.broker_count, log)
        return self.broker_host

    def start_controller(
        self, controller_id: int = 1, settings: Mapping[str, str] | None = None
    ) -> ControllerProcess:
        process = ControllerProcess(
            self.connect, controller_id, self.cluster.work_dir, settings or {}
        )
        self.controllers.append(process)
        process.wait_advertised(self.admin)
        return process

    # -- standing in for the previous controller ---------------------------------------------

    def hold_controller(self) -> None:
        """Become the active controller (a bumped epoch, our own session), so that a controller
        started now stands by until ``release_controller``."""
        port = KazooPort(self.connect, session_timeout=SESSION_TIMEOUT_MS / 1000)
        port.start()
        gateway = ZkGateway(port)
        gateway.ensure_persistent_paths()
        wait_for(
            lambda: port.exists(paths.CONTROLLER) is None, 60, "the active controller to resign"
        )
        gateway.register_controller_and_increment_epoch(STAND_IN_CONTROLLER_ID)
        self._stand_in = port

    def release_controller(self) -> float:
        """End the stand-in's session; returns when the close began (Unix seconds)."""
        assert self._stand_in is not None
        began = time.time()
        self._stand_in.stop()
        self._stand_in = None
        return began

    def close(self, delete: bool = True) -> None:
        for controller in self.controllers:
            controller.stop()
        if self.broker_host is not None:
            self.broker_host.close()
        if self._stand_in is not None:
            self._stand_in.stop()
        self.admin.stop()
        if delete:
            # Keeps the shared ZooKeeper's heap bounded across populations.
            with contextlib.suppress(Exception):
                self.cluster.root.delete(self.chroot, recursive=True)
