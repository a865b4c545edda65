"""The controller's plain-data vocabulary: partitions, replicas, leadership, assignments, brokers.

Names follow Kafka's controller (``LeaderAndIsr``, ``ReplicaAssignment``, ``OnlinePartition``)
so that the reference document maps one to one onto the code. Everything here is immutable
and free of I/O, so the election algorithms and state-transition rules can be tested as pure
functions.
"""

from __future__ import annotations

import base64
import enum
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

# Sentinels shared with Kafka (LeaderAndIsr.scala).
NO_LEADER = -1
LEADER_DURING_DELETE = -2
NO_EPOCH = -1
EPOCH_DURING_DELETE = -2
INITIAL_LEADER_EPOCH = 0
# Leader and controller epochs are int32 in Kafka's formats and protocol.
MAX_EPOCH = 2**31 - 1
INITIAL_PARTITION_EPOCH = 0
UNKNOWN_BROKER_EPOCH = -1


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class PartitionAndReplica(NamedTuple):
    """One replica of one partition: the unit the replica state machine works on."""

    tp: TopicPartition
    replica: int

    def __str__(self) -> str:
        return f"[Topic={self.tp.topic},Partition={self.tp.partition},Replica={self.replica}]"


class LeaderRecoveryState(enum.IntEnum):
    RECOVERED = 0
    RECOVERING = 1


class PartitionState(enum.IntEnum):
    """Kafka's partition states, with Kafka's byte codes."""

    NewPartition = 0
    OnlinePartition = 1
    OfflinePartition = 2
    NonExistentPartition = 3


class ReplicaState(enum.IntEnum):
    """Kafka's replica states, with Kafka's byte codes."""

    NewReplica = 1
    OnlineReplica = 2
    OfflineReplica = 3
    ReplicaDeletionStarted = 4
    ReplicaDeletionSuccessful = 5
    ReplicaDeletionIneligible = 6
    NonExistentReplica = 7


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """The content of a partition ``state`` znode plus its zkVersion (``partition_epoch``).

    ``partition_epoch`` is the zkVersion the state was read at (or is expected to be written
    at); it is replaced by the new stat.version once a write succeeds.
    """

    leader: int
    leader_epoch: int = INITIAL_LEADER_EPOCH
    isr: tuple[int, ...] = ()
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    partition_epoch: int = INITIAL_PARTITION_EPOCH

    def _next_leader_epoch(self) -> int:
        if self.leader_epoch >= MAX_EPOCH:
            # A backstop: callers refuse such states first (state_reads); never write past int32.
            raise ValueError(f"leader_epoch {self.leader_epoch} is the int32 maximum")
        return self.leader_epoch + 1

    def new_leader(self, leader: int) -> LeaderAndIsr:
        return LeaderAndIsr(
            leader,
            self._next_leader_epoch(),
            self.isr,
            self.leader_recovery_state,
            self.partition_epoch,
        )

    def new_leader_and_isr(self, leader: int, isr: Iterable[int]) -> LeaderAndIsr:
        return LeaderAndIsr(
            leader,
            self._next_leader_epoch(),
            tuple(isr),
            self.leader_recovery_state,
            self.partition_epoch,
        )

    def new_recovering_leader_and_isr(self, leader: int, isr: Iterable[int]) -> LeaderAndIsr:
        return LeaderAndIsr(
            leader,
            self._next_leader_epoch(),
            tuple(isr),
            LeaderRecoveryState.RECOVERING,
            self.partition_epoch,
        )

    def new_epoch(self) -> LeaderAndIsr:
        return LeaderAndIsr(
            self.leader,
            self._next_leader_epoch(),
            self.isr,
            self.leader_recovery_state,
            self.partition_epoch,
        )

    def with_partition_epoch(self, partition_epoch: int) -> LeaderAndIsr:
        return LeaderAndIsr(
            self.leader, self.leader_epoch, self.isr, self.leader_recovery_state, partition_epoch
        )

    def equals_ignore_partition_epoch(self, other: LeaderAndIsr) -> bool:
        return (
            self.leader == other.leader
            and self.leader_epoch == other.leader_epoch
            and self.isr == other.isr
            and self.leader_recovery_state == other.leader_recovery_state
        )

    @staticmethod
    def during_delete(isr: Iterable[int]) -> LeaderAndIsr:
        return LeaderAndIsr(LEADER_DURING_DELETE, 0, tuple(isr), LeaderRecoveryState.RECOVERED, 0)


@dataclass(frozen=True, slots=True)
class LeaderIsrAndControllerEpoch:
    """Leadership of a partition plus the epoch of the controller that wrote it."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: int


def _diff(seq: Sequence[int], remove: Iterable[int]) -> tuple[int, ...]:
    """Order-keeping sequence difference (Scala's ``diff`` on distinct elements)."""
    drop = set(remove)
    return tuple(r for r in seq if r not in drop)


def _distinct(seq: Iterable[int]) -> tuple[int, ...]:
    seen: set[int] = set()
    out = []
    for r in seq:
        if r not in seen:
            seen.add(r)
            out.append(r)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's full replica set (RS) with the KIP-455 adding (AR) and removing (RR) sets."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @staticmethod
    def of(
        replicas: Iterable[int],
        adding: Iterable[int] = (),
        removing: Iterable[int] = (),
    ) -> ReplicaAssignment:
        return ReplicaAssignment(tuple(replicas), tuple(adding), tuple(removing))

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return _diff(self.replicas, self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return _diff(self.replicas, self.removing_replicas)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas) or bool(self.removing_replicas)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """Target first (in the requested order), then the origin replicas not in the target."""
        origin = self.origin_replicas
        full = _distinct([*target, *origin])
        return ReplicaAssignment(full, _diff(full, origin), _diff(full, target))

    def remove_replica(self, replica: int) -> ReplicaAssignment:
        return ReplicaAssignment(
            _diff(self.replicas, (replica,)),
            _diff(self.adding_replicas, (replica,)),
            _diff(self.removing_replicas, (replica,)),
        )

    def __str__(self) -> str:
        return (
            f"ReplicaAssignment(replicas={','.join(map(str, self.replicas))}, "
            f"addingReplicas={','.join(map(str, self.adding_replicas))}, "
            f"removingReplicas={','.join(map(str, self.removing_replicas))})"
        )


EMPTY_ASSIGNMENT = ReplicaAssignment(())


@dataclass(frozen=True, slots=True)
class EndPoint:
    """One advertised listener of a broker: ``LISTENER://host:port``."""

    listener: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def connection_string(self) -> str:
        return f"{self.listener}://{self.address}"

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Broker:
    """A registered broker as the controller sees it (decoded from ``/brokers/ids/N``)."""

    id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    features: dict[str, tuple[int, int]] = field(default_factory=dict, hash=False, compare=True)

    def endpoint(self, listener: str) -> EndPoint | None:
        for ep in self.endpoints:
            if ep.listener == listener:
                return ep
        return None


@dataclass(frozen=True, slots=True)
class BrokerAndEpoch:
    broker: Broker
    epoch: int  # czxid of the broker's ephemeral registration znode


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """The decoded content of ``/brokers/topics/T``."""

    topic: str
    topic_id: str | None
    partitions: dict[int, ReplicaAssignment]


def new_topic_id() -> str:
    """A random Kafka ``Uuid`` string: 16 bytes, URL-safe base64 without padding (22 chars).

    Kafka's ``Uuid.randomUuid`` redraws ids starting with '-' (they read like a CLI flag).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):
            return text
