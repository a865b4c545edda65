"""Populating ZooKeeper for a benchmark: Kafka's topic and partition-state znodes, fast.

The layout is deterministic: topic ``i`` (``{prefix}{i:07d}``) has ``partitions`` partitions,
partition ``p`` is on ``replication_factor`` consecutive brokers starting at broker
``(i + p) % brokers``, so every broker is the preferred leader of the same share of
partitions. Topics get a Kafka topic id, as Kafka's own tools write them (a topic without one
would make the controller rewrite every topic znode at failover).

Writes go out as ``create`` ops in multis of up to ``OPS_PER_MULTI`` ops, pipelined by the
port: ~100K znodes/s on a small machine, where one create at a time would take minutes.
Parents always precede children, and one session's requests are applied in order, so a multi
never refers to a parent that a later multi creates.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from controller.zk import codecs, paths
from controller.zk.port import Create, Op, ZkPort

OPS_PER_MULTI = 1000
# A multi's request must stay under jute.maxbuffer (1 MiB); topic znodes are ~100 bytes here.
BYTES_PER_MULTI = 512 * 1024


@dataclass(frozen=True, slots=True)
class Layout:
    """Which topics exist and where their replicas are."""

    topics: int
    partitions: int = 1
    replication_factor: int = 3
    brokers: int = 5
    prefix: str = "bench-"
    first: int = 0  # index of the first topic (create_topics adds topics after existing ones)

    def __post_init__(self) -> None:
        if not 1 <= self.replication_factor <= self.brokers:
            raise ValueError("replication factor must be between 1 and the number of brokers")

    def topic(self, index: int) -> str:
        return f"{self.prefix}{index:07d}"

    def topic_names(self) -> list[str]:
        return [self.topic(i) for i in range(self.first, self.first + self.topics)]

    def replicas(self, index: int, partition: int) -> tuple[int, ...]:
        start = (index + partition) % self.brokers
        return tuple((start + k) % self.brokers for k in range(self.replication_factor))

    def assignment(self, index: int) -> TopicAssignment:
        return TopicAssignment(
            self.topic(index),
            topic_id(index, self.prefix),
            {p: ReplicaAssignment(self.replicas(index, p)) for p in range(self.partitions)},
        )

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        """Partitions whose preferred (first) replica is ``broker_id``."""
        return [
            TopicPartition(self.topic(i), p)
            for i in range(self.first, self.first + self.topics)
            for p in range(self.partitions)
            if self.replicas(i, p)[0] == broker_id
        ]

    @property
    def partition_count(self) -> int:
        return self.topics * self.partitions


def topic_id(index: int, prefix: str = "") -> str:
    """A deterministic Kafka Uuid (22 chars of URL-safe base64) per topic, never starting with
    '-' (Kafka never hands those out)."""
    raw = f"{prefix}{index}".encode().ljust(16, b".")[-16:]
    text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
    return text if not text.startswith("-") else "A" + text[1:]


def topic_ops(layout: Layout, *, with_states: bool, controller_epoch: int) -> Iterator[Op]:
    """Create ops for every topic znode and, with ``with_states``, its partition tree with a
    state znode led by the preferred replica, all replicas in the ISR."""
    for index in range(layout.first, layout.first + layout.topics):
        assignment = layout.assignment(index)
        topic = assignment.topic
        yield Create(paths.topic_path(topic), codecs.encode_topic_assignment(assignment))
        if not with_states:
            continue
        yield Create(paths.topic_partitions_path(topic))
        for p, ra in assignment.partitions.items():
            state = LeaderIsrAndControllerEpoch(
                LeaderAndIsr(ra.replicas[0], 0, ra.replicas), controller_epoch
            )
            yield Create(paths.partition_path(topic, p))
            yield Create(paths.partition_state_path(topic, p), codecs.encode_partition_state(state))


def batches(ops: Iterator[Op], ops_per_multi: int = OPS_PER_MULTI) -> Iterator[list[Op]]:
    batch: list[Op] = []
    size = 0
    for op in ops:
        op_bytes = len(op.path) + len(getattr(op, "data", None) or b"") + 32
        if batch and (len(batch) >= ops_per_multi or size + op_bytes > BYTES_PER_MULTI):
            yield batch
            batch, size = [], 0
        batch.append(op)
        size += op_bytes
    if batch:
        yield batch


def write_all(port: ZkPort, ops: Iterator[Op], *, group: int = 64) -> int:
    """Run every op in multis, ``group`` multis pipelined per call; returns the op count.

    Raises the first error: a benchmark populates an empty chroot, so any error is a bug.
    """
    written = 0
    pending: list[Sequence[Op]] = []

    def flush() -> None:
        nonlocal written
        for ops_, results in zip(pending, port.multi_many(pending), strict=True):
            failed = next((r.error for r in results if r.error is not None), None)
            if failed is not None:
                raise failed
            written += len(ops_)
        pending.clear()

    for batch in batches(ops):
        pending.append(batch)
        if len(pending) >= group:
            flush()
    if pending:
        flush()
    return written


def populate(
    port: ZkPort, layout: Layout, *, with_states: bool = True, controller_epoch: int = 1
) -> int:
    """Write the layout's topics (and partition states); returns the number of znodes."""
    for path in paths.PERSISTENT_PATHS:
        port.ensure_path(path)
    return write_all(
        port, topic_ops(layout, with_states=with_states, controller_epoch=controller_epoch)
    )
