"""Replication throttles around a reassignment, as kafka-reassign-partitions.sh sets and clears
them (``ReassignPartitionsCommand``, Kafka 3.6).

``execute --throttle RATE`` limits the replication a reassignment causes, in bytes per second:

- per topic, which replicas are throttled: ``leader.replication.throttled.replicas`` lists every
  source replica (``partition:broker``) of each moving partition, and
  ``follower.replication.throttled.replicas`` every destination replica that is not a source;
- per broker, for every broker a move involves, ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate``.

Reassignments already in progress are part of the calculation (their sources are the replicas
minus the adding ones), so a throttle set for a new plan still covers the moves under way.
``verify`` (once no reassignment is in progress anywhere) and ``cancel`` clear the throttles:
the broker-level ones on every registered broker and every broker of the plan, the topic-level
ones on the plan's topics; ``--preserve-throttles`` keeps them.

The brokers enforce throttles; the controller does not read them. The writes are ordinary
config overrides with their change notifications (``controller.admin.configs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from controller.admin import configs
from controller.core.model import ReplicaAssignment, TopicPartition
from controller.zk.port import ZkPort

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
BROKER_THROTTLES = (LEADER_RATE, FOLLOWER_RATE, LOG_DIR_RATE)
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
TOPIC_THROTTLES = (LEADER_REPLICAS, FOLLOWER_REPLICAS)

RUN_VERIFY_MESSAGE = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure "
    "the throttle is removed."
)


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """Where a partition's data comes from and goes to."""

    sources: frozenset[int]
    destinations: frozenset[int]


MoveMap = dict[str, dict[int, PartitionMove]]


def move_map(
    ongoing: Mapping[TopicPartition, ReplicaAssignment],
    plan: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
) -> MoveMap:
    """Kafka's ``calculateProposedMoveMap``: the moves in progress, then the plan's, whose
    sources are the in-progress move's sources if the partition is moving already, else its
    current replicas."""
    moves: MoveMap = {}
    for tp, ra in ongoing.items():
        adding = set(ra.adding_replicas)
        moves.setdefault(tp.topic, {})[tp.partition] = PartitionMove(
            frozenset(r for r in ra.replicas if r not in adding), frozenset(adding)
        )
    for tp, replicas in plan.items():
        topic_moves = moves.setdefault(tp.topic, {})
        under_way = topic_moves.get(tp.partition)
        sources = under_way.sources if under_way is not None else frozenset(current[tp])
        topic_moves[tp.partition] = PartitionMove(
            sources, frozenset(r for r in replicas if r not in sources)
        )
    return moves


def _replica_list(pairs: Iterable[tuple[int, int]]) -> str:
    # Kafka builds the value in a TreeSet[String]: sorted as text ("10:1" before "1:2").
    return ",".join(sorted({f"{p}:{b}" for p, b in pairs}))


def leader_throttles(moves: MoveMap) -> dict[str, str]:
    return {
        topic: _replica_list((p, b) for p, m in parts.items() for b in m.sources)
        for topic, parts in moves.items()
    }


def follower_throttles(moves: MoveMap) -> dict[str, str]:
    return {
        topic: _replica_list(
            (p, b) for p, m in parts.items() for b in m.destinations if b not in m.sources
        )
        for topic, parts in moves.items()
    }


def reassigning_brokers(moves: MoveMap) -> set[int]:
    return {
        b for parts in moves.values() for m in parts.values() for b in m.sources | m.destinations
    }


def set_throttles(port: ZkPort, moves: MoveMap, rate: int) -> None:
    """Write the topic-level replica lists, then the broker-level rates (Kafka's order)."""
    leaders, followers = leader_throttles(moves), follower_throttles(moves)
    for topic in sorted(moves):
        configs.alter_topic_config(
            port, topic, {LEADER_REPLICAS: leaders[topic], FOLLOWER_REPLICAS: followers[topic]}
        )
    for broker in sorted(reassigning_brokers(moves)):
        rates = {LEADER_RATE: str(rate), FOLLOWER_RATE: str(rate)}
        configs.alter_broker_config(port, broker, rates)


def clear_throttles(
    port: ZkPort, brokers: Iterable[int], topics: Iterable[str]
) -> tuple[list[int], list[str]]:
    """Kafka's ``clearAllThrottles``: remove the throttle configs wherever they are set.
    Returns the brokers and topics whose configs changed."""
    changed_brokers = [
        b for b in sorted(set(brokers)) if configs.remove_broker_configs(port, b, BROKER_THROTTLES)
    ]
    changed_topics = [
        t for t in sorted(set(topics)) if configs.remove_topic_configs(port, t, TOPIC_THROTTLES)
    ]
    return changed_brokers, changed_topics
