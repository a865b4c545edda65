"""TopicChange and PartitionModifications on the in-memory harness: topic ids are recorded or
assigned for every topic, without losing what an admin writes meanwhile."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from controller.admin import topics as admin_topics
from controller.channel.sender import RequestKind
from controller.core.model import ReplicaAssignment, TopicAssignment, TopicPartition
from controller.zk import codecs, paths
from controller.zk.errors import NoAuthError
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


def test_a_repaired_topic_found_leaderless_is_recorded_offline() -> None:
    # As a failover records what it finds leaderless: the analytics read outages from the
    # state-change log, and this one was missing until the partition came back.
    h = ControllerHarness(controller_id=5)
    h.register_broker(1)
    h.register_broker(2)
    h.start()
    h.create_topic("u", {0: [1]}, in_context=False)
    h.drain()
    good = h.read(paths.topic_path("u"))
    assert good is not None
    h.admin.set(paths.topic_path("u"), b"{oops")
    h.zk.expire(h.port.inner, reconnect=True)  # a new session: election and failover
    h.drain()
    h.kill_broker(1)  # u-0's only replica, while u is unknown to the controller
    h.drain()
    h.admin.set(paths.topic_path("u"), good)
    h.drain()
    found = h.state_changes("partition", topic="u", to_state="OfflinePartition")
    assert [(r["from_state"], r["result"]) for r in found] == [("NonExistentPartition", "ok")]


@pytest.mark.parametrize("how", ["new topic", "new partition"])
def test_a_partition_created_with_adding_replicas_is_not_being_reassigned(how: str) -> None:
    # Only failover counts adding/removing replicas read from a topic znode as a reassignment
    # (and resumes it), as Kafka does. Counted here, nothing drove the "reassignment", and a
    # deletion of the topic waited for it to end (until a replica's broker restarted).
    h = ControllerHarness(controller_id=5)
    for b in (1, 2, 3, 4):
        h.register_broker(b)
    h.start()
    moving = ReplicaAssignment((3, 1, 2), (3,), (2,))
    partitions = {0: moving} if how == "new topic" else {0: ReplicaAssignment.of([1, 2])}
    h.admin.create(paths.topic_path("t"), codecs.encode_topic_assignment(
        TopicAssignment("t", None, partitions)), makepath=True)  # fmt: skip
    h.drain()
    if how == "new partition":
        znode = codecs.decode_topic_assignment("t", h.read(paths.topic_path("t")) or b"")
        h.admin.set(paths.topic_path("t"), codecs.encode_topic_assignment(
            TopicAssignment("t", znode.topic_id, {**znode.partitions, 1: moving})))  # fmt: skip
        h.drain()
    tp = TopicPartition("t", 0 if how == "new topic" else 1)
    assert h.ctx.partition_full_replica_assignment(tp) == moving  # kept as read
    assert h.zk_state(tp) is not None
    assert h.ctx.partitions_being_reassigned == set()
    h.admin.create(paths.delete_topic_path("t"), b"", makepath=True)
    h.drain()
    assert "t" in h.ctx.topics_with_deletion_started
    assert h.channel.requests(3, RequestKind.STOP_REPLICA)


@pytest.mark.parametrize("at_failover", [False, True])
def test_a_topic_znode_copying_another_topics_id_is_served_without_it(at_failover: bool) -> None:
    # A znode copied by hand with another topic's id. Kafka's addTopicId throws: the whole
    # TopicChange (every new topic in it) or the failover fails. Here the first topic keeps
    # the id, the copy is logged and served without one, and nothing else is held up.
    h = ControllerHarness(controller_id=5)
    for b in (1, 2):
        h.register_broker(b)
    if not at_failover:
        h.start()
    for topic in ("a", "b", "c"):
        h.create_topic(topic, {0: [1, 2]}, topic_id=None if topic == "c" else X, in_context=False)
    with capture_logs() as logs:
        if at_failover:
            h.start()
        h.drain()
    [conflict] = [e for e in logs if e["event"] == "conflicting topic id"]
    assert conflict["topic"] == "b" and X in conflict["error"] and "a" in conflict["error"]
    assert h.ctx.topic_ids["a"] == X and "b" not in h.ctx.topic_ids
    assert h.ctx.topic_ids["c"] not in (None, X)  # a topic without an id still gets one
    for topic in ("a", "b", "c"):
        info = h.zk_state(TopicPartition(topic, 0))
        assert info is not None and info.leader_and_isr.leader == 1
    [sent] = [r for r in h.channel.requests(1, RequestKind.LEADER_AND_ISR)
              if "b" in r.topic_ids()]  # fmt: skip
    assert sent.topic_ids()["b"] == "" and sent.topic_ids()["a"] == X


# -- a topic znode removed by hand ("force delete"), then a topic of the same name ----------


def _three_brokers_and_topic_t() -> ControllerHarness:
    h = ControllerHarness(controller_id=5)
    for broker in (1, 2, 3):
        h.register_broker(broker)
    h.start()
    h.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]}, in_context=False)
    h.drain()
    return h


def _topic_t_queued_for_deletion() -> ControllerHarness:
    """Topic t queued for deletion, which waits for broker 3 (dead)."""
    h = _three_brokers_and_topic_t()
    h.kill_broker(3)
    h.drain()
    h.admin.create(paths.delete_topic_path("t"), makepath=True)
    h.drain()
    return h


def _remove_by_hand(h: ControllerHarness, *znodes: str) -> None:
    for path in znodes:
        for child in h.admin.get_children(path):
            _remove_by_hand(h, f"{path}/{child}")
        h.admin.delete(path)


def test_a_topic_recreated_after_its_znode_was_removed_by_hand_comes_online() -> None:
    # Kafka keeps a vanished topic's partition and replica states: the new topic's
    # NewPartition/NewReplica steps were then invalid and it got no leader and no request.
    h = _three_brokers_and_topic_t()
    _remove_by_hand(h, paths.topic_path("t"))
    h.drain()
    h.channel.clear()
    h.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]}, in_context=False)
    h.drain()
    for partition in (0, 1):
        state = h.zk_state(TopicPartition("t", partition))
        assert state is not None and state.leader_and_isr.leader != -1
    assert {r.broker_id for r in h.channel.requests(kind=RequestKind.LEADER_AND_ISR)} == {1, 2, 3}


def test_an_offline_topic_removed_by_hand_leaves_the_offline_count() -> None:
    h = _three_brokers_and_topic_t()
    h.create_topic("u", {0: [3]}, in_context=False)
    h.drain()
    h.kill_broker(3)
    h.drain()
    assert h.ctx.offline_partition_count == 1
    _remove_by_hand(h, paths.topic_path("u"))
    h.drain()
    assert h.ctx.offline_partition_count == 0


def test_a_stuck_deletion_unstuck_by_hand_leaves_nothing_for_the_next_one() -> None:
    # Brokers 1 and 2 had answered the first deletion: their replicas stayed
    # ReplicaDeletionSuccessful, and deleting the re-created topic skipped them.
    h = _topic_t_queued_for_deletion()
    for request in h.channel.requests(kind=RequestKind.STOP_REPLICA):
        request.respond()
    h.drain()
    _remove_by_hand(h, paths.topic_path("t"), paths.delete_topic_path("t"))
    h.drain()
    h.register_broker(3)
    h.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]}, in_context=False)
    h.drain()
    h.channel.clear()
    h.admin.create(paths.delete_topic_path("t"), makepath=True)
    h.drain()
    deleting = {
        request.broker_id
        for request in h.channel.requests(kind=RequestKind.STOP_REPLICA)
        if any(request.stop_replica(tp)[1] for tp in request.partitions())
    }
    assert deleting == {1, 2, 3}


def test_a_moving_topic_removed_by_hand_leaves_no_reassignment_behind() -> None:
    # As a completed deletion: its entries leave /admin/reassign_partitions (a topic created
    # again under the name would otherwise be moved unasked at the next failover).
    h = _three_brokers_and_topic_t()
    h.admin.create(
        paths.REASSIGN_PARTITIONS,
        codecs.encode_reassignment({TopicPartition("t", 0): (1, 2, 4)}),  # 4: not yet up
        makepath=True,
    )
    h.drain()
    assert TopicPartition("t", 0) in h.ctx.partitions_being_reassigned
    _remove_by_hand(h, paths.topic_path("t"))
    h.drain()
    assert h.read(paths.REASSIGN_PARTITIONS) is None
    assert h.ctx.partitions_being_reassigned == set()


def test_a_queued_topic_removed_by_hand_takes_its_deletion_request_with_it() -> None:
    # The request left behind would delete a topic created again under the name.
    h = _topic_t_queued_for_deletion()
    _remove_by_hand(h, paths.topic_path("t"))
    h.drain()
    assert h.read(paths.delete_topic_path("t")) is None
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    h.drain()
    assert h.read(paths.topic_path("t")) is not None
    assert not h.ctx.is_topic_queued_up_for_deletion("t")


def test_a_refused_clean_up_of_a_vanished_topic_does_not_lose_the_new_topics() -> None:
    # The clean-up's deletion of /admin/delete_topics/t was strict: refused (an ACL), it
    # stopped the TopicChange after all_topics took the new topic, which was then never
    # created (no state, no leader) until the next failover.
    h = _topic_t_queued_for_deletion()
    assert h.ctx.is_topic_queued_up_for_deletion("t")
    refused = NoAuthError("no DELETE permission", paths.delete_topic_path("t"))
    h.port.fail("multi_many", refused, when=touches(paths.delete_topic_path("t")))
    _remove_by_hand(h, paths.topic_path("t"))
    h.create_topic("u", {0: [1, 2]}, in_context=False)
    with capture_logs() as logs:
        h.drain()
    state = h.zk_state(TopicPartition("u", 0))
    assert state is not None and state.leader_and_isr.leader == 1
    assert "t" not in h.ctx.all_topics and not h.ctx.partitions_for_topic("t")
    [error] = [e for e in logs if e["event"].startswith("could not clean up after a topic")]
    assert error["path"] == paths.delete_topic_path("t") and error["log_level"] == "error"


def test_partitions_added_to_a_topic_being_deleted_are_undone_with_the_controllers_id() -> None:
    # Kafka's restorePartitionReplicaAssignment writes the controller's topic id; the id of
    # the edited znode was written back instead.
    h = ControllerHarness(controller_id=5)
    for broker in (1, 2, 3):
        h.register_broker(broker)
    h.start()
    h.create_topic("t", {0: [1, 2, 3]}, topic_id=X, in_context=False)
    h.drain()
    h.kill_broker(3)  # the deletion waits for it
    h.drain()
    h.admin.create(paths.delete_topic_path("t"), makepath=True)
    h.drain()
    other = "AAAAAAAAAAAAAAAAAAAAAg"
    edited = TopicAssignment(
        "t", other, {0: ReplicaAssignment((1, 2, 3)), 1: ReplicaAssignment((2, 1))}
    )
    h.admin.set(paths.topic_path("t"), codecs.encode_topic_assignment(edited))
    h.drain()
    znode = codecs.decode_topic_assignment("t", h.read(paths.topic_path("t")) or b"")
    assert sorted(znode.partitions) == [0] and znode.topic_id == X
