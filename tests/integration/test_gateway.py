"""ZkGateway conformance: Kafka's KafkaZkClientTest cases (reference §6.9) and the batching the
port adds (§1.2, §1.5, engineering notes §7), run against a real ZooKeeper (KazooPort) and
MemoryZooKeeper alike.

Fencing is checked the way Kafka's tests do it: ``/controller_epoch`` holds epoch 1 at zkVersion
0 (``EV``), and a fenced call with ``EV + 1`` must raise ``ControllerMovedError`` and change
nothing. "No watch fired" is checked with a sentinel: a later event on another path is awaited,
and the session delivers events in order, so an earlier one would have arrived first.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from controller.core.model import (
    EndPoint,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from controller.zk import codecs, paths
from controller.zk.errors import (
    BadVersionError,
    ConnectionLossError,
    ControllerMovedError,
    MalformedZnodeError,
    NodeExistsError,
    NoNodeError,
    RequestTooLargeError,
)
from controller.zk.fenced import DEFAULT_OPS_PER_MULTI
from controller.zk.gateway import ZkGateway
from controller.zk.kazoo_port import KazooPort
from controller.zk.port import Check, ZkPort
from controller.zk.watches import (
    ChildrenDataChangeHandler,
    ZNodeChangeHandler,
    ZNodeChildChangeHandler,
)
from tests.integration.gateway_support import (
    CONTROLLER_EPOCH,
    TOPIC_ID,
    TP10,
    TP11,
    TP20,
    Backend,
    Events,
    InstrumentedPort,
    KazooBackend,
    MemoryBackend,
    Notifications,
    create_topic,
    lai,
    many_partitions,
    settle,
    state,
    tree,
)

EV = 0  # /controller_epoch's zkVersion after it is created with epoch 1


@pytest.fixture(params=["memory", pytest.param("kazoo", marks=pytest.mark.zookeeper)])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    impl: Backend
    if request.param == "kazoo":
        impl = KazooBackend(request.getfixturevalue("zk_connect"))
    else:
        impl = MemoryBackend()
    try:
        yield impl
    finally:
        impl.close()


@pytest.fixture
def port(backend: Backend) -> InstrumentedPort:
    return InstrumentedPort(backend.open())


@pytest.fixture
def gw(port: InstrumentedPort) -> ZkGateway:
    return ZkGateway(port)


@pytest.fixture
def epoch(port: InstrumentedPort) -> int:
    """Kafka's test setUp: createControllerEpochRaw(1); returns its zkVersion (0)."""
    port.create(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(CONTROLLER_EPOCH))
    return EV


@pytest.fixture
def other(backend: Backend) -> ZkPort:
    """A second session: another broker, an admin tool, a concurrent writer."""
    return backend.open()


# --- controller epoch, registration, election (§1.6) -----------------------------------------


def test_controller_epoch_methods(gw: ZkGateway, port: ZkPort) -> None:
    epoch_data = codecs.encode_controller_epoch
    assert gw.get_controller_epoch() is None
    with pytest.raises(NoNodeError):
        port.set(paths.CONTROLLER_EPOCH, epoch_data(1), 0)
    port.create(paths.CONTROLLER_EPOCH, epoch_data(0))
    assert gw.get_controller_epoch() == (0, 0)
    with pytest.raises(NodeExistsError):
        port.create(paths.CONTROLLER_EPOCH, epoch_data(0))
    assert port.set(paths.CONTROLLER_EPOCH, epoch_data(1), 0).version == 1
    with pytest.raises(BadVersionError):
        port.set(paths.CONTROLLER_EPOCH, epoch_data(2), 0)
    assert gw.get_controller_epoch() == (1, 1)


def test_controller_management_methods(gw: ZkGateway) -> None:
    assert gw.get_controller_id() is None
    _, epoch_zk_version = gw.register_controller_and_increment_epoch(1)
    assert gw.get_controller_id() == 1
    with pytest.raises(ControllerMovedError):
        gw.delete_controller(epoch_zk_version + 1)
    assert gw.get_controller_id() == 1
    gw.delete_controller(epoch_zk_version)
    assert gw.get_controller_id() is None
    gw.delete_controller(epoch_zk_version)  # already gone: not an error


def test_register_controller_and_increment_epoch(backend: Backend, port: ZkPort) -> None:
    first = ZkGateway(port)
    second = ZkGateway(backend.open())
    assert first.register_controller_and_increment_epoch(1) == (1, 1)
    data, stat = port.get(paths.CONTROLLER)
    assert codecs.decode_controller(data) == 1 and stat.ephemeral_owner == port.session_id
    # Kafka 3.4+'s format: version 2, the timestamp a string, kraftControllerEpoch -1.
    written = json.loads(data)
    assert set(written) == {"version", "brokerid", "timestamp", "kraftControllerEpoch"}
    assert written["version"] == 2 and written["kraftControllerEpoch"] == -1
    assert isinstance(written["timestamp"], str) and written["timestamp"].isdigit()
    with pytest.raises(ControllerMovedError):
        second.register_controller_and_increment_epoch(2)
    assert first.get_controller_epoch() == (1, 1)  # the loser bumped nothing
    port.stop()  # the first controller's session closes: /controller goes with it
    assert second.register_controller_and_increment_epoch(2) == (2, 2)
    assert second.get_controller_id() == 2
    assert second.get_controller_epoch() == (2, 2)


