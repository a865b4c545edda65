"""Per-partition storage behind ``ControllerContext``: compact entries, interning, O(1) counts.

The context may hold 100K-1M partitions, so everything per partition lives in one slotted
``PartitionEntry`` under ``topic -> partition id`` instead of one ``TopicPartition``-keyed dict
per concern. Low-cardinality values (replica assignments, ISR tuples, per-partition replica
state tuples) are interned, so the common case -- thousands of partitions with the same replica
list and all replicas Online -- shares one object. The intern tables count the entries holding
each value and drop it when none does: a long tenure changes leaderships (epochs, zkVersions)
millions of times, and tables that only grew filled up with stale values (~300 B each) and then
stopped sharing new ones. Kafka's independent maps are kept as
independent *fields*: each may be absent (None / empty) on its own, and an entry is dropped
once all of them are.

The table keeps the counts that follow from the stored fields alone (assignments, leaderships,
partitions and replicas per state). Counts that depend on Kafka's deletion bookkeeping (offline
partitions, preferred-replica imbalance) belong to ``ControllerContext``, which is why the
writers return what they replaced.

Not thread-safe: owned by the context, which is event-thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar, cast

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
    """Plain interning, never released: for tables bounded by the cluster's size (the
    (replica, state) pairs, at most seven per broker id)."""
    found = table.get(value)
    if found is not None:
        return found
    if len(table) < INTERN_LIMIT:
        table[value] = value
    return value


class _Shared:
    """An intern table that holds only values in use: ``hold`` one use of a value by an entry
    (its shared equal copy if there is one), ``release`` it when the entry lets go, and the
    value leaves the table with its last use.

    Uses are counted by object identity: a value in the table is alive, so its ``id`` is its
    own. A value held while the table was full (or equal to, but not, the shared copy) is not
    counted and its release does nothing. The table only decides sharing, so a miscount could
    only cost sharing, never change a value.
    """

    __slots__ = ("uses", "values")

    def __init__(self) -> None:
        self.values: dict[Any, Any] = {}
        self.uses: dict[int, int] = {}  # id(value) -> entries holding it

    def __len__(self) -> int:
        return len(self.values)

    def clear(self) -> None:
        self.values.clear()
        self.uses.clear()

    def hold(self, value: _T) -> _T:
        """One more use of ``value``; returns its shared copy (``value`` itself if it has none
        and the table is full)."""
        found = self.values.get(value)
        if found is None:
            if len(self.values) >= INTERN_LIMIT:
                return value
            self.values[value] = found = value
            self.uses[id(value)] = 0
        self.uses[id(found)] += 1
        return found

    def hold_same(self, value: Any) -> None:
        """One more use of this very object, if it is (or now becomes) the shared copy."""
        found = self.values.get(value)
        if found is value:
            self.uses[id(value)] += 1
        elif found is None and len(self.values) < INTERN_LIMIT:
            self.values[value] = value
            self.uses[id(value)] = 1

    def release(self, value: Any, key_of: Callable[[Any], Any] | None = None) -> None:
        """One use of ``value`` less; ``key_of``: its key when the table is not keyed by the
        value itself."""
        uses = self.uses
        n = uses.get(id(value))
        if n is None:
            return
        if n > 1:
            uses[id(value)] = n - 1
            return
        del uses[id(value)]
        del self.values[value if key_of is None else key_of(value)]


def _leadership_key(info: LeaderIsrAndControllerEpoch) -> tuple[Any, ...]:
    lai = info.leader_and_isr
    return (
        lai.leader,
        lai.leader_epoch,
        lai.isr,
        lai.leader_recovery_state,
        lai.partition_epoch,
        info.controller_epoch,
    )


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
        # Each entry holds one use of its assignment, leadership and replica-state tuple (an
        # empty tuple is not counted: it is a singleton anyway); each shared leadership one use
        # of its ISR.
        self._assignments = _Shared()
        self._isrs = _Shared()
        self._leaderships = _Shared()  # keyed by _leadership_key
        self._replica_states = _Shared()
        self._replica_state_pairs: dict[tuple[int, ReplicaState], tuple[int, ReplicaState]] = {}
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
        self._replica_state_pairs.clear()
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
        by_partition = cast("dict[int, PartitionEntry]", parts)
        found = by_partition.get(partition)
        if found is None:
            found = by_partition[partition] = PartitionEntry()
        return found

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
            topic_parts = self._topics.get(topic)
            if topic_parts is not None:
                for p, entry in self._partitions(topic_parts):
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
        assignment = self._assignments.hold(
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
        else:
            self._assignments.release(previous)
        entry.assignment = assignment
        return entry, previous

    def clear_assignment(self, tp: TopicPartition, entry: PartitionEntry) -> None:
        if entry.assignment is not None:
            self._assignments.release(entry.assignment)
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
        isr = tuple(lai.isr)
        isr = self._isrs.values.get(isr, isr)
        key = (
            lai.leader,
            lai.leader_epoch,
            isr,
            lai.leader_recovery_state,
            lai.partition_epoch,
            info.controller_epoch,
        )
        leaderships = self._leaderships
        uses = leaderships.uses
        shared = leaderships.values.get(key)
        if shared is not None:
            info = shared
            uses[id(shared)] += 1
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
            if len(leaderships.values) < INTERN_LIMIT:
                leaderships.values[key] = info
                uses[id(info)] = 1
                # An ISR is used by the shared leaderships that hold it.
                self._isrs.hold_same(isr)
        entry = self._get_or_create(tp)
        previous = entry.leadership
        if previous is None:
            self.leadership_count += 1
        else:  # _release_leadership, inlined: elections and ISR changes come through here
            i = id(previous)
            n = uses.get(i)
            if n is not None:
                if n > 1:
                    uses[i] = n - 1
                else:
                    del uses[i]
                    del leaderships.values[_leadership_key(previous)]
                    self._isrs.release(previous.leader_and_isr.isr)
        entry.leadership = info
        return entry, previous

    def _release_leadership(self, info: LeaderIsrAndControllerEpoch) -> None:
        leaderships = self._leaderships
        if leaderships.uses.get(id(info)) == 1:
            self._isrs.release(info.leader_and_isr.isr)
        leaderships.release(info, _leadership_key)

    def clear_leadership(self, tp: TopicPartition, entry: PartitionEntry) -> None:
        if entry.leadership is not None:
            self._release_leadership(entry.leadership)
            entry.leadership = None
            self.leadership_count -= 1
            self._discard_if_empty(tp, entry)

    def clear_all_leadership(self) -> None:
        for tp, entry in list(self.entries()):
            entry.leadership = None
            self._discard_if_empty(tp, entry)
        self.leadership_count = 0
        self._leaderships.clear()  # no entry holds one any more
        self._isrs.clear()

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
        pair = _intern(self._replica_state_pairs, (replica, state))
        states = entry.replica_states
        for i, (r, old) in enumerate(states):
            if r == replica:
                if not overwrite or old == state:
                    return
                self.replica_state_counts[old] -= 1
                self.replica_state_counts[state] += 1
                self._replace_replica_states(entry, (*states[:i], pair, *states[i + 1 :]))
                return
        self.replica_state_counts[state] += 1
        self._replace_replica_states(entry, (*states, pair))

    def _replace_replica_states(self, entry: PartitionEntry, states: ReplicaStates) -> None:
        shared = self._replica_states
        if entry.replica_states:
            shared.release(entry.replica_states)
        entry.replica_states = shared.hold(states) if states else ()

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
        table = self._replica_state_pairs
        pairs = tuple(_intern(table, pair) for pair in states)
        counts = self.replica_state_counts
        for _, state in pairs:
            counts[state] += 1
        self._replace_replica_states(entry, pairs)

    def remove_replica_state(self, tp: TopicPartition, replica: int) -> None:
        entry = self.get(tp)
        if entry is None:
            return
        kept = tuple(p for p in entry.replica_states if p[0] != replica)
        if len(kept) == len(entry.replica_states):
            return
        removed = next(s for r, s in entry.replica_states if r == replica)
        self.replica_state_counts[removed] -= 1
        self._replace_replica_states(entry, kept)
        self._discard_if_empty(tp, entry)

    def replica_states(self) -> Iterator[tuple[TopicPartition, int, ReplicaState]]:
        for tp, e in self.entries():
            for r, s in e.replica_states:
                yield tp, r, s
