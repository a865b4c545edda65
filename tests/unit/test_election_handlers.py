"""Leader-election, controlled-shutdown and config-change handlers on the in-memory harness:
the cases the integration tests cannot reach easily (no leadership info, topics queued for
deletion, a resigned controller, notification formats and purging)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import pytest

from controller.api.errors import ApiError, Errors
from controller.config import load_config
from controller.core.events import (
    AutoPreferredReplicaLeaderElection,
    ControlledShutdown,
    ElectionTrigger,
    ElectionType,
    NotControllerError,
    ReplicaLeaderElection,
    TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
)
from controller.core.model import PartitionState, TopicPartition
from controller.handlers import config_changes
from controller.handlers.config_changes import (
    ConfigChangeNotification,
    sequence_number,
    unclean_enabled,
)
from controller.handlers.elections import on_config_change
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError
from tests.harness import ControllerHarness, leadership

EPOCH = 50
ADMIN = ElectionTrigger.ADMIN_CLIENT_TRIGGERED


def tp(topic: str, p: int) -> TopicPartition:
    return TopicPartition(topic, p)


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = ControllerHarness(controller_id=5)
    harness.become_controller(epoch=EPOCH)
    harness.set_live_brokers([1, 2])
    yield harness
    harness.close()


def online(h: ControllerHarness, topic: str, partitions: dict[int, tuple[list[int], int]]) -> None:
    h.create_topic(topic, {p: r for p, (r, _) in partitions.items()})
    for p, (replicas, leader) in partitions.items():
        h.set_leadership(tp(topic, p), leader, replicas, controller_epoch=EPOCH)
        h.ctx.put_partition_state(tp(topic, p), PartitionState.OnlinePartition)


def admin_election(
    h: ControllerHarness, kind: ElectionType, *tps: TopicPartition
) -> dict[TopicPartition, object]:
    event = ReplicaLeaderElection(partitions=frozenset(tps), election_type=kind, trigger=ADMIN)
    h.process(event)
    return {
        k: (v.error.name if isinstance(v, ApiError) else v)
        for k, v in event.reply.result(0).items()
    }


# -- ReplicaLeaderElection ------------------------------------------------------------------


def test_partition_without_leadership_info_gets_an_error_not_a_crash(h: ControllerHarness) -> None:
    online(h, "t", {0: ([1, 2], 2)})
    h.create_topic("t", {0: [1, 2], 1: [1, 2]})  # t-1 has no state znode and no leadership
    results = admin_election(h, ElectionType.PREFERRED, tp("t", 0), tp("t", 1))
    assert results == {tp("t", 0): 1, tp("t", 1): "PREFERRED_LEADER_NOT_AVAILABLE"}
    unclean = admin_election(h, ElectionType.UNCLEAN, tp("t", 1))
    assert unclean == {tp("t", 1): "ELIGIBLE_LEADERS_NOT_AVAILABLE"}
    # "All partitions" leaves it out (Kafka resolves "all" from the brokers' metadata cache,
    # which never held a partition that was never elected), so `elect --all` succeeds.
    event = ReplicaLeaderElection(election_type=ElectionType.PREFERRED, trigger=ADMIN)
    h.process(event)
    assert set(event.reply.result(0)) == {tp("t", 0)}


def test_topic_queued_for_deletion_is_refused(h: ControllerHarness) -> None:
    online(h, "t", {0: ([1, 2], 2)})
    h.ctx.queue_topic_deletion(["t"])
    zxid = h.zxid
    assert admin_election(h, ElectionType.PREFERRED, tp("t", 0)) == {
        tp("t", 0): "INVALID_TOPIC_EXCEPTION"
    }
    assert h.zxid == zxid
    # "All partitions" leaves such topics out altogether (Kafka's metadata cache does).
    event = ReplicaLeaderElection(election_type=ElectionType.PREFERRED, trigger=ADMIN)
    h.process(event)
    assert event.reply.result(0) == {}


def test_unclean_is_not_needed_while_the_leader_is_alive(h: ControllerHarness) -> None:
    online(h, "t", {0: ([1, 2], 1)})
    assert admin_election(h, ElectionType.UNCLEAN, tp("t", 0)) == {
        tp("t", 0): "ELECTION_NOT_NEEDED"
    }
    h.set_live_brokers([1, 2], shutting_down=[1])  # a shutting-down leader is not "alive"
    assert admin_election(h, ElectionType.UNCLEAN, tp("t", 0)) == {tp("t", 0): 2}


def test_election_not_needed_says_so_in_kafka_words(h: ControllerHarness) -> None:
    online(h, "t", {0: ([1, 2], 1)})
    event = ReplicaLeaderElection(
        partitions=frozenset({tp("t", 0)}), election_type=ElectionType.PREFERRED, trigger=ADMIN
    )
    h.process(event)
    [result] = event.reply.result(0).values()
    assert isinstance(result, ApiError) and result.error is Errors.ELECTION_NOT_NEEDED
    assert str(result) == "Leader election not needed for topic partition."


def test_inactive_controller_answers_not_controller(h: ControllerHarness) -> None:
    online(h, "t", {0: ([1, 2], 2)})
    h.controller.active_controller_id = 7
    event = ReplicaLeaderElection(
        partitions=frozenset({tp("t", 0)}), election_type=ElectionType.PREFERRED, trigger=ADMIN
    )
    h.process(event)
    with pytest.raises(NotControllerError) as raised:
        event.reply.result(0)
    assert raised.value.active_controller_id == 7


def test_zk_trigger_without_znode_only_rearms(h: ControllerHarness) -> None:
    online(h, "t", {0: ([1, 2], 2)})
    zxid = h.zxid
    h.process(ReplicaLeaderElection())
    assert h.zxid == zxid
    assert h.gateway.watches.has_change(paths.PREFERRED_REPLICA_ELECTION)


def test_zk_trigger_elects_deletes_and_queues_the_rearm(h: ControllerHarness) -> None:
    online(h, "t", {0: ([1, 2], 2)})
    h.admin.create(
        paths.PREFERRED_REPLICA_ELECTION,
        json.dumps({"version": 1, "partitions": [{"topic": "t", "partition": 0}]}).encode(),
        makepath=True,
    )
    h.process(ReplicaLeaderElection())
    assert h.read(paths.PREFERRED_REPLICA_ELECTION) is None
    state = h.zk_state(tp("t", 0))
    assert state is not None and state.leader_and_isr.leader == 1
    # Our re-arm (Kafka's), and the deletion watch's event: each finds no znode and stops (a
    # request created in between is processed by the first and deleted, so only once).
    assert [type(e) for e in h.pending_events()] == [ReplicaLeaderElection] * 2
    h.drain()
    assert h.pending_events() == []


# -- ControlledShutdown ---------------------------------------------------------------------


def shutdown(h: ControllerHarness, broker: int, epoch: int) -> object:
    event = ControlledShutdown(broker_id=broker, broker_epoch=epoch)
    h.process(event)
    try:
        return event.reply.result(0)
    except ApiError as exc:
        return exc.error.name


def test_unknown_broker_is_not_available_whatever_the_epoch(h: ControllerHarness) -> None:
    # Kafka answers UNKNOWN_SERVER_ERROR when an epoch is given (its cache lookup throws).
    assert shutdown(h, 9, 3) == "BROKER_NOT_AVAILABLE"
    assert shutdown(h, 9, -1) == "BROKER_NOT_AVAILABLE"
    assert h.ctx.shutting_down_broker_ids == set()


def test_stale_epoch_only_when_lower(h: ControllerHarness) -> None:
    h.set_live_brokers([1, 2], epoch=10)
    assert shutdown(h, 1, 9) == "STALE_BROKER_EPOCH"
    assert h.ctx.shutting_down_broker_ids == set()
    assert shutdown(h, 1, 11) == set()
    assert h.ctx.shutting_down_broker_ids == {1}


def test_rf1_and_deleting_topics_are_not_acted_on(h: ControllerHarness) -> None:
    online(h, "one", {0: ([1], 1)})
    online(h, "gone", {0: ([1, 2], 1)})
    h.ctx.queue_topic_deletion(["gone"])
    zxid = h.zxid
    assert shutdown(h, 1, -1) == set()  # nothing with RF > 1 outside deleting topics
    assert h.zxid == zxid


def test_inactive_controller_refuses_controlled_shutdown(h: ControllerHarness) -> None:
    h.controller.active_controller_id = -1
    event = ControlledShutdown(broker_id=1, broker_epoch=-1)
    h.process(event)
    with pytest.raises(NotControllerError):
        event.reply.result(0)


# -- configuration reload -------------------------------------------------------------------


def config(**flags: str):  # type: ignore[no-untyped-def]
    return load_config(
        flags={"controller.id": "5", "zookeeper.connect": "localhost:2181", **flags}, env={}
    )


def test_reload_queues_unclean_enable_only_when_it_turns_on(h: ControllerHarness) -> None:
    off = config()
    on = config(**{"unclean.leader.election.enable": "true"})
    on_config_change(h.controller, off, on)
    assert [type(e) for e in h.pending_events()] == [UncleanLeaderElectionEnable]
    h.drain()
    on_config_change(h.controller, on, on)
    on_config_change(h.controller, on, off)
    assert h.pending_events() == []
    # The brokers' dynamic default prevails over the controller's own setting.
    h.controller.dynamic_unclean_default = False
    on_config_change(h.controller, off, on)
    assert h.pending_events() == []


def test_reload_restarts_the_rebalance_when_enabled_or_retimed(h: ControllerHarness) -> None:
    enabled = config()
    disabled = config(**{"auto.leader.rebalance.enable": "false"})
    retimed = config(**{"leader.imbalance.check.interval.seconds": "7"})
    on_config_change(h.controller, disabled, enabled)
    on_config_change(h.controller, enabled, retimed)
    on_config_change(h.controller, enabled, disabled)
    assert [type(e) for e in h.pending_events()] == [AutoPreferredReplicaLeaderElection] * 2


# -- /config/changes ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"version":2,"entity_path":"topics/orders"}', ("topics", "orders")),
        (b'{"version":2,"entity_path":"users/u/clients/c"}', ("users", "u/clients/c")),
        (b'{"version":1,"entity_type":"topics","entity_name":"orders"}', ("topics", "orders")),
    ],
)
def test_config_change_formats(data: bytes, expected: tuple[str, str]) -> None:
    assert codecs.decode_config_change(data, "/config/changes/config_change_0000000001") == expected


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"{oops", "invalid JSON"),
        (b"[]", "expected a JSON object"),
        (b'{"version":3,"entity_path":"topics/t"}', "a supported version (one of [1, 2])"),
        (b'{"version":2,"entity_path":"topics"}', "'entity_path': must be"),
        (b'{"version":2,"entity_path":"topics/"}', "empty entity"),
        (b'{"version":1,"entity_type":"topics"}', "entity_name"),
    ],
)
def test_malformed_config_changes_name_the_problem(data: bytes, problem: str) -> None:
    with pytest.raises(MalformedZnodeError) as raised:
        codecs.decode_config_change(data, "/config/changes/config_change_0000000001")
    assert problem in str(raised.value)
    assert raised.value.path == "/config/changes/config_change_0000000001"


def test_sequence_numbers_and_effective_setting() -> None:
    assert sequence_number("config_change_0000000042") == 42
    assert sequence_number("config_change_") is None
    assert sequence_number("something_else") is None
    assert unclean_enabled({}, True) is True
    assert unclean_enabled({"unclean.leader.election.enable": " True "}, False) is True
    assert unclean_enabled({"unclean.leader.election.enable": "false"}, True) is False


def notify(h: ControllerHarness, topic: str, entity_type: str = "topics") -> None:
    h.admin.create(
        f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}",
        json.dumps({"version": 2, "entity_path": f"{entity_type}/{topic}"}).encode(),
        sequential=True,
        makepath=True,
    )


def set_broker_default(h: ControllerHarness, data: bytes | None) -> None:
    """Write (or, with None, delete) /config/brokers/<default>."""
    path = paths.BROKER_DEFAULT_CONFIG
    if data is None:
        h.admin.delete(path)
    elif h.admin.exists(path) is None:
        h.admin.create(path, data, makepath=True)
    else:
        h.admin.set(path, data)


def unclean_enables(h: ControllerHarness) -> int:
    return sum(isinstance(e, UncleanLeaderElectionEnable) for e in h.pending_events())


def test_the_brokers_dynamic_default_overrides_the_controller_config() -> None:
    h = ControllerHarness(controller_id=5)  # unclean.leader.election.enable false
    try:
        h.register_broker(1)
        h.start()
        h.drain()
        ctl = h.controller
        assert (ctl.dynamic_unclean_default, ctl.unclean_leader_election_default) == (None, False)
        set_broker_default(h, b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}')
        notify(h, "1", "brokers")  # a per-broker entity: not the controller's business
        h.process(ConfigChangeNotification())
        assert unclean_enables(h) == 0 and ctl.dynamic_unclean_default is None
        notify(h, "<default>", "brokers")
        h.process(ConfigChangeNotification())
        assert unclean_enables(h) == 1
        assert ctl.unclean_leader_election_default is True
        h.drain()
        # Unreadable: what was known stays (neither enabling nor disabling behind one's back).
        set_broker_default(h, b'{"version":1,"config":{"unclean.leader.election.enable":true}}')
        notify(h, "<default>", "brokers")
        h.process(ConfigChangeNotification())
        set_broker_default(h, b'{"version":1,"config":{"unclean.leader.election.enable":"yes"}}')
        notify(h, "<default>", "brokers")
        h.process(ConfigChangeNotification())
        assert ctl.dynamic_unclean_default is True and unclean_enables(h) == 0
        # Off overrides the controller's own setting, and removing it falls back to that.
        set_broker_default(h, b'{"version":1,"config":{"unclean.leader.election.enable":"FALSE"}}')
        notify(h, "<default>", "brokers")
        h.process(ConfigChangeNotification())
        assert ctl.dynamic_unclean_default is False
        set_broker_default(h, None)
        notify(h, "<default>", "brokers")
        h.process(ConfigChangeNotification())
        assert (ctl.dynamic_unclean_default, ctl.unclean_leader_election_default) == (None, False)
        assert unclean_enables(h) == 0
    finally:
        h.close()


def test_the_brokers_dynamic_default_is_read_before_failover_elections() -> None:
    """t-0 [1, 2], ISR [1], broker 1 down: the failover's own offline election goes unclean
    because /config/brokers/<default> allows it, although the controller's config does not."""
    h = ControllerHarness(controller_id=5)
    try:
        h.register_broker(2)
        h.create_topic("t", {0: [1, 2]}, in_context=False)
        tp = TopicPartition("t", 0)
        h.write_partition_state(tp, leadership(1, [1], leader_epoch=3, controller_epoch=1))
        set_broker_default(h, b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}')
        h.start()
        h.drain()
        state = h.zk_state(tp)
        assert state is not None
        assert (state.leader_and_isr.leader, list(state.leader_and_isr.isr)) == (2, [2])
    finally:
        h.close()


