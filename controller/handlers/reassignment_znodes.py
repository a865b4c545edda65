"""The znodes of a reassignment: ``/brokers/topics/T`` (written by steps U1 and B6),
``/admin/reassign_partitions`` (its watch; B7 and failed entries rewrite it) and the watched
state znodes of reassigning partitions. A mixin of ``PartitionReassignments``.

Kafka rewrites the whole topic znode once per partition (``updateReplicaAssignmentForPartition``);
here every partition of one event that changes in the same step shares one write per topic.
A topic of thousands of partitions reassigned by one request took one write (and a read and
decode of the growing znode) per partition: minutes of a blocked event thread, while a broker
failure waited. Each write is fenced and merged with the znode (partitions added meanwhile
survive); the znode's contents once the event is done are those Kafka's writes leave.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import structlog

from controller.core.errors import StateChangeFailedError
from controller.core.events import PartitionReassignmentIsrChange, ZkPartitionReassignment
from controller.core.model import ReplicaAssignment, TopicPartition
from controller.zk import paths
from controller.zk.errors import ControllerMovedError, NoNodeError, ZkError
from controller.zk.watches import ZNodeChangeHandler

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.reassignment")


class ReassignmentZnodes:
    ctl: Controller
    # State znodes we watch for reassigning partitions (legacy ISR writes by leaders).
    _isr_watches: set[str]

    def _reassign_znode_handler(self) -> ZNodeChangeHandler:
        put = self.ctl.put
        # Creation is Kafka's trigger. Deletion only re-arms the watch (the event is a no-op
        # while the node is absent), so a znode an operator deletes by hand does not leave us
        # blind to the next one.
        return ZNodeChangeHandler(
            paths.REASSIGN_PARTITIONS,
            on_creation=lambda: put(ZkPartitionReassignment()),
            on_deletion=lambda: put(ZkPartitionReassignment()),
        )

    def _update_replica_assignments(
        self, assignments: Mapping[TopicPartition, ReplicaAssignment]
    ) -> dict[TopicPartition, Exception]:
        """``updateReplicaAssignmentForPartition`` for many partitions: each topic's znode
        written once, with the controller's view of the topic and these partitions' new
        assignments. Gives the partitions that were not written, with their error (a topic
        deleted meanwhile fails its partitions, as each of Kafka's writes would)."""
        ctx = self.ctl.context
        by_topic: dict[str, dict[int, ReplicaAssignment]] = defaultdict(dict)
        for tp, assignment in assignments.items():
            by_topic[tp.topic][tp.partition] = assignment
        failed: dict[TopicPartition, Exception] = {}
        for topic in sorted(by_topic):
            updates = by_topic[topic]
            known = {
                p.partition: a
                for p, a in ctx.partition_full_replica_assignment_for_topic(topic).items()
            }
            try:
                # Merged with the znode: partitions added meanwhile must survive (the
                # simulator found them lost with Kafka's blind rewrite of the cached assignment).
                refused: Mapping[int, Exception] = self.ctl.gateway.merge_topic_partitions(
                    topic, ctx.topic_ids.get(topic), known, updates, ctx.epoch_zk_version
                )
            except ControllerMovedError:
                raise
            except NoNodeError:
                refused = {
                    p: StateChangeFailedError(
                        f"Failed to update assignment for {TopicPartition(topic, p)} since the "
                        "topic has no current assignment"
                    )
                    for p in updates
                }
            except Exception as exc:
                refused = dict.fromkeys(updates, exc)
            failed.update((TopicPartition(topic, p), exc) for p, exc in refused.items())
        return failed

    def _maybe_remove_from_zk_reassignment(
        self,
        should_remove: Callable[[TopicPartition, Sequence[int]], bool],
        *,
        only_if_any: bool = False,
    ) -> None:
        """Kafka's maybeRemoveFromZkReassignment; ``only_if_any``: leave the znode alone
        unless an entry is to be removed (not Kafka's: for our own cleanup after a topic
        deletion, which must not delete a request it does not concern)."""
        gateway = self.ctl.gateway
        if not gateway.reassign_partitions_in_progress():
            return
        request = gateway.get_partition_reassignment_request()
        current = request.targets
        remaining = {tp: r for tp, r in current.items() if not should_remove(tp, r)}
        if only_if_any and len(remaining) == len(current):
            return
        # Invalid entries go with any rewrite: they were reported when the request was read.
        removed = sorted(
            (set(current) - set(remaining)) | set(request.invalid) | set(request.unknown)
        )
        epoch_zk_version = self.ctl.context.epoch_zk_version
        if not remaining:
            if request.malformed is not None:
                # It reads as empty, so Kafka deletes it here too; say so, as its plan never ran.
                log.warning(
                    "deleting the malformed ZooKeeper reassignment request, none of which was "
                    "run (as Kafka deletes it once another reassignment starts or completes)",
                    path=paths.REASSIGN_PARTITIONS,
                    error=request.malformed,
                )
            else:
                log.info(
                    "no more partitions to reassign through ZooKeeper; deleting the znode",
                    path=paths.REASSIGN_PARTITIONS,
                    removed=[str(tp) for tp in removed],
                )
            gateway.delete_partition_reassignment(epoch_zk_version)
            # The watch is creation-only: re-arm it for the next request.
            self.ctl.put(ZkPartitionReassignment())
        elif removed:
            log.info(
                "removing partitions from the ZooKeeper reassignment request",
                path=paths.REASSIGN_PARTITIONS,
                removed=[str(tp) for tp in removed],
            )
            try:
                gateway.set_or_create_partition_reassignment(
                    remaining,
                    epoch_zk_version,
                    rewritten_from=[*current, *request.invalid, *request.unknown],
                )
            except ControllerMovedError:
                raise
            except ZkError as exc:
                raise StateChangeFailedError(
                    f"could not update {paths.REASSIGN_PARTITIONS}: {exc}"
                ) from exc
            # Our write fired (and so used up) the node's watch: arm it again, or a deletion
            # and a new request would go unseen until the next failover.
            gateway.register_change_handler_and_check_existence(self._reassign_znode_handler())

    def _remove_partitions_from_reassigning_partitions(
        self, done: Mapping[TopicPartition, ReplicaAssignment]
    ) -> dict[TopicPartition, Exception]:
        """B7 for these completed partitions (one rewrite of the ZooKeeper request); gives
        those that failed."""
        ctx = self.ctl.context
        failed: dict[TopicPartition, Exception] = {
            tp: StateChangeFailedError(
                f"Cannot remove reassigning partition {tp}: it is not being reassigned"
            )
            for tp in done
            if tp not in ctx.partitions_being_reassigned
        }
        removing = {tp: a.replicas for tp, a in done.items() if tp not in failed}
        if not removing:
            return failed
        for tp in removing:
            self._unwatch_isr(tp)
        try:
            # An entry goes only if it asked for exactly this result.
            self._maybe_remove_from_zk_reassignment(
                lambda p, replicas: removing.get(p) == tuple(replicas)
            )
        except ControllerMovedError:
            raise
        except Exception as exc:
            failed.update(dict.fromkeys(removing, exc))
            return failed
        ctx.partitions_being_reassigned.difference_update(removing)
        return failed

    def on_topic_deleted(self, topic: str) -> None:
        """The topic's deletion completed (possibly while some of its partitions were still
        moving): unwatch their ISRs and drop its entries from the ZooKeeper request. A failed
        rewrite is logged; the entry is then removed at the next failover (unknown topic) or
        left to a re-created topic, as in Kafka."""
        ctx = self.ctl.context
        for tp in [tp for tp in ctx.partitions_being_reassigned if tp.topic == topic]:
            self._unwatch_isr(tp)
        try:
            self._maybe_remove_from_zk_reassignment(
                lambda tp, _: tp.topic == topic, only_if_any=True
            )
        except StateChangeFailedError as exc:
            log.warning(
                "could not remove a deleted topic from the reassignment request",
                topic=topic,
                path=paths.REASSIGN_PARTITIONS,
                error=str(exc),
            )

    # -- the legacy ISR watch ------------------------------------------------------------

    def _watch_isr(self, tp: TopicPartition) -> None:
        # Kafka arms this only below inter-broker protocol 2.7-IV2; there is no such version
        # here, and a broker may still write the state znode itself (the
        # /isr_change_notification path), so it is always armed: one extra read per write.
        path = paths.partition_state_path(tp.topic, tp.partition)
        put = self.ctl.put
        self.ctl.gateway.register_change_handler(
            ZNodeChangeHandler(
                path, on_data_change=lambda: put(PartitionReassignmentIsrChange(tp=tp))
            )
        )
        self._isr_watches.add(path)

    def _unwatch_isr(self, tp: TopicPartition) -> None:
        path = paths.partition_state_path(tp.topic, tp.partition)
        self.ctl.gateway.unregister_change_handler(path)
        self._isr_watches.discard(path)

    def _drop_watches_when_inactive(self, ctl: Controller) -> None:
        # Resignation (Kafka's onControllerResignation step 3) has no hook of its own.
        if not ctl.is_active and self._isr_watches:
            for path in self._isr_watches:
                ctl.gateway.unregister_change_handler(path)
            self._isr_watches.clear()
