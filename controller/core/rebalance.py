"""Kafka's automatic leader rebalance math (``checkAndTriggerAutoLeaderRebalance``, §2.8).

Pure functions over plain data, so the arithmetic can be tested on its own:

1. partitions of topics not queued for deletion are grouped by their preferred replica
   ``P = head(RS)``;
2. per group, ``not_preferred`` are the partitions that *have* leadership info and are led by
   someone other than ``P``. Partitions without leadership info are not counted there but do
   count in the denominator (pitfall 14);
3. a group is rebalanced when ``|not_preferred| / |group| > percentage / 100`` -- a strict
   ``>``, so with the default 10 %, 1 of 10 does nothing and 2 of 10 trigger;
4. the candidates of a rebalanced group are its ``not_preferred`` partitions whose preferred
   replica could lead now (online and in the ISR), whose topic still exists and is not queued
   for deletion.

Kafka compares doubles (``size.toDouble / size > pct.toDouble / 100``). Here the comparison is
done in integers (``not_preferred * 100 > pct * total``): the same answer for every input,
without relying on both quotients rounding to the same double when they are equal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from controller.core.model import LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition


@dataclass(frozen=True, slots=True)
class PartitionLeadership:
    """What the math needs to know about one partition.

    ``leader`` is the cached leader, or None when the controller has no leadership info for
    the partition (a partition whose state znode could not be created or read).
    """

    tp: TopicPartition
    replicas: Sequence[int]
    leader: int | None


@dataclass(frozen=True, slots=True)
class BrokerImbalance:
    """The partitions that prefer one broker, and those of them led elsewhere."""

    broker: int
    total: int
    not_preferred: tuple[TopicPartition, ...] = field(default=())

    @property
    def ratio(self) -> float:
        """Kafka's ``imbalanceRatio`` (for logs and metrics; decisions use ``exceeds``)."""
        return len(self.not_preferred) / self.total if self.total else 0.0

    def exceeds(self, percentage: int) -> bool:
        return imbalance_exceeds(len(self.not_preferred), self.total, percentage)


def imbalance_exceeds(not_preferred: int, total: int, percentage: int) -> bool:
    """``not_preferred / total > percentage / 100``, exactly (strict)."""
    return total > 0 and not_preferred * 100 > percentage * total


def imbalance_by_preferred_broker(
    partitions: Iterable[PartitionLeadership],
) -> dict[int, BrokerImbalance]:
    """Group partitions by preferred replica and count those not led by it.

    The caller passes only partitions whose topic is not queued for deletion. Partitions with
    an empty replica list have no preferred replica and are skipped (Kafka would fail on
    ``replicas.head``).
    """
    totals: dict[int, int] = {}
    misplaced: dict[int, list[TopicPartition]] = {}
    for p in partitions:
        if not p.replicas:
            continue
        preferred = p.replicas[0]
        totals[preferred] = totals.get(preferred, 0) + 1
        if p.leader is not None and p.leader != preferred:
            misplaced.setdefault(preferred, []).append(p.tp)
    return {
        broker: BrokerImbalance(broker, total, tuple(sorted(misplaced.get(broker, ()))))
        for broker, total in sorted(totals.items())
    }


def rebalance_candidates(
    imbalance: BrokerImbalance,
    percentage: int,
    eligible: Callable[[TopicPartition], bool],
) -> list[TopicPartition]:
    """The partitions to elect for one preferred broker: none unless its ratio exceeds the
    threshold, otherwise its misplaced partitions that pass ``eligible`` (topic exists, not
    queued for deletion, preferred replica online and in the ISR)."""
    if not imbalance.exceeds(percentage):
        return []
    return [tp for tp in imbalance.not_preferred if eligible(tp)]


def has_preferred_leader(assignment: ReplicaAssignment, info: LeaderIsrAndControllerEpoch) -> bool:
    """Kafka's ``hasPreferredLeader``, including the reassignment quirk (pitfall 15).

    When head(RS) is an *adding* replica, the partition counts as balanced while that replica is
    NOT in the ISR. An empty RS counts as balanced (Kafka would throw on ``replicas.head``).
    """
    if not assignment.replicas:
        return True
    preferred = assignment.replicas[0]
    if assignment.is_being_reassigned and preferred in assignment.adding_replicas:
        return preferred not in info.leader_and_isr.isr
    return info.leader_and_isr.leader == preferred
