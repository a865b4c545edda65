"""Real ZooKeeper servers for tests, the daemon's embedded default and benchmarks.

:class:`LocalZooKeeper` runs one server from Debian's ``zookeeper`` package jars; the other
tiers (an external ensemble, a container) and the choice between them are in
``controller.zk.tiers``.

:class:`LocalEnsemble` runs an N-node ``QuorumPeerMain`` ensemble on loopback for failover tests.

Server settings (all servers started here): ``tickTime=500`` ms, ``minSessionTimeout=1000`` ms,
``maxSessionTimeout=60000`` ms. ZooKeeper clamps a client's requested session timeout into that
range, so tests can use session timeouts of 1-60 s. Everything binds to 127.0.0.1 only.

This module is the public face; the code lives by concern in sibling modules:

- ``server_setup``: shared settings and errors, finding Java and the jars, command line and
  ``zoo.cfg``;
- ``server_probes``: free ports and four-letter words over loopback;
- ``server_local``: one JVM's lifecycle (:class:`LocalZooKeeper`);
- ``server_ensemble``: :class:`LocalEnsemble`.
"""

from __future__ import annotations

from controller.zk.server_ensemble import LocalEnsemble
from controller.zk.server_local import LocalZooKeeper, live_servers
from controller.zk.server_probes import four_letter_word, free_port, free_ports, server_mode
from controller.zk.server_setup import (
    DEBIAN_JAR,
    DEBIAN_SLF4J_SIMPLE,
    DEFAULT_HEAP,
    DOCKER_IMAGE,
    FOUR_LETTER_WORDS,
    INSTALL_HINT,
    JVM_FLAGS,
    LEGACY_DIR,
    LOOPBACK,
    MAX_SESSION_TIMEOUT_MS,
    MIN_SESSION_TIMEOUT_MS,
    QUORUM_MAIN,
    STANDALONE_MAIN,
    TICK_TIME_MS,
    ZooKeeperHandle,
    ZooKeeperPortInUseError,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
    config_text,
    java_available,
    java_executable,
    local_zookeeper_problem,
    server_command,
    zookeeper_classpath,
    zookeeper_jar,
)

__all__ = [
    "DEBIAN_JAR",
    "DEBIAN_SLF4J_SIMPLE",
    "DEFAULT_HEAP",
    "DOCKER_IMAGE",
    "FOUR_LETTER_WORDS",
    "INSTALL_HINT",
    "JVM_FLAGS",
    "LEGACY_DIR",
    "LOOPBACK",
    "MAX_SESSION_TIMEOUT_MS",
    "MIN_SESSION_TIMEOUT_MS",
    "QUORUM_MAIN",
    "STANDALONE_MAIN",
    "TICK_TIME_MS",
    "LocalEnsemble",
    "LocalZooKeeper",
    "ZooKeeperHandle",
    "ZooKeeperPortInUseError",
    "ZooKeeperStartError",
    "ZooKeeperUnavailable",
    "config_text",
    "four_letter_word",
    "free_port",
    "free_ports",
    "java_available",
    "java_executable",
    "live_servers",
    "local_zookeeper_problem",
    "server_command",
    "server_mode",
    "zookeeper_classpath",
    "zookeeper_jar",
]
