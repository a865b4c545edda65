"""Kafka's ``ControllerChannelManagerTest`` (catalogue §6.7): the request batch (§4.3).

The 18 tests keep Kafka's names, snake_cased. Kafka's ``MockControllerBrokerRequestBatch``
records requests and events instead of using the network; here the real batch sends to a
``RecordingChannel`` and its response callbacks raise events into ``h.batch_events``.

Inter-broker protocol versions: Kafka runs several of these tests for every IBP, checking
version numbers and the pre-KIP-570 StopReplica layout (v0-v2: two requests, delete group
first). We have one protocol, equivalent to the newest versions (LeaderAndIsr v7,
UpdateMetadata v8, StopReplica v4) and no IBP setting, so:

* the version-number tables of #4, #9 and #18 do not apply; those tests check instead the
  fields that only the newest versions carry (topic ids, LeaderRecoveryState,
  isKRaftController, the request type, per-partition leader epochs and delete flags);
* #12-#14 ("all IBPs") and #15 test the v3+ behaviour only: one StopReplica per broker.

Fixture (Kafka's): brokers 1, 2, 3 (PLAINTEXT localhost:990N, epoch 1), topics foo and bar
with random ids, 2 partitions each, RF 3, round-robin; controller 1 at epoch 1.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.api.errors import Errors
from controller.channel.batch import ControllerBrokerRequestBatch
from controller.channel.sender import RequestKind
from controller.core.events import (
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataResponseReceived,
)
from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)
from controller.handlers.topics import new_topic_id
from tests.harness import ControllerHarness, leadership, make_broker

CONTROLLER_ID = 1
EPOCH = 1
BROKERS = (1, 2, 3)
FOO0, FOO1 = TopicPartition("foo", 0), TopicPartition("foo", 1)
BAR0, BAR1 = TopicPartition("bar", 0), TopicPartition("bar", 1)
ALL = (FOO0, FOO1, BAR0, BAR1)

LAI = RequestKind.LEADER_AND_ISR
UMR = RequestKind.UPDATE_METADATA
SR = RequestKind.STOP_REPLICA


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = ControllerHarness(controller_id=CONTROLLER_ID)
    harness.ctx.epoch = EPOCH
    harness.set_live_brokers(BROKERS, epoch=1)
    leader_index = 0  # Kafka's round-robin: partition i of the i-th pair starts at broker i
    for topic in ("foo", "bar"):
        assignment = {}
        for p in range(2):
            assignment[p] = [BROKERS[(i + leader_index) % 3] for i in range(3)]
            leader_index += 1
        harness.create_topic(topic, assignment, topic_id=new_topic_id(), in_zk=False)
    yield harness
    harness.close()


@pytest.fixture
def batch(h: ControllerHarness) -> ControllerBrokerRequestBatch:
    b = h.new_batch()
    b.new_batch()
    return b


def lead(h: ControllerHarness, tp: TopicPartition, leader: int, isr: tuple[int, ...]) -> None:
    """Cache leadership (leader epoch 0), as Kafka's tests do before adding requests."""
    h.ctx.put_partition_leadership_info(tp, leadership(leader, isr, controller_epoch=EPOCH))


def add_lai(
    h: ControllerHarness,
    batch: ControllerBrokerRequestBatch,
    brokers: tuple[int, ...],
    tp: TopicPartition,
    *,
    is_new: bool = False,
) -> None:
    info = h.ctx.partition_leadership_info(tp)
    assert info is not None
    batch.add_leader_and_isr_request_for_brokers(
        brokers, tp, info, ReplicaAssignment((1, 2, 3)), is_new=is_new
    )


