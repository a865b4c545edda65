"""Automatic leader rebalance (§2.8): the pure imbalance math, then the handler on the
in-memory controller harness (real gateway on MemoryZooKeeper, real state machines)."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from controller.channel.sender import RequestKind
from controller.core.events import AutoPreferredReplicaLeaderElection
from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionState,
    ReplicaAssignment,
    TopicPartition,
)
from controller.core.rebalance import (
    BrokerImbalance,
    PartitionLeadership,
    has_preferred_leader,
    imbalance_by_preferred_broker,
    imbalance_exceeds,
    rebalance_candidates,
)
from controller.handlers.elections import AUTO_REBALANCE_TASK
from controller.logs import LOG_SAMPLE_SIZE
from tests.harness import ControllerHarness

EPOCH = 50


def t(p: int, topic: str = "t") -> TopicPartition:
    return TopicPartition(topic, p)


# -- the math ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("not_preferred", "total", "percentage", "expected"),
    [
        (1, 10, 10, False),  # 0.1 is not > 0.1 (strict)
        (2, 10, 10, True),
        (1, 9, 10, True),  # 0.111 > 0.1
        (0, 10, 0, False),  # 0 is not > 0
        (1, 1000, 0, True),
        (10, 10, 100, False),  # 100 % never exceeds 100 %
        (0, 0, 10, False),  # no partitions: nothing to rebalance
        (3, 30, 10, False),  # equal ratios compare equal in integers
    ],
)
def test_threshold_is_a_strict_greater_than(
    not_preferred: int, total: int, percentage: int, expected: bool
) -> None:
    assert imbalance_exceeds(not_preferred, total, percentage) is expected


@given(
    total=st.integers(min_value=1, max_value=2000),
    data=st.data(),
    percentage=st.integers(min_value=0, max_value=100),
)
def test_threshold_is_exactly_the_ratio_comparison(
    total: int, data: st.DataObject, percentage: int
) -> None:
    """``not_preferred / total > percentage / 100`` in exact arithmetic, for every input (the
    table above pins the boundary; this pins the ratios just above it, e.g. 1 of 9 at 11 %)."""
    not_preferred = data.draw(st.integers(min_value=0, max_value=total))
    expected = Fraction(not_preferred, total) > Fraction(percentage, 100)
    assert imbalance_exceeds(not_preferred, total, percentage) is expected


def test_one_of_nine_exceeds_eleven_percent() -> None:
    assert imbalance_exceeds(1, 9, 11) is True  # 11.1 % > 11 %


def test_partitions_are_grouped_by_preferred_replica() -> None:
    groups = imbalance_by_preferred_broker(
        [
            PartitionLeadership(t(0), (1, 2), 1),
            PartitionLeadership(t(1), (1, 2), 2),
            PartitionLeadership(t(2), (2, 1), 2),
            PartitionLeadership(t(3), (3, 1), 1),
        ]
    )
    assert groups == {
        1: BrokerImbalance(1, 2, (t(1),)),
        2: BrokerImbalance(2, 1, ()),
        3: BrokerImbalance(3, 1, (t(3),)),
    }


def test_partitions_without_leadership_count_in_the_denominator_only() -> None:
    # 10 prefer broker 1: one led elsewhere, one without leadership info. 1/10 is not > 10 %;
    # leaving the leaderless one out of the denominator would give 1/9 and trigger.
    partitions = [PartitionLeadership(t(p), (1, 2), 1) for p in range(8)]
    partitions.append(PartitionLeadership(t(8), (1, 2), 2))
    partitions.append(PartitionLeadership(t(9), (1, 2), None))
    group = imbalance_by_preferred_broker(partitions)[1]
    assert (group.total, group.not_preferred) == (10, (t(8),))
    assert not group.exceeds(10)
    assert group.ratio == pytest.approx(0.1)


def test_empty_replica_lists_are_skipped() -> None:
    assert imbalance_by_preferred_broker([PartitionLeadership(t(0), (), 1)]) == {}


def test_candidates_only_above_the_threshold_and_only_eligible_ones() -> None:
    group = BrokerImbalance(1, 10, (t(1), t(2)))
    assert rebalance_candidates(group, 10, lambda tp: tp != t(2)) == [t(1)]
    assert rebalance_candidates(group, 20, lambda tp: True) == []  # 0.2 is not > 0.2


# -- the handler on the harness ------------------------------------------------------------


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = ControllerHarness(controller_id=5)
    harness.become_controller(epoch=EPOCH)
    harness.set_live_brokers([1, 2])
    yield harness
    harness.close()


def ten_partitions_preferring_1(h: ControllerHarness, led_by_2: set[int], **isr: list[int]) -> None:
    """t-0..t-9, replicas [1, 2], all Online; ``led_by_2`` are led by 2; ``isr["p3"]`` sets
    partition 3's ISR (default [1, 2])."""
    h.create_topic("t", {p: [1, 2] for p in range(10)})
    for p in range(10):
        h.set_leadership(
            t(p), 2 if p in led_by_2 else 1, isr.get(f"p{p}", [1, 2]), controller_epoch=EPOCH
        )
        h.ctx.put_partition_state(t(p), PartitionState.OnlinePartition)


