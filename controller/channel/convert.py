"""Model objects <-> ``zkcontroller.v1`` protobuf messages, for the controller side.

The request batch accumulates plain Python values per partition (the ``*Partition`` tuples
below, cheap to build and to replace) and turns them into one protobuf request per broker
with the ``*_request`` builders at send time. Responses are parsed back into plain Python
(``{TopicPartition: error_code}``) on the sender thread, so that the controller events the
callbacks enqueue never carry protobuf objects.

Topic ids travel as Kafka's Uuid string; ``None`` in the model is the empty string on the
wire.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, cast

from controller.api.errors import wire_code
from controller.api.v1 import broker_pb2, common_pb2, controller_pb2
from controller.channel import wire
from controller.core.model import (
    Broker,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)

_SECURITY_PROTOCOLS: dict[str, common_pb2.SecurityProtocol] = {
    "PLAINTEXT": common_pb2.SECURITY_PROTOCOL_PLAINTEXT,
    "SSL": common_pb2.SECURITY_PROTOCOL_SSL,
    "SASL_PLAINTEXT": common_pb2.SECURITY_PROTOCOL_SASL_PLAINTEXT,
    "SASL_SSL": common_pb2.SECURITY_PROTOCOL_SASL_SSL,
}
_SECURITY_PROTOCOL_NAMES: dict[int, str] = {v: k for k, v in _SECURITY_PROTOCOLS.items()}


# -- what the request batch accumulates, per partition ------------------------------------


class LeaderAndIsrPartition(NamedTuple):
    """One partition of a LeaderAndIsr request: the leadership, the assignment and isNew."""

    leadership: LeaderIsrAndControllerEpoch
    assignment: ReplicaAssignment
    is_new: bool


class UpdateMetadataPartition(NamedTuple):
    """One partition of an UpdateMetadata request (``leadership`` may be ``during_delete``)."""

    leadership: LeaderIsrAndControllerEpoch
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]


class StopReplicaPartition(NamedTuple):
    leader_epoch: int
    delete_partition: bool


# -- small conversions ----------------------------------------------------------------------


def topic_id_to_wire(topic_id: str | None) -> str:
    return topic_id or ""


def topic_id_from_wire(topic_id: str) -> str | None:
    return topic_id or None


def security_protocol_to_wire(name: str) -> common_pb2.SecurityProtocol:
    try:
        return _SECURITY_PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"unknown security protocol {name!r}") from None


def security_protocol_from_wire(value: int) -> str:
    try:
        return _SECURITY_PROTOCOL_NAMES[value]
    except KeyError:
        raise ValueError(f"unknown security protocol id {value}") from None


def endpoint_to_wire(endpoint: EndPoint) -> broker_pb2.UpdateMetadataEndpoint:
    return broker_pb2.UpdateMetadataEndpoint(
        port=endpoint.port,
        host=endpoint.host,
        listener=endpoint.listener,
        security_protocol=security_protocol_to_wire(endpoint.security_protocol),
    )


def broker_to_wire(broker: Broker) -> broker_pb2.UpdateMetadataBroker:
    msg = broker_pb2.UpdateMetadataBroker(
        id=broker.id, endpoints=[endpoint_to_wire(e) for e in broker.endpoints]
    )
    if broker.rack is not None:
        msg.rack = broker.rack
    return msg


def broker_from_wire(msg: broker_pb2.UpdateMetadataBroker) -> Broker:
    endpoints = tuple(
        EndPoint(e.listener, e.host, e.port, security_protocol_from_wire(e.security_protocol))
        for e in msg.endpoints
    )
    return Broker(msg.id, endpoints, msg.rack if msg.HasField("rack") else None)


def leader_and_isr_from_wire(
    state: broker_pb2.LeaderAndIsrPartitionState,
) -> tuple[LeaderIsrAndControllerEpoch, ReplicaAssignment]:
    """The model view of a LeaderAndIsr partition state (used by brokers and tests)."""
    lai = LeaderAndIsr(
        state.leader,
        state.leader_epoch,
        tuple(state.isr),
        LeaderRecoveryState(state.leader_recovery_state),
        state.partition_epoch,
    )
    assignment = ReplicaAssignment(
        tuple(state.replicas), tuple(state.adding_replicas), tuple(state.removing_replicas)
    )
    return LeaderIsrAndControllerEpoch(lai, state.controller_epoch), assignment


# -- request builders -------------------------------------------------------------------------

TopicIds = Mapping[str, str | None] | Callable[[str], str | None]


def _topic_id_lookup(topic_ids: TopicIds) -> Callable[[str], str | None]:
    if callable(topic_ids):
        return topic_ids
    return topic_ids.get


def _topic_state_adder(
    container: Any, topic_id_of: Callable[[str], str | None] | None
) -> Callable[[str], Any]:
    """``topic -> its topic state in container``, added on first use: partitions end up
    grouped by topic in the order their topics were first added, without building the groups
    first (at 100K partitions per request, every intermediate object costs ~0.1 s)."""
    states: dict[str, Any] = {}
    add = container.add

    def topic_state(topic: str) -> Any:
        state = states.get(topic)
        if state is None:
            if topic_id_of is None:
                state = states[topic] = add(topic_name=topic)
            else:
                state = states[topic] = add(
                    topic_name=topic, topic_id=topic_id_to_wire(topic_id_of(topic))
                )
        return state

    return topic_state


def leader_and_isr_request(
    *,
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int,
    partitions: Mapping[TopicPartition, LeaderAndIsrPartition],
    topic_ids: TopicIds,
    live_leaders: Iterable[tuple[int, EndPoint]],
    encoded: wire.EncodingCache | None = None,
) -> broker_pb2.LeaderAndIsrRequest:
    """Kafka's LeaderAndIsr v7 in ZooKeeper mode (isKRaftController=false, type UNKNOWN).

    ``live_leaders`` are the (broker id, inter-broker endpoint) pairs of the leaders of these
    partitions that are live-or-shutting-down; the caller filters them (reference §4.3).
    ``encoded``: what the requests of one batch share (a partition's state goes unchanged to
    each of its replicas; topic entries repeat): keyed by the identity of the batch's objects,
    so only valid while the batch holds them, and for one ``topic_ids``.
    """
    header = broker_pb2.LeaderAndIsrRequest(
        controller_id=controller_id,
        is_kraft_controller=False,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        type=common_pb2.REQUEST_TYPE_UNKNOWN,
        live_leaders=[
            broker_pb2.LeaderAndIsrLiveLeader(broker_id=b, host_name=ep.host, port=ep.port)
            for b, ep in live_leaders
        ],
    )
    if encoded is None:
        encoded = wire.EncodingCache(_topic_id_lookup(topic_ids))
    cache = encoded.states
    encode = wire.leader_and_isr_partition
    states: list[tuple[str, bytes]] = []
    for (topic, partition), (leadership, assignment, is_new) in partitions.items():
        key = (topic, partition, id(leadership), id(assignment), is_new)
        state = cache.get(key)
        if state is None:
            lai = leadership.leader_and_isr
            state = cache[key] = encode(
                partition,
                leadership.controller_epoch,
                lai.leader,
                lai.leader_epoch,
                lai.isr,
                lai.partition_epoch,
                assignment.replicas,
                assignment.adding_replicas,
                assignment.removing_replicas,
                is_new,
                int(lai.leader_recovery_state),
            )
        states.append((topic, state))
    body = encoded.topics.encode(states)
    result: broker_pb2.LeaderAndIsrRequest = wire.request(
        broker_pb2.LeaderAndIsrRequest, header, body
    )
    return result


def update_metadata_request(
    *,
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int,
    partitions: Mapping[TopicPartition, UpdateMetadataPartition],
    topic_ids: TopicIds,
    live_brokers: Iterable[Broker],
) -> broker_pb2.UpdateMetadataRequest:
    """Kafka's UpdateMetadata v8 in ZooKeeper mode; ``live_brokers`` are all of them."""
    header = broker_pb2.UpdateMetadataRequest(
        controller_id=controller_id,
        is_kraft_controller=False,
        type=common_pb2.REQUEST_TYPE_UNKNOWN,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        live_brokers=[broker_to_wire(b) for b in live_brokers],
    )
    encode = wire.update_metadata_partition
    states: list[tuple[str, bytes]] = []
    for (topic, partition), (leadership, replicas, offline) in partitions.items():
        lai = leadership.leader_and_isr
        states.append(
            (
                topic,
                encode(
                    partition,
                    leadership.controller_epoch,
                    lai.leader,
                    lai.leader_epoch,
                    lai.isr,
                    lai.partition_epoch,
                    replicas,
                    offline,
                ),
            )
        )
    body = wire.topic_states(states, _topic_id_lookup(topic_ids))
    result: broker_pb2.UpdateMetadataRequest = wire.request(
        broker_pb2.UpdateMetadataRequest, header, body
    )
    return result


