"""The replica state machine (Kafka's ``ZkReplicaStateMachine``, reference §3.4).

Seven states from NewReplica to NonExistentReplica. The transition with effects in ZooKeeper
is OfflineReplica: the replica leaves the ISR of every partition it is in (leader -1 when it
led; the ISR is never emptied, pitfall 1), written conditionally on the state read from
ZooKeeper, with LeaderAndIsr to the remaining replicas. Replicas are handled grouped by broker,
in broker-id order; invalid transitions are logged and not applied.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import structlog

from controller.core import transitions
from controller.core.errors import StateChangeFailedError
from controller.core.model import (
    NO_LEADER,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from controller.core.state_reads import read_states_for_update
from controller.zk.errors import ControllerMovedError

if TYPE_CHECKING:
    from controller.channel.batch import ControllerBrokerRequestBatch
    from controller.core.controller import Controller

log = structlog.get_logger("controller.replica_state_machine")

NewReplica = ReplicaState.NewReplica
OnlineReplica = ReplicaState.OnlineReplica
OfflineReplica = ReplicaState.OfflineReplica
DeletionStarted = ReplicaState.ReplicaDeletionStarted
DeletionSuccessful = ReplicaState.ReplicaDeletionSuccessful
DeletionIneligible = ReplicaState.ReplicaDeletionIneligible
NonExistentReplica = ReplicaState.NonExistentReplica


class ReplicaStateMachine:
    def __init__(self, ctl: Controller, batch: ControllerBrokerRequestBatch) -> None:
        self.ctl = ctl
        self.batch = batch

    @property
    def _ctx(self):
        return self.ctl.context

    # -- start-up ------------------------------------------------------------------------

    def startup(self) -> None:
        online, offline = self.initialize_replica_state()
        self.handle_state_changes(online, OnlineReplica)
        self.handle_state_changes(offline, OfflineReplica)

    def initialize_replica_state(
        self,
    ) -> tuple[list[PartitionAndReplica], list[PartitionAndReplica]]:
        """Every assigned replica Online if ``is_replica_online``, else ReplicaDeletionIneligible
        (so that deleting a topic with a replica on a dead broker is marked failed, reference
        §3.4). Returns the (online, offline) replicas, as ``online_and_offline_replicas`` would
        right after (in partition order), so that start-up walks the partitions only once."""
        ctx = self._ctx
        online: list[PartitionAndReplica] = []
        offline: list[PartitionAndReplica] = []
        all_online: dict[tuple[int, ...], tuple[tuple[int, ReplicaState], ...]] = {}
        live = ctx.live_broker_ids()
        dirs = ctx.replicas_on_offline_dirs
        for tp, assignment in ctx.iter_assignments():
            replicas = assignment.replicas
            if not dirs and live.issuperset(replicas):
                down: tuple[int, ...] = ()
            else:
                down = tuple(r for r in replicas if not ctx.is_replica_online(r, tp))
            if not down:
                states = all_online.get(replicas)
                if states is None:
                    states = all_online[replicas] = tuple((r, OnlineReplica) for r in replicas)
                online.extend([PartitionAndReplica(tp, r) for r in replicas])
            else:
                states = tuple(
                    (r, DeletionIneligible if r in down else OnlineReplica) for r in replicas
                )
                for r in replicas:
                    (offline if r in down else online).append(PartitionAndReplica(tp, r))
            ctx.put_replica_states(tp, states)
        return online, offline

    # -- transitions ---------------------------------------------------------------------

    def handle_state_changes(
        self, replicas: Iterable[PartitionAndReplica], target: ReplicaState
    ) -> None:
        by_broker: dict[int, list[PartitionAndReplica]] = {}
        for pr in replicas:
            by_broker.setdefault(pr.replica, []).append(pr)
        if not by_broker:
            return
        self.batch.new_batch()
        try:
            for broker_id in sorted(by_broker):
                self._do_handle_state_changes(broker_id, sorted(by_broker[broker_id]), target)
            # The changes are in ZooKeeper: their lines go out before brokers hear of them.
            self.ctl.state_change_log.write_pending()
            self.batch.send_requests_to_brokers(self._ctx.epoch)
        except ControllerMovedError:
            self.batch.clear()
            raise
        except Exception:
            log.exception("error while moving replicas", target=target.name)
            self.batch.clear()

    def _do_handle_state_changes(
        self, replica_id: int, replicas: Sequence[PartitionAndReplica], target: ReplicaState
    ) -> None:
        ctx = self._ctx
        scl = self.ctl.state_change_log
        current = ctx.replica_states_or_insert(replicas, NonExistentReplica)
        checked, invalid_pairs = transitions.check_valid_replica_transitions(
            (((pr, state), state) for pr, state in zip(replicas, current, strict=True)), target
        )
        for pr, state in invalid_pairs:
            message = transitions.invalid_replica_transition_message(pr, state, target)
            log.error("invalid replica state transition", replica=str(pr), error=message)
            scl.replica(pr.tp, pr.replica, state, target, result="invalid", error=message)
        valid = [pr for pr, _ in checked]

        if target is NewReplica:
            self._to_new(replica_id, valid)
        elif target is OnlineReplica:
            self._to_online(replica_id, checked)
        elif target is OfflineReplica:
            self._to_offline(replica_id, valid)
        elif target is DeletionStarted:
            for pr in valid:
                self._record(pr, target)
                self.batch.add_stop_replica_request_for_brokers(
                    (replica_id,), pr.tp, delete_partition=True
                )
        elif target is NonExistentReplica:
            for pr in valid:
                assignment = ctx.partition_full_replica_assignment(pr.tp)
                ctx.update_partition_full_replica_assignment(
                    pr.tp, assignment.remove_replica(replica_id)
                )
                scl.replica(pr.tp, pr.replica, ctx.replica_state(pr), target)
                ctx.remove_replica_state(pr)
        else:  # ReplicaDeletionSuccessful, ReplicaDeletionIneligible: state only
            for pr in valid:
                self._record(pr, target)

    def _record(self, pr: PartitionAndReplica, target: ReplicaState) -> None:
        ctx = self._ctx
        info = ctx.partition_leadership_info(pr.tp)
        lai = info.leader_and_isr if info is not None else None
        self.ctl.state_change_log.replica(
            pr.tp,
            pr.replica,
            ctx.replica_state(pr),
            target,
            leader=lai.leader if lai else None,
            leader_epoch=lai.leader_epoch if lai else None,
            isr=lai.isr if lai else None,
        )
        ctx.put_replica_state(pr, target)

    def _to_new(self, replica_id: int, replicas: Sequence[PartitionAndReplica]) -> None:
        ctx = self._ctx
        for pr in replicas:
            info = ctx.partition_leadership_info(pr.tp)
            if info is not None and info.leader_and_isr.leader == replica_id:
                error = StateChangeFailedError(
                    f"Replica {replica_id} for partition {pr.tp} cannot be moved to NewReplica "
                    "state as it is being requested to become leader"
                )
                self._log_failed(pr, NewReplica, error)
                continue
            if info is not None:
                self.batch.add_leader_and_isr_request_for_brokers(
                    (replica_id,),
                    pr.tp,
                    info,
                    ctx.partition_full_replica_assignment(pr.tp),
                    is_new=True,
                )
            self._record(pr, NewReplica)

    def _to_online(
        self, replica_id: int, replicas: Sequence[tuple[PartitionAndReplica, ReplicaState]]
    ) -> None:
        """``replicas`` with their current states. Bulk: one LeaderAndIsr add for all of
        them, one state-change record call, and no state write for replicas already Online
        (a failover moves every replica Online -> Online)."""
        ctx = self._ctx
        items: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch, ReplicaAssignment]] = []
        rows: list[tuple[TopicPartition, int, ReplicaState, LeaderIsrAndControllerEpoch | None]]
        rows = []
        moved: list[PartitionAndReplica] = []
        for pr, current in replicas:
            tp = pr.tp
            info, assignment = ctx.partition_leadership_and_assignment(tp)
            if current is NewReplica:
                if replica_id not in assignment.replicas:
                    log.error(
                        "replica is not in the assignment; adding it",
                        replica=str(pr),
                        assignment=str(assignment),
                    )
                    ctx.update_partition_full_replica_assignment(
                        tp,
                        ReplicaAssignment(
                            (*assignment.replicas, replica_id),
                            assignment.adding_replicas,
                            assignment.removing_replicas,
                        ),
                    )
            elif info is not None:
                items.append((tp, info, assignment))
            rows.append((tp, replica_id, current, info))
            if current is not OnlineReplica:
                moved.append(pr)
        self.batch.add_leader_and_isr_requests((replica_id,), items, is_new=False)
        self.ctl.state_change_log.replicas(rows, OnlineReplica)
        for pr in moved:
            ctx.put_replica_state(pr, OnlineReplica)

    def _to_offline(self, replica_id: int, replicas: Sequence[PartitionAndReplica]) -> None:
        ctx = self._ctx
        batch = self.batch
        for pr in replicas:
            batch.add_stop_replica_request_for_brokers(
                (replica_id,), pr.tp, delete_partition=False
            )
        with_leadership: list[PartitionAndReplica] = []
        without_leadership: list[PartitionAndReplica] = []
        for pr in replicas:
            has_leadership = ctx.partition_leadership_info(pr.tp) is not None
            (with_leadership if has_leadership else without_leadership).append(pr)
        updated = self.remove_replicas_from_isr(replica_id, [pr.tp for pr in with_leadership])
        # Recorded in bulk (one state-change call) in the order the replicas were handled: a
        # broker failure takes 30K replicas offline at 10K partitions led.
        rows: list[tuple[TopicPartition, int, ReplicaState, LeaderIsrAndControllerEpoch | None]]
        rows = []
        for tp, info in updated.items():
            if not ctx.is_topic_queued_up_for_deletion(tp.topic):
                assignment = ctx.partition_full_replica_assignment(tp)
                recipients = [r for r in assignment.replicas if r != replica_id]
                batch.add_leader_and_isr_request_for_brokers(
                    recipients, tp, info, assignment, is_new=False
                )
            pr = PartitionAndReplica(tp, replica_id)
            rows.append((tp, replica_id, ctx.replica_state(pr), ctx.partition_leadership_info(tp)))
        for pr in without_leadership:
            batch.add_update_metadata_request_for_brokers(
                ctx.live_or_shutting_down_broker_ids(), (pr.tp,)
            )
            rows.append(
                (pr.tp, replica_id, ctx.replica_state(pr), ctx.partition_leadership_info(pr.tp))
            )
        self.ctl.state_change_log.replicas(rows, OfflineReplica)
        for tp, _, current, _ in rows:
            if current is not OfflineReplica:
                ctx.put_replica_state(PartitionAndReplica(tp, replica_id), OfflineReplica)

    # -- ISR removal ---------------------------------------------------------------------

    def remove_replicas_from_isr(
        self, replica_id: int, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """Take ``replica_id`` out of each partition's ISR in ZooKeeper, retrying BADVERSION.

        Returns the resulting leadership (written or unchanged) per partition; failures are
        logged and left out.
        """
        results: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        remaining = list(partitions)
        while remaining:
            finished, remaining = self._do_remove_replicas_from_isr(replica_id, remaining)
            for tp, outcome in finished.items():
                if isinstance(outcome, LeaderIsrAndControllerEpoch):
                    results[tp] = outcome
                else:
                    self._log_failed(PartitionAndReplica(tp, replica_id), OfflineReplica, outcome)
        return results

    def _do_remove_replicas_from_isr(
        self, replica_id: int, partitions: list[TopicPartition]
    ) -> tuple[dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception], list[TopicPartition]]:
        ctx = self._ctx
        read = read_states_for_update(self.ctl.gateway, partitions, ctx.epoch)
        finished: dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception] = dict(read.failed)
        unchanged: dict[TopicPartition, LeaderAndIsr] = {}
        adjusted: dict[TopicPartition, LeaderAndIsr] = {}
        for tp, lai in read.current.items():
            if replica_id in lai.isr:
                leader = NO_LEADER if lai.leader == replica_id else lai.leader
                # The ISR is never emptied: the last member stays (pitfall 1).
                isr = lai.isr if len(lai.isr) == 1 else tuple(r for r in lai.isr if r != replica_id)
                adjusted[tp] = lai.new_leader_and_isr(leader, isr)
            else:
                unchanged[tp] = lai
        for tp in read.missing:
            # A topic being deleted may have lost its state already: skipped silently (§3.4).
            if not ctx.is_topic_queued_up_for_deletion(tp.topic):
                finished[tp] = StateChangeFailedError(
                    f"Failed to change state of replica {replica_id} for partition {tp} "
                    "since the leader and isr path in zookeeper is empty"
                )
        update = self.ctl.gateway.update_leader_and_isr(adjusted, ctx.epoch, ctx.epoch_zk_version)
        for tp, lai in unchanged.items():
            info = LeaderIsrAndControllerEpoch(lai, ctx.epoch)
            ctx.put_partition_leadership_info(tp, info)
            finished[tp] = info
        for tp, outcome in update.finished.items():
            if isinstance(outcome, LeaderAndIsr):
                info = LeaderIsrAndControllerEpoch(outcome, ctx.epoch)
                ctx.put_partition_leadership_info(tp, info)
                finished[tp] = info
            else:
                finished[tp] = outcome
        return finished, sorted(update.to_retry)

    def _log_failed(
        self, pr: PartitionAndReplica, target: ReplicaState, error: BaseException
    ) -> None:
        ctx = self._ctx
        current = ctx.replica_state(pr)
        message = transitions.failed_replica_state_change_message(
            self.ctl.controller_id, ctx.epoch, pr, current, target
        )
        log.warning(message, replica=str(pr), error=str(error))
        self.ctl.state_change_log.replica(
            pr.tp, pr.replica, current, target, result="failed", error=str(error)
        )
