"""Topic deletion (reference §2.6) through the real controller: ``tests.harness`` (real
gateway on MemoryZooKeeper, real state machines and request batch) driven through
``/admin/delete_topics``, StopReplica responses, broker deaths and returns, and reassignments
of the topic being deleted. Kafka's ``TopicDeletionManagerTest`` port is in
``test_topic_deletion_manager.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.api.errors import Errors
from controller.channel.sender import RequestKind
from controller.core.events import TopicDeletionStopReplicaResponseReceived
from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaState,
    TopicPartition,
)
from controller.zk import paths
from tests.harness import ControllerHarness

Started = ReplicaState.ReplicaDeletionStarted
Successful = ReplicaState.ReplicaDeletionSuccessful
Ineligible = ReplicaState.ReplicaDeletionIneligible
Offline = ReplicaState.OfflineReplica

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
SR = RequestKind.STOP_REPLICA


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = ControllerHarness(controller_id=5)
    for b in (1, 2, 3):
        harness.register_broker(b)
    harness.start()
    harness.set_topic_config("t", {"retention.ms": "1000"})
    harness.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]}, in_context=False)
    harness.drain()
    harness.channel.clear()
    yield harness
    harness.close()


def request_deletion(h: ControllerHarness, topic: str = "t") -> None:
    h.admin.create(paths.delete_topic_path(topic), makepath=True)
    h.drain()


def deletes(h: ControllerHarness) -> dict[int, object]:
    """The StopReplica(delete=true) requests sent since the last clear, by broker."""
    out = {}
    for r in h.channel.requests(kind=SR):
        if any(r.stop_replica(tp)[1] for tp in r.partitions()):
            out[r.broker_id] = r
    return out


def topic_gone(h: ControllerHarness, topic: str = "t") -> bool:
    return all(
        h.read(p) is None
        for p in (
            paths.topic_path(topic),
            paths.topic_config_path(topic),
            paths.delete_topic_path(topic),
        )
    )


def test_deletion_round_trip_removes_every_znode(h: ControllerHarness) -> None:
    request_deletion(h)
    sent = deletes(h)
    assert set(sent) == {1, 2, 3}
    for r in sent.values():
        assert {tp: r.stop_replica(tp) for tp in r.partitions()} == {
            T0: (-2, True),  # leader epoch -2: the topic is queued for deletion
            T1: (-2, True),
        }
    assert h.read(paths.topic_path("t")) is not None  # nothing removed before the answers
    for b in (1, 2):
        sent[b].respond()
    h.drain()
    assert h.ctx.is_topic_queued_up_for_deletion("t")
    sent[3].respond()
    h.drain()
    assert topic_gone(h)
    assert "t" not in h.ctx.all_topics
    assert h.ctx.partitions_for_topic("t") == set()


def test_deletion_start_tells_every_broker_the_topic_is_being_deleted(
    h: ControllerHarness,
) -> None:
    """Kafka's ``onTopicDeletion``: ``client.sendMetadataUpdate`` of the topic's partitions,
    so brokers stop serving them (UpdateMetadata with leader -2) before the replicas go."""
    request_deletion(h)
    for b in (1, 2, 3):
        states = [
            r.update_metadata(tp)[0].leader_and_isr.leader
            for r in h.channel.requests(b, RequestKind.UPDATE_METADATA)
            for tp in r.partitions()
            if tp in (T0, T1)
        ]
        assert states.count(-2) >= 2, f"broker {b}: {states}"


def test_a_failed_replica_deletion_waits_for_the_broker_to_restart(h: ControllerHarness) -> None:
    request_deletion(h)
    sent = deletes(h)
    sent[1].respond()
    sent[2].respond(partition_errors={T1: Errors.KAFKA_STORAGE_ERROR})
    sent[3].respond()
    h.channel.clear()
    h.drain()
    # Broker 2's t-1 failed: once nothing is in flight it is reset to Offline, and the topic
    # stays ineligible until something resumes it (Kafka: a broker start, a completed
    # reassignment or a failover), so no StopReplica(delete) is sent meanwhile.
    assert h.ctx.replica_state(PartitionAndReplica(T1, 2)) is Offline
    assert h.ctx.topics_ineligible_for_deletion == {"t"}
    assert deletes(h) == {}
    assert not topic_gone(h)
    h.kill_broker(2)
    h.register_broker(2)
    h.drain()
    retried = deletes(h)
    assert set(retried) == {2}
    assert retried[2].partitions() == [T1]  # t-0 on broker 2 is already deleted
    retried[2].respond()
    h.drain()
    assert topic_gone(h)


def test_a_partition_missing_from_the_response_is_neither_deleted_nor_failed(
    h: ControllerHarness,
) -> None:
    request_deletion(h)
    sent = deletes(h)
    sent[1].respond()
    sent[2].respond(omit=[T1])
    sent[3].respond()
    h.drain()
    assert h.ctx.replica_state(PartitionAndReplica(T1, 2)) is Started
    assert h.ctx.replica_state(PartitionAndReplica(T0, 2)) is Successful
    assert not topic_gone(h)


def test_a_request_level_error_fails_every_partition(h: ControllerHarness) -> None:
    request_deletion(h)
    sent = deletes(h)
    sent[2].respond(error=Errors.UNKNOWN_SERVER_ERROR)
    events = h.pending_events()
    assert [type(e) for e in events] == [TopicDeletionStopReplicaResponseReceived]
    assert dict(events[0].partition_errors) == {  # type: ignore[attr-defined]
        T0: Errors.UNKNOWN_SERVER_ERROR,
        T1: Errors.UNKNOWN_SERVER_ERROR,
    }
    h.drain()
    assert h.ctx.topics_ineligible_for_deletion == {"t"}
    assert h.ctx.replicas_in_state("t", Ineligible) == {
        PartitionAndReplica(T0, 2),
        PartitionAndReplica(T1, 2),
    }


@pytest.mark.parametrize("stale_answer", ["before the bounce", "after the bounce"])
def test_a_deletion_answered_by_the_restarted_broker_completes(
    h: ControllerHarness, stale_answer: str
) -> None:
    # Broker 2 restarts while its StopReplica(delete) is in flight; the new instance answers
    # it STALE_BROKER_EPOCH. The BrokerChange fails and re-sends the deletion there. The stale
    # answer, processed after that, used to fail the re-sent deletion's replicas: the topic
    # was held back for good (the real answer then met an invalid transition).
    request_deletion(h)
    sent = deletes(h)
    for b in (1, 3):
        sent[b].respond()
    h.drain()
    if stale_answer == "before the bounce":
        sent[2].respond(error=Errors.STALE_BROKER_EPOCH)
        h.drain()
    h.channel.clear()
    h.kill_broker(2)
    h.register_broker(2)
    h.drain()
    if stale_answer == "after the bounce":
        sent[2].respond(error=Errors.STALE_BROKER_EPOCH)
        h.drain()
    retried = deletes(h)
    assert set(retried) == {2}
    retried[2].respond()
    h.drain()
    assert topic_gone(h)
    assert h.ctx.topics_ineligible_for_deletion == set()


def test_a_replica_on_a_dead_broker_holds_deletion_until_it_returns(h: ControllerHarness) -> None:
    h.kill_broker(3)
    h.drain()
    h.channel.clear()
    request_deletion(h)
    assert h.ctx.topics_ineligible_for_deletion == {"t"}
    assert set(deletes(h)) == {1, 2}
    for r in deletes(h).values():
        r.respond()
    h.drain()
    assert not topic_gone(h)
    h.channel.clear()
    h.register_broker(3)
    h.drain()
    assert set(deletes(h)) == {3}
    deletes(h)[3].respond()
    h.drain()
    assert topic_gone(h)


def test_deletion_disabled_drops_the_request() -> None:
    h = ControllerHarness(controller_id=5, flags={"delete.topic.enable": "false"})
    try:
        h.register_broker(1)
        h.start()
        h.create_topic("t", {0: [1]}, in_context=False)
        h.drain()
        request_deletion(h)
        assert h.read(paths.delete_topic_path("t")) is None
        assert h.read(paths.topic_path("t")) is not None
        assert not h.ctx.is_topic_queued_up_for_deletion("t")
        assert h.channel.requests(kind=SR) == []
    finally:
        h.close()


def test_a_request_for_an_unknown_topic_is_removed(h: ControllerHarness) -> None:
    request_deletion(h, "nope")
    assert h.read(paths.delete_topic_path("nope")) is None
    assert h.ctx.topics_to_be_deleted == set()
    assert h.read(paths.topic_path("t")) is not None


def test_a_pending_request_is_resumed_by_the_next_controller() -> None:
    h = ControllerHarness(controller_id=5)
    try:
        h.register_broker(1)
        h.create_topic("t", {0: [1]}, in_context=False)
        h.admin.create(paths.delete_topic_path("t"), makepath=True)
        h.start()  # failover: init_from_zookeeper, then try_topic_deletion
        [request] = deletes(h).values()
        request.respond()
        h.drain()
        assert topic_gone(h)
    finally:
        h.close()


def test_malformed_topic_znode_can_still_be_deleted(h: ControllerHarness) -> None:
    h.admin.create(paths.topic_path("broken"), b"{not json")
    h.drain()
    assert "broken" in h.ctx.all_topics
    request_deletion(h, "broken")
    assert topic_gone(h, "broken")
    assert h.read(paths.topic_path("t")) is not None


def _reassign(h: ControllerHarness, targets: dict) -> dict:
    from controller.core.events import ApiPartitionReassignment

    event = ApiPartitionReassignment(reassignments=targets)
    h.put(event)
    h.drain()
    return event.reply.result(0)


def _complete_deletion(h: ControllerHarness) -> None:
    for r in h.channel.requests(kind=SR):
        r.respond()
    h.drain()


def test_a_held_deletion_goes_ahead_once_its_reassignment_is_cancelled() -> None:
    """A deletion requested during a reassignment waits for it (pitfall 27, held on
    purpose); cancelling the reassignment lets it go ahead (Kafka refuses any reassignment
    request for a queued topic, which here would leave no way to hurry the deletion)."""
    h = ControllerHarness(controller_id=5)
    for b in (1, 2, 3, 4):
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    h.drain()
    assert _reassign(h, {T0: (3, 4)}) == {T0: None}
    h.channel.clear()
    request_deletion(h)
    assert h.ctx.topics_ineligible_for_deletion == {"t"} and deletes(h) == {}
    assert _reassign(h, {T0: None}) == {T0: None}  # the cancel is accepted
    # The cancel deletes the adding replicas (3, 4); the topic's deletion starts on 1 and 2.
    assert set(deletes(h)) == {1, 2, 3, 4}
    assert h.ctx.topics_ineligible_for_deletion == set()
    assert "t" in h.ctx.topics_with_deletion_started
    _complete_deletion(h)
    assert topic_gone(h)
    h.close()


def test_a_cancel_is_refused_once_the_deletion_has_started() -> None:
    """t-1's reassignment completes and lifts the hold, so t's deletion starts while t-0 is
    still moving; broker 3 (t-0's adding replica) then dies before answering its StopReplica.
    A cancel of t-0 now is refused, as Kafka refuses it: accepted, it dropped replica 3
    without an answer and the topic was reported deleted while broker 3 still held t-0."""
    from controller.core.events import PartitionReassignmentIsrChange

    h = ControllerHarness(controller_id=5)
    for b in (1, 2, 3, 4):
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: [1, 2], 1: [1, 2]}, in_context=False)
    h.drain()
    assert _reassign(h, {T0: (1, 3), T1: (1, 4)}) == {T0: None, T1: None}
    request_deletion(h)
    assert h.ctx.topics_ineligible_for_deletion == {"t"}  # held: reassignments running
    current = h.zk_state(T1)
    assert current is not None
    lai = current.leader_and_isr
    h.write_partition_state(  # t-1's new replica catches up: its reassignment completes
        T1,
        LeaderIsrAndControllerEpoch(
            LeaderAndIsr(lai.leader, lai.leader_epoch, (1, 2, 4)), current.controller_epoch
        ),
    )
    h.put(PartitionReassignmentIsrChange(tp=T1))
    h.drain()
    assert h.ctx.is_topic_deletion_in_progress("t")
    h.kill_broker(3)
    h.drain()
    refused = _reassign(h, {T0: None})[T0]
    assert refused is not None and refused.error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    for r in list(h.channel.requests(kind=SR)):
        if r.callback is not None and r.broker_id != 3:
            r.respond()
    h.drain()
    # Broker 3 never answered for t-0: the deletion waits for it...
    assert h.read(paths.topic_path("t")) is not None
    assert h.ctx.topics_ineligible_for_deletion == {"t"}
    # ...and is completed by it once it returns (Kafka's resumeDeletionForTopics).
    h.channel.clear()
    h.register_broker(3)
    h.drain()
    assert 3 in deletes(h)
    _complete_deletion(h)
    assert topic_gone(h)
    h.close()


def test_a_topic_re_created_after_a_deletion_mid_reassignment_can_be_deleted() -> None:
    """t-0 completes its reassignment (lifting the hold) and t is deleted while t-1 is
    still moving: nothing of the old topic may hold back the deletion of a new t."""
    from controller.core.events import PartitionReassignmentIsrChange
    from controller.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch

    h = ControllerHarness(controller_id=5)
    for b in (1, 2, 3, 4):
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: [1, 2], 1: [1, 2]}, in_context=False)
    h.drain()
    _reassign(h, {T0: (1, 3), T1: (1, 4)})
    request_deletion(h)
    current = h.zk_state(T0)
    assert current is not None
    lai = current.leader_and_isr
    h.write_partition_state(
        T0,
        LeaderIsrAndControllerEpoch(
            LeaderAndIsr(lai.leader, lai.leader_epoch, (1, 2, 3)), current.controller_epoch
        ),
    )
    h.put(PartitionReassignmentIsrChange(tp=T0))
    h.drain()
    _complete_deletion(h)
    assert topic_gone(h) and "t" not in h.ctx.all_topics
    assert h.ctx.partitions_being_reassigned == set()
    assert h.ctx.topics_ineligible_for_deletion == set()
    h.create_topic("t", {0: [1, 2], 1: [2, 3]}, in_context=False)
    h.drain()
    h.channel.clear()
    request_deletion(h)
    assert h.ctx.topics_ineligible_for_deletion == set()
    assert set(deletes(h)) == {1, 2, 3}
    h.close()


def test_a_deleted_topic_leaves_nothing_in_the_zookeeper_reassignment_request() -> None:
    """t-0's ZooKeeper-submitted reassignment completes (lifting the hold) and t is deleted
    while t-1 is still moving. Its entry must leave /admin/reassign_partitions with the
    topic: left there, a topic re-created under the name could not get partitions added and
    would be moved, unasked, at the next failover."""
    from controller.admin import topics as admin_topics
    from controller.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch
    from controller.zk import codecs

    h = ControllerHarness(controller_id=5)
    for b in (1, 2, 3, 4):
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: [1, 2], 1: [1, 2]}, in_context=False)
    h.drain()
    request = codecs.encode_reassignment({T0: [3, 4], T1: [3, 4]})
    h.admin.create(paths.REASSIGN_PARTITIONS, request, makepath=True)
    h.drain()
    assert h.ctx.partitions_being_reassigned == {T0, T1}
    request_deletion(h)
    assert h.ctx.topics_ineligible_for_deletion == {"t"}
    current = h.zk_state(T0)
    assert current is not None
    lai = current.leader_and_isr
    h.write_partition_state(  # t-0's new replicas catch up: its reassignment completes
        T0,
        LeaderIsrAndControllerEpoch(
            LeaderAndIsr(lai.leader, lai.leader_epoch, (1, 2, 3, 4)), current.controller_epoch
        ),
    )
    h.drain()
    _complete_deletion(h)
    assert topic_gone(h)
    assert h.read(paths.REASSIGN_PARTITIONS) is None
    isr_path = paths.partition_state_path("t", 1)
    assert h.gateway.watches.data_watcher(isr_path) is None  # t-1's ISR watch went too

    h.create_topic("t", {0: [1, 2], 1: [1, 2]}, in_context=False)
    h.drain()
    assert admin_topics.add_partitions(h.admin, "t", 3) is not None  # not refused
    h.zk.expire(h.port.inner, reconnect=True)  # a new session: election and failover
    h.drain()
    assert h.controller.is_active
    assert h.ctx.partitions_being_reassigned == set()
    assert h.ctx.partition_full_replica_assignment(T1).replicas == (1, 2)
    h.close()
