"""One local ZooKeeper JVM and its lifecycle (re-exported by ``controller.zk.server``).

:class:`LocalZooKeeper` runs one server from Debian's ``zookeeper`` package jars: launch, wait
until it serves, freeze/thaw (SIGSTOP/SIGCONT), stop and restart on the same port and data.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Self

from controller.zk.server_probes import four_letter_word, free_port, server_mode
from controller.zk.server_setup import (
    DEFAULT_HEAP,
    LOOPBACK,
    MAX_SESSION_TIMEOUT_MS,
    MIN_SESSION_TIMEOUT_MS,
    STANDALONE_MAIN,
    TICK_TIME_MS,
    ZooKeeperPortInUseError,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
    config_text,
    java_executable,
    local_zookeeper_problem,
    server_command,
    zookeeper_classpath,
)


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
        # Absolute: the JVM runs in work_dir, where relative paths would mean something else.
        if data_dir is not None:
            data = Path(data_dir)
        else:
            assert work_dir is not None  # the temporary directory above
            data = Path(work_dir) / "data"
        self.data_dir = data.resolve()
        self.work_dir = Path(work_dir).resolve() if work_dir is not None else self.data_dir
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
        if not self._auto_port and _accepts_connections(self.host, self.port):
            # Another server would answer our readiness probes in the half second our JVM
            # takes to fail on the port, and we would hand out a stranger's ZooKeeper.
            raise ZooKeeperPortInUseError(
                f"port {self.port} on {self.host} is already in use (another ZooKeeper?); "
                "stop it or choose another port"
            )
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
        command = server_command(
            java,
            classpath,
            heap=self.heap,
            jvm_args=self.jvm_args,
            main_class=self.main_class,
            config_path=self.config_path,
        )
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
        return config_text(self.data_dir, self.port, self.settings)

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
            if (
                self.ruok(timeout=1.0)
                and (not standalone or self.mode(timeout=1.0))
                and self._answering_is_ours()
            ):
                self.startup_seconds = time.monotonic() - self._started_at
                return
            if time.monotonic() > deadline:
                raise ZooKeeperStartError(
                    f"ZooKeeper on {self.hosts} was not ready within the deadline; "
                    f"log {self.log_path}:\n{self.log_tail(40)}"
                )
            time.sleep(0.05)

    def start_problem(self) -> str | None:
        """``start``, for a command line: None, or the first line of why it failed (the log's
        tail stays in the server's log file)."""
        try:
            self.start()
        except (ZooKeeperStartError, ZooKeeperUnavailable) as exc:
            return str(exc).splitlines()[0]
        return None

    def _answering_is_ours(self) -> bool:
        """The server answering on our port runs in our work dir (``envi``'s ``user.dir``):
        not another one that took the port between our check and our JVM's bind."""
        try:
            reply = four_letter_word(self.host, self.port, "envi", timeout=1.0)
        except OSError:
            return False
        return f"user.dir={self.work_dir.resolve()}" in reply.splitlines()

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


def _accepts_connections(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False