def test_register_controller_when_the_multi_reply_was_lost(port: InstrumentedPort) -> None:
    gw = ZkGateway(port)
    assert gw.register_controller_and_increment_epoch(1) == (1, 1)
    port.stop()
    port.start()
    # The election multi commits, its reply is lost and the resend fails with NODEEXISTS
    # (we already own /controller) while /controller_epoch already holds epoch + 1.
    port.replay_next_multi = True
    assert gw.register_controller_and_increment_epoch(1) == (2, 2)
    assert gw.get_controller_id() == 1
    assert gw.get_controller_epoch() == (2, 2)
    # A fresh second election by the sitting controller is not that case: the epoch it read
    # is already ours, so Kafka (and we) report a lost election.
    with pytest.raises(ControllerMovedError):
        gw.register_controller_and_increment_epoch(1)
    assert gw.get_controller_epoch() == (2, 2)


def test_register_controller_when_the_epoch_moves_under_us(
    port: InstrumentedPort, other: ZkPort
) -> None:
    gw = ZkGateway(port)
    port.create(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(4))
    # Another controller is elected and dies between our epoch read and our multi.
    port.before("multi", lambda: other.set(paths.CONTROLLER_EPOCH, b"5", 0))
    with pytest.raises(ControllerMovedError):
        gw.register_controller_and_increment_epoch(1)
    assert gw.get_controller_id() is None  # our create was rolled back with the set
    assert gw.register_controller_and_increment_epoch(1) == (6, 2)


def test_a_second_process_with_our_id_winning_the_race_is_not_us(
    port: InstrumentedPort, other: ZkPort
) -> None:
    # Two processes misconfigured with one controller id race an election: the rival wins
    # between our epoch read and our multi. Its /controller names our id at epoch + 1, which
    # is what a lost reply of our own multi looks like; only the node's session tells them
    # apart. Taken as ours, both would act as controller at the same epoch.
    gw = ZkGateway(port)
    port.create(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(0))
    port.before("multi", lambda: ZkGateway(other).register_controller_and_increment_epoch(1))
    with pytest.raises(ControllerMovedError, match="must not share an id"):
        gw.register_controller_and_increment_epoch(1)
    stat = port.exists(paths.CONTROLLER)
    assert stat is not None and stat.ephemeral_owner == other.session_id != port.session_id
    assert gw.get_controller_epoch() == (1, 1)


def test_register_zk_controller_after_kraft(gw: ZkGateway, port: ZkPort, epoch: int) -> None:
    kraft = codecs.encode_controller(3000, 1, version=2, kraft_controller_epoch=42)
    # A migrating KRaft controller's registration: a persistent v2 node and the epoch bumped.
    port.create(paths.CONTROLLER, kraft)
    port.set(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(2), epoch)
    with pytest.raises(ControllerMovedError):
        gw.register_controller_and_increment_epoch(1)
    assert gw.get_controller_id() == 3000
    gw.delete_controller(epoch + 1)
    assert gw.register_controller_and_increment_epoch(1) == (3, 2)


# --- partition state znodes -------------------------------------------------------------------


def test_create_and_get_topic_partition_states_raw(gw: ZkGateway, port: ZkPort, epoch: int) -> None:
    create_topic(port, "topic1", 2)
    states = {TP10: state(0), TP11: state(0)}
    with pytest.raises(ControllerMovedError):
        gw.create_topic_partition_states(states, epoch + 1)
    assert port.exists(paths.topic_partitions_path("topic1")) is None  # nothing written
    assert gw.create_topic_partition_states(states, epoch) == {TP10: None, TP11: None}
    assert gw.get_partition_states_raw([TP10, TP11]) == states
    # Creating exactly the same states again (a resend after a lost reply) is our own write.
    assert gw.create_topic_partition_states(states, epoch) == {TP10: None, TP11: None}
    # A state znode holding something else: NODEEXISTS for that partition.
    other = {TP10: state(1), TP11: state(1)}
    again = gw.create_topic_partition_states(other, epoch)
    assert sorted(again) == [TP10, TP11]
    assert all(isinstance(err, NodeExistsError) for err in again.values())
    # A topic whose znode is gone: NONODE for its partitions, the others still created.
    mixed = gw.create_topic_partition_states({TP20: state(0), TP10: state(5)}, epoch)
    assert isinstance(mixed[TP20], NoNodeError) and isinstance(mixed[TP10], NodeExistsError)
    assert gw.get_partition_states([TP10]) == {TP10: state(0)}


