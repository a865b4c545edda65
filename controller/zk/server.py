"""Real ZooKeeper servers for tests, the daemon's embedded default and benchmarks.

:class:`LocalZooKeeper` runs one server from Debian's ``zookeeper`` package jars; the other
tiers (an external ensemble, a container) and the choice between them are in
``controller.zk.tiers``.

:class:`LocalEnsemble` runs an N-node ``QuorumPeerMain`` ensemble on loopback for failover tests.

Server settings (all servers started here): ``tickTime=500`` ms, ``minSessionTimeout=1000`` ms,
``maxSessionTimeout=60000`` ms. ZooKeeper clamps a client's requested session timeout into that
range, so tests can use session timeouts of 1-60 s. Everything binds to 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, Self

LOOPBACK = "127.0.0.1"
DEFAULT_HEAP = "256m"
TICK_TIME_MS = 500
MIN_SESSION_TIMEOUT_MS = 1000
MAX_SESSION_TIMEOUT_MS = 60000
FOUR_LETTER_WORDS = "ruok,srvr,mntr,stat,envi"
DOCKER_IMAGE = "zookeeper:3.8"
STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
DEBIAN_JAR = Path("/usr/share/java/zookeeper.jar")
DEBIAN_SLF4J_SIMPLE = Path("/usr/share/java/slf4j-simple.jar")
JVM_FLAGS = (
    "-XX:+UseSerialGC",  # fewest GC threads: this runs on small CI machines
    "-XX:-UsePerfData",  # no /tmp/hsperfdata_* files left behind
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.net.preferIPv4Stack=true",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
)
LEGACY_DIR = Path("/usr/share/zookeeper")  # older Debian/Ubuntu layout: jars beside lib/
INSTALL_HINT = (
    "install Debian's ZooKeeper, which also pulls in a Java runtime: "
    "`apt-get install zookeeper` (or `make zookeeper-deps`); "
    "a Java runtime alone is `apt-get install default-jre-headless`. "
    "Alternatively set ZK_CONNECT=host:port to use a running ZooKeeper, "
    "or ZOOKEEPER_CLASSPATH / JAVA_HOME to point at another install."
)


class ZooKeeperUnavailable(RuntimeError):
    """No ZooKeeper tier could be provided; the message says what to install or set."""


class ZooKeeperStartError(RuntimeError):
    """A local ZooKeeper process was launched but did not become ready."""


class ZooKeeperHandle(Protocol):
    """What every tier offers: a connect string and a way to shut it down."""

    tier: str
    hosts: str  # "host:port[,host:port...]" without chroot
    chroot: str  # "" unless ZK_CONNECT carried one

    def close(self) -> None: ...

    def log_tail(self, lines: int = 80) -> str: ...


# ---------------------------------------------------------------------------------------------
# Discovery helpers


def java_executable() -> str | None:
    """``$JAVA_HOME/bin/java`` when set and present, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def java_available() -> bool:
    return java_executable() is not None


def zookeeper_classpath() -> str | None:
    """The JVM classpath for a ZooKeeper server, or None when no install was found.

    ``ZOOKEEPER_CLASSPATH`` is used verbatim. Debian 12's zookeeper.jar carries a manifest
    Class-Path with its dependencies, so it is enough by itself; slf4j-simple is added so the
    server logs instead of using slf4j's silent NOP fallback.
    """
    override = os.environ.get("ZOOKEEPER_CLASSPATH")
    if override:
        return override
    if DEBIAN_JAR.is_file():
        parts = [str(DEBIAN_JAR)]
        if DEBIAN_SLF4J_SIMPLE.is_file():
            parts.append(str(DEBIAN_SLF4J_SIMPLE))
        return ":".join(parts)
    legacy = sorted(glob.glob(str(LEGACY_DIR / "*.jar"))) + sorted(
        glob.glob(str(LEGACY_DIR / "lib" / "*.jar"))
    )
    if any(Path(p).name.startswith("zookeeper") for p in legacy):
        return ":".join(legacy)
    return None


def zookeeper_jar() -> Path | None:
    """The ZooKeeper server jar that would be used, or None."""
    classpath = zookeeper_classpath()
    if classpath is None:
        return None
    entries = [Path(p) for p in classpath.split(":") if p]
    for entry in entries:
        if entry.name.startswith("zookeeper") and entry.suffix == ".jar":
            return entry
    return entries[0] if entries else None


def local_zookeeper_problem() -> str | None:
    """Why a local ZooKeeper process cannot be started here, or None when it can."""
    missing = []
    if not java_available():
        missing.append("no `java` found (JAVA_HOME unset or invalid, none on PATH)")
    if zookeeper_classpath() is None:
        missing.append(
            f"no ZooKeeper jar found ({DEBIAN_JAR}, {LEGACY_DIR}/*.jar, ZOOKEEPER_CLASSPATH unset)"
        )
    if not missing:
        return None
    return "; ".join(missing) + ". To fix: " + INSTALL_HINT


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


