"""The reference broker's replica state: partition table, metadata cache and Kafka's rules.

``ReplicaState`` applies the controller's three requests the way Kafka 3.6's ``KafkaApis`` and
``ReplicaManager`` do (reference §4.4a), and nothing more: there are no logs and no produce
path. Fetching and ISR changes live in ``controller.broker.replication``, which reads the
partition table here and writes back only the answers to its AlterPartition requests. What it
keeps is exactly what the controller's correctness depends on:

* the broker epoch (czxid of its registration) and the highest controller epoch accepted;
* per partition it hosts: role, leader, leader epoch, partition epoch, ISR, replicas and topic
  id (the *partition table*);
* the *metadata cache*: live brokers and partition states from UpdateMetadata;
* partitions on a failed log dir, which answer KAFKA_STORAGE_ERROR.

Every handler runs under one lock (Kafka's ``replicaStateChangeLock``), so concurrent RPCs
are applied one at a time. Messages are protobuf in, protobuf out; there is no gRPC here.
"""

from __future__ import annotations

import enum
import itertools
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

import structlog

from controller.api.errors import Errors, error_name, wire_code
from controller.api.v1 import broker_pb2, common_pb2
from controller.core.model import (
    EPOCH_DURING_DELETE,
    LEADER_DURING_DELETE,
    NO_EPOCH,
    UNKNOWN_BROKER_EPOCH,
    EndPoint,
    TopicPartition,
)

log = structlog.get_logger("controller.broker")

# Kafka's KafkaController.InitialControllerEpoch: the broker's starting "highest seen" epoch.
INITIAL_CONTROLLER_EPOCH = 0
# Kafka's leader epoch of a Partition object that has never applied a LeaderAndIsr.
UNKNOWN_LEADER_EPOCH = -1
# How many rejected partitions a request's summary log line names.
_LOGGED_REJECTS = 5


class Role(enum.IntEnum):
    """Values of ``zkcontroller.v1.PartitionRole``."""

    LEADER = broker_pb2.PARTITION_ROLE_LEADER
    FOLLOWER = broker_pb2.PARTITION_ROLE_FOLLOWER
    STOPPED = broker_pb2.PARTITION_ROLE_STOPPED


@dataclass(slots=True)
class Hosted:
    """One row of the partition table: the last LeaderAndIsr state applied for a partition."""

    topic_id: str  # "" when unknown
    role: Role
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    leader_recovery_state: int
    controller_epoch: int
    is_new: bool
    # Which life of the row: a partition deleted (StopReplica) and created again gets a new
    # one, as Kafka makes a new Partition object (leader bookkeeping must not carry over).
    incarnation: int = 0


# Told of the partitions a LeaderAndIsr made this broker the leader of (ReplicaState.on_leadership).
LeadershipListener = Callable[[list[tuple[TopicPartition, Hosted]]], None]


