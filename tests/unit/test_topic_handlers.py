"""TopicChange and PartitionModifications on the in-memory harness: topic ids are recorded or
assigned for every topic, without losing what an admin writes meanwhile."""

from __future__ import annotations

import pytest

from controller.admin import topics as admin_topics
from controller.core.model import ReplicaAssignment, TopicAssignment, TopicPartition
from controller.zk import codecs, paths
from tests.harness import ControllerHarness, touches

X = "AAAAAAAAAAAAAAAAAAAAAQ"


@pytest.mark.parametrize("at_failover", [False, True])
def test_a_partition_added_while_the_controller_writes_a_topic_id_survives(
    at_failover: bool,
) -> None:
    # A topic without an id (older tooling); an admin adds a partition between the
    # controller's read of the topic znode and its topic-id write (Kafka's is blind: the
    # partition was lost although the admin's write had succeeded).
    h = ControllerHarness(controller_id=5)
    for b in (1, 2, 3):
        h.register_broker(b)
    if not at_failover:
        h.start()
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    added: list[tuple[int, ...]] = []
    h.port.before(
        "multi_many",
        lambda: added.append(admin_topics.add_partitions(h.admin, "t", 2, {1: [3, 1]}).added),
        when=touches(paths.topic_path("t")),
    )
    if at_failover:
        h.start()
    h.drain()
    assert added == [(1,)]
    znode = codecs.decode_topic_assignment("t", h.read(paths.topic_path("t")) or b"")
    assert sorted(znode.partitions) == [0, 1]
    assert znode.topic_id is not None and h.ctx.topic_ids["t"] == znode.topic_id
    assert h.ctx.partition_replica_assignment(TopicPartition("t", 1)) == (3, 1)
    assert h.zk_state(TopicPartition("t", 1)) is not None


def test_a_topic_empty_at_creation_gets_an_id_with_its_first_partitions() -> None:
    h = ControllerHarness(controller_id=5)
    h.register_broker(1)
    h.start()
    h.admin.create(paths.topic_path("t"), codecs.encode_topic_assignment(
        TopicAssignment("t", None, {})), makepath=True)  # fmt: skip
    h.drain()
    assert "t" not in h.ctx.topic_ids
    h.admin.set(paths.topic_path("t"), codecs.encode_topic_assignment(
        TopicAssignment("t", None, {0: ReplicaAssignment.of([1])})))  # fmt: skip
    h.drain()
    znode = codecs.decode_topic_assignment("t", h.read(paths.topic_path("t")) or b"")
    assert znode.topic_id is not None and h.ctx.topic_ids["t"] == znode.topic_id
    assert h.zk_state(TopicPartition("t", 0)) is not None


def test_a_topic_unreadable_at_failover_keeps_its_id_once_repaired() -> None:
    # Its partitions are taken over once the znode is repaired; so must its id be, or the
    # brokers' AlterPartition requests (by id) are refused UNKNOWN_TOPIC_ID.
    h = ControllerHarness(controller_id=5)
    h.register_broker(1)
    h.register_broker(2)
    h.start()
    h.create_topic("t", {0: [1, 2]}, topic_id=X, in_context=False)
    h.drain()
    good = h.read(paths.topic_path("t"))
    assert good is not None and h.ctx.topic_ids["t"] == X
    h.admin.set(paths.topic_path("t"), b"{oops")
    h.zk.expire(h.port.inner, reconnect=True)  # a new session: election and failover
    h.drain()
    assert "t" not in h.ctx.topic_ids
    h.admin.set(paths.topic_path("t"), good)
    h.drain()
    assert h.ctx.topic_ids["t"] == X
