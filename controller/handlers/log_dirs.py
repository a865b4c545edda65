"""Log-dir failures announced through ZooKeeper (reference §2.11, ``LogDirEventNotification``).

A broker whose log dir fails writes ``/log_dir_event_notification/log_dir_event_NNNNNNNNNN``
(``{"version":1,"broker":N,"event":1}``). The notification does not say *which* partitions were
on that dir, so the controller asks: every replica on those brokers goes to OnlineReplica, which
sends each broker a LeaderAndIsr (isNew=false) for all its partitions. The broker answers
KAFKA_STORAGE_ERROR for those on the failed dir, and the LeaderAndIsr response handler
(``controller.handlers.responses``) takes them offline and moves leadership away.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import structlog

from controller.core.events import LogDirEventNotification
from controller.core.model import ReplicaState

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.log_dirs")


class LogDirEvents:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl

    def handlers(self) -> dict[type, Any]:
        return {LogDirEventNotification: lambda e: self.process_log_dir_event_notification()}

    def process_log_dir_event_notification(self) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            return
        gateway = ctl.gateway
        names = gateway.get_all_log_dir_event_notifications()  # re-arms the child watch
        try:
            # Malformed notifications are logged (naming their path) and skipped by the read.
            broker_ids = gateway.get_broker_ids_from_log_dir_events(names)
            if broker_ids:
                self.on_broker_log_dir_failure(broker_ids)
        finally:
            # Exactly the notifications read above, processed or not (one-shot, pitfall 11).
            gateway.delete_log_dir_event_notifications(names, ctl.context.epoch_zk_version)

    def on_broker_log_dir_failure(self, broker_ids: Iterable[int]) -> None:
        """Kafka's ``onBrokerLogDirFailure``: ask the brokers which replicas are still online."""
        ctx = self.ctl.context
        ids = set(broker_ids)
        registered = ids & ctx.live_or_shutting_down_broker_ids()
        if ids - registered:
            # Kafka would move a dead broker's replicas to OnlineReplica (a state they keep
            # until the broker returns) and send it nothing. Its failure path has already
            # taken them offline; leave them there.
            log.warning(
                "ignoring log dir failures of brokers that are not registered",
                brokers=sorted(ids - registered),
            )
        if not registered:
            return
        log.info("handling log dir failure", brokers=sorted(registered))
        replicas = sorted(ctx.replicas_on_brokers(registered))
        self.ctl.replica_state_machine.handle_state_changes(replicas, ReplicaState.OnlineReplica)