def stop_replica_request(
    *,
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int,
    partitions: Mapping[TopicPartition, StopReplicaPartition],
) -> broker_pb2.StopReplicaRequest:
    """Kafka's StopReplica v4: one request, per-partition delete flags, top-level flag false."""
    request = broker_pb2.StopReplicaRequest(
        controller_id=controller_id,
        is_kraft_controller=False,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        delete_partitions=False,
    )
    topic_state = _topic_state_adder(request.topic_states, None)
    for (topic, partition), (leader_epoch, delete) in partitions.items():
        topic_state(topic).partition_states.add(
            partition_index=partition, leader_epoch=leader_epoch, delete_partition=delete
        )
    return request


def request_partitions(
    request: broker_pb2.LeaderAndIsrRequest
    | broker_pb2.UpdateMetadataRequest
    | broker_pb2.StopReplicaRequest,
) -> list[TopicPartition]:
    """The partitions a request carries, in request order."""
    return [
        TopicPartition(t.topic_name, p.partition_index)
        for t in request.topic_states
        for p in t.partition_states
    ]


# -- response parsers ------------------------------------------------------------------------


class LeaderAndIsrResult(NamedTuple):
    error_code: int
    partition_errors: dict[TopicPartition, int]


def parse_leader_and_isr_response(
    response: broker_pb2.LeaderAndIsrResponse,
    topic_names: Mapping[str, str] | None = None,
) -> LeaderAndIsrResult:
    """The top-level error and ``{tp: error_code}``.

    Topics are taken by name. A topic echoed without a name is resolved by id through
    ``topic_names`` (id -> name), and dropped if the id is unknown there, as Kafka drops
    unknown topic ids.
    """
    errors: dict[TopicPartition, int] = {}
    for topic in response.topics:
        name = topic.topic_name
        if not name:
            name = (topic_names or {}).get(topic.topic_id, "")
            if not name:
                continue
        for p in topic.partition_errors:
            errors[TopicPartition(name, p.partition_index)] = p.error_code
    return LeaderAndIsrResult(response.error_code, errors)


