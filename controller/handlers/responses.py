"""Broker responses (reference §2.11): LeaderAndIsr responses mark replicas on failed log
dirs offline; UpdateMetadata response errors are logged."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from controller.api.errors import Errors, error_name
from controller.core.events import LeaderAndIsrResponseReceived, UpdateMetadataResponseReceived
from controller.core.model import PartitionAndReplica
from controller.handlers.membership import on_replicas_become_offline

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
        offline = {
            tp for tp, code in event.partition_errors.items() if code == Errors.KAFKA_STORAGE_ERROR
        }
        online = {tp for tp, code in event.partition_errors.items() if code == Errors.NONE}
        ctx = ctl.context
        previous = ctx.replicas_on_offline_dirs.get(event.broker_id, set())
        current = (previous - online) | offline
        if current:
            ctx.replicas_on_offline_dirs[event.broker_id] = current
        else:
            ctx.replicas_on_offline_dirs.pop(event.broker_id, None)
        newly_offline = current - previous
        if newly_offline:
            log.warning(
                "replicas on a failed log dir",
                broker_id=event.broker_id,
                partitions=sorted(str(tp) for tp in newly_offline),
            )
            on_replicas_become_offline(
                ctl, [PartitionAndReplica(tp, event.broker_id) for tp in newly_offline]
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
