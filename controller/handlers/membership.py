"""Broker membership (reference §2.4): ``BrokerChange`` with new/dead/bounced detection by
broker epoch, ``BrokerModifications``, and the start-up/failure callbacks."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from controller.core.events import BrokerChange, BrokerModifications
from controller.core.model import (
    BrokerAndEpoch,
    LeaderAndIsr,
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
)
from controller.zk import paths
from controller.zk.errors import MalformedZnodeError
from controller.zk.watches import ZNodeChangeHandler

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.membership")


def _broker_modified(ctl: Controller, broker_id: int) -> Callable[[], None]:
    return lambda: ctl.put(BrokerModifications(broker_id=broker_id))


def register_broker_modifications_handlers(ctl: Controller, broker_ids: Iterable[int]) -> None:
    for broker_id in broker_ids:
        ctl.gateway.register_change_handler_and_check_existence(
            ZNodeChangeHandler(
                paths.broker_path(broker_id),
                on_data_change=_broker_modified(ctl, broker_id),
            )
        )


def compatible_brokers(
    ctl: Controller, brokers: Mapping[int, BrokerAndEpoch]
) -> dict[int, BrokerAndEpoch]:
    """The brokers that support every finalized feature (reference §2.12); the others are
    left out of the live set, logged, until they re-register with other features."""
    if ctl.features is None or not brokers:
        return dict(brokers)
    ok = ctl.features.compatible({b: be.broker.features for b, be in brokers.items()})
    return {b: brokers[b] for b in ok}


def on_replicas_become_offline(ctl: Controller, replicas: Iterable[PartitionAndReplica]) -> None:
    """Kafka's ``onReplicasBecomeOffline`` (also used for log-dir failures)."""
    ctx = ctl.context
    for_deletion: list[PartitionAndReplica] = []
    not_for_deletion: list[PartitionAndReplica] = []
    for pr in sorted(replicas):
        (
            for_deletion if ctx.is_topic_queued_up_for_deletion(pr.tp.topic) else not_for_deletion
        ).append(pr)
    psm = ctl.partition_state_machine
    psm.handle_state_changes(
        sorted(ctx.partitions_with_offline_leader()), PartitionState.OfflinePartition
    )
    results = psm.trigger_online_partition_state_change()
    ctl.replica_state_machine.handle_state_changes(not_for_deletion, ReplicaState.OfflineReplica)
    deletion = getattr(ctl, "topic_deletion_manager", None)
    if for_deletion and deletion is not None:
        deletion.fail_replica_deletion(for_deletion)
    if not not_for_deletion and not any(isinstance(r, LeaderAndIsr) for r in results.values()):
        # Nobody got a LeaderAndIsr or UMR from the steps above: tell every broker the new
        # broker list explicitly (reference §2.4).
        ctl.send_update_metadata_request(ctx.live_or_shutting_down_broker_ids(), ())