def test_update_leader_and_isr(gw: ZkGateway, port: ZkPort, epoch: int) -> None:
    create_topic(port, "topic1", 2)
    initial = {TP10: lai(0, 0), TP11: lai(0, 0)}
    missing = gw.update_leader_and_isr(initial, CONTROLLER_EPOCH, epoch)
    assert missing.to_retry == set()
    assert sorted(missing.finished) == [TP10, TP11]
    for tp, err in missing.finished.items():
        assert isinstance(err, NoNodeError)
        assert err.path == paths.partition_state_path(tp.topic, tp.partition)
    gw.create_topic_partition_states(
        {tp: LeaderIsrAndControllerEpoch(v, CONTROLLER_EPOCH) for tp, v in initial.items()},
        epoch,
    )
    with pytest.raises(ControllerMovedError):
        gw.update_leader_and_isr(initial, CONTROLLER_EPOCH, epoch + 1)
    assert gw.get_partition_states([TP10, TP11]) == {TP10: state(0), TP11: state(0)}

    ok = gw.update_leader_and_isr({TP10: lai(1, 0), TP11: lai(1, 0)}, 2, epoch)
    assert ok.finished == {TP10: lai(1, 1), TP11: lai(1, 1)} and ok.to_retry == set()
    stored = gw.get_partition_states([TP10])[TP10]
    assert (stored.controller_epoch, stored.leader_and_isr) == (2, lai(1, 1))

    # A conditional write at a version that moved, with content that is not ours: BADVERSION,
    # to be retried by re-reading.
    stale = gw.update_leader_and_isr(
        {TP10: lai(1, 0, leader=2), TP11: lai(1, 0, leader=2)}, 2, epoch
    )
    assert stale.finished == {} and stale.to_retry == {TP10, TP11}
    # The same write again, as a resend after a lost reply: ZooKeeper holds exactly our
    # content one version on, so it was written (not a conflict with someone else).
    resent = gw.update_leader_and_isr({TP10: lai(1, 0), TP11: lai(1, 0)}, 2, epoch)
    assert resent.finished == {TP10: lai(1, 1), TP11: lai(1, 1)} and resent.to_retry == set()

    ok = gw.update_leader_and_isr({TP10: lai(2, 1), TP11: lai(2, 1)}, 2, epoch)
    assert ok.finished == {TP10: lai(2, 2), TP11: lai(2, 2)}

    mixed = gw.update_leader_and_isr({TP10: lai(3, 2), TP11: lai(3, 0), TP20: lai(3, 0)}, 2, epoch)
    assert mixed.to_retry == {TP11}
    assert mixed.finished[TP10] == lai(3, 3)
    assert isinstance(mixed.finished[TP20], NoNodeError) and set(mixed.finished) == {TP10, TP20}
    assert gw.get_partition_states([TP11])[TP11].leader_and_isr == lai(2, 2)  # untouched


def test_update_leader_and_isr_failure_is_reported_per_partition(
    gw: ZkGateway, port: InstrumentedPort, epoch: int
) -> None:
    """Kafka: a ControllerMovedException propagates; any other exception becomes a Left for
    every partition (so callers still finish the partitions of earlier rounds)."""
    create_topic(port, "topic1", 2)
    gw.create_topic_partition_states({TP10: state(0), TP11: state(0)}, epoch)

    def lose_connection() -> None:
        raise ConnectionLossError("connection lost")

    port.before("multi_many", lose_connection)
    result = gw.update_leader_and_isr({TP10: lai(1, 0), TP11: lai(1, 0)}, 1, epoch)
    assert result.to_retry == set()
    assert sorted(result.finished) == [TP10, TP11]
    assert all(isinstance(e, ConnectionLossError) for e in result.finished.values())


# --- recursive delete, notifications ----------------------------------------------------------


def test_delete_recursive_with_controller_epoch_version_check(
    gw: ZkGateway, port: ZkPort, epoch: int
) -> None:
    assert gw.delete_recursive("/delete/does-not-exist", epoch) is False
    port.create("/delete/some/random/path", b"leaf", makepath=True)
    port.create("/delete/some/other", b"x")
    port.create("/delete/sibling", b"y")
    before = tree(port, "/delete")
    with pytest.raises(ControllerMovedError):
        gw.delete_recursive("/delete", epoch + 1)
    assert tree(port, "/delete") == before  # nothing deleted, not even a leaf
    assert gw.delete_recursive("/delete", epoch) is True
    assert port.exists("/delete") is None


def test_delete_topic_znode_removes_partition_states(
    gw: ZkGateway, port: ZkPort, epoch: int
) -> None:
    create_topic(port, "topic1", 2)
    gw.create_topic_partition_states({TP10: state(0), TP11: state(0)}, epoch)
    with pytest.raises(ControllerMovedError):
        gw.delete_topic_znode("topic1", epoch + 1)
    assert len(tree(port, paths.topic_path("topic1"))) == 6
    assert gw.delete_topic_znode("topic1", epoch) is True
    assert gw.get_all_topics(watch=False) == set()
    assert gw.delete_topic_znode("topic1", epoch) is False


