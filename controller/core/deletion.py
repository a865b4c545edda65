"""Topic deletion: Kafka's ``TopicDeletionManager`` (reference §2.6).

A topic is deleted in rounds driven by broker responses:

1. ``/admin/delete_topics/T`` queues the topic (``enqueue_topics_for_deletion``).
2. When the topic is *eligible* (queued, no replica in ReplicaDeletionStarted, not marked
   ineligible), ``on_topic_deletion`` takes its partitions Offline -> NonExistent, tells every
   broker (UpdateMetadata with leader -2) and moves each online replica OfflineReplica ->
   ReplicaDeletionStarted, which sends StopReplica(deletePartition=true). Replicas on dead
   brokers go to ReplicaDeletionIneligible and make the topic ineligible.
3. Each StopReplica response moves its replicas to ReplicaDeletionSuccessful
   (``complete_replica_deletion``) or ReplicaDeletionIneligible (``fail_replica_deletion``).
4. When every replica is ReplicaDeletionSuccessful, ``complete_delete_topic`` removes the topic
   tree, ``/config/topics/T`` and the request znode, then forgets the topic.

A topic is held back (ineligible) while one of its replicas is offline or one of its
partitions is being reassigned; ``resume_deletion_for_topics`` lifts that when a broker hosting
one of its replicas starts or a reassignment of it completes, and failover re-evaluates it.

With ``delete.topic.enable=false`` every operation is a no-op and requests are dropped (their
znodes deleted), as in Kafka.

The manager is pure controller logic: ZooKeeper writes and broker requests outside the state
machines go through a ``DeletionClient`` (Kafka's ``DeletionClient``), so the unit tests can
drive it with recording state machines and a fake client (reference §6.4).

Event thread only, like the context it works on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

import structlog

from controller.core.model import PartitionAndReplica, PartitionState, ReplicaState, TopicPartition
from controller.zk import paths

if TYPE_CHECKING:
    from controller.core.context import ControllerContext
    from controller.core.controller import Controller

log = structlog.get_logger("controller.topic_deletion")

DeletionStarted = ReplicaState.ReplicaDeletionStarted
DeletionSuccessful = ReplicaState.ReplicaDeletionSuccessful
DeletionIneligible = ReplicaState.ReplicaDeletionIneligible


class ReplicaStateChanger(Protocol):
    def handle_state_changes(
        self, replicas: Iterable[PartitionAndReplica], target: ReplicaState
    ) -> None: ...


class PartitionStateChanger(Protocol):
    def handle_state_changes(
        self, partitions: Sequence[TopicPartition], target: PartitionState
    ) -> object: ...


class DeletionClient(Protocol):
    """What deletion needs besides the state machines (Kafka's ``DeletionClient``, plus the
    read of pending requests that Kafka does in ``fetchTopicDeletionsInProgress``)."""

    def get_topic_deletions(self) -> list[str]:
        """Children of ``/admin/delete_topics`` (re-arms the child watch)."""
        ...

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        """Remove the topic tree, its config and its deletion request (fenced)."""
        ...

    def delete_topic_deletions(self, topics: Sequence[str], epoch_zk_version: int) -> None: ...

    def mute_partition_modifications(self, topic: str) -> None: ...

    def forget_reassignments(self, topic: str) -> None:
        """End the deleted topic's reassignments: its ISR watches and its entries in
        ``/admin/reassign_partitions``."""
        ...

    def send_metadata_update(self, partitions: Iterable[TopicPartition]) -> None: ...


class ControllerDeletionClient:
    """``DeletionClient`` over the controller's gateway and request batch."""

    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl

    def get_topic_deletions(self) -> list[str]:
        return self.ctl.gateway.get_topic_deletions()

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        gateway = self.ctl.gateway
        # Kafka's order (pitfall 26): the tree, then the config, then the request. A crash in
        # between leaves the request, so the next controller finishes the job.
        gateway.delete_topic_znode(topic, epoch_zk_version)
        gateway.delete_topic_configs([topic], epoch_zk_version)
        gateway.delete_topic_deletions([topic], epoch_zk_version)

    def delete_topic_deletions(self, topics: Sequence[str], epoch_zk_version: int) -> None:
        self.ctl.gateway.delete_topic_deletions(topics, epoch_zk_version)

    def mute_partition_modifications(self, topic: str) -> None:
        # So a topic re-created under the same name is seen as new, not as a partition change.
        self.ctl.gateway.unregister_change_handler(paths.topic_path(topic))

    def forget_reassignments(self, topic: str) -> None:
        # Kafka leaves them: a topic re-created under the name would inherit a ZooKeeper
        # reassignment entry (adding partitions refused, and a move nobody asked for at the
        # next failover). A deletion waits for reassignments only until one completes.
        reassignments = self.ctl.reassignments
        if reassignments is not None:
            reassignments.on_topic_deleted(topic)

    def send_metadata_update(self, partitions: Iterable[TopicPartition]) -> None:
        ctx = self.ctl.context
        self.ctl.send_update_metadata_request(
            ctx.live_or_shutting_down_broker_ids(), sorted(partitions)
        )


