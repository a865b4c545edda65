"""Leader election: Kafka's four algorithms and the strategies that wrap them.

Two layers, both pure functions over plain data (no I/O, no ``ControllerContext``):

* the algorithms (``PartitionLeaderElectionAlgorithms`` in PartitionStateMachine.scala, spec
  3.3) only pick a leader id;
* the strategy wrappers (``Election.scala``) choose the live set the algorithm sees, compute
  the new ``LeaderAndIsr`` from the state read from ZooKeeper, and name the brokers that must
  receive the resulting LeaderAndIsr request.

Kafka marks the ``UncleanLeaderElectionsPerSec`` meter from inside the offline algorithm. Here
the algorithm returns ``(leader, was_unclean)`` instead, so callers count unclean elections
without a global meter.

Membership arguments are typed ``Container[int]``: only ``in`` is used, so callers can pass a
set or a cheap view over the controller context (see ``ControllerContext.online_replicas``)
without materialising a set per partition.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from controller.core.model import LeaderAndIsr, ReplicaAssignment, TopicPartition

#: The topic config (and dynamic broker default) that allows unclean elections.
UNCLEAN_CONFIG: Final = "unclean.leader.election.enable"


def unclean_enabled(config: dict[str, str], default: bool) -> bool:
    """The effective setting: the topic override (``"true"`` in any case), else the default.
    A value that is neither true nor false reads as false (see ``invalid_unclean_value``)."""
    value = config.get(UNCLEAN_CONFIG)
    return default if value is None else value.strip().lower() == "true"


def invalid_unclean_value(config: dict[str, str]) -> str | None:
    """The topic's ``unclean.leader.election.enable`` when Kafka's boolean parser would refuse
    it (anything but true or false, in any case, around blanks), else None. Kafka fails the
    elections that read it; here it reads as false, the same outcome, and is reported."""
    value = config.get(UNCLEAN_CONFIG)
    if value is None or value.strip().lower() in ("true", "false"):
        return None
    return value

# --------------------------------------------------------------------------------------------
# Algorithms (spec 3.3). Each returns the chosen leader or None.
# --------------------------------------------------------------------------------------------


def offline_partition_leader_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: Container[int],
    unclean_enabled: bool,
) -> tuple[int | None, bool]:
    """First replica in assignment order that is live and in the ISR.

    Failing that, and only if unclean election is enabled, the first live replica in
    assignment order. Returns ``(leader, was_unclean)``; ``was_unclean`` is True exactly when
    Kafka would mark the unclean-election meter (a leader was found on the unclean path).
    """
    in_sync = set(isr)
    for r in assignment:
        if r in live_replicas and r in in_sync:
            return r, False
    if unclean_enabled:
        for r in assignment:
            if r in live_replicas:
                return r, True
    return None, False


def reassign_partition_leader_election(
    reassignment: Sequence[int], isr: Sequence[int], live_replicas: Container[int]
) -> int | None:
    """First replica of the target replica set (TRS order) that is live and in the ISR."""
    in_sync = set(isr)
    for r in reassignment:
        if r in live_replicas and r in in_sync:
            return r
    return None


def preferred_replica_partition_leader_election(
    assignment: Sequence[int], isr: Sequence[int], live_replicas: Container[int]
) -> int | None:
    """The preferred replica (head of RS) if it is live and in the ISR; never a fallback."""
    if not assignment:
        return None
    preferred = assignment[0]
    if preferred in live_replicas and preferred in isr:
        return preferred
    return None


def controlled_shutdown_partition_leader_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: Container[int],
    shutting_down: Container[int],
) -> int | None:
    """First replica in assignment order that is live, in the ISR and not shutting down.

    ``live_replicas`` is the live-*or-shutting-down* set here (the strategy passes it so), which
    is why the shutting-down filter is separate.
    """
    in_sync = set(isr)
    for r in assignment:
        if r in live_replicas and r in in_sync and r not in shutting_down:
            return r
    return None


# --------------------------------------------------------------------------------------------
# Strategies (PartitionLeaderElectionStrategy) and the kind strings of the state-change log.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OfflinePartitionLeaderElectionStrategy:
    """Elect a leader for a new/offline partition; ``allow_unclean`` is the admin override."""

    allow_unclean: bool = False

    def __str__(self) -> str:
        # As Kafka's case class prints in its error messages (admin clients see them).
        return f"OfflinePartitionLeaderElectionStrategy({str(self.allow_unclean).lower()})"


@dataclass(frozen=True, slots=True)
class ReassignPartitionLeaderElectionStrategy:
    """Move leadership into the target replica set of a reassignment."""

    def __str__(self) -> str:
        return "ReassignPartitionLeaderElectionStrategy"  # Kafka's case object


@dataclass(frozen=True, slots=True)
class PreferredReplicaPartitionLeaderElectionStrategy:
    """Move leadership back to the preferred replica (head of RS)."""

    def __str__(self) -> str:
        return "PreferredReplicaPartitionLeaderElectionStrategy"  # Kafka's case object


@dataclass(frozen=True, slots=True)
class ControlledShutdownPartitionLeaderElectionStrategy:
    """Move leadership off brokers that are in controlled shutdown."""

    def __str__(self) -> str:
        return "ControlledShutdownPartitionLeaderElectionStrategy"  # Kafka's case object


ElectionStrategy = (
    OfflinePartitionLeaderElectionStrategy
    | ReassignPartitionLeaderElectionStrategy
    | PreferredReplicaPartitionLeaderElectionStrategy
    | ControlledShutdownPartitionLeaderElectionStrategy
)

# Kafka's strategies without parameters are case objects; these are the shared instances.
REASSIGN_STRATEGY: Final = ReassignPartitionLeaderElectionStrategy()
PREFERRED_STRATEGY: Final = PreferredReplicaPartitionLeaderElectionStrategy()
CONTROLLED_SHUTDOWN_STRATEGY: Final = ControlledShutdownPartitionLeaderElectionStrategy()

ElectionKind = Literal["offline", "offline_unclean", "reassign", "preferred", "controlled_shutdown"]


def election_kind(strategy: ElectionStrategy, unclean: bool = False) -> ElectionKind:
    """The election-kind label used in the state-change log and metrics.

    ``unclean`` only matters for the offline strategy; it is the ``unclean`` flag of the
    ``ElectionResult`` (an unclean leader was actually chosen), not the strategy's permission.
    """
    match strategy:
        case OfflinePartitionLeaderElectionStrategy():
            return "offline_unclean" if unclean else "offline"
        case ReassignPartitionLeaderElectionStrategy():
            return "reassign"
        case PreferredReplicaPartitionLeaderElectionStrategy():
            return "preferred"
        case ControlledShutdownPartitionLeaderElectionStrategy():
            return "controlled_shutdown"
    raise TypeError(f"not an election strategy: {strategy!r}")


# --------------------------------------------------------------------------------------------
# Strategy wrappers (Election.scala).
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ElectionResult:
    """Outcome of one partition's election.

    ``leader_and_isr`` is the state to write (conditional on its ``partition_epoch``, which is
    carried over from the ZK read), or None when no leader could be chosen. ``recipients`` are
    the brokers to send LeaderAndIsr to, in assignment order (Kafka's ``liveReplicas`` field;
    the batch drops brokers that are not live-or-shutting-down). ``unclean`` is True when the
    chosen leader was not in the ISR.
    """

    tp: TopicPartition
    leader_and_isr: LeaderAndIsr | None
    recipients: tuple[int, ...]
    unclean: bool = False

    @property
    def succeeded(self) -> bool:
        return self.leader_and_isr is not None


def leader_for_offline(
    tp: TopicPartition,
    assignment: Sequence[int],
    leader_and_isr: LeaderAndIsr | None,
    online_replicas: Container[int],
    allow_unclean: bool,
    leader_recovery_supported: bool = True,
) -> ElectionResult:
    """``OfflinePartitionLeaderElectionStrategy``: new or offline partitions.

    ``assignment`` is RS. ``online_replicas`` must answer ``isReplicaOnline(b, tp)`` for any
    broker ``b`` (live, not shutting down, log dir OK) -- not only RS members, because the new
    ISR keeps every online ISR member, as Kafka does. ``allow_unclean`` is the *effective*
    permission for this partition (the admin flag, or the topic's
    ``unclean.leader.election.enable`` when no ISR member is online).
    ``leader_recovery_supported`` is IBP >= 3.2-IV0.
    """
    live = tuple(r for r in assignment if r in online_replicas)
    if leader_and_isr is None:
        return ElectionResult(tp, None, live)
    isr = leader_and_isr.isr
    leader, unclean = offline_partition_leader_election(assignment, isr, live, allow_unclean)
    if leader is None:
        return ElectionResult(tp, None, live)
    if leader in isr:
        # Dead and shutting-down members leave the ISR with this election.
        new = leader_and_isr.new_leader_and_isr(leader, (r for r in isr if r in online_replicas))
    elif leader_recovery_supported:
        new = leader_and_isr.new_recovering_leader_and_isr(leader, (leader,))
    else:
        new = leader_and_isr.new_leader_and_isr(leader, (leader,))
    return ElectionResult(tp, new, live, unclean)


def leader_for_reassign(
    tp: TopicPartition,
    assignment: ReplicaAssignment,
    leader_and_isr: LeaderAndIsr,
    online_replicas: Container[int],
) -> ElectionResult:
    """``ReassignPartitionLeaderElectionStrategy``: pick a leader from TRS; ISR unchanged.

    LeaderAndIsr goes to every TRS member, live or not (the batch drops dead ones).
    """
    target = assignment.target_replicas
    live = tuple(r for r in target if r in online_replicas)
    leader = reassign_partition_leader_election(target, leader_and_isr.isr, live)
    new = None if leader is None else leader_and_isr.new_leader(leader)
    return ElectionResult(tp, new, target)


def leader_for_preferred(
    tp: TopicPartition,
    assignment: Sequence[int],
    leader_and_isr: LeaderAndIsr,
    online_replicas: Container[int],
) -> ElectionResult:
    """``PreferredReplicaPartitionLeaderElectionStrategy``: head of RS or nothing; ISR unchanged.

    LeaderAndIsr goes to every RS member, live or not.
    """
    replicas = tuple(assignment)
    live = tuple(r for r in replicas if r in online_replicas)
    leader = preferred_replica_partition_leader_election(replicas, leader_and_isr.isr, live)
    new = None if leader is None else leader_and_isr.new_leader(leader)
    return ElectionResult(tp, new, replicas)


def leader_for_controlled_shutdown(
    tp: TopicPartition,
    assignment: Sequence[int],
    leader_and_isr: LeaderAndIsr,
    live_or_shutting_down_online: Container[int],
    shutting_down: Container[int],
) -> ElectionResult:
    """``ControlledShutdownPartitionLeaderElectionStrategy``.

    The live set includes shutting-down brokers (dir OK), so the departing broker also
    receives the LeaderAndIsr. The new ISR drops *every* shutting-down broker, not only the
    one asking (spec 7.8).
    """
    live = tuple(r for r in assignment if r in live_or_shutting_down_online)
    isr = leader_and_isr.isr
    leader = controlled_shutdown_partition_leader_election(assignment, isr, live, shutting_down)
    if leader is None:
        return ElectionResult(tp, None, live)
    new_isr = tuple(r for r in isr if r not in shutting_down)
    return ElectionResult(tp, leader_and_isr.new_leader_and_isr(leader, new_isr), live)
