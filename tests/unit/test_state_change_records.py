"""What the controller records in the state-change log beyond Kafka's own lines, because the
analytics read cluster history from it: ISR changes made by brokers, and partitions found
offline by a new controller."""

from __future__ import annotations

import json
from dataclasses import replace

from controller.api.v1.controller_pb2 import (
    AlterPartitionPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopicData,
    BrokerState,
)
from controller.channel.sender import OutboundRequest, RequestKind
from controller.core.events import AlterPartitionReceived
from controller.core.model import LeaderIsrAndControllerEpoch, TopicPartition
from controller.zk import codecs, paths
from controller.zk.memory import MemoryZooKeeper
from tests.harness import ControllerHarness

T0 = TopicPartition("t", 0)


def _alter_isr(h: ControllerHarness, isr: list[int]) -> None:
    lai = h.ctx.partition_leader_and_isr(T0)
    assert lai is not None
    epochs = dict(h.ctx.live_broker_id_and_epochs())
    partition = AlterPartitionPartitionData(
        partition_index=0,
        leader_epoch=lai.leader_epoch,
        partition_epoch=lai.partition_epoch,
        new_isr_with_epochs=[BrokerState(broker_id=b, broker_epoch=-1) for b in isr],
    )
    request = AlterPartitionRequest(
        broker_id=lai.leader,
        broker_epoch=epochs[lai.leader],
        topics=[AlterPartitionTopicData(topic_name="t", partitions=[partition])],
    )
    event = AlterPartitionReceived(request=request)
    h.process(event)
    assert [p.error_code for t in event.reply.result(0).topics for p in t.partitions] == [0]


def _started_with_t_on_three_brokers() -> ControllerHarness:
    """An active controller, brokers 1-3, and topic t with partition 0 on all three."""
    h = ControllerHarness(controller_id=1, flags={"auto.leader.rebalance.enable": "false"})
    for b in (1, 2, 3):
        h.register_broker(b)
    h.create_topic("t", {0: [1, 2, 3]}, in_context=False)
    h.start()
    return h


def test_isr_changes_made_by_the_leader_are_recorded() -> None:
    h = _started_with_t_on_three_brokers()
    before = len(h.state_changes("partition", topic="t"))
    for _ in range(2):
        _alter_isr(h, [1, 2])
        _alter_isr(h, [1, 2, 3])
    recorded = h.state_changes("partition", topic="t")[before:]
    assert [r["isr"] for r in recorded] == [[1, 2], [1, 2, 3], [1, 2], [1, 2, 3]]
    assert {(r["from_state"], r["to_state"], r["leader"], r["election"]) for r in recorded} == {
        ("OnlinePartition", "OnlinePartition", 1, None)
    }
    assert {r["event"] for r in recorded} == {"AlterPartitionReceived"}


def test_isr_change_notifications_are_recorded_once_per_change() -> None:
    h = ControllerHarness(controller_id=1, flags={"auto.leader.rebalance.enable": "false"})
    for b in (1, 2):
        h.register_broker(b)
    h.create_topic("t", {0: [1, 2]}, in_context=False)
    h.start()
    before = len(h.state_changes("partition", topic="t"))
    state = h.zk_state(T0)
    assert state is not None
    shrunk = LeaderIsrAndControllerEpoch(
        replace(state.leader_and_isr, isr=(1,)), state.controller_epoch
    )
    h.admin.set(paths.partition_state_path("t", 0), codecs.encode_partition_state(shrunk))
    notification = paths.ISR_CHANGE_NOTIFICATION + "/isr_change_"
    for _ in range(2):  # the second notification changes nothing more
        h.admin.create(
            notification, codecs.encode_isr_change_notification([T0]), sequential=True
        )
        h.drain()
    recorded = h.state_changes("partition", topic="t")[before:]
    assert [(r["isr"], r["event"]) for r in recorded] == [([1], "IsrChangeNotification")]


def _controller_of_t(zk: MemoryZooKeeper) -> ControllerHarness:
    """Controller 1, active, with brokers 1 and 2 and topic t: t-0 on broker 1, t-1 on 2."""
    h = ControllerHarness(controller_id=1, zk=zk)
    h.register_broker(1)
    h.register_broker(2)
    h.create_topic("t", {0: [1], 1: [2]}, in_context=False)
    h.start()
    return h


