"""Partition reassignment (KIP-455, reference §2.7).

Entry points:

- ``ZkPartitionReassignment``: ``/admin/reassign_partitions`` was created (Kafka's legacy
  tooling). Entries that cannot start are removed from the znode; the znode is deleted when
  its last entry completes or fails. Malformed content is logged and ignored, as in Kafka.
  Each node is processed once (known by its czxid): later edits are ignored, as in Kafka, and
  its watch is re-armed after the controller rewrites it, so its deletion is seen.
- ``ApiPartitionReassignment`` (AlterPartitionReassignments, cancel included) and
  ``ListPartitionReassignments``: the admin gRPC API. Replies follow the contract in
  ``controller.rpc.admin_service``.
- ``PartitionReassignmentIsrChange``: the state znode of a reassigning partition changed (a
  leader's ISR write); ``maybe_complete_reassignments`` is also the hook for ISR updates that
  arrive by AlterPartition or ISR-change notifications.
- failover (``initializePartitionReassignments``) and broker start-up (resume the
  reassignments whose target includes a new broker).

``on_partition_reassignments`` is Kafka's state machine, step by step: U (persist the full
RS/AR/RR), then A (bump the leader epoch, start the adding replicas) while the target replicas
are not all in the ISR, else B (leader into the target set, stop and delete the removed
replicas, persist RS = target, drop the znode entry, tell every broker). It takes every
partition an event reassigns: the steps that rewrite a topic znode (U1, B6) write each topic
once for all its partitions (``reassignment_znodes``), where Kafka rewrites the whole topic
once per partition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

import structlog

from controller.api.errors import ApiError, Errors
from controller.core.election import REASSIGN_STRATEGY
from controller.core.errors import StateChangeFailedError
from controller.core.events import (
    ApiPartitionReassignment,
    ListPartitionReassignments,
    NotControllerError,
    PartitionReassignmentIsrChange,
    ZkPartitionReassignment,
)
from controller.core.model import (
    MAX_EPOCH,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from controller.core.reassignment import maybe_build_reassignment, validate_replicas
from controller.core.state_reads import exhausted_leader_epoch_error
from controller.handlers.reassignment_znodes import ReassignmentZnodes
from controller.zk import codecs, paths
from controller.zk.errors import ControllerMovedError, MalformedZnodeError, NoNodeError

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.reassignment")

PARTITION_DOES_NOT_EXIST = "The partition does not exist."


class PartitionReassignments(ReassignmentZnodes):
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl
        ctl.reassignments = self
        ctl.election.add_failover_hook(self.initialize_partition_reassignments)
        # State znodes we watch for reassigning partitions (legacy ISR writes by leaders).
        self._isr_watches: set[str] = set()
        # czxid of the /admin/reassign_partitions node processed last: one node is processed
        # once (edits are ignored, as in Kafka), however many triggers (our re-arm after
        # deleting it, its deletion watch) find it.
        self._processed_czxid: int | None = None
        ctl.after_event_hooks.append(self._drop_watches_when_inactive)

    def handlers(self) -> dict[type, Any]:
        return {
            ZkPartitionReassignment: lambda e: self.process_zk_partition_reassignment(
                only_new=True
            ),
            ApiPartitionReassignment: self.process_api_partition_reassignment,
            ListPartitionReassignments: self.process_list_partition_reassignments,
            PartitionReassignmentIsrChange: self.process_isr_change,
        }

    # -- entry points --------------------------------------------------------------------

    def process_zk_partition_reassignment(self, *, only_new: bool = False) -> set[TopicPartition]:
        """The reassignments in ``/admin/reassign_partitions``; returns those started.
        ``only_new``: not if this node was processed already (failover processes it anyway)."""
        ctl = self.ctl
        if not ctl.is_active:
            return set()
        stat = ctl.gateway.register_change_handler_and_stat(self._reassign_znode_handler())
        if stat is None:
            return set()
        if only_new and stat.czxid == self._processed_czxid:
            return set()
        self._processed_czxid = stat.czxid
        ctx = ctl.context
        # Malformed as a whole reads as empty (logged by the gateway, naming the problem); a
        # partition's invalid or impossible entry fails that partition only, and is removed
        # with the failures.
        request = ctl.gateway.get_partition_reassignment_request()
        requested = request.targets
        results: dict[TopicPartition, ApiError | None] = {
            tp: ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, exc.problem)
            for tp, exc in request.invalid.items()
        }
        results.update(
            (tp, ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, problem))
            for tp, problem in request.unknown.items()
        )
        to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in requested.items():
            built = maybe_build_reassignment(ctx.partition_full_replica_assignment(tp), target)
            if built is None:
                results[tp] = ApiError(Errors.NO_REASSIGNMENT_IN_PROGRESS)
            else:
                to_reassign[tp] = built
        if to_reassign:
            log.info(
                "reassignment requested through ZooKeeper",
                partitions={str(tp): list(requested[tp]) for tp in sorted(to_reassign)},
            )
        results.update(self._maybe_trigger_partition_reassignment(to_reassign))
        failed = {tp: e for tp, e in results.items() if e is not None}
        if failed:
            log.warning(
                "reassignment requests in ZooKeeper failed; removing them from the znode",
                path=paths.REASSIGN_PARTITIONS,
                errors={str(tp): f"{e.error.name}: {e}" for tp, e in sorted(failed.items())},
            )
            self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in failed)
        return {tp for tp, e in results.items() if e is None}

    def process_api_partition_reassignment(self, event: ApiPartitionReassignment) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            event.reply.set_exception(NotControllerError(ctl.active_controller_id))
            return
        ctx = ctl.context
        results: dict[TopicPartition, ApiError | None] = {}
        to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, target in event.reassignments.items():
            current = ctx.partition_full_replica_assignment(tp)
            error = (
                None
                if target is None
                else validate_replicas(current, target, ctx.live_broker_ids())
            )
            if error is not None:
                results[tp] = error
                continue
            built = maybe_build_reassignment(current, target)
            if built is None:
                results[tp] = ApiError(
                    Errors.NO_REASSIGNMENT_IN_PROGRESS,
                    f"No reassignment is in progress for partition {tp}",
                )
            else:
                to_reassign[tp] = built
        log.info(
            "reassignment requested through the admin API",
            partitions={
                str(tp): "cancel" if t is None else list(t)
                for tp, t in sorted(event.reassignments.items())
            },
        )
        # The latest request wins over a ZooKeeper request for the same partitions.
        self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in to_reassign)
        cancels = {tp for tp, target in event.reassignments.items() if target is None}
        results.update(self._maybe_trigger_partition_reassignment(to_reassign, cancels))
        event.reply.set_result(results)

    def process_list_partition_reassignments(self, event: ListPartitionReassignments) -> None:
        ctl = self.ctl
        if not ctl.is_active:
            event.reply.set_exception(NotControllerError(ctl.active_controller_id))
            return
        ctx = ctl.context
        wanted = (
            event.partitions if event.partitions is not None else ctx.partitions_being_reassigned
        )
        out: dict[TopicPartition, ReplicaAssignment] = {}
        for tp in sorted(wanted):
            assignment = ctx.partition_full_replica_assignment(tp)
            if assignment.is_being_reassigned:
                out[tp] = assignment
        event.reply.set_result(out)

    def process_isr_change(self, event: PartitionReassignmentIsrChange) -> None:
        if not self.ctl.is_active:
            return
        if event.tp in self.ctl.context.partitions_being_reassigned:
            self.maybe_complete_reassignment(event.tp)

    def maybe_complete_reassignment(self, tp: TopicPartition) -> None:
        self.maybe_complete_reassignments([tp])

    def maybe_complete_reassignments(self, partitions: Iterable[TopicPartition]) -> None:
        """Finish the reassignments whose target replicas are all in the ISR. Call after any
        ISR change of reassigning partitions (AlterPartition, notifications)."""
        ctx = self.ctl.context
        complete: dict[TopicPartition, ReplicaAssignment] = {}
        for tp in sorted(set(partitions)):
            assignment = ctx.partition_full_replica_assignment(tp)
            if self._is_reassignment_complete(tp, assignment):
                log.info(
                    "target replicas caught up with the leader",
                    partition=str(tp),
                    target_replicas=list(assignment.target_replicas),
                )
                complete[tp] = assignment
        for tp, error in self.on_partition_reassignments(complete).items():
            if error is not None:
                log.error(
                    "cannot complete the reassignment of a partition",
                    partition=str(tp),
                    error=str(error),
                    exc_info=error,
                )

    def initialize_partition_reassignments(self) -> None:
        """Failover step 10: the znode first (it supersedes API reassignments of the same
        partitions), then every other reassignment found in the topic znodes."""
        resumed = self.process_zk_partition_reassignment()
        self._maybe_resume_reassignments(lambda tp, _: tp not in resumed)

    def on_broker_startup(self, new_brokers: Iterable[int]) -> None:
        """``onBrokerStartup`` step 6: resume reassignments waiting for these brokers."""
        started = set(new_brokers)
        self._maybe_resume_reassignments(lambda _, a: any(r in started for r in a.target_replicas))

    def _maybe_resume_reassignments(
        self, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]
    ) -> None:
        ctx = self.ctl.context
        resume = {
            tp: current
            for tp in sorted(ctx.partitions_being_reassigned)
            if should_resume(tp, current := ctx.partition_full_replica_assignment(tp))
        }
        # One broken partition does not stop the others (or the rest of failover).
        for tp, error in self.on_partition_reassignments(resume).items():
            if isinstance(error, ApiError):
                log.error(
                    "cannot resume the reassignment of a partition",
                    partition=str(tp),
                    error=str(error),
                )
            elif error is not None:
                log.error(
                    "error resuming the reassignment of a partition",
                    partition=str(tp),
                    exc_info=error,
                )

    def _maybe_trigger_partition_reassignment(
        self,
        reassignments: Mapping[TopicPartition, ReplicaAssignment],
        cancels: AbstractSet[TopicPartition] = frozenset(),
    ) -> dict[TopicPartition, ApiError | None]:
        """Start (or cancel, for ``cancels``) each reassignment. A topic queued for deletion
        takes no new reassignment. A cancel is allowed while the deletion is held (Kafka
        refuses it too, but here a deletion requested during a reassignment waits for it, so
        the cancel is the way to let the deletion go ahead); once the deletion has started
        it is refused as Kafka refuses it: the cancel would drop the adding replicas without
        their brokers' StopReplica answers, and a down broker's copy would never be deleted."""
        ctx = self.ctl.context
        results: dict[TopicPartition, ApiError | None] = {}
        to_start: dict[TopicPartition, ReplicaAssignment] = {}
        for tp in sorted(reassignments):
            if ctx.is_topic_queued_up_for_deletion(tp.topic) and (
                tp not in cancels or ctx.is_topic_deletion_in_progress(tp.topic)
            ):
                log.info(
                    "not cancelling the reassignment of a partition of a topic being deleted"
                    if tp in cancels
                    else "not reassigning a partition of a topic being deleted",
                    partition=str(tp),
                )
                results[tp] = ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, PARTITION_DOES_NOT_EXIST)
            elif not ctx.partition_replica_assignment(tp):
                results[tp] = ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, PARTITION_DOES_NOT_EXIST)
            else:
                to_start[tp] = reassignments[tp]
        for tp, error in self.on_partition_reassignments(to_start).items():
            if error is None or isinstance(error, ApiError):
                if error is not None:
                    log.warning(
                        "refused to reassign a partition", partition=str(tp), error=str(error)
                    )
                results[tp] = error
            else:
                log.error("error reassigning a partition", partition=str(tp), exc_info=error)
                results[tp] = ApiError(
                    Errors.UNKNOWN_SERVER_ERROR, f"reassignment of {tp} failed: {error}"
                )
        return dict(sorted(results.items()))

    # -- the reassignment state machine (reference §2.7.3) -------------------------------

    def on_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, ReplicaAssignment]
    ) -> dict[TopicPartition, Exception | None]:
        """Kafka's ``onPartitionReassignment`` for each partition, in partition order, except
        that the steps writing the topic znode (U1, B6) are done for all of them at once, one
        write per topic: per partition, a topic of thousands blocked the event thread for
        minutes. Each partition's steps keep Kafka's order (U1 before A1; B6 after B5, before
        B7). Gives each partition's error, None when it started or completed;
        ``ControllerMovedError`` is raised."""
        ctl = self.ctl
        ctx = ctl.context
        results: dict[TopicPartition, Exception | None] = {}
        todo: dict[TopicPartition, ReplicaAssignment] = {}
        deletion = ctl.topic_deletion_manager
        for tp in sorted(reassignments):
            refusal = self._refusal(tp, reassignments[tp])
            if refusal is not None:
                results[tp] = refusal
                continue
            if deletion is not None:
                deletion.mark_topic_ineligible_for_deletion({tp.topic}, "reassignment in progress")
            todo[tp] = reassignments[tp]
        # U1 (in _update_current_reassignment for Kafka), for every partition that changes.
        changed: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, reassignment in todo.items():
            current = ctx.partition_full_replica_assignment(tp)
            if current != reassignment:
                log.info(
                    "updating the assignment of a reassigning partition",
                    partition=str(tp),
                    current=str(current),
                    new=str(reassignment),
                )
                changed[tp] = reassignment
        results.update(self._update_replica_assignments(changed))
        completing: dict[TopicPartition, ReplicaAssignment] = {}
        for tp, reassignment in todo.items():
            if tp in results:
                continue
            try:
                self._update_current_reassignment(tp, reassignment)
                if self._is_reassignment_complete(tp, reassignment):
                    completing[tp] = self._complete_until_b5(tp, reassignment)
                else:
                    # A1: new leader epoch; LeaderAndIsr with the full RS/AR/RR to ORS and AR.
                    self._update_leader_epoch_and_send_request(tp, reassignment)
                    # A2: adding replicas -> NewReplica, one call each, as Kafka does.
                    for replica in reassignment.adding_replicas:
                        ctl.replica_state_machine.handle_state_changes(
                            [PartitionAndReplica(tp, replica)], ReplicaState.NewReplica
                        )
                    results[tp] = None
            except ControllerMovedError:
                raise
            except Exception as exc:
                results[tp] = exc
        # B6: after B5, because the topic znode is the only durable copy of the origin replicas.
        results.update(self._update_replica_assignments(completing))
        # B7
        done = {tp: a for tp, a in completing.items() if tp not in results}
        results.update(self._remove_partitions_from_reassigning_partitions(done))
        for tp, completed in done.items():
            if tp in results:
                continue
            # B8
            ctl.send_update_metadata_request(ctx.live_or_shutting_down_broker_ids(), [tp])
            log.info(
                "reassignment completed", partition=str(tp), replicas=list(completed.replicas)
            )
            if deletion is not None:
                deletion.resume_deletion_for_topics({tp.topic})
            results[tp] = None
        return results

    def _refusal(self, tp: TopicPartition, reassignment: ReplicaAssignment) -> ApiError | None:
        """Why ``tp`` cannot be reassigned now, checked before anything is written."""
        if not reassignment.target_replicas:
            # Only a hand-written topic znode gets here (removing_replicas listing every
            # replica; the API and /admin/reassign_partitions refuse an empty target).
            # Completing it would stop and delete every replica of the partition.
            return ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"{tp}: the reassignment {reassignment} has no target replicas (every replica "
                "is being removed); refusing to delete them all. Cancel the reassignment or "
                "reassign the partition to a non-empty replica list",
            )
        if self.ctl.context.partition_leadership_info(tp) is None:
            # Never brought online (no replica was live since its creation). Kafka writes the
            # new replica set, then fails on the missing state znode before starting the
            # adding replicas; the partition later comes online with an ISR of replicas the
            # replica state machine never started, which a later reassignment cannot remove
            # from the ISR (simulation seed 100816). Refuse before writing anything.
            return ApiError(
                Errors.LEADER_NOT_AVAILABLE,
                f"{tp} has no leader and ISR yet (none of its replicas has been live since it "
                "was created); reassign it once it is online",
            )
        return None

    def _complete_until_b5(
        self, tp: TopicPartition, reassignment: ReplicaAssignment
    ) -> ReplicaAssignment:
        """B1-B5 of a reassignment whose target replicas are all in the ISR; gives the
        completed assignment (B6 writes it)."""
        ctl = self.ctl
        # B1
        ctl.replica_state_machine.handle_state_changes(
            [PartitionAndReplica(tp, r) for r in reassignment.adding_replicas],
            ReplicaState.OnlineReplica,
        )
        # B2
        completed = ReplicaAssignment(reassignment.target_replicas)
        ctl.context.update_partition_full_replica_assignment(tp, completed)
        # B3
        self._move_reassigned_partition_leader_if_required(tp, completed)
        # B4/B5
        self._stop_removed_replicas(tp, reassignment.removing_replicas)
        return completed

    def _update_current_reassignment(
        self, tp: TopicPartition, reassignment: ReplicaAssignment
    ) -> None:
        """U2-U3 (U1, the topic znode, is written first for all the partitions at once)."""
        ctx = self.ctl.context
        current = ctx.partition_full_replica_assignment(tp)
        if current != reassignment:
            ctx.update_partition_full_replica_assignment(tp, reassignment)  # U2
            # U3: replicas of an earlier reassignment no longer wanted (or a cancel's adding
            # replicas).
            new = set(reassignment.replicas)
            unneeded = [r for r in current.replicas if r not in new]
            if unneeded:
                self._stop_removed_replicas(tp, unneeded)
        self._watch_isr(tp)
        ctx.partitions_being_reassigned.add(tp)

    def _is_reassignment_complete(self, tp: TopicPartition, assignment: ReplicaAssignment) -> bool:
        if not assignment.is_being_reassigned:
            return True
        if not assignment.target_replicas:
            return False  # refused by on_partition_reassignment; never "complete"
        # Read from ZooKeeper (not the cache): this also arms the state znode watch.
        path = paths.partition_state_path(tp.topic, tp.partition)
        got = self.ctl.gateway.get_data(path)
        if got is None:
            return False
        try:
            state = codecs.decode_partition_state(got[0], got[1], path)
        except MalformedZnodeError as exc:
            log.error(
                "cannot read the state of a reassigning partition", path=path, error=exc.problem
            )
            return False
        isr = set(state.leader_and_isr.isr)
        return all(r in isr for r in assignment.target_replicas)

    def _update_leader_epoch(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch:
        """Bump the leader epoch (leader and ISR unchanged) by a conditional write of the state
        read from ZooKeeper, retrying when someone else wrote in between."""
        ctl = self.ctl
        ctx = ctl.context
        while True:
            read = ctl.gateway.get_partition_states_raw([tp]).get(tp)
            if isinstance(read, NoNodeError) or read is None:
                raise StateChangeFailedError(
                    f"Cannot update leader epoch for partition {tp} as leaderAndIsr path is "
                    "empty. This could mean we somehow tried to reassign a partition that "
                    "doesn't exist"
                )
            if isinstance(read, Exception):
                raise read
            if read.controller_epoch > ctx.epoch:
                raise StateChangeFailedError(
                    "Leader and isr path written by another controller. This probably means the "
                    f"current controller with epoch {ctx.epoch} went through a soft failure and "
                    f"another controller was elected with epoch {read.controller_epoch}. "
                    "Aborting state change by this controller"
                )
            if read.leader_and_isr.leader_epoch >= MAX_EPOCH:
                raise exhausted_leader_epoch_error(tp, read.leader_and_isr.leader_epoch)
            update = ctl.gateway.update_leader_and_isr(
                {tp: read.leader_and_isr.new_epoch()}, ctx.epoch, ctx.epoch_zk_version
            )
            outcome = update.finished.get(tp)
            if isinstance(outcome, LeaderAndIsr):
                info = LeaderIsrAndControllerEpoch(outcome, ctx.epoch)
                ctx.put_partition_leadership_info(tp, info)
                return info
            if isinstance(outcome, Exception):
                raise outcome
            # BADVERSION: re-read and try again.

    def _update_leader_epoch_and_send_request(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        ctl = self.ctl
        info = self._update_leader_epoch(tp)
        with ctl.own_request_batch() as batch:
            # isNew=false for the origin replicas: a replica on an offline log dir must not be
            # re-created elsewhere; isNew=true lets the adding replicas pick any good dir.
            batch.add_leader_and_isr_request_for_brokers(
                assignment.origin_replicas, tp, info, assignment, is_new=False
            )
            batch.add_leader_and_isr_request_for_brokers(
                assignment.adding_replicas, tp, info, assignment, is_new=True
            )
            batch.send_requests_to_brokers(ctl.context.epoch)
        lai = info.leader_and_isr
        log.info(
            "sent LeaderAndIsr with the new assignment of a reassigning partition",
            partition=str(tp),
            assignment=str(assignment),
            leader=lai.leader,
            leader_epoch=lai.leader_epoch,
        )

    def _move_reassigned_partition_leader_if_required(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        ctl = self.ctl
        info = ctl.context.partition_leadership_info(tp)
        leader = info.leader_and_isr.leader if info is not None else -1
        if leader in assignment.replicas and ctl.context.is_replica_online(leader, tp):
            # The leader stays: a new epoch carries the shrunk replica set.
            self._update_leader_epoch_and_send_request(tp, assignment)
            return
        log.info(
            "electing a leader from the target replicas",
            partition=str(tp),
            leader=leader,
            target_replicas=list(assignment.replicas),
        )
        ctl.partition_state_machine.handle_state_changes(
            [tp], PartitionState.OnlinePartition, REASSIGN_STRATEGY
        )

    def _stop_removed_replicas(self, tp: TopicPartition, replicas: Sequence[int]) -> None:
        """Offline (StopReplica, ISR shrink) -> DeletionStarted (StopReplica delete) ->
        DeletionSuccessful -> NonExistent; no wait for the brokers' answers (as in Kafka)."""
        if not replicas:
            return
        rsm = self.ctl.replica_state_machine
        removed = [PartitionAndReplica(tp, r) for r in replicas]
        for target in (
            ReplicaState.OfflineReplica,
            ReplicaState.ReplicaDeletionStarted,
            ReplicaState.ReplicaDeletionSuccessful,
            ReplicaState.NonExistentReplica,
        ):
            rsm.handle_state_changes(removed, target)
