"""Kafka's ``handleIllegalState`` (reference §2.3, pitfall 9, and §6.9's
``ControllerFailoverTest.testHandleIllegalStateException``): when the controller's own request
batch is found dirty, or its send fails, the batch is cleared, the controller resigns and
deletes ``/controller``, the error is rethrown, and a re-election with a higher epoch rebuilds
the context from ZooKeeper."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from structlog.testing import capture_logs

from controller.core.events import BrokerChange, ControllerChange, Reelect
from controller.core.model import TopicPartition
from controller.zk import codecs, paths
from tests.harness import ControllerHarness

TP = TopicPartition("t", 0)


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = ControllerHarness(controller_id=1)
    harness.tolerate_event_errors = True  # handleIllegalState rethrows to the event processor
    for broker in (1, 2):
        harness.register_broker(broker)
    harness.create_topic("t", {0: [1, 2]}, in_context=False)
    harness.start()
    assert harness.controller.is_active and harness.ctx.epoch == 1
    yield harness
    harness.close()


def test_a_dirty_batch_moves_the_controller_and_a_higher_epoch_is_elected(
    h: ControllerHarness,
) -> None:
    ctl = h.controller
    # A bug left an unsent UpdateMetadata in the controller's own batch.
    ctl.request_batch.add_update_metadata_request_for_brokers([1], [TP])
    h.register_broker(3)  # its startup sends UpdateMetadata through that batch
    [change] = h.pending_events()
    assert isinstance(change, BrokerChange)
    h.controller.events.poll()  # take it off the queue: it is processed by hand below

    with capture_logs() as logs:
        h.process(change)

    # Resigned (scheduler stopped, context reset), /controller deleted, error reported.
    assert not ctl.is_active and ctl.active_controller_id == -1
    assert not ctl.scheduler.running
    assert ctl.request_batch.is_empty
    assert h.read(paths.CONTROLLER) is None
    assert ctl.context.live_broker_ids() == set()
    events = [e["event"] for e in logs]
    assert "controller request batch in an illegal state; resigning" in events
    assert "error processing event" in events  # rethrown to the event processor
    assert ctl.event_errors == 1
    assert h.state_changes("controller")[-1]["to_state"] == "resigned"
    assert {type(e) for e in h.pending_events()} & {ControllerChange, Reelect}

    h.drain()

    # The deletion brought a new election; this controller won it again at a higher epoch,
    # and the failover read broker 3 from ZooKeeper.
    assert ctl.is_active and ctl.context.epoch == 2
    assert codecs.decode_controller(h.read(paths.CONTROLLER)) == 1
    assert ctl.context.live_broker_ids() == {1, 2, 3}
    assert [r["to_state"] for r in h.state_changes("controller")][-2:] == ["elected", "ready"]
    assert ctl.scheduler.running


def test_a_failed_send_from_the_controllers_own_batch_moves_the_controller_too(
    h: ControllerHarness,
) -> None:
    ctl = h.controller
    h.channel.fail_next_send(RuntimeError("channel broke"))
    h.register_broker(3)
    h.drain()
    # Resigned on the failure, then re-elected at epoch 2 with a clean batch.
    assert [r["to_state"] for r in h.state_changes("controller")] == [
        "elected",
        "ready",
        "resigned",
        "elected",
        "ready",
    ]
    assert ctl.is_active and ctl.context.epoch == 2
    assert ctl.request_batch.is_empty
    assert ctl.context.live_broker_ids() == {1, 2, 3}
    assert ctl.event_errors == 1  # the failed send, rethrown to the event processor


def test_an_event_that_fails_unexpectedly_is_counted_in_the_metrics() -> None:
    from controller.metrics import ControllerMetrics

    metrics = ControllerMetrics()
    h = ControllerHarness(controller_id=1, metrics=metrics)
    h.tolerate_event_errors = True
    for broker in (1, 2):
        h.register_broker(broker)
    h.start()
    name = "kafka_controller_event_errors_total"
    assert metrics.registry.get_sample_value(name, {"event": "BrokerChange"}) == 0  # from start
    h.channel.fail_next_send(RuntimeError("channel broke"))
    h.register_broker(3)
    h.drain()
    assert metrics.registry.get_sample_value(name, {"event": "BrokerChange"}) == 1
    assert h.controller.event_errors == 1
    h.close()