class ReplicaState:
    """A broker's view of its replicas and of the cluster, changed only by controller requests."""

    def __init__(self, broker_id: int, broker_epoch: int = UNKNOWN_BROKER_EPOCH) -> None:
        self.broker_id = broker_id
        self._lock = threading.Lock()
        self._broker_epoch = broker_epoch
        self._controller_epoch = INITIAL_CONTROLLER_EPOCH
        self._metadata_controller_id = -1
        self._partitions: dict[TopicPartition, Hosted] = {}
        self._incarnations = itertools.count(1)
        self._offline: set[TopicPartition] = set()
        self._live_brokers: dict[int, broker_pb2.UpdateMetadataBroker] = {}
        self._metadata: dict[
            TopicPartition, tuple[str, broker_pb2.UpdateMetadataPartitionState]
        ] = {}
        self._received: Counter[str] = Counter()
        # Leaders' inter-broker addresses from LeaderAndIsr live_leaders (for fetching).
        self._leader_addresses: dict[int, str] = {}
        self._leadership_listeners: list[LeadershipListener] = []

    def on_leadership(self, listener: LeadershipListener) -> None:
        """Call ``listener`` with the rows each LeaderAndIsr made this broker the leader of
        (a new leader epoch), after the request is applied and outside this state's lock."""
        self._leadership_listeners.append(listener)

    # -- epochs ------------------------------------------------------------------------------

    @property
    def broker_epoch(self) -> int:
        return self._broker_epoch

    @broker_epoch.setter
    def broker_epoch(self, epoch: int) -> None:
        """Set by the registration (the czxid of ``/brokers/ids/N``) on every (re-)register."""
        with self._lock:
            self._broker_epoch = epoch

    @property
    def controller_epoch(self) -> int:
        """The highest controller epoch accepted so far."""
        return self._controller_epoch

    def _broker_epoch_stale(self, request_epoch: int) -> bool:
        # Kafka's isBrokerEpochStale: -1 (unknown) is never stale, and a *higher* epoch is
        # accepted because the controller can learn a new registration before we do.
        return request_epoch != UNKNOWN_BROKER_EPOCH and request_epoch < self._broker_epoch

    # -- LeaderAndIsr ----------------------------------------------------------------------

    def leader_and_isr(
        self, request: broker_pb2.LeaderAndIsrRequest
    ) -> broker_pb2.LeaderAndIsrResponse:
        led: list[tuple[TopicPartition, Hosted]] = []
        response = self._leader_and_isr(request, led)
        if led:
            for listener in self._leadership_listeners:
                listener(led)
        return response

    def _leader_and_isr(
        self, request: broker_pb2.LeaderAndIsrRequest, led: list[tuple[TopicPartition, Hosted]]
    ) -> broker_pb2.LeaderAndIsrResponse:
        with self._lock:
            self._received["LeaderAndIsr"] += 1
            if self._broker_epoch_stale(request.broker_epoch):
                self._log_rejected("LeaderAndIsr", request, Errors.STALE_BROKER_EPOCH)
                return leader_and_isr_error_response(request, Errors.STALE_BROKER_EPOCH)
            if request.controller_epoch < self._controller_epoch:
                self._log_rejected("LeaderAndIsr", request, Errors.STALE_CONTROLLER_EPOCH)
                return leader_and_isr_error_response(request, Errors.STALE_CONTROLLER_EPOCH)
            self._controller_epoch = request.controller_epoch
            for live in request.live_leaders:
                self._leader_addresses[live.broker_id] = EndPoint(
                    "", live.host_name, live.port
                ).address

            response = broker_pb2.LeaderAndIsrResponse(error_code=common_pb2.NONE)
            outcomes: Counter[str] = Counter()
            rejected: list[str] = []
            for topic in request.topic_states:
                errors = response.topics.add(topic_id=topic.topic_id, topic_name=topic.topic_name)
                for state in topic.partition_states:
                    tp = TopicPartition(topic.topic_name, state.partition_index)
                    previous = self._partitions.get(tp)
                    code = self._apply_partition(tp, topic.topic_id, state)
                    hosted = self._partitions.get(tp)
                    if hosted is not previous and hosted is not None and hosted.role is Role.LEADER:
                        led.append((tp, hosted))
                    errors.partition_errors.add(
                        partition_index=state.partition_index, error_code=code
                    )
                    outcomes[error_name(code)] += 1
                    if code != Errors.NONE and len(rejected) < _LOGGED_REJECTS:
                        rejected.append(f"{tp}:{error_name(code)}")
            self._log_outcome("LeaderAndIsr", request, outcomes, rejected)
            return response

    def _apply_partition(
        self, tp: TopicPartition, topic_id: str, state: broker_pb2.LeaderAndIsrPartitionState
    ) -> Errors:
        """ReplicaManager.becomeLeaderOrFollower for one partition; returns its error code."""
        if tp in self._offline:
            return Errors.KAFKA_STORAGE_ERROR
        hosted = self._partitions.get(tp)
        current_epoch = hosted.leader_epoch if hosted else UNKNOWN_LEADER_EPOCH
        if hosted and topic_id and hosted.topic_id and topic_id != hosted.topic_id:
            return Errors.INCONSISTENT_TOPIC_ID
        if state.leader_epoch > current_epoch:
            if self.broker_id not in state.replicas:
                return Errors.UNKNOWN_TOPIC_OR_PARTITION
            self._partitions[tp] = Hosted(
                topic_id=topic_id or (hosted.topic_id if hosted else ""),
                role=Role.LEADER if state.leader == self.broker_id else Role.FOLLOWER,
                leader=state.leader,
                leader_epoch=state.leader_epoch,
                partition_epoch=state.partition_epoch,
                isr=tuple(state.isr),
                replicas=tuple(state.replicas),
                adding_replicas=tuple(state.adding_replicas),
                removing_replicas=tuple(state.removing_replicas),
                leader_recovery_state=state.leader_recovery_state,
                controller_epoch=state.controller_epoch,
                is_new=state.is_new,
                incarnation=hosted.incarnation if hosted else next(self._incarnations),
            )
            return Errors.NONE
        if state.leader_epoch < current_epoch:
            return Errors.STALE_CONTROLLER_EPOCH
        # Equal epochs change nothing but topic-id bookkeeping. Kafka answers NONE when it
        # assigns a topic id to a partition that had none, or, as a follower (the request
        # names another leader), when it keeps one the request lacks; STALE_CONTROLLER_EPOCH
        # otherwise (ReplicaManager.becomeLeaderOrFollower).
        if hosted is not None and topic_id and not hosted.topic_id:
            hosted.topic_id = topic_id
            return Errors.NONE
        follower = state.leader != self.broker_id
        if hosted is not None and not topic_id and hosted.topic_id and follower:
            return Errors.NONE
        return Errors.STALE_CONTROLLER_EPOCH

    # -- UpdateMetadata ----------------------------------------------------------------------

    def update_metadata(
        self, request: broker_pb2.UpdateMetadataRequest
    ) -> broker_pb2.UpdateMetadataResponse:
        with self._lock:
            self._received["UpdateMetadata"] += 1
            if self._broker_epoch_stale(request.broker_epoch):
                self._log_rejected("UpdateMetadata", request, Errors.STALE_BROKER_EPOCH)
                return broker_pb2.UpdateMetadataResponse(
                    error_code=wire_code(Errors.STALE_BROKER_EPOCH)
                )
            if request.controller_epoch < self._controller_epoch:
                # Kafka's broker raises ControllerMovedException here, which its request
                # handler turns into NOT_CONTROLLER (not STALE_CONTROLLER_EPOCH).
                self._log_rejected("UpdateMetadata", request, Errors.NOT_CONTROLLER)
                return broker_pb2.UpdateMetadataResponse(
                    error_code=wire_code(Errors.NOT_CONTROLLER)
                )
            self._metadata_controller_id = request.controller_id
            self._live_brokers = {b.id: _copy(b) for b in request.live_brokers}
            removed = upserted = 0
            for topic in request.topic_states:
                for state in topic.partition_states:
                    tp = TopicPartition(topic.topic_name, state.partition_index)
                    if state.leader == LEADER_DURING_DELETE:
                        if self._metadata.pop(tp, None) is not None:
                            removed += 1
                    else:
                        self._metadata[tp] = (topic.topic_id, _copy(state))
                        upserted += 1
            self._controller_epoch = request.controller_epoch
            log.debug(
                "applied UpdateMetadata",
                controller_id=request.controller_id,
                controller_epoch=request.controller_epoch,
                live_brokers=sorted(self._live_brokers),
                upserted=upserted,
                removed=removed,
            )
            return broker_pb2.UpdateMetadataResponse(error_code=wire_code(Errors.NONE))

    # -- StopReplica -----------------------------------------------------------------------

    def stop_replica(
        self, request: broker_pb2.StopReplicaRequest
    ) -> broker_pb2.StopReplicaResponse:
        with self._lock:
            self._received["StopReplica"] += 1
            # Whole-request errors carry no partition errors (Kafka's KafkaApis/ReplicaManager).
            if self._broker_epoch_stale(request.broker_epoch):
                self._log_rejected("StopReplica", request, Errors.STALE_BROKER_EPOCH)
                return broker_pb2.StopReplicaResponse(
                    error_code=wire_code(Errors.STALE_BROKER_EPOCH)
                )
            if request.controller_epoch < self._controller_epoch:
                self._log_rejected("StopReplica", request, Errors.STALE_CONTROLLER_EPOCH)
                return broker_pb2.StopReplicaResponse(
                    error_code=wire_code(Errors.STALE_CONTROLLER_EPOCH)
                )
            self._controller_epoch = request.controller_epoch

            response = broker_pb2.StopReplicaResponse(error_code=wire_code(Errors.NONE))
            outcomes: Counter[str] = Counter()
            rejected: list[str] = []
            for topic in request.topic_states:
                for state in topic.partition_states:
                    tp = TopicPartition(topic.topic_name, state.partition_index)
                    code = self._stop_partition(tp, state)
                    response.partition_errors.add(
                        topic_name=tp.topic, partition_index=tp.partition, error_code=code
                    )
                    outcomes[error_name(code)] += 1
                    if code != Errors.NONE and len(rejected) < _LOGGED_REJECTS:
                        rejected.append(f"{tp}:{error_name(code)}")
            self._log_outcome("StopReplica", request, outcomes, rejected)
            return response

    def _stop_partition(
        self, tp: TopicPartition, state: broker_pb2.StopReplicaPartitionState
    ) -> Errors:
        if tp in self._offline:
            return Errors.KAFKA_STORAGE_ERROR
        hosted = self._partitions.get(tp)
        if hosted is None:
            # Not hosted: nothing to stop; Kafka still "deletes" (e.g. leftovers on disk).
            return Errors.NONE
        epoch = state.leader_epoch
        # -2: the topic is being deleted (its leader epoch is not bumped for that); -1: an
        # old-style request without an epoch. Both bypass the check.
        if epoch in (EPOCH_DURING_DELETE, NO_EPOCH) or epoch >= hosted.leader_epoch:
            if state.delete_partition:
                del self._partitions[tp]
            else:
                hosted.role = Role.STOPPED
            return Errors.NONE
        return Errors.FENCED_LEADER_EPOCH

    # -- failed log dirs ---------------------------------------------------------------------

    def healthy_partitions(self) -> list[TopicPartition]:
        """The partitions hosted here and not on a failed log dir."""
        with self._lock:
            return sorted(tp for tp in self._partitions if tp not in self._offline)

    def fail_log_dir(self, partitions: Iterable[TopicPartition]) -> None:
        """Mark partitions as living on a failed log dir: from now on LeaderAndIsr and
        StopReplica answer KAFKA_STORAGE_ERROR for them (Kafka's ``HostedPartition.Offline``).

        The ZooKeeper notification that tells the controller (``/log_dir_event_notification``)
        is not sent from here; see ``BrokerServer.fail_log_dir``.
        """
        with self._lock:
            added = set(partitions) - self._offline
            self._offline |= added
        if added:
            log.warning("log dir failed", partitions=sorted(str(tp) for tp in added))

    # -- replication (controller.broker.replication) ----------------------------------------

    def is_offline(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._offline

    def followed_partitions(self) -> list[tuple[TopicPartition, str, int, int]]:
        """(partition, topic id, leader, leader epoch) of every partition this broker follows
        and should fetch: role FOLLOWER, a leader that is another broker, not on a failed
        log dir. Stopped partitions are not followed."""
        with self._lock:
            return [
                (tp, h.topic_id, h.leader, h.leader_epoch)
                for tp, h in sorted(self._partitions.items())
                if h.role is Role.FOLLOWER
                and h.leader >= 0
                and h.leader != self.broker_id
                and tp not in self._offline
            ]

    def led_partitions(self) -> list[tuple[TopicPartition, Hosted]]:
        """Copies of the rows this broker leads (not on a failed log dir)."""
        with self._lock:
            return [
                (tp, replace(h))
                for tp, h in sorted(self._partitions.items())
                if h.role is Role.LEADER and tp not in self._offline
            ]

    def has_alive_broker(self, broker_id: int) -> bool:
        """Whether the metadata cache lists the broker (Kafka's ``hasAliveBroker``)."""
        with self._lock:
            return broker_id in self._live_brokers

    def leader_address(self, broker_id: int, listener: str) -> str | None:
        """Where to reach a leader: its ``listener`` endpoint in the metadata cache (Kafka's
        fetchers look there; UpdateMetadata is what carries a changed endpoint), else its
        last LeaderAndIsr live_leaders address (a leader not in the cache yet)."""
        with self._lock:
            broker = self._live_brokers.get(broker_id)
            for endpoint in broker.endpoints if broker is not None else ():
                if endpoint.listener == listener:
                    return EndPoint(listener, endpoint.host, endpoint.port).address
            return self._leader_addresses.get(broker_id)

    def apply_isr_change(
        self,
        tp: TopicPartition,
        *,
        leader_epoch: int,
        isr: Iterable[int],
        leader_recovery_state: int,
        partition_epoch: int,
    ) -> bool:
        """Apply an AlterPartition answer to a partition this broker leads.

        Only when the row is still led here at ``leader_epoch`` (AlterPartition never changes
        the leader epoch; a newer LeaderAndIsr wins) and the answer is not older than the
        row's partition epoch. Returns whether it was applied.
        """
        with self._lock:
            hosted = self._partitions.get(tp)
            if (
                hosted is None
                or hosted.role is not Role.LEADER
                or hosted.leader_epoch != leader_epoch
                or partition_epoch < hosted.partition_epoch
            ):
                return False
            hosted.isr = tuple(isr)
            hosted.partition_epoch = partition_epoch
            hosted.leader_recovery_state = leader_recovery_state
            return True

    # -- introspection -------------------------------------------------------------------------

    def hosted(self, tp: TopicPartition) -> Hosted | None:
        with self._lock:
            hosted = self._partitions.get(tp)
            return None if hosted is None else replace(hosted)

    def cached_partition(
        self, tp: TopicPartition
    ) -> broker_pb2.UpdateMetadataPartitionState | None:
        with self._lock:
            entry = self._metadata.get(tp)
            return _copy(entry[1]) if entry else None

    def describe(self) -> broker_pb2.DescribeResponse:
        with self._lock:
            response = broker_pb2.DescribeResponse(
                broker_id=self.broker_id,
                broker_epoch=self._broker_epoch,
                controller_epoch=self._controller_epoch,
                metadata_controller_id=self._metadata_controller_id,
                live_brokers=[self._live_brokers[b] for b in sorted(self._live_brokers)],
                offline_partitions=[
                    common_pb2.TopicPartition(topic=tp.topic, partition=tp.partition)
                    for tp in sorted(self._offline)
                ],
                requests_received=dict(self._received),
            )
            for tp in sorted(self._partitions):
                h = self._partitions[tp]
                response.partitions.add(
                    topic_name=tp.topic,
                    topic_id=h.topic_id,
                    partition_index=tp.partition,
                    role=int(h.role),
                    leader=h.leader,
                    leader_epoch=h.leader_epoch,
                    partition_epoch=h.partition_epoch,
                    isr=h.isr,
                    replicas=h.replicas,
                    adding_replicas=h.adding_replicas,
                    removing_replicas=h.removing_replicas,
                    leader_recovery_state=h.leader_recovery_state,
                    controller_epoch=h.controller_epoch,
                    is_new=h.is_new,
                )
            for tp in sorted(self._metadata):
                topic_id, state = self._metadata[tp]
                response.metadata_partitions.add(
                    topic_name=tp.topic, topic_id=topic_id, state=state
                )
            return response

    # -- logging -------------------------------------------------------------------------------

    def _log_rejected(self, kind: str, request: _ControlRequest, error: Errors) -> None:
        log.warning(
            "rejected controller request",
            request=kind,
            error=error.name,
            controller_id=request.controller_id,
            controller_epoch=request.controller_epoch,
            request_broker_epoch=request.broker_epoch,
            broker_epoch=self._broker_epoch,
            highest_controller_epoch=self._controller_epoch,
        )

    def _log_outcome(
        self, kind: str, request: _ControlRequest, outcomes: Counter[str], rejected: list[str]
    ) -> None:
        # One line per request (a failover sends thousands of partitions at once); info when
        # something was refused, else debug.
        emit = log.info if rejected else log.debug
        emit(
            f"applied {kind}",
            controller_id=request.controller_id,
            controller_epoch=request.controller_epoch,
            outcomes=dict(outcomes),
            first_rejected=rejected,
        )


_ControlRequest = (
    broker_pb2.LeaderAndIsrRequest
    | broker_pb2.UpdateMetadataRequest
    | broker_pb2.StopReplicaRequest
)


_M = TypeVar("_M", broker_pb2.UpdateMetadataBroker, broker_pb2.UpdateMetadataPartitionState)


def _copy(message: _M) -> _M:
    # Keep our own copy: the request object belongs to gRPC.
    copy = type(message)()
    copy.CopyFrom(message)
    return copy


def leader_and_isr_error_response(
    request: broker_pb2.LeaderAndIsrRequest, error: Errors
) -> broker_pb2.LeaderAndIsrResponse:
    """Kafka's LeaderAndIsrRequest.getErrorResponse: the error on top and on every partition."""
    response = broker_pb2.LeaderAndIsrResponse(error_code=wire_code(error))
    for topic in request.topic_states:
        errors = response.topics.add(topic_id=topic.topic_id, topic_name=topic.topic_name)
        for state in topic.partition_states:
            errors.partition_errors.add(partition_index=state.partition_index, error_code=error)
    return response
