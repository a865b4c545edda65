"""Address value types: listen addresses and ZooKeeper connect strings."""

from __future__ import annotations

import re
from typing import NamedTuple

from controller.zk.paths import zookeeper_path_problem


class HostPort(NamedTuple):
    """A listen or connect address; an empty host binds every interface, port 0 is ephemeral."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_host_port(text: str, *, default_port: int | None = None) -> HostPort:
    """Parse ``host:port``, ``[v6addr]:port`` or ``:port``; raise ValueError with a reason."""
    text = text.strip()
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"bad address {text!r}: expected [ipv6]:port")
        port_text = rest[1:] if rest else ""
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            host, port_text = text, ""
        elif ":" in host:
            raise ValueError(f"bad address {text!r}: put an IPv6 address in brackets")
    if not port_text:
        if default_port is None:
            raise ValueError(f"bad address {text!r}: expected host:port")
        port = default_port
    else:
        if not (port_text.isascii() and port_text.isdigit()):
            raise ValueError(f"bad address {text!r}: port {port_text!r} is not a number")
        port = int(port_text)
    if not 0 <= port <= 65535:
        raise ValueError(f"bad address {text!r}: port {port} is outside 0-65535")
    if host and not re.fullmatch(r"[A-Za-z0-9._:%-]+", host):
        raise ValueError(f"bad address {text!r}: invalid host {host!r}")
    return HostPort(host, port)


def parse_zookeeper_connect(text: str) -> tuple[tuple[HostPort, ...], str | None]:
    """Split ``h1:2181,h2:2181/chroot`` into hosts and chroot (None when absent)."""
    text = text.strip()
    hosts_text, slash, chroot_rest = text.partition("/")
    chroot = f"/{chroot_rest}" if slash else None
    if chroot is not None and chroot != "/" and (chroot.endswith("/") or "//" in chroot):
        raise ValueError(f"bad chroot {chroot!r} in {text!r}")
    if chroot is not None and chroot != "/":
        problem = zookeeper_path_problem(chroot)
        if problem:
            raise ValueError(f"bad chroot {chroot!r} in {text!r}: {problem}")
    if not hosts_text:
        raise ValueError(f"bad connect string {text!r}: no hosts")
    hosts = []
    for part in hosts_text.split(","):
        hp = parse_host_port(part, default_port=2181)
        if not hp.host or hp.port == 0:
            raise ValueError(f"bad connect string {text!r}: {part!r} needs a host and a port")
        hosts.append(hp)
    return tuple(hosts), (None if chroot == "/" else chroot)


def canonical_zookeeper_connect(text: str) -> str:
    """``text`` as ZooKeeper clients read it: ``h1:2181,h2:2181/chroot``. kazoo parses the
    string again itself and would refuse what this parser tolerates (a space before a comma
    or the chroot, a default port left out), so it is handed this form, never the raw text."""
    return format_zookeeper_connect(*parse_zookeeper_connect(text))


def format_zookeeper_connect(hosts: tuple[HostPort, ...], chroot: str | None = None) -> str:
    """The connect string of parsed ``hosts`` and ``chroot``, in the form kazoo reads."""
    return ",".join(str(h) for h in hosts) + (chroot or "")