class LazyPartitionErrors(Mapping[TopicPartition, int]):
    """``parse_leader_and_isr_response(response, topic_names).partition_errors``, parsed on
    first use. Responses are answered on the broker's sender thread while a failover is still
    running on the event thread: 5 responses of 60K partitions at 100K partitions took ~0.6 s
    of the interpreter from it. The event thread parses when it handles the response."""

    __slots__ = ("_errors", "_response", "_topic_names")

    def __init__(
        self, response: broker_pb2.LeaderAndIsrResponse, topic_names: Mapping[str, str] | None
    ) -> None:
        self._response: broker_pb2.LeaderAndIsrResponse | None = response
        self._topic_names = topic_names
        self._errors: dict[TopicPartition, int] | None = None

    def _parsed(self) -> dict[TopicPartition, int]:
        if self._errors is None:
            assert self._response is not None
            self._errors = parse_leader_and_isr_response(
                self._response, self._topic_names
            ).partition_errors
            self._response = self._topic_names = None
        return self._errors

    def __getitem__(self, tp: TopicPartition) -> int:
        return self._parsed()[tp]

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self._parsed())

    def __len__(self) -> int:
        return len(self._parsed())

    def items(self) -> Any:  # the handler's loop: the dict's own view, not Mapping's generic one
        return self._parsed().items()


class StopReplicaResult(NamedTuple):
    error_code: int
    partition_errors: dict[TopicPartition, int]


def parse_stop_replica_response(response: broker_pb2.StopReplicaResponse) -> StopReplicaResult:
    return StopReplicaResult(
        response.error_code,
        {
            TopicPartition(p.topic_name, p.partition_index): p.error_code
            for p in response.partition_errors
        },
    )


def parse_update_metadata_response(response: broker_pb2.UpdateMetadataResponse) -> int:
    return response.error_code


# -- ControllerService (broker -> controller) -----------------------------------------------


def controlled_shutdown_response(
    error_code: int, remaining: Iterable[TopicPartition] = ()
) -> controller_pb2.ControlledShutdownResponse:
    ordered = sorted(remaining)
    return controller_pb2.ControlledShutdownResponse(
        error_code=wire_code(error_code),
        remaining_partitions=[
            common_pb2.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in ordered
        ],
    )


class AlterPartitionItem(NamedTuple):
    """One partition of an AlterPartition request, decoded.

    ``proposed`` is Kafka's proposed ``LeaderAndIsr``: leader = the requesting broker, the
    request's leader epoch, new ISR, recovery state and partition epoch.
    """

    topic_id: str | None
    topic_name: str
    partition_index: int
    proposed: LeaderAndIsr
    isr_broker_epochs: tuple[tuple[int, int], ...]


def alter_partition_items(
    request: controller_pb2.AlterPartitionRequest,
) -> list[AlterPartitionItem]:
    items: list[AlterPartitionItem] = []
    for topic in request.topics:
        for p in topic.partitions:
            isr = tuple(m.broker_id for m in p.new_isr_with_epochs)
            items.append(
                AlterPartitionItem(
                    topic_id_from_wire(topic.topic_id),
                    topic.topic_name,
                    p.partition_index,
                    LeaderAndIsr(
                        request.broker_id,
                        p.leader_epoch,
                        isr,
                        LeaderRecoveryState(p.leader_recovery_state),
                        p.partition_epoch,
                    ),
                    tuple((m.broker_id, m.broker_epoch) for m in p.new_isr_with_epochs),
                )
            )
    return items


def alter_partition_partition_response(
    partition_index: int, error_code: int, state: LeaderAndIsr | None = None
) -> controller_pb2.AlterPartitionPartitionResponse:
    """A partition's answer; the state fields are set only on success (error NONE)."""
    msg = controller_pb2.AlterPartitionPartitionResponse(
        partition_index=partition_index, error_code=wire_code(error_code)
    )
    if state is not None and error_code == common_pb2.NONE:
        msg.leader_id = state.leader
        msg.leader_epoch = state.leader_epoch
        msg.isr.extend(state.isr)
        msg.leader_recovery_state = cast(
            "common_pb2.LeaderRecoveryState", int(state.leader_recovery_state)
        )
        msg.partition_epoch = state.partition_epoch
    return msg