class TopicDeletionManager:
    def __init__(
        self,
        enabled: bool,
        context: ControllerContext,
        replica_state_machine: ReplicaStateChanger,
        partition_state_machine: PartitionStateChanger,
        client: DeletionClient,
    ) -> None:
        self.enabled = enabled
        self.ctx = context
        self.rsm = replica_state_machine
        self.psm = partition_state_machine
        self.client = client

    # -- start-up ------------------------------------------------------------------------

    def init(self, to_delete: Iterable[str], ineligible: Iterable[str]) -> None:
        """Queue the pending requests; ``ineligible`` only marks topics that are queued."""
        to_delete = sorted(set(to_delete))
        ineligible = set(ineligible)
        log.info(
            "initializing topic deletion",
            topics_to_delete=to_delete,
            ineligible_topics=sorted(ineligible & set(to_delete)),
        )
        if self.enabled:
            self.ctx.queue_topic_deletion(to_delete)
            self.ctx.topics_ineligible_for_deletion.update(
                ineligible & self.ctx.topics_to_be_deleted
            )
        elif to_delete:
            log.info(
                "dropping topic deletion requests: delete.topic.enable is false", topics=to_delete
            )
            self.client.delete_topic_deletions(to_delete, self.ctx.epoch_zk_version)

    def init_from_zookeeper(self) -> None:
        """Failover steps 5-6: ``fetchTopicDeletionsInProgress`` then ``init``."""
        ctx = self.ctx
        to_delete = self.client.get_topic_deletions()
        # Kafka checks every topic, but init only uses the answer for queued topics: at 100K
        # topics the full scan was ~0.2 s of every failover.
        candidates = (set(to_delete) | ctx.topics_to_be_deleted) & ctx.all_topics
        with_offline_replicas = {
            topic
            for topic in candidates
            if any(
                not ctx.is_replica_online(pr.replica, pr.tp) for pr in ctx.replicas_for_topic(topic)
            )
        }
        reassigning = {tp.topic for tp in ctx.partitions_being_reassigned}
        self.init(to_delete, with_offline_replicas | reassigning)

    def try_topic_deletion(self) -> None:
        """Failover step 11: resume whatever deletion is possible now."""
        if self.enabled:
            self.resume_deletions()

    # -- requests and outcomes -----------------------------------------------------------

    def enqueue_topics_for_deletion(
        self, topics: Iterable[str], ineligible: Iterable[str] = ()
    ) -> None:
        """Queue ``topics`` and start what is eligible.

        ``ineligible`` topics are marked *after* queueing, so a topic requested while one of
        its partitions is being reassigned is held back (Kafka marks before queueing, which
        does nothing for a newly requested topic: pitfall 27).
        """
        if not self.enabled:
            return
        self.ctx.queue_topic_deletion(topics)
        held = set(ineligible)
        if held:
            self.mark_topic_ineligible_for_deletion(held, "partition reassignment in progress")
        self.resume_deletions()

    def resume_deletion_for_topics(self, topics: Iterable[str]) -> None:
        if not self.enabled:
            return
        to_resume = set(topics) & self.ctx.topics_to_be_deleted
        if to_resume:
            self.ctx.topics_ineligible_for_deletion.difference_update(to_resume)
            self.resume_deletions()

    def fail_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        if not self.enabled:
            return
        failed = sorted(r for r in replicas if self.is_topic_queued_up_for_deletion(r.tp.topic))
        if not failed:
            return
        topics = {r.tp.topic for r in failed}
        log.info(
            "replica deletion failed; halting deletion of their topics",
            replicas=[str(r) for r in failed],
            topics=sorted(topics),
        )
        self.rsm.handle_state_changes(failed, DeletionIneligible)
        self.mark_topic_ineligible_for_deletion(topics, "replica deletion failure")
        self.resume_deletions()

    def mark_topic_ineligible_for_deletion(self, topics: Iterable[str], reason: str) -> None:
        if not self.enabled:
            return
        halted = set(topics) & self.ctx.topics_to_be_deleted
        self.ctx.topics_ineligible_for_deletion.update(halted)
        if halted:
            log.info("halted topic deletion", topics=sorted(halted), reason=reason)

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return self.enabled and self.ctx.is_topic_queued_up_for_deletion(topic)

    def complete_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        deleted = sorted(r for r in replicas if self.is_topic_queued_up_for_deletion(r.tp.topic))
        log.debug("replica deletion completed", replicas=[str(r) for r in deleted])
        self.rsm.handle_state_changes(deleted, DeletionSuccessful)
        self.resume_deletions()

    # -- internals -----------------------------------------------------------------------

    def _is_ineligible(self, topic: str) -> bool:
        return not self.enabled or topic in self.ctx.topics_ineligible_for_deletion

    def _is_deletion_in_progress(self, topic: str) -> bool:
        return self.enabled and self.ctx.is_any_replica_in_state(topic, DeletionStarted)

    def _is_eligible(self, topic: str) -> bool:
        return (
            self.ctx.is_topic_queued_up_for_deletion(topic)
            and not self._is_deletion_in_progress(topic)
            and not self._is_ineligible(topic)
        )

    def resume_deletions(self) -> None:
        ctx = self.ctx
        queued = sorted(ctx.topics_to_be_deleted)  # a snapshot: completed topics leave the set
        retry: list[str] = []
        eligible: list[str] = []
        if queued:
            log.info("handling topic deletions", topics=queued)
        for topic in queued:
            if ctx.are_all_replicas_for_topic_deleted(topic):
                # Also true for a topic without replicas, e.g. one whose znode is already gone.
                self._complete_delete_topic(topic)
                log.info("topic deletion completed", topic=topic)
            elif not ctx.is_any_replica_in_state(topic, DeletionStarted) and (
                ctx.is_any_replica_in_state(topic, DeletionIneligible)
            ):
                # Nothing in flight and some replica failed: reset those for another round.
                retry.append(topic)
            if self._is_eligible(topic):
                log.info("deleting topic", topic=topic)
                eligible.append(topic)
        if retry:
            self._mark_topic_for_deletion_retry(retry)
        if eligible:
            self._on_topic_deletion(eligible)

    def _mark_topic_for_deletion_retry(self, topics: Sequence[str]) -> None:
        failed = sorted(
            r for topic in topics for r in self.ctx.replicas_in_state(topic, DeletionIneligible)
        )
        log.debug("retrying topic deletion", topics=list(topics), replicas=[str(r) for r in failed])
        self.rsm.handle_state_changes(failed, ReplicaState.OfflineReplica)

    def _complete_delete_topic(self, topic: str) -> None:
        self.client.mute_partition_modifications(topic)
        deleted = sorted(self.ctx.replicas_in_state(topic, DeletionSuccessful))
        self.rsm.handle_state_changes(deleted, ReplicaState.NonExistentReplica)
        self.client.delete_topic(topic, self.ctx.epoch_zk_version)
        self.client.forget_reassignments(topic)
        self.ctx.remove_topic(topic)

    def _on_topic_deletion(self, topics: Sequence[str]) -> None:
        ctx = self.ctx
        unseen = [t for t in topics if t not in ctx.topics_with_deletion_started]
        if unseen:
            partitions = sorted(tp for t in unseen for tp in ctx.partitions_for_topic(t))
            self.psm.handle_state_changes(partitions, PartitionState.OfflinePartition)
            self.psm.handle_state_changes(partitions, PartitionState.NonExistentPartition)
            # After the transitions: OfflinePartitionsCount ignores started topics (pitfall 16).
            ctx.begin_topic_deletion(unseen)
        # Brokers stop serving the topics (UpdateMetadata carries leader -2 for them).
        self.client.send_metadata_update(tp for t in topics for tp in ctx.partitions_for_topic(t))
        self._on_partition_deletion(topics)

    def _on_partition_deletion(self, topics: Sequence[str]) -> None:
        ctx = self.ctx
        dead: list[PartitionAndReplica] = []
        retry: list[PartitionAndReplica] = []
        with_dead_replicas: set[str] = set()
        for topic in topics:
            replicas = sorted(ctx.replicas_for_topic(topic))
            topic_dead = [r for r in replicas if not ctx.is_replica_online(r.replica, r.tp)]
            done = ctx.replicas_in_state(topic, DeletionSuccessful)
            retry.extend(
                r for r in replicas if ctx.is_replica_online(r.replica, r.tp) and r not in done
            )
            dead.extend(topic_dead)
            if topic_dead:
                log.debug(
                    "dead replicas hold back topic deletion",
                    topic=topic,
                    replicas=[str(r) for r in topic_dead],
                )
                with_dead_replicas.add(topic)
        self.rsm.handle_state_changes(dead, DeletionIneligible)
        # StopReplica(delete=false) first, so followers stop fetching, then the deletion.
        self.rsm.handle_state_changes(retry, ReplicaState.OfflineReplica)
        self.rsm.handle_state_changes(retry, DeletionStarted)
        if with_dead_replicas:
            self.mark_topic_ineligible_for_deletion(with_dead_replicas, "offline replicas")
