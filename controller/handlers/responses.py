"""Broker responses (reference §2.11): LeaderAndIsr responses mark replicas on failed log
dirs offline; UpdateMetadata response errors are logged.

Per LeaderAndIsr response: KAFKA_STORAGE_ERROR means the replica sits on a failed dir, NONE
means it is fine (again), anything else says nothing about the dir. The broker's set of
replicas on failed dirs becomes ``(previous - online) | offline``; the newly offline ones go
through ``onReplicasBecomeOffline``: elections for the partitions they led, then OfflineReplica
(StopReplica, removal from the ISR, LeaderAndIsr to the other replicas).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from controller.api.errors import Errors, error_name
from controller.core.events import LeaderAndIsrResponseReceived, UpdateMetadataResponseReceived
from controller.core.model import PartitionAndReplica, TopicPartition
from controller.handlers.membership import on_replicas_become_offline
from controller.logs import log_sample

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.responses")


class BrokerResponses:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl

    def handlers(self) -> dict[type, Any]:
        return {
            LeaderAndIsrResponseReceived: self.process_leader_and_isr_response,
            UpdateMetadataResponseReceived: self.process_update_metadata_response,
        }

    def process_leader_and_isr_response(self, event: LeaderAndIsrResponseReceived) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            return
        if event.error_code != Errors.NONE:
            log.error(
                "LeaderAndIsr request failed",
                broker_id=event.broker_id,
                error=error_name(event.error_code),
            )
            return
        ctx = ctl.context
        if event.broker_id not in ctx.live_or_shutting_down_broker_ids():
            # A late answer from a broker that has failed since: its failure path has taken
            # all its replicas offline already (Kafka would run that again, to no effect).
            log.info(
                "ignoring LeaderAndIsr response of a broker that is gone",
                broker_id=event.broker_id,
            )
            return
        epoch = ctx.live_broker_id_and_epochs().get(event.broker_id)
        if event.broker_epoch is not None and epoch != event.broker_epoch:
            # An answer of the broker's previous incarnation, delivered as the bounce removed
            # its sender (Kafka would apply it): its failed dirs say nothing about the new
            # one, which answers the LeaderAndIsr its registration brought on its own.
            log.info(
                "ignoring LeaderAndIsr response of an earlier incarnation of the broker",
                broker_id=event.broker_id,
                request_broker_epoch=event.broker_epoch,
                broker_epoch=epoch,
            )
            return
        offline: set[TopicPartition] = set()
        online: set[TopicPartition] = set()
        strangers: list[TopicPartition] = []
        refused: dict[int, list[TopicPartition]] = {}
        for tp, code in event.partition_errors.items():
            if event.broker_id not in ctx.partition_replica_assignment(tp):
                # The partition was deleted or moved off this broker since the request left.
                strangers.append(tp)
            elif code not in (Errors.KAFKA_STORAGE_ERROR, Errors.NONE):
                # STALE_CONTROLLER_EPOCH: a state the broker already had (a resend). Kafka
                # ignores the others silently; they can leave a replica out for good.
                if code != Errors.STALE_CONTROLLER_EPOCH:
                    refused.setdefault(int(code), []).append(tp)
            elif code == Errors.KAFKA_STORAGE_ERROR:
                offline.add(tp)
            else:
                online.add(tp)
        if refused:
            self._log_refused(event.broker_id, refused)
        if strangers:
            log.info(
                "ignoring LeaderAndIsr results for partitions the broker no longer hosts",
                broker_id=event.broker_id,
                count=len(strangers),
                partitions=log_sample(sorted(strangers)),
            )
        previous = ctx.replicas_on_offline_dirs.get(event.broker_id, set())
        current = (previous - online) | offline
        ctx.replicas_on_offline_dirs[event.broker_id] = current
        newly_offline = current - previous
        if newly_offline:
            log.warning(
                "marking replicas on a failed log dir offline",
                broker_id=event.broker_id,
                count=len(newly_offline),
                partitions=log_sample(sorted(newly_offline)),
            )
            on_replicas_become_offline(
                ctl, [PartitionAndReplica(tp, event.broker_id) for tp in sorted(newly_offline)]
            )

    @staticmethod
    def _log_refused(broker_id: int, refused: dict[int, list[TopicPartition]]) -> None:
        for code, tps in sorted(refused.items()):
            log.warning(
                "broker refused LeaderAndIsr for partitions"
                + (
                    ": it holds a replica of an earlier topic of that name (a deletion it "
                    "missed) and will not follow the new one until that copy is deleted on "
                    "the broker (the reference broker keeps replicas in memory: a restart)"
                    if code == Errors.INCONSISTENT_TOPIC_ID
                    else ""
                ),
                broker_id=broker_id,
                error=error_name(code),
                count=len(tps),
                partitions=log_sample(sorted(tps)),
            )

    def process_update_metadata_response(self, event: UpdateMetadataResponseReceived) -> None:
        if not self.ctl.is_active:
            return
        if event.error_code != Errors.NONE:
            log.error(
                "UpdateMetadata request failed",
                broker_id=event.broker_id,
                error=error_name(event.error_code),
            )
