"""What a local ZooKeeper server needs before it runs (re-exported by ``controller.zk.server``).

The settings every server started here shares, the contract every tier offers, where Java and
ZooKeeper's jars are, and the JVM command line and ``zoo.cfg`` built from them.
"""

from __future__ import annotations

import glob
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

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


class ZooKeeperPortInUseError(ZooKeeperStartError):
    """The server's fixed client port already accepts connections: not started."""


class ZooKeeperHandle(Protocol):
    """What every tier offers: a connect string and a way to shut it down."""

    # Read-only: a tier may compute them (LocalZooKeeper's hosts is a property).
    @property
    def tier(self) -> str: ...

    @property
    def hosts(self) -> str: ...  # "host:port[,host:port...]" without chroot

    @property
    def chroot(self) -> str: ...  # "" unless ZK_CONNECT carried one

    def close(self) -> None: ...

    def log_tail(self, lines: int = 80) -> str: ...


# ---------------------------------------------------------------------------------------------
# Discovery: Java and the ZooKeeper jars


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


# ---------------------------------------------------------------------------------------------
# The command line and the config file


def server_command(
    java: str,
    classpath: str,
    *,
    heap: str,
    jvm_args: Sequence[str],
    main_class: str,
    config_path: Path,
) -> list[str]:
    """The command that runs ``main_class`` on ``config_path``; call it from the launching
    thread, since whether the death signal can be used depends on which thread forks."""
    command = [java, f"-Xmx{heap}", *JVM_FLAGS, *jvm_args]
    command += ["-cp", classpath, main_class, str(config_path)]
    # Kill the JVM if this process dies without cleaning up (SIGKILL, crash). The death
    # signal is tied to the forking *thread*, so only use it from the main thread.
    setpriv = shutil.which("setpriv")
    if setpriv and threading.current_thread() is threading.main_thread():
        command = [setpriv, "--pdeathsig", "KILL", *command]
    return command


def config_text(data_dir: Path, port: int, settings: Mapping[str, object]) -> str:
    """``zoo.cfg`` for a server on ``LOOPBACK:port``; ``settings`` override the defaults."""
    config: dict[str, object] = {
        "dataDir": data_dir.resolve(),
        "clientPort": port,
        # Never the "<port> <dataDir>" command-line shorthand: it binds 0.0.0.0.
        "clientPortAddress": LOOPBACK,
        "admin.enableServer": "false",
        "4lw.commands.whitelist": FOUR_LETTER_WORDS,
        **settings,
    }
    return "".join(f"{key}={value}\n" for key, value in config.items())
