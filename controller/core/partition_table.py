"""Per-partition storage behind ``ControllerContext``: compact entries, interning, O(1) counts.

The context may hold 100K-1M partitions, so everything per partition lives in one slotted
``PartitionEntry`` under ``topic -> partition id`` instead of one ``TopicPartition``-keyed dict
per concern. Low-cardinality values (replica assignments, ISR tuples, per-partition replica
state tuples) are interned, so the common case -- thousands of partitions with the same replica
list and all replicas Online -- shares one object. Kafka's independent maps are kept as
independent *fields*: each may be absent (None / empty) on its own, and an entry is dropped
once all of them are.

The table keeps the counts that follow from the stored fields alone (assignments, leaderships,
partitions and replicas per state). Counts that depend on Kafka's deletion bookkeeping (offline
partitions, preferred-replica imbalance) belong to ``ControllerContext``, which is why the
writers return what they replaced.

Not thread-safe: owned by the context, which is event-thread only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)

_T = TypeVar("_T")

# Past this many distinct interned values, stop adding: unique values (e.g. random assignments)
# would then cost more in the table than sharing saves.
INTERN_LIMIT = 1 << 16

ReplicaStates = tuple[tuple[int, ReplicaState], ...]


class PartitionEntry:
    """Everything the context knows about one partition; each field may be absent."""

    __slots__ = ("assignment", "leadership", "replica_states", "state")

    def __init__(self) -> None:
        self.assignment: ReplicaAssignment | None = None
        self.leadership: LeaderIsrAndControllerEpoch | None = None
        # NewPartition is 0, so a state is falsy: test for a missing state with ``is None``.
        self.state: PartitionState | None = None
        # (replica, state) pairs in insertion order; interned.
        self.replica_states: ReplicaStates = ()

    def is_empty(self) -> bool:
        return (
            self.assignment is None
            and self.leadership is None
            and self.state is None
            and not self.replica_states
        )


def _intern(table: dict[_T, _T], value: _T) -> _T:
    found = table.get(value)
    if found is not None:
        return found
    if len(table) < INTERN_LIMIT:
        table[value] = value
    return value


class PartitionTable:
    """``topic -> partition id -> PartitionEntry`` with interned values and per-field counts.

    A topic whose only entry is partition 0 maps to that entry directly rather than to a dict
    of one: single-partition topics are common (and the worst case of Kafka's own benchmarks),
    and a one-entry dict costs ~200 bytes per topic.
    """

    def __init__(self) -> None:
        self._topics: dict[str, PartitionEntry | dict[int, PartitionEntry]] = {}
        # One table per kind: an ISR tuple (1, 2) compares equal to the replica-state pair
        # (1, ReplicaState.OnlineReplica), so a shared table could hand back the wrong type.
        self._assignments: dict[ReplicaAssignment, ReplicaAssignment] = {}
        self._isrs: dict[tuple[int, ...], tuple[int, ...]] = {}
        self._leaderships: dict[tuple[Any, ...], LeaderIsrAndControllerEpoch] = {}
        self._replica_states: dict[Any, Any] = {}
        self._reset_counts()

    def _reset_counts(self) -> None:
        self.assignment_count = 0
        self.leadership_count = 0
        self.partition_state_counts = dict.fromkeys(PartitionState, 0)
        self.replica_state_counts = dict.fromkeys(ReplicaState, 0)

    def clear(self) -> None:
        self._topics.clear()
        self._assignments.clear()
        self._isrs.clear()
        self._leaderships.clear()
        self._replica_states.clear()
        self._reset_counts()

    # ------------------------------------------------------------------ entries

    def get(self, tp: TopicPartition) -> PartitionEntry | None:
        topic, partition = tp
        parts = self._topics.get(topic)
        if parts is None:
            return None
        if type(parts) is PartitionEntry:
            return parts if partition == 0 else None
        return parts.get(partition)  # type: ignore[union-attr]

    def _get_or_create(self, tp: TopicPartition) -> PartitionEntry:
        topic, partition = tp
        parts = self._topics.get(topic)
        if parts is None:
            entry = PartitionEntry()
            self._topics[topic] = entry if partition == 0 else {partition: entry}
            return entry
        if type(parts) is PartitionEntry:
            if partition == 0:
                return parts
            entry = PartitionEntry()
            self._topics[topic] = {0: parts, partition: entry}
            return entry
        entry = parts.get(partition)  # type: ignore[union-attr]
        if entry is None:
            entry = parts[partition] = PartitionEntry()  # type: ignore[index]
        return entry

    def _discard_if_empty(self, tp: TopicPartition, entry: PartitionEntry) -> None:
        if entry.is_empty():
            parts = self._topics[tp.topic]
            if type(parts) is PartitionEntry:
                del self._topics[tp.topic]
                return
            del parts[tp.partition]  # type: ignore[union-attr]
            if not parts:
                del self._topics[tp.topic]

    def _partitions(
        self, parts: PartitionEntry | dict[int, PartitionEntry]
    ) -> Iterable[tuple[int, PartitionEntry]]:
        if type(parts) is PartitionEntry:
            return ((0, parts),)
        return parts.items()  # type: ignore[union-attr]

    def entries(self, topic: str | None = None) -> Iterator[tuple[TopicPartition, PartitionEntry]]:
        """Every entry (or ``topic``'s), in insertion order. Do not write while iterating."""
        if topic is None:
            for t, parts in self._topics.items():
                for p, entry in self._partitions(parts):
                    yield TopicPartition(t, p), entry
        else:
            parts = self._topics.get(topic)
            if parts is not None:
                for p, entry in self._partitions(parts):
                    yield TopicPartition(topic, p), entry

    def assignments(
        self, topic: str | None = None
    ) -> Iterator[tuple[TopicPartition, ReplicaAssignment]]:
        """(tp, ReplicaAssignment) of every assigned partition (or ``topic``'s)."""
        return ((tp, e.assignment) for tp, e in self.entries(topic) if e.assignment is not None)

    def leaderships(self) -> Iterator[tuple[TopicPartition, LeaderIsrAndControllerEpoch]]:
        return ((tp, e.leadership) for tp, e in self.entries() if e.leadership is not None)

    def states(self) -> Iterator[tuple[TopicPartition, PartitionState]]:
        return ((tp, e.state) for tp, e in self.entries() if e.state is not None)

    # ------------------------------------------------------------------ assignment, leadership

    def set_assignment(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> tuple[PartitionEntry, ReplicaAssignment | None]:
        """Store (interned); returns the entry and the assignment it replaced."""
        assignment = _intern(
            self._assignments,
            ReplicaAssignment(
                tuple(assignment.replicas),
                tuple(assignment.adding_replicas),
                tuple(assignment.removing_replicas),
            ),
        )
        entry = self._get_or_create(tp)
        previous = entry.assignment
        if previous is None:
            self.assignment_count += 1
        entry.assignment = assignment
        return entry, previous

    def clear_assignment(self, tp: TopicPartition, entry: PartitionEntry) -> None:
        if entry.assignment is not None:
            entry.assignment = None
            self.assignment_count -= 1
            self._discard_if_empty(tp, entry)

    def set_leadership(
        self, tp: TopicPartition, info: LeaderIsrAndControllerEpoch
    ) -> tuple[PartitionEntry, LeaderIsrAndControllerEpoch | None]:
        """Store interned (the ISR, and the whole leadership: partitions with the same leader,
        epochs, ISR and zkVersion share one object, as after a failover or a cluster-wide
        election); returns the entry and the leadership it replaced."""
        lai = info.leader_and_isr
        isr = _intern(self._isrs, tuple(lai.isr))
        key = (
            lai.leader,
            lai.leader_epoch,
            isr,
            lai.leader_recovery_state,
            lai.partition_epoch,
            info.controller_epoch,
        )
        shared = self._leaderships.get(key)
        if shared is not None:
            info = shared
        else:
            if isr is not lai.isr:
                lai = LeaderAndIsr(
                    lai.leader,
                    lai.leader_epoch,
                    isr,
                    lai.leader_recovery_state,
                    lai.partition_epoch,
                )
                info = LeaderIsrAndControllerEpoch(lai, info.controller_epoch)
            if len(self._leaderships) < INTERN_LIMIT:
                self._leaderships[key] = info
        entry = self._get_or_create(tp)
        previous = entry.leadership
        if previous is None:
            self.leadership_count += 1
        entry.leadership = info
        return entry, previous

    def clear_leadership(self, tp: TopicPartition, entry: PartitionEntry) -> None:
        if entry.leadership is not None:
            entry.leadership = None
            self.leadership_count -= 1
            self._discard_if_empty(tp, entry)

    def clear_all_leadership(self) -> None:
        for tp, entry in list(self.entries()):
            entry.leadership = None
            self._discard_if_empty(tp, entry)
        self.leadership_count = 0

    # ------------------------------------------------------------------ partition states

    def set_state(self, tp: TopicPartition, state: PartitionState) -> PartitionState | None:
        """Record ``state``; returns the state it replaced (None if none was recorded)."""
        entry = self._get_or_create(tp)
        previous = entry.state
        if previous is not None:
            self.partition_state_counts[previous] -= 1
        self.partition_state_counts[state] += 1
        entry.state = state
        return previous

    def set_state_if_absent(self, tp: TopicPartition, state: PartitionState) -> bool:
        """Record ``state`` unless one is recorded; True if it was recorded now."""
        entry = self._get_or_create(tp)
        if entry.state is not None:
            return False
        entry.state = state
        self.partition_state_counts[state] += 1
        return True

    # ------------------------------------------------------------------ replica states

    def replica_state(self, tp: TopicPartition, replica: int) -> ReplicaState | None:
        entry = self.get(tp)
        if entry is not None:
            for r, s in entry.replica_states:
                if r == replica:
                    return s
        return None

    def set_replica_state(
        self, tp: TopicPartition, replica: int, state: ReplicaState, *, overwrite: bool
    ) -> None:
        entry = self._get_or_create(tp)
        pair = _intern(self._replica_states, (replica, state))
        states = entry.replica_states
        for i, (r, old) in enumerate(states):
            if r == replica:
                if not overwrite or old == state:
                    return
                self.replica_state_counts[old] -= 1
                self.replica_state_counts[state] += 1
                updated = (*states[:i], pair, *states[i + 1 :])
                entry.replica_states = _intern(self._replica_states, updated)
                return
        self.replica_state_counts[state] += 1
        entry.replica_states = _intern(self._replica_states, (*states, pair))

    def set_replica_states(
        self, tp: TopicPartition, states: tuple[tuple[int, ReplicaState], ...]
    ) -> None:
        """``set_replica_state(..., overwrite=True)`` of each pair; one interned tuple when the
        partition had no replica states yet (failover initialises every partition this way)."""
        entry = self._get_or_create(tp)
        if entry.replica_states or len({r for r, _ in states}) != len(states):
            for replica, state in states:
                self.set_replica_state(tp, replica, state, overwrite=True)
            return
        table = self._replica_states
        pairs = tuple(_intern(table, pair) for pair in states)
        counts = self.replica_state_counts
        for _, state in pairs:
            counts[state] += 1
        entry.replica_states = _intern(table, pairs)

    def remove_replica_state(self, tp: TopicPartition, replica: int) -> None:
        entry = self.get(tp)
        if entry is None:
            return
        kept = tuple(p for p in entry.replica_states if p[0] != replica)
        if len(kept) == len(entry.replica_states):
            return
        removed = next(s for r, s in entry.replica_states if r == replica)
        self.replica_state_counts[removed] -= 1
        entry.replica_states = _intern(self._replica_states, kept)
        self._discard_if_empty(tp, entry)

    def replica_states(self) -> Iterator[tuple[TopicPartition, int, ReplicaState]]:
        for tp, e in self.entries():
            for r, s in e.replica_states:
                yield tp, r, s
