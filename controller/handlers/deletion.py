"""Topic deletion events (reference §2.6): ``TopicDeletion`` (a child of
``/admin/delete_topics`` appeared) and ``TopicDeletionStopReplicaResponseReceived`` (a broker
answered a StopReplica(deletePartition=true)). The bookkeeping is ``TopicDeletionManager``
(``controller.core.deletion``); this module builds it, sets ``ctl.topic_deletion_manager`` and
adds failover step 11 (``tryTopicDeletion``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from controller.api.errors import Errors, error_name
from controller.core.deletion import ControllerDeletionClient, TopicDeletionManager
from controller.core.events import TopicDeletion, TopicDeletionStopReplicaResponseReceived
from controller.core.model import PartitionAndReplica

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.deletion")


class TopicDeletionHandler:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl
        self.manager = TopicDeletionManager(
            ctl.config.delete_topic_enable,
            ctl.context,
            ctl.replica_state_machine,
            ctl.partition_state_machine,
            ControllerDeletionClient(ctl),
        )
        ctl.topic_deletion_manager = self.manager
        ctl.election.add_failover_hook(self.manager.try_topic_deletion)

    def handlers(self) -> dict[type, Any]:
        return {
            TopicDeletion: lambda e: self.process_topic_deletion(),
            TopicDeletionStopReplicaResponseReceived: self.process_stop_replica_response,
        }

    def process_topic_deletion(self) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            return
        ctx = ctl.context
        requested = set(ctl.gateway.get_topic_deletions())  # re-arms the child watch
        unknown = sorted(requested - ctx.all_topics)
        if unknown:
            log.warning("ignoring requests to delete topics that do not exist", topics=unknown)
            ctl.gateway.delete_topic_deletions(unknown, ctx.epoch_zk_version)
        to_delete = sorted(requested - set(unknown))
        if not ctl.config.delete_topic_enable:
            if to_delete:
                log.info(
                    "dropping topic deletion requests: delete.topic.enable is false",
                    topics=to_delete,
                )
                ctl.gateway.delete_topic_deletions(to_delete, ctx.epoch_zk_version)
            return
        if not to_delete:
            return
        new = [t for t in to_delete if not ctx.is_topic_queued_up_for_deletion(t)]
        if new:
            log.info("topic deletion requested", topics=new)
        reassigning = {tp.topic for tp in ctx.partitions_being_reassigned} & set(to_delete)
        self.manager.enqueue_topics_for_deletion(to_delete, ineligible=reassigning)

    def process_stop_replica_response(
        self, event: TopicDeletionStopReplicaResponseReceived
    ) -> None:
        if not self.ctl.is_active:
            return
        errors = event.partition_errors
        if event.request_error != Errors.NONE:
            in_error = set(errors)
        else:
            in_error = {tp for tp, code in errors.items() if code != Errors.NONE}
        if in_error:
            log.warning(
                "brokers failed to delete replicas",
                broker_id=event.replica_id,
                request_error=error_name(event.request_error),
                partitions={str(tp): error_name(errors[tp]) for tp in sorted(in_error)},
            )
        self.manager.fail_replica_deletion(
            PartitionAndReplica(tp, event.replica_id) for tp in in_error
        )
        deleted = set(errors) - in_error
        if deleted:
            self.manager.complete_replica_deletion(
                PartitionAndReplica(tp, event.replica_id) for tp in deleted
            )
