"""Choosing a ZooKeeper for tests, the embedded default and benchmarks: the three tiers.

1. ``ZK_CONNECT`` set: an external ensemble, used as is (nothing is started).
2. A local Java process (``controller.zk.server.LocalZooKeeper``) from Debian's jars.
3. A ``zookeeper:3.8`` container through testcontainers, when a Docker engine answers.

:func:`resolve_zookeeper` tries them in that order.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from typing import Any, Self

from controller.zk.server import (
    DEFAULT_HEAP,
    DOCKER_IMAGE,
    FOUR_LETTER_WORDS,
    INSTALL_HINT,
    MAX_SESSION_TIMEOUT_MS,
    MIN_SESSION_TIMEOUT_MS,
    TICK_TIME_MS,
    LocalZooKeeper,
    ZooKeeperHandle,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
    four_letter_word,
    local_zookeeper_problem,
)
from controller.zk.server_local import _Managed

# ---------------------------------------------------------------------------------------------
# Tier 1: external, tier 3: Docker


class ExternalZooKeeper:
    """A ZooKeeper someone else runs (``ZK_CONNECT``). Nothing to start or stop."""

    tier = "external"

    def __init__(self, connect: str) -> None:
        hosts, slash, chroot = connect.strip().partition("/")
        self.hosts = hosts
        self.chroot = (slash + chroot).rstrip("/")

    def close(self) -> None:
        pass

    def log_tail(self, lines: int = 80) -> str:
        return ""

    def __repr__(self) -> str:
        return f"<ExternalZooKeeper {self.hosts}{self.chroot}>"


def docker_problem() -> str | None:
    """Why the Docker tier cannot work here, or None when a Docker engine answers."""
    try:
        import docker  # optional: the [docker] extra
        import testcontainers  # noqa: F401
    except ImportError as exc:
        return f"testcontainers/docker not installed ({exc.name}); pip install '.[docker]'"
    try:
        client = docker.from_env(timeout=5)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # docker raises DockerException, requests errors, ...
        return f"no Docker engine answered: {exc}"
    return None


def docker_available() -> bool:
    return docker_problem() is None


class DockerZooKeeper(_Managed):
    """``zookeeper:3.8`` in a container (testcontainers), with the local servers' settings."""

    tier = "docker"
    chroot = ""

    def __init__(self, image: str = DOCKER_IMAGE, start_timeout: float = 120.0) -> None:
        self.image = image
        self.start_timeout = start_timeout
        self.hosts = ""
        self._container: Any = None

    def start(self) -> Self:
        # Imported here: testcontainers is optional, and constructing a container already
        # talks to the Docker engine (it raises when there is none).
        from testcontainers.core.container import DockerContainer

        container = (
            DockerContainer(self.image)
            .with_exposed_ports(2181)
            .with_env("ZOO_4LW_COMMANDS_WHITELIST", FOUR_LETTER_WORDS)
            .with_env("ZOO_TICK_TIME", str(TICK_TIME_MS))
            .with_env("ZOO_ADMINSERVER_ENABLED", "false")
            .with_env(
                "ZOO_CFG_EXTRA",
                f"minSessionTimeout={MIN_SESSION_TIMEOUT_MS} "
                f"maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}",
            )
        )
        container.start()
        self._container = container
        host = container.get_container_host_ip()
        port = int(container.get_exposed_port(2181))
        self.hosts = f"{host}:{port}"
        deadline = time.monotonic() + self.start_timeout
        while True:
            with contextlib.suppress(OSError):
                if four_letter_word(host, port, "ruok", 1.0) == "imok":
                    return self
            if time.monotonic() > deadline:
                tail = self.log_tail(40)
                self.close()
                raise ZooKeeperStartError(f"container {self.image} never answered ruok:\n{tail}")
            time.sleep(0.2)

    def close(self) -> None:
        if self._container is not None:
            with contextlib.suppress(Exception):
                self._container.stop()
            self._container = None

    def log_tail(self, lines: int = 80) -> str:
        if self._container is None:
            return ""
        try:
            out, err = self._container.get_logs()
        except Exception as exc:  # the container may already be gone
            return f"(no container logs: {exc})"
        text = (out or b"").decode("utf-8", "replace") + (err or b"").decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])


def docker_zookeeper(image: str = DOCKER_IMAGE, start_timeout: float = 120.0) -> DockerZooKeeper:
    """Start a ZooKeeper container; raise ZooKeeperUnavailable when Docker cannot run it."""
    problem = docker_problem()
    if problem is not None:
        raise ZooKeeperUnavailable(f"Docker tier unavailable: {problem}")
    return DockerZooKeeper(image, start_timeout).start()


# ---------------------------------------------------------------------------------------------
# The resolver


def resolve_zookeeper(
    *,
    env: Mapping[str, str] | None = None,
    port: int | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    heap: str = DEFAULT_HEAP,
    allow_local: bool = True,
    allow_docker: bool = True,
    start_timeout: float = 60.0,
) -> ZooKeeperHandle:
    """A running ZooKeeper: ``ZK_CONNECT``, else a local JVM, else a container.

    The caller owns the result and must ``close()`` it (a no-op for an external ensemble).
    """
    env = os.environ if env is None else env
    connect = env.get("ZK_CONNECT", "").strip()
    if connect:
        return ExternalZooKeeper(connect)
    reasons = ["ZK_CONNECT is not set (host:port[,host:port...] of a running ZooKeeper)"]
    if allow_local:
        problem = local_zookeeper_problem()
        if problem is None:
            server = LocalZooKeeper(port, data_dir, heap=heap, start_timeout=start_timeout)
            try:
                return server.start()
            except (ZooKeeperStartError, ZooKeeperUnavailable, OSError) as exc:
                server.close()
                reasons.append(f"local ZooKeeper failed to start: {exc}")
        else:
            reasons.append(f"local ZooKeeper: {problem}")
    if allow_docker:
        try:
            return docker_zookeeper(start_timeout=max(start_timeout, 120.0))
        except Exception as exc:  # any Docker failure just means this tier is out
            reasons.append(f"Docker: {exc}")
    raise ZooKeeperUnavailable(
        "no ZooKeeper available:\n  - " + "\n  - ".join(reasons) + f"\nTo fix: {INSTALL_HINT}"
    )
