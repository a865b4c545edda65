"""The request batch beyond Kafka's ``ControllerChannelManagerTest`` (reference §4.3, §7).

Lifecycle (``new_batch`` refuses a dirty batch, a failed send keeps the unsent requests), the
per-broker order LeaderAndIsr -> UpdateMetadata -> StopReplica, last-writer-wins UpdateMetadata
states, LiveLeaders, the -1 leader, per-target broker epochs, the UpdateMetadata partition
map being emptied by every send, and which StopReplica responses count for topic deletion.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.api.errors import Errors
from controller.channel.batch import ControllerBrokerRequestBatch
from controller.channel.sender import RequestKind
from controller.core.errors import IllegalRequestBatchStateError
from controller.core.events import TopicDeletionStopReplicaResponseReceived
from controller.core.model import ReplicaAssignment, TopicPartition
from tests.harness import ControllerHarness, leadership

EPOCH = 1
FOO0, FOO1 = TopicPartition("foo", 0), TopicPartition("foo", 1)
BAR0 = TopicPartition("bar", 0)
RS = ReplicaAssignment((1, 2, 3))

LAI = RequestKind.LEADER_AND_ISR
UMR = RequestKind.UPDATE_METADATA
SR = RequestKind.STOP_REPLICA


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = ControllerHarness(controller_id=1)
    harness.ctx.epoch = EPOCH
    harness.set_live_brokers([1, 2, 3], epoch={1: 11, 2: 12, 3: 13})
    harness.create_topic("foo", {0: RS, 1: RS}, topic_id="AAAAAAAAAAAAAAAAAAAAAA", in_zk=False)
    harness.create_topic("bar", {0: RS}, in_zk=False)
    for tp in (FOO0, FOO1, BAR0):
        harness.ctx.put_partition_leadership_info(tp, leadership(1, (1, 2, 3), leader_epoch=4))
    yield harness
    harness.close()


@pytest.fixture
def batch(h: ControllerHarness) -> ControllerBrokerRequestBatch:
    b = h.new_batch()
    b.new_batch()
    return b


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
    batch.add_leader_and_isr_request_for_brokers(brokers, tp, info, RS, is_new=is_new)


# -- lifecycle ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["leader_and_isr", "stop_replica", "update_metadata"])
def test_new_batch_refuses_a_batch_with_unsent_requests(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch, kind: str
) -> None:
    if kind == "leader_and_isr":
        add_lai(h, batch, (2,), FOO0)
    elif kind == "stop_replica":
        batch.add_stop_replica_request_for_brokers([2], FOO0, delete_partition=False)
    else:
        batch.add_update_metadata_request_for_brokers([2], [])

    with pytest.raises(IllegalRequestBatchStateError):
        batch.new_batch()
    batch.clear()
    batch.new_batch()
    assert batch.is_empty


def test_failed_send_raises_illegal_state_and_keeps_the_unsent_requests(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    add_lai(h, batch, (2,), FOO0)
    batch.add_stop_replica_request_for_brokers([2], FOO1, delete_partition=False)
    h.channel.fail_next_send(RuntimeError("channel broken"))

    with pytest.raises(IllegalRequestBatchStateError):
        batch.send_requests_to_brokers(EPOCH)

    # As Kafka: the maps are logged, not cleared; the caller must clear (or resign).
    assert not batch.is_empty
    with pytest.raises(IllegalRequestBatchStateError):
        batch.new_batch()


def test_each_broker_gets_leader_and_isr_then_update_metadata_then_stop_replica(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    batch.add_stop_replica_request_for_brokers([2], FOO1, delete_partition=False)
    batch.add_update_metadata_request_for_brokers([2], [BAR0])
    add_lai(h, batch, (2,), FOO0)
    batch.send_requests_to_brokers(EPOCH)

    assert h.channel.kinds(2) == [LAI, UMR, SR]
    assert batch.is_empty


# -- contents ----------------------------------------------------------------------------------


def test_update_metadata_partition_states_are_last_writer_wins(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    batch.add_update_metadata_request_for_brokers([2], [FOO0])
    newer = leadership(2, (2, 3), leader_epoch=5, partition_epoch=3)
    h.ctx.put_partition_leadership_info(FOO0, newer)
    batch.add_update_metadata_request_for_brokers([3], [FOO0])
    batch.send_requests_to_brokers(EPOCH)

    for broker in (2, 3):  # one partition list for every target
        assert h.channel.only(broker, UMR).update_metadata(FOO0)[0] == newer


def test_leader_and_isr_for_a_queued_topic_keeps_its_state_but_metadata_says_deleting(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    h.ctx.queue_topic_deletion(["foo"])
    add_lai(h, batch, (2,), FOO0)
    batch.send_requests_to_brokers(EPOCH)

    lai = h.channel.only(2, LAI).leader_and_isr(FOO0)[0].leader_and_isr
    assert (lai.leader, lai.leader_epoch) == (1, 4)
    umr = h.channel.only(2, UMR).update_metadata(FOO0)[0].leader_and_isr
    assert (umr.leader, umr.leader_epoch, umr.isr) == (-2, 0, (1, 2, 3))


def test_live_leaders_lists_live_or_shutting_down_leaders_on_their_plaintext_endpoint(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    h.ctx.put_partition_leadership_info(FOO1, leadership(2, (2,)))
    h.ctx.put_partition_leadership_info(BAR0, leadership(7, (7,)))  # 7 is not live
    h.ctx.shutting_down_broker_ids.add(2)
    for tp in (FOO0, FOO1, BAR0):
        add_lai(h, batch, (3,), tp)
    batch.send_requests_to_brokers(EPOCH)

    live_leaders = h.channel.only(3, LAI).message.live_leaders
    assert [(b.broker_id, b.host_name, b.port) for b in live_leaders] == [
        (1, "localhost", 9901),
        (2, "localhost", 9902),
    ]


def test_live_leaders_use_the_configured_inter_broker_listener() -> None:
    """inter.broker.listener.name picks the endpoint (not PLAINTEXT, not the first one); a
    leader that did not register that listener is left out, and the request still goes."""
    from controller.core.model import Broker
    from tests.harness.channel import make_broker

    h = ControllerHarness(controller_id=1, flags={"inter.broker.listener.name": "INTERNAL"})
    try:
        h.ctx.epoch = EPOCH
        brokers: dict[Broker, int] = {
            make_broker(1, listeners=("EXTERNAL", "INTERNAL", "CONTROLLER")): 11,
            make_broker(2, listeners=("PLAINTEXT", "CONTROLLER")): 12,
            make_broker(3, listeners=("CONTROLLER", "INTERNAL")): 13,
        }
        h.ctx.set_live_brokers(brokers)
        for broker, epoch in brokers.items():
            h.channel.add_broker(broker, epoch)
        h.create_topic("foo", {0: RS, 1: RS}, in_zk=False)
        h.ctx.put_partition_leadership_info(FOO0, leadership(1, (1, 2, 3), leader_epoch=4))
        h.ctx.put_partition_leadership_info(FOO1, leadership(2, (2, 3), leader_epoch=4))
        batch = h.new_batch()
        batch.new_batch()
        for tp in (FOO0, FOO1):
            add_lai(h, batch, (3,), tp)
        batch.send_requests_to_brokers(EPOCH)

        request = h.channel.only(3, LAI).message
        assert [(b.broker_id, b.port) for b in request.live_leaders] == [(1, 19901)]
        assert {p.partition_index for t in request.topic_states for p in t.partition_states} == {
            0, 1,
        }
    finally:
        h.close()


def test_a_leader_of_minus_one_is_never_a_recipient(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    h.ctx.put_partition_leadership_info(FOO0, leadership(-1, (2,)))
    add_lai(h, batch, (-1, 2), FOO0)
    batch.add_stop_replica_request_for_brokers([-1], FOO1, delete_partition=False)
    batch.send_requests_to_brokers(EPOCH)

    assert h.channel.recipients(LAI) == {2}
    assert h.channel.recipients(SR) == set()
    assert list(h.channel.only(2, LAI).message.live_leaders) == []


def test_every_request_carries_the_broker_epoch_of_its_target(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    h.set_live_brokers([1, 2, 3], epoch={1: 0, 2: 12, 3: 13})  # 0 is a valid epoch too
    add_lai(h, batch, (1, 2), FOO0)
    batch.add_stop_replica_request_for_brokers([1, 3], FOO1, delete_partition=False)
    batch.send_requests_to_brokers(EPOCH)

    epochs = {(r.broker_id, r.kind): r.message.broker_epoch for r in h.channel.sent}
    assert epochs == {
        (1, LAI): 0,
        (2, LAI): 12,
        (1, UMR): 0,
        (2, UMR): 12,
        (3, UMR): 13,
        (1, SR): 0,
        (3, SR): 13,
    }


def test_update_metadata_partitions_do_not_leak_into_the_next_batch(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """With no broker to send to, the partition states queued for UpdateMetadata must still
    be dropped at send (Kafka clears both UMR maps unconditionally): a later batch must not
    resend them, stale, to brokers that were never meant to get them."""
    h.ctx.remove_live_brokers([1, 2, 3])
    add_lai(h, batch, (2,), FOO0)  # UMR for all live brokers (none) + FOO0
    batch.send_requests_to_brokers(EPOCH)
    assert h.channel.sent == []

    h.set_live_brokers([1, 2, 3])
    batch.new_batch()
    batch.add_update_metadata_request_for_brokers([2], [])
    batch.send_requests_to_brokers(EPOCH)

    assert h.channel.only(2, UMR).partitions() == []


def test_clear_drops_the_queued_update_metadata_partition_states(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """A state machine that fails mid-call clears the batch (Kafka's ``clear()`` empties
    ``updateMetadataRequestPartitionInfoMap`` too): the states queued before the failure must
    not ride along, stale, in the next batch's UpdateMetadata."""
    batch.add_update_metadata_request_for_brokers([2], [FOO0])
    batch.clear()
    batch.new_batch()
    batch.add_update_metadata_request_for_brokers([2], [])
    batch.send_requests_to_brokers(EPOCH)

    assert h.channel.only(2, UMR).partitions() == []