@pytest.mark.parametrize("kind", ["isr_change", "log_dir_event"])
def test_notifications_deletion(gw: ZkGateway, port: ZkPort, epoch: int, kind: str) -> None:
    n = Notifications(kind, gw)
    first = f"{n.prefix}0000000000"
    n.delete([first], epoch)  # the parent does not even exist: not an error
    assert n.get_all() == []
    port.ensure_path(n.parent)
    created = [port.create(n.create_path, n.payload(i), sequential=True) for i in (1, 2, 3)]
    names = [c.rsplit("/", 1)[1] for c in created]
    assert names == [f"{n.prefix}{i:010d}" for i in range(3)]
    assert all(re.fullmatch(rf"{n.prefix}\d{{10}}", name) for name in n.get_all())
    assert n.get_all() == names
    expected = (
        {
            TP10,
            TopicPartition("topic1", 1),
            TopicPartition("topic1", 2),
            TopicPartition("topic1", 3),
        }
        if kind == "isr_change"
        else [1, 2, 3]
    )
    assert n.content(names) == expected

    with pytest.raises(ControllerMovedError):
        n.delete(names, epoch + 1)
    assert n.get_all() == names
    n.delete([names[1], f"{n.prefix}0000000042"], epoch)  # selective, with a missing one
    assert n.get_all() == [names[0], names[2]]
    n.delete(n.get_all(), epoch)  # the full delete done at failover
    assert n.get_all() == []
    again = port.create(n.create_path, n.payload(4), sequential=True)
    assert again.endswith(f"{n.prefix}0000000003")  # the sequence counts creations only


# --- admin znodes: reassignment, preferred election ---------------------------------------------


def test_set_get_and_delete_partition_reassignment(gw: ZkGateway, port: ZkPort, epoch: int) -> None:
    port.ensure_path(paths.ADMIN)
    assert gw.get_partition_reassignment() == {}
    assert not gw.reassign_partitions_in_progress()
    reassignment = {
        TopicPartition("topic_a", 0): (0, 1, 3),
        TopicPartition("topic_a", 1): (2, 1, 3),
        TopicPartition("topic_b", 0): (4, 5),
        TopicPartition("topic_c", 0): (5, 3),
    }
    with pytest.raises(ControllerMovedError):
        gw.set_or_create_partition_reassignment(reassignment, epoch + 1)
    assert not gw.reassign_partitions_in_progress()
    gw.set_or_create_partition_reassignment(reassignment, epoch)  # create
    assert gw.get_partition_reassignment() == reassignment
    assert gw.reassign_partitions_in_progress()
    updated = {tp: r for tp, r in reassignment.items() if tp.topic != "topic_b"}
    with pytest.raises(ControllerMovedError):
        gw.set_or_create_partition_reassignment(updated, epoch + 1)
    assert gw.get_partition_reassignment() == reassignment
    gw.set_or_create_partition_reassignment(updated, epoch)  # overwrite
    assert gw.get_partition_reassignment() == updated
    with pytest.raises(ControllerMovedError):
        gw.delete_partition_reassignment(epoch + 1)
    assert gw.get_partition_reassignment() == updated
    gw.delete_partition_reassignment(epoch)
    assert gw.get_partition_reassignment() == {}
    assert not gw.reassign_partitions_in_progress()
    port.create(paths.REASSIGN_PARTITIONS, b'{"version":1,"partitions":[],"extra":1}')
    assert gw.get_partition_reassignment() == {}  # Kafka's strict mapper: treated as empty


def test_config_change_notification_methods(gw: ZkGateway, port: ZkPort) -> None:
    port.ensure_path(paths.CONFIG_CHANGES)
    port.create(
        f"{paths.CONFIG_CHANGES}/config_change_0000000000",
        codecs.encode_config_change("topics", "t"),
    )
    port.create(f"{paths.CONFIG_CHANGES}/config_change_0000000001", b"{not json")
    names = ["config_change_0000000000", "config_change_0000000001", "config_change_0000000002"]
    read = gw.get_config_change_notifications(names)
    # The missing one (purged meanwhile) is left out; the malformed one names its path.
    assert [path.rsplit("/", 1)[1] for path, _ in read] == names[:2]
    assert read[0][1] == ("topics", "t")
    assert isinstance(read[1][1], MalformedZnodeError)
    assert read[1][1].path == f"{paths.CONFIG_CHANGES}/config_change_0000000001"
    gw.purge_config_change_notification(names[0])
    gw.purge_config_change_notification(names[2])  # already gone: not an error
    assert port.get_children(paths.CONFIG_CHANGES) == [names[1]]


def test_preferred_replica_election_methods(gw: ZkGateway, port: ZkPort, epoch: int) -> None:
    port.ensure_path(paths.ADMIN)
    assert gw.get_preferred_replica_election() == set()
    election = {TopicPartition("topic1", 0), TopicPartition("topic1", 1)}
    data = codecs.encode_preferred_replica_election(sorted(election))
    port.create(paths.PREFERRED_REPLICA_ELECTION, data)  # what the admin tool writes
    assert gw.get_preferred_replica_election() == election
    with pytest.raises(NodeExistsError):
        port.create(paths.PREFERRED_REPLICA_ELECTION, data)
    with pytest.raises(ControllerMovedError):
        gw.delete_preferred_replica_election(epoch + 1)
    assert gw.get_preferred_replica_election() == election
    gw.delete_preferred_replica_election(epoch)
    assert gw.get_preferred_replica_election() == set()
    gw.delete_preferred_replica_election(epoch)  # absent: not an error


# --- watches ----------------------------------------------------------------------------------


