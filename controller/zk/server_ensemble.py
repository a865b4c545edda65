"""An N-node ZooKeeper ensemble on loopback for failover tests (re-exported by
``controller.zk.server``)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from controller.zk.server_local import LocalZooKeeper, _Managed, _terminate
from controller.zk.server_probes import free_ports
from controller.zk.server_setup import (
    DEFAULT_HEAP,
    LOOPBACK,
    QUORUM_MAIN,
    ZooKeeperPortInUseError,
    ZooKeeperStartError,
)


class LocalEnsemble(_Managed):
    """An N-node ``QuorumPeerMain`` ensemble on loopback. Nodes are indexed 0..N-1 (myid i+1).

    ``syncLimit`` is 5 ticks (2.5 s): a frozen or dead leader is noticed within a few seconds.
    """

    tier = "local-ensemble"
    chroot = ""

    def __init__(
        self,
        size: int = 3,
        *,
        work_dir: str | os.PathLike[str] | None = None,
        heap: str = DEFAULT_HEAP,
        init_limit: int = 10,
        sync_limit: int = 5,
        jvm_args: Sequence[str] = (),
        start_timeout: float = 90.0,
    ) -> None:
        if size < 1:
            raise ValueError("an ensemble needs at least one node")
        self.size = size
        self._temp_dir: str | None = None
        if work_dir is None:
            self._temp_dir = tempfile.mkdtemp(prefix="zkc-ensemble-")
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._temp_dir, True)
            work_dir = self._temp_dir
        self.work_dir = Path(work_dir).resolve()
        self._options: dict[str, Any] = {
            "heap": heap,
            "jvm_args": jvm_args,
            "start_timeout": start_timeout,
        }
        self._limits = {"initLimit": init_limit, "syncLimit": sync_limit}
        self.start_timeout = start_timeout
        self.nodes: list[LocalZooKeeper] = []
        self.startup_seconds: float | None = None

    def _build_nodes(self) -> None:
        ports = free_ports(3 * self.size)
        servers = {
            f"server.{i + 1}": f"{LOOPBACK}:{ports[3 * i + 1]}:{ports[3 * i + 2]}"
            for i in range(self.size)
        }
        self.nodes = [
            LocalZooKeeper(
                ports[3 * i],
                work_dir=self.work_dir / f"node-{i}",
                main_class=QUORUM_MAIN,
                myid=i + 1,
                extra_config={**self._limits, **servers},
                **self._options,
            )
            for i in range(self.size)
        ]

    @property
    def hosts(self) -> str:
        return ",".join(node.hosts for node in self.nodes)

    @property
    def log_paths(self) -> list[Path]:
        return [node.log_path for node in self.nodes]

    def node_hosts(self, index: int) -> str:
        return self.nodes[index].hosts

    def start(self, index: int | None = None) -> Self:
        """Start one node (and wait until it serves), or the whole ensemble with a quorum."""
        if index is not None:
            self.nodes[index].start()
            self._wait(
                lambda: self.nodes[index].mode() in ("leader", "follower"),
                f"node {index} to rejoin the quorum",
            )
            return self
        began = time.monotonic()
        for attempt in range(3):
            if not self.nodes or attempt:
                self.stop()
                self._build_nodes()  # fresh ports when a node lost a port race
            try:
                for node in self.nodes:
                    node.start(wait=False)
                for node in self.nodes:
                    node.wait_ready()
                self.wait_for_quorum(all_nodes=True)  # tests may stop any node next
                self.startup_seconds = time.monotonic() - began
                return self
            except ZooKeeperStartError as exc:
                clash = isinstance(exc, ZooKeeperPortInUseError) or any(
                    "Address already in use" in n.log_tail(300) for n in self.nodes
                )
                if not clash or attempt == 2:
                    self.stop()
                    raise
        raise AssertionError("unreachable")

    def stop(self, index: int | None = None) -> None:
        nodes = self.nodes if index is None else [self.nodes[index]]
        for node in nodes:  # SIGTERM them all first: JVMs shut down in parallel
            if node._proc is not None:
                _terminate(node._proc)
        for node in nodes:
            node.stop()

    def freeze(self, index: int) -> None:
        self.nodes[index].freeze()

    def thaw(self, index: int) -> None:
        self.nodes[index].thaw()

    def close(self) -> None:
        self.stop()
        if self._temp_dir is not None:
            self._cleanup()

    def modes(self) -> list[str | None]:
        """Each node's ``srvr`` mode; None for stopped, frozen or not-serving nodes."""
        return [
            node.mode(timeout=1.0) if node.running and not node.frozen else None
            for node in self.nodes
        ]

    def leader_index(self) -> int | None:
        modes = self.modes()
        return modes.index("leader") if "leader" in modes else None

    def wait_for_quorum(self, timeout: float | None = None, *, all_nodes: bool = False) -> int:
        """Wait for a leader and a serving majority (with ``all_nodes``: every running node
        serving); return the leader's index."""

        def ready() -> bool:
            modes = self.modes()
            serving = sum(m in ("leader", "follower") for m in modes)
            wanted = sum(n.running for n in self.nodes) if all_nodes else self.size // 2 + 1
            return modes.count("leader") == 1 and serving >= wanted

        self._wait(ready, "a quorum with a leader", timeout)
        leader = self.leader_index()
        assert leader is not None
        return leader

    def _wait(self, condition: Any, what: str, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (self.start_timeout if timeout is None else timeout)
        while not condition():
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"timed out waiting for {what}; modes={self.modes()}\n{self.log_tail(20)}"
                )
            time.sleep(0.1)

    def log_tail(self, lines: int = 80) -> str:
        return "\n".join(
            f"--- node {i} ({node.hosts}, {node.log_path}):\n{node.log_tail(lines)}"
            for i, node in enumerate(self.nodes)
        )
