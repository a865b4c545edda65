"""Reassignment throttles (``controller.admin.throttles``): the move calculation as
kafka-reassign-partitions.sh does it, and the config writes and clears on the in-memory
ZooKeeper. Through the CLI against a real ZooKeeper and controller:
``tests/integration/test_reassignment.py``."""

from __future__ import annotations

import json

from controller.admin import throttles
from controller.admin.throttles import PartitionMove
from controller.core.model import ReplicaAssignment, TopicPartition
from controller.zk import codecs, paths
from controller.zk.memory import MemoryZooKeeper
from controller.zk.memory_session import MemoryZkSession


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def moves(sources: set[int], destinations: set[int]) -> PartitionMove:
    return PartitionMove(frozenset(sources), frozenset(destinations))


def test_moves_merge_the_reassignments_in_progress_with_the_plan() -> None:
    ongoing = {
        tp("foo", 0): ReplicaAssignment((1, 2, 3, 4), (4,), (3,)),
        tp("foo", 1): ReplicaAssignment((4, 5, 6, 7, 8), (7, 8), (4, 5)),  # not in the plan
        tp("foo", 2): ReplicaAssignment((1, 2, 3, 4), (3, 4), (1, 2)),
    }
    plan = {
        tp("foo", 0): [1, 2, 5],  # redirected: the moving-in 4 is no source
        tp("foo", 2): [3, 4],  # the same target again
        tp("bar", 0): [1, 2, 3],  # not moving yet: its sources are its current replicas
        tp("bar", 10): [7],
    }
    current = {tp("foo", 0): [1, 2, 3, 4], tp("foo", 2): [1, 2, 3, 4], tp("bar", 0): [2, 3, 4],
               tp("bar", 10): [1]}  # fmt: skip
    got = throttles.move_map(ongoing, plan, current)
    assert got == {
        "foo": {0: moves({1, 2, 3}, {5}), 1: moves({4, 5, 6}, {7, 8}), 2: moves({1, 2}, {3, 4})},
        "bar": {0: moves({2, 3, 4}, {1}), 10: moves({1}, {7})},
    }
    # Kafka sorts the entries as text, so partition 10 comes before partition 0's broker 2.
    assert throttles.leader_throttles(got) == {
        "foo": "0:1,0:2,0:3,1:4,1:5,1:6,2:1,2:2",
        "bar": "0:2,0:3,0:4,10:1",
    }
    assert throttles.follower_throttles(got) == {"foo": "0:5,1:7,1:8,2:3,2:4", "bar": "0:1,10:7"}
    assert throttles.reassigning_brokers(got) == {1, 2, 3, 4, 5, 6, 7, 8}


def test_a_plan_that_moves_nothing_throttles_its_leaders_and_no_follower() -> None:
    got = throttles.move_map({}, {tp("t", 0): [2, 1]}, {tp("t", 0): [1, 2]})
    assert throttles.leader_throttles(got) == {"t": "0:1,0:2"}
    assert throttles.follower_throttles(got) == {"t": ""}


def cluster_with_topic() -> MemoryZkSession:
    zk = MemoryZooKeeper().open_session()
    zk.ensure_path(paths.BROKERS_TOPICS)
    zk.create(paths.topic_path("t"), b'{"version":3,"partitions":{"0":[1,2]},"topic_id":null}')
    return zk


def config_of(zk: MemoryZkSession, path: str) -> dict[str, str]:
    return codecs.decode_topic_config(zk.get(path)[0], path)


def changed_entities(zk: MemoryZkSession) -> list[str]:
    names = sorted(zk.get_children(paths.CONFIG_CHANGES))
    return [json.loads(zk.get(f"{paths.CONFIG_CHANGES}/{n}")[0])["entity_path"] for n in names]


def broker_path(broker: int) -> str:
    return paths.config_entity_path(paths.CONFIG_TYPE_BROKERS, str(broker))