def test_child_watch_is_armed_by_a_read_with_a_registered_handler(
    gw: ZkGateway, port: ZkPort, other: ZkPort
) -> None:
    port.ensure_path(paths.BROKERS_TOPICS)
    events = Events()
    gw.register_child_handler(
        ZNodeChildChangeHandler(paths.BROKERS_TOPICS, events.callback("topics"))
    )
    assert gw.get_all_topics(watch=True) == set()
    create_topic(other, "t1")
    assert events.next() == "topics"
    create_topic(other, "t2")  # one-shot: not re-armed until the next read
    settle(gw, other, "/sentinel1")
    assert events.drain() == []
    assert gw.get_all_topics(watch=True) == {"t1", "t2"}
    create_topic(other, "t3")
    assert events.next() == "topics"


def test_child_watch_is_not_armed_without_watch_or_handler(
    gw: ZkGateway, port: ZkPort, other: ZkPort
) -> None:
    port.ensure_path(paths.BROKERS_TOPICS)
    events = Events()
    handler = ZNodeChildChangeHandler(paths.BROKERS_TOPICS, events.callback("topics"))
    gw.register_child_handler(handler)
    assert gw.get_all_topics(watch=False) == set()  # registerWatch = false
    create_topic(other, "t1")
    gw.unregister_child_handler(paths.BROKERS_TOPICS)
    assert gw.get_children(paths.BROKERS_TOPICS) == ["t1"]  # no handler at read time
    gw.register_child_handler(handler)  # registering alone arms nothing
    create_topic(other, "t2")
    settle(gw, other)
    assert events.drain() == []


def test_child_handler_hears_its_node_deleted_and_created_again(
    gw: ZkGateway, port: ZkPort, other: ZkPort
) -> None:
    """An operator's ``deleteall /admin/delete_topics`` must not leave the controller deaf to
    deletion requests until the next failover."""
    port.ensure_path(paths.DELETE_TOPICS)
    events = Events()
    gw.register_child_handler(
        ZNodeChildChangeHandler(paths.DELETE_TOPICS, events.callback("deletions"))
    )
    assert gw.get_children(paths.DELETE_TOPICS) == []
    other.delete(paths.DELETE_TOPICS)
    assert events.next() == "deletions"
    assert gw.get_children(paths.DELETE_TOPICS) == []  # missing: a creation watch is armed
    other.create(paths.delete_topic_path("t"), b"", makepath=True)
    assert events.next() == "deletions"
    assert gw.get_children(paths.DELETE_TOPICS) == ["t"]
    other.create(paths.delete_topic_path("u"), b"")
    assert events.next() == "deletions"
    settle(gw, other)
    assert events.drain() == []


def test_child_handler_hears_its_node_created_while_reading_it_missing(
    gw: ZkGateway, port: InstrumentedPort, other: ZkPort
) -> None:
    events = Events()
    gw.register_child_handler(
        ZNodeChildChangeHandler(paths.DELETE_TOPICS, events.callback("deletions"))
    )
    # Created after the read found no node, before the creation watch is armed.
    port.before("exists", lambda: other.create(paths.delete_topic_path("t"), b"", makepath=True))
    assert gw.get_children(paths.DELETE_TOPICS) == ["t"]  # read again: a child watch is armed
    other.create(paths.delete_topic_path("u"), b"")
    assert events.next() == "deletions"


def test_topic_data_watch_catches_a_change_made_while_reading(
    gw: ZkGateway, port: InstrumentedPort, other: ZkPort
) -> None:
    """PartitionModifications must not be lost to a write racing the failover read."""
    create_topic(port, "t", 1)
    events = Events()
    path = paths.topic_path("t")
    gw.register_change_handler(ZNodeChangeHandler(path, on_data_change=events.callback("t")))
    grown = TopicAssignment("t", None, {p: ReplicaAssignment.of([1]) for p in range(2)})
    # The read that arms the watches (a batched read arming one watch per topic).
    port.after("get_many_watched", lambda: other.set(path, codecs.encode_topic_assignment(grown)))
    assert list(gw.get_topic_assignments(["t"])["t"].partitions) == [0]  # read before the write
    assert events.next() == "t"  # so the write must be notified
    assert list(gw.get_topic_assignments(["t"])["t"].partitions) == [0, 1]


def test_children_data_handler_watches_its_members_like_one_handler_each(
    gw: ZkGateway, port: InstrumentedPort, other: ZkPort
) -> None:
    """One registration for many topics (PartitionModifications) behaves as per-topic ones:
    armed by the topic read, fires on data changes of members only, once per arming, and a
    member unregistered by path is no longer reported."""
    for topic in ("a", "b", "c"):
        create_topic(port, topic, 1)
    events = Events()
    gw.register_children_data_handler(
        ChildrenDataChangeHandler(paths.BROKERS_TOPICS, lambda topic: events.callback(topic)()),
        ["a", "b"],
    )
    assert gw.watches.has_change(paths.topic_path("a"))
    assert not gw.watches.has_change(paths.topic_path("c"))
    assert not gw.watches.has_change(paths.topic_partitions_path("a"))
    gw.get_topic_assignments(["a", "b", "c"])
    grown = TopicAssignment("x", None, {p: ReplicaAssignment.of([1]) for p in range(2)})
    for topic in ("a", "c"):
        other.set(paths.topic_path(topic), codecs.encode_topic_assignment(grown))
    assert events.next() == "a"
    other.set(paths.topic_path("a"), codecs.encode_topic_assignment(grown))  # one-shot
    gw.unregister_change_handler(paths.topic_path("b"))
    gw.get_topic_assignments(["b"])  # not watched any more: arms nothing
    other.set(paths.topic_path("b"), codecs.encode_topic_assignment(grown))
    settle(gw, other)
    assert events.drain() == []


