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
  leader's ISR write); ``maybe_complete_reassignment`` is also the hook for ISR updates that
  arrive by AlterPartition or ISR-change notifications.
- failover (``initializePartitionReassignments``) and broker start-up (resume the
  reassignments whose target includes a new broker).

``on_partition_reassignment`` is Kafka's state machine, step by step: U (persist the full
RS/AR/RR), then A (bump the leader epoch, start the adding replicas) while the target replicas
are not all in the ISR, else B (leader into the target set, stop and delete the removed
replicas, persist RS = target, drop the znode entry, tell every broker).
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
    TopicAssignment,
    TopicPartition,
)
from controller.core.reassignment import maybe_build_reassignment, validate_replicas
from controller.core.state_reads import exhausted_leader_epoch_error
from controller.zk import codecs, paths
from controller.zk.errors import ControllerMovedError, MalformedZnodeError, NoNodeError, ZkError
from controller.zk.watches import ZNodeChangeHandler

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.reassignment")

PARTITION_DOES_NOT_EXIST = "The partition does not exist."


class PartitionReassignments:
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
        """Finish the reassignment of ``tp`` if its target replicas are all in the ISR. Call
        after any ISR change of a reassigning partition (AlterPartition, notifications)."""
        assignment = self.ctl.context.partition_full_replica_assignment(tp)
        if self._is_reassignment_complete(tp, assignment):
            log.info(
                "target replicas caught up with the leader",
                partition=str(tp),
                target_replicas=list(assignment.target_replicas),
            )
            self.on_partition_reassignment(tp, assignment)

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
        for tp in sorted(ctx.partitions_being_reassigned):
            current = ctx.partition_full_replica_assignment(tp)
            if not should_resume(tp, current):
                continue
            try:
                self.on_partition_reassignment(tp, current)
            except ControllerMovedError:
                raise
            except ApiError as exc:
                log.error(
                    "cannot resume the reassignment of a partition",
                    partition=str(tp),
                    error=str(exc),
                )
            except Exception:
                # One broken partition must not stop the others (or the rest of failover).
                log.exception("error resuming the reassignment of a partition", partition=str(tp))

    def _maybe_trigger_partition_reassignment(
        self,
        reassignments: Mapping[TopicPartition, ReplicaAssignment],
        cancels: AbstractSet[TopicPartition] = frozenset(),
    ) -> dict[TopicPartition, ApiError | None]:
        """Start (or cancel, for ``cancels``) each reassignment. A topic queued for deletion
        takes no new reassignment; a cancel is allowed (Kafka refuses it too, but here a
        deletion requested during a reassignment waits for it, so the cancel is the way to
        let the deletion go ahead)."""
        ctx = self.ctl.context
        results: dict[TopicPartition, ApiError | None] = {}
        for tp in sorted(reassignments):
            if ctx.is_topic_queued_up_for_deletion(tp.topic) and tp not in cancels:
                log.info("not reassigning a partition of a topic being deleted", partition=str(tp))
                results[tp] = ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, PARTITION_DOES_NOT_EXIST)
            elif not ctx.partition_replica_assignment(tp):
                results[tp] = ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, PARTITION_DOES_NOT_EXIST)
            else:
                try:
                    self.on_partition_reassignment(tp, reassignments[tp])
                    results[tp] = None
                except ControllerMovedError:
                    raise
                except ApiError as exc:
                    log.warning(
                        "refused to reassign a partition", partition=str(tp), error=str(exc)
                    )
                    results[tp] = exc
                except Exception as exc:
                    log.exception("error reassigning a partition", partition=str(tp))
                    results[tp] = ApiError(
                        Errors.UNKNOWN_SERVER_ERROR, f"reassignment of {tp} failed: {exc}"
                    )
        return results

    # -- the reassignment state machine (reference §2.7.3) -------------------------------

    def on_partition_reassignment(
        self, tp: TopicPartition, reassignment: ReplicaAssignment
    ) -> None:
        ctl = self.ctl
        if not reassignment.target_replicas:
            # Only a hand-written topic znode gets here (removing_replicas listing every
            # replica; the API and /admin/reassign_partitions refuse an empty target).
            # Completing it would stop and delete every replica of the partition.
            raise ApiError(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"{tp}: the reassignment {reassignment} has no target replicas (every replica "
                "is being removed); refusing to delete them all. Cancel the reassignment or "
                "reassign the partition to a non-empty replica list",
            )
        if ctl.context.partition_leadership_info(tp) is None:
            # Never brought online (no replica was live since its creation). Kafka writes the
            # new replica set, then fails on the missing state znode before starting the
            # adding replicas; the partition later comes online with an ISR of replicas the
            # replica state machine never started, which a later reassignment cannot remove
            # from the ISR (simulation seed 100816). Refuse before writing anything.
            raise ApiError(
                Errors.LEADER_NOT_AVAILABLE,
                f"{tp} has no leader and ISR yet (none of its replicas has been live since it "
                "was created); reassign it once it is online",
            )
        deletion = ctl.topic_deletion_manager
        if deletion is not None:
            deletion.mark_topic_ineligible_for_deletion({tp.topic}, "reassignment in progress")
        self._update_current_reassignment(tp, reassignment)
        adding = reassignment.adding_replicas
        if not self._is_reassignment_complete(tp, reassignment):
            # A1: new leader epoch; LeaderAndIsr with the full RS/AR/RR to ORS and AR.
            self._update_leader_epoch_and_send_request(tp, reassignment)
            # A2: adding replicas -> NewReplica, one call each, as Kafka does.
            for replica in adding:
                ctl.replica_state_machine.handle_state_changes(
                    [PartitionAndReplica(tp, replica)], ReplicaState.NewReplica
                )
            return
        ctx = ctl.context
        # B1
        ctl.replica_state_machine.handle_state_changes(
            [PartitionAndReplica(tp, r) for r in adding], ReplicaState.OnlineReplica
        )
        # B2
        completed = ReplicaAssignment(reassignment.target_replicas)
        ctx.update_partition_full_replica_assignment(tp, completed)
        # B3
        self._move_reassigned_partition_leader_if_required(tp, completed)
        # B4/B5
        self._stop_removed_replicas(tp, reassignment.removing_replicas)
        # B6: last, because the topic znode is the only durable copy of the origin replicas.
        self._update_replica_assignment_for_partition(tp, completed)
        # B7
        self._remove_partition_from_reassigning_partitions(tp, completed)
        # B8
        ctl.send_update_metadata_request(ctx.live_or_shutting_down_broker_ids(), [tp])
        log.info("reassignment completed", partition=str(tp), replicas=list(completed.replicas))
        if deletion is not None:
            deletion.resume_deletion_for_topics({tp.topic})

    def _update_current_reassignment(
        self, tp: TopicPartition, reassignment: ReplicaAssignment
    ) -> None:
        ctx = self.ctl.context
        current = ctx.partition_full_replica_assignment(tp)
        if current != reassignment:
            log.info(
                "updating the assignment of a reassigning partition",
                partition=str(tp),
                current=str(current),
                new=str(reassignment),
            )
            self._update_replica_assignment_for_partition(tp, reassignment)  # U1
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

    def _update_replica_assignment_for_partition(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        ctx = self.ctl.context
        partitions = {
            p.partition: a
            for p, a in ctx.partition_full_replica_assignment_for_topic(tp.topic).items()
        }
        partitions[tp.partition] = assignment
        try:
            # Merged with the znode: partitions added meanwhile must survive (the simulator
            # found them lost with Kafka's blind rewrite of the cached assignment).
            self.ctl.gateway.merge_topic_assignment(
                TopicAssignment(tp.topic, ctx.topic_ids.get(tp.topic), partitions),
                ctx.epoch_zk_version,
            )
        except NoNodeError:
            raise StateChangeFailedError(
                f"Failed to update assignment for {tp} since the topic has no current assignment"
            ) from None

    def _remove_partition_from_reassigning_partitions(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        ctx = self.ctl.context
        if tp not in ctx.partitions_being_reassigned:
            raise StateChangeFailedError(
                f"Cannot remove reassigning partition {tp}: it is not being reassigned"
            )
        self._unwatch_isr(tp)
        # The znode entry goes only if it asked for exactly this result.
        self._maybe_remove_from_zk_reassignment(
            lambda p, replicas: p == tp and tuple(replicas) == assignment.replicas
        )
        ctx.partitions_being_reassigned.discard(tp)

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
            # Also deletes a malformed znode (it reads as empty), as Kafka does.
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
                gateway.set_or_create_partition_reassignment(remaining, epoch_zk_version)
            except ControllerMovedError:
                raise
            except ZkError as exc:
                raise StateChangeFailedError(
                    f"could not update {paths.REASSIGN_PARTITIONS}: {exc}"
                ) from exc
            # Our write fired (and so used up) the node's watch: arm it again, or a deletion
            # and a new request would go unseen until the next failover.
            gateway.register_change_handler_and_check_existence(self._reassign_znode_handler())

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
