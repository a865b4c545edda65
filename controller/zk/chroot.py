"""Kafka's ``createChrootIfNecessary``: a new cluster's chroot is created by the first
controller or broker to start, from a short session on the ensemble's root.

Both the controller daemon and the reference broker call it before opening their chrooted
session: whichever starts first on a fresh chroot must not fail for want of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from controller.config import format_zookeeper_connect, parse_zookeeper_connect
from controller.zk.kazoo_port import KazooPort

log = structlog.get_logger("controller.zk.chroot")


def create_chroot_if_necessary(
    connect: str,
    *,
    session_timeout_s: float,
    connection_timeout_s: float,
    port_options: Mapping[str, Any] | None = None,
) -> str | None:
    """Create the chroot of ``connect`` when it is missing; the chroot created, else None.

    ``port_options`` are the session's security options (``ZkSecurity.port_options()``), so
    the chroot gets the same ACL as the znodes under it. Raises ``ZkError`` when ZooKeeper
    cannot be reached or refuses the creation.
    """
    hosts, chroot = parse_zookeeper_connect(connect)
    if chroot is None:
        return None
    root = KazooPort(
        format_zookeeper_connect(hosts),
        session_timeout=session_timeout_s,
        **dict(port_options or {}),
    )
    root.start(timeout=connection_timeout_s)
    try:
        if root.exists(chroot) is not None:
            return None
        root.ensure_path(chroot)
        log.info("created the ZooKeeper chroot", chroot=chroot)
        return chroot
    finally:
        root.stop()
