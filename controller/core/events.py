"""The controller event catalogue (Kafka's ``ControllerEvent`` subclasses, reference §2.2).

Events are plain data. Each names the ``ControllerState`` it is processed under (the metric
bucket). Events that answer a caller carry a ``Future`` in ``reply``: the handler resolves it,
and ``preempt`` (queue cleared on resignation, expiry or shutdown) fails it with
``NotControllerError`` so the caller learns at once that this node is no longer in charge.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, ClassVar

from controller.core.controller_state import ControllerState
from controller.core.model import TopicPartition


class NotControllerError(Exception):
    """This node is not (or no longer) the active controller."""

    def __init__(self, active_controller_id: int = -1) -> None:
        self.active_controller_id = active_controller_id
        super().__init__(
            f"not the active controller (active controller id: {active_controller_id})"
        )


@dataclass(eq=False)
class ControllerEvent:
    state: ClassVar[ControllerState] = ControllerState.Idle

    @property
    def name(self) -> str:
        return type(self).__name__

    def preempt(self) -> None:
        """Called instead of processing when the queue is cleared."""


@dataclass(eq=False)
class ReplyingEvent(ControllerEvent):
    """An event whose caller waits for an answer (admin and broker RPCs)."""

    reply: Future[Any] = field(default_factory=Future, kw_only=True)

    def preempt(self) -> None:
        if not self.reply.done():
            self.reply.set_exception(NotControllerError())


# -- controller election (ControllerChange bucket) ------------------------------------------


@dataclass(eq=False)
class Startup(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.ControllerChange


@dataclass(eq=False)
class ControllerChange(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.ControllerChange


@dataclass(eq=False)
class Reelect(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.ControllerChange


@dataclass(eq=False)
class RegisterBrokerAndReelect(ControllerEvent):
    """A new ZooKeeper session was established (after an expiry)."""

    state: ClassVar[ControllerState] = ControllerState.ControllerChange


@dataclass(eq=False)
class Expire(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.ControllerChange


@dataclass(eq=False)
class ShutdownEventThread(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.ControllerShutdown


class ResignPreempted(Exception):
    """A ``Resign`` dropped unprocessed: a session expiry cleared the queue before it ran."""


@dataclass(eq=False)
class Resign(ControllerEvent):
    """Graceful stop: resign and delete our own ``/controller`` (SIGTERM)."""

    state: ClassVar[ControllerState] = ControllerState.ControllerShutdown
    done: Future[None] = field(default_factory=Future, kw_only=True)

    def preempt(self) -> None:
        # Not a result: the stop must not take a resignation that never ran as done.
        if not self.done.done():
            self.done.set_exception(ResignPreempted())


# -- brokers and topics ----------------------------------------------------------------------


@dataclass(eq=False)
class BrokerChange(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.BrokerChange


@dataclass(eq=False)
class BrokerModifications(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.BrokerChange
    broker_id: int = -1


@dataclass(eq=False)
class TopicChange(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.TopicChange


@dataclass(eq=False)
class PartitionModifications(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.TopicChange
    topic: str = ""


@dataclass(eq=False)
class TopicDeletion(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.TopicDeletion


@dataclass(eq=False)
class TopicDeletionStopReplicaResponseReceived(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.TopicDeletion
    replica_id: int = -1
    request_error: int = 0
    partition_errors: Mapping[TopicPartition, int] = field(default_factory=dict)


# -- reassignment --------------------------------------------------------------------------


@dataclass(eq=False)
class ZkPartitionReassignment(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.AlterPartitionReassignment


@dataclass(eq=False)
class ApiPartitionReassignment(ReplyingEvent):
    state: ClassVar[ControllerState] = ControllerState.AlterPartitionReassignment
    # None as a target means "cancel".
    reassignments: Mapping[TopicPartition, tuple[int, ...] | None] = field(default_factory=dict)


@dataclass(eq=False)
class PartitionReassignmentIsrChange(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.AlterPartitionReassignment
    tp: TopicPartition = field(default_factory=lambda: TopicPartition("", -1))


@dataclass(eq=False)
class ListPartitionReassignments(ReplyingEvent):
    state: ClassVar[ControllerState] = ControllerState.ListPartitionReassignment
    partitions: frozenset[TopicPartition] | None = None


# -- elections -----------------------------------------------------------------------------


class ElectionType(enum.Enum):
    PREFERRED = "PREFERRED"
    UNCLEAN = "UNCLEAN"


class ElectionTrigger(enum.Enum):
    ZK_TRIGGERED = "ZkTriggered"
    ADMIN_CLIENT_TRIGGERED = "AdminClientTriggered"
    AUTO_TRIGGERED = "AutoTriggered"


@dataclass(eq=False)
class ReplicaLeaderElection(ReplyingEvent):
    state: ClassVar[ControllerState] = ControllerState.ManualLeaderBalance
    partitions: frozenset[TopicPartition] | None = None
    election_type: ElectionType = ElectionType.PREFERRED
    trigger: ElectionTrigger = ElectionTrigger.ZK_TRIGGERED


@dataclass(eq=False)
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.AutoLeaderBalance


@dataclass(eq=False)
class UncleanLeaderElectionEnable(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.UncleanLeaderElectionEnable


@dataclass(eq=False)
class TopicUncleanLeaderElectionEnable(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.TopicUncleanLeaderElectionEnable
    topic: str = ""


# -- broker requests and responses ---------------------------------------------------------


@dataclass(eq=False)
class ControlledShutdown(ReplyingEvent):
    state: ClassVar[ControllerState] = ControllerState.ControlledShutdown
    broker_id: int = -1
    broker_epoch: int = -1


@dataclass(eq=False)
class AlterPartitionReceived(ReplyingEvent):
    state: ClassVar[ControllerState] = ControllerState.IsrChange
    request: Any = None  # the decoded AlterPartition request

    def preempt(self) -> None:
        # Kafka sends no callback on preempt for AlterPartition; the broker's deadline
        # expires and it retries against whoever is controller then. We fail fast instead,
        # which gives the broker the same outcome sooner.
        super().preempt()


@dataclass(eq=False)
class AllocateProducerIds(ReplyingEvent):
    """A broker asks for a block of producer ids (KIP-730); answered with a
    ``ProducerIdBlock``. Kafka processes it under no controller state (Idle)."""

    broker_id: int = -1
    broker_epoch: int = -1


@dataclass(eq=False)
class LeaderAndIsrResponseReceived(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.LeaderAndIsrResponseReceived
    broker_id: int = -1
    broker_epoch: int | None = None  # the incarnation the request was sent to (None: any)
    error_code: int = 0
    partition_errors: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(eq=False)
class UpdateMetadataResponseReceived(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.UpdateMetadataResponseReceived
    broker_id: int = -1
    error_code: int = 0


@dataclass(eq=False)
class IsrChangeNotification(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.IsrChange


@dataclass(eq=False)
class LogDirEventNotification(ControllerEvent):
    state: ClassVar[ControllerState] = ControllerState.LogDirChange


# -- features ------------------------------------------------------------------------------


@dataclass(eq=False)
class UpdateFeatures(ReplyingEvent):
    """Admin request to change finalized features (KIP-584); answered with
    ``{feature: ApiError | None}`` (None: applied, or valid under ``validate_only``)."""

    state: ClassVar[ControllerState] = ControllerState.UpdateFeatures
    updates: tuple[Any, ...] = ()  # core.features.FeatureUpdateItem
    validate_only: bool = False


@dataclass(eq=False)
class FeatureZNodeChange(ControllerEvent):
    """``/feature`` created, changed or deleted (Kafka's ``FinalizedFeatureChangeListener``
    keeps its feature cache in step the same way). Untimed (Idle): Kafka's listener is no
    controller event, and the UpdateFeatures timer is the requests'."""

    state: ClassVar[ControllerState] = ControllerState.Idle


# -- diagnostics ---------------------------------------------------------------------------


@dataclass(eq=False)
class Probe(ReplyingEvent):
    """Runs ``fn(controller)`` on the event thread; used by tests, status and benchmarks."""

    state: ClassVar[ControllerState] = ControllerState.Idle
    fn: Any = None


def event_names() -> list[str]:
    """The names of every kind of event (the leaf classes), sorted: the label values of the
    per-event metrics, created up front so a first occurrence is an increase."""
    leaves: set[str] = set()
    todo = [ControllerEvent]
    while todo:
        cls = todo.pop()
        subclasses = cls.__subclasses__()
        if not subclasses:
            leaves.add(cls.__name__)
        todo.extend(subclasses)
    return sorted(leaves)