def test_data_read_sees_a_node_created_while_arming(
    gw: ZkGateway, port: InstrumentedPort, other: ZkPort
) -> None:
    events = Events()
    gw.register_change_handler(
        ZNodeChangeHandler(paths.CONTROLLER, on_creation=events.callback("created"))
    )
    controller = codecs.encode_controller(7, 1)
    port.before("exists", lambda: other.create(paths.CONTROLLER, controller, ephemeral=True))
    # get_controller_id reads (absent), then arms a creation watch; the node appears between.
    # The caller must learn of it: either the read returns it or the handler fires.
    seen = gw.get_controller_id()
    assert seen == 7 or events.next() == "created"


# --- topic assignment -------------------------------------------------------------------------


def test_topic_assignments(gw: ZkGateway, port: ZkPort, epoch: int) -> None:
    admin = TopicAssignment("topic1", TOPIC_ID, {0: ReplicaAssignment.of([])})
    port.create(paths.topic_path("topic1"), codecs.encode_topic_assignment(admin), makepath=True)
    expected = TopicAssignment("topic1", TOPIC_ID, {0: ReplicaAssignment.of([1, 2, 3], [1], [3])})
    with pytest.raises(ControllerMovedError):
        gw.set_topic_assignment(expected, epoch + 1)
    assert gw.get_topic_assignments(["topic1"]) == {"topic1": admin}
    gw.set_topic_assignment(expected, epoch)
    assert gw.get_topic_assignments(["topic1", "absent"]) == {
        "topic1": expected,
        "absent": TopicAssignment("absent", None, {}),
    }
    raw = json.loads(port.get(paths.topic_path("topic1"))[0])
    assert raw == {
        "version": 3,
        "topic_id": TOPIC_ID,
        "partitions": {"0": [1, 2, 3]},
        "adding_replicas": {"0": [1]},
        "removing_replicas": {"0": [3]},
    }


# --- batching: fenced split-and-retry, batched reads --------------------------------------------


def test_fenced_writer_split_and_retry(gw: ZkGateway, port: InstrumentedPort, epoch: int) -> None:
    tps = many_partitions(5, 100)
    for t in range(5):
        create_topic(port, f"t{t}", 100)
    assert set(gw.create_topic_partition_states({tp: state(0) for tp in tps}, epoch).values()) == {
        None
    }
    stale = [tps[3], tps[250], tps[499]]  # spread over the batch(es)
    for tp in stale:  # a leader's own ISR update: these znodes are now at zkVersion 1
        port.set(paths.partition_state_path(*tp), codecs.encode_partition_state(state(9)))

    port.transactions.clear()
    port.multi_many_calls = 0
    result = gw.update_leader_and_isr({tp: lai(1, 0) for tp in tps}, 1, epoch)
    assert result.to_retry == set(stale)
    assert len(result.finished) == 497
    assert all(v == lai(1, 1) for v in result.finished.values())
    base = math.ceil(500 / DEFAULT_OPS_PER_MULTI)
    # Each failed multi costs one retry of the rest of its batch, in two halves, nothing more.
    assert base < len(port.transactions) <= base + 2 * len(stale)
    for ops in port.transactions:
        assert ops[0] == Check(paths.CONTROLLER_EPOCH, epoch)  # fenced: the check goes first
        assert all(not isinstance(op, Check) for op in ops[1:])
    stored = gw.get_partition_states(tps)
    assert sum(s.leader_and_isr.leader_epoch == 1 for s in stored.values()) == 497
    assert all(stored[tp].leader_and_isr.leader_epoch == 9 for tp in stale)

    # The happy path: one multi per batch, all pipelined in one round trip.
    port.transactions.clear()
    port.multi_many_calls = 0
    ok = {tp: lai(2, 1) for tp in tps if tp not in stale}
    ok.update({tp: lai(10, 1) for tp in stale})
    result = gw.update_leader_and_isr(ok, 1, epoch)
    assert result.to_retry == set() and len(result.finished) == 500
    assert len(port.transactions) == base and port.multi_many_calls == 1
    # Full multis of DEFAULT_OPS_PER_MULTI writes (+ the check op), the rest in the last one.
    assert [len(ops) for ops in port.transactions] == [
        min(DEFAULT_OPS_PER_MULTI, 500 - start) + 1
        for start in range(0, 500, DEFAULT_OPS_PER_MULTI)
    ]
    port.delete(paths.BROKERS_TOPICS, recursive=True)  # pipelined: a fast fixture teardown