@contextlib.contextmanager
def started_with_topic_t() -> Iterator[ControllerHarness]:
    """A started controller with broker 1 and topic t (found in ZooKeeper at failover)."""
    h = ControllerHarness(controller_id=5)
    try:
        h.register_broker(1)
        h.create_topic("t", {0: [1]}, in_context=False)
        h.start()
        h.drain()
        yield h
    finally:
        h.close()


def queued_unclean_topics(h: ControllerHarness) -> list[str]:
    return [e.topic for e in h.pending_events() if isinstance(e, TopicUncleanLeaderElectionEnable)]


def test_unclean_on_queues_an_event_for_every_read_of_the_topics_notifications() -> None:
    # As Kafka's enableTopicUncleanLeaderElection on every such notification. Remembering
    # "already on" went stale: a topic deleted and re-created with the setting, or one whose
    # default turned off and on again, was never elected.
    with started_with_topic_t() as h:
        h.set_topic_config("t", {"unclean.leader.election.enable": "true"})
        notify(h, "t")
        notify(h, "t")  # read together: one event
        h.process(ConfigChangeNotification())
        assert queued_unclean_topics(h) == ["t"]
        h.drain()
        notify(h, "t")  # still true, a later notification (e.g. after a re-creation): again
        h.process(ConfigChangeNotification())
        assert queued_unclean_topics(h) == ["t"]
        h.drain()
        h.set_topic_config("t", {"unclean.leader.election.enable": "false"})
        notify(h, "t")
        h.process(ConfigChangeNotification())
        assert queued_unclean_topics(h) == []


