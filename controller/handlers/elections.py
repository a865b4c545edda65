"""Leader elections (reference §2.8): preferred and unclean elections requested through
``/admin/preferred_replica_election`` or the ElectLeaders admin RPC, the automatic leader
rebalance, and the events that re-run offline elections when unclean election is enabled.

Entry points (all on the controller event thread):

* ``ReplicaLeaderElection`` -- Kafka's ``processReplicaLeaderElection``. ZooKeeper-triggered
  events read the partitions from the znode (and re-arm its creation watch); AdminClient ones
  carry them (None = every partition) and are answered with ``{tp: new leader | ApiError}``.
* ``AutoPreferredReplicaLeaderElection`` -- the periodic rebalance check (math in
  ``controller.core.rebalance``), rescheduled after each run while this node is active.
* ``UncleanLeaderElectionEnable`` / ``TopicUncleanLeaderElectionEnable`` -- re-run offline
  elections; the partition state machine reads the now-true setting when no ISR member is
  online.
* failover steps 12 (pending preferred elections from the znode) and 13 (start the scheduler
  and schedule the first rebalance check 5 s later), registered as failover hooks.

Differences from Kafka, each to avoid a failure Kafka would have:

* a partition without leadership info (its state znode was never created) gets a
  per-partition error; Kafka's ``partitionLeadershipInfo(tp).get`` would throw and the whole
  request would go unanswered (and at failover, abort the failover);
* a partition that reaches the state machine but does not come back with a result (it was not
  in a state that allows an election) gets a per-partition error instead of no entry;
* a malformed ``/admin/preferred_replica_election`` is logged with the problem and its raw
  content, then deleted like any other request (as Kafka does after its decoder yields an
  empty set): the creation watch must be re-armed, and the content stays in the log;
* failover step 12 does nothing when there is no znode (Kafka deletes it anyway, which can
  delete a request created meanwhile before it is read).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import structlog

from controller.api.errors import ApiError, Errors, error_for_exception
from controller.config import ControllerConfig
from controller.core import rebalance
from controller.core.election import (
    PREFERRED_STRATEGY,
    ElectionStrategy,
    OfflinePartitionLeaderElectionStrategy,
    preferred_replica_partition_leader_election,
)
from controller.core.errors import StateChangeFailedError
from controller.core.events import (
    AutoPreferredReplicaLeaderElection,
    ElectionTrigger,
    ElectionType,
    NotControllerError,
    ReplicaLeaderElection,
    TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
)
from controller.core.model import NO_LEADER, LeaderAndIsr, PartitionState, TopicPartition
from controller.logs import log_sample
from controller.zk import codecs, paths
from controller.zk.errors import ControllerMovedError, MalformedZnodeError
from controller.zk.watches import ZNodeChangeHandler

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.elections")

#: Kafka schedules the first automatic rebalance check this long after failover (§2.3 step 13).
FIRST_REBALANCE_CHECK_DELAY_S = 5.0
AUTO_REBALANCE_TASK = "auto-leader-rebalance"
#: Enough of a malformed znode to identify it in the log without flooding it.
MAX_LOGGED_CONTENT = 2000

ElectionOutcome = dict[TopicPartition, int | ApiError]


class LeaderElections:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl
        # Kafka's failover order: pending preferred elections (step 12), then the scheduler
        # and the first rebalance check (step 13).
        ctl.election.add_failover_hook(self.elect_pending_preferred_replicas)
        ctl.election.add_failover_hook(self.start_auto_rebalance)

    def handlers(self) -> dict[type, Any]:
        return {
            ReplicaLeaderElection: self.process_replica_leader_election,
            AutoPreferredReplicaLeaderElection: lambda e: self.process_auto_rebalance(),
            UncleanLeaderElectionEnable: lambda e: self.process_unclean_enable(),
            TopicUncleanLeaderElectionEnable: lambda e: self.process_topic_unclean_enable(e.topic),
        }

    # -- the /admin/preferred_replica_election znode -------------------------------------

    def _preferred_election_handler(self) -> ZNodeChangeHandler:
        put = self.ctl.put
        # Deletion too: a node deleted by hand uses up the watch; the event (a no-op while
        # the node is absent) arms it again for the next request.
        return ZNodeChangeHandler(
            paths.PREFERRED_REPLICA_ELECTION,
            on_creation=lambda: put(ReplicaLeaderElection()),
            on_deletion=lambda: put(ReplicaLeaderElection()),
        )

    def read_preferred_replica_election(self) -> set[TopicPartition] | None:
        """The partitions in the znode, None when there is no znode; a malformed znode is
        logged in full and reads empty."""
        got = self.ctl.gateway.get_data(paths.PREFERRED_REPLICA_ELECTION, watch=False)
        if got is None:
            return None
        data = got[0]
        try:
            return codecs.decode_preferred_replica_election(data, paths.PREFERRED_REPLICA_ELECTION)
        except MalformedZnodeError as exc:
            log.error(
                "ignoring malformed preferred replica election request; the znode is deleted "
                "so that the next request is seen",
                path=exc.path,
                problem=exc.problem,
                content=_printable(data),
            )
            return set()

    # -- ReplicaLeaderElection -----------------------------------------------------------

    def process_replica_leader_election(self, event: ReplicaLeaderElection) -> None:
        ctl = self.ctl
        admin = event.trigger is ElectionTrigger.ADMIN_CLIENT_TRIGGERED
        if not ctl.is_active:
            _reply_exception(event, NotControllerError(ctl.active_controller_id))
            return
        # A ZooKeeper trigger re-arms the creation watch and goes on only if the znode exists
        # (the event queued after each deletion exists for the re-arming alone).
        if not admin and not ctl.gateway.register_change_handler_and_check_existence(
            self._preferred_election_handler()
        ):
            _reply(event, {})
            return
        if event.partitions is not None:
            partitions: set[TopicPartition] = set(event.partitions)
        elif admin:
            # Kafka's null partition list: every partition (the broker resolves it from its
            # metadata cache, which holds no topic queued for deletion and no partition
            # never elected: one whose replicas were all down at its creation).
            ctx = ctl.context
            partitions = {
                tp
                for tp in ctx.all_partitions()
                if not ctx.is_topic_queued_up_for_deletion(tp.topic)
                and ctx.partition_leadership_info(tp) is not None
            }
        else:
            requested = self.read_preferred_replica_election()
            if requested is None:
                _reply(event, {})  # deleted since the existence check: nothing to do
                return
            partitions = requested
        results = self._elect(partitions, event.election_type, event.trigger)
        _reply(event, results)

    def _elect(
        self,
        partitions: set[TopicPartition],
        election_type: ElectionType,
        trigger: ElectionTrigger,
    ) -> ElectionOutcome:
        """Classify the partitions, elect the electable ones, and build Kafka's results."""
        ctx = self.ctl.context
        all_topics = ctx.all_topics
        results: ElectionOutcome = {}
        electable: set[TopicPartition] = set()
        unknown: list[TopicPartition] = []
        deleting: list[TopicPartition] = []
        for tp in sorted(partitions):
            if tp.topic not in all_topics or not ctx.partition_replica_assignment(tp):
                unknown.append(tp)
                results[tp] = ApiError(
                    Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
                )
            elif ctx.is_topic_queued_up_for_deletion(tp.topic):
                deleting.append(tp)
                results[tp] = ApiError(Errors.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
            elif ctx.partition_leader_and_isr(tp) is None:
                # Kafka's ``partitionLeadershipInfo(tp).get`` would throw here.
                results[tp] = ApiError(
                    _no_leader_error(election_type),
                    f"Partition {tp} has no leader and ISR state yet (no state znode)",
                )
            elif self._leader_already_valid(tp, election_type):
                # Kafka's ApiError(ELECTION_NOT_NEEDED) carries the code's default message.
                results[tp] = ApiError(
                    Errors.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."
                )
            else:
                electable.add(tp)
        if unknown:
            # One line per request: a line per partition made a 100k-partition request of
            # missing partitions hold the event thread for seconds (Kafka logs none).
            log.info(
                "skipping leader election for partitions that do not exist",
                count=len(unknown),
                partitions=log_sample(unknown),
                election_type=election_type.value,
                trigger=trigger.value,
            )
        if deleting:
            log.warning(
                "skipping leader election for partitions of topics being deleted",
                count=len(deleting),
                partitions=log_sample(deleting),
                election_type=election_type.value,
                trigger=trigger.value,
            )
        for tp, outcome in self.on_replica_election(electable, election_type, trigger).items():
            if isinstance(outcome, LeaderAndIsr):
                results[tp] = outcome.leader
            elif isinstance(outcome, StateChangeFailedError):
                results[tp] = ApiError(_no_leader_error(election_type), str(outcome))
            elif isinstance(outcome, ApiError):
                results[tp] = outcome
            else:
                results[tp] = ApiError(error_for_exception(outcome), str(outcome))
        return results

    def _leader_already_valid(self, tp: TopicPartition, election_type: ElectionType) -> bool:
        ctx = self.ctl.context
        lai = ctx.partition_leader_and_isr(tp)
        assert lai is not None
        if election_type is ElectionType.PREFERRED:
            return lai.leader == ctx.partition_replica_assignment(tp)[0]
        return lai.leader != NO_LEADER and lai.leader in ctx.live_broker_ids()

    def on_replica_election(
        self,
        partitions: Iterable[TopicPartition],
        election_type: ElectionType,
        trigger: ElectionTrigger,
    ) -> dict[TopicPartition, LeaderAndIsr | Exception]:
        """Kafka's ``onReplicaElection``: one state-machine pass with the type's strategy.

        Every partition passed in gets an outcome. For triggers other than AdminClient,
        failures are logged, ControllerMoved propagates, and the partitions are then removed
        from the preferred-election request (deleting the znode unless auto-triggered).
        """
        tps = sorted(partitions)
        strategy: ElectionStrategy = (
            PREFERRED_STRATEGY
            if election_type is ElectionType.PREFERRED
            else OfflinePartitionLeaderElectionStrategy(
                allow_unclean=trigger is ElectionTrigger.ADMIN_CLIENT_TRIGGERED
            )
        )
        admin = trigger is ElectionTrigger.ADMIN_CLIENT_TRIGGERED
        try:
            raw = self.ctl.partition_state_machine.handle_state_changes(
                tps, PartitionState.OnlinePartition, strategy
            )
            outcome: dict[TopicPartition, LeaderAndIsr | Exception] = {}
            for tp in tps:
                result = raw.get(tp)
                if result is None:
                    # The state machine found the transition invalid (and logged it), or the
                    # partition was initialised rather than elected (pitfall 28).
                    result = StateChangeFailedError(
                        f"Partition {tp} is in state "
                        f"{self.ctl.context.partition_state(tp).name}, which does not allow "
                        f"a {election_type.value.lower()} leader election"
                    )
                outcome[tp] = result
            if not admin:
                for tp, result in outcome.items():
                    if isinstance(result, ControllerMovedError):
                        raise result
                    if isinstance(result, Exception):
                        log.warning(
                            "leader election failed",
                            partition=str(tp),
                            election_type=election_type.value,
                            trigger=trigger.value,
                            error=str(result),
                        )
            return outcome
        finally:
            if not admin:
                self.remove_partitions_from_preferred_replica_election(
                    tps, auto=trigger is ElectionTrigger.AUTO_TRIGGERED
                )

    def remove_partitions_from_preferred_replica_election(
        self, partitions: Iterable[TopicPartition], *, auto: bool
    ) -> None:
        """Log each partition's outcome; unless auto-triggered, delete the znode (fenced) and
        queue an event whose only purpose is to re-arm the creation watch (pitfall 11)."""
        ctx = self.ctl.context
        for tp in partitions:
            lai = ctx.partition_leader_and_isr(tp)
            replicas = ctx.partition_replica_assignment(tp)
            preferred = replicas[0] if replicas else None
            if lai is not None and lai.leader == preferred:
                log.info(
                    "preferred replica leader election succeeded",
                    partition=str(tp),
                    leader=lai.leader,
                )
            else:
                log.warning(
                    "preferred replica leader election failed; the leader is not the "
                    "preferred replica",
                    partition=str(tp),
                    preferred_replica=preferred,
                    leader=None if lai is None else lai.leader,
                )
        if not auto:
            self.ctl.gateway.delete_preferred_replica_election(self.ctl.context.epoch_zk_version)
            self.ctl.put(ReplicaLeaderElection())

    # -- failover steps 12 and 13 --------------------------------------------------------

    def elect_pending_preferred_replicas(self) -> None:
        """Failover step 12: finish a preferred election requested before the failover.

        Kafka runs this (and so deletes the znode) even when there is no znode. A request
        created after that read would then be deleted unseen; here nothing is done without a
        znode, and a later creation fires the watch armed at failover step 2.
        """
        ctx = self.ctl.context
        requested = self.read_preferred_replica_election()
        if requested is None:
            return
        pending: set[TopicPartition] = set()
        for tp in sorted(requested):
            replicas = ctx.partition_replica_assignment(tp)
            lai = ctx.partition_leader_and_isr(tp)
            if not replicas:
                continue  # the topic is gone: nothing to do
            if lai is None:
                log.warning(
                    "skipping pending preferred replica election: the partition has no leader "
                    "and ISR state",
                    partition=str(tp),
                )
                continue
            if lai.leader == replicas[0]:
                continue  # already done
            if ctx.is_topic_queued_up_for_deletion(tp.topic):
                log.warning(
                    "skipping pending preferred replica election of a topic being deleted",
                    partition=str(tp),
                )
                continue
            pending.add(tp)
        if requested:
            log.info(
                "resuming pending preferred replica elections",
                requested=len(requested),
                pending=sorted(str(tp) for tp in pending),
            )
        # Called even when nothing is pending: that deletes the request and re-arms the watch.
        self.on_replica_election(pending, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED)

    def start_auto_rebalance(self) -> None:
        """Failover step 13: start the scheduler; schedule the first rebalance check."""
        ctl = self.ctl
        ctl.scheduler.startup()
        if ctl.config.auto_leader_rebalance_enable:
            self._schedule_auto_rebalance(FIRST_REBALANCE_CHECK_DELAY_S)

    def _schedule_auto_rebalance(self, delay_s: float) -> None:
        put = self.ctl.put
        self.ctl.scheduler.schedule_once(
            AUTO_REBALANCE_TASK, delay_s, lambda: put(AutoPreferredReplicaLeaderElection())
        )

    # -- automatic rebalance -------------------------------------------------------------

    def process_auto_rebalance(self) -> None:
        """Kafka's ``processAutoPreferredReplicaLeaderElection``; not active: no reschedule."""
        ctl = self.ctl
        if not ctl.is_active:
            return
        try:
            if ctl.config.auto_leader_rebalance_enable:
                self.check_and_trigger_auto_leader_rebalance()
        finally:
            # The configuration is read at every run, so a reload that disables the rebalance
            # stops the schedule here (and ``on_config_change`` restarts it).
            if ctl.config.auto_leader_rebalance_enable:
                self._schedule_auto_rebalance(ctl.config.leader_imbalance_check_interval_seconds)

    def check_and_trigger_auto_leader_rebalance(self) -> dict[TopicPartition, LeaderAndIsr]:
        """Kafka's ``checkAndTriggerAutoLeaderRebalance``; returns the successful elections."""
        ctx = self.ctl.context
        percentage = self.ctl.config.leader_imbalance_per_broker_percentage
        partitions = (
            rebalance.PartitionLeadership(
                tp,
                ctx.partition_replica_assignment(tp),
                None if (lai := ctx.partition_leader_and_isr(tp)) is None else lai.leader,
            )
            for tp in ctx.all_partitions()
            if not ctx.is_topic_queued_up_for_deletion(tp.topic)
        )
        elected: dict[TopicPartition, LeaderAndIsr] = {}
        for broker, imbalance in rebalance.imbalance_by_preferred_broker(partitions).items():
            candidates = rebalance.rebalance_candidates(imbalance, percentage, self._can_rebalance)
            log.debug(
                "leader imbalance",
                broker=broker,
                ratio=round(imbalance.ratio, 4),
                not_preferred=len(imbalance.not_preferred),
                partitions=imbalance.total,
                candidates=len(candidates),
            )
            if not imbalance.exceeds(percentage):
                continue
            log.info(
                "leader imbalance above the threshold; electing preferred replicas",
                broker=broker,
                ratio=round(imbalance.ratio, 4),
                threshold_percentage=percentage,
                candidates=len(candidates),
                partitions=log_sample(candidates),
            )
            outcome = self.on_replica_election(
                candidates, ElectionType.PREFERRED, ElectionTrigger.AUTO_TRIGGERED
            )
            elected.update((tp, r) for tp, r in outcome.items() if isinstance(r, LeaderAndIsr))
        return elected

    def _can_rebalance(self, tp: TopicPartition) -> bool:
        """Topic exists and is not queued for deletion, and ``canPreferredReplicaBeLeader``:
        the preferred replica is online and in the cached ISR."""
        ctx = self.ctl.context
        if ctx.is_topic_queued_up_for_deletion(tp.topic) or tp.topic not in ctx.all_topics:
            return False
        lai = ctx.partition_leader_and_isr(tp)
        if lai is None:
            return False
        assignment = ctx.partition_replica_assignment(tp)
        live = [r for r in assignment if ctx.is_replica_online(r, tp)]
        return preferred_replica_partition_leader_election(assignment, lai.isr, live) is not None

    # -- unclean leader election enabled -------------------------------------------------

    def process_unclean_enable(self) -> None:
        """Cluster-level ``unclean.leader.election.enable`` became true: retry every
        offline election (the state machine reads the setting per partition)."""
        if not self.ctl.is_active:
            return
        log.info("unclean leader election enabled for the cluster; retrying offline elections")
        self.ctl.partition_state_machine.trigger_online_partition_state_change()

    def process_topic_unclean_enable(self, topic: str) -> None:
        if not self.ctl.is_active:
            return
        log.info("unclean leader election enabled for a topic; retrying its elections", topic=topic)
        self.ctl.partition_state_machine.trigger_online_partition_state_change(topic)


# -- configuration reload --------------------------------------------------------------------


def on_config_change(ctl: Controller, old: ControllerConfig, new: ControllerConfig) -> None:
    """Call after replacing ``ctl.config`` (the daemon's SIGHUP reload); safe from any thread.

    It only queues events. Unclean election turning on for the cluster queues
    ``UncleanLeaderElectionEnable`` (Kafka's ``enableDefaultUncleanLeaderElection``), unless
    the brokers' dynamic default (``/config/brokers/<default>``) sets it and so prevails. The
    automatic rebalance turning on, or its interval changing, queues a check now, which also
    reschedules it with the new interval (a disabled rebalance stops at its next run).
    """
    if (
        new.unclean_leader_election_enable
        and not old.unclean_leader_election_enable
        and ctl.dynamic_unclean_default is None
    ):
        ctl.put(UncleanLeaderElectionEnable())
    if new.auto_leader_rebalance_enable and (
        not old.auto_leader_rebalance_enable
        or new.leader_imbalance_check_interval_seconds
        != old.leader_imbalance_check_interval_seconds
    ):
        ctl.put(AutoPreferredReplicaLeaderElection())


# -- helpers -------------------------------------------------------------------------------


def _no_leader_error(election_type: ElectionType) -> Errors:
    if election_type is ElectionType.PREFERRED:
        return Errors.PREFERRED_LEADER_NOT_AVAILABLE
    return Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE


def _reply(event: ReplicaLeaderElection, results: Mapping[TopicPartition, int | ApiError]) -> None:
    if not event.reply.done():
        event.reply.set_result(dict(results))


def _reply_exception(event: ReplicaLeaderElection, exc: BaseException) -> None:
    if not event.reply.done():
        event.reply.set_exception(exc)


def _printable(data: bytes | None) -> str:
    if data is None:
        return "<no data>"
    text = data[:MAX_LOGGED_CONTENT].decode("utf-8", errors="backslashreplace")
    return text + ("..." if len(data) > MAX_LOGGED_CONTENT else "")
