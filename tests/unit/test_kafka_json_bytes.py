"""Our znode encoders write Kafka 3.6's bytes, key order and escapes included.

The vectors in kafka_json/vectors.jsonl are Kafka's own output: KafkaJsonVectors.java builds
each document the way ZkData.scala does, with the Scala and Jackson libraries (regenerate with
`make kafka-json-vectors`). Key order depends on hash-table sizes, so the topic cases cover
every size up to 50 partitions and both sides of each table growth.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from controller.core.model import (
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from controller.zk import codecs
from controller.zk.codecs.key_order import (
    java_hashmap_order,
    java_properties_order,
    java_string_hash,
    scala_mutable_order,
)

VECTORS = Path(__file__).parent / "kafka_json" / "vectors.jsonl"


def _load(kind: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in VECTORS.read_text(encoding="utf-8").split("\n") if line]
    cases = [case for case in lines if case["kind"] == kind]
    assert cases, f"no {kind} vectors in {VECTORS}"
    return cases


def _matches_kafka(ours: bytes, case: dict[str, Any]) -> None:
    if "kafka" in case:
        assert ours.decode() == case["kafka"]
    else:
        assert hashlib.sha256(ours).hexdigest() == case["kafka_sha256"]


def _topic(case: dict[str, Any]) -> TopicAssignment:
    partitions = case.get("partitions") or range(case["partition_count"])
    reassigning = set(case["reassigning"])
    # The replica pattern KafkaJsonVectors.topic writes.
    return TopicAssignment(
        "t",
        case.get("topic_id"),
        {
            p: ReplicaAssignment(
                (p % 5, (p + 1) % 5, (p + 2) % 5),
                (5 + p % 3,) if p in reassigning else (),
                (p % 5,) if p in reassigning else (),
            )
            for p in partitions
        },
    )


@pytest.mark.parametrize("case", _load("topic"), ids=lambda c: f"{len(_topic(c).partitions)}p")
def test_topic_znode_is_kafkas_bytes(case: dict[str, Any]) -> None:
    _matches_kafka(codecs.encode_topic_assignment(_topic(case)), case)


@pytest.mark.parametrize("case", _load("partition_state"))
def test_partition_state_is_kafkas_bytes(case: dict[str, Any]) -> None:
    recovery = (
        LeaderRecoveryState.RECOVERING if case["recovering"] else LeaderRecoveryState.RECOVERED
    )
    lai = LeaderAndIsr(case["leader"], case["leader_epoch"], tuple(case["isr"]), recovery, 0)
    state = LeaderIsrAndControllerEpoch(lai, case["controller_epoch"])
    _matches_kafka(codecs.encode_partition_state(state), case)


@pytest.mark.parametrize("case", _load("feature"))
def test_feature_znode_is_kafkas_bytes(case: dict[str, Any]) -> None:
    features = {name: (level, level) for name, level in case["features"]}
    node = codecs.FeatureZNode(case["version"], case["status"], features)
    _matches_kafka(codecs.encode_feature_znode(node), case)


@pytest.mark.parametrize("case", _load("broker"))
def test_broker_registration_is_kafkas_bytes(case: dict[str, Any]) -> None:
    endpoints = tuple(
        EndPoint(listener, host, port, protocol)
        for listener, protocol, host, port in case["listeners"]
    )
    registration = codecs.BrokerRegistration(
        broker_id=1,
        endpoints=endpoints,
        rack=case.get("rack"),
        timestamp_ms=int(case["timestamp"]),
        features={name: (lo, hi) for name, lo, hi in case.get("features", [])},
        version=case["version"],
    )
    _matches_kafka(codecs.encode_broker_registration(registration), case)


@pytest.mark.parametrize("case", _load("config"), ids=lambda c: f"{len(c['config'])}keys")
def test_config_znode_is_kafkas_bytes(case: dict[str, Any]) -> None:
    config = dict(case["config"])  # in the order Kafka's Properties received them
    _matches_kafka(codecs.encode_topic_config(config), case)


def _alter_id(case: dict[str, Any]) -> str:
    stored = json.loads(case["stored"])["config"]
    return f"{len(stored)}keys+{len(case['added'])}-{len(case['deleted'])}"


@pytest.mark.parametrize("case", _load("config_alter"), ids=_alter_id)
def test_an_altered_config_znode_is_kafkas_bytes(case: dict[str, Any]) -> None:
    """Kafka decodes the stored znode into a Properties, sets the added keys, removes the
    deleted ones and encodes that Properties: not the order of a fresh one."""
    current = json.loads(case["stored"])["config"]
    added = dict(case["added"])
    new = {k: v for k, v in current.items() if k not in case["deleted"]} | added
    _matches_kafka(codecs.encode_topic_config(new, inserted=[*current, *added]), case)


@pytest.mark.parametrize(
    "case",
    [c for c in _load("config_alter") if not (c["added"] and c["deleted"])],
    ids=_alter_id,
)
def test_the_admin_tools_alter_a_config_znode_as_kafka_does(case: dict[str, Any]) -> None:
    """Through the tools' writes (the throttle changes of a reassignment): only additions or
    only deletions, which is what those tools make."""
    from controller.admin import configs
    from controller.zk import paths
    from controller.zk.memory import MemoryZooKeeper

    zk = MemoryZooKeeper().open_session()
    path = paths.config_entity_path("brokers", "1")
    zk.create(path, case["stored"].encode(), makepath=True)
    if case["added"]:
        configs.alter_broker_config(zk, 1, dict(case["added"]))
    elif case["deleted"]:
        configs.remove_broker_configs(zk, 1, case["deleted"])
    else:
        return
    _matches_kafka(zk.get(path)[0], case)


def _tps(case: dict[str, Any]) -> list[TopicPartition]:
    return [TopicPartition(topic, partition) for topic, partition in case["partitions"]]


@pytest.mark.parametrize("case", _load("preferred_election"), ids=lambda c: f"{len(_tps(c))}tps")
def test_preferred_replica_election_is_kafkas_bytes(case: dict[str, Any]) -> None:
    _matches_kafka(codecs.encode_preferred_replica_election(_tps(case)), case)


@pytest.mark.parametrize("case", _load("isr_change"), ids=lambda c: f"{len(_tps(c))}tps")
def test_isr_change_notification_is_kafkas_bytes(case: dict[str, Any]) -> None:
    _matches_kafka(codecs.encode_isr_change_notification(_tps(case)), case)


@pytest.mark.parametrize("case", _load("reassignment_rewrite"), ids=lambda c: f"{len(_tps(c))}tps")
def test_reassignment_rewrite_is_kafkas_bytes(case: dict[str, Any]) -> None:
    # The controller drops completed entries from the znode (KafkaJsonVectors writes the
    # replicas [i % 7, i % 5] for the i-th entry).
    tps = _tps(case)
    removed = set(case["removed"])
    remaining = {tp: (i % 7, i % 5) for i, tp in enumerate(tps) if i not in removed}
    _matches_kafka(codecs.encode_reassignment(remaining, rewritten_from=tps), case)


def test_java_string_hash_matches_javas_definition() -> None:
    # Values of "...".hashCode() in Java; the last one is outside the BMP (a surrogate pair).
    assert java_string_hash("") == 0
    assert java_string_hash("version") == 351608024
    assert java_string_hash("partitions") == 40454857
    assert java_string_hash("caf\u00e9") == 3045921
    assert java_string_hash("\U0001f600") == 1772899
    # Equal hashes ("Aa" and "BB" collide in Java) keep insertion order in one bucket.
    assert java_string_hash("Aa") == java_string_hash("BB")
    assert scala_mutable_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert java_hashmap_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert java_properties_order(["Aa", "BB"]) == ["Aa", "BB"]
