"""The in-memory controller harness itself (``tests/harness``): what other suites rely on.

A real election and failover on the test thread, broker death seen through the watch on
``/brokers/ids``, broker responses feeding events back through the queue, the fault port,
and the "as if elected" shortcut.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.api.errors import Errors
from controller.channel.sender import RequestKind
from controller.core.events import BrokerChange, LeaderAndIsrResponseReceived
from controller.core.model import PartitionState, TopicPartition
from controller.zk import codecs, paths
from controller.zk.errors import ConnectionLossError, NoNodeError
from tests.harness import ControllerHarness, leadership, touches
from tests.harness.channel import make_broker

TP = TopicPartition("t", 0)


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = ControllerHarness(controller_id=1)
    yield harness
    harness.close()


def test_start_runs_a_real_election_and_failover(h: ControllerHarness) -> None:
    for broker in (1, 2, 3):
        h.register_broker(broker)
    h.create_topic("t", {0: [1, 2, 3]}, in_context=False)

    h.start()

    assert h.controller.is_active
    assert (h.ctx.epoch, h.ctx.epoch_zk_version) == (1, 1)
    assert codecs.decode_controller(h.read(paths.CONTROLLER)) == 1
    assert h.zk_state(TP) == leadership(1, (1, 2, 3), controller_epoch=1)
    assert h.ctx.partition_state(TP) is PartitionState.OnlinePartition
    assert h.channel.broker_ids() == {1, 2, 3}
    assert all(r.registered for r in h.channel.sent)
    assert [r["to_state"] for r in h.state_changes("controller")] == ["elected", "ready"]
    assert h.pending_events() == []


def test_a_dead_broker_is_noticed_through_its_registration_watch(h: ControllerHarness) -> None:
    for broker in (1, 2, 3):
        h.register_broker(broker)
    h.create_topic("t", {0: [2, 3]}, in_context=False)
    h.start()

    h.kill_broker(2)
    assert [type(e) for e in h.pending_events()] == [BrokerChange]
    h.drain()

    assert h.zk_state(TP) == leadership(
        3, (3,), leader_epoch=1, partition_epoch=1, controller_epoch=1
    )
    assert h.channel.broker_ids() == {1, 3}


def test_broker_responses_come_back_as_queued_events(h: ControllerHarness) -> None:
    for broker in (1, 2):
        h.register_broker(broker)
    h.create_topic("t", {0: [2, 1]}, in_context=False)
    h.start()
    [request] = h.channel.requests(2, RequestKind.LEADER_AND_ISR)

    request.respond(partition_errors={TP: Errors.KAFKA_STORAGE_ERROR})
    assert [type(e) for e in h.pending_events()] == [LeaderAndIsrResponseReceived]
    h.drain()

    # The replica on the failed log dir went offline: leadership moved to broker 1.
    assert h.ctx.replicas_on_offline_dirs == {2: {TP}}
    state = h.zk_state(TP)
    assert state is not None and state.leader_and_isr.leader == 1


def test_fault_port_fails_only_matching_calls_and_counts_calls(h: ControllerHarness) -> None:
    h.become_controller(epoch=7)
    h.port.fail("get_many", ConnectionLossError("injected"), when=touches("/nowhere"))
    assert isinstance(h.gateway.get_partition_states_raw([TP])[TP], NoNodeError)
    with pytest.raises(ConnectionLossError):
        h.port.get_many(["/nowhere"])
    h.port.get_many(["/nowhere"])  # the rule was used up
    assert h.port.calls["get_many"] == 3


def test_become_controller_sets_the_fencing_version(h: ControllerHarness) -> None:
    assert h.become_controller(epoch=50) == 0
    assert h.become_controller(epoch=50, epoch_zk_version=4) == 4
    assert (h.ctx.epoch, h.ctx.epoch_zk_version) == (50, 4)
    assert codecs.decode_controller_epoch(h.read(paths.CONTROLLER_EPOCH)) == 50
    assert h.elect_rival() == 51


def test_a_brokers_new_endpoint_and_rack_reach_every_broker_and_the_channel(
    h: ControllerHarness,
) -> None:
    """BrokerModifications (reference §2.4): a live broker rewrites its registration in the
    same session; every broker gets UpdateMetadata with it, and the controller's connection
    follows the new endpoint."""
    for broker in (1, 2):
        h.register_broker(broker)
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    h.start()
    epoch_2 = h.ctx.live_broker_id_and_epochs()[2]
    h.channel.clear()

    moved = make_broker(2, host="broker-2.new", rack="rack-b")
    registration = codecs.BrokerRegistration(2, moved.endpoints, moved.rack)
    h.broker_sessions[2].set(paths.broker_path(2), codecs.encode_broker_registration(registration))
    h.drain()

    assert h.ctx.live_or_shutting_down_broker(2) == moved
    assert h.ctx.live_broker_id_and_epochs()[2] == epoch_2  # not a bounce: same session
    channel_broker, channel_epoch = h.channel.brokers[2]
    assert (channel_broker, channel_epoch) == (moved, epoch_2)
    for recipient in (1, 2):
        [update] = h.channel.requests(recipient, RequestKind.UPDATE_METADATA)
        wire = {b.id: b for b in update.request.message.live_brokers}
        assert wire[2].rack == "rack-b"
        assert {e.host for e in wire[2].endpoints} == {"broker-2.new"}
    assert h.channel.requests(kind=RequestKind.LEADER_AND_ISR) == []


def test_a_rack_only_change_is_sent_at_once(h: ControllerHarness) -> None:
    """A deliberate difference from Kafka (operations.md): its processBrokerModification
    ignores a changed rack until the next metadata change; here every broker gets it now."""
    for broker in (1, 2):
        h.register_broker(broker)
    h.start()
    h.channel.clear()
    same = h.ctx.live_or_shutting_down_broker(2)
    assert same is not None
    registration = codecs.BrokerRegistration(2, same.endpoints, "rack-z")
    h.broker_sessions[2].set(paths.broker_path(2), codecs.encode_broker_registration(registration))
    h.drain()
    for recipient in (1, 2):
        [update] = h.channel.requests(recipient, RequestKind.UPDATE_METADATA)
        assert {b.id: b.rack for b in update.request.message.live_brokers}[2] == "rack-z"


def test_an_unchanged_registration_rewrite_sends_nothing(h: ControllerHarness) -> None:
    for broker in (1, 2):
        h.register_broker(broker)
    h.start()
    h.channel.clear()
    data = h.read(paths.broker_path(2))
    assert data is not None
    h.broker_sessions[2].set(paths.broker_path(2), data)
    h.drain()
    assert h.channel.sent == []
