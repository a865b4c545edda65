"""The broker's controlled-shutdown loop (``controller.broker.shutdown``) against controllers
that cannot answer: ZooKeeper is the in-memory fake, the controller addresses are real sockets
(a closed port, a port that accepts and never speaks), and the backoff is recorded, not slept.

Kafka fails an attempt as soon as the connection to the controller fails (``awaitReady``), so
an unreachable controller costs the backoffs only; the request timeout bounds only a
controller that accepts the connection and does not answer."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from structlog.testing import capture_logs

from controller.admin.controller_client import ControllerClient, NoActiveControllerError
from controller.api.v1 import controller_pb2
from controller.broker.shutdown import ControlledShutdownSettings, controlled_shutdown
from controller.security.tls import ChannelOpener, ChannelOptions
from controller.zk import paths
from controller.zk.codecs import encode_controller
from controller.zk.endpoints import ControllerEndpoint, encode_controller_endpoint
from controller.zk.memory import MemoryZooKeeper
from controller.zk.memory_session import MemoryZkSession

CONTROLLER_ID = 7
REQUEST_TIMEOUT_MS = 10_000


class _Counter(grpc.UnaryUnaryClientInterceptor):
    def __init__(self) -> None:
        self.calls = 0

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        self.calls += 1
        return continuation(details, request)


class CountingOpener(ChannelOpener):
    """Plaintext channels that count the RPCs sent through them."""

    def __init__(self) -> None:
        super().__init__()
        self.counter = _Counter()

    @property
    def rpcs(self) -> int:
        return self.counter.calls

    def open(self, target: str, options: ChannelOptions = ()) -> grpc.Channel:
        return grpc.intercept_channel(super().open(target, options), self.counter)


def closed_port() -> int:
    """A port nothing listens on (bound, then released): connecting is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose kernel accepts connections that nobody ever reads: a hung controller."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield int(s.getsockname()[1])


def zk_naming(controller_id: int, grpc_address: str | None) -> MemoryZkSession:
    """/controller names ``controller_id``; its endpoint is ``grpc_address`` (None: absent)."""
    zk = MemoryZooKeeper().open_session()
    zk.create(paths.CONTROLLER, encode_controller(controller_id, 1), ephemeral=True)
    if grpc_address is not None:
        endpoint = ControllerEndpoint(controller_id, grpc_address, "127.0.0.1:1")
        zk.create(
            paths.controller_endpoint_path(controller_id),
            encode_controller_endpoint(endpoint),
            makepath=True,
        )
    return zk


def run_loop(
    zk: MemoryZkSession,
    opener: ChannelOpener,
    settings: ControlledShutdownSettings,
    abandon: Callable[[], str | None] | None = None,
) -> tuple[bool, list[float], float, list[dict[str, Any]]]:
    sleeps: list[float] = []
    extra = {} if abandon is None else {"abandon": abandon}
    started = time.monotonic()
    with capture_logs() as logs:
        ok = controlled_shutdown(
            zk, 1, lambda: 5, settings, sleep=sleeps.append, channel_opener=opener, **extra
        )
    return ok, sleeps, time.monotonic() - started, logs


def failures(logs: list[dict[str, Any]]) -> list[str]:
    return [e["error"] for e in logs if e["event"] == "controlled shutdown attempt failed"]


def test_a_refused_connection_fails_each_attempt_with_one_rpc() -> None:
    zk = zk_naming(CONTROLLER_ID, f"127.0.0.1:{closed_port()}")
    opener = CountingOpener()
    settings = ControlledShutdownSettings(
        max_retries=3, retry_backoff_ms=5000, request_timeout_ms=REQUEST_TIMEOUT_MS
    )
    ok, sleeps, elapsed, logs = run_loop(zk, opener, settings)
    assert not ok
    assert opener.rpcs == 3  # one RPC per attempt, not one every 0.2 s until the timeout
    assert sleeps == [5.0, 5.0]  # only the backoffs are waited
    assert elapsed < REQUEST_TIMEOUT_MS / 1000 / 2  # generous: all three attempts together
    errors = failures(logs)
    assert len(errors) == 3
    assert all(f"controller {CONTROLLER_ID} at 127.0.0.1:" in e for e in errors), errors
    assert all("UNAVAILABLE" in e for e in errors), errors