def test_broker_zero_is_a_recipient_like_any_other() -> None:
    """Kafka filters recipients with ``_ >= 0``: broker 0 (the default broker.id) gets its
    LeaderAndIsr, UpdateMetadata and StopReplica; only the -1 "no leader" id is left out."""
    harness = ControllerHarness(controller_id=1)
    try:
        harness.ctx.epoch = EPOCH
        harness.set_live_brokers([0, 1, 2], epoch=1)
        rs = ReplicaAssignment((0, 1, 2))
        harness.create_topic("zero", {0: rs}, in_zk=False)
        tp = TopicPartition("zero", 0)
        harness.ctx.put_partition_leadership_info(tp, leadership(0, (0, 1, 2), leader_epoch=1))
        info = harness.ctx.partition_leadership_info(tp)
        assert info is not None
        batch = harness.new_batch()
        batch.new_batch()
        batch.add_leader_and_isr_request_for_brokers((0, 1), tp, info, rs, is_new=False)
        batch.add_stop_replica_request_for_brokers([0], tp, delete_partition=False)
        batch.send_requests_to_brokers(EPOCH)

        assert harness.channel.kinds(0) == [LAI, UMR, SR]
        assert list(harness.channel.only(0, LAI).partition_states()) == [tp]

        harness.channel.clear()
        batch.new_batch()
        batch.add_update_metadata_request_for_brokers([0], [tp])
        batch.send_requests_to_brokers(EPOCH)
        assert harness.channel.kinds(0) == [UMR]
    finally:
        harness.close()