def run_check(h: ControllerHarness) -> None:
    h.controller.scheduler.startup()
    h.process(AutoPreferredReplicaLeaderElection())


def zk_leaders(h: ControllerHarness) -> dict[int, int]:
    out = {}
    for p in range(10):
        state = h.zk_state(t(p))
        assert state is not None
        out[p] = state.leader_and_isr.leader
    return out


def test_one_of_ten_led_elsewhere_is_not_rebalanced(h: ControllerHarness) -> None:
    ten_partitions_preferring_1(h, led_by_2={3})
    zxid = h.zxid
    run_check(h)
    assert h.zxid == zxid  # nothing written
    assert h.channel.requests(kind=RequestKind.LEADER_AND_ISR) == []
    assert zk_leaders(h)[3] == 2


def test_two_of_ten_led_elsewhere_are_moved_back(h: ControllerHarness) -> None:
    ten_partitions_preferring_1(h, led_by_2={3, 7})
    run_check(h)
    assert zk_leaders(h) == dict.fromkeys(range(10), 1)
    for p in (3, 7):
        state = h.zk_state(t(p))
        assert state is not None
        assert state.leader_and_isr.leader_epoch == 1  # preferred election: epoch + 1
        assert state.leader_and_isr.isr == (1, 2)  # ISR unchanged
    # LeaderAndIsr for the moved partitions goes to every replica.
    assert {r.broker_id for r in h.channel.requests(kind=RequestKind.LEADER_AND_ISR)} == {1, 2}
    # Auto-triggered: the admin znode is never touched.
    assert h.read("/admin/preferred_replica_election") is None


def test_the_imbalance_log_line_names_a_sample_of_the_candidates(h: ControllerHarness) -> None:
    """One line per broker per check: a broker with thousands of misplaced leaders must not
    write thousands of partition names every check interval."""
    h.create_topic("t", {p: [1, 2] for p in range(30)})
    for p in range(30):
        h.set_leadership(t(p), 2, [1, 2], controller_epoch=EPOCH)
        h.ctx.put_partition_state(t(p), PartitionState.OnlinePartition)
    with capture_logs() as logs:
        run_check(h)
    [line] = [e for e in logs if e["event"].startswith("leader imbalance above the threshold")]
    assert line["candidates"] == 30
    assert line["partitions"] == [str(t(p)) for p in range(LOG_SAMPLE_SIZE)]
    assert all(state == 1 for state in zk_leaders(h).values())


def test_only_partitions_whose_preferred_replica_is_in_the_isr_are_elected(
    h: ControllerHarness,
) -> None:
    ten_partitions_preferring_1(h, led_by_2={3, 7}, p7=[2])
    run_check(h)
    leaders = zk_leaders(h)
    assert (leaders[3], leaders[7]) == (1, 2)


def test_dead_preferred_replica_is_not_a_candidate(h: ControllerHarness) -> None:
    ten_partitions_preferring_1(h, led_by_2={3, 7})
    h.set_live_brokers([2])
    zxid = h.zxid
    run_check(h)
    assert h.zxid == zxid


