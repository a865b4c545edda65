"""Helpers shared by integration tests: controller and broker processes, polling, scraping."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from controller.zk.server import ZooKeeperStartError, free_port

T = TypeVar("T")
REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "controller"]


def wait_until(
    predicate: Callable[[], T], timeout: float = 20.0, interval: float = 0.05, what: str = ""
) -> T:
    """Poll ``predicate`` until it returns a truthy value; fail with ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:
            last_error = exc
        if time.monotonic() > deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            raise AssertionError(
                f"timed out after {timeout}s waiting for {what or predicate}{detail}"
            )
        time.sleep(interval)


def process_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie nobody reaped yet is dead for our purposes


def kazoo(connect: str) -> KazooClient:
    client = KazooClient(
        hosts=connect,
        connection_retry=KazooRetry(max_tries=-1, max_delay=1.0),
        command_retry=KazooRetry(max_tries=5, max_delay=1.0),
    )
    client.start(timeout=15)
    return client


def scrape(url: str) -> dict[str, float]:
    """Parse a Prometheus text exposition into {series: value}."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            continue
    return out


class ControllerProcess:
    """``zk-controller run`` as a child process with its own ports and log dir."""

    def __init__(
        self,
        connect: str,
        controller_id: int,
        work_dir: Path,
        *,
        session_timeout_ms: int = 4000,
        extra: list[str] | None = None,
    ) -> None:
        self.controller_id = controller_id
        self.metrics_port = free_port()
        self.grpc_port = free_port()
        self.log_dir = work_dir / f"controller-{controller_id}"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.stdout_path = self.log_dir / "stdout.log"
        args = [
            *CLI, "run",
            "--zookeeper", connect,
            "--controller-id", str(controller_id),
            "--metrics-listen", f"127.0.0.1:{self.metrics_port}",
            "--grpc-listen", f"127.0.0.1:{self.grpc_port}",
            "--log-dir", str(self.log_dir),
            "--log-format", "json",
            "--zookeeper-session-timeout-ms", str(session_timeout_ms),
            *(extra or []),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._out = open(self.stdout_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            args, stdout=self._out, stderr=subprocess.STDOUT, env=env, cwd=REPO
        )

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    @property
    def state_change_log(self) -> Path:
        return self.log_dir / "state-change.log"

    def metrics(self) -> dict[str, float]:
        return scrape(self.metrics_url)

    def active(self) -> float | None:
        try:
            return self.metrics().get("kafka_controller_active_controller_count")
        except OSError:
            return None

    def readyz(self) -> dict[str, Any]:
        url = f"http://127.0.0.1:{self.metrics_port}/readyz"
        try:
            return json.loads(urllib.request.urlopen(url, timeout=5).read())
        except urllib.error.HTTPError as exc:
            return json.loads(exc.read())

    def wait_serving(self, timeout: float = 30.0) -> None:
        wait_until(
            lambda: self.active() is not None, timeout, what=f"controller {self.controller_id} up"
        )

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def terminate(self, timeout: float = 15.0) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def output(self) -> str:
        if not self._out.closed:
            self._out.flush()
        return self.stdout_path.read_text(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._out.close()


def controller_in_zk(client: KazooClient) -> tuple[int | None, int | None]:
    """(controller id or None, epoch or None) as ZooKeeper holds them."""
    controller = None
    if client.exists("/controller"):
        try:
            controller = json.loads(client.get("/controller")[0])["brokerid"]
        except Exception:
            controller = None
    epoch = None
    if client.exists("/controller_epoch"):
        try:
            epoch = int(client.get("/controller_epoch")[0])
        except ValueError:
            epoch = None
    return controller, epoch


class _Server(Protocol):
    def start(self) -> None: ...

    def close(self) -> None: ...


S = TypeVar("S", bound=_Server)


@contextmanager
def running(server: S) -> Iterator[S]:
    """Start a local ZooKeeper server or ensemble for a fixture: a failed start fails the
    test (with the server's log in the message) and the server is closed either way."""
    try:
        server.start()
    except ZooKeeperStartError as exc:
        server.close()
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.close()
