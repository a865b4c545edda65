"""The partition state machine (Kafka's ``ZkPartitionStateMachine``, reference §3.2).

States: NewPartition, OnlinePartition, OfflinePartition, NonExistentPartition. Only the
transition to OnlinePartition touches ZooKeeper: from New it creates the state znodes
(initialisation), from Online/Offline it runs an election on the state *read from ZooKeeper*
and writes the result conditionally, retrying partitions whose zkVersion moved (pitfall 2).
Every transition is recorded in the state-change log; invalid ones are logged and not applied.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import structlog

from controller.core import transitions
from controller.core.election import (
    ControlledShutdownPartitionLeaderElectionStrategy,
    ElectionResult,
    ElectionStrategy,
    OfflinePartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy,
    ReassignPartitionLeaderElectionStrategy,
    election_kind,
    invalid_unclean_value,
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred,
    leader_for_reassign,
    unclean_enabled,
)
from controller.core.errors import StateChangeFailedError
from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    PartitionState,
    TopicPartition,
)
from controller.core.state_reads import read_states_for_update
from controller.zk.errors import ControllerMovedError

if TYPE_CHECKING:
    from controller.channel.batch import ControllerBrokerRequestBatch
    from controller.core.controller import Controller

log = structlog.get_logger("controller.partition_state_machine")

New = PartitionState.NewPartition
Online = PartitionState.OnlinePartition
Offline = PartitionState.OfflinePartition
NonExistent = PartitionState.NonExistentPartition

ElectionOutcome = dict[TopicPartition, LeaderAndIsr | Exception]


class PartitionStateMachine:
    def __init__(self, ctl: Controller, batch: ControllerBrokerRequestBatch) -> None:
        self.ctl = ctl
        self.batch = batch

    @property
    def _ctx(self):
        return self.ctl.context

    # -- start-up ------------------------------------------------------------------------

    def startup(self) -> None:
        self.initialize_partition_state()
        self.trigger_online_partition_state_change()

    def initialize_partition_state(self) -> None:
        ctx = self._ctx
        offline = []
        for tp in ctx.all_partitions():
            info = ctx.partition_leadership_info(tp)
            if info is None:
                ctx.put_partition_state(tp, New)
            elif ctx.is_replica_online(info.leader_and_isr.leader, tp):
                ctx.put_partition_state(tp, Online)
            else:
                ctx.put_partition_state(tp, Offline)
                offline.append((tp, info.leader_and_isr))
        self.record_found_leaderless(offline)

    def record_found_leaderless(self, found: Sequence[tuple[TopicPartition, LeaderAndIsr]]) -> None:
        """Record partitions a controller takes over without a live leader (its leader died
        with the old one) as NonExistent -> Offline. Kafka logs nothing here; without it the
        outage is missing from the state-change log until its next transition (the analytics
        read outages from it). Topics queued for deletion are going, not out."""
        ctx = self._ctx
        self.ctl.state_change_log.partitions(
            [
                (tp, NonExistent, lai, None)
                for tp, lai in found
                if not ctx.is_topic_queued_up_for_deletion(tp.topic)
            ],
            Offline,
        )

    def trigger_online_partition_state_change(self, topic: str | None = None) -> ElectionOutcome:
        ctx = self._ctx
        partitions = [
            tp
            for tp in ctx.partitions_in_states((Offline, New), topic)
            if not ctx.is_topic_queued_up_for_deletion(tp.topic)
        ]
        partitions.sort()
        return self.handle_state_changes(
            partitions, Online, OfflinePartitionLeaderElectionStrategy(False)
        )

    # -- transitions ---------------------------------------------------------------------

    def handle_state_changes(
        self,
        partitions: Sequence[TopicPartition],
        target: PartitionState,
        strategy: ElectionStrategy | None = None,
    ) -> ElectionOutcome:
        """Move partitions to ``target``; returns election results (Online targets only).

        Only partitions that went through an election appear in the result (pitfall 28).
        """
        if not partitions:
            return {}
        self.batch.new_batch()
        try:
            results = self._do_handle_state_changes(partitions, target, strategy)
            # The changes are in ZooKeeper: their lines go out before brokers hear of them.
            self.ctl.state_change_log.write_pending()
            self.batch.send_requests_to_brokers(self._ctx.epoch)
            return results
        except ControllerMovedError:
            self.batch.clear()
            raise
        except Exception as exc:
            # Kafka leaves the batch dirty here (pitfall 9); clearing it keeps us usable.
            log.exception("error while moving partitions", target=target.name)
            self.batch.clear()
            return dict.fromkeys(partitions, exc)

    def _do_handle_state_changes(
        self,
        partitions: Sequence[TopicPartition],
        target: PartitionState,
        strategy: ElectionStrategy | None,
    ) -> ElectionOutcome:
        ctx = self._ctx
        scl = self.ctl.state_change_log
        for tp in partitions:
            ctx.put_partition_state_if_not_exists(tp, NonExistent)
        valid, invalid = ctx.check_valid_partition_state_change(partitions, target)
        for tp in invalid:
            current = ctx.partition_state(tp)
            message = transitions.invalid_partition_transition_message(tp, current, target)
            log.error("invalid partition state transition", partition=str(tp), error=message)
            scl.partition(tp, current, target, result="invalid", error=message)

        if target is Online:
            uninitialized = [tp for tp in valid if ctx.partition_state(tp) is New]
            to_elect = [tp for tp in valid if ctx.partition_state(tp) in (Offline, Online)]
            if uninitialized:
                for tp in self._initialize_leader_and_isr_for_partitions(uninitialized):
                    lai = ctx.partition_leader_and_isr(tp)
                    scl.partition(
                        tp,
                        New,
                        Online,
                        leader=lai.leader,
                        leader_epoch=lai.leader_epoch,
                        isr=lai.isr,
                        # Initialization, not an election (Kafka counts none either).
                        election=None,
                    )
                    ctx.put_partition_state(tp, Online)
            if not to_elect:
                return {}
            if strategy is None:
                raise ValueError(
                    "an election strategy is required when the target state is OnlinePartition"
                )
            return self._elect_leader_for_partitions(to_elect, strategy)

        for tp in valid:
            scl.partition(tp, ctx.partition_state(tp), target)
            ctx.put_partition_state(tp, target)
        return {}

    # -- New -> Online -------------------------------------------------------------------

    def _initialize_leader_and_isr_for_partitions(
        self, partitions: Sequence[TopicPartition]
    ) -> list[TopicPartition]:
        ctx = self._ctx
        scl = self.ctl.state_change_log
        states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for tp in partitions:
            live = [r for r in ctx.partition_replica_assignment(tp) if ctx.is_replica_online(r, tp)]
            if not live:
                self._log_failed(
                    tp,
                    New,
                    Online,
                    StateChangeFailedError(
                        f"Controller {self.ctl.controller_id} epoch {ctx.epoch} encountered "
                        f"error during state change of partition {tp} from New to Online, "
                        "assigned replicas are "
                        f"[{','.join(map(str, ctx.partition_replica_assignment(tp)))}], "
                        f"live brokers are [{','.join(map(str, sorted(ctx.live_broker_ids())))}]. "
                        "No assigned replica is alive."
                    ),
                    scl,
                )
                continue
            states[tp] = LeaderIsrAndControllerEpoch(
                LeaderAndIsr(live[0], 0, tuple(live), LeaderRecoveryState.RECOVERED, 0), ctx.epoch
            )
        if not states:
            return []
        try:
            responses = self.ctl.gateway.create_topic_partition_states(states, ctx.epoch_zk_version)
        except ControllerMovedError:
            raise
        except Exception as exc:
            for tp in states:
                self._log_failed(tp, New, Online, exc, scl)
            return []
        successful = []
        for tp, error in responses.items():
            if error is not None:
                self._log_failed(tp, New, Online, error, scl)
                continue
            info = states[tp]
            ctx.put_partition_leadership_info(tp, info)
            self.batch.add_leader_and_isr_request_for_brokers(
                info.leader_and_isr.isr,
                tp,
                info,
                ctx.partition_full_replica_assignment(tp),
                is_new=True,
            )
            successful.append(tp)
        successful.sort()
        return successful

    # -- Online/Offline -> Online (elections) --------------------------------------------

    def _elect_leader_for_partitions(
        self, partitions: Sequence[TopicPartition], strategy: ElectionStrategy
    ) -> ElectionOutcome:
        ctx = self._ctx
        scl = self.ctl.state_change_log
        results: ElectionOutcome = {}
        self._last_kind: dict[TopicPartition, str] = {}
        remaining = list(partitions)
        while remaining:
            finished, remaining = self._do_elect_leader_for_partitions(remaining, strategy)
            results.update(finished)
        # Recorded in bulk, in partition order (pending successes are written before each
        # failure line), and counted per election kind once: 10K elections at a time.
        rows: list[tuple[TopicPartition, PartitionState, LeaderAndIsr, str | None]] = []
        elected: Counter[str] = Counter()
        default_kind = election_kind(strategy)
        for tp in partitions:
            outcome = results.get(tp)
            if isinstance(outcome, LeaderAndIsr):
                kind = self._last_kind.get(tp, default_kind)
                rows.append((tp, ctx.partition_state(tp), outcome, kind))
                ctx.put_partition_state(tp, Online)
                elected[kind] += 1
            elif outcome is not None:
                scl.partitions(rows, Online)
                rows = []
                self._log_failed(tp, ctx.partition_state(tp), Online, outcome, scl, strategy)
        scl.partitions(rows, Online)
        for kind, count in elected.items():
            self.ctl.record_leader_election(kind, count)
        return results

    def _do_elect_leader_for_partitions(
        self, partitions: list[TopicPartition], strategy: ElectionStrategy
    ) -> tuple[ElectionOutcome, list[TopicPartition]]:
        ctx = self._ctx
        controller_id = self.ctl.controller_id

        def written_by_newer(tp: TopicPartition, epoch: int) -> StateChangeFailedError:
            return StateChangeFailedError(  # Kafka's words, which admin clients see
                f"Aborted leader election for partition {tp} since the LeaderAndIsr path was "
                "already written by another controller. This probably means that the current "
                f"controller {controller_id} went through a soft failure and another "
                f"controller was elected with epoch {epoch}."
            )

        read = read_states_for_update(
            self.ctl.gateway, partitions, ctx.epoch, newer_controller=written_by_newer
        )
        finished: ElectionOutcome = dict(read.failed)
        current = read.current
        for tp in read.missing:
            finished[tp] = StateChangeFailedError(
                f"LeaderAndIsr information doesn't exist for partition {tp} in "
                f"{ctx.partition_state(tp).name} state"
            )
        elections = self._run_elections(current, strategy, finished)
        to_write = {r.tp: r.leader_and_isr for r in elections if r.leader_and_isr is not None}
        for r in elections:
            if r.leader_and_isr is None:
                finished[r.tp] = StateChangeFailedError(
                    f"Failed to elect leader for partition {r.tp} under strategy {strategy}"
                )
        if not to_write:
            return finished, []
        update = self.ctl.gateway.update_leader_and_isr(to_write, ctx.epoch, ctx.epoch_zk_version)
        by_tp = {r.tp: r for r in elections}
        for tp, outcome in update.finished.items():
            if isinstance(outcome, LeaderAndIsr):
                info = LeaderIsrAndControllerEpoch(outcome, ctx.epoch)
                ctx.put_partition_leadership_info(tp, info)
                election = by_tp[tp]
                self.batch.add_leader_and_isr_request_for_brokers(
                    election.recipients,
                    tp,
                    info,
                    ctx.partition_full_replica_assignment(tp),
                    is_new=False,
                )
                self._last_kind[tp] = election_kind(strategy, election.unclean)
                if election.unclean:
                    self.ctl.record_unclean_election(tp)
            finished[tp] = outcome
        return finished, sorted(update.to_retry)

    def _run_elections(
        self,
        current: dict[TopicPartition, LeaderAndIsr],
        strategy: ElectionStrategy,
        failed: ElectionOutcome,
    ) -> list[ElectionResult]:
        ctx = self._ctx
        out: list[ElectionResult] = []
        match strategy:
            case OfflinePartitionLeaderElectionStrategy(allow_unclean=allow_unclean):
                unclean = self._unclean_permissions(current, allow_unclean, failed)
                for tp, lai in current.items():
                    if tp in unclean:
                        out.append(
                            leader_for_offline(
                                tp,
                                ctx.partition_replica_assignment(tp),
                                lai,
                                ctx.online_replicas(tp),
                                unclean[tp],
                            )
                        )
            case ReassignPartitionLeaderElectionStrategy():
                for tp, lai in current.items():
                    out.append(
                        leader_for_reassign(
                            tp,
                            ctx.partition_full_replica_assignment(tp),
                            lai,
                            ctx.online_replicas(tp),
                        )
                    )
            case PreferredReplicaPartitionLeaderElectionStrategy():
                for tp, lai in current.items():
                    out.append(
                        leader_for_preferred(
                            tp, ctx.partition_replica_assignment(tp), lai, ctx.online_replicas(tp)
                        )
                    )
            case ControlledShutdownPartitionLeaderElectionStrategy():
                for tp, lai in current.items():
                    out.append(
                        leader_for_controlled_shutdown(
                            tp,
                            ctx.partition_replica_assignment(tp),
                            lai,
                            ctx.online_replicas(tp, include_shutting_down=True),
                            ctx.shutting_down_broker_ids,
                        )
                    )
        return out

    def _unclean_permissions(
        self,
        current: dict[TopicPartition, LeaderAndIsr],
        allow_unclean: bool,
        failed: ElectionOutcome,
    ) -> dict[TopicPartition, bool]:
        """Kafka's ``collectUncleanLeaderElectionState``: partitions with an online ISR member
        elect cleanly; the others may go unclean per the admin flag or the topic's config."""
        ctx = self._ctx
        out: dict[TopicPartition, bool] = {}
        need_config: dict[str, list[TopicPartition]] = {}
        for tp, lai in current.items():
            if any(ctx.is_replica_online(r, tp) for r in lai.isr):
                out[tp] = False
            elif allow_unclean:
                out[tp] = True
            else:
                need_config.setdefault(tp.topic, []).append(tp)
        if need_config:
            configs: dict[str, dict[str, str] | Exception]
            try:
                configs = self.ctl.gateway.get_topic_configs(need_config)
            except Exception as exc:
                # Kafka's getLogConfigs: a thrown read fails these topics only. Escaping here
                # would fail the whole call and discard the batch, including the LeaderAndIsr
                # of partitions already initialised or elected (and written) in this call.
                configs = dict.fromkeys(need_config, exc)
            default = self.ctl.unclean_leader_election_default
            for topic, tps in need_config.items():
                config = configs.get(topic)
                if isinstance(config, Exception):
                    for tp in tps:
                        failed[tp] = config
                    continue
                enabled = unclean_enabled(config or {}, default)
                invalid = invalid_unclean_value(config or {})
                if invalid is not None:
                    log.warning(
                        "the topic's unclean.leader.election.enable is neither true nor false; "
                        "read as false, so its offline partitions elect no leader outside the ISR",
                        topic=topic,
                        value=invalid,
                    )
                for tp in tps:
                    out[tp] = enabled
        return out

    # -- logging -------------------------------------------------------------------------

    def _log_failed(
        self,
        tp: TopicPartition,
        current: PartitionState,
        target: PartitionState,
        error: BaseException,
        scl,
        strategy: ElectionStrategy | None = None,
    ) -> None:
        message = transitions.failed_partition_state_change_message(
            self.ctl.controller_id, self._ctx.epoch, tp, current, target
        )
        log.warning(message, partition=str(tp), error=str(error))
        kind = election_kind(strategy) if strategy is not None else None
        scl.partition(tp, current, target, election=kind, result="failed", error=str(error))
