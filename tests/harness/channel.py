"""``RecordingChannel``: the controller's channel to brokers, recording instead of sending.

Same surface as ``ControllerChannelManager`` (``startup``/``add_broker``/``remove_broker``/
``shutdown``/``send``). Each ``send`` becomes a ``SentRequest`` that a test can inspect
(kind, broker, partition states) and answer (``respond``), which runs the batch's response
callback exactly as a sender thread would after a broker replied.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.api.errors import Errors
from controller.api.v1 import broker_pb2
from controller.channel import convert
from controller.channel.sender import OutboundRequest, RequestKind, ResponseCallback
from controller.core.model import (
    Broker,
    BrokerAndEpoch,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)

PLAINTEXT_PORT_BASE = 9900  # Kafka's ControllerChannelManagerTest: PLAINTEXT localhost:990N
CONTROLLER_PORT_BASE = 19900


def make_broker(
    broker_id: int,
    *,
    host: str = "localhost",
    rack: str | None = None,
    listeners: Sequence[str] = ("PLAINTEXT", "CONTROLLER"),
) -> Broker:
    """A broker with one endpoint per listener: PLAINTEXT on 990N, others on 1990N."""
    endpoints = tuple(
        EndPoint(
            name,
            host,
            (PLAINTEXT_PORT_BASE if name == "PLAINTEXT" else CONTROLLER_PORT_BASE) + broker_id,
        )
        for name in listeners
    )
    return Broker(broker_id, endpoints, rack)


@dataclass(slots=True)
class SentRequest:
    """One request handed to the channel. ``registered``: the broker had been added to the
    channel (the real channel drops requests to unregistered brokers)."""

    seq: int
    broker_id: int
    request: OutboundRequest
    callback: ResponseCallback | None
    registered: bool

    @property
    def kind(self) -> RequestKind:
        return self.request.kind

    @property
    def message(self) -> Any:
        return self.request.message

    def partitions(self) -> list[TopicPartition]:
        """The partitions the request carries, in request order."""
        return list(self.partition_states())

    def partition_states(self) -> dict[TopicPartition, Any]:
        """tp -> the protobuf partition state (LeaderAndIsr, UpdateMetadata or StopReplica)."""
        return {
            TopicPartition(t.topic_name, p.partition_index): p
            for t in self.message.topic_states
            for p in t.partition_states
        }

    def topic_ids(self) -> dict[str, str]:
        """topic name -> topic id on the wire ("" when unknown). Not for StopReplica."""
        return {t.topic_name: t.topic_id for t in self.message.topic_states}

    def leader_and_isr(
        self, tp: TopicPartition
    ) -> tuple[LeaderIsrAndControllerEpoch, ReplicaAssignment, bool]:
        """A LeaderAndIsr partition state as model values: (leadership, assignment, isNew)."""
        state = self.partition_states()[tp]
        info, assignment = convert.leader_and_isr_from_wire(state)
        return info, assignment, state.is_new

    def update_metadata(
        self, tp: TopicPartition
    ) -> tuple[LeaderIsrAndControllerEpoch, tuple[int, ...], tuple[int, ...]]:
        """An UpdateMetadata partition state: (leadership with zkVersion as partition epoch,
        replicas, offline replicas). The recovery state is not carried by UpdateMetadata."""
        p = self.partition_states()[tp]
        lai = LeaderAndIsr(p.leader, p.leader_epoch, tuple(p.isr), partition_epoch=p.zk_version)
        return (
            LeaderIsrAndControllerEpoch(lai, p.controller_epoch),
            tuple(p.replicas),
            tuple(p.offline_replicas),
        )

    def stop_replica(self, tp: TopicPartition) -> tuple[int, bool]:
        """A StopReplica partition state: (leader epoch, deletePartition)."""
        p = self.partition_states()[tp]
        return p.leader_epoch, p.delete_partition

    def respond(self, response: Any | None = None, **kwargs: Any) -> None:
        """Run the callback with ``response``, or with ``success_response(self, **kwargs)``."""
        if self.callback is None:
            return
        self.callback(response if response is not None else success_response(self, **kwargs))


def success_response(
    sent: SentRequest,
    *,
    error: int = Errors.NONE,
    partition_errors: Mapping[TopicPartition, int] | None = None,
    omit: Iterable[TopicPartition] = (),
) -> Any:
    """The response a conforming broker gives: every partition echoed with NONE, unless
    ``partition_errors`` says otherwise; partitions in ``omit`` are left out. LeaderAndIsr
    responses name topics by id only (as Kafka's v5+ responses do)."""
    errors = dict(partition_errors or {})
    left_out = set(omit)
    kept = [tp for tp in sent.partitions() if tp not in left_out]
    if sent.kind is RequestKind.UPDATE_METADATA:
        return broker_pb2.UpdateMetadataResponse(error_code=error)
    if sent.kind is RequestKind.STOP_REPLICA:
        return broker_pb2.StopReplicaResponse(
            error_code=error,
            partition_errors=[
                broker_pb2.StopReplicaPartitionError(
                    topic_name=tp.topic,
                    partition_index=tp.partition,
                    error_code=errors.get(tp, Errors.NONE),
                )
                for tp in kept
            ],
        )
    ids = sent.topic_ids()
    by_topic: dict[str, list[broker_pb2.LeaderAndIsrPartitionError]] = {}
    for tp in kept:
        by_topic.setdefault(tp.topic, []).append(
            broker_pb2.LeaderAndIsrPartitionError(
                partition_index=tp.partition, error_code=errors.get(tp, Errors.NONE)
            )
        )
    return broker_pb2.LeaderAndIsrResponse(
        error_code=error,
        topics=[
            broker_pb2.LeaderAndIsrTopicError(
                topic_id=ids[topic], topic_name="" if ids[topic] else topic, partition_errors=pe
            )
            for topic, pe in by_topic.items()
        ],
    )


class RecordingChannel:
    """A stand-in for ``ControllerChannelManager``: same surface, records instead of sending.

    Every ``send`` is recorded (also for brokers never added, flagged ``registered=False``,
    so tests can see what the real channel would have dropped). Responses are given by the
    test through ``SentRequest.respond``. ``fail_next_send`` makes the next ``send`` raise,
    to exercise the batch's error path.
    """

    def __init__(self) -> None:
        self.sent: list[SentRequest] = []
        self.brokers: dict[int, tuple[Broker, int]] = {}
        self._fail_next: list[BaseException] = []

    # -- the ControllerChannelManager surface ------------------------------------------

    def startup(self, brokers: Iterable[BrokerAndEpoch]) -> None:
        for b in brokers:
            self.add_broker(b.broker, b.epoch)

    def add_broker(self, broker: Broker, broker_epoch: int) -> None:
        self.brokers.setdefault(broker.id, (broker, broker_epoch))

    def update_broker(self, broker: Broker, broker_epoch: int) -> None:
        if broker.id in self.brokers:
            self.brokers[broker.id] = (broker, broker_epoch)

    def remove_broker(self, broker_id: int) -> None:
        self.brokers.pop(broker_id, None)

    def shutdown(self) -> None:
        self.brokers.clear()

    def send(
        self, broker_id: int, request: OutboundRequest, callback: ResponseCallback | None = None
    ) -> None:
        if self._fail_next:
            raise self._fail_next.pop(0)
        self.sent.append(
            SentRequest(len(self.sent), broker_id, request, callback, broker_id in self.brokers)
        )

    def broker_ids(self) -> set[int]:
        return set(self.brokers)

    # -- for tests ---------------------------------------------------------------------

    def fail_next_send(self, error: BaseException) -> None:
        self._fail_next.append(error)

    def requests(
        self, broker_id: int | None = None, kind: RequestKind | None = None
    ) -> list[SentRequest]:
        """Recorded requests, in send order, optionally for one broker and/or one kind."""
        return [
            r
            for r in self.sent
            if (broker_id is None or r.broker_id == broker_id) and (kind is None or r.kind is kind)
        ]

    def kinds(self, broker_id: int) -> list[RequestKind]:
        """The kinds sent to one broker, in order."""
        return [r.kind for r in self.requests(broker_id)]

    def recipients(self, kind: RequestKind | None = None) -> set[int]:
        return {r.broker_id for r in self.requests(kind=kind)}

    def only(self, broker_id: int, kind: RequestKind) -> SentRequest:
        """The single request of ``kind`` sent to ``broker_id`` (fails if not exactly one)."""
        found = self.requests(broker_id, kind)
        assert len(found) == 1, f"expected one {kind.value} to broker {broker_id}, got {found}"
        return found[0]

    def clear(self) -> None:
        self.sent.clear()