class BrokerMembership:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl

    def handlers(self) -> dict[type, Any]:
        return {
            BrokerChange: lambda e: self.process_broker_change(),
            BrokerModifications: lambda e: self.process_broker_modification(e.broker_id),
        }

    def process_broker_change(self) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            return
        ctx = ctl.context
        unreadable: dict[int, int] = {}
        current = ctl.gateway.get_all_broker_and_epochs(unreadable)
        cached_epochs = dict(ctx.live_broker_id_and_epochs())
        for b, czxid in unreadable.items():
            cached = ctx.live_or_shutting_down_broker(b)
            if cached is not None and cached_epochs.get(b) == czxid:
                # Same registration (same epoch) rewritten with bad data: the broker is still
                # there; keep its last good registration rather than fail it (logged by the
                # gateway; Kafka fails the whole event instead).
                current[b] = BrokerAndEpoch(cached, czxid)
        known = set(cached_epochs)
        new = sorted(set(current) - known)
        dead = sorted(known - set(current))
        bounced = sorted(b for b in set(current) & known if current[b].epoch > cached_epochs[b])
        log.info(
            "broker change",
            new_brokers=new,
            dead_brokers=dead,
            bounced_brokers=bounced,
            live_brokers=sorted(current),
        )
        if ctl.features is not None:
            ctl.features.retain_registered(set(current))
        # Registrations that cannot run the finalized features stay out (Kafka adds them to
        # the channel anyway; here they are not brokers of the cluster until they can).
        joining = compatible_brokers(ctl, {b: current[b] for b in new + bounced})
        refused = [b for b in new if b not in joining]
        new = [b for b in new if b in joining]
        returning = [b for b in bounced if b in joining]
        for b in new:
            ctl.channel.add_broker(current[b].broker, current[b].epoch)
        for b in bounced:
            ctl.channel.remove_broker(b)
            if b in joining:
                ctl.channel.add_broker(current[b].broker, current[b].epoch)
        for b in dead:
            ctl.channel.remove_broker(b)
        if new:
            ctx.add_live_brokers({current[b].broker: current[b].epoch for b in new})
            self.on_broker_startup(new)
        if bounced:
            ctx.remove_live_brokers(bounced)
            self.on_broker_failure(bounced)
            if returning:
                ctx.add_live_brokers({current[b].broker: current[b].epoch for b in returning})
                self.on_broker_startup(returning)
        if dead:
            ctx.remove_live_brokers(dead)
            self.on_broker_failure(dead)
        # Registrations we cannot read or had to refuse are watched (after on_broker_failure
        # dropped the handlers of the dead), so that a repair or new features bring them in.
        watch = set(unreadable) - set(current) | set(refused) | set(bounced) - set(returning)
        register_broker_modifications_handlers(ctl, sorted(watch))

    def on_broker_startup(self, new_brokers: Sequence[int]) -> None:
        ctl = self.ctl
        ctx = ctl.context
        log.info("new broker startup callback", brokers=list(new_brokers))
        for b in new_brokers:
            ctx.replicas_on_offline_dirs.pop(b, None)
        existing = ctx.live_or_shutting_down_broker_ids() - set(new_brokers)
        ctl.send_update_metadata_request(existing, ())
        ctl.send_update_metadata_request(new_brokers, sorted(ctx.partitions_with_leaders()))
        replicas = ctx.replicas_on_brokers(new_brokers)
        ctl.replica_state_machine.handle_state_changes(replicas, ReplicaState.OnlineReplica)
        ctl.partition_state_machine.trigger_online_partition_state_change()
        reassignments = getattr(ctl, "reassignments", None)
        if reassignments is not None:
            reassignments.on_broker_startup(new_brokers)
        deletion = getattr(ctl, "topic_deletion_manager", None)
        if deletion is not None:
            topics = {
                pr.tp.topic for pr in replicas if ctx.is_topic_queued_up_for_deletion(pr.tp.topic)
            }
            if topics:
                log.info(
                    "resuming deletion of topics with replicas on restarted brokers",
                    topics=sorted(topics),
                    brokers=list(new_brokers),
                )
                deletion.resume_deletion_for_topics(topics)
        register_broker_modifications_handlers(ctl, new_brokers)

    def on_broker_failure(self, dead_brokers: Sequence[int]) -> None:
        ctl = self.ctl
        ctx = ctl.context
        log.info("broker failure callback", brokers=list(dead_brokers))
        for b in dead_brokers:
            ctx.replicas_on_offline_dirs.pop(b, None)
            ctx.shutting_down_broker_ids.discard(b)
        on_replicas_become_offline(ctl, ctx.replicas_on_brokers(dead_brokers))
        for b in dead_brokers:
            ctl.gateway.unregister_change_handler(paths.broker_path(b))

    def process_broker_modification(self, broker_id: int) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            return
        ctx = ctl.context
        try:
            current = ctl.gateway.get_broker(broker_id)  # re-arms the data watch
        except MalformedZnodeError as exc:
            log.error("ignoring malformed broker registration", path=exc.path, error=exc.problem)
            return
        old = ctx.live_or_shutting_down_broker(broker_id)
        if current is not None and old is None:
            # A registration left out as unreadable has been repaired: it joins now.
            log.info("broker registration is readable again", broker_id=broker_id)
            self.process_broker_change()
            return
        if current is None or old is None:
            return
        new = current.broker
        if (new.endpoints, new.rack, new.features) == (old.endpoints, old.rack, old.features):
            return
        log.info(
            "updated broker registration",
            broker_id=broker_id,
            endpoints=[ep.connection_string() for ep in new.endpoints],
            rack=new.rack,
        )
        ctx.update_broker_metadata(old, new)
        if new.endpoints != old.endpoints:
            # The controller's connection follows a new endpoint, its queue intact.
            ctl.channel.update_broker(new, ctx.live_broker_id_and_epochs()[broker_id])
        ctl.send_update_metadata_request(ctx.live_or_shutting_down_broker_ids(), ())
