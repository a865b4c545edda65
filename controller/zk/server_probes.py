"""Talking to servers over loopback: free ports and four-letter words (re-exported by
``controller.zk.server``)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterable

from controller.zk.server_setup import LOOPBACK

#: Ports this process handed out lately. The kernel's pick for port 0 may repeat a port just
#: released, so two ports drawn one after the other (a controller's metrics and gRPC ports)
#: came out equal about once in 12,500 draws.
_RECENT_LIMIT = 4096
_recent: dict[int, None] = {}  # insertion-ordered: the oldest is dropped first
_recent_lock = threading.Lock()


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that was free a moment ago and that this process has not handed out
    lately (callers must still tolerate a lost race with other processes)."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct free ports, none handed out lately by this process: all sockets
    stay bound until every port is picked."""
    with _recent_lock, contextlib.ExitStack() as stack:
        ports: list[int] = []
        for _ in range(count + 256):  # a repeat stays bound, so the kernel moves on
            if len(ports) == count:
                break
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            port = sock.getsockname()[1]
            if port not in _recent:
                ports.append(port)
        if len(ports) < count:
            raise OSError(f"no {count} fresh free ports on {host}")
        _remember(ports)
        return ports


def consecutive_free_ports(count: int, host: str = LOOPBACK) -> int:
    """The first of ``count`` consecutive ports that are free and not handed out lately
    (the local stack numbers its brokers' ports from one base)."""
    for _ in range(50):
        with _recent_lock, contextlib.ExitStack() as held:
            sock = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            base = sock.getsockname()[1]
            span = range(base, base + count)
            if base + count > 65535 or any(port in _recent for port in span):
                continue
            try:
                for port in span[1:]:
                    held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)).bind(
                        (host, port)
                    )
            except OSError:
                continue
            _remember(span)
            return base
    raise OSError(f"no {count} consecutive free ports on {host}")


def _remember(ports: Iterable[int]) -> None:
    for port in ports:
        _recent.pop(port, None)
        _recent[port] = None
    while len(_recent) > _RECENT_LIMIT:
        del _recent[next(iter(_recent))]


def four_letter_word(host: str, port: int, command: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter-word command and return the whole reply."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(command.encode("ascii"))
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def server_mode(host: str, port: int, timeout: float = 2.0) -> str | None:
    """``leader``/``follower``/``standalone`` from ``srvr``, or None when not serving."""
    try:
        reply = four_letter_word(host, port, "srvr", timeout)
    except OSError:
        return None
    for line in reply.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return None  # "This ZooKeeper instance is not currently serving requests"