def test_set_then_clear_keeps_the_other_configs_and_notifies_each_change() -> None:
    zk = cluster_with_topic()
    zk.ensure_path(paths.CONFIG_TOPICS)
    zk.create(paths.topic_config_path("t"), codecs.encode_topic_config({"retention.ms": "1000"}))
    zk.ensure_path(paths.CONFIG_BROKERS)
    zk.create(broker_path(2), codecs.encode_topic_config({"log.cleaner.threads": "2"}))

    move = throttles.move_map({}, {tp("t", 0): [3, 2]}, {tp("t", 0): [1, 2]})
    throttles.set_throttles(zk, move, 1000)

    assert config_of(zk, paths.topic_config_path("t")) == {
        "retention.ms": "1000",
        throttles.LEADER_REPLICAS: "0:1,0:2",
        throttles.FOLLOWER_REPLICAS: "0:3",
    }
    rates = {throttles.LEADER_RATE: "1000", throttles.FOLLOWER_RATE: "1000"}
    assert config_of(zk, broker_path(1)) == rates
    assert config_of(zk, broker_path(2)) == {"log.cleaner.threads": "2", **rates}
    assert config_of(zk, broker_path(3)) == rates
    assert changed_entities(zk) == ["topics/t", "brokers/1", "brokers/2", "brokers/3"]

    # Broker 4 sets no throttle and topic "gone" does not exist: left alone, no notification.
    cleared = throttles.clear_throttles(zk, [1, 2, 3, 4], ["t", "gone"])
    assert cleared == ([1, 2, 3], ["t"])
    assert config_of(zk, paths.topic_config_path("t")) == {"retention.ms": "1000"}
    assert config_of(zk, broker_path(1)) == {}
    assert config_of(zk, broker_path(2)) == {"log.cleaner.threads": "2"}
    assert zk.exists(broker_path(4)) is None
    assert len(changed_entities(zk)) == 8
    # Clearing again changes nothing and writes nothing.
    assert throttles.clear_throttles(zk, [1, 2, 3, 4], ["t"]) == ([], [])
    assert len(changed_entities(zk)) == 8


def test_a_via_zookeeper_throttle_keeps_the_moves_under_way(monkeypatch, tmp_path) -> None:
    """execute --via-zookeeper --throttle: foo-0 is already moving [1,2] -> [3,4] (throttled);
    throttling foo-1's move must keep foo-0's replicas in the topic's lists, with foo-0's
    sources taken from its move, as the API path and Kafka's calculateProposedMoveMap do."""
    import argparse

    from controller.cli import reassign_cmd

    zk = cluster_with_topic()
    for b in (1, 2, 3, 4):
        zk.ensure_path(paths.BROKERS_IDS)
        zk.create(paths.broker_path(b), json.dumps({
            "version": 5, "host": "h", "port": 9000 + b, "endpoints": [f"PLAINTEXT://h:{9000 + b}"],
            "jmx_port": -1, "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
            "timestamp": "1",
        }).encode())  # fmt: skip
    zk.create(paths.topic_path("foo"), json.dumps({
        "version": 3, "topic_id": None, "partitions": {"0": [3, 4, 1, 2], "1": [1, 2]},
        "adding_replicas": {"0": [3, 4]}, "removing_replicas": {"0": [1, 2]},
    }).encode())  # fmt: skip
    monkeypatch.setattr(reassign_cmd, "run_admin", lambda args, action: action(zk))
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[2,3]}]}')
    args = argparse.Namespace(
        reassignment_json_file=str(plan), via_zookeeper=True, throttle=100, additional=False,
        wait=False, wait_timeout_s=0.0, timeout_s=1.0,
    )
    assert reassign_cmd.execute_command(args) == 0
    assert config_of(zk, paths.topic_config_path("foo")) == {
        throttles.LEADER_REPLICAS: "0:1,0:2,1:1,1:2",
        throttles.FOLLOWER_REPLICAS: "0:3,0:4,1:3",
    }
    for b in (1, 2, 3, 4):
        assert config_of(zk, broker_path(b))[throttles.LEADER_RATE] == "100"
    assert zk.exists(paths.REASSIGN_PARTITIONS) is not None
