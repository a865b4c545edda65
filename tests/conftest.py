"""Shared fixtures: a real ZooKeeper for every test that needs one (see controller.zk.server).

- ``zk_server`` (session): a running ZooKeeper from the first tier that works: ``ZK_CONNECT``,
  a local JVM from Debian's jars, or a Docker container. ``.hosts`` is the connect string
  without chroot, ``.tier`` says which tier. Shared by the whole run: never stop or freeze it.
- ``zk_connect`` (function): ``"<hosts>/zkc-<uuid>"``, a private chroot per test, created
  before the test and removed (best effort) after it.
- ``zk_standalone`` (function): a fresh private ``LocalZooKeeper``, started; stop, restart,
  freeze and thaw it freely (outage tests).
- ``zk_ensemble`` (function): a fresh 3-node ``LocalEnsemble`` with an elected leader; function
  scope because failure tests leave nodes stopped or frozen (about 1-2 s to start).
- ``zk_local_install`` (function): the ZooKeeper jar, for tests that start their own local
  servers (skips/fails like the others when Java or the jars are missing).
- ``free_port`` (function): the ``free_port()`` callable, e.g. ``port = free_port()``.

When no ZooKeeper can be had, tests skip, except under ``CI=true`` or ``REQUIRE_ZK=1``, where
they fail with the exact problem. A failing test that used ZooKeeper gets the tail of the
server log(s) in its report.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from controller.logs import reset_logging
from controller.zk.kazoo_port import KazooPort
from controller.zk.server import (
    LocalEnsemble,
    LocalZooKeeper,
    ZooKeeperHandle,
    ZooKeeperUnavailable,
    java_executable,
    live_servers,
    local_zookeeper_problem,
    zookeeper_jar,
)
from controller.zk.server import (
    free_port as _free_port,
)
from controller.zk.tiers import DockerZooKeeper, resolve_zookeeper
from tests.support import running

ZK_FIXTURES = frozenset(
    {"zk_server", "zk_connect", "zk_standalone", "zk_ensemble", "zk_local_install"}
)
LOG_TAIL_LINES = 60
_SESSION_SERVER = pytest.StashKey[ZooKeeperHandle]()


def _unavailable(problem: str) -> NoReturn:
    """Fail when CI demands ZooKeeper; otherwise skip (the only skip in the ZooKeeper tests)."""
    if os.environ.get("CI", "").lower() in ("true", "1") or os.environ.get("REQUIRE_ZK") == "1":
        pytest.fail(f"ZooKeeper required (CI=true or REQUIRE_ZK=1) but unavailable: {problem}")
    pytest.skip(f"ZooKeeper unavailable (CI=true would fail here): {problem}")


def _admin_client(hosts: str) -> KazooClient:
    # Explicit, bounded retries: kazoo's implicit defaults back off for up to an hour.
    client = KazooClient(
        hosts=hosts,
        timeout=10.0,
        connection_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0),
        command_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0),
    )
    client.start(timeout=15)
    return client


@pytest.fixture(autouse=True)
def _isolated_logging() -> Iterator[None]:
    """A test that configures logging binds a handler to its own captured stdout; reset it
    afterwards so later tests log (and capture) normally."""
    yield
    reset_logging()


@pytest.fixture(scope="session")
def zk_server(request: pytest.FixtureRequest) -> Iterator[ZooKeeperHandle]:
    try:
        server = resolve_zookeeper()
    except ZooKeeperUnavailable as exc:
        _unavailable(str(exc))
    request.config.stash[_SESSION_SERVER] = server
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def zk_connect(zk_server: ZooKeeperHandle) -> Iterator[str]:
    chroot = f"{zk_server.chroot}/zkc-{uuid.uuid4().hex}"
    client = _admin_client(zk_server.hosts)
    try:
        client.ensure_path(chroot)
    finally:
        client.stop()
        client.close()
    yield f"{zk_server.hosts}{chroot}"
    with contextlib.suppress(Exception):  # best effort: the test may have broken the server
        # KazooPort's recursive delete lists the tree with multi-read and deletes in multis:
        # seconds faster than kazoo's node-by-node delete for tests that leave big trees.
        port = KazooPort(zk_server.hosts, session_timeout=10.0)
        port.start(timeout=10)
        try:
            port.delete(chroot, recursive=True)
        finally:
            port.stop()


@pytest.fixture
def zk_local_install() -> Path:
    problem = local_zookeeper_problem()
    jar = zookeeper_jar()
    if problem is not None or jar is None:
        _unavailable(problem or "no ZooKeeper jar")
    return jar


@pytest.fixture
def zk_standalone(zk_local_install: Path) -> Iterator[LocalZooKeeper]:
    with running(LocalZooKeeper()) as server:
        yield server


@pytest.fixture
def zk_ensemble(zk_local_install: Path) -> Iterator[LocalEnsemble]:
    with running(LocalEnsemble(3)) as ensemble:
        yield ensemble


@pytest.fixture
def free_port() -> Callable[[], int]:
    return _free_port


# --- hooks ----------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "zookeeper: needs a real ZooKeeper server")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Lets `pytest -m "not zookeeper"` run only the tests that need no server.
    for item in items:
        if ZK_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.zookeeper)


def pytest_report_header(config: pytest.Config) -> str:
    connect = os.environ.get("ZK_CONNECT")
    if connect:
        return f"zookeeper: external ZK_CONNECT={connect}"
    problem = local_zookeeper_problem()
    if problem is None:
        return f"zookeeper: local, java={java_executable()} jar={zookeeper_jar()}"
    return f"zookeeper: no local server ({problem}); Docker tier will be probed if needed"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    server = config.stash.get(_SESSION_SERVER, None)
    if server is None:
        return
    started = getattr(server, "startup_seconds", None)
    timing = f", ready in {started:.2f}s" if started is not None else ""
    terminalreporter.write_line(f"zookeeper tier: {server.tier} at {server.hosts}{timing}")


def _server_logs(item: pytest.Item) -> list[tuple[str, str]]:
    """Log tails of the servers this test used or started, each server once."""
    funcargs: dict[str, Any] = getattr(item, "funcargs", {})
    used = [
        funcargs[name] for name in ("zk_server", "zk_standalone", "zk_ensemble") if name in funcargs
    ]
    nodes: list[LocalZooKeeper] = []
    others: list[ZooKeeperHandle] = []
    for handle in used:
        if isinstance(handle, LocalEnsemble):
            nodes.extend(handle.nodes)
        elif isinstance(handle, LocalZooKeeper):
            nodes.append(handle)
        elif isinstance(handle, DockerZooKeeper):
            others.append(handle)
    session = item.config.stash.get(_SESSION_SERVER, None)
    for server in live_servers():  # servers the test started itself
        if server not in nodes and (server is not session or "zk_server" in funcargs):
            nodes.append(server)
    sections = [
        (
            f"ZooKeeper log {node.hosts} ({node.log_path}), last {LOG_TAIL_LINES} lines",
            node.log_tail(LOG_TAIL_LINES),
        )
        for node in nodes
    ]
    sections += [(f"ZooKeeper container log {o.hosts}", o.log_tail(LOG_TAIL_LINES)) for o in others]
    return sections


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    if report.failed:
        with contextlib.suppress(Exception):  # never let log dumping hide the real failure
            for title, text in _server_logs(item):
                report.sections.append((title, text or "(empty)"))
    return report
