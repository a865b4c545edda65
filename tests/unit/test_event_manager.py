"""ControllerEventManager, ported from Kafka's ControllerEventManagerTest (reference §6.6)."""

from __future__ import annotations

import threading

import pytest

from controller.core.controller_state import ControllerState
from controller.core.event_manager import ControllerEventManager
from controller.core.events import (
    AutoPreferredReplicaLeaderElection,
    BrokerChange,
    ControlledShutdown,
    ControllerEvent,
    NotControllerError,
    TopicChange,
    UpdateMetadataResponseReceived,
)


class RecordingProcessor:
    def __init__(self) -> None:
        self.processed: list[ControllerEvent] = []
        self.preempted: list[ControllerEvent] = []
        self.hook: dict[type, object] = {}

    def process(self, event: ControllerEvent) -> None:
        hook = self.hook.get(type(event))
        if hook is not None:
            hook(event)  # type: ignore[operator]
        self.processed.append(event)

    def preempt(self, event: ControllerEvent) -> None:
        self.preempted.append(event)
        event.preempt()


def wait_for(predicate, timeout: float = 5.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if predicate():
            return
        done.wait(0.01)
    raise AssertionError("condition not reached")


@pytest.fixture
def processor() -> RecordingProcessor:
    return RecordingProcessor()


def make_manager(processor, **kw) -> ControllerEventManager:
    manager = ControllerEventManager(processor, **kw)
    manager.start()
    return manager


def test_event_without_rate_metrics_is_processed(processor):
    processed: list[ControllerState] = []
    manager = make_manager(processor, on_processed=lambda s, d, e: processed.append(s))
    manager.put(UpdateMetadataResponseReceived(broker_id=1))
    wait_for(lambda: len(processor.processed) == 1)
    wait_for(lambda: processed == [ControllerState.UpdateMetadataResponseReceived])
    manager.close()


def test_event_queue_time_observed_for_each_event(processor):
    clock = [0.0]
    gate = threading.Event()
    queue_times: list[float] = []

    def first(event):
        if clock[0] == 0.0:
            gate.wait(5)
            clock[0] += 0.5  # the second event waited 500 ms while the first was processed

    processor.hook[TopicChange] = first
    manager = make_manager(processor, clock=lambda: clock[0], on_queue_time=queue_times.append)
    e1, e2 = TopicChange(), TopicChange()
    manager.put(e1)
    manager.put(e2)
    wait_for(lambda: manager.state is ControllerState.TopicChange)
    gate.set()
    wait_for(lambda: len(processor.processed) == 2)
    assert len(queue_times) == 2
    assert min(queue_times) == 0.0
    assert max(queue_times) == pytest.approx(0.5)
    manager.close()


def test_successful_event_sets_state_while_processing(processor):
    seen: list[ControllerState] = []
    processed: list[ControllerState] = []
    manager_ref: list[ControllerEventManager] = []
    processor.hook[AutoPreferredReplicaLeaderElection] = lambda e: seen.append(manager_ref[0].state)
    manager = make_manager(processor, on_processed=lambda s, d, e: processed.append(s))
    manager_ref.append(manager)
    manager.put(AutoPreferredReplicaLeaderElection())
    wait_for(lambda: processed == [ControllerState.AutoLeaderBalance])
    assert seen == [ControllerState.AutoLeaderBalance]
    wait_for(lambda: manager.state is ControllerState.Idle)
    manager.close()


def test_event_that_throws_is_timed_and_loop_goes_on(processor):
    processed: list[ControllerState] = []

    def boom(event):
        raise RuntimeError("handler bug")

    processor.hook[BrokerChange] = boom
    manager = make_manager(processor, on_processed=lambda s, d, e: processed.append(s))
    manager.put(BrokerChange())
    manager.put(TopicChange())
    wait_for(lambda: len(processor.processed) == 1)
    assert isinstance(processor.processed[0], TopicChange)
    wait_for(lambda: len(processed) == 2)
    assert processed == [ControllerState.BrokerChange, ControllerState.TopicChange]
    # on_processed runs just before the state goes back to Idle
    wait_for(lambda: manager.state is ControllerState.Idle)
    manager.close()


def test_clear_and_put_preempts_queued_events_in_order(processor):
    gate = threading.Event()
    processor.hook[TopicChange] = lambda e: gate.wait(5)
    manager = make_manager(processor)
    manager.put(TopicChange())  # blocks the thread
    wait_for(lambda: manager.state is ControllerState.TopicChange)
    shutdown = ControlledShutdown(broker_id=1, broker_epoch=5)
    b = BrokerChange()
    manager.put(shutdown)
    manager.put(b)
    final = AutoPreferredReplicaLeaderElection()
    queued = manager.clear_and_put(final)
    assert processor.preempted == [shutdown, b]
    assert isinstance(shutdown.reply.exception(timeout=1), NotControllerError)
    gate.set()
    assert queued.await_processing(5)
    wait_for(lambda: processor.processed[-1] is final)
    assert b not in processor.processed
    manager.close()


def test_close_preempts_and_stops_thread(processor):
    gate = threading.Event()
    processor.hook[TopicChange] = lambda e: gate.wait(5)
    manager = make_manager(processor)
    manager.put(TopicChange())
    waiting = ControlledShutdown(broker_id=2, broker_epoch=1)
    manager.put(waiting)
    threading.Timer(0.2, gate.set).start()
    manager.close()
    assert waiting in processor.preempted
    assert isinstance(waiting.reply.exception(timeout=1), NotControllerError)
    assert not manager._thread.is_alive()


def test_events_put_after_close_are_answered_not_queued(processor):
    """A broker RPC arriving while the controller stops must get NOT_CONTROLLER at once, not
    wait out its deadline in a queue nobody drains."""
    gate = threading.Event()
    processor.hook[TopicChange] = lambda e: gate.wait(5)
    manager = make_manager(processor)
    manager.put(TopicChange())  # busy past close's timeout
    wait_for(lambda: manager.state is ControllerState.TopicChange)
    assert manager.close(timeout=0.05) is False
    late = ControlledShutdown(broker_id=3, broker_epoch=1)
    manager.put(late)
    assert isinstance(late.reply.exception(timeout=1), NotControllerError)
    # A session expiry racing the stop cannot displace the shutdown marker.
    expiry = BrokerChange()
    manager.clear_and_put(expiry)
    assert expiry in processor.preempted
    gate.set()
    wait_for(lambda: not manager._thread.is_alive())
    assert manager.pending() == []
    assert late not in processor.processed and expiry not in processor.processed


def test_shutdown_with_a_busy_event_thread_does_not_resign_beside_it(monkeypatch):
    """Resignation mutates the context; it must not run on the stopping thread while the
    event thread is still in an event (a long failover)."""
    from tests.harness import ControllerHarness

    h = ControllerHarness()
    h.start()
    assert h.controller.is_active
    resigned: list[bool] = []
    monkeypatch.setattr(h.controller.events, "close", lambda timeout=30.0: False)
    monkeypatch.setattr(
        h.controller.election, "on_controller_resignation", lambda: resigned.append(True)
    )
    h.controller.shutdown()
    assert resigned == []
    monkeypatch.setattr(h.controller.events, "close", lambda timeout=30.0: True)
    h.controller.shutdown()
    assert resigned == [True]


def test_reply_future_resolved_once():
    event = ControlledShutdown(broker_id=1, broker_epoch=1)
    event.reply.set_result(("ok",))
    event.preempt()  # already answered: preempt must not raise
    assert event.reply.result() == ("ok",)


def test_event_interrupted_by_session_loss_answers_not_controller():
    """A request whose processing loses the controller's ZooKeeper session is answered
    NOT_CONTROLLER (retry elsewhere), not UNKNOWN_SERVER_ERROR."""
    from controller.api.errors import Errors, error_for_exception
    from controller.core.events import Probe
    from controller.zk.errors import ConnectionLossError, SessionExpiredError
    from tests.harness import ControllerHarness

    h = ControllerHarness()
    h.start()
    for error in (SessionExpiredError("expired"), ConnectionLossError("lost")):

        def fail(ctl, error=error):
            raise error

        probe = Probe(fn=fail)
        h.process(probe)
        exc = probe.reply.exception(timeout=1)
        assert isinstance(exc, NotControllerError)
        assert error_for_exception(exc) == Errors.NOT_CONTROLLER


def test_a_start_after_close_starts_no_thread(processor):
    # A stop that raced the daemon's start: the thread used to skip the shutdown marker (it
    # was "running" again) and wait for ever, every new event preempted, a second close False.
    manager = ControllerEventManager(processor)
    assert manager.close(timeout=1)
    manager.start()
    manager.put(BrokerChange())
    assert manager.close(timeout=1)
    assert not manager._thread.is_alive() and processor.processed == []


def test_a_start_racing_a_close_still_stops(processor):
    # close() used to mark the manager stopped before taking the lock: a start() in between
    # marked it running again, and the thread skipped the shutdown marker for ever.
    manager = ControllerEventManager(processor)
    result: list[bool] = []
    with manager._cond:  # close() waits here, as if preempted just before its lock
        closer = threading.Thread(target=lambda: result.append(manager.close(timeout=5)))
        closer.start()
        threading.Event().wait(0.2)  # let it reach the lock (if not: no race, still passes)
        manager.start()
    closer.join(10)
    assert result == [True]
    assert not manager._thread.is_alive()
