"""Races found by the simulator (controller.sim), each replayed deterministically here.

Session expiries landing in the middle of an event: Kafka's ZooKeeper client does not open a
new session until ``Expire`` has started processing, so an event in progress can never act on
the next session. kazoo reconnects on its own: the controller queues ``Expire`` when it hears
of the lost session, but an event already running carries on, and its next calls go to the
new session. And a controller write racing an admin write of the same topic znode.
"""

from __future__ import annotations

from controller.api.errors import Errors
from controller.core.events import ApiPartitionReassignment
from controller.core.model import ReplicaAssignment, TopicAssignment, TopicPartition
from controller.metrics import ControllerMetrics
from controller.zk import codecs, paths
from tests.harness import ControllerHarness, touches


def test_an_election_won_on_the_next_session_is_resumed_after_expire() -> None:
    """Simulation seed 89: the controller's session expires just before its election multi,
    which then succeeds on the new session; ``Expire`` (queued meanwhile) resigns; the
    following reelection finds /controller naming this controller and must take charge again
    rather than believe it already is (it would be active with an empty context forever)."""
    metrics = ControllerMetrics(controller_id=100)
    h = ControllerHarness(controller_id=100, metrics=metrics)
    h.register_broker(1)
    h.register_broker(2)
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    h.port.before(
        "multi",
        lambda: h.zk.expire(h.port.inner, reconnect=True),
        when=touches(paths.CONTROLLER),
    )
    h.start()

    assert h.controller.is_active
    # One epoch won, one failover counted (the resume used to count a second one).
    assert metrics.registry.get_sample_value("kafka_controller_failovers_total") == 1
    owner = h.stat(paths.CONTROLLER)
    assert owner is not None and owner.ephemeral_owner == h.port.session_id
    epoch = codecs.decode_controller_epoch(h.read(paths.CONTROLLER_EPOCH) or b"")
    assert h.ctx.epoch == epoch == 1  # resumed at the epoch it won, no second election
    assert h.ctx.live_broker_ids() == {1, 2}
    assert h.ctx.partition_leadership_info(TopicPartition("t", 0)) is not None
    # Its watches are armed on the current session: a new topic is noticed.
    h.create_topic("u", {0: [2]}, in_context=False)
    h.drain()
    assert h.zk_state(TopicPartition("u", 0)) is not None


def test_a_node_of_a_previous_process_is_not_taken_for_our_own() -> None:
    """A controller restarted before its previous process's session timed out finds
    /controller naming its own id. It is not active (Kafka's elect would think it is, with an
    empty context): it waits, and is elected once the old session ends."""
    h = ControllerHarness(controller_id=100)
    h.register_broker(1)
    h.create_topic("t", {0: [1]}, in_context=False)
    old = h.zk.open_session()
    old.create(paths.CONTROLLER, codecs.encode_controller(100, 0), ephemeral=True)
    h.start()

    assert not h.controller.is_active
    assert h.ctx.epoch == 0
    assert h.zk_state(TopicPartition("t", 0)) is None  # nothing was done meanwhile
    h.zk.expire(old, reconnect=False)  # the previous process's session times out
    h.drain()
    assert h.controller.is_active and h.ctx.epoch == 1
    assert h.zk_state(TopicPartition("t", 0)) is not None


def test_partitions_added_while_a_reassignment_rewrites_the_topic_survive() -> None:
    """Simulation seed 111: an admin adds a partition to /brokers/topics/t just before the
    controller writes a reassignment step into the same znode. Kafka writes its cached
    assignment blindly, which dropped the new partition for good (its own write removed it
    before PartitionModifications read the znode). The write now merges with the znode."""
    h = ControllerHarness(controller_id=5)
    for b in (1, 2, 3):
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    h.drain()

    def admin_adds_partition_1() -> None:
        data = h.read(paths.topic_path("t"))
        assert data is not None
        current = codecs.decode_topic_assignment("t", data)
        grown = dict(current.partitions)
        grown[1] = ReplicaAssignment((3, 1))
        h.admin.set(
            paths.topic_path("t"),
            codecs.encode_topic_assignment(TopicAssignment("t", current.topic_id, grown)),
        )

    topic_write = touches(f"path='{paths.topic_path('t')}'")
    h.port.before("multi_many", admin_adds_partition_1, when=topic_write)
    event = ApiPartitionReassignment(reassignments={TopicPartition("t", 0): (2, 3)})
    h.put(event)
    h.drain()

    assert event.reply.result(0) == {TopicPartition("t", 0): None}
    doc = codecs.decode_topic_assignment("t", h.read(paths.topic_path("t")) or b"")
    assert doc.partitions[1].replicas == (3, 1)
    assert doc.partitions[0].adding_replicas == (3,)  # the reassignment step was written too
    assert h.zk_state(TopicPartition("t", 1)) is not None  # and the new partition created
    assert h.ctx.partition_replica_assignment(TopicPartition("t", 1)) == (3, 1)


def test_a_partition_never_online_is_not_reassigned() -> None:
    """Simulation seed 100816: reassigning a partition none of whose replicas was ever live
    (no state znode) wrote the new replica set, then failed before starting the adding
    replicas; once online, its ISR held replicas the replica state machine had never started,
    and a later reassignment removing one of them left it in the ISR forever. Now refused
    up front, with nothing written."""
    h = ControllerHarness(controller_id=5)
    for b in (2, 3):
        h.register_broker(b)
    h.start()
    h.create_topic("t", {0: [1]}, in_context=False)
    h.drain()
    before = h.read(paths.topic_path("t"))

    event = ApiPartitionReassignment(reassignments={TopicPartition("t", 0): (2, 3)})
    h.put(event)
    h.drain()

    (outcome,) = event.reply.result(0).values()
    assert outcome is not None and outcome.error is Errors.LEADER_NOT_AVAILABLE
    assert "no leader and ISR yet" in str(outcome)
    assert h.read(paths.topic_path("t")) == before
    assert TopicPartition("t", 0) not in h.ctx.partitions_being_reassigned
    h.register_broker(1)
    h.drain()
    info = h.zk_state(TopicPartition("t", 0))
    assert info is not None and info.leader_and_isr.isr == (1,)
