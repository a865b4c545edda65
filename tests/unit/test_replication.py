"""The reference broker's replication rules (controller.broker.replication) and its
AlterPartition manager (controller.broker.isr_manager), without gRPC: a fake clock, a
recording manager, a scripted controller. End to end: tests/integration/test_isr_changes.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import grpc
import pytest

from controller.admin.controller_client import (
    ControllerAccessDeniedError,
    ControllerTlsMismatchError,
    NoActiveControllerError,
)
from controller.api.errors import Errors
from controller.api.v1 import broker_pb2, controller_pb2
from controller.broker.isr_manager import AlterPartitionItem, AlterPartitionManager
from controller.broker.replication import Replication, ReplicationConfig
from controller.broker.state import ReplicaState
from controller.core.model import LeaderAndIsr, LeaderRecoveryState, TopicPartition
from tests.support import wait_until

TP = TopicPartition("t", 0)
TID = "AAAAAAAAAAAAAAAAAAAAAQ"
LAG = 1000


class RecordingManager:
    """Stands in for AlterPartitionManager: keeps what the leader submits."""

    def __init__(self) -> None:
        self.items: list[AlterPartitionItem] = []

    def submit(self, item: AlterPartitionItem) -> bool:
        self.items.append(item)
        return True

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def leader_and_isr(
    state: ReplicaState,
    *,
    leader: int = 1,
    leader_epoch: int = 0,
    isr: tuple[int, ...] = (1, 2, 3),
    replicas: tuple[int, ...] = (1, 2, 3),
    partition_epoch: int = 0,
    recovery: int = 0,
    topic_id: str = TID,
) -> None:
    response = state.leader_and_isr(
        broker_pb2.LeaderAndIsrRequest(
            controller_id=9,
            controller_epoch=1,
            broker_epoch=-1,
            topic_states=[
                broker_pb2.LeaderAndIsrTopicState(
                    topic_name=TP.topic,
                    topic_id=topic_id,
                    partition_states=[
                        broker_pb2.LeaderAndIsrPartitionState(
                            partition_index=TP.partition,
                            controller_epoch=1,
                            leader=leader,
                            leader_epoch=leader_epoch,
                            isr=isr,
                            partition_epoch=partition_epoch,
                            replicas=replicas,
                            leader_recovery_state=recovery,
                        )
                    ],
                )
            ],
            live_leaders=[
                broker_pb2.LeaderAndIsrLiveLeader(
                    broker_id=leader, host_name="h", port=9000 + leader
                )
            ],
        )
    )
    assert response.topics[0].partition_errors[0].error_code == Errors.NONE


def live_brokers(state: ReplicaState, *ids: int) -> None:
    state.update_metadata(
        broker_pb2.UpdateMetadataRequest(
            controller_id=9,
            controller_epoch=1,
            broker_epoch=-1,
            live_brokers=[
                broker_pb2.UpdateMetadataBroker(
                    id=b,
                    endpoints=[
                        broker_pb2.UpdateMetadataEndpoint(
                            port=9000 + b, host="m", listener="PLAINTEXT"
                        )
                    ],
                )
                for b in ids
            ],
        )
    )


def fetch(
    replication: Replication,
    replica: int,
    epoch: int = 0,
    *,
    topic_id: str = TID,
    partition: int = 0,
    replica_epoch: int = 200,
) -> tuple[int, int]:
    response = replication.handle_fetch(
        broker_pb2.FetchRequest(
            replica_id=replica,
            replica_epoch=replica_epoch,
            topics=[
                broker_pb2.FetchTopic(
                    topic_name=TP.topic,
                    topic_id=topic_id,
                    partitions=[
                        broker_pb2.FetchPartition(
                            partition_index=partition, current_leader_epoch=epoch
                        )
                    ],
                )
            ],
        )
    )
    p = response.topics[0].partitions[0]
    return p.error_code, p.leader_epoch


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def manager() -> RecordingManager:
    return RecordingManager()


@pytest.fixture
def leader(clock: Clock, manager: RecordingManager) -> Replication:
    """Broker 1 leads t-0 ([1,2,3], ISR [1,2,3], epochs 0/0); brokers 1-4 are alive."""
    state = ReplicaState(1, broker_epoch=100)
    leader_and_isr(state)
    live_brokers(state, 1, 2, 3, 4)
    config = ReplicationConfig(replica_lag_time_max_ms=LAG)
    return Replication(state, config, manager, clock_ms=clock)  # type: ignore[arg-type]


# -- the leader's answers to fetches ---------------------------------------------------------


def test_fetch_at_the_leader_epoch_from_a_replica_is_accepted(leader, manager):
    assert fetch(leader, 2) == (Errors.NONE, 0)
    assert manager.items == []  # already in the ISR


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"epoch": -1}, Errors.FENCED_LEADER_EPOCH),
        ({"epoch": 1}, Errors.UNKNOWN_LEADER_EPOCH),
        ({"partition": 5}, Errors.UNKNOWN_TOPIC_OR_PARTITION),
        ({"topic_id": "AAAAAAAAAAAAAAAAAAAAAg"}, Errors.INCONSISTENT_TOPIC_ID),
    ],
)
def test_fetch_errors(leader, kwargs, error):
    assert fetch(leader, 2, **kwargs)[0] == error


def test_fetch_from_a_non_replica_or_to_a_follower_is_not_leader_or_follower(leader):
    assert fetch(leader, 4) == (Errors.NOT_LEADER_OR_FOLLOWER, 0)
    leader_and_isr(leader.state, leader=2, leader_epoch=1)  # broker 1 now follows
    assert fetch(leader, 3, 1) == (Errors.NOT_LEADER_OR_FOLLOWER, 1)


def test_fetch_of_a_partition_on_a_failed_dir_is_a_storage_error(leader):
    leader.state.fail_log_dir([TP])
    assert fetch(leader, 2) == (Errors.KAFKA_STORAGE_ERROR, -1)


@pytest.mark.parametrize("replica", [-1, 1])
def test_fetch_from_an_impossible_replica_is_an_invalid_request(leader, replica):
    response = leader.handle_fetch(broker_pb2.FetchRequest(replica_id=replica))
    assert (response.error_code, list(response.topics)) == (Errors.INVALID_REQUEST, [])


# -- expansion -------------------------------------------------------------------------------


def test_a_fetching_follower_outside_the_isr_is_proposed(leader, manager):
    leader_and_isr(leader.state, leader_epoch=1, isr=(1, 2), partition_epoch=4)
    assert fetch(leader, 3, 1, replica_epoch=333) == (Errors.NONE, 1)
    [item] = manager.items
    assert (item.tp, item.topic_id, item.leader_epoch, item.partition_epoch) == (TP, TID, 1, 4)
    # Appended at the end, with the broker epochs the leader knows (its own; 3's from its
    # fetch; -1 for 2, which has not fetched since this leader epoch began).
    assert item.isr == ((1, 100), (2, -1), (3, 333))
    assert item.leader_recovery_state is LeaderRecoveryState.RECOVERED
    # One change at a time: nothing more while it is in flight.
    fetch(leader, 3, 1)
    assert len(manager.items) == 1


def test_a_change_the_manager_refuses_is_proposed_again(leader, manager):
    """The manager refuses a change while one of an earlier leader epoch is still queued; the
    leader must not wait for an answer that never comes (every later ISR change of the
    partition would wait with it)."""
    leader_and_isr(leader.state, leader_epoch=1, isr=(1, 2), partition_epoch=4)
    refused: list[AlterPartitionItem] = []
    accept = manager.submit
    manager.submit = lambda item: refused.append(item) or False  # type: ignore[method-assign]
    fetch(leader, 3, 1)
    assert len(refused) == 1 and manager.items == []
    assert leader.leader_view(TP)["pending"] is None
    manager.submit = accept  # type: ignore[method-assign]
    fetch(leader, 3, 1)
    [item] = manager.items
    assert item.isr == ((1, 100), (2, -1), (3, 200))


def test_a_fetch_racing_an_applied_answer_proposes_from_the_committed_row(
    leader, manager, monkeypatch
):
    """The answer to an earlier change lands between the fetch's first read of the partition
    and its proposal: the proposal must start from the committed ISR and partition epoch
    (a stale one is refused with INVALID_UPDATE_VERSION and freezes the partition)."""
    leader_and_isr(
        leader.state, leader_epoch=1, isr=(1, 2), replicas=(1, 2, 3, 4), partition_epoch=4
    )
    fetch(leader, 3, 1)
    [first] = manager.items
    read = leader.state.hosted
    answered: list[bool] = []

    def read_then_answer(tp):
        row = read(tp)
        if not answered:  # the controller's answer arrives right after this read
            answered.append(first.callback(LeaderAndIsr(1, 1, (1, 2, 3), partition_epoch=5)))
        return row

    monkeypatch.setattr(leader.state, "hosted", read_then_answer)
    fetch(leader, 4, 1)
    assert answered == [False] and leader.state.hosted(TP).isr == (1, 2, 3)
    second = manager.items[-1]
    assert [b for b, _ in second.isr] == [1, 2, 3, 4]
    assert second.partition_epoch == 5


def test_a_follower_missing_from_the_metadata_cache_is_not_proposed(leader, manager):
    leader_and_isr(leader.state, leader_epoch=1, isr=(1, 2))
    live_brokers(leader.state, 1, 2)
    fetch(leader, 3, 1)
    assert manager.items == []


def test_a_recovering_partition_is_proposed_as_recovered(leader, manager):
    leader_and_isr(leader.state, leader_epoch=1, isr=(1,), recovery=1)
    fetch(leader, 2, 1)
    assert manager.items[0].leader_recovery_state is LeaderRecoveryState.RECOVERED


# -- shrinking -------------------------------------------------------------------------------


def test_isr_members_that_stop_fetching_are_removed_after_the_lag(leader, manager, clock):
    # Taking over counts as caught up: nothing to remove for a full lag.
    assert leader.maybe_shrink_isr() == []
    clock.now += LAG
    fetch(leader, 2)
    assert leader.maybe_shrink_isr() == []  # exactly the lag is still in sync
    clock.now += 1
    assert leader.maybe_shrink_isr() == [TP]
    [item] = manager.items
    assert [b for b, _ in item.isr] == [1, 2]
    assert leader.maybe_shrink_isr() == []  # in flight


def test_the_lag_counts_from_becoming_leader(clock, manager):
    # As Kafka's makeLeader: not from the first expiration round or fetch after it, which
    # let a member that never fetched stay in the ISR for up to twice the lag.
    state = ReplicaState(1, broker_epoch=100)
    live_brokers(state, 1, 2, 3, 4)
    replication = Replication(
        state, ReplicationConfig(replica_lag_time_max_ms=LAG), manager, clock_ms=clock  # type: ignore[arg-type]
    )
    leader_and_isr(state)  # broker 1 leads t-0, ISR [1, 2, 3]
    clock.now += LAG / 2
    assert replication.maybe_shrink_isr() == []  # the first round: nobody is behind yet
    fetch(replication, 2)
    clock.now += LAG / 2 + 1  # the lag and a millisecond since becoming leader
    assert replication.maybe_shrink_isr() == [TP]
    assert [b for b, _ in manager.items[0].isr] == [1, 2]  # 3 never fetched


def test_a_new_leader_epoch_starts_the_lag_afresh(leader, manager, clock):
    clock.now += LAG + 1
    leader_and_isr(leader.state, leader_epoch=1)
    assert leader.maybe_shrink_isr() == []
    clock.now += LAG + 1
    assert leader.maybe_shrink_isr() == [TP]
    assert [b for b, _ in manager.items[0].isr] == [1]


def test_a_topic_created_again_starts_its_bookkeeping_afresh(leader, manager, clock):
    # The old topic's shrink is answered UNKNOWN_TOPIC_ID after its deletion; the topic is
    # created again at leader epoch 0 under a new id: a fresh partition, as Kafka makes one
    # (the old bookkeeping froze the new topic's ISR changes).
    assert leader.maybe_shrink_isr() == []
    clock.now += LAG + 1
    fetch(leader, 2)
    assert leader.maybe_shrink_isr() == [TP]
    [old_change] = manager.items
    deletion = broker_pb2.StopReplicaPartitionState(
        partition_index=TP.partition, leader_epoch=-2, delete_partition=True
    )
    leader.state.stop_replica(
        broker_pb2.StopReplicaRequest(
            controller_id=9, controller_epoch=1, broker_epoch=-1,
            topic_states=[
                broker_pb2.StopReplicaTopicState(topic_name=TP.topic, partition_states=[deletion])
            ],
        )
    )  # fmt: skip
    old_change.callback(Errors.UNKNOWN_TOPIC_ID)
    new_id = "AAAAAAAAAAAAAAAAAAAAAg"
    leader_and_isr(leader.state, topic_id=new_id)
    assert leader.maybe_shrink_isr() == []  # taking over counts as caught up
    assert leader.leader_view(TP)["frozen_by"] is None
    clock.now += LAG + 1
    fetch(leader, 2, topic_id=new_id)
    assert leader.maybe_shrink_isr() == [TP]
    assert [b for b, _ in manager.items[-1].isr] == [1, 2]


def test_a_topic_id_given_at_the_same_epoch_keeps_the_change_in_flight(clock, manager):
    # A controller assigning ids at failover re-sends LeaderAndIsr at the same leader epoch
    # with the id: the same partition (Kafka only assigns the id to its log), so the answer
    # to the ISR change in flight still applies.
    state = ReplicaState(1, broker_epoch=100)
    leader_and_isr(state, topic_id="")
    live_brokers(state, 1, 2, 3, 4)
    replication = Replication(
        state, ReplicationConfig(replica_lag_time_max_ms=LAG), manager, clock_ms=clock  # type: ignore[arg-type]
    )
    assert replication.maybe_shrink_isr() == []
    clock.now += LAG + 1
    fetch(replication, 2, topic_id="")
    assert replication.maybe_shrink_isr() == [TP]
    [change] = manager.items
    leader_and_isr(state, topic_id=TID)
    fetch(replication, 2)
    change.callback(LeaderAndIsr(1, 0, (1, 2), LeaderRecoveryState.RECOVERED, 1))
    hosted = state.hosted(TP)
    assert hosted is not None and (hosted.isr, hosted.partition_epoch) == ((1, 2), 1)


# -- answers ---------------------------------------------------------------------------------


def expand(leader: Replication, manager: RecordingManager) -> AlterPartitionItem:
    leader_and_isr(leader.state, leader_epoch=1, isr=(1, 2), partition_epoch=4)
    fetch(leader, 3, 1)
    return manager.items[-1]


def test_success_is_applied_to_the_partition_table(leader, manager):
    item = expand(leader, manager)
    assert item.callback(LeaderAndIsr(1, 1, (1, 2, 3), LeaderRecoveryState.RECOVERED, 5)) is False
    hosted = leader.state.hosted(TP)
    assert (hosted.isr, hosted.partition_epoch, hosted.leader_epoch) == ((1, 2, 3), 5, 1)
    assert leader.leader_view(TP)["pending"] is None


def test_ineligible_replica_returns_to_the_committed_state(leader, manager):
    item = expand(leader, manager)
    assert item.callback(Errors.INELIGIBLE_REPLICA) is False
    assert leader.state.hosted(TP).isr == (1, 2)
    fetch(leader, 3, 1)  # may propose again
    assert len(manager.items) == 2


@pytest.mark.parametrize(
    "error", [Errors.FENCED_LEADER_EPOCH, Errors.INVALID_UPDATE_VERSION, Errors.INVALID_REQUEST]
)
def test_refusals_freeze_the_partition_until_the_next_leader_and_isr(leader, manager, error):
    item = expand(leader, manager)
    assert item.callback(error) is False
    assert leader.leader_view(TP)["frozen_by"] == error.name
    fetch(leader, 3, 1)
    assert len(manager.items) == 1
    leader_and_isr(leader.state, leader_epoch=2, isr=(1, 2), partition_epoch=6)
    fetch(leader, 3, 2)
    assert len(manager.items) == 2 and manager.items[-1].partition_epoch == 6


@pytest.mark.parametrize("error", [Errors.NOT_CONTROLLER, Errors.UNKNOWN_SERVER_ERROR])
def test_other_errors_send_the_same_change_again(leader, manager, error):
    item = expand(leader, manager)
    assert item.callback(error) is True
    assert leader.leader_view(TP)["pending"] == [1, 2, 3]


def test_an_answer_for_a_partition_that_moved_on_is_ignored(leader, manager):
    item = expand(leader, manager)
    leader_and_isr(leader.state, leader_epoch=2, isr=(1, 2), partition_epoch=6)
    assert item.callback(LeaderAndIsr(1, 1, (1, 2, 3), partition_epoch=5)) is False
    hosted = leader.state.hosted(TP)
    assert (hosted.isr, hosted.partition_epoch) == ((1, 2), 6)


def test_a_success_older_than_the_table_is_ignored_and_freezes(leader, manager):
    item = expand(leader, manager)
    assert item.callback(LeaderAndIsr(1, 1, (1, 2, 3), partition_epoch=3)) is False
    assert leader.state.hosted(TP).partition_epoch == 4
    assert leader.leader_view(TP)["frozen_by"] is not None


# -- the follower's side ---------------------------------------------------------------------


def test_followed_partitions_exclude_stopped_failed_and_leaderless_ones():
    state = ReplicaState(2, broker_epoch=200)
    leader_and_isr(state)
    assert state.followed_partitions() == [(TP, TID, 1, 0)]
    assert state.leader_address(1, "PLAINTEXT") == "h:9001"  # from live_leaders
    state.fail_log_dir([TP])
    assert state.followed_partitions() == []
    state = ReplicaState(2, broker_epoch=200)
    leader_and_isr(state, leader=-1)
    assert state.followed_partitions() == []


def test_leader_address_falls_back_to_the_metadata_cache():
    state = ReplicaState(2, broker_epoch=200)
    live_brokers(state, 1, 3)
    assert state.leader_address(3, "PLAINTEXT") == "m:9003"
    assert state.leader_address(3, "OTHER") is None
    assert state.leader_address(4, "PLAINTEXT") is None


def test_a_leader_endpoint_changed_by_update_metadata_is_used():
    """A leader that changes its endpoint in place (setData on its registration) is announced
    by UpdateMetadata only; the follower must not keep the LeaderAndIsr address."""
    state = ReplicaState(2, broker_epoch=200)
    leader_and_isr(state, leader=1, isr=(1, 2), replicas=(1, 2))  # live_leaders: h:9001
    assert state.leader_address(1, "PLAINTEXT") == "h:9001"  # not in the cache yet
    live_brokers(state, 1, 2)
    assert state.leader_address(1, "PLAINTEXT") == "m:9001"


# -- AlterPartitionManager -------------------------------------------------------------------


class ScriptedController:
    """Answers AlterPartition requests from a script of callables (request -> response)."""

    def __init__(self, *script: Callable[[controller_pb2.AlterPartitionRequest], object]) -> None:
        self.script = list(script)
        self.requests: list[controller_pb2.AlterPartitionRequest] = []
        self.times: list[float] = []  # monotonic, when each request arrived
        self.done = threading.Event()

    def __call__(self, request: controller_pb2.AlterPartitionRequest) -> object:
        self.times.append(time.monotonic())
        self.requests.append(request)
        step = self.script.pop(0) if self.script else None
        if not self.script:
            self.done.set()
        if step is None:
            raise grpc.RpcError()
        return step(request)


def answer(request: controller_pb2.AlterPartitionRequest) -> controller_pb2.AlterPartitionResponse:
    """A controller accepting every proposal at partition epoch + 1."""
    response = controller_pb2.AlterPartitionResponse(error_code=Errors.NONE)
    for t in request.topics:
        out = response.topics.add(topic_id=t.topic_id, topic_name=t.topic_name or "t")
        for p in t.partitions:
            out.partitions.add(
                partition_index=p.partition_index,
                leader_id=request.broker_id,
                leader_epoch=p.leader_epoch,
                isr=[m.broker_id for m in p.new_isr_with_epochs],
                partition_epoch=p.partition_epoch + 1,
            )
    return response


def transport_error(request: object) -> object:
    raise grpc.RpcError()


def top_level(error: Errors) -> Callable[[object], controller_pb2.AlterPartitionResponse]:
    return lambda request: controller_pb2.AlterPartitionResponse(error_code=error)


def item(tp: TopicPartition, results: list, topic_id: str = TID) -> AlterPartitionItem:
    return AlterPartitionItem(
        tp=tp,
        topic_id=topic_id,
        leader_epoch=3,
        isr=((1, 100), (2, -1)),
        leader_recovery_state=LeaderRecoveryState.RECOVERED,
        partition_epoch=7,
        callback=lambda r: results.append(r) or False,
    )


def run_manager(controller: ScriptedController, epochs: list[int], *items: AlterPartitionItem):
    manager = AlterPartitionManager(1, lambda: epochs[0], controller, retry_backoff_s=0.01)
    try:
        # Queued before the sender starts, so they go out in one request however the
        # threads are scheduled (a loaded machine could otherwise send the first alone).
        for i in items:
            assert manager.submit(i)
        manager.start()
        assert controller.done.wait(5)
        wait_until(lambda: not manager.pending(), timeout=5, what="every item answered")
    finally:
        manager.stop()
    return manager


def test_manager_resends_after_transport_and_top_level_errors_with_the_current_epoch():
    epochs = [100]

    def stale(request: object) -> controller_pb2.AlterPartitionResponse:
        epochs[0] = 101  # the broker re-registered meanwhile
        return controller_pb2.AlterPartitionResponse(error_code=Errors.STALE_BROKER_EPOCH)

    controller = ScriptedController(
        transport_error, top_level(Errors.NOT_CONTROLLER), stale, answer
    )
    results: list = []
    run_manager(controller, epochs, item(TP, results))
    assert [r.broker_epoch for r in controller.requests] == [100, 100, 100, 101]
    assert results == [LeaderAndIsr(1, 3, (1, 2), LeaderRecoveryState.RECOVERED, 8)]


def test_manager_batches_and_matches_answers_by_id_or_name():
    by_name = TopicPartition("u", 2)
    results_t: list = []
    results_u: list = []
    controller = ScriptedController(answer)
    run_manager(controller, [100], item(TP, results_t), item(by_name, results_u, topic_id=""))
    [request] = controller.requests
    assert [(t.topic_id, t.topic_name) for t in request.topics] == [(TID, ""), ("", "u")]
    assert results_t[0].partition_epoch == 8 and results_u[0].partition_epoch == 8


def test_manager_resends_a_partition_missing_from_the_answer():
    def drop_all(request: controller_pb2.AlterPartitionRequest) -> object:
        return controller_pb2.AlterPartitionResponse(error_code=Errors.NONE)

    results: list = []
    controller = ScriptedController(drop_all, answer)
    run_manager(controller, [100], item(TP, results))
    assert len(controller.requests) == 2 and len(results) == 1


def test_manager_refuses_a_second_change_for_the_same_partition():
    gate = threading.Event()
    manager = AlterPartitionManager(1, lambda: 100, lambda r: gate.wait(5) and answer(r))
    try:
        assert manager.submit(item(TP, []))
        assert not manager.submit(item(TP, []))
    finally:
        gate.set()
        manager.stop()


@pytest.mark.parametrize(
    "refusal",
    [
        ControllerAccessDeniedError("controller 0 refused the call: PERMISSION_DENIED"),
        # Raised at once, before any connection: without the longer backoff, a retry loop
        # every 10 ms (100 ms in production), each logged.
        ControllerTlsMismatchError(
            "controller 0 at 127.0.0.1:1 serves gRPC over TLS, and this client is plaintext"
        ),
    ],
)
def test_manager_backs_off_longer_when_the_controller_cannot_be_called(
    refusal: NoActiveControllerError,
) -> None:
    def denied(request: object) -> object:
        raise refusal

    results: list = []
    controller = ScriptedController(denied, answer)
    manager = AlterPartitionManager(
        1, lambda: 100, controller, retry_backoff_s=0.01, access_denied_backoff_s=0.5
    )
    manager.start()
    try:
        assert manager.submit(item(TP, results))
        assert controller.done.wait(5)
        first, second = controller.times
        assert second - first >= 0.4  # not the 10 ms retry backoff
        wait_until(lambda: results, timeout=5, what="answered after the backoff")
    finally:
        manager.stop()


def test_a_manager_started_again_sends_from_one_thread_only():
    # stop() waits only its timeout for a request in flight; the old sender thread then kept
    # looping beside the new one (two requests in flight, Kafka allows one).
    release, first_done = threading.Event(), threading.Event()
    in_flight = [0, 0]  # now, most at once
    lock = threading.Lock()

    def send(request: object) -> controller_pb2.AlterPartitionResponse:
        with lock:
            in_flight[0] += 1
            in_flight[1] = max(in_flight)
            first = in_flight[1] == 1 and not release.is_set()
        try:
            if first:
                release.wait(5)  # a slow controller
                first_done.set()
                raise OSError("timed out")
            time.sleep(0.05)
            return controller_pb2.AlterPartitionResponse(error_code=Errors.NOT_CONTROLLER)
        finally:
            with lock:
                in_flight[0] -= 1

    manager = AlterPartitionManager(1, lambda: 100, send, retry_backoff_s=0.02)
    manager.start()
    try:
        assert manager.submit(item(TP, []))
        wait_until(lambda: in_flight[0] == 1, timeout=5, what="the first request in flight")
        manager.stop(timeout=0.05)  # the join gives up: the request is still in flight
        manager.start()
        assert manager.submit(item(TopicPartition("t", 1), []))
        release.set()  # the abandoned request ends; its thread must end with it
        assert first_done.wait(5)
        time.sleep(0.05)
        with lock:
            in_flight[1] = in_flight[0]
        time.sleep(0.5)  # both threads would loop on NOT_CONTROLLER meanwhile
        senders = [t for t in threading.enumerate() if t.name == "broker-1-alter-partition"]
        assert len(senders) == 1
        assert in_flight[1] == 1
    finally:
        release.set()
        manager.stop()


def test_a_replication_started_again_proposes_the_changes_its_stop_dropped(clock):
    # The manager's stop drops queued changes; the partition's pending change stayed and
    # blocked every ISR change after the start again, until a new leader epoch.
    state = ReplicaState(1, broker_epoch=100)
    leader_and_isr(state, isr=(1, 2))
    live_brokers(state, 1, 2, 3)
    manager = RecordingManager()
    replication = Replication(
        state, ReplicationConfig(replica_lag_time_max_ms=LAG), manager,  # type: ignore[arg-type]
        clock_ms=clock,
    )  # fmt: skip
    fetch(replication, 3)
    assert len(manager.items) == 1
    replication.stop()
    replication.start()
    try:
        fetch(replication, 3)
        assert len(manager.items) == 2 and manager.items[-1].isr[-1][0] == 3
        # An answer to the dropped change finds no pending change: ignored.
        late = manager.items[0].callback(LeaderAndIsr(1, 0, (1, 2, 3), partition_epoch=1))
        assert late is False and state.hosted(TP).partition_epoch == 0
    finally:
        replication.stop()


def test_a_refused_submit_leaves_a_newer_pending_change_alone(leader, manager):
    # Between a proposal and its submit (outside the lock) a LeaderAndIsr may land and
    # another fetch propose and queue a newer change; the older one's refusal cleared the
    # newer one's pending mark, and that change's success was then ignored.
    leader_and_isr(leader.state, leader_epoch=1, isr=(1, 2), partition_epoch=4)
    queued: list[AlterPartitionItem] = []

    def submit(item: AlterPartitionItem, generation: int | None = None) -> bool:
        if not queued and item.leader_epoch == 1:
            leader_and_isr(leader.state, leader_epoch=2, isr=(1, 2), partition_epoch=5)
            fetch(leader, 3, 2)  # the other fetch thread: proposes and queues at epoch 2
            return False  # the epoch-1 change refused: one is queued for the partition
        queued.append(item)
        return True

    manager.submit = submit  # type: ignore[method-assign]
    fetch(leader, 3, 1)
    [newer] = queued
    assert leader.leader_view(TP)["pending"] == [1, 2, 3]
    assert newer.callback(LeaderAndIsr(1, 2, (1, 2, 3), partition_epoch=6)) is False
    hosted = leader.state.hosted(TP)
    assert (hosted.isr, hosted.partition_epoch) == ((1, 2, 3), 6)


def test_new_leader_elected_waits_for_the_next_leader_and_isr(leader, manager):
    # Kafka's broker treats it as "wait for metadata"; it was resent for ever.
    item = expand(leader, manager)
    assert item.callback(Errors.NEW_LEADER_ELECTED) is False
    assert leader.leader_view(TP)["frozen_by"] == "NEW_LEADER_ELECTED"