def test_fenced_multis_stay_under_jute_maxbuffer(
    gw: ZkGateway, port: InstrumentedPort, epoch: int
) -> None:
    """Topic znodes are big: rewriting many (topic ids at failover) must not send a multi
    over ZooKeeper's 1 MiB request limit, which makes the server drop the connection."""
    partitions = {p: ReplicaAssignment.of([1, 2, 3]) for p in range(2000)}
    topics = [TopicAssignment(f"big{i}", None, partitions) for i in range(40)]
    for t in topics:
        port.create(paths.topic_path(t.topic), codecs.encode_topic_assignment(t), makepath=True)
    with_ids = [TopicAssignment(t.topic, TOPIC_ID, partitions) for t in topics]
    port.transactions.clear()
    assert gw.set_topic_ids({t.topic: TOPIC_ID for t in topics}, epoch) == {
        t.topic: t for t in with_ids
    }
    payloads = [
        sum(len(op.path) + len(getattr(op, "data", None) or b"") for op in ops)
        for ops in port.transactions
    ]
    assert sum(payloads) > 1024 * 1024 and max(payloads) < 1024 * 1024
    assert gw.get_topic_assignments([t.topic for t in topics]) == {t.topic: t for t in with_ids}


def test_batched_state_reads_equal_single_reads(
    gw: ZkGateway, port: InstrumentedPort, epoch: int
) -> None:
    tps = many_partitions(10, 500)
    for t in range(10):
        create_topic(port, f"t{t}", 500)
    states = {tp: state(tp.partition % 7, 0) for tp in tps}
    assert set(gw.create_topic_partition_states(states, epoch).values()) == {None}
    missing = tps[17::997]
    for tp in missing:
        port.delete(paths.partition_state_path(*tp))
    malformed = tps[4242]
    port.set(paths.partition_state_path(*malformed), b'{"version":1,"leader":"one"}')
    empty = tps[100]  # Kafka's decode gives None for no data: the state "doesn't exist"
    port.set(paths.partition_state_path(*empty), b"")
    never = [TopicPartition("t0", 999), TopicPartition("nope", 0)]
    asked = [*tps, *never]

    port.get_many_calls = 0
    batched = gw.get_partition_states_raw(asked)
    assert port.get_many_calls == 1

    singles: dict[TopicPartition, object] = {}
    for tp in asked:
        path = paths.partition_state_path(*tp)
        try:
            data, stat = port.get(path)
        except NoNodeError as exc:
            singles[tp] = exc
            continue
        if not data:
            singles[tp] = NoNodeError(path=path)
            continue
        try:
            singles[tp] = codecs.decode_partition_state(data, stat.version, path)
        except MalformedZnodeError as exc:
            singles[tp] = exc
    assert list(batched) == asked
    for tp in asked:
        got, want = batched[tp], singles[tp]
        if isinstance(want, Exception):
            assert type(got) is type(want), tp
            assert got.path == want.path  # type: ignore[union-attr]
        else:
            assert got == want, tp
    assert isinstance(batched[malformed], MalformedZnodeError)
    assert "'leader'" in str(batched[malformed])
    assert sum(isinstance(v, NoNodeError) for v in batched.values()) == len(missing) + 3

    decoded = gw.get_partition_states(asked)  # malformed and missing skipped, no raise
    assert len(decoded) == 5000 - len(missing) - 2
    assert malformed not in decoded and empty not in decoded
    assert all(tp not in decoded for tp in missing)
    port.delete(paths.BROKERS_TOPICS, recursive=True)  # pipelined: a fast fixture teardown


def test_malformed_znodes_are_reported_per_item(gw: ZkGateway, port: ZkPort) -> None:
    """One bad znode never fails a batched read: it is left out or reported, never raised."""
    good = codecs.BrokerRegistration(1, (EndPoint("PLAINTEXT", "h1", 9092),))
    port.create(paths.broker_path(1), codecs.encode_broker_registration(good), makepath=True)
    port.create(paths.broker_path(2), b"{", ephemeral=False)
    port.create(f"{paths.BROKERS_IDS}/not-a-number", b"{}")
    assert sorted(gw.get_all_broker_and_epochs()) == [1]

    create_topic(port, "good", 2)
    port.create(paths.topic_path("bad"), b'{"version":3,"partitions":{"x":[1]}}')
    assignments = gw.get_topic_assignments(["good", "bad"])
    assert sorted(assignments) == ["good"] and len(assignments["good"].partitions) == 2

    port.create(
        paths.topic_config_path("good"), codecs.encode_topic_config({"a": "1"}), makepath=True
    )
    port.create(paths.topic_config_path("bad"), b'{"version":1,"config":{"a":1}}')
    configs = gw.get_topic_configs(["good", "bad", "absent"])
    assert configs["good"] == {"a": "1"} and configs["absent"] == {}
    assert isinstance(configs["bad"], MalformedZnodeError)

    port.ensure_path(paths.ISR_CHANGE_NOTIFICATION)
    port.ensure_path(paths.LOG_DIR_EVENT_NOTIFICATION)
    port.create(paths.ISR_CHANGE_CREATE_PATH, b"[]", sequential=True)
    port.create(
        paths.ISR_CHANGE_CREATE_PATH, codecs.encode_isr_change_notification([TP10]), sequential=True
    )
    port.create(
        paths.LOG_DIR_EVENT_CREATE_PATH, b'{"version":1,"broker":"3","event":1}', sequential=True
    )
    port.create(paths.LOG_DIR_EVENT_CREATE_PATH, codecs.encode_log_dir_event(4), sequential=True)
    isr_names = gw.get_all_isr_change_notifications()
    assert gw.get_partitions_from_isr_change_notifications(isr_names) == {TP10}
    log_dir_names = gw.get_all_log_dir_event_notifications()
    assert gw.get_broker_ids_from_log_dir_events(log_dir_names) == [4]


