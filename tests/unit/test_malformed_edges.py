"""Znode contents at the edges of what the codecs accept, on the harness (in-memory ZooKeeper).

Each case was a way for a hand-written or foreign znode to stop the controller or damage a
partition: a topic znode whose ``removing_replicas`` lists every replica, a config-change
notification naming ``topics/..``, integers too long for Python's ``int()``, an epoch at the
int32 maximum, and requests naming a topic Kafka's naming rules refuse.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from controller.channel.sender import RequestKind
from controller.core.events import ApiPartitionReassignment, TopicUncleanLeaderElectionEnable
from controller.core.model import ReplicaAssignment, TopicAssignment, TopicPartition
from controller.handlers.config_changes import sequence_number
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError
from tests.harness import ControllerHarness
from tests.harness.malformed import HEALTHY, healthy_cluster, still_serving

T0 = TopicPartition("t", 0)
MAX_INT32 = 2**31 - 1


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = healthy_cluster()
    yield harness
    harness.close()


def fresh() -> ControllerHarness:
    """Controller 5 not started, brokers 1-3 registered, topic ``healthy`` {0: [1, 2]}."""
    harness = ControllerHarness(controller_id=5)
    for b in (1, 2, 3):
        harness.register_broker(b)
    harness.create_topic("healthy", {0: [1, 2]}, in_context=False)
    return harness


def unclean_enabled_for(processed: list[Any]) -> list[str]:
    return [e.topic for e in processed if isinstance(e, TopicUncleanLeaderElectionEnable)]


def json_bytes(doc: Any) -> bytes:
    return json.dumps(doc).encode()


# -- a reassignment whose target is empty ------------------------------------------------


def test_removing_every_replica_is_never_completed_and_a_cancel_repairs_it() -> None:
    h = fresh()
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    h.set_leadership(T0, 1, [1, 2], in_context=False)
    bad = b'{"version":3,"partitions":{"0":[1,2]},"removing_replicas":{"0":[1,2]}}'
    h.admin.set(paths.topic_path("t"), bad)
    state_before = h.zk_state(T0)
    with capture_logs() as logs:
        h.start()
        h.drain()
    assert h.controller.is_active
    # Completing it would have stopped and deleted both replicas, leaving "0":[].
    assert h.channel.requests(kind=RequestKind.STOP_REPLICA) == []
    # Failover adds a topic id; the replicas and removing replicas stay as they were.
    kept = codecs.decode_topic_assignment("t", h.read(paths.topic_path("t")))
    assert kept.partitions == {0: ReplicaAssignment((1, 2), (), (1, 2))}
    assert h.zk_state(T0) == state_before
    refused = [e for e in logs if e["event"] == "cannot resume the reassignment of a partition"]
    assert len(refused) == 1 and "no target replicas" in refused[0]["error"]
    still_serving(h)

    cancel = ApiPartitionReassignment(reassignments={T0: None})
    h.put(cancel)
    h.drain()
    assert cancel.reply.result(0) == {T0: None}
    assert h.ctx.partition_full_replica_assignment(T0) == ReplicaAssignment((1, 2))
    assert T0 not in h.ctx.partitions_being_reassigned
    assert h.channel.requests(kind=RequestKind.STOP_REPLICA) == []
    h.close()


# -- config change notifications ----------------------------------------------------------


@pytest.mark.parametrize("name", ["..", ".", "a/b"])
def test_a_topic_config_change_for_a_name_that_is_no_znode_is_malformed(name: str) -> None:
    path = paths.CONFIG_CHANGES + "/config_change_0000000001"
    data = json_bytes({"version": 2, "entity_path": f"topics/{name}"})
    with pytest.raises(MalformedZnodeError, match="entity_path"):
        codecs.decode_config_change(data, path)
    # Users and clients nest: "users/u/clients/c" stays valid.
    nested = json_bytes({"version": 2, "entity_path": "users/u/clients/c"})
    assert codecs.decode_config_change(nested, path) == ("users", "u/clients/c")


def test_a_bad_config_change_does_not_hide_the_next_one(h: ControllerHarness) -> None:
    h.set_topic_config("healthy", {"unclean.leader.election.enable": "true"})
    session = h.zk.open_session()
    session.create(
        paths.CONFIG_CHANGES + "/config_change_0000000001",
        b'{"version":2,"entity_path":"topics/a/b"}',
    )
    session.create(
        paths.CONFIG_CHANGES + "/config_change_0000000002",
        codecs.encode_config_change("topics", "healthy"),
    )
    assert unclean_enabled_for(h.drain()) == ["healthy"]
    still_serving(h)


def test_a_bad_config_change_present_at_failover_does_not_stop_it() -> None:
    h = fresh()
    session = h.zk.open_session()
    session.ensure_path(paths.CONFIG_CHANGES)
    session.create(
        paths.CONFIG_CHANGES + "/config_change_0000000001",
        b'{"version":2,"entity_path":"topics/.."}',
    )
    h.start()
    h.drain(limit=100)
    assert h.controller.is_active
    assert h.read(paths.CONTROLLER_EPOCH) == b"1"  # elected once, not re-elected in a loop
    still_serving(h)
    h.close()


# -- integers Python's int() refuses (more than 4300 digits) ------------------------------

LONG = "9" * 5000


def test_long_digit_strings_are_no_value_errors() -> None:
    broker = paths.broker_path(4)
    registration = json_bytes(
        {
            "version": 5,
            "host": "h",
            "port": 1,
            "jmx_port": -1,
            "timestamp": LONG,
            "endpoints": ["PLAINTEXT://h:1"],
        }
    )
    # Kafka never reads the timestamp: no int() of it, no ValueError, no refusal.
    assert codecs.decode_broker_registration(4, registration, broker).timestamp_ms == 0
    port = registration.replace(LONG.encode(), b"0").replace(b"h:1", b"h:" + LONG.encode())
    with pytest.raises(MalformedZnodeError, match=r"'endpoints\[0\]'"):
        codecs.decode_broker(4, port, broker)
    topic = b'{"version":1,"partitions":{"' + LONG.encode() + b'":[1]}}'
    with pytest.raises(MalformedZnodeError, match="is larger than"):
        codecs.decode_topic_assignment("t", topic, paths.topic_path("t"))
    assert sequence_number("config_change_" + LONG) is None
    assert sequence_number("config_change_0000000042") == 42


def test_a_long_config_change_name_does_not_stop_the_others(h: ControllerHarness) -> None:
    h.set_topic_config("healthy", {"unclean.leader.election.enable": "true"})
    session = h.zk.open_session()
    session.create(
        paths.CONFIG_CHANGES + "/config_change_" + LONG,
        codecs.encode_config_change("topics", "healthy"),
    )
    session.create(
        paths.CONFIG_CHANGES + "/config_change_0000000001",
        codecs.encode_config_change("topics", "healthy"),
    )
    assert unclean_enabled_for(h.drain()) == ["healthy"]
    still_serving(h)


# -- epochs at the int32 maximum ------------------------------------------------------------


def test_a_leader_epoch_at_the_int32_maximum_fails_only_that_partition() -> None:
    h = fresh()
    big = TopicPartition("big", 0)
    h.create_topic("big", {0: [1, 2]}, in_context=False)
    h.set_leadership(big, 1, [1, 2], leader_epoch=MAX_INT32, controller_epoch=0, in_context=False)
    h.set_leadership(HEALTHY, 1, [1, 2], leader_epoch=3, controller_epoch=0, in_context=False)
    h.start()
    before = h.read(paths.partition_state_path("big", 0))
    with capture_logs() as logs:
        h.kill_broker(1)
        h.drain()
    # Unchanged (and still readable), not rewritten with leader_epoch 2147483648.
    assert h.read(paths.partition_state_path("big", 0)) == before
    state = h.zk_state(HEALTHY)
    assert state is not None
    assert (state.leader_and_isr.leader, state.leader_and_isr.leader_epoch) == (2, 4)
    assert any("int32 maximum" in str(e.get("error", "")) for e in logs)
    # No request carries a wrapped-around epoch.
    for sent in h.channel.requests(kind=RequestKind.LEADER_AND_ISR):
        assert all(p.leader_epoch >= 0 for p in sent.partition_states().values())
    assert h.controller.is_active
    h.close()


def test_a_controller_epoch_at_the_int32_maximum_fails_the_election_clearly() -> None:
    h = fresh()
    h.admin.create(paths.CONTROLLER_EPOCH, str(MAX_INT32).encode())
    with capture_logs() as logs:
        h.start()
        h.drain(limit=50)
    assert not h.controller.is_active
    assert h.read(paths.CONTROLLER_EPOCH) == str(MAX_INT32).encode()
    assert h.read(paths.CONTROLLER) is None
    failed = [e for e in logs if e["event"] == "error while electing or becoming controller"]
    assert failed and "int32 maximum" in failed[0]["error"]
    h.close()


# -- requests naming a topic Kafka's naming rules refuse ------------------------------------


def test_requests_may_name_a_topic_created_under_an_illegal_name() -> None:
    h = fresh()
    session = h.zk.open_session()
    for topic in ("bad name!", "gap"):
        assignment = TopicAssignment(topic, None, {0: ReplicaAssignment((1, 2))})
        session.create(paths.topic_path(topic), codecs.encode_topic_assignment(assignment))
    h.start()
    odd, gap = TopicPartition("bad name!", 0), TopicPartition("gap", 0)
    assert h.zk_state(odd) is not None and h.zk_state(gap) is not None

    session.create(
        paths.REASSIGN_PARTITIONS,
        json_bytes(
            {
                "version": 1,
                "partitions": [
                    {"topic": "bad name!", "partition": 0, "replicas": [1, 3]},
                    {"topic": "gap", "partition": 0, "replicas": [1, 3]},
                ],
            }
        ),
    )
    h.drain()
    assert h.ctx.partition_full_replica_assignment(odd).target_replicas == (1, 3)
    assert h.ctx.partition_full_replica_assignment(gap).target_replicas == (1, 3)

    h.channel.sent.clear()
    session.create(
        paths.ISR_CHANGE_NOTIFICATION + "/isr_change_0000000001",
        codecs.encode_isr_change_notification([odd, gap]),
    )
    h.drain()
    updated = {
        tp for r in h.channel.requests(kind=RequestKind.UPDATE_METADATA) for tp in r.partitions()
    }
    assert {odd, gap} <= updated
    assert h.controller.is_active
    h.close()
