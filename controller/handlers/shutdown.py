"""Controlled shutdown (reference §2.9): a broker about to stop asks the controller to move
leadership away first.

``ControlledShutdown(broker_id, broker_epoch)`` is answered with the set of partitions the
broker still leads (empty: it can stop without making anything unavailable), or an error:

* ``NotControllerError`` -- this node is not active (the RPC names the active controller);
* ``ApiError(STALE_BROKER_EPOCH)`` -- the request's epoch is *lower* than the registration the
  controller knows (an old incarnation of the broker); -1 skips the check, a higher epoch is
  accepted (pitfall 19);
* ``ApiError(BROKER_NOT_AVAILABLE)`` -- the broker is not registered.

Difference from Kafka: for a broker id missing from the epoch cache, Kafka's map lookup throws
before its "not available" check and the broker gets UNKNOWN_SERVER_ERROR; here it gets
BROKER_NOT_AVAILABLE, which says what is wrong.

From the moment it is accepted, the broker is "shutting down": not an election candidate, its
replicas count as offline in UpdateMetadata, and controlled-shutdown elections drop it from
every ISR (pitfalls 7 and 8). It stays so until its registration goes away (or it re-registers
with a new epoch); a retried request is processed again and is harmless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from controller.api.errors import ApiError, Errors
from controller.core.election import CONTROLLED_SHUTDOWN_STRATEGY
from controller.core.events import ControlledShutdown, NotControllerError
from controller.core.model import (
    UNKNOWN_BROKER_EPOCH,
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
    TopicPartition,
)
from controller.zk.errors import ControllerMovedError

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.shutdown")


class ControlledShutdownHandler:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl

    def handlers(self) -> dict[type, Any]:
        return {ControlledShutdown: self.process_controlled_shutdown}

    def process_controlled_shutdown(self, event: ControlledShutdown) -> None:
        """Kafka's ``processControlledShutdown``: the callback gets the result or the error."""
        try:
            remaining = self.do_controlled_shutdown(event.broker_id, event.broker_epoch)
        except ControllerMovedError as exc:
            if not event.reply.done():
                event.reply.set_exception(exc)
            raise  # the hub resigns
        except Exception as exc:
            if not isinstance(exc, ApiError | NotControllerError):
                log.exception("controlled shutdown failed", broker_id=event.broker_id)
            if not event.reply.done():
                event.reply.set_exception(exc)
            return
        if not event.reply.done():
            event.reply.set_result(remaining)

    def do_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> set[TopicPartition]:
        ctl = self.ctl
        ctx = ctl.context
        if not ctl.is_active:
            raise NotControllerError(ctl.active_controller_id)
        epochs = ctx.live_broker_id_and_epochs()
        if broker_id not in epochs:
            raise ApiError(
                Errors.BROKER_NOT_AVAILABLE,
                f"Broker id {broker_id} does not exist (it is not registered in /brokers/ids).",
            )
        cached_epoch = epochs[broker_id]
        if broker_epoch != UNKNOWN_BROKER_EPOCH and broker_epoch < cached_epoch:
            message = (
                f"Received controlled shutdown request from an old broker epoch {broker_epoch} "
                f"for broker {broker_id}. Current broker epoch is {cached_epoch}."
            )
            log.info(message, broker_id=broker_id)
            raise ApiError(Errors.STALE_BROKER_EPOCH, message)

        log.info("shutting down broker", broker_id=broker_id, broker_epoch=broker_epoch)
        ctx.shutting_down_broker_ids.add(broker_id)
        log.debug(
            "shutting-down and live brokers",
            shutting_down=sorted(ctx.shutting_down_broker_ids),
            live=sorted(ctx.live_broker_ids()),
        )

        to_act_on = [
            tp
            for tp in sorted(ctx.partitions_on_broker(broker_id))
            if len(ctx.partition_replica_assignment(tp)) > 1
            and ctx.partition_leadership_info(tp) is not None
            and not ctx.is_topic_queued_up_for_deletion(tp.topic)
        ]
        led: list[TopicPartition] = []
        followed: list[TopicPartition] = []
        for tp in to_act_on:
            lai = ctx.partition_leader_and_isr(tp)
            (led if lai is not None and lai.leader == broker_id else followed).append(tp)

        ctl.partition_state_machine.handle_state_changes(
            led, PartitionState.OnlinePartition, CONTROLLED_SHUTDOWN_STRATEGY
        )
        if followed:
            with ctl.own_request_batch() as batch:
                for tp in followed:
                    batch.add_stop_replica_request_for_brokers(
                        (broker_id,), tp, delete_partition=False
                    )
                batch.send_requests_to_brokers(ctx.epoch)
            # Followers leave the ISR in ZooKeeper and the leaders hear about it.
            ctl.replica_state_machine.handle_state_changes(
                [PartitionAndReplica(tp, broker_id) for tp in followed],
                ReplicaState.OfflineReplica,
            )
        remaining = ctx.partition_leaders_on_broker(broker_id)
        log.info(
            "controlled shutdown processed",
            broker_id=broker_id,
            leaders_moved=len(led) - len(remaining & set(led)),
            followers_stopped=len(followed),
            remaining=sorted(str(tp) for tp in remaining),
        )
        return remaining