@pytest.mark.zookeeper
def test_data_less_znodes_are_null_as_kafka_writes_them(zk_connect: str) -> None:
    # Kafka creates its persistent paths, parents, partition nodes and deletion markers with
    # null data (createRecursive(path, null)); a Kafka reader tells null (None: "no producer
    # id block yet") from empty data (a parse error). Read with a plain kazoo client.
    port = KazooPort(zk_connect, 10.0)
    port.start()
    raw = KazooClient(hosts=zk_connect)
    raw.start()
    try:
        gw = ZkGateway(port)
        gw.ensure_persistent_paths()
        for path in paths.PERSISTENT_PATHS:
            assert raw.get(path)[0] is None, path
        port.create(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(CONTROLLER_EPOCH))
        create_topic(port, "topic1", 1)
        assert gw.create_topic_partition_states({TP10: state(0)}, EV) == {TP10: None}
        assert raw.get(paths.topic_partitions_path("topic1"))[0] is None
        assert raw.get(paths.partition_path("topic1", 0))[0] is None
        port.create("/a/b/c", b"x", makepath=True)
        assert [raw.get(p)[0] for p in ("/a", "/a/b", "/a/b/c")] == [None, None, b"x"]
        port.create("/empty", b"")
        assert raw.get("/empty")[0] == b""
        assert port.get("/a")[0] == b""  # our own reads see no difference
    finally:
        raw.stop()
        raw.close()
        port.stop()


@pytest.mark.zookeeper
def test_reads_of_paths_past_the_request_limit_are_split_not_resent_for_ever(
    zk_connect: str,
) -> None:
    # Two 600 KB names (a notification can carry one) in one multi-read make a request past
    # the server's jute.maxbuffer: the server drops the connection, kazoo reconnects and
    # re-sends it, for ever, with the caller blocked. Chunks are bounded by size too.
    port = KazooPort(zk_connect, 10.0)
    port.start()
    try:
        names = ["a" * 600_000, "b" * 600_000, "c"]
        port.create("/c", b"here")
        done: dict[str, object] = {}
        reader = threading.Thread(
            target=lambda: done.update(r=port.get_many([f"/{n}" for n in names])), daemon=True
        )
        reader.start()
        reader.join(30)
        assert not reader.is_alive(), "the batched read never returned"
        results = done["r"]
        assert isinstance(results, list)
        assert [type(r.error) for r in results[:2]] == [NoNodeError, NoNodeError]
        assert results[2].data == b"here"
    finally:
        port.stop()


@pytest.mark.zookeeper
def test_a_notification_naming_a_lone_surrogate_is_malformed_and_the_session_lives(
    zk_connect: str,
) -> None:
    # '\ud800' is a valid JSON escape but no UTF-8 text: a path holding it killed kazoo's
    # connection thread (the session LOST for good) when the controller read its config.
    port = KazooPort(zk_connect, 10.0)
    port.start()
    try:
        gw = ZkGateway(port)
        gw.ensure_persistent_paths()
        port.create(
            f"{paths.CONFIG_CHANGES}/config_change_0000000000",
            b'{"version":2,"entity_path":"topics/a\\ud800"}',
        )
        ((_, change),) = gw.get_config_change_notifications(["config_change_0000000000"])
        assert isinstance(change, MalformedZnodeError) and "surrogate" in change.problem
        with pytest.raises(ValueError, match="znode name"):
            gw.get_topic_configs(["a\ud800"])
        assert port.exists(paths.CONFIG_CHANGES) is not None  # the session still serves
    finally:
        port.stop()


def test_a_fenced_write_too_large_for_zookeeper_fails_at_once(zk_connect: str) -> None:
    # A topic znode the admin accepts (< 1 MB) can outgrow jute.maxbuffer with every
    # partition's adding and removing replicas. Sent, ZooKeeper dropped the connection and the
    # controller's port (retrying until its session expires) resent it for ever: the event
    # thread hung and the session flapped. It is refused before it is sent.
    port = KazooPort(zk_connect, session_timeout=10.0, retry_until_expired=True)
    port.start(timeout=15)
    try:
        port.create(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(1))
        moving = TopicAssignment("big", None, {
            p: ReplicaAssignment((1, 2, 3, 4, 5, 6), (4, 5, 6), (1, 2, 3)) for p in range(30000)
        })  # fmt: skip
        gw = ZkGateway(port)
        with pytest.raises(RequestTooLargeError, match=r"jute\.maxbuffer"):
            gw.set_topic_assignment(moving, 0)
        assert port.exists(paths.topic_path("big")) is None
        assert port.session_id is not None  # no connection was dropped meanwhile
    finally:
        port.stop()