def test_a_notification_for_a_topic_the_controller_does_not_know_reads_nothing() -> None:
    # Its name is only the notification's text (any length; Kafka's controller never reads
    # config by it): an unknown topic has nothing to elect, so its config is not read.
    h = ControllerHarness(controller_id=5)
    try:
        h.register_broker(1)
        h.create_topic("known", {0: [1]}, in_context=False)
        h.start()
        h.drain()
        for topic in ("known", "unknown"):
            h.set_topic_config(topic, {"unclean.leader.election.enable": "true"})
            notify(h, topic)
        reads: list[str] = []
        # Records every batched read's paths (the rule never matches, so never acts).
        h.port.before("get_many", lambda: None, when=lambda p, *_: bool(reads.extend(p)))
        h.process(ConfigChangeNotification())
        queued = [e for e in h.pending_events() if isinstance(e, TopicUncleanLeaderElectionEnable)]
        assert [e.topic for e in queued] == ["known"]
        assert paths.topic_config_path("unknown") not in reads
        assert paths.topic_config_path("known") in reads
    finally:
        h.close()


def test_old_notifications_are_purged(monkeypatch: pytest.MonkeyPatch) -> None:
    h = ControllerHarness(controller_id=5)
    try:
        h.register_broker(1)
        notify(h, "a")  # present at failover
        h.start()
        h.drain()
        assert h.admin.get_children(paths.CONFIG_CHANGES) == ["config_change_0000000000"]
        monkeypatch.setattr(config_changes, "CHANGE_EXPIRATION_S", -1.0)
        notify(h, "b")
        h.process(ConfigChangeNotification())
        assert h.admin.get_children(paths.CONFIG_CHANGES) == []
    finally:
        h.close()


def test_notifications_are_read_after_their_node_is_recreated() -> None:
    # An operator's `deleteall /config/changes` restarts its sequence numbers at 0: the new
    # notifications must not be taken for ones already processed.
    with started_with_topic_t() as h:
        for _ in range(3):
            notify(h, "other")
            h.process(ConfigChangeNotification())
        h.drain()
        h.admin.delete(paths.CONFIG_CHANGES, recursive=True)
        h.set_topic_config("t", {"unclean.leader.election.enable": "true"})
        notify(h, "t")
        assert h.admin.get_children(paths.CONFIG_CHANGES) == ["config_change_0000000000"]
        h.process(ConfigChangeNotification())
        assert queued_unclean_topics(h) == ["t"]
