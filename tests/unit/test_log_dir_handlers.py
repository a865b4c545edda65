"""Log-dir failure handling (reference §2.11) on the in-memory controller harness: the
LeaderAndIsr-response bookkeeping of replicas on failed dirs, and the notification handler.
End-to-end runs with reference brokers are in tests/integration/test_log_dirs.py."""

from __future__ import annotations

import pytest

from controller.api.errors import Errors
from controller.channel.sender import RequestKind
from controller.core.events import LeaderAndIsrResponseReceived
from controller.core.model import TopicPartition
from controller.zk import codecs, paths
from tests.harness import ControllerHarness

T0, T1, U0 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)


@pytest.fixture
def h() -> ControllerHarness:
    """A controller elected the real way over brokers 1-3 and topic t (both partitions led
    by broker 1, ISR [1, 2, 3]), with its start-up requests already sent."""
    harness = ControllerHarness(controller_id=5)
    for b in (1, 2, 3):
        harness.register_broker(b)
    harness.create_topic("t", {0: [1, 2, 3], 1: [1, 2, 3]}, in_context=False)
    harness.start()
    assert harness.controller.is_active
    for tp in (T0, T1):
        assert harness.zk_state(tp).leader_and_isr.isr == (1, 2, 3)
    harness.channel.clear()
    return harness


def respond(h: ControllerHarness, broker_id: int, errors: dict, error: int = Errors.NONE) -> None:
    h.process(
        LeaderAndIsrResponseReceived(broker_id=broker_id, error_code=error, partition_errors=errors)
    )


def test_storage_error_takes_the_replica_offline_and_moves_leadership(h):
    respond(h, 1, {T0: Errors.KAFKA_STORAGE_ERROR, T1: Errors.NONE})
    assert h.ctx.replicas_on_offline_dirs == {1: {T0}}
    s0 = h.zk_state(T0).leader_and_isr
    assert (s0.leader, s0.isr) == (2, (2, 3))
    s1 = h.zk_state(T1).leader_and_isr
    assert (s1.leader, s1.isr, s1.leader_epoch) == (1, (1, 2, 3), 0)
    # Broker 1 is told to stop t-0 (OfflineReplica); the others learn the new leadership.
    assert h.channel.only(1, RequestKind.STOP_REPLICA).partitions() == [T0]
    info, _, _ = h.channel.requests(2, RequestKind.LEADER_AND_ISR)[-1].leader_and_isr(T0)
    assert info.leader_and_isr.leader == 2


def test_a_later_storage_error_adds_to_the_earlier_ones(h):
    respond(h, 1, {T0: Errors.KAFKA_STORAGE_ERROR})
    respond(h, 1, {T1: Errors.KAFKA_STORAGE_ERROR})
    assert h.ctx.replicas_on_offline_dirs == {1: {T0, T1}}
    assert h.zk_state(T1).leader_and_isr.leader == 2


def test_repeating_a_known_storage_error_does_nothing_more(h):
    respond(h, 1, {T0: Errors.KAFKA_STORAGE_ERROR})
    zxid = h.zxid
    h.channel.clear()
    respond(h, 1, {T0: Errors.KAFKA_STORAGE_ERROR})
    assert (h.zxid, h.channel.sent) == (zxid, [])


def test_none_takes_a_replica_off_the_failed_list(h):
    respond(h, 1, {T0: Errors.KAFKA_STORAGE_ERROR, T1: Errors.KAFKA_STORAGE_ERROR})
    zxid = h.zxid
    respond(h, 1, {T0: Errors.NONE})
    assert h.ctx.replicas_on_offline_dirs == {1: {T1}}
    assert h.zxid == zxid  # nothing newly offline: no transition


def test_other_partition_refusals_are_logged_by_error_and_change_nothing(h):
    """Kafka ignores them silently; INCONSISTENT_TOPIC_ID (a replica of an earlier topic of
    that name) keeps the broker out of the ISR for good, so the controller says so.
    STALE_CONTROLLER_EPOCH is an already applied state (a resend): not logged."""
    from structlog.testing import capture_logs

    zxid = h.zxid
    with capture_logs() as logs:
        respond(h, 2, {T0: Errors.INCONSISTENT_TOPIC_ID, T1: Errors.STALE_CONTROLLER_EPOCH})
        respond(h, 3, {T0: Errors.UNKNOWN_TOPIC_OR_PARTITION, T1: Errors.NONE})
        # A partition the broker no longer hosts (deleted, moved): a race, not a refusal.
        respond(h, 2, {U0: Errors.INCONSISTENT_TOPIC_ID})
    assert h.zxid == zxid and not any(h.ctx.replicas_on_offline_dirs.values())
    refused = [e for e in logs if e["event"].startswith("broker refused LeaderAndIsr")]
    assert [(e["broker_id"], e["error"], e["partitions"]) for e in refused] == [
        (2, "INCONSISTENT_TOPIC_ID", ["t-0"]),
        (3, "UNKNOWN_TOPIC_OR_PARTITION", ["t-0"]),
    ]
    assert "earlier topic of that name" in refused[0]["event"]
    assert all(e["log_level"] == "warning" for e in refused)


