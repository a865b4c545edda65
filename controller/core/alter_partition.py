"""AlterPartition validation (reference §2.10 steps 2 and 4): pure functions over plain data.

The controller's ``AlterPartitionReceived`` handler (``controller.handlers.isr``) resolves the
request against its context, asks these functions what to do with each partition, writes the
accepted ones to ZooKeeper and answers. Nothing here reads or writes anything, so every rule
can be tested on its own and in combination with the others.

The partition ladder is Kafka 3.6's ``KafkaController.tryProcessAlterPartition``; the first rule
that matches decides:

1. no cached leadership                                   -> UNKNOWN_TOPIC_OR_PARTITION
2. request partition epoch or leader epoch > cached        -> NOT_CONTROLLER (our cache is behind:
                                                             we are probably not the controller)
3. request leader epoch < cached                           -> FENCED_LEADER_EPOCH
4. proposal equals the current state (leader, leader epoch, ISR, recovery state), whatever its
   partition epoch (it is <= cached here)                  -> success with the *current* state
                                                             (an idempotent retry)
5. request partition epoch < cached                        -> INVALID_UPDATE_VERSION
6. RECOVERING with an ISR of more than one replica        -> INVALID_REQUEST
7. cached RECOVERED, proposed RECOVERING                   -> INVALID_REQUEST
8. (ours, see below) a malformed proposal                  -> INVALID_REQUEST
9. an ISR member that is not a live broker (KIP-841; shutting-down brokers are not live)
                                                           -> INELIGIBLE_REPLICA (request
                                                              version > 1) or
                                                              OPERATION_NOT_ATTEMPTED
10. otherwise                                              -> accept: write the proposal

Rule 8 is not Kafka's ZooKeeper controller, which writes whatever passes the other rules (an
ISR with duplicates, without the leader, or naming brokers that are not replicas; even a
request from a broker that is not the leader, which then *becomes* leader in the znode). Kafka's
KRaft controller refuses those with INVALID_REQUEST, and so do we: a correct leader never sends
them, and writing them would corrupt the partition state for every later election. It sits
after Kafka's rules 1-7, so what those refuse is refused with Kafka's code; a malformed
proposal that also names an ineligible replica (e.g. ISR (1, 3, 3) with broker 3 shutting
down) gets INVALID_REQUEST, where Kafka 3.6 answers INELIGIBLE_REPLICA: the malformation is
what no correct leader sends.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from controller.api.errors import Errors
from controller.core.model import LeaderAndIsr, LeaderRecoveryState

# The AlterPartition version whose semantics the gRPC protocol carries (topic ids, ISR members
# with broker epochs; proto/controller/api/v1/controller.proto).
CURRENT_VERSION = 3


class Outcome(enum.Enum):
    """What to do with one partition of an AlterPartition request."""

    WRITE = "write"  # write ``state`` (the proposal) to ZooKeeper
    CURRENT = "current"  # answer success with ``state`` (the current state); write nothing
    REJECT = "reject"  # answer ``error``


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: Outcome
    error: Errors = Errors.NONE
    state: LeaderAndIsr | None = None
    # Why, in words, for the log line of a refusal (empty on success).
    reason: str = ""

    @staticmethod
    def reject(error: Errors, reason: str) -> Verdict:
        return Verdict(Outcome.REJECT, error, None, reason)


def check_broker_epoch(
    broker_id: int, broker_epoch: int, live_broker_epochs: Mapping[int, int]
) -> Errors:
    """§2.10 step 2: the requester must be live (not shutting down counts as live here) and
    send exactly the epoch the controller caches for it (pitfall 19: equality, and -1 does
    not bypass the check as it does for ControlledShutdown)."""
    cached = live_broker_epochs.get(broker_id)
    if cached is None or cached != broker_epoch:
        return Errors.STALE_BROKER_EPOCH
    return Errors.NONE


def _malformed(current: LeaderAndIsr, proposed: LeaderAndIsr, replicas: Collection[int]) -> str:
    """Rule 8: what is structurally wrong with the proposal, or "" when nothing is."""
    if proposed.leader != current.leader:
        return (
            f"broker {proposed.leader} is not the leader (the leader at epoch "
            f"{current.leader_epoch} is {current.leader})"
        )
    duplicates = sorted(b for b, n in Counter(proposed.isr).items() if n > 1)
    if duplicates:
        return f"the ISR {list(proposed.isr)} lists {duplicates} more than once"
    if proposed.leader not in proposed.isr:
        return f"the ISR {list(proposed.isr)} does not contain the leader {proposed.leader}"
    strangers = [b for b in proposed.isr if b not in replicas]
    if strangers:
        return (
            f"the ISR {list(proposed.isr)} names {strangers}, which are not replicas of the "
            f"partition (replicas: {list(replicas)})"
        )
    return ""


def validate_partition(
    current: LeaderAndIsr | None,
    proposed: LeaderAndIsr,
    *,
    replicas: Collection[int],
    live_broker_ids: Collection[int],
    request_version: int = CURRENT_VERSION,
) -> Verdict:
    """The ladder of the module docstring for one partition.

    ``current``: the cached leadership (None if the controller has none); ``proposed``: the
    request's state with leader = the requesting broker; ``replicas``: the partition's full
    replica set (RS, including adding replicas); ``live_broker_ids``: live brokers that are not
    shutting down.
    """
    if current is None:
        return Verdict.reject(
            Errors.UNKNOWN_TOPIC_OR_PARTITION, "the controller has no leadership for it"
        )
    if (
        proposed.partition_epoch > current.partition_epoch
        or proposed.leader_epoch > current.leader_epoch
    ):
        return Verdict.reject(
            Errors.NOT_CONTROLLER,
            f"the request's leader epoch {proposed.leader_epoch} / partition epoch "
            f"{proposed.partition_epoch} are ahead of the controller's "
            f"{current.leader_epoch} / {current.partition_epoch}",
        )
    if proposed.leader_epoch < current.leader_epoch:
        return Verdict.reject(
            Errors.FENCED_LEADER_EPOCH,
            f"leader epoch {proposed.leader_epoch} is older than {current.leader_epoch}",
        )
    if proposed.equals_ignore_partition_epoch(current):
        return Verdict(Outcome.CURRENT, state=current)
    if proposed.partition_epoch < current.partition_epoch:
        return Verdict.reject(
            Errors.INVALID_UPDATE_VERSION,
            f"partition epoch {proposed.partition_epoch} is older than {current.partition_epoch}",
        )
    if proposed.leader_recovery_state is LeaderRecoveryState.RECOVERING and len(proposed.isr) > 1:
        return Verdict.reject(
            Errors.INVALID_REQUEST,
            f"a RECOVERING leader must have an ISR of one, not {list(proposed.isr)}",
        )
    if (
        current.leader_recovery_state is LeaderRecoveryState.RECOVERED
        and proposed.leader_recovery_state is LeaderRecoveryState.RECOVERING
    ):
        return Verdict.reject(
            Errors.INVALID_REQUEST,
            "the leader recovery state cannot go from RECOVERED back to RECOVERING",
        )
    problem = _malformed(current, proposed, replicas)
    if problem:
        return Verdict.reject(Errors.INVALID_REQUEST, problem)
    ineligible = sorted(set(proposed.isr) - set(live_broker_ids))
    if ineligible:
        error = Errors.INELIGIBLE_REPLICA if request_version > 1 else Errors.OPERATION_NOT_ATTEMPTED
        return Verdict.reject(
            error,
            f"ISR members {ineligible} are not live brokers (dead or shutting down)",
        )
    return Verdict(Outcome.WRITE, state=proposed)