def test_a_partition_a_new_controller_finds_leaderless_is_recorded_offline() -> None:
    # The old controller died with the partition's only replica: the new one finds the
    # partition without a live leader and cannot elect one. Without a record, the outage
    # would be missing from the log until the partition's next transition.
    zk = MemoryZooKeeper()
    old = _controller_of_t(zk)
    zk.expire(old.port.inner, reconnect=False)
    old.kill_broker(1)
    new = ControllerHarness(controller_id=2, zk=zk)
    new.broker_sessions = old.broker_sessions
    new.start()
    assert new.controller.is_active
    offline = new.state_changes("partition", to_state="OfflinePartition", result="ok")
    assert [(r["topic"], r["partition"], r["from_state"]) for r in offline] == [
        ("t", 0, "NonExistentPartition")
    ]
    assert offline[0]["event"] == "Startup" and offline[0]["election"] is None


def test_a_leaderless_partition_of_a_topic_being_deleted_is_not_recorded_offline() -> None:
    # Its deletion waits for its dead broker: the topic going away, not an outage (recorded
    # offline, it showed as hours of unavailability in the analytics).
    zk = MemoryZooKeeper()
    old = _controller_of_t(zk)
    old.kill_broker(1)
    old.drain()
    old.admin.create(paths.delete_topic_path("t"), makepath=True)
    old.drain()
    zk.expire(old.port.inner, reconnect=False)
    new = ControllerHarness(controller_id=2, zk=zk)
    new.broker_sessions = old.broker_sessions
    new.start()
    assert new.controller.is_active and new.ctx.is_topic_queued_up_for_deletion("t")
    assert new.state_changes("partition", from_state="NonExistentPartition",
                             to_state="OfflinePartition") == []  # fmt: skip


def _log_written_at_each_send(h: ControllerHarness) -> list[tuple[RequestKind, str]]:
    """From now on, what the state-change log has written out (no flush) at each send."""
    written: list[tuple[RequestKind, str]] = []
    send = h.channel.send

    def observed_send(broker_id: int, request: OutboundRequest, callback: object = None) -> None:
        written.append((request.kind, h.scl_stream.getvalue()))
        send(broker_id, request, callback)  # type: ignore[arg-type]

    h.channel.send = observed_send  # type: ignore[method-assign]
    return written


def test_a_change_is_written_out_before_brokers_are_told_of_it() -> None:
    # The end of the event is too late: a controller killed later in a long event (a big
    # failover, a slow ZooKeeper) would leave ZooKeeper changed and the log without the
    # change, and the analytics and the chaos checker read the log as the history.
    h = ControllerHarness(controller_id=1, flags={"auto.leader.rebalance.enable": "false"})
    for b in (1, 2):
        h.register_broker(b)
    h.create_topic("t", {p: [1, 2] for p in range(3)}, in_context=False)
    h.start()
    assert {h.ctx.partition_leader_and_isr(TopicPartition("t", p)).leader for p in range(3)} == {1}
    written_at_send = _log_written_at_each_send(h)
    h.kill_broker(1)
    h.drain()
    written = next(text for kind, text in written_at_send if kind is RequestKind.LEADER_AND_ISR)
    elections = [
        r for r in map(json.loads, written.splitlines())
        if r["event"] == "BrokerChange" and r["election"] == "offline"
    ]  # fmt: skip
    assert sorted((r["partition"], r["leader"], r["isr"]) for r in elections) == [
        (p, 2, [2]) for p in range(3)
    ]


def test_an_isr_change_is_written_out_before_brokers_are_told_of_it() -> None:
    h = _started_with_t_on_three_brokers()
    written_at_send = _log_written_at_each_send(h)
    _alter_isr(h, [1, 2])
    written = next(text for kind, text in written_at_send if kind is RequestKind.UPDATE_METADATA)
    last = json.loads(written.splitlines()[-1])
    assert (last["event"], last["topic"], last["isr"]) == ("AlterPartitionReceived", "t", [1, 2])


def test_a_new_controller_writes_out_its_election_before_loading_the_cluster() -> None:
    # The epoch is taken in ZooKeeper; a controller killed while loading a big cluster must
    # still leave its epoch in the log (the analytics count tenures from these lines).
    h = ControllerHarness(controller_id=1)
    h.register_broker(1)
    h.create_topic("t", {0: [1]}, in_context=False)
    written_at_load: list[str] = []
    h.port.before(
        "get_children",
        lambda: written_at_load.append(h.scl_stream.getvalue()),
        when=lambda path, *a: path == paths.BROKERS_TOPICS,
    )
    h.start()
    assert h.controller.is_active and written_at_load
    [elected] = map(json.loads, written_at_load[0].splitlines())
    assert (elected["kind"], elected["to_state"], elected["controller_epoch"]) == (
        "controller", "elected", h.ctx.epoch
    )
