"""Reading partition states for a read-compute-write update (pitfall 2).

Elections and ISR removals work on the state read from ZooKeeper, not the cache, and write it
back conditionally on the zkVersion they read. Both first need the same sorting of the read:
usable states, missing state znodes, and failures, where a state last written by a *newer*
controller is a failure for that partition (pitfall 23), never a reason to resign.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from controller.core.errors import StateChangeFailedError
from controller.core.model import (
    MAX_EPOCH,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicPartition,
)
from controller.zk.errors import NoNodeError
from controller.zk.gateway import ZkGateway


@dataclass(slots=True)
class StatesForUpdate:
    current: dict[TopicPartition, LeaderAndIsr] = field(default_factory=dict)
    missing: list[TopicPartition] = field(default_factory=list)
    failed: dict[TopicPartition, Exception] = field(default_factory=dict)


def newer_controller_error(epoch: int, written_by: int) -> StateChangeFailedError:
    return StateChangeFailedError(
        "Leader and isr path written by another controller. This probably means the current "
        f"controller with epoch {epoch} went through a soft failure and another controller "
        f"was elected with epoch {written_by}. Aborting state change by this controller"
    )


def exhausted_leader_epoch_error(tp: TopicPartition, epoch: int) -> StateChangeFailedError:
    return StateChangeFailedError(
        f"the state of {tp} has leader_epoch {epoch}, the int32 maximum: no newer leader epoch "
        "can be written, so its leader and ISR cannot change"
    )


def read_states_for_update(
    gateway: ZkGateway,
    partitions: Sequence[TopicPartition],
    controller_epoch: int,
    *,
    newer_controller: Callable[[TopicPartition, int], StateChangeFailedError] | None = None,
) -> StatesForUpdate:
    """Kafka's ``getTopicPartitionStatesFromZk``; a failed read fails these partitions only.
    ``newer_controller`` words the error for a state a newer controller wrote (the partition
    state machine's differs from the replica state machine's, as in Kafka)."""
    out = StatesForUpdate()
    try:
        raw = gateway.get_partition_states_raw(partitions)
    except Exception as exc:
        out.failed = dict.fromkeys(partitions, exc)
        return out
    for tp in partitions:
        res = raw.get(tp)
        if isinstance(res, LeaderIsrAndControllerEpoch):
            if res.controller_epoch > controller_epoch:
                out.failed[tp] = (
                    newer_controller(tp, res.controller_epoch)
                    if newer_controller is not None
                    else newer_controller_error(controller_epoch, res.controller_epoch)
                )
            elif res.leader_and_isr.leader_epoch >= MAX_EPOCH:
                # Every update from here bumps the leader epoch, which must stay an int32.
                out.failed[tp] = exhausted_leader_epoch_error(tp, res.leader_and_isr.leader_epoch)
            else:
                out.current[tp] = res.leader_and_isr
        elif res is None or isinstance(res, NoNodeError):
            out.missing.append(tp)
        else:
            out.failed[tp] = res
    return out
