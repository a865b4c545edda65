"""Topics and partitions (reference §2.5): ``TopicChange``, ``PartitionModifications``,
topic ids, and ``onNewPartitionCreation``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from controller.core.election import OfflinePartitionLeaderElectionStrategy
from controller.core.events import PartitionModifications, TopicChange
from controller.core.model import (
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
    TopicAssignment,
    TopicPartition,
    new_topic_id,
)
from controller.logs import log_sample
from controller.zk import paths
from controller.zk.errors import ConnectionLossError, SessionExpiredError, ZkError
from controller.zk.watches import ChildrenDataChangeHandler

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.topics")


def register_partition_modifications_handlers(ctl: Controller, topics: Iterable[str]) -> None:
    """Kafka's PartitionModificationsHandler per topic, as one registration for all of them
    (a handler object per topic was ~350 bytes each at 100K topics)."""
    put = ctl.put
    ctl.gateway.register_children_data_handler(
        ChildrenDataChangeHandler(
            paths.BROKERS_TOPICS, lambda topic: put(PartitionModifications(topic=topic))
        ),
        topics,
    )


def process_topic_ids(ctl: Controller, assignments: Mapping[str, TopicAssignment]) -> None:
    """Give every topic without an id a new one (fenced rewrite), then record all ids."""
    ctx = ctl.context
    missing = [a.topic for a in assignments.values() if a.topic_id is None and a.partitions]
    with_ids = {a.topic: a for a in assignments.values() if a.topic_id is not None}
    if missing:
        written = ctl.gateway.set_topic_ids(
            {topic: new_topic_id() for topic in missing}, ctx.epoch_zk_version
        )
        for topic, result in written.items():
            if isinstance(result, TopicAssignment):
                with_ids[topic] = result
            else:
                log.error("could not assign a topic id", topic=topic, error=str(result))
    for topic, a in with_ids.items():
        if a.topic_id is None:  # never: both kinds above carry an id
            continue
        try:
            ctx.add_topic_id(topic, a.topic_id)
        except ValueError as exc:
            log.error("conflicting topic id", topic=topic, error=str(exc))


def store_assignments(
    ctl: Controller, assignments: Iterable[TopicAssignment], *, track_reassignments: bool = False
) -> list[TopicPartition]:
    """Record the assignments (adding and removing replicas included, as read).

    ``track_reassignments``: partitions with adding or removing replicas count as being
    reassigned. Only failover's context load does this (and then resumes them), as Kafka's
    initializeControllerContext: a topic or partition created with them is not being moved by
    anyone, and counting it would hold back its deletion with nothing to end the wait.
    """
    ctx = ctl.context
    stored = []
    for a in assignments:
        for partition in sorted(a.partitions):
            tp = TopicPartition(a.topic, partition)
            ra = a.partitions[partition]
            ctx.update_partition_full_replica_assignment(tp, ra)
            if track_reassignments and ra.is_being_reassigned:
                ctx.partitions_being_reassigned.add(tp)
            stored.append(tp)
    return stored


def adopt_existing_partitions(
    ctl: Controller, partitions: Sequence[TopicPartition]
) -> list[TopicPartition]:
    """Take over, as failover does, the partitions that already have a state znode; return
    the others (really new).

    The context lacks partitions whose topic znode was unreadable when it was loaded; once
    the znode is repaired they look new. Creating them would find their state znodes and fail
    for good (as in Kafka, until the next failover), leaving them unmanaged: no election when
    their leader dies. Instead: leadership from ZooKeeper, Online or Offline by leader,
    replicas Online (LeaderAndIsr to them) or ReplicaDeletionIneligible then Offline when
    their broker is down, then the usual offline election.
    """
    if not partitions:
        return []
    ctx = ctl.context
    states = ctl.gateway.get_partition_states(partitions)
    if not states:
        return list(partitions)
    online: list[PartitionAndReplica] = []
    offline: list[PartitionAndReplica] = []
    leaderless = []
    for tp in sorted(states):
        info = states[tp]
        ctx.put_partition_leadership_info(tp, info)
        leader_online = ctx.is_replica_online(info.leader_and_isr.leader, tp)
        ctx.put_partition_state(
            tp, PartitionState.OnlinePartition if leader_online else PartitionState.OfflinePartition
        )
        if not leader_online:
            leaderless.append((tp, info.leader_and_isr))
        for replica in ctx.partition_replica_assignment(tp):
            pr = PartitionAndReplica(tp, replica)
            if ctx.is_replica_online(replica, tp):
                ctx.put_replica_state(pr, ReplicaState.OnlineReplica)
                online.append(pr)
            else:
                ctx.put_replica_state(pr, ReplicaState.ReplicaDeletionIneligible)
                offline.append(pr)
    log.warning(
        "taking over partitions whose state already exists (their topic znode was unreadable "
        "when this controller loaded it)",
        count=len(states),
        partitions=log_sample(sorted(states)),
    )
    ctl.partition_state_machine.record_found_leaderless(leaderless)  # as a failover does
    ctl.replica_state_machine.handle_state_changes(online, ReplicaState.OnlineReplica)
    ctl.replica_state_machine.handle_state_changes(offline, ReplicaState.OfflineReplica)
    ctl.partition_state_machine.trigger_online_partition_state_change()
    return [tp for tp in partitions if tp not in states]


def on_new_partition_creation(ctl: Controller, partitions: Sequence[TopicPartition]) -> None:
    """New -> (NewReplica) -> Online -> (OnlineReplica), reference §2.5."""
    ctx = ctl.context
    log.info("new partition creation callback", partitions=len(partitions))
    replicas = [
        PartitionAndReplica(tp, r)
        for tp in partitions
        for r in ctx.partition_replica_assignment(tp)
    ]
    ctl.partition_state_machine.handle_state_changes(partitions, PartitionState.NewPartition)
    ctl.replica_state_machine.handle_state_changes(replicas, ReplicaState.NewReplica)
    ctl.partition_state_machine.handle_state_changes(
        partitions, PartitionState.OnlinePartition, OfflinePartitionLeaderElectionStrategy(False)
    )
    ctl.replica_state_machine.handle_state_changes(replicas, ReplicaState.OnlineReplica)


class Topics:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl

    def handlers(self) -> dict[type, Any]:
        return {
            TopicChange: lambda e: self.process_topic_change(),
            PartitionModifications: lambda e: self.process_partition_modifications(e.topic),
        }

    def process_topic_change(self) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            return
        ctx = ctl.context
        topics = ctl.gateway.get_all_topics(watch=True)
        new_topics = sorted(topics - ctx.all_topics)
        deleted = sorted(ctx.all_topics - topics)
        ctx.set_all_topics(topics)
        register_partition_modifications_handlers(ctl, new_topics)
        assignments = ctl.gateway.get_topic_assignments(new_topics)
        for topic in deleted:
            # Only for a topic znode removed without going through controller deletion.
            log.warning("topic znode vanished outside topic deletion", topic=topic)
            ctl.gateway.unregister_change_handler(paths.topic_path(topic))
            _forget_vanished_topic(ctl, topic)
        process_topic_ids(ctl, assignments)
        new_partitions = store_assignments(ctl, assignments.values())
        if new_topics:
            log.info("new topics", topics=new_topics, deleted_topics=deleted)
        if new_partitions:
            on_new_partition_creation(ctl, new_partitions)

    def process_partition_modifications(self, topic: str) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            return
        ctx = ctl.context
        assignment = ctl.gateway.get_topic_assignments([topic]).get(topic)
        if assignment is None:
            return  # malformed: already logged with its path; the watch is re-armed
        to_add = {
            p: ra
            for p, ra in assignment.partitions.items()
            if not ctx.partition_replica_assignment(TopicPartition(topic, p))
        }
        if ctx.is_topic_queued_up_for_deletion(topic):
            if to_add:
                log.warning(
                    "partitions added to a topic being deleted; restoring the topic znode",
                    topic=topic,
                    partitions=sorted(to_add),
                )
                # The controller's id, as Kafka's restorePartitionReplicaAssignment writes:
                # the edit may carry another (the znode's is used only when we have none).
                self._restore_topic_znode(topic, ctx.topic_ids.get(topic) or assignment.topic_id)
            else:
                log.info("ignoring partition change of a topic being deleted", topic=topic)
            return
        if not to_add:
            return  # changes to existing partitions' replicas are ignored (pitfall 13)
        if topic not in ctx.topic_ids:
            # A topic whose first partitions arrive here (empty at creation, or unreadable
            # until repaired): record its id, or give it one, as TopicChange would have.
            process_topic_ids(ctl, {topic: assignment})
        added = store_assignments(ctl, [TopicAssignment(topic, assignment.topic_id, to_add)])
        log.info(
            "new partitions for topic",
            topic=topic,
            count=len(to_add),
            partitions=log_sample(sorted(to_add)),
        )
        new = adopt_existing_partitions(ctl, added)
        if new:
            on_new_partition_creation(ctl, new)

    def _restore_topic_znode(self, topic: str, topic_id: str | None) -> None:
        ctx = self.ctl.context
        partitions = {}
        for p in self.ctl.gateway.get_topic_partition_children(topic):
            ra = ctx.partition_full_replica_assignment(TopicPartition(topic, p))
            if ra.replicas:
                partitions[p] = ra
        self.ctl.gateway.set_topic_assignment(
            TopicAssignment(topic, topic_id, partitions), ctx.epoch_zk_version
        )


def _best_effort(topic: str, path: str, write: Callable[[], object]) -> None:
    try:
        write()
    except (SessionExpiredError, ConnectionLossError):
        raise  # the controller's own session: handled by the event loop (as ControllerMoved)
    except ZkError as exc:
        log.error(
            "could not clean up after a topic znode removed by hand; a topic created again "
            "under its name may be acted on by it: remove it by hand",
            topic=topic,
            path=path,
            error=str(exc) or type(exc).__name__,
        )


def _forget_vanished_topic(ctl: Controller, topic: str) -> None:
    """Forget a topic whose znode someone removed (a "force delete"), states included, as a
    completed deletion does. Kafka keeps its partition and replica states, and a topic
    created again under the name then inherits them: its NewPartition and NewReplica steps
    are invalid (no leader, no request), or a later deletion skips the replicas the first one
    had deleted. Nothing is sent; what is written is what would act on a topic created
    again under the name: its deletion request and its reassignment entries."""
    ctx = ctl.context
    # The writes are best effort: one refused (an ACL) must not stop the event before the
    # topics created with this change are (they would never be: already in all_topics).
    if ctx.is_topic_queued_up_for_deletion(topic):
        _best_effort(
            topic,
            paths.delete_topic_path(topic),
            lambda: ctl.gateway.delete_topic_deletions([topic], ctx.epoch_zk_version),
        )
    if ctl.reassignments is not None:
        forget_moves = ctl.reassignments.on_topic_deleted  # before remove_topic forgets them
        _best_effort(topic, paths.REASSIGN_PARTITIONS, lambda: forget_moves(topic))
    partitions = sorted(
        tp
        for tp in ctx.partitions_for_topic(topic)
        if ctx.partition_state(tp) is not PartitionState.NonExistentPartition
    )
    psm = ctl.partition_state_machine
    psm.handle_state_changes(partitions, PartitionState.OfflinePartition)
    psm.handle_state_changes(partitions, PartitionState.NonExistentPartition)
    for replica in ctx.replicas_for_topic(topic):
        ctx.remove_replica_state(replica)
    ctx.remove_topic(topic)
