"""Talking to servers over loopback: free ports and four-letter words (re-exported by
``controller.zk.server``)."""

from __future__ import annotations

import contextlib
import socket

from controller.zk.server_setup import LOOPBACK


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that was free a moment ago (callers must tolerate a lost race)."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """``count`` distinct free ports: all sockets stay bound until every port is picked."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((host, 0))
            ports.append(sock.getsockname()[1])
        return ports


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
