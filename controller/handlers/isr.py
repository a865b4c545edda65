"""ISR change propagation (reference §2.10): the AlterPartition RPC and the legacy
``/isr_change_notification`` path.

``AlterPartitionReceived`` is Kafka 3.6's ``processAlterPartition``: check the broker epoch,
resolve topics by id or name, run each partition through the validation ladder
(``controller.core.alter_partition``), write the accepted states conditionally on the request's
partition epoch, refresh the cache, tell every broker (UpdateMetadata for all requested
partitions), answer grouped by topic, and only then try to complete reassignments.

``IsrChangeNotification`` is ``processIsrChangeNotification``: brokers of the pre-AlterPartition
era (IBP < 2.7-IV2) write the state znode themselves and then a sequential
``isr_change_NNNNNNNNNN`` listing the partitions they changed; the controller re-reads those
states, sends UpdateMetadata, and deletes exactly the notifications it read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from controller.api.errors import Errors, wire_code
from controller.api.v1 import controller_pb2
from controller.channel.convert import alter_partition_partition_response
from controller.core.alter_partition import (
    Outcome,
    Verdict,
    check_broker_epoch,
    validate_partition,
)
from controller.core.events import AlterPartitionReceived, IsrChangeNotification, NotControllerError
from controller.core.model import LeaderAndIsr, LeaderRecoveryState, TopicPartition
from controller.handlers.context_loader import update_leader_and_isr_cache
from controller.logs import log_sample
from controller.zk.errors import ControllerMovedError, NoNodeError

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.isr")


def refresh_isr_cache(ctl: Controller, partitions: list[TopicPartition]) -> None:
    """Re-read these partitions' state znodes into the cache after a broker changed them,
    and record each change of leader or ISR in the state-change log (same state to same
    state, no election). Kafka only debug-logs these; the analytics count ISR shrinks and
    expansions from them."""
    ctx = ctl.context
    before = {tp: ctx.partition_leader_and_isr(tp) for tp in partitions}
    update_leader_and_isr_cache(ctl, partitions)
    for tp in partitions:
        after, old = ctx.partition_leader_and_isr(tp), before[tp]
        if after is None:
            continue
        if old is not None and (old.leader, old.isr) == (after.leader, after.isr):
            continue
        state = ctx.partition_state(tp)
        ctl.state_change_log.partition(
            tp, state, state, leader=after.leader, leader_epoch=after.leader_epoch, isr=after.isr
        )
    ctl.state_change_log.write_pending()  # the changes are in ZooKeeper already


@dataclass(slots=True)
class _Item:
    """One partition of an AlterPartition request, on its way to an answer."""

    partition_index: int
    tp: TopicPartition | None  # None when the topic id is unknown
    proposed: LeaderAndIsr | None  # None when the request could not be decoded
    verdict: Verdict | None = None


@dataclass(slots=True)
class _Group:
    """One topic of the response: echoed id, and the name it resolved to (or was sent as)."""

    topic_id: str
    topic_name: str
    items: list[_Item]


def _decode(
    request: controller_pb2.AlterPartitionRequest, topic_names: dict[str, str]
) -> list[_Group]:
    """Resolve topics (by id when one is given, else by name) and decode each partition.

    Problems that make a partition unusable are settled here, each with a clear reason:
    an unknown topic id (UNKNOWN_TOPIC_ID, Kafka's), an unknown recovery state value and a
    partition listed twice (INVALID_REQUEST; Kafka keeps the last of two duplicates, which
    answers one of two different proposals without saying which).
    """
    groups: list[_Group] = []
    by_key: dict[tuple[str, str], _Group] = {}
    seen: dict[TopicPartition, _Item] = {}
    for topic in request.topics:
        key = ("id", topic.topic_id) if topic.topic_id else ("name", topic.topic_name)
        name = topic_names.get(topic.topic_id) if topic.topic_id else topic.topic_name
        group = by_key.get(key)
        if group is None:
            group = _Group(topic.topic_id, name or "", [])
            by_key[key] = group
            groups.append(group)
        for p in topic.partitions:
            if name is None:
                group.items.append(
                    _Item(
                        p.partition_index,
                        None,
                        None,
                        Verdict.reject(Errors.UNKNOWN_TOPIC_ID, f"unknown topic id {key[1]}"),
                    )
                )
                continue
            tp = TopicPartition(name, p.partition_index)
            previous = seen.get(tp)
            if previous is not None:
                # One answer for both entries: the first one's, now refused.
                previous.proposed = None
                previous.verdict = Verdict.reject(
                    Errors.INVALID_REQUEST, "the partition is listed more than once"
                )
                continue
            try:
                recovery = LeaderRecoveryState(p.leader_recovery_state)
            except ValueError:
                item = _Item(
                    p.partition_index,
                    tp,
                    None,
                    Verdict.reject(
                        Errors.INVALID_REQUEST,
                        f"unknown leader recovery state {p.leader_recovery_state}",
                    ),
                )
            else:
                proposed = LeaderAndIsr(
                    request.broker_id,
                    p.leader_epoch,
                    tuple(m.broker_id for m in p.new_isr_with_epochs),
                    recovery,
                    p.partition_epoch,
                )
                item = _Item(p.partition_index, tp, proposed)
            seen[tp] = item
            group.items.append(item)
    return groups


def _error_for_write_failure(exc: Exception) -> Errors:
    # Kafka's Errors.forException maps every ZooKeeper error to UNKNOWN_SERVER_ERROR, which
    # the leader retries forever. A state znode that is gone (topic deleted meanwhile) will
    # not come back: say so, and the leader stops asking.
    if isinstance(exc, NoNodeError):
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    return Errors.UNKNOWN_SERVER_ERROR


class IsrChanges:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl

    def handlers(self) -> dict[type, Any]:
        return {
            AlterPartitionReceived: self.process_alter_partition,
            IsrChangeNotification: lambda e: self.process_isr_change_notification(),
        }

    # -- AlterPartition --------------------------------------------------------------------

    def process_alter_partition(self, event: AlterPartitionReceived) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            # The servicer turns this into NOT_CONTROLLER with the active controller as a hint.
            event.reply.set_exception(NotControllerError(ctl.active_controller_id))
            return
        request = event.request
        if not isinstance(request, controller_pb2.AlterPartitionRequest):
            event.reply.set_result(
                controller_pb2.AlterPartitionResponse(error_code=wire_code(Errors.INVALID_REQUEST))
            )
            return
        ctx = ctl.context
        error = check_broker_epoch(
            request.broker_id, request.broker_epoch, ctx.live_broker_id_and_epochs()
        )
        if error != Errors.NONE:
            log.info(
                "refusing AlterPartition: unknown broker or stale broker epoch",
                broker_id=request.broker_id,
                broker_epoch=request.broker_epoch,
                cached_epoch=ctx.live_broker_id_and_epochs().get(request.broker_id),
            )
            event.reply.set_result(controller_pb2.AlterPartitionResponse(error_code=wire_code(error)))
            return
        try:
            groups, successes = self._alter(request)
        except ControllerMovedError:
            raise  # the hub answers NOT_CONTROLLER and resigns
        except Exception:
            # Kafka's step 9: the broker gets a top-level error and retries.
            log.exception("error processing AlterPartition", broker_id=request.broker_id)
            event.reply.set_result(
                controller_pb2.AlterPartitionResponse(error_code=wire_code(Errors.UNKNOWN_SERVER_ERROR))
            )
            return
        event.reply.set_result(self._response(groups))
        # After answering (step 8): a successful ISR change can complete a reassignment.
        self._maybe_complete_reassignments(successes)

    def _alter(
        self, request: controller_pb2.AlterPartitionRequest
    ) -> tuple[list[_Group], list[TopicPartition]]:
        ctl = self.ctl
        ctx = ctl.context
        groups = _decode(request, ctx.topic_names)
        live = ctx.live_broker_ids()
        to_write: dict[TopicPartition, LeaderAndIsr] = {}
        items: dict[TopicPartition, _Item] = {}
        requested: list[TopicPartition] = []
        refused: list[tuple[TopicPartition, Verdict]] = []
        for group in groups:
            for item in group.items:
                if item.tp is None:
                    continue
                requested.append(item.tp)
                if item.proposed is None:
                    continue
                items[item.tp] = item
                item.verdict = validate_partition(
                    ctx.partition_leader_and_isr(item.tp),
                    item.proposed,
                    replicas=ctx.partition_replica_assignment(item.tp),
                    live_broker_ids=live,
                )
                if item.verdict.outcome is Outcome.WRITE:
                    to_write[item.tp] = item.proposed
                elif item.verdict.outcome is Outcome.REJECT:
                    refused.append((item.tp, item.verdict))
        if refused:
            # One line per request: a line per partition made a 100k-partition request hold
            # the event thread for seconds (Kafka logs none for unknown partitions).
            errors: dict[str, int] = {}
            for _, verdict in refused:
                errors[verdict.error.name] = errors.get(verdict.error.name, 0) + 1
            log.info(
                "refusing AlterPartition for partitions",
                broker_id=request.broker_id,
                count=len(refused),
                errors=errors,
                partitions=log_sample(
                    f"{tp}: {verdict.error.name} ({verdict.reason})" for tp, verdict in refused
                ),
            )

        written: list[TopicPartition] = []
        if to_write:
            # Conditional on the request's partition epoch (= the cached one, by the ladder).
            result = ctl.gateway.update_leader_and_isr(to_write, ctx.epoch, ctx.epoch_zk_version)
            for tp, outcome in result.finished.items():
                if isinstance(outcome, LeaderAndIsr):
                    previous = ctx.partition_leader_and_isr(tp)
                    log.info(
                        "ISR changed by the leader",
                        partition=str(tp),
                        leader=outcome.leader,
                        leader_epoch=outcome.leader_epoch,
                        old_isr=list(previous.isr) if previous else None,
                        isr=list(outcome.isr),
                        partition_epoch=outcome.partition_epoch,
                        leader_recovery_state=outcome.leader_recovery_state.name,
                    )
                    items[tp].verdict = Verdict(Outcome.WRITE, state=outcome)
                    written.append(tp)
                else:
                    error = _error_for_write_failure(outcome)
                    log.error(
                        "failed to write the ISR change",
                        partition=str(tp),
                        error=error.name,
                        cause=str(outcome),
                    )
                    items[tp].verdict = Verdict.reject(error, str(outcome))
            for tp in sorted(result.to_retry):
                # Someone changed the znode since our cache read it; the leader retries with
                # what the next LeaderAndIsr or UpdateMetadata tells it.
                log.info(
                    "ISR change lost a race with another write",
                    partition=str(tp),
                    partition_epoch=to_write[tp].partition_epoch,
                )
                items[tp].verdict = Verdict.reject(
                    Errors.INVALID_UPDATE_VERSION, "the state znode changed (BADVERSION)"
                )
        # Refresh from ZooKeeper (not from our own proposal): the znode is the truth.
        refresh_isr_cache(ctl, written)
        # Kafka tells every broker about every partition of the request, refused ones too.
        ctl.send_update_metadata_request(ctx.live_or_shutting_down_broker_ids(), requested)
        successes = [
            tp
            for tp, item in items.items()
            if item.verdict is not None and item.verdict.outcome is not Outcome.REJECT
        ]
        return groups, successes

    @staticmethod
    def _response(groups: list[_Group]) -> controller_pb2.AlterPartitionResponse:
        response = controller_pb2.AlterPartitionResponse(error_code=wire_code(Errors.NONE))
        for group in groups:
            topic = response.topics.add(topic_id=group.topic_id, topic_name=group.topic_name)
            for item in group.items:
                verdict = item.verdict
                assert verdict is not None  # every item was settled by _decode or _alter
                topic.partitions.append(
                    alter_partition_partition_response(
                        item.partition_index, int(verdict.error), verdict.state
                    )
                )
        return response

    def _maybe_complete_reassignments(self, partitions: Iterable[TopicPartition]) -> None:
        reassignments = self.ctl.reassignments
        if reassignments is None:
            return
        being_reassigned = self.ctl.context.partitions_being_reassigned
        # All at once: those completing share one write of their topic znode.
        reassignments.maybe_complete_reassignments(
            [tp for tp in partitions if tp in being_reassigned]
        )

    # -- /isr_change_notification ----------------------------------------------------------

    def process_isr_change_notification(self) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            return
        gateway = ctl.gateway
        names = gateway.get_all_isr_change_notifications()  # re-arms the child watch
        try:
            # Malformed notifications are logged (naming their path) and skipped by the read.
            partitions = gateway.get_partitions_from_isr_change_notifications(names)
            known, unknown = self._split_known(partitions)
            if unknown:
                log.warning(
                    "ignoring ISR change notifications for partitions the controller does not know",
                    count=len(unknown),
                    partitions=log_sample(sorted(unknown)),
                )
            if known:
                log.info(
                    "processing ISR change notifications",
                    notifications=len(names),
                    partitions=log_sample(sorted(known)),
                )
                refresh_isr_cache(ctl, sorted(known))
                ctl.send_update_metadata_request(
                    ctl.context.live_or_shutting_down_broker_ids(), known
                )
                self._maybe_complete_reassignments(known)
        finally:
            # Exactly the notifications read above: later ones fire the watch again.
            gateway.delete_isr_change_notifications(names, ctl.context.epoch_zk_version)

    def _split_known(
        self, partitions: Iterable[TopicPartition]
    ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        # Kafka caches whatever state znode a notification names. A partition the controller
        # does not manage (its topic is unknown or not yet processed) would get a leadership
        # entry without an assignment; its own creation path reads the state anyway.
        ctx = self.ctl.context
        known, unknown = [], []
        for tp in sorted(partitions):
            if tp.topic in ctx.all_topics and ctx.partition_replica_assignment(tp):
                known.append(tp)
            else:
                unknown.append(tp)
        return known, unknown
