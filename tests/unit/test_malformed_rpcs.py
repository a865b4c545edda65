"""RPCs with bad fields: ControlledShutdown, AlterPartition, ElectLeaders. Each is answered
with the Kafka error code that says what is wrong, writes nothing, and leaves the controller
serving (``docs/reliability.md`` lists every case; the reassignment RPCs are covered in
``test_reassignment``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from controller.api.errors import ApiError, Errors
from controller.api.v1 import controller_pb2
from controller.core.events import (
    AlterPartitionReceived,
    ControlledShutdown,
    ElectionTrigger,
    ElectionType,
    ReplicaLeaderElection,
)
from controller.core.model import TopicPartition
from controller.logs import LOG_SAMPLE_SIZE
from tests.harness import ControllerHarness
from tests.harness.malformed import HEALTHY, healthy_cluster, snapshot, still_serving


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = healthy_cluster()
    yield harness
    harness.close()


# -- RPCs: ControlledShutdown, AlterPartition, ElectLeaders ----------------------------------


def controlled_shutdown(h: ControllerHarness, broker_id: int, epoch: int) -> object:
    event = ControlledShutdown(broker_id=broker_id, broker_epoch=epoch)
    h.put(event)
    h.drain()
    try:
        return event.reply.result(0)
    except ApiError as exc:
        return exc.error


@pytest.mark.parametrize(
    ("broker_id", "epoch", "answer"),
    [
        (-1, -1, Errors.BROKER_NOT_AVAILABLE),
        (-7, 5, Errors.BROKER_NOT_AVAILABLE),
        (2**31 - 1, -1, Errors.BROKER_NOT_AVAILABLE),
        (1, -5, Errors.STALE_BROKER_EPOCH),  # any negative epoch but -1 is just lower
        (1, 0, Errors.STALE_BROKER_EPOCH),
    ],
    ids=["negative-id", "negative-id-with-epoch", "unknown-id", "negative-epoch", "zero-epoch"],
)
def test_controlled_shutdown_with_bad_fields_is_refused_and_changes_nothing(
    h: ControllerHarness, broker_id: int, epoch: int, answer: Errors
) -> None:
    before = snapshot(h)
    assert controlled_shutdown(h, broker_id, epoch) is answer
    assert h.ctx.shutting_down_broker_ids == set()
    still_serving(h, before)


def alter_partition(h: ControllerHarness, request: Any) -> Any:
    event = AlterPartitionReceived(request=request)
    h.put(event)
    h.drain()
    return event.reply.result(0)


def isr_request(
    h: ControllerHarness,
    *,
    broker_id: int = 1,
    broker_epoch: int | None = None,
    topic: str = "healthy",
    topic_id: str = "",
    partition: int = 0,
    isr: tuple[int, ...] = (1,),
    leader_epoch: int | None = None,
    recovery: int = 0,
    repeat: int = 1,
) -> controller_pb2.AlterPartitionRequest:
    state = h.zk_state(HEALTHY)
    assert state is not None
    lai = state.leader_and_isr
    epoch = broker_epoch if broker_epoch is not None else h.ctx.live_broker_id_and_epochs()[1]
    data = controller_pb2.AlterPartitionPartitionData(
        partition_index=partition,
        leader_epoch=lai.leader_epoch if leader_epoch is None else leader_epoch,
        new_isr_with_epochs=[controller_pb2.BrokerState(broker_id=b, broker_epoch=-1) for b in isr],
        leader_recovery_state=recovery,  # type: ignore[arg-type]
        partition_epoch=lai.partition_epoch,
    )
    return controller_pb2.AlterPartitionRequest(
        broker_id=broker_id,
        broker_epoch=epoch,
        topics=[
            controller_pb2.AlterPartitionTopicData(
                topic_id=topic_id, topic_name="" if topic_id else topic, partitions=[data] * repeat
            )
        ],
    )


def partition_errors(response: Any) -> list[int]:
    return [p.error_code for t in response.topics for p in t.partitions]


@pytest.mark.parametrize(
    ("changes", "top", "per_partition"),
    [
        ({"broker_id": -1, "broker_epoch": -1}, Errors.STALE_BROKER_EPOCH, []),
        ({"broker_epoch": 12345}, Errors.STALE_BROKER_EPOCH, []),
        ({"topic": ""}, Errors.NONE, [Errors.UNKNOWN_TOPIC_OR_PARTITION]),
        ({"topic": "no such topic!"}, Errors.NONE, [Errors.UNKNOWN_TOPIC_OR_PARTITION]),
        ({"topic_id": "AAAAAAAAAAAAAAAAAAAAAA"}, Errors.NONE, [Errors.UNKNOWN_TOPIC_ID]),
        ({"partition": -1}, Errors.NONE, [Errors.UNKNOWN_TOPIC_OR_PARTITION]),
        ({"partition": 2**31 - 1}, Errors.NONE, [Errors.UNKNOWN_TOPIC_OR_PARTITION]),
        ({"isr": ()}, Errors.NONE, [Errors.INVALID_REQUEST]),
        ({"isr": (1, -3)}, Errors.NONE, [Errors.INVALID_REQUEST]),
        ({"isr": (1, 1)}, Errors.NONE, [Errors.INVALID_REQUEST]),
        ({"isr": (1, 99)}, Errors.NONE, [Errors.INVALID_REQUEST]),
        ({"recovery": 9}, Errors.NONE, [Errors.INVALID_REQUEST]),
        ({"leader_epoch": -5}, Errors.NONE, [Errors.FENCED_LEADER_EPOCH]),
        ({"repeat": 2}, Errors.NONE, [Errors.INVALID_REQUEST]),  # one answer for both
    ],
    ids=[
        "negative-broker",
        "wrong-broker-epoch",
        "empty-topic-name",
        "unknown-topic-name",
        "unknown-topic-id",
        "negative-partition",
        "unknown-partition",
        "empty-isr",
        "negative-isr-member",
        "duplicate-isr-member",
        "isr-member-not-a-replica",
        "unknown-recovery-state",
        "negative-leader-epoch",
        "partition-listed-twice",
    ],
)
def test_alter_partition_with_bad_fields_is_refused_and_writes_nothing(
    h: ControllerHarness, changes: dict[str, Any], top: Errors, per_partition: list[Errors]
) -> None:
    before = snapshot(h)
    zxid = h.zxid
    response = alter_partition(h, isr_request(h, **changes))
    assert response.error_code == top
    assert partition_errors(response) == per_partition
    assert h.zxid == zxid  # nothing written
    still_serving(h, before)


def test_many_refused_partitions_of_one_alter_partition_are_logged_in_one_line(
    h: ControllerHarness,
) -> None:
    # A line per partition made a 100k-partition request hold the event thread for seconds.
    request = isr_request(h)
    template = request.topics[0].partitions[0]
    del request.topics[0].partitions[:]
    for index in range(1000, 1500):  # partitions "healthy" does not have
        request.topics[0].partitions.add().CopyFrom(template)
        request.topics[0].partitions[-1].partition_index = index
    with capture_logs() as logs:
        response = alter_partition(h, request)
    assert set(partition_errors(response)) == {Errors.UNKNOWN_TOPIC_OR_PARTITION}
    refusals = [e for e in logs if "refusing AlterPartition" in e["event"]]
    assert len(refusals) == 1
    assert refusals[0]["count"] == 500
    assert refusals[0]["errors"] == {"UNKNOWN_TOPIC_OR_PARTITION": 500}
    assert len(refusals[0]["partitions"]) == LOG_SAMPLE_SIZE
    assert refusals[0]["partitions"][0].startswith("healthy-1000: UNKNOWN_TOPIC_OR_PARTITION")
    # Nothing else is logged per partition either, at INFO and above.
    assert len([e for e in logs if e["log_level"] != "debug"]) < 10


def elect(h: ControllerHarness, partitions: set[TopicPartition], kind: ElectionType) -> Any:
    event = ReplicaLeaderElection(
        partitions=frozenset(partitions),
        election_type=kind,
        trigger=ElectionTrigger.ADMIN_CLIENT_TRIGGERED,
    )
    h.put(event)
    h.drain()
    return event.reply.result(0)


@pytest.mark.parametrize("kind", [ElectionType.PREFERRED, ElectionType.UNCLEAN])
def test_elect_leaders_for_unknown_or_impossible_partitions_answers_each(
    h: ControllerHarness, kind: ElectionType
) -> None:
    before = snapshot(h)
    asked = {
        TopicPartition("healthy", -1),
        TopicPartition("healthy", 7),
        TopicPartition("", 0),
        TopicPartition("no such topic!", 0),
    }
    result = elect(h, asked | {HEALTHY}, kind)
    assert set(result) == asked | {HEALTHY}
    for tp in asked:
        assert isinstance(result[tp], ApiError)
        assert result[tp].error is Errors.UNKNOWN_TOPIC_OR_PARTITION
    # The real partition needs no election: its leader is already the preferred one.
    assert isinstance(result[HEALTHY], ApiError)
    assert result[HEALTHY].error is Errors.ELECTION_NOT_NEEDED
    still_serving(h, before)


def test_many_unknown_partitions_of_one_election_are_logged_in_one_line(
    h: ControllerHarness,
) -> None:
    asked = {TopicPartition("no such topic", p) for p in range(500)}
    with capture_logs() as logs:
        result = elect(h, asked, ElectionType.PREFERRED)
    assert len(result) == 500
    skipped = [e for e in logs if "do not exist" in e["event"]]
    assert len(skipped) == 1
    assert skipped[0]["count"] == 500
    assert skipped[0]["partitions"] == [f"no such topic-{p}" for p in range(LOG_SAMPLE_SIZE)]
    assert len([e for e in logs if e["log_level"] != "debug"]) < 10