@pytest.mark.parametrize(
    ("broker_id", "errors", "error"),
    [
        (1, {T0: Errors.KAFKA_STORAGE_ERROR}, Errors.STALE_CONTROLLER_EPOCH),  # top level
        (9, {T0: Errors.KAFKA_STORAGE_ERROR}, Errors.NONE),  # not a registered broker
        (1, {U0: Errors.KAFKA_STORAGE_ERROR}, Errors.NONE),  # a partition nobody knows
        (1, {T0: Errors.STALE_CONTROLLER_EPOCH}, Errors.NONE),  # says nothing about dirs
        (1, {T0: Errors.UNKNOWN_SERVER_ERROR}, Errors.NONE),
    ],
    ids=["top-level error", "gone broker", "unknown partition", "stale epoch", "other error"],
)
def test_responses_that_say_nothing_about_failed_dirs(h, broker_id, errors, error):
    zxid = h.zxid
    respond(h, broker_id, errors, error)
    assert h.ctx.replicas_on_offline_dirs.get(broker_id, set()) == set()
    assert (h.zxid, h.channel.sent) == (zxid, [])
    assert h.controller.is_active


def test_not_hosted_on_that_broker_is_ignored(h):
    # Broker 3 answers for a partition of a topic it does not host (moved or deleted).
    h.create_topic("u", {0: [1, 2]})
    zxid = h.zxid
    respond(h, 3, {U0: Errors.KAFKA_STORAGE_ERROR})
    assert h.ctx.replicas_on_offline_dirs.get(3, set()) == set()
    assert h.zxid == zxid


def test_an_answer_of_the_brokers_previous_incarnation_is_ignored(h):
    # A LeaderAndIsr to broker 1, answered (storage error) only once broker 1 has bounced:
    # the old incarnation's failed dir says nothing about the new one (its registration
    # brings its own LeaderAndIsr, answered by itself).
    old_epoch = h.ctx.live_broker_id_and_epochs()[1]
    h.kill_broker(1)
    h.drain()
    h.register_broker(1)
    h.drain()
    fresh = h.channel.requests(1, RequestKind.LEADER_AND_ISR)
    assert fresh, "the new incarnation is sent a LeaderAndIsr"
    assert h.ctx.live_broker_id_and_epochs()[1] != old_epoch
    zxid = h.zxid
    h.process(
        LeaderAndIsrResponseReceived(
            broker_id=1, broker_epoch=old_epoch, partition_errors={T0: Errors.KAFKA_STORAGE_ERROR}
        )
    )
    assert h.ctx.replicas_on_offline_dirs.get(1, set()) == set() and h.zxid == zxid
    # The new incarnation's own answer, through the callback the batch gave its request, counts.
    fresh[-1].respond(partition_errors={T0: Errors.KAFKA_STORAGE_ERROR})
    h.drain()
    assert h.ctx.replicas_on_offline_dirs == {1: {T0}}


def log_dir_event(h: ControllerHarness, data: bytes) -> str:
    return h.admin.create(paths.LOG_DIR_EVENT_CREATE_PATH, data, sequential=True)


@pytest.mark.parametrize(
    "data",
    [
        codecs.encode_log_dir_event(2),
        # Kafka's decoder reads only the broker: a tool writing another version, another
        # event or neither still reports broker 2's failed dir.
        b'{"version":2,"broker":2,"event":1}',
        b'{"version":1,"broker":2,"event":7}',
        b'{"broker":2}',
    ],
)
def test_log_dir_event_asks_the_broker_about_every_replica(h, data):
    log_dir_event(h, data)
    h.drain()
    assert h.admin.get_children(paths.LOG_DIR_EVENT_NOTIFICATION) == []
    lai = h.channel.only(2, RequestKind.LEADER_AND_ISR)
    assert sorted(lai.partitions()) == [T0, T1]
    assert not any(lai.leader_and_isr(tp)[2] for tp in (T0, T1))  # isNew=false
    assert h.channel.requests(1, RequestKind.LEADER_AND_ISR) == []
    # The broker's answer is what takes replicas offline.
    lai.respond(partition_errors={T1: Errors.KAFKA_STORAGE_ERROR})
    h.drain()
    assert h.ctx.replicas_on_offline_dirs == {2: {T1}}
    assert h.zk_state(T1).leader_and_isr.isr == (1, 3)


def test_log_dir_events_of_unregistered_brokers_and_malformed_ones_are_dropped(h):
    for data in (codecs.encode_log_dir_event(9), b"{", b'{"version":1,"event":1}'):
        log_dir_event(h, data)
    zxid_before = h.zxid
    h.drain()
    assert h.admin.get_children(paths.LOG_DIR_EVENT_NOTIFICATION) == []
    assert h.channel.sent == []
    # Only the deletes were written.
    assert h.zxid > zxid_before
    assert h.controller.is_active


def test_many_replicas_on_a_failed_log_dir_are_logged_in_one_bounded_line() -> None:
    """A broker's failed log dir can hold thousands of replicas: the warning names how many
    and a sample, not all of them (a 100 KB line is split by journald and container
    runtimes, and the pieces are no JSON)."""
    from structlog.testing import capture_logs

    from controller.logs import LOG_SAMPLE_SIZE

    harness = ControllerHarness(controller_id=5)
    for b in (1, 2):
        harness.register_broker(b)
    harness.create_topic("big", {p: [1, 2] for p in range(300)}, in_context=False)
    harness.start()
    failed = {TopicPartition("big", p): Errors.KAFKA_STORAGE_ERROR for p in range(300)}
    with capture_logs() as logs:
        respond(harness, 1, failed)
    [line] = [e for e in logs if e["event"] == "marking replicas on a failed log dir offline"]
    assert line["count"] == 300
    assert len(line["partitions"]) == LOG_SAMPLE_SIZE
    assert harness.zk_state(TopicPartition("big", 299)).leader_and_isr.leader == 2
