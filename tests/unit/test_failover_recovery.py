"""The controller recovers from ZooKeeper trouble in and around its failover (in-memory
ZooKeeper with injected faults): nothing leaves it holding /controller without being in charge,
and nothing makes it give up being in charge while its session lives."""

from __future__ import annotations

import time

import pytest
from structlog.testing import capture_logs

from controller.core.events import Reelect
from controller.core.model import TopicPartition
from controller.handlers import failover
from controller.zk import codecs, paths
from controller.zk.errors import ConnectionLossError
from tests.harness import ControllerHarness


def _wait_for_reelect(h: ControllerHarness, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not any(isinstance(e, Reelect) for e in h.pending_events()):
        assert time.monotonic() < deadline, "no re-election was scheduled"
        time.sleep(0.01)


def _failover_failing_with_its_move() -> ControllerHarness:
    """Two brokers and topic t; the failover's read of /brokers/topics fails, and so does
    triggerControllerMove's read of /controller that follows it."""
    h = ControllerHarness(controller_id=1)
    h.register_broker(1)
    h.register_broker(2)
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    loss = ConnectionLossError("no reply")
    h.port.before(
        "get_children",
        lambda: h.port.fail("get", loss, when=lambda path, *a: path == paths.CONTROLLER),
        when=lambda path, *a: path == paths.BROKERS_TOPICS,
    )
    h.port.fail("get_children", loss, when=lambda path, *a: path == paths.BROKERS_TOPICS)
    return h


def test_a_failover_whose_controller_move_also_fails_is_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The failover fails, and so does triggerControllerMove's read of /controller: the
    # controller must still resign in memory and retry, not stay "active" with an empty
    # context while holding /controller (no standby could ever take over).
    monkeypatch.setattr(failover, "ELECTION_RETRY_BACKOFF_S", 0.05)
    h = _failover_failing_with_its_move()
    h.start()
    _wait_for_reelect(h)
    h.drain()
    assert h.controller.is_active and h.ctx.epoch == 1  # resumed at the epoch it won
    assert h.ctx.all_topics == {"t"}
    state = h.zk_state(TopicPartition("t", 0))
    assert state is not None and state.leader_and_isr.leader == 1


def test_our_own_controller_change_after_a_failed_move_takes_charge_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As above, but the ControllerChange queued by our own creation of /controller runs
    # before the retry: it finds /controller ours and must resume, not leave the controller
    # "active" with an empty context (answering brokers against it) until the retry.
    monkeypatch.setattr(failover, "ELECTION_RETRY_BACKOFF_S", 600.0)
    h = _failover_failing_with_its_move()
    h.tolerate_event_errors = True
    h.start()
    assert h.controller.is_active and h.ctx.epoch == 1
    assert h.ctx.all_topics == {"t"} and h.ctx.live_broker_ids() == {1, 2}


def test_a_suspended_connection_does_not_make_our_controller_node_foreign() -> None:
    # /controller's owner is compared with our session id; the session lives on while the
    # connection is down, so a drop right after reading the owner must not read as "another
    # session holds /controller" (the controller resigned in memory while its node stayed).
    h = ControllerHarness(controller_id=1)
    h.register_broker(1)
    h.start()
    gateway = h.controller.gateway
    read_owner = gateway.get_controller_owner_session

    def owner_then_drop() -> int | None:
        owner = read_owner()
        h.zk.disconnect(h.port.inner)
        return owner

    gateway.get_controller_owner_session = owner_then_drop  # type: ignore[method-assign]
    try:
        h.controller.election.maybe_resign()
    finally:
        gateway.get_controller_owner_session = read_owner  # type: ignore[method-assign]
        h.zk.reconnect(h.port.inner)
    h.drain()
    assert h.controller.is_active and h.ctx.epoch == 1
    h.register_broker(2)
    h.drain()
    assert h.ctx.live_broker_ids() == {1, 2}


@pytest.mark.parametrize(
    "parent", [paths.ISR_CHANGE_NOTIFICATION, paths.LOG_DIR_EVENT_NOTIFICATION]
)
def test_a_notification_that_cannot_be_deleted_does_not_stop_the_failover(parent: str) -> None:
    # Kafka deletes pending notifications at failover without checking the results (only the
    # controller epoch): a node with a child of its own (or no DELETE permission) stays.
    h = ControllerHarness(controller_id=5)
    h.register_broker(1)
    h.register_broker(2)
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    h.admin.ensure_path(parent)
    node = parent + "/notification_0000000000"
    h.admin.create(node, b"{}")
    h.admin.create(node + "/child", b"")
    h.start()
    assert h.controller.is_active
    assert codecs.decode_controller_epoch(h.read(paths.CONTROLLER_EPOCH) or b"") == 1
    assert h.zk_state(TopicPartition("t", 0)) is not None
    assert h.read(node) == b"{}"


def test_a_preferred_election_request_deleted_by_hand_during_a_failover_keeps_the_watch() -> None:
    # Failover step 2 arms the request node's watch; the operator deletes the node before
    # step 12 reads it. The deletion used the watch up: a later request went unseen until the
    # next failover (found by a simulator prototype).
    h = ControllerHarness(controller_id=1)
    h.register_broker(1)
    h.register_broker(2)
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    request = codecs.encode_preferred_replica_election([TopicPartition("t", 0)])
    h.admin.create(paths.PREFERRED_REPLICA_ELECTION, request, makepath=True)
    h.port.before(
        "get_children",
        lambda: h.admin.delete(paths.PREFERRED_REPLICA_ELECTION),
        when=lambda path, *a: path == paths.ISR_CHANGE_NOTIFICATION,
    )
    h.start()
    assert h.controller.is_active and h.read(paths.PREFERRED_REPLICA_ELECTION) is None
    h.admin.create(paths.PREFERRED_REPLICA_ELECTION, request)
    h.drain()
    assert h.read(paths.PREFERRED_REPLICA_ELECTION) is None  # seen, processed, deleted


@pytest.mark.parametrize("depth", [1, 1000], ids=["child", "chain-1000-deep"])
@pytest.mark.parametrize("request_node", ["preferred election", "topic deletion"])
def test_a_stray_child_under_a_request_znode_does_not_fail_every_failover(
    request_node: str, depth: int
) -> None:
    # Someone creates a znode under a request (a typo, a script using the wrong path). Kafka
    # sends one delete and ignores the result; a strict delete raised NotEmpty at failover,
    # which then failed, moved the controller and re-elected itself every 2 s for ever.
    flags = {"delete.topic.enable": "false"} if request_node == "topic deletion" else {}
    h = ControllerHarness(controller_id=1, flags=flags)
    h.register_broker(1)
    h.register_broker(2)
    h.create_topic("t", {0: [2, 1]}, in_context=False)
    node = (
        paths.PREFERRED_REPLICA_ELECTION
        if request_node == "preferred election"
        else paths.delete_topic_path("t")
    )
    data = codecs.encode_preferred_replica_election([TopicPartition("t", 0)])
    h.admin.create(node, data if request_node == "preferred election" else b"", makepath=True)
    stray = node
    for _ in range(depth):  # a chain past Python's recursion limit, too
        stray += "/stray"
        h.admin.create(stray, b"")
    h.start()
    h.drain()
    assert h.controller.is_active and h.controller.event_errors == 0
    assert h.read(node) is None  # the request was handled and removed, stray child and all
    assert h.read(paths.topic_path("t")) is not None  # deletion disabled: the topic stays


def test_a_stray_child_under_the_preferred_election_request_does_not_fail_its_event() -> None:
    h = ControllerHarness(controller_id=1)
    h.register_broker(1)
    h.register_broker(2)
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    h.start()
    h.drain()
    h.admin.create(
        paths.PREFERRED_REPLICA_ELECTION,
        codecs.encode_preferred_replica_election([TopicPartition("t", 0)]),
    )
    h.admin.create(f"{paths.PREFERRED_REPLICA_ELECTION}/stray", b"")
    h.drain()
    assert h.controller.event_errors == 0
    assert h.read(paths.PREFERRED_REPLICA_ELECTION) is None
    # The request node is free again: a later request is seen and handled.
    h.admin.create(
        paths.PREFERRED_REPLICA_ELECTION,
        codecs.encode_preferred_replica_election([TopicPartition("t", 0)]),
    )
    h.drain()
    assert h.read(paths.PREFERRED_REPLICA_ELECTION) is None


@pytest.mark.parametrize("ephemeral", [True, False], ids=["ephemeral", "persistent"])
def test_a_controller_node_gone_before_its_watch_is_re_armed_is_still_an_election(
    ephemeral: bool,
) -> None:
    # /controller changes (an operator repairs a malformed node, say) and is deleted before
    # the standby has re-armed the watch that fired: ZooKeeper reports no deletion, and
    # Kafka's ControllerChange only resigns. The standby must run for election anyway.
    h = ControllerHarness(controller_id=1)
    h.register_broker(1)
    rival = h.zk.open_session()
    rival.create(paths.CONTROLLER, codecs.encode_controller(7, 0), ephemeral=ephemeral)
    h.start()
    h.drain()
    assert not h.controller.is_active and h.controller.active_controller_id == 7
    rival.set(paths.CONTROLLER, codecs.encode_controller(8, 0))
    rival.delete(paths.CONTROLLER)  # before the standby processes the notification
    h.drain()
    assert h.controller.is_active, "nobody holds /controller and the standby did not run"
    assert codecs.decode_controller(h.read(paths.CONTROLLER)) == 1
    h.close()


def test_a_resigned_controller_keeps_no_broker_or_config_change_watch() -> None:
    # A controller that resigns with its session alive watches only /controller: its broker
    # modification handlers go, also those of an unreadable registration (watched so that a
    # repair brings the broker in), and so does the /config/changes child handler. Left
    # registered, their watches kept queueing events a standby ignores.
    a = ControllerHarness(controller_id=1)
    b = ControllerHarness(controller_id=2, zk=a.zk)
    a.register_broker(11)
    broker12 = a.zk.open_session()
    broker12.create(paths.broker_path(12), b"{not json", ephemeral=True)
    a.start()
    b.start()
    watches = a.gateway.watches
    assert watches.has_change(paths.broker_path(12)) and watches.has_child(paths.CONFIG_CHANGES)
    a.admin.delete(paths.CONTROLLER)  # b takes over; a resigns
    b.drain()
    a.drain()
    assert b.controller.is_active and not a.controller.is_active
    for path in (paths.broker_path(11), paths.broker_path(12)):
        assert not watches.has_change(path), path
    assert not watches.has_child(paths.CONFIG_CHANGES)
    broker12.set(paths.broker_path(12), b"{still not json")
    a.admin.create(
        f"{paths.CONFIG_CHANGES}/config_change_0000000000",
        codecs.encode_config_change("topics", "x"),
        makepath=True,
    )
    assert a.pending_events() == []


def _stale_epoch_under_our_controller_node() -> ControllerHarness:
    """An active controller whose /controller_epoch was written by hand: /controller is still
    ours, every fenced write fails. A new topic without an id makes the next event write."""
    h = ControllerHarness(controller_id=1)
    h.register_broker(1)
    h.start()
    h.drain()
    assert h.controller.is_active and h.ctx.epoch == 1
    h.elect_rival()  # /controller_epoch: 2, /controller: still ours
    h.create_topic("t", {0: [1]}, in_context=False)
    return h


def test_a_stale_epoch_under_our_controller_node_resigns_and_re_elects() -> None:
    h = _stale_epoch_under_our_controller_node()
    h.drain()
    assert h.controller.is_active and h.ctx.epoch == 3  # the election read the epoch again
    assert h.ctx.all_topics == {"t"} and h.ctx.topic_ids.get("t")


def test_an_epoch_written_by_hand_during_the_failover_resigns_and_re_elects() -> None:
    # The epoch moves between the election and the failover's first fenced write (the id
    # given to a topic without one): the controller used to stay "active" with the failover
    # half done (no watches, no topics) until its session ended.
    h = ControllerHarness(controller_id=1)
    h.register_broker(1)
    h.create_topic("t", {0: [1]}, in_context=False)  # no topic id
    h.port.before(
        "get_children", h.elect_rival, when=lambda path, *a: path == paths.BROKERS_TOPICS
    )
    with capture_logs() as logs:
        h.start()
        h.drain()
    assert any(e["event"].startswith("the controller epoch znode changed") for e in logs)
    assert h.controller.is_active and h.ctx.epoch == 3  # the election read the epoch again
    assert h.ctx.all_topics == {"t"} and h.ctx.topic_ids.get("t")
    assert codecs.decode_controller_epoch(h.read(paths.CONTROLLER_EPOCH)) == 3


def test_a_failed_give_up_of_our_controller_node_is_logged_and_resigned() -> None:
    h = _stale_epoch_under_our_controller_node()
    h.port.fail("delete", ConnectionLossError(), when=lambda path, *a: path == paths.CONTROLLER)
    with capture_logs() as logs:
        h.drain()
    assert not h.controller.is_active
    assert h.read(paths.CONTROLLER) is not None
    assert any(
        e["event"].startswith("could not give up /controller") and e["log_level"] == "error"
        for e in logs
    )