def test_leader_and_isr_request_sent(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    partitions = {FOO0: (1, (1, 2)), FOO1: (2, (2, 3)), BAR1: (3, (1, 3))}
    for tp, (leader, isr) in partitions.items():
        lead(h, tp, leader, isr)
        add_lai(h, batch, (2,), tp)
    batch.send_requests_to_brokers(EPOCH)

    assert h.channel.kinds(2) == [LAI, UMR]
    request = h.channel.only(2, LAI)
    assert (request.message.controller_id, request.message.controller_epoch) == (1, EPOCH)
    states = request.partition_states()
    assert {tp: (s.leader, tuple(s.isr)) for tp, s in states.items()} == partitions
    assert request.topic_ids() == {t: h.ctx.topic_ids[t] for t in ("foo", "bar")}

    request.respond()  # NONE for every partition, topics named by id only
    [event] = h.batch_events
    assert isinstance(event, LeaderAndIsrResponseReceived)
    assert (event.broker_id, event.error_code) == (2, Errors.NONE)
    # The topic ids of the response resolve to the partitions that were sent.
    assert dict(event.partition_errors) == dict.fromkeys(partitions, Errors.NONE)


def test_leader_and_isr_request_is_new(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    lead(h, FOO0, 1, (1, 2))
    add_lai(h, batch, (2,), FOO0, is_new=True)
    add_lai(h, batch, (2,), FOO0, is_new=False)
    batch.send_requests_to_brokers(EPOCH)

    states = h.channel.only(2, LAI).partition_states()
    assert list(states) == [FOO0]
    assert states[FOO0].is_new is True


def test_leader_and_isr_request_sent_to_live_or_shutting_down_brokers(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    h.ctx.shutting_down_broker_ids.add(2)
    h.ctx.remove_live_brokers([3])
    lead(h, FOO0, 1, (1, 2, 3))
    add_lai(h, batch, (1, 2, 3), FOO0)
    batch.send_requests_to_brokers(EPOCH)

    assert h.channel.recipients() == {1, 2}
    for broker in (1, 2):
        assert h.channel.kinds(broker) == [LAI, UMR]
    assert h.batch_events == []


def test_leader_and_isr_inter_broker_protocol_version(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """Newest protocol only (see the module doc): RECOVERING round-trips, topic ids are set,
    isKRaftController is false and the request type is UNKNOWN (ZooKeeper mode)."""
    recovering = LeaderIsrAndControllerEpoch(
        LeaderAndIsr(1, 3, (1,), LeaderRecoveryState.RECOVERING, 7), EPOCH
    )
    h.ctx.put_partition_leadership_info(FOO0, recovering)
    add_lai(h, batch, (2,), FOO0)
    batch.send_requests_to_brokers(EPOCH)

    request = h.channel.only(2, LAI)
    assert request.leader_and_isr(FOO0) == (recovering, ReplicaAssignment((1, 2, 3)), False)
    assert request.topic_ids()["foo"] == h.ctx.topic_ids["foo"] != ""
    assert request.message.is_kraft_controller is False
    assert request.message.type == 0  # UNKNOWN
    assert request.message.broker_epoch == 1


def test_update_metadata_request_sent(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    partitions = {FOO0: (1, (1, 2)), FOO1: (2, (2, 3)), BAR1: (3, (1, 3))}
    for tp, (leader, isr) in partitions.items():
        lead(h, tp, leader, isr)
    batch.add_update_metadata_request_for_brokers([2], partitions)
    batch.send_requests_to_brokers(EPOCH)

    request = h.channel.only(2, UMR)
    assert h.channel.recipients() == {2}
    states = request.partition_states()
    assert {tp: (s.leader, tuple(s.isr)) for tp, s in states.items()} == partitions
    assert request.topic_ids() == {t: h.ctx.topic_ids[t] for t in ("foo", "bar")}
    assert (request.message.controller_id, request.message.controller_epoch) == (1, EPOCH)
    assert [b.id for b in request.message.live_brokers] == [1, 2, 3]

    request.respond(error=Errors.STALE_BROKER_EPOCH)
    [event] = h.batch_events
    assert isinstance(event, UpdateMetadataResponseReceived)
    assert (event.broker_id, event.error_code) == (2, Errors.STALE_BROKER_EPOCH)


def test_update_metadata_does_not_include_partitions_without_leader_and_isr(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    batch.add_update_metadata_request_for_brokers([2], [FOO0, FOO1, BAR1])
    batch.send_requests_to_brokers(EPOCH)

    request = h.channel.only(2, UMR)
    assert request.partitions() == []
    assert len(request.message.live_brokers) == 3


def test_update_metadata_request_during_topic_deletion(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    partitions = {FOO0: (1, (1, 2)), FOO1: (2, (2, 3)), BAR1: (3, (1, 3))}
    for tp, (leader, isr) in partitions.items():
        h.ctx.put_partition_leadership_info(
            tp, leadership(leader, isr, leader_epoch=4, partition_epoch=6, controller_epoch=EPOCH)
        )
    h.ctx.queue_topic_deletion(["foo"])
    batch.add_update_metadata_request_for_brokers([2], partitions)
    batch.send_requests_to_brokers(EPOCH)

    request = h.channel.only(2, UMR)
    for tp, (leader, isr) in partitions.items():
        info, replicas, _ = request.update_metadata(tp)
        lai = info.leader_and_isr
        if tp.topic == "foo":  # duringDelete: leader -2, leader epoch 0, zkVersion 0
            assert (lai.leader, lai.leader_epoch, lai.partition_epoch) == (-2, 0, 0)
        else:
            assert (lai.leader, lai.leader_epoch, lai.partition_epoch) == (leader, 4, 6)
        assert lai.isr == isr  # the ISR is unchanged either way
        assert replicas == h.ctx.partition_replica_assignment(tp)


def test_update_metadata_includes_live_or_shutting_down_brokers(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    h.ctx.shutting_down_broker_ids.add(2)
    h.ctx.remove_live_brokers([3])
    batch.add_update_metadata_request_for_brokers([1, 2, 3], [])
    batch.send_requests_to_brokers(EPOCH)

    assert h.channel.recipients() == {1, 2}
    for broker in (1, 2):
        request = h.channel.only(broker, UMR)
        assert [b.id for b in request.message.live_brokers] == [1, 2]
        assert request.partitions() == []


def test_update_metadata_inter_broker_protocol_version(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """Newest protocol only: every endpoint of every live broker with its listener and
    security protocol, the rack, offline replicas, topic ids, isKRaftController false."""
    old = h.ctx.live_or_shutting_down_broker(3)
    assert old is not None
    h.ctx.update_broker_metadata(old, make_broker(3, rack="rack-c"))
    h.ctx.shutting_down_broker_ids.add(2)
    lead(h, FOO0, 1, (1, 2, 3))
    batch.add_update_metadata_request_for_brokers([1], [FOO0])
    batch.send_requests_to_brokers(EPOCH)

    request = h.channel.only(1, UMR)
    assert request.message.is_kraft_controller is False
    assert request.message.broker_epoch == 1
    assert request.topic_ids() == {"foo": h.ctx.topic_ids["foo"]}
    brokers = {b.id: b for b in request.message.live_brokers}
    assert [(e.listener, e.host, e.port) for e in brokers[1].endpoints] == [
        ("PLAINTEXT", "localhost", 9901),
        ("CONTROLLER", "localhost", 19901),
    ]
    assert brokers[3].rack == "rack-c" and not brokers[1].HasField("rack")
    assert request.update_metadata(FOO0)[2] == (2,)  # shutting down counts as offline


def test_stop_replica_request_sent(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    # Kafka's leader epochs are all 0; distinct ones show each partition gets its own.
    epochs = {FOO0: 3, FOO1: 4, BAR1: 5}
    for tp, epoch in epochs.items():
        h.ctx.put_partition_leadership_info(tp, leadership(1, (1,), leader_epoch=epoch))
        batch.add_stop_replica_request_for_brokers([2], tp, delete_partition=False)
    batch.send_requests_to_brokers(EPOCH)

    request = h.channel.only(2, SR)
    assert h.channel.recipients() == {2}
    assert {tp: request.stop_replica(tp) for tp in request.partitions()} == {
        tp: (epoch, False) for tp, epoch in epochs.items()
    }
    assert (request.message.controller_id, request.message.controller_epoch) == (1, EPOCH)
    request.respond()
    assert h.batch_events == []


def test_stop_replica_request_with_already_defined_deleted_partition(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    lead(h, FOO0, 1, (1,))
    batch.add_stop_replica_request_for_brokers([2], FOO0, delete_partition=True)
    batch.add_stop_replica_request_for_brokers([2], FOO0, delete_partition=False)
    batch.send_requests_to_brokers(EPOCH)

    assert h.channel.only(2, SR).stop_replica(FOO0) == (0, True)


def test_stop_replica_requests_while_topic_queued_for_deletion(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    for tp in ALL:
        h.ctx.put_partition_leadership_info(tp, leadership(1, (1, 2, 3), leader_epoch=2))
    h.ctx.queue_topic_deletion(["foo"])  # queued, deletion not started
    for tp in ALL:
        batch.add_stop_replica_request_for_brokers([2], tp, delete_partition=True)
    batch.send_requests_to_brokers(EPOCH)

    request = h.channel.only(2, SR)
    assert {tp: request.stop_replica(tp) for tp in ALL} == {
        FOO0: (-2, True),
        FOO1: (-2, True),
        BAR0: (2, True),
        BAR1: (2, True),
    }
    request.respond()
    assert h.batch_events == []  # no deletion has started: nobody waits for this


def test_stop_replica_requests_while_topic_deletion_started(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    for tp in ALL:
        lead(h, tp, 1, (1, 2, 3))
    h.ctx.queue_topic_deletion(["foo"])
    h.ctx.begin_topic_deletion(["foo"])
    for tp in ALL:
        batch.add_stop_replica_request_for_brokers([2], tp, delete_partition=True)
    batch.send_requests_to_brokers(EPOCH)

    h.channel.only(2, SR).respond()
    [event] = h.batch_events
    assert isinstance(event, TopicDeletionStopReplicaResponseReceived)
    assert event.replica_id == 2
    assert dict(event.partition_errors) == {FOO0: Errors.NONE, FOO1: Errors.NONE}


def test_stop_replica_request_without_delete_partition_while_topic_deletion_started(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    for tp in ALL:
        lead(h, tp, 1, (1, 2, 3))
    h.ctx.queue_topic_deletion(["foo"])
    h.ctx.begin_topic_deletion(["foo"])
    for tp in ALL:
        batch.add_stop_replica_request_for_brokers([2], tp, delete_partition=False)
    batch.send_requests_to_brokers(EPOCH)

    request = h.channel.only(2, SR)
    assert all(request.stop_replica(tp) == (-2 if tp.topic == "foo" else 0, False) for tp in ALL)
    request.respond()
    assert h.batch_events == []


def test_mixed_delete_and_not_delete_stop_replica_requests(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """v3+: one request with per-partition flags (older IBPs sent two; not applicable)."""
    deletes = {FOO0: True, FOO1: False, BAR0: True, BAR1: False}
    for tp, delete in deletes.items():
        lead(h, tp, 1, (1, 2, 3))
        batch.add_stop_replica_request_for_brokers([2], tp, delete_partition=delete)
    batch.send_requests_to_brokers(EPOCH)

    request = h.channel.only(2, SR)
    assert {tp: request.stop_replica(tp)[1] for tp in request.partitions()} == deletes
    assert request.message.delete_partitions is False  # the v0-v2 top-level flag


def test_stop_replica_groups_by_broker(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    partitions = (FOO0, FOO1, BAR1)
    for tp in partitions:
        lead(h, tp, 1, (1, 2, 3))
        batch.add_stop_replica_request_for_brokers([2, 3], tp, delete_partition=False)
    batch.send_requests_to_brokers(EPOCH)

    assert h.channel.recipients() == {2, 3}
    for broker in (2, 3):
        assert h.channel.only(broker, SR).partitions() == list(partitions)


def test_stop_replica_sent_only_to_live_and_shutting_down_brokers(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    h.ctx.shutting_down_broker_ids.add(2)
    h.ctx.remove_live_brokers([3])
    lead(h, FOO0, 1, (1, 2, 3))
    batch.add_stop_replica_request_for_brokers([2, 3], FOO0, delete_partition=False)
    batch.send_requests_to_brokers(EPOCH)

    assert h.channel.recipients() == {2}
    assert h.channel.kinds(2) == [SR]


def test_stop_replica_inter_broker_protocol_version(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """Newest protocol only (v4): topic states with per-partition leader epoch and delete
    flag, top-level DeletePartitions false, isKRaftController false, broker epoch set."""
    lead(h, FOO0, 1, (1, 2, 3))
    batch.add_stop_replica_request_for_brokers([2], FOO0, delete_partition=True)
    batch.send_requests_to_brokers(EPOCH)

    message = h.channel.only(2, SR).message
    assert message.is_kraft_controller is False
    assert message.delete_partitions is False
    assert message.broker_epoch == 1
    [topic] = message.topic_states
    assert topic.topic_name == "foo"
    assert [
        (p.partition_index, p.leader_epoch, p.delete_partition) for p in topic.partition_states
    ] == [(0, 0, True)]