def test_a_controller_without_an_advertised_address_fails_the_attempt_at_once() -> None:
    zk = zk_naming(CONTROLLER_ID, None)
    opener = CountingOpener()
    settings = ControlledShutdownSettings(
        max_retries=2, retry_backoff_ms=5000, request_timeout_ms=REQUEST_TIMEOUT_MS
    )
    ok, sleeps, elapsed, logs = run_loop(zk, opener, settings)
    assert not ok
    assert opener.rpcs == 0
    assert sleeps == [5.0]
    assert elapsed < REQUEST_TIMEOUT_MS / 1000 / 2
    assert failures(logs) == [
        f"could not reach the active controller: controller {CONTROLLER_ID} (in /controller) "
        "has not advertised an address: it is not a zk-controller (a Kafka broker acting as "
        "controller?), or it has only just started"
    ] * 2


def test_a_controller_that_accepts_and_hangs_is_bounded_by_the_request_timeout(
    silent_port: int,
) -> None:
    zk = zk_naming(CONTROLLER_ID, f"127.0.0.1:{silent_port}")
    opener = CountingOpener()
    settings = ControlledShutdownSettings(
        max_retries=2, retry_backoff_ms=0, request_timeout_ms=500
    )
    ok, _, elapsed, logs = run_loop(zk, opener, settings)
    assert not ok
    assert opener.rpcs == 2
    assert all("DEADLINE_EXCEEDED" in e for e in failures(logs)), failures(logs)
    assert elapsed >= 2 * 0.5 * 0.9  # each attempt did wait for its request timeout


def test_abandon_skips_the_remaining_attempts_and_backoff() -> None:
    """The broker's second SIGTERM/SIGINT: asked after each failed attempt and backoff."""
    zk = zk_naming(CONTROLLER_ID, f"127.0.0.1:{closed_port()}")
    opener = CountingOpener()
    settings = ControlledShutdownSettings(max_retries=5, retry_backoff_ms=5000)
    answers = iter([None, "SIGTERM received during the controlled shutdown"])
    ok, sleeps, _, logs = run_loop(zk, opener, settings, abandon=lambda: next(answers))
    assert not ok
    assert (opener.rpcs, sleeps) == (1, [5.0])  # attempt 1, its backoff, then no more
    skipped = [e for e in logs if e["event"].startswith("skipping the remaining")]
    assert len(skipped) == 1
    assert skipped[0]["reason"] == "SIGTERM received during the controlled shutdown"
    assert skipped[0]["attempts_skipped"] == 4

    # A reason already there after an attempt skips the backoff too.
    opener = CountingOpener()
    ok, sleeps, _, _ = run_loop(zk, opener, settings, abandon=lambda: "SIGINT")
    assert (ok, opener.rpcs, sleeps) == (False, 1, [])


def test_the_admin_client_still_retries_until_its_deadline() -> None:
    """The CLI tools keep waiting for a controller to come back (``controller``), only
    ``controller_once`` gives up after one try."""
    zk = zk_naming(CONTROLLER_ID, f"127.0.0.1:{closed_port()}")
    request = controller_pb2.ControlledShutdownRequest(broker_id=1, broker_epoch=5)
    opener = CountingOpener()
    client = ControllerClient(zk, timeout_s=1.0, channel_opener=opener)
    with client, pytest.raises(NoActiveControllerError, match="within 1s") as failed:
        client.controller("ControlledShutdown", request)
    assert opener.rpcs > 1
    # A plaintext tool facing a TLS controller sees only UNAVAILABLE: the message says so.
    assert "--tls-ca-file" in str(failed.value)
    opener = CountingOpener()
    client = ControllerClient(zk, timeout_s=1.0, channel_opener=opener)
    with client, pytest.raises(NoActiveControllerError, match="UNAVAILABLE"):
        client.controller_once("ControlledShutdown", request)
    assert opener.rpcs == 1