def _all_threads_stopped(pid: int) -> bool:
    """True when every thread of ``pid`` is in state T (stopped), per /proc (Linux)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True  # no /proc (or the process is gone): nothing more to wait for
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                # The state follows the parenthesised command name, which may contain spaces.
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("T", "t"):
            return False
    return True


def _tail(path: Path, lines: int) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 256 * 1024))  # enough for any sane tail
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGCONT)  # a frozen JVM cannot act on SIGTERM
            proc.terminate()


def _stop_process(proc: subprocess.Popen[bytes], timeout: float) -> None:
    if proc.poll() is not None:
        return
    _terminate(proc)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class _Managed:
    """``with server:`` starts it and closes it on exit."""

    def start(self) -> Self:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_LIVE: weakref.WeakSet[LocalZooKeeper] = weakref.WeakSet()


def live_servers() -> list[LocalZooKeeper]:
    """Local servers of this process that are running now (e.g. to dump logs on failure)."""
    return [server for server in list(_LIVE) if server.running]


# ---------------------------------------------------------------------------------------------
# Tier 2: a local Java process


class LocalZooKeeper(_Managed):
    """One ZooKeeper JVM on 127.0.0.1. ``start()`` waits for ``ruok`` -> ``imok``.

    Layout: ``work_dir/zoo.cfg``, ``work_dir/zookeeper.log`` (stdout+stderr, appended across
    restarts) and ``data_dir``. A temporary work dir is removed by ``close()``; a given
    ``data_dir`` without ``work_dir`` holds the config and log itself and is never removed.
    ``stop()`` keeps everything, so ``start()`` restarts on the same port with the same data.
    """

    tier = "local"
    chroot = ""

    def __init__(
        self,
        port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        work_dir: str | os.PathLike[str] | None = None,
        heap: str = DEFAULT_HEAP,
        tick_time_ms: int = TICK_TIME_MS,
        min_session_timeout_ms: int = MIN_SESSION_TIMEOUT_MS,
        max_session_timeout_ms: int = MAX_SESSION_TIMEOUT_MS,
        extra_config: Mapping[str, object] | None = None,
        jvm_args: Sequence[str] = (),
        main_class: str = STANDALONE_MAIN,
        myid: int | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        self._auto_port = port is None
        self.port = port if port is not None else free_port()
        self._temp_dir: str | None = None
        if work_dir is None and data_dir is None:
            self._temp_dir = tempfile.mkdtemp(prefix="zkc-zookeeper-")
            self._cleanup = weakref.finalize(self, shutil.rmtree, self._temp_dir, True)
            work_dir = self._temp_dir
        self.data_dir = Path(data_dir) if data_dir is not None else Path(work_dir) / "data"
        self.work_dir = Path(work_dir) if work_dir is not None else self.data_dir
        self.config_path = self.work_dir / "zoo.cfg"
        self.log_path = self.work_dir / "zookeeper.log"
        self.heap = heap
        self.settings: dict[str, object] = {
            "tickTime": tick_time_ms,
            "minSessionTimeout": min_session_timeout_ms,
            "maxSessionTimeout": max_session_timeout_ms,
            **(extra_config or {}),
        }
        self.jvm_args = list(jvm_args)
        self.main_class = main_class
        self.myid = myid
        self.start_timeout = start_timeout
        self.startup_seconds: float | None = None
        self._started_at = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._kill_at_exit: weakref.finalize | None = None
        self._frozen = False

    # -- properties -----------------------------------------------------------------------
    @property
    def host(self) -> str:
        return LOOPBACK

    @property
    def hosts(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def frozen(self) -> bool:
        return self._frozen and self.running

    @property
    def log_paths(self) -> list[Path]:
        return [self.log_path]

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, wait: bool = True) -> Self:
        """Launch the JVM (no-op when running); with ``wait``, block until it answers."""
        if self.running:
            return self
        attempts = 3 if self._auto_port else 1
        for attempt in range(attempts):
            self._launch()
            if not wait:
                return self
            try:
                self.wait_ready()
                return self
            except ZooKeeperStartError:
                port_clash = "Address already in use" in self.log_tail(200)
                self.stop()
                if not (port_clash and attempt + 1 < attempts):
                    raise
                self.port = free_port()  # lost the free-port race: pick another
        raise AssertionError("unreachable")

    def _launch(self) -> None:
        java = java_executable()
        classpath = zookeeper_classpath()
        if java is None or classpath is None:
            raise ZooKeeperUnavailable(f"cannot start ZooKeeper: {local_zookeeper_problem()}")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.myid is not None:
            (self.data_dir / "myid").write_text(f"{self.myid}\n")
        self.config_path.write_text(self._config_text())
        command = [java, f"-Xmx{self.heap}", *JVM_FLAGS, *self.jvm_args]
        command += ["-cp", classpath, self.main_class, str(self.config_path)]
        # Kill the JVM if this process dies without cleaning up (SIGKILL, crash). The death
        # signal is tied to the forking *thread*, so only use it from the main thread.
        setpriv = shutil.which("setpriv")
        if setpriv and threading.current_thread() is threading.main_thread():
            command = [setpriv, "--pdeathsig", "KILL", *command]
        with self.log_path.open("ab") as log:
            log.write(f"--- zk-controller: starting {' '.join(command)}\n".encode())
            log.flush()
            # Own process group: a terminal Ctrl-C reaches only the owner, who stops ZooKeeper
            # after closing its own sessions.
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.work_dir,
                process_group=0,
            )
        self._frozen = False
        self._started_at = time.monotonic()
        self._kill_at_exit = weakref.finalize(self, _stop_process, self._proc, 5.0)
        _LIVE.add(self)

    def _config_text(self) -> str:
        config: dict[str, object] = {
            "dataDir": self.data_dir.resolve(),
            "clientPort": self.port,
            # Never the "<port> <dataDir>" command-line shorthand: it binds 0.0.0.0.
            "clientPortAddress": LOOPBACK,
            "admin.enableServer": "false",
            "4lw.commands.whitelist": FOUR_LETTER_WORDS,
            **self.settings,
        }
        return "".join(f"{key}={value}\n" for key, value in config.items())

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until ``ruok`` answers ``imok`` (and, standalone, ``srvr`` shows it serving:
        ruok answers before the database is loaded). Raise ZooKeeperStartError with the log."""
        deadline = time.monotonic() + (self.start_timeout if timeout is None else timeout)
        standalone = self.main_class == STANDALONE_MAIN
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise ZooKeeperStartError(
                    f"ZooKeeper exited with code {code} before it was ready; "
                    f"log {self.log_path}:\n{self.log_tail(40)}"
                )
            if self.ruok(timeout=1.0) and (not standalone or self.mode(timeout=1.0)):
                self.startup_seconds = time.monotonic() - self._started_at
                return
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"ZooKeeper on {self.hosts} was not ready within the deadline; "
                    f"log {self.log_path}:\n{self.log_tail(40)}"
                )
            time.sleep(0.05)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, wait ``timeout`` s, then SIGKILL. Keeps data, config and log."""
        if self._proc is not None:
            _stop_process(self._proc, timeout)
        if self._kill_at_exit is not None:
            self._kill_at_exit.detach()
            self._kill_at_exit = None
        self._frozen = False

    def close(self) -> None:
        """Stop and remove the temporary work dir, if one was created."""
        self.stop()
        if self._temp_dir is not None:
            self._cleanup()

    def freeze(self, timeout: float = 5.0) -> None:
        """SIGSTOP the JVM: it keeps its sockets but answers nothing (an outage / GC pause).

        Returns once every JVM thread is stopped: SIGSTOP is delivered asynchronously, and a
        reply could otherwise still slip out after freeze() returned.
        """
        self._signal(signal.SIGSTOP)
        self._frozen = True
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not _all_threads_stopped(self._proc.pid):
            time.sleep(0.005)

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)
        self._frozen = False

    def _signal(self, signum: int) -> None:
        if not self.running:
            raise RuntimeError(f"ZooKeeper on {self.hosts} is not running")
        assert self._proc is not None
        self._proc.send_signal(signum)

    # -- probes ---------------------------------------------------------------------------
    def ruok(self, timeout: float = 2.0) -> bool:
        try:
            return four_letter_word(LOOPBACK, self.port, "ruok", timeout) == "imok"
        except OSError:
            return False

    def mode(self, timeout: float = 2.0) -> str | None:
        return server_mode(LOOPBACK, self.port, timeout)

    def log_tail(self, lines: int = 80) -> str:
        return _tail(self.log_path, lines)

    def __repr__(self) -> str:
        state = "frozen" if self.frozen else "running" if self.running else "stopped"
        return f"<LocalZooKeeper {self.hosts} {state} pid={self.pid} log={self.log_path}>"


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
        self.work_dir = Path(work_dir)
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
            for node in self.nodes:
                node.start(wait=False)
            try:
                for node in self.nodes:
                    node.wait_ready()
                self.wait_for_quorum(all_nodes=True)  # tests may stop any node next
                self.startup_seconds = time.monotonic() - began
                return self
            except ZooKeeperStartError:
                clash = any("Address already in use" in n.log_tail(300) for n in self.nodes)
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