def test_is_new_is_sticky_only_once_set(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """Kafka's ``setIsNew(isNew || alreadyNew)``: two adds that are not new stay not new (a
    replica wrongly flagged new may have its log re-created on another log dir)."""
    add_lai(h, batch, (2,), FOO0, is_new=False)
    add_lai(h, batch, (2,), FOO0, is_new=False)
    add_lai(h, batch, (2,), FOO1, is_new=False)
    add_lai(h, batch, (2,), FOO1, is_new=True)
    batch.send_requests_to_brokers(EPOCH)

    states = h.channel.only(2, LAI).partition_states()
    assert (states[FOO0].is_new, states[FOO1].is_new) == (False, True)


def test_delete_partition_is_sticky_only_once_set(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """Kafka's ``setDeletePartition(alreadyDelete || deletePartition)``: stopping a replica
    twice in one batch must not turn into deleting its data."""
    batch.add_stop_replica_request_for_brokers([2], FOO0, delete_partition=False)
    batch.add_stop_replica_request_for_brokers([2], FOO0, delete_partition=False)
    batch.send_requests_to_brokers(EPOCH)

    assert h.channel.only(2, SR).stop_replica(FOO0)[1] is False


def test_update_metadata_reports_replicas_on_failed_log_dirs_as_offline(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """Kafka's ``offlineReplicas = replicas.filter(!isReplicaOnline(_, tp))``: a live broker's
    replica on a failed log dir is offline, while its other partitions stay online."""
    h.ctx.replicas_on_offline_dirs[3] = {FOO0}
    batch.add_update_metadata_request_for_brokers([2], [FOO0, FOO1])
    batch.send_requests_to_brokers(EPOCH)

    request = h.channel.only(2, UMR)
    assert request.update_metadata(FOO0)[2] == (3,)
    assert request.update_metadata(FOO1)[2] == ()


# -- StopReplica responses and topic deletion --------------------------------------------------


def started_deletion(h: ControllerHarness, batch: ControllerBrokerRequestBatch) -> None:
    h.ctx.queue_topic_deletion(["foo"])
    h.ctx.begin_topic_deletion(["foo"])
    for tp in (FOO0, FOO1, BAR0):
        batch.add_stop_replica_request_for_brokers([2], tp, delete_partition=True)
    batch.send_requests_to_brokers(EPOCH)


def test_stop_replica_response_reports_partition_errors_of_deleting_topics(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    started_deletion(h, batch)
    h.channel.only(2, SR).respond(partition_errors={FOO1: Errors.KAFKA_STORAGE_ERROR})

    [event] = h.batch_events
    assert isinstance(event, TopicDeletionStopReplicaResponseReceived)
    assert (event.replica_id, event.request_error) == (2, Errors.NONE)
    assert dict(event.partition_errors) == {FOO0: Errors.NONE, FOO1: Errors.KAFKA_STORAGE_ERROR}


def test_stop_replica_response_counts_only_partitions_the_broker_answered_for(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """A partition missing from the response was not confirmed deleted: Kafka collects only
    the response's partition errors, so it must not be reported as NONE (success)."""
    started_deletion(h, batch)
    h.channel.only(2, SR).respond(omit=[FOO1])

    [event] = h.batch_events
    assert isinstance(event, TopicDeletionStopReplicaResponseReceived)
    assert dict(event.partition_errors) == {FOO0: Errors.NONE}


def test_stop_replica_request_error_fails_every_watched_partition(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """A top-level error comes with no partitions. Here every delete=true partition of a
    deleting topic in the request is reported with that error, so deletion marks them failed
    (and retries later). This diverges from Kafka on purpose (commit 22e3e06): Kafka's
    callback collects only the response's partitions, queues no event, and the replicas stay
    in ReplicaDeletionStarted until a failover."""
    started_deletion(h, batch)
    h.channel.only(2, SR).respond(error=Errors.UNKNOWN_SERVER_ERROR, omit=[FOO0, FOO1, BAR0])

    [event] = h.batch_events
    assert isinstance(event, TopicDeletionStopReplicaResponseReceived)
    assert event.request_error == Errors.UNKNOWN_SERVER_ERROR
    assert dict(event.partition_errors) == dict.fromkeys((FOO0, FOO1), Errors.UNKNOWN_SERVER_ERROR)


def test_stop_replica_answered_by_a_newer_broker_instance_reports_nothing(
    h: ControllerHarness, batch: ControllerBrokerRequestBatch
) -> None:
    """STALE_BROKER_EPOCH: the broker restarted. Its BrokerChange fails and resumes the
    deletion's replicas there, so the answer queues nothing, as in Kafka."""
    started_deletion(h, batch)
    h.channel.only(2, SR).respond(error=Errors.STALE_BROKER_EPOCH, omit=[FOO0, FOO1, BAR0])

    assert h.batch_events == []
