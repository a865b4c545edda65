"""An in-process cluster for integration tests: controller daemons and reference brokers, each
with its own real ZooKeeper session and real gRPC server, on one real ZooKeeper."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from controller.broker.server import BrokerConfig, BrokerServer
from controller.config import load_config
from controller.core.model import TopicPartition
from controller.daemon import ControllerDaemon
from controller.zk import codecs, paths
from controller.zk.kazoo_port import KazooPort
from controller.zk.server import free_port
from tests.support import kazoo, wait_until

SESSION_TIMEOUT_MS = 4000


class Cluster:
    def __init__(self, connect: str, work_dir: Path) -> None:
        self.connect = connect
        self.work_dir = work_dir
        self.zk: KazooClient = kazoo(connect)
        self.controllers: dict[int, ControllerDaemon] = {}
        self.brokers: dict[int, BrokerServer] = {}
        self._broker_ports: dict[int, KazooPort] = {}

    # -- processes -----------------------------------------------------------------------

    def start_controller(self, controller_id: int = 0, **settings: str) -> ControllerDaemon:
        flags = {
            "zookeeper.connect": self.connect,
            "controller.id": str(controller_id),
            "metrics.listen": f"127.0.0.1:{free_port()}",
            "grpc.listen": f"127.0.0.1:{free_port()}",
            "log.dir": str(self.work_dir / f"controller-{controller_id}"),
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "request.timeout.ms": "5000",
            **settings,
        }
        daemon = ControllerDaemon(load_config(flags=flags, env={}), configure_logs=False)
        daemon.start()
        self.controllers[controller_id] = daemon
        return daemon

    def stop_controller(self, controller_id: int) -> None:
        self.controllers.pop(controller_id).stop(resign_timeout=5)

    def start_broker(self, broker_id: int, rack: str | None = None, **config: Any) -> BrokerServer:
        """``config``: more ``BrokerConfig`` fields (e.g. ``replica_lag_time_max_ms``)."""
        port = KazooPort(self.connect, session_timeout=SESSION_TIMEOUT_MS / 1000)
        port.start()
        broker = BrokerServer(
            BrokerConfig(broker_id, listen="127.0.0.1:0", rack=rack, **config), port
        )
        broker.start()
        self.brokers[broker_id] = broker
        self._broker_ports[broker_id] = port
        return broker

    def kill_broker(self, broker_id: int) -> None:
        """An abrupt stop: no controlled shutdown; the registration goes with the session."""
        broker = self.brokers.pop(broker_id)
        port = self._broker_ports.pop(broker_id)
        port.stop()  # the ephemeral registration disappears with the session
        broker.stop(grace=0)

    def crash_broker(self, broker_id: int) -> None:
        """The broker process dies, but its ZooKeeper session lives on until it times out
        (or ``kill_broker`` ends it): it stops serving and fetching, and stays registered."""
        self.brokers[broker_id].stop(grace=0, deregister=False)

    def broker_port(self, broker_id: int) -> KazooPort:
        return self._broker_ports[broker_id]

    def close(self) -> None:
        for broker_id in list(self.brokers):
            with contextlib.suppress(Exception):
                self.kill_broker(broker_id)
        for daemon in self.controllers.values():
            daemon.stop(resign_timeout=2)
        self.controllers.clear()
        self.zk.stop()
        self.zk.close()

    # -- ZooKeeper, written and read the way Kafka's tools do ----------------------------

    def active_controller(self) -> ControllerDaemon:
        return wait_until(
            lambda: next((d for d in self.controllers.values() if d.controller.is_active), None),
            what="an active controller",
        )

    def create_topic(self, topic: str, assignment: dict[int, list[int]]) -> None:
        data = {"version": 3, "partitions": {str(p): r for p, r in assignment.items()},
                "adding_replicas": {}, "removing_replicas": {}}  # fmt: skip
        self.zk.create(paths.topic_path(topic), json.dumps(data).encode(), makepath=True)

    def state(self, topic: str, partition: int) -> dict[str, Any] | None:
        path = paths.partition_state_path(topic, partition)
        if not self.zk.exists(path):
            return None
        return json.loads(self.zk.get(path)[0])

    def wait_state(
        self, topic: str, partition: int, timeout: float = 20.0, **expected: Any
    ) -> dict:
        def matches() -> dict | None:
            state = self.state(topic, partition)
            if state and all(state.get(k) == v for k, v in expected.items()):
                return state
            return None

        return wait_until(matches, timeout, what=f"{topic}-{partition} state {expected}")

    def hosted(self, broker_id: int) -> dict[TopicPartition, Any]:
        """What a broker holds, by partition (from its Describe RPC)."""
        described = self.brokers[broker_id].describe()
        return {TopicPartition(p.topic_name, p.partition_index): p for p in described.partitions}

    def metadata(self, broker_id: int) -> dict[TopicPartition, Any]:
        described = self.brokers[broker_id].describe()
        return {
            TopicPartition(p.topic_name, p.state.partition_index): p.state
            for p in described.metadata_partitions
        }

    def broker_registration(self, broker_id: int) -> codecs.BrokerRegistration:
        data, _ = self.zk.get(paths.broker_path(broker_id))
        return codecs.decode_broker_registration(broker_id, data)
