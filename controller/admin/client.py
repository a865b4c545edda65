"""A ZooKeeper session for admin commands (``--zookeeper`` / ``ZK_CONNECT``).

Admin writes are not controller writes: like Kafka's ``AdminZkClient`` they are unfenced, and
the controller reacts to them through its watches. The session is a ``KazooPort``; with a
``ZkSecurity`` (``controller.security.acls``) it authenticates and creates znodes with Kafka's
ACLs, as Kafka's admin tools do when ``zookeeper.set.acl`` is on. A connect string whose chroot
does not exist is refused: it almost always means a wrong connect string, and writing there
would create a second, empty cluster tree.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from controller.admin.assignment import AdminError
from controller.config import (
    canonical_zookeeper_connect,
    format_zookeeper_connect,
    parse_zookeeper_connect,
)
from controller.security.acls import NO_ZK_SECURITY, ZkSecurity
from controller.zk.errors import ConnectionLossError, NoAuthError
from controller.zk.kazoo_port import KazooPort
from controller.zk.kazoo_support import unresolvable_hosts

ZK_CONNECT_ENV = "ZK_CONNECT"
# Kafka's TopicCommand opens its ZooKeeper client with a 30 s session and connection timeout.
DEFAULT_SESSION_TIMEOUT_MS = 30_000


class AdminConnectError(AdminError):
    """No usable connect string, or no session could be opened."""


def resolve_connect(flag: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The connect string from ``--zookeeper`` (first) or ``ZK_CONNECT``, validated."""
    env = os.environ if environ is None else environ
    source = "--zookeeper"
    value = flag
    if value is None:
        source, value = ZK_CONNECT_ENV, env.get(ZK_CONNECT_ENV)
    if value is None or not value.strip():
        raise AdminConnectError(
            "no ZooKeeper connect string: pass --zookeeper HOST:PORT[/CHROOT] "
            f"or set {ZK_CONNECT_ENV}"
        )
    try:
        return canonical_zookeeper_connect(value)
    except ValueError as exc:
        raise AdminConnectError(f"invalid ZooKeeper connect string from {source}: {exc}") from None


@contextmanager
def admin_session(
    connect: str,
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
    security: ZkSecurity = NO_ZK_SECURITY,
) -> Iterator[KazooPort]:
    """Open a session on ``connect`` (hosts and optional chroot), yield its port, close it.

    Waits up to the session timeout for the connection. Raises ``AdminConnectError`` when the
    connect string is invalid, ZooKeeper cannot be reached, or the chroot does not exist.
    """
    if not 0 < session_timeout_ms <= 2**31 - 1:  # ZooKeeper's is an int32 of milliseconds
        raise AdminConnectError(
            f"session timeout must be 1..{2**31 - 1} ms, got {session_timeout_ms} ms"
        )
    try:
        hosts, chroot = parse_zookeeper_connect(connect)
    except ValueError as exc:
        raise AdminConnectError(f"invalid ZooKeeper connect string: {exc}") from None
    where = ",".join(f"{h.host}:{h.port}" for h in hosts)
    timeout = session_timeout_ms / 1000
    connect = format_zookeeper_connect(hosts, chroot)
    # A name DNS says does not exist will not within the wait: say so now (a daemon waits on,
    # as its names may be published after it starts; a tool is run again).
    unknown = unresolvable_hosts(connect, definitely=True)
    if len(unknown) == len(hosts):
        raise AdminConnectError(
            f"cannot resolve the ZooKeeper host(s) {', '.join(unknown)}: check the connect string"
        )
    port = KazooPort(connect, timeout, **security.port_options())
    try:
        with warnings.catch_warnings():
            # kazoo warns about a missing chroot itself; the check below says it clearly.
            warnings.filterwarnings("ignore", message="No chroot path exists")
            port.start(timeout)
    except NoAuthError as exc:
        raise AdminConnectError(f"ZooKeeper at {where}: {exc}") from None
    except ConnectionLossError:
        unresolved = unresolvable_hosts(connect)  # any resolver failure explains the wait
        why = f" (cannot resolve {', '.join(unresolved)})" if unresolved else ""
        raise AdminConnectError(
            f"could not connect to ZooKeeper at {where} within {timeout:g}s{why}"
        ) from None
    try:
        if chroot is not None and port.exists("/") is None:
            raise AdminConnectError(
                f"ZooKeeper chroot {chroot} does not exist at {where}: check the connect "
                "string (a controller or broker creates the chroot when it first starts)"
            )
        yield port
    finally:
        port.stop()
