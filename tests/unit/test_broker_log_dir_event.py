"""The reference broker's log-dir failure notification (Kafka's ``propagateLogDirEvent``)
survives ZooKeeper being unreachable: the broker keeps running, the partitions go offline at
once, and the notification is sent once ZooKeeper answers again."""

from __future__ import annotations

import pytest

from controller.broker import server as broker_server
from controller.broker.server import BrokerConfig, BrokerServer
from controller.core.model import TopicPartition
from controller.zk import codecs, paths
from controller.zk.memory import MemoryZooKeeper
from tests.support import wait_until


def test_a_log_dir_failure_during_a_zookeeper_outage_is_announced_when_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(broker_server, "LOG_DIR_EVENT_RETRY_S", 0.02)
    zk = MemoryZooKeeper()
    session = zk.open_session()
    broker = BrokerServer(BrokerConfig(broker_id=1), session).start()
    observer = zk.open_session()
    try:
        tp = TopicPartition("t", 0)
        zk.disconnect(session)
        broker.fail_log_dir([tp])  # SIGUSR1's path: must not raise
        assert observer.get_children(paths.LOG_DIR_EVENT_NOTIFICATION) == []
        zk.reconnect(session)
        children = wait_until(
            lambda: observer.get_children(paths.LOG_DIR_EVENT_NOTIFICATION),
            what="the log-dir event notification",
        )
        assert len(children) == 1
        path = f"{paths.LOG_DIR_EVENT_NOTIFICATION}/{children[0]}"
        data, _ = observer.get(path)
        assert codecs.decode_log_dir_event(data, path) == 1
        assert broker.state.is_offline(tp)
    finally:
        broker.stop(grace=0)
