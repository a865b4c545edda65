"""The controller's live metrics against a real Controller on the in-memory ZooKeeper."""

from __future__ import annotations

import pytest

from controller.core.events import Expire
from controller.handlers.failover import ControllerElection
from controller.metrics import ControllerMetrics
from controller.zk.port import SessionState
from tests.harness import ControllerHarness

P = "kafka_controller_"


def gauge(metrics: ControllerMetrics, name: str) -> float:
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name == P + name:
                return sample.value
    raise AssertionError(f"no sample {name}")


def started(
    partitions: dict[int, list[int]] | None = None,
) -> tuple[ControllerHarness, ControllerMetrics]:
    """Controller 1, active, with broker 1 and topic t of ``partitions`` (if given)."""
    metrics = ControllerMetrics(controller_id=1)
    h = ControllerHarness(controller_id=1, metrics=metrics)
    h.register_broker(1)
    if partitions is not None:
        h.create_topic("t", partitions)
    h.start()
    return h, metrics


def test_active_controller_count_is_1_during_the_failover(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Kafka's ActiveControllerCount reads isActive: 1 from the election on, while the
    # failover (minutes on a big cluster) is still running, not only after it.
    metrics = ControllerMetrics(controller_id=1)
    h = ControllerHarness(controller_id=1, metrics=metrics)
    h.register_broker(1)
    h.create_topic("t", {0: [1]})
    during: list[float] = []
    failover = ControllerElection.on_controller_failover

    def scraped(self: ControllerElection) -> None:
        during.append(gauge(metrics, "active_controller_count"))
        during.append(gauge(metrics, "controller_epoch"))
        # The context gauges wait for the failover's snapshot, as Kafka's updateMetrics.
        during.append(gauge(metrics, "global_partition_count"))
        failover(self)

    monkeypatch.setattr(ControllerElection, "on_controller_failover", scraped)
    assert gauge(metrics, "active_controller_count") == 0
    h.start()
    assert during == [1, 1, 0]
    assert gauge(metrics, "active_controller_count") == 1
    assert gauge(metrics, "global_partition_count") == 1


def test_a_session_closed_while_stopping_is_no_expiry() -> None:
    h, metrics = started()
    h.controller._on_session_state(SessionState.LOST)  # a real expiry is counted
    assert gauge(metrics, "zookeeper_session_expirations_total") == 1
    assert any(isinstance(e, Expire) for e in h.pending_events())
    h.drain()
    h.controller.mark_stopping()  # the daemon closes the session itself from here on
    h.controller._on_session_state(SessionState.LOST)
    assert gauge(metrics, "zookeeper_session_expirations_total") == 1
    assert h.pending_events() == []


def test_after_a_session_loss_no_context_gauge_counts_while_the_expire_waits() -> None:
    # The Expire waits behind the event in progress (here: not yet drained): the controller
    # must not report its partitions beside its successor's, or sum() over the controllers
    # counts them twice (the OfflinePartitions and imbalance alerts).
    h, metrics = started({0: [1], 1: [1]})
    assert (gauge(metrics, "global_topic_count"), gauge(metrics, "global_partition_count")) == (
        1,
        2,
    )
    h.zk.expire(h.port.inner, reconnect=True)  # the Expire is queued, not processed
    assert h.controller.is_active
    for name in ("active_controller_count", "controller_epoch", "global_topic_count",
                 "global_partition_count", "active_broker_count"):  # fmt: skip
        assert gauge(metrics, name) == 0, name


def test_cut_off_past_the_session_timeout_it_stops_counting_as_active() -> None:
    """Cut off from ZooKeeper (SUSPENDED), the controller stays active, as Kafka's, until
    its session timeout has passed: by then the ensemble has expired the session (kazoo
    hears of it only on reconnecting, hours later in a lasting partition) and a successor
    may be in charge, so its gauges (summed over controllers by the alerts) read 0."""
    h, metrics = started({0: [1]})
    now = [1000.0]
    h.controller._clock = lambda: now[0]
    timeout_s = h.controller.config.zookeeper_session_timeout_ms / 1000
    h.zk.disconnect(h.port.inner)
    now[0] += timeout_s - 1  # a blip shorter than the timeout changes nothing
    assert h.controller.serving_active
    assert gauge(metrics, "active_controller_count") == 1
    assert gauge(metrics, "global_partition_count") == 1
    now[0] += 2
    assert h.controller.is_active and not h.controller.serving_active
    assert gauge(metrics, "active_controller_count") == 0
    assert gauge(metrics, "global_partition_count") == 0
    h.zk.reconnect(h.port.inner)  # the same session after all (no quorum expired it)
    assert h.controller.serving_active
    assert gauge(metrics, "active_controller_count") == 1


def test_a_controller_closing_its_own_session_to_stop_is_no_longer_active() -> None:
    # stop() with a busy event thread: mark_stopping(), then the session is closed and a
    # standby is elected at once; until shutdown() this one must not count beside it.
    h, metrics = started()
    assert gauge(metrics, "active_controller_count") == 1
    h.controller.mark_stopping()
    assert h.controller.is_active and not h.controller.serving_active
    assert gauge(metrics, "active_controller_count") == 0