def test_leaderless_partitions_keep_the_ratio_at_the_threshold(h: ControllerHarness) -> None:
    ten_partitions_preferring_1(h, led_by_2={3})
    h.ctx.remove_partition_leadership_info(t(9))  # counts in the denominator only
    zxid = h.zxid
    run_check(h)
    assert h.zxid == zxid


def test_percentage_is_read_from_the_config() -> None:
    h = ControllerHarness(controller_id=5, flags={"leader.imbalance.per.broker.percentage": "0"})
    try:
        h.become_controller(epoch=EPOCH)
        h.set_live_brokers([1, 2])
        ten_partitions_preferring_1(h, led_by_2={3})
        run_check(h)
        assert zk_leaders(h)[3] == 1
    finally:
        h.close()


def test_topics_queued_for_deletion_are_left_out(h: ControllerHarness) -> None:
    ten_partitions_preferring_1(h, led_by_2={1, 2, 3})
    h.ctx.queue_topic_deletion(["t"])
    zxid = h.zxid
    run_check(h)
    assert h.zxid == zxid


def test_check_reschedules_itself_while_active(h: ControllerHarness) -> None:
    ten_partitions_preferring_1(h, led_by_2=set())
    run_check(h)
    assert h.controller.scheduler.pending() == [AUTO_REBALANCE_TASK]


def test_inactive_controller_neither_checks_nor_reschedules(h: ControllerHarness) -> None:
    ten_partitions_preferring_1(h, led_by_2={1, 2, 3})
    h.controller.active_controller_id = 9
    zxid = h.zxid
    run_check(h)
    assert h.zxid == zxid
    assert h.controller.scheduler.pending() == []


def test_failover_schedules_the_first_check() -> None:
    h = ControllerHarness(controller_id=5)
    try:
        h.register_broker(1)
        h.create_topic("t", {0: [1]}, in_context=False)
        h.start()
        assert h.controller.is_active
        assert AUTO_REBALANCE_TASK in h.controller.scheduler.pending()
    finally:
        h.close()


def test_failover_does_not_schedule_when_disabled() -> None:
    h = ControllerHarness(controller_id=5, flags={"auto.leader.rebalance.enable": "false"})
    try:
        h.register_broker(1)
        h.start()
        assert h.controller.is_active
        assert AUTO_REBALANCE_TASK not in h.controller.scheduler.pending()
    finally:
        h.close()



def _led(leader: int, isr: tuple[int, ...]) -> LeaderIsrAndControllerEpoch:
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 0, isr), 1)


@pytest.mark.parametrize(
    ("assignment", "leader", "isr", "balanced"),
    [
        (ReplicaAssignment.of([1, 2, 3]), 1, (1, 2, 3), True),
        (ReplicaAssignment.of([1, 2, 3]), 2, (1, 2, 3), False),
        (ReplicaAssignment.of([1, 2, 3]), -1, (), False),
        # No replicas: balanced (Kafka would throw on replicas.head).
        (ReplicaAssignment.of([]), -1, (), True),
        # head(RS) is an adding replica: balanced while it is NOT in the ISR (pitfall 15),
        # whoever leads...
        (ReplicaAssignment.of([4, 1, 2], adding=[4], removing=[2]), 1, (1, 2), True),
        # ...and imbalanced once it is in the ISR, even while it leads (Kafka's literal rule:
        # the reassignment's completion moves it out of the adding replicas).
        (ReplicaAssignment.of([4, 1, 2], adding=[4], removing=[2]), 1, (1, 2, 4), False),
        (ReplicaAssignment.of([4, 1, 2], adding=[4], removing=[2]), 4, (1, 2, 4), False),
        # head(RS) not among the adding replicas: the plain rule.
        (ReplicaAssignment.of([1, 4, 2], adding=[4], removing=[2]), 4, (1, 2, 4), False),
    ],
)
def test_has_preferred_leader(
    assignment: ReplicaAssignment, leader: int, isr: tuple[int, ...], balanced: bool
) -> None:
    assert has_preferred_leader(assignment, _led(leader, isr)) is balanced
