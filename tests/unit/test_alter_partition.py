"""The AlterPartition validation ladder (reference §2.10 steps 2 and 4), rule by rule, every
pair of rules for precedence, and properties over arbitrary inputs; then the handler on the
in-memory controller harness (faults a real ZooKeeper cannot be asked for)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.api.errors import Errors, error_for_exception
from controller.api.v1.controller_pb2 import (
    AlterPartitionPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopicData,
    BrokerState,
)
from controller.channel.sender import RequestKind
from controller.core.alter_partition import (
    Outcome,
    check_broker_epoch,
    validate_partition,
)
from controller.core.events import AlterPartitionReceived, NotControllerError
from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    TopicPartition,
)
from controller.zk import codecs, paths
from controller.zk.errors import ControllerMovedError
from tests.harness import ControllerHarness

RECOVERED = LeaderRecoveryState.RECOVERED
RECOVERING = LeaderRecoveryState.RECOVERING

# The cached state every case starts from: leader 1 at leader epoch 5, partition epoch 7.
CURRENT = LeaderAndIsr(1, 5, (1, 2, 3), RECOVERED, 7)
REPLICAS = (1, 2, 3, 4)
LIVE = {1, 2, 3, 4}


def proposal(
    isr: tuple[int, ...] = (1, 2),
    *,
    leader: int = 1,
    leader_epoch: int = 5,
    partition_epoch: int = 7,
    recovery: LeaderRecoveryState = RECOVERED,
) -> LeaderAndIsr:
    return LeaderAndIsr(leader, leader_epoch, isr, recovery, partition_epoch)


def verdict(
    proposed: LeaderAndIsr,
    current: LeaderAndIsr | None = CURRENT,
    *,
    replicas: tuple[int, ...] = REPLICAS,
    live: set[int] = LIVE,
    version: int = 3,
):
    return validate_partition(
        current, proposed, replicas=replicas, live_broker_ids=live, request_version=version
    )


# -- step 2: the broker epoch ------------------------------------------------------------


def test_broker_epoch_must_equal_the_cached_one():
    live = {1: 100, 2: 200}
    assert check_broker_epoch(1, 100, live) is Errors.NONE
    assert check_broker_epoch(1, 99, live) is Errors.STALE_BROKER_EPOCH
    # Unlike ControlledShutdown, a newer epoch is refused too (pitfall 19)...
    assert check_broker_epoch(1, 101, live) is Errors.STALE_BROKER_EPOCH
    # ...and -1 does not bypass the check.
    assert check_broker_epoch(1, -1, live) is Errors.STALE_BROKER_EPOCH


def test_unknown_broker_is_a_stale_broker_epoch():
    assert check_broker_epoch(3, 100, {1: 100}) is Errors.STALE_BROKER_EPOCH


# -- step 4, one rule at a time ----------------------------------------------------------


def test_rule_1_no_cached_leadership():
    v = verdict(proposal(), current=None)
    assert (v.outcome, v.error, v.state) == (
        Outcome.REJECT,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        None,
    )


@pytest.mark.parametrize(
    ("leader_epoch", "partition_epoch"), [(5, 8), (6, 7), (6, 8), (6, 0), (0, 8)]
)
def test_rule_2_request_ahead_of_the_cache_is_not_controller(leader_epoch, partition_epoch):
    v = verdict(proposal(leader_epoch=leader_epoch, partition_epoch=partition_epoch))
    assert (v.outcome, v.error) == (Outcome.REJECT, Errors.NOT_CONTROLLER)


def test_rule_3_older_leader_epoch_is_fenced():
    v = verdict(proposal(leader_epoch=4))
    assert (v.outcome, v.error) == (Outcome.REJECT, Errors.FENCED_LEADER_EPOCH)
    assert "4" in v.reason and "5" in v.reason


@pytest.mark.parametrize("partition_epoch", [7, 6, 0])
def test_rule_4_the_current_state_is_an_idempotent_success(partition_epoch):
    # A retry of a change that was applied (its answer lost): the partition epoch it carries
    # is older, but the state is what it asked for.
    v = verdict(proposal(CURRENT.isr, partition_epoch=partition_epoch))
    assert (v.outcome, v.error) == (Outcome.CURRENT, Errors.NONE)
    assert v.state == CURRENT  # the current state, with the current partition epoch


def test_rule_4_compares_the_isr_in_order():
    # Kafka compares ISR lists: a reordered ISR is a change (written, not "current").
    v = verdict(proposal((1, 3, 2)))
    assert v.outcome is Outcome.WRITE


def test_rule_4_compares_the_recovery_state():
    current = LeaderAndIsr(1, 5, (1,), RECOVERING, 7)
    v = verdict(proposal((1,), recovery=RECOVERED), current=current)
    assert v.outcome is Outcome.WRITE  # clearing RECOVERING is a change


def test_rule_5_older_partition_epoch_is_an_invalid_update_version():
    v = verdict(proposal((1, 2), partition_epoch=6))
    assert (v.outcome, v.error) == (Outcome.REJECT, Errors.INVALID_UPDATE_VERSION)


def test_rule_6_recovering_with_more_than_one_isr_member():
    current = LeaderAndIsr(1, 5, (1,), RECOVERING, 7)
    v = verdict(proposal((1, 2), recovery=RECOVERING), current=current)
    assert (v.outcome, v.error) == (Outcome.REJECT, Errors.INVALID_REQUEST)
    assert "RECOVERING" in v.reason


def test_rule_6_recovering_with_one_member_is_fine():
    current = LeaderAndIsr(1, 5, (1, 2), RECOVERING, 7)
    v = verdict(proposal((1,), recovery=RECOVERING), current=current)
    assert v.outcome is Outcome.WRITE


def test_rule_7_recovered_cannot_go_back_to_recovering():
    v = verdict(proposal((1,), recovery=RECOVERING))
    assert (v.outcome, v.error) == (Outcome.REJECT, Errors.INVALID_REQUEST)
    assert "RECOVERED" in v.reason


@pytest.mark.parametrize(
    ("proposed", "words"),
    [
        (proposal((2, 3), leader=2), "not the leader"),
        (proposal((1, 2, 2)), "more than once"),
        (proposal((2, 3)), "does not contain the leader"),
        (proposal(()), "does not contain the leader"),
        (proposal((1, 5)), "not replicas"),
    ],
)
def test_rule_8_malformed_proposals_are_invalid_requests(proposed, words):
    v = verdict(proposed)
    assert (v.outcome, v.error) == (Outcome.REJECT, Errors.INVALID_REQUEST)
    assert words in v.reason


def test_rule_9_ineligible_replica():
    v = verdict(proposal((1, 2, 4)), live={1, 2, 3})
    assert (v.outcome, v.error) == (Outcome.REJECT, Errors.INELIGIBLE_REPLICA)
    assert "[4]" in v.reason


def test_rule_9_before_version_2_it_is_operation_not_attempted():
    v = verdict(proposal((1, 2, 4)), live={1, 2, 3}, version=1)
    assert v.error is Errors.OPERATION_NOT_ATTEMPTED


def test_rule_9_applies_to_members_already_in_the_isr():
    # KIP-841 checks the whole proposed ISR, not only the additions: a shrink that keeps a
    # shutting-down broker is refused too.
    v = verdict(proposal((1, 3)), live={1, 2})
    assert v.error is Errors.INELIGIBLE_REPLICA


def test_rule_10_shrink_and_expand_are_written_as_proposed():
    shrink = verdict(proposal((1, 3)))
    assert (shrink.outcome, shrink.state) == (Outcome.WRITE, proposal((1, 3)))
    expand = verdict(proposal((1, 2, 3, 4)))
    assert (expand.outcome, expand.state) == (Outcome.WRITE, proposal((1, 2, 3, 4)))
    # The leader epoch is the request's (= the current one): AlterPartition never bumps it.
    assert expand.state is not None and expand.state.leader_epoch == CURRENT.leader_epoch


# -- precedence: whenever two rules match, the earlier one decides ------------------------

# Every pair of rules that one request can break together: the earlier rule decides. The
# reason names the rule, because rules 6, 7 and 8 share INVALID_REQUEST. Broker 3 is not
# live in these cases (rule 9 is about it).
NOT_LIVE_3 = {1, 2, 4}
P, R, E = proposal, RECOVERING, Errors
PAIRS = [
    # (rules, proposal, expected error, words in the reason)
    ((2, 3), P(partition_epoch=8, leader_epoch=4), E.NOT_CONTROLLER, "ahead"),
    ((2, 5), P(leader_epoch=6, partition_epoch=6), E.NOT_CONTROLLER, "ahead"),
    ((2, 6), P((1, 2), partition_epoch=8, recovery=R), E.NOT_CONTROLLER, "ahead"),
    ((2, 7), P((1,), partition_epoch=8, recovery=R), E.NOT_CONTROLLER, "ahead"),
    ((2, 8), P((1, 2, 2), partition_epoch=8), E.NOT_CONTROLLER, "ahead"),
    ((2, 9), P((1, 3), partition_epoch=8), E.NOT_CONTROLLER, "ahead"),
    ((3, 5), P(leader_epoch=4, partition_epoch=6), E.FENCED_LEADER_EPOCH, "older"),
    ((3, 6), P((1, 2), leader_epoch=4, recovery=R), E.FENCED_LEADER_EPOCH, "older"),
    ((3, 7), P((1,), leader_epoch=4, recovery=R), E.FENCED_LEADER_EPOCH, "older"),
    ((3, 8), P((1, 2, 2), leader_epoch=4), E.FENCED_LEADER_EPOCH, "older"),
    ((3, 9), P((1, 3), leader_epoch=4), E.FENCED_LEADER_EPOCH, "older"),
    ((5, 6), P((1, 2), partition_epoch=6, recovery=R), E.INVALID_UPDATE_VERSION, "partition epoch"),
    ((5, 7), P((1,), partition_epoch=6, recovery=R), E.INVALID_UPDATE_VERSION, "partition epoch"),
    ((5, 8), P((1, 2, 2), partition_epoch=6), E.INVALID_UPDATE_VERSION, "partition epoch"),
    ((5, 9), P((1, 3), partition_epoch=6), E.INVALID_UPDATE_VERSION, "partition epoch"),
    ((6, 7), P((1, 2), recovery=R), E.INVALID_REQUEST, "ISR of one"),
    ((6, 8), P((1, 2, 2), recovery=R), E.INVALID_REQUEST, "ISR of one"),
    ((6, 9), P((1, 3), recovery=R), E.INVALID_REQUEST, "ISR of one"),
    ((7, 8), P((2,), recovery=R), E.INVALID_REQUEST, "back to RECOVERING"),
    ((7, 9), P((3,), leader=3, recovery=R), E.INVALID_REQUEST, "back to RECOVERING"),
    ((8, 9), P((1, 3, 3)), E.INVALID_REQUEST, "more than once"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rules", "proposed", "error", "words"), PAIRS, ids=[f"{a}-{b}" for (a, b), *_ in PAIRS]
)
def test_the_earlier_rule_wins(rules, proposed, error, words):
    v = verdict(proposed, live=NOT_LIVE_3)
    assert (v.outcome, v.error) == (Outcome.REJECT, error)
    assert words in v.reason


def test_every_pair_of_refusing_rules_is_covered():
    refusing = (2, 3, 5, 6, 7, 8, 9)
    assert sorted(rules for rules, *_ in PAIRS) == list(itertools.combinations(refusing, 2))


def test_unknown_partition_beats_everything():
    v = verdict(proposal((9, 9), leader=9, leader_epoch=99, partition_epoch=99), current=None)
    assert v.error is Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_idempotent_retry_beats_the_later_rules():
    # The current state is RECOVERING with an ISR of one and broker 1 is no longer live:
    # rules 5 and 9 would refuse a retry of it, but a retry of the current state succeeds.
    current = LeaderAndIsr(1, 5, (1,), RECOVERING, 7)
    v = verdict(proposal((1,), recovery=RECOVERING, partition_epoch=3), current, live={2})
    assert (v.outcome, v.state) == (Outcome.CURRENT, current)


def test_idempotent_retry_does_not_beat_fencing():
    v = verdict(proposal(CURRENT.isr, leader_epoch=4))
    assert v.error is Errors.FENCED_LEADER_EPOCH


# -- properties --------------------------------------------------------------------------

brokers = st.integers(min_value=-1, max_value=5)
states = st.builds(
    LeaderAndIsr,
    leader=brokers,
    leader_epoch=st.integers(0, 4),
    isr=st.lists(brokers, max_size=4).map(tuple),
    leader_recovery_state=st.sampled_from(LeaderRecoveryState),
    partition_epoch=st.integers(0, 4),
)


@given(
    current=st.none() | states,
    proposed=states,
    replicas=st.lists(st.integers(0, 5), max_size=5, unique=True).map(tuple),
    live=st.sets(st.integers(0, 5)),
)
def test_verdicts_are_consistent(current, proposed, replicas, live):
    v = validate_partition(current, proposed, replicas=replicas, live_broker_ids=live)
    if v.outcome is Outcome.REJECT:
        assert v.error is not Errors.NONE and v.state is None and v.reason
        return
    assert v.error is Errors.NONE and current is not None
    # Success never moves the leader epoch or the leader, and never goes ahead of the cache.
    assert v.state is not None
    assert v.state.leader_epoch == current.leader_epoch
    assert v.state.leader == current.leader
    if v.outcome is Outcome.CURRENT:
        assert v.state == current
        assert proposed.equals_ignore_partition_epoch(current)
        assert proposed.partition_epoch <= current.partition_epoch
    else:
        # A write is exactly the proposal, at exactly the cached partition epoch (the
        # conditional write's expected version), with a well-formed, live ISR.
        assert v.state == proposed
        assert proposed.partition_epoch == current.partition_epoch
        assert not proposed.equals_ignore_partition_epoch(current)
        assert len(set(proposed.isr)) == len(proposed.isr)
        assert proposed.leader in proposed.isr
        assert set(proposed.isr) <= set(replicas) & set(live)
        if proposed.leader_recovery_state is RECOVERING:
            assert len(proposed.isr) == 1
            assert current.leader_recovery_state is RECOVERING


@given(current=states, proposed=states)
def test_epoch_rules_partition_the_space(current, proposed):
    """Rules 2, 3 and 5 are decided by the epochs alone, whatever else the request holds."""
    v = validate_partition(current, proposed, replicas=range(6), live_broker_ids=range(6))
    ahead = (
        proposed.partition_epoch > current.partition_epoch
        or proposed.leader_epoch > current.leader_epoch
    )
    if ahead:
        assert v.error is Errors.NOT_CONTROLLER
    elif proposed.leader_epoch < current.leader_epoch:
        assert v.error is Errors.FENCED_LEADER_EPOCH
    elif proposed.equals_ignore_partition_epoch(current):
        assert v.outcome is Outcome.CURRENT
    elif proposed.partition_epoch < current.partition_epoch:
        assert v.error is Errors.INVALID_UPDATE_VERSION
    else:
        assert v.error not in (
            Errors.NOT_CONTROLLER,
            Errors.FENCED_LEADER_EPOCH,
            Errors.INVALID_UPDATE_VERSION,
        )


# -- the handler, on the in-memory controller harness --------------------------------------
#
# The integration tests (tests/integration/test_isr_changes.py) run the ladder on a real
# ZooKeeper; these cover what only a fault-injecting port or a recording channel can reach.

T_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)


class RecordingReassignments:
    """Stands in for the reassignment handler: records calls and whether the broker had its
    answer by then (Kafka completes reassignments only after answering)."""

    def __init__(self, event: AlterPartitionReceived | None = None) -> None:
        self.calls: list[tuple[TopicPartition, bool]] = []
        self.event = event

    def maybe_complete_reassignments(self, partitions: Iterable[TopicPartition]) -> None:
        answered = self.event is not None and self.event.reply.done()
        self.calls.extend((tp, answered) for tp in partitions)


@pytest.fixture
def h() -> ControllerHarness:
    harness = ControllerHarness(controller_id=5)
    harness.become_controller(epoch=50)
    harness.set_live_brokers([1, 2, 3], epoch={1: 101, 2: 102, 3: 103}, shutting_down=[3])
    harness.create_topic("t", {0: [1, 2, 3], 1: [1, 2, 3]}, topic_id=T_ID)
    for tp in (T0, T1):
        harness.set_leadership(tp, leader=1, isr=[1, 2], leader_epoch=5)
    return harness


def request(*partitions: tuple[int, list[int]], epoch: int = 101) -> AlterPartitionRequest:
    """Broker 1's request for t's partitions: (index, new ISR) at leader epoch 5, pe 0."""
    return AlterPartitionRequest(
        broker_id=1,
        broker_epoch=epoch,
        topics=[
            AlterPartitionTopicData(
                topic_id=T_ID,
                partitions=[
                    AlterPartitionPartitionData(
                        partition_index=p,
                        leader_epoch=5,
                        partition_epoch=0,
                        new_isr_with_epochs=[
                            BrokerState(broker_id=b, broker_epoch=-1) for b in isr
                        ],
                    )
                    for p, isr in partitions
                ],
            )
        ],
    )


def run(h: ControllerHarness, req: AlterPartitionRequest) -> AlterPartitionReceived:
    event = AlterPartitionReceived(request=req)
    h.process(event)
    assert event.reply.done()
    return event


def codes(event: AlterPartitionReceived) -> dict[int, int]:
    response = event.reply.result()
    return {p.partition_index: p.error_code for t in response.topics for p in t.partitions}


def test_handler_writes_refreshes_and_tells_every_broker(h):
    event = run(h, request((0, [1]), (1, [1, 2, 3])))
    # t-1 proposes shutting-down broker 3: INELIGIBLE_REPLICA (pitfall 7).
    assert codes(event) == {0: Errors.NONE, 1: Errors.INELIGIBLE_REPLICA}
    assert h.zk_state(T0).leader_and_isr == LeaderAndIsr(1, 5, (1,), RECOVERED, 1)
    assert h.zk_state(T0).controller_epoch == 50
    assert h.ctx.partition_leader_and_isr(T0) == LeaderAndIsr(1, 5, (1,), RECOVERED, 1)
    assert h.zk_state(T1).leader_and_isr.partition_epoch == 0  # refused: not written
    # UpdateMetadata for every requested partition (the refused one too), to every live or
    # shutting-down broker; no LeaderAndIsr at all.
    assert h.channel.recipients() == {1, 2, 3}
    for b in (1, 2, 3):
        umr = h.channel.only(b, RequestKind.UPDATE_METADATA)
        assert set(umr.partitions()) == {T0, T1}
        info, _, _ = umr.update_metadata(T0)
        assert (info.leader_and_isr.isr, info.leader_and_isr.partition_epoch) == ((1,), 1)


def test_bad_version_on_the_write_is_invalid_update_version(h):
    # Another writer gets in between the controller's (cached) validation and its write.
    h.port.before(
        "multi_many",
        lambda: h.write_partition_state(
            T0, LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 5, (1, 3)), 50)
        ),
    )
    event = run(h, request((0, [1]), (1, [1])))
    assert codes(event) == {0: Errors.INVALID_UPDATE_VERSION, 1: Errors.NONE}
    assert h.zk_state(T0).leader_and_isr.isr == (1, 3)  # the other writer's state stands
    assert h.zk_state(T1).leader_and_isr.isr == (1,)
    # The cache is not refreshed for the failed partition (Kafka refreshes successes only).
    assert h.ctx.partition_leader_and_isr(T0).partition_epoch == 0


def test_state_znode_gone_is_unknown_topic_or_partition(h):
    h.admin.delete(paths.partition_state_path("t", 0))
    event = run(h, request((0, [1])))
    assert codes(event) == {0: Errors.UNKNOWN_TOPIC_OR_PARTITION}


def test_controller_moved_during_the_write_is_not_controller_and_resigns(h):
    # Controller 7 wins an election: a new epoch and its own /controller.
    h.elect_rival()
    h.admin.delete(paths.CONTROLLER)
    h.admin.create(paths.CONTROLLER, codecs.encode_controller(7, 0), ephemeral=True)
    event = run(h, request((0, [1])))
    # The servicer turns this exception into NOT_CONTROLLER (with the active controller).
    assert isinstance(event.reply.exception(), ControllerMovedError)
    assert error_for_exception(event.reply.exception()) is Errors.NOT_CONTROLLER
    assert not h.controller.is_active and h.controller.active_controller_id == 7
    assert h.zk_state(T0).leader_and_isr.partition_epoch == 0  # fenced: nothing written


def test_unexpected_failure_is_a_top_level_unknown_server_error_and_moves_the_controller(h):
    h.channel.fail_next_send(RuntimeError("channel broke"))
    event = run(h, request((0, [1])))
    response = event.reply.result()
    assert (response.error_code, list(response.topics)) == (Errors.UNKNOWN_SERVER_ERROR, [])
    # The write had happened; the failed UpdateMetadata is Kafka's handleIllegalState: the
    # batch is cleared and the controller resigns, so that a re-election resyncs the brokers.
    assert h.zk_state(T0).leader_and_isr.partition_epoch == 1
    assert h.controller.request_batch.is_empty
    assert not h.controller.is_active
    assert h.read(paths.CONTROLLER) is None
    # The broker's retry goes to whoever is elected next.
    retry = run(h, request((0, [1])))
    exc = retry.reply.exception()
    assert isinstance(exc, NotControllerError)


def test_not_active_fails_the_reply_with_not_controller(h):
    h.controller.active_controller_id = 7
    event = run(h, request((0, [1])))
    exc = event.reply.exception()
    assert isinstance(exc, NotControllerError) and exc.active_controller_id == 7
    assert h.channel.sent == []


def test_not_a_request_at_all_is_invalid_request(h):
    event = AlterPartitionReceived(request={"broker_id": 1})
    h.process(event)
    assert event.reply.result().error_code == Errors.INVALID_REQUEST


def test_reassignments_are_completed_after_answering_and_only_for_successes(h):
    h.set_assignment(T0, [1, 2, 3], adding=[3])
    h.set_assignment(T1, [1, 2, 3], adding=[3])
    recorder = RecordingReassignments()
    h.controller.reassignments = recorder
    event = AlterPartitionReceived(request=request((0, [1]), (1, [1, 2, 3])))
    recorder.event = event
    h.process(event)
    assert codes(event) == {0: Errors.NONE, 1: Errors.INELIGIBLE_REPLICA}
    assert recorder.calls == [(T0, True)]  # t-1 was refused; t-0 after the answer
    # An idempotent retry is a success too.
    recorder.calls.clear()
    retry = AlterPartitionReceived(request=request((0, [1])))
    recorder.event = retry
    h.process(retry)
    assert recorder.calls == [(T0, True)]
