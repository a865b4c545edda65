"""The partition table's intern tables hold only values some partition uses: a long tenure
changes leaderships, assignments and replica states without end, and tables that only grew
kept up to INTERN_LIMIT stale values (~20 MB of leaderships) and then stopped sharing."""

from __future__ import annotations

from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from controller.core.partition_table import INTERN_LIMIT, PartitionTable

TPS = [TopicPartition(f"topic-{i}", p) for i in range(5) for p in range(4)]  # 20 partitions
ON, OFF = ReplicaState.OnlineReplica, ReplicaState.OfflineReplica


def leadership(leader: int, epoch: int, isr: tuple[int, ...]) -> LeaderIsrAndControllerEpoch:
    # A new tuple each time: sharing must come from the table, not from the caller.
    return LeaderIsrAndControllerEpoch(
        LeaderAndIsr(leader, epoch, tuple(list(isr)), partition_epoch=epoch), 5
    )


def test_leadership_changes_keep_only_live_leaderships_and_isrs() -> None:
    t = PartitionTable()
    changes = INTERN_LIMIT + 5_000  # past the old limit: it filled up and stopped sharing
    for n in range(changes // len(TPS) + 1):
        for i, tp in enumerate(TPS):
            isr = (1, 2, 3) if (n + i) % 2 else (1, 2)
            t.set_leadership(tp, leadership(1 + i % 3, n * 100 + i, isr))
    assert len(t._leaderships) == len(TPS)
    assert len(t._isrs) == 2
    # Equal leaderships (and ISRs) are still one object.
    t.set_leadership(TPS[0], leadership(2, 10**6, (1, 2, 3)))
    t.set_leadership(TPS[1], leadership(2, 10**6, (1, 2, 3)))
    first, second = t.get(TPS[0]), t.get(TPS[1])
    assert first is not None and second is not None
    assert first.leadership is second.leadership
    t.set_leadership(TPS[2], leadership(3, 10**6 + 1, (1, 2, 3)))
    third = t.get(TPS[2])
    assert third is not None and third.leadership is not None and first.leadership is not None
    assert third.leadership.leader_and_isr.isr is first.leadership.leader_and_isr.isr
    assert len(t._leaderships) == len(TPS) - 1  # TPS[0] and TPS[1] share one


def test_a_leadership_shared_by_many_partitions_stays_until_the_last_lets_go() -> None:
    t = PartitionTable()
    for tp in TPS:  # as after a failover: one leadership for all
        t.set_leadership(tp, leadership(1, 0, (1, 2, 3)))
    assert len(t._leaderships) == 1
    for tp in TPS[:-1]:
        t.set_leadership(tp, leadership(2, 1, (2, 3)))
    assert len(t._leaderships) == 2  # the last partition still has the old one
    last = t.get(TPS[-1])
    assert last is not None
    t.clear_leadership(TPS[-1], last)
    assert len(t._leaderships) == 1 and len(t._isrs) == 1
    for tp in TPS[:-1]:
        entry = t.get(tp)
        assert entry is not None
        t.clear_leadership(tp, entry)
    assert len(t._leaderships) == 0 and len(t._isrs) == 0


def test_assignment_changes_keep_only_live_assignments() -> None:
    t = PartitionTable()
    for n in range(2_000):
        for i, tp in enumerate(TPS):
            t.set_assignment(tp, ReplicaAssignment((n % 7, n % 7 + 1 + i % 2, 100 + n)))
    assert len(t._assignments) == 2  # two distinct assignments are live
    t.set_assignment(TPS[0], ReplicaAssignment((4, 5, 6)))
    t.set_assignment(TPS[1], ReplicaAssignment((4, 5, 6)))
    a, b = t.get(TPS[0]), t.get(TPS[1])
    assert a is not None and b is not None and a.assignment is b.assignment
    for tp in TPS:
        entry = t.get(tp)
        assert entry is not None
        t.clear_assignment(tp, entry)
    assert len(t._assignments) == 0


def test_replica_state_changes_keep_only_live_state_tuples() -> None:
    t = PartitionTable()
    for tp in TPS:
        t.set_replica_states(tp, ((1, ON), (2, ON), (3, ON)))
    assert len(t._replica_states) == 1
    for n in range(1_000):  # brokers restarting: states flip, replicas come and go
        for i, tp in enumerate(TPS):
            t.set_replica_state(tp, 1 + (n + i) % 3, OFF if n % 2 else ON, overwrite=True)
            t.set_replica_state(tp, 10 + n, ON, overwrite=False)
            t.remove_replica_state(tp, 10 + n)
    live = {e.replica_states for _, e in t.entries()}
    assert len(t._replica_states) == len(live) <= len(TPS)
    for tp in TPS[:2]:
        t.set_replica_states(tp, ())
        for r in (1, 2, 3):
            t.remove_replica_state(tp, r)
        t.set_replica_states(tp, ((7, ON), (8, OFF)))
    a, b = t.get(TPS[0]), t.get(TPS[1])
    assert a is not None and b is not None and a.replica_states is b.replica_states
