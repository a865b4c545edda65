"""What the admin tests share: brokers registered by hand, a snapshot of the whole tree (to
show that a refused request changed nothing), and the CLI run as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from controller.core.model import EndPoint
from controller.zk import codecs, paths
from controller.zk.kazoo_port import KazooPort

CLI = str(Path(sys.executable).with_name("zk-controller"))
Snapshot = dict[str, tuple[bytes, int, int]]


def register(port: KazooPort, broker_id: int, rack: str | None = None) -> None:
    reg = codecs.BrokerRegistration(
        broker_id, (EndPoint("PLAINTEXT", f"host{broker_id}", 9092),), rack, timestamp_ms=1
    )
    port.ensure_path(paths.BROKERS_IDS)
    port.create(
        paths.broker_path(broker_id), codecs.encode_broker_registration(reg), ephemeral=True
    )


def brokers(port: KazooPort, *ids: int, racks: dict[int, str] | None = None) -> None:
    for i in ids:
        register(port, i, (racks or {}).get(i))


def snapshot(port: KazooPort, path: str = "/") -> Snapshot:
    """Every znode under ``path``: data, mzxid (any data write) and cversion (child changes)."""
    data, stat = port.get(path)
    out = {path: (data, stat.mzxid, stat.cversion)}
    for child in sorted(port.get_children(path)):
        out.update(snapshot(port, posixjoin(path, child)))
    return out


def posixjoin(parent: str, child: str) -> str:
    return f"{parent.rstrip('/')}/{child}"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "ZK_CONNECT"}
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, env={**base, **(env or {})}, timeout=60
    )


def one_error_line(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert result.returncode == 1, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
