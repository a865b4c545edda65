"""Controller election, failover, resignation and session expiry (reference §2.3).

Handles ``Startup``, ``ControllerChange``, ``Reelect``, ``RegisterBrokerAndReelect``,
``Expire`` and our ``Resign`` (graceful stop). ``on_controller_failover`` is the ordered
start-up of an elected controller; ``on_controller_resignation`` undoes it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import structlog

from controller.core.events import (
    BrokerChange,
    ControllerChange,
    Expire,
    IsrChangeNotification,
    LogDirEventNotification,
    Reelect,
    RegisterBrokerAndReelect,
    ReplicaLeaderElection,
    Resign,
    Startup,
    TopicChange,
    TopicDeletion,
    ZkPartitionReassignment,
)
from controller.logs import bind_controller_context
from controller.zk import paths
from controller.zk.errors import ControllerMovedError, MalformedZnodeError, NoAuthError, ZkError
from controller.zk.watches import ZNodeChangeHandler, ZNodeChildChangeHandler

if TYPE_CHECKING:
    from controller.core.controller import Controller

log = structlog.get_logger("controller.failover")

# A failed election (e.g. a malformed /controller_epoch) is retried after this long, so the
# controller recovers by itself once the data is repaired.
ELECTION_RETRY_BACKOFF_S = 2.0


class ControllerElection:
    def __init__(self, ctl: Controller) -> None:
        self.ctl = ctl
        self._failover_hooks: list[Any] = []
        # Set by a graceful stop: deleting our own /controller fires our own watch, and a
        # stopping controller must not win the election it just left.
        self._stopping = False

    def stop_electing(self) -> None:
        """A stop has begun: win no election from now on, also if the Resign that would say
        so is dropped (a session expiry preempts it and the new session re-elects). Set from
        the stopping thread; ``elect`` reads it on the event thread (a plain flag)."""
        self._stopping = True

    def handlers(self) -> dict[type, Any]:
        return {
            Startup: lambda e: self.process_startup(),
            ControllerChange: lambda e: self.process_controller_change(),
            Reelect: lambda e: self.process_reelect(),
            RegisterBrokerAndReelect: lambda e: self.process_reelect(),
            Expire: lambda e: self.process_expire(),
            Resign: self.process_resign,
        }

    # -- the /controller watch -----------------------------------------------------------

    def _controller_change_handler(self) -> ZNodeChangeHandler:
        put = self.ctl.put
        return ZNodeChangeHandler(
            paths.CONTROLLER,
            on_creation=lambda: put(ControllerChange()),
            on_deletion=lambda: put(Reelect()),
            on_data_change=lambda: put(ControllerChange()),
        )

    def process_startup(self) -> None:
        self.ctl.gateway.ensure_persistent_paths()
        self.ctl.gateway.register_change_handler_and_check_existence(
            self._controller_change_handler()
        )
        self.elect()

    def process_controller_change(self) -> None:
        """Kafka only resigns here. But the watch that fired is re-armed only now: a node
        created (or changed) and deleted before that left no deletion to notify, and Kafka
        then waits with no controller until something else happens. Finding the node gone,
        run for election as the deletion's Reelect would have. Finding it ours while not
        set up (a failed failover whose move could not delete it), take charge at once:
        waiting for the retry would answer brokers from an empty context meanwhile."""
        self.maybe_resign()
        ctl = self.ctl
        if ctl.active_controller_id == -1 or (ctl.is_active and ctl.context.epoch == 0):
            self.elect()

    def process_reelect(self) -> None:
        self.maybe_resign()
        self.elect()

    def process_expire(self) -> None:
        self.ctl.active_controller_id = -1
        self.on_controller_resignation()

    def process_resign(self, event: Resign) -> None:
        """Graceful stop: resign and delete our own ``/controller`` so a standby takes over
        at once instead of after the session timeout."""
        self._stopping = True
        try:
            if self.ctl.is_active:
                epoch_zk_version = self.ctl.context.epoch_zk_version
                self.ctl.active_controller_id = -1
                self.on_controller_resignation()
                with contextlib.suppress(ControllerMovedError):
                    self.ctl.gateway.delete_controller(epoch_zk_version)
        finally:
            event.done.set_result(None)

    def _read_active_controller_id(self) -> int:
        try:
            active = self.ctl.gateway.get_controller_id()
        except MalformedZnodeError as exc:
            # Someone holds /controller but we cannot tell who; the watch is armed, so a
            # repair or deletion of the node brings us back here.
            log.error("cannot read the active controller", path=exc.path, error=str(exc))
            return -2
        if active is None:
            return -1
        if active == self.ctl.controller_id:
            owner = self.ctl.gateway.get_controller_owner_session()
            if owner is not None and owner != self.ctl.port.session_id:
                # Our id, but not our session: a previous process of this controller whose
                # session has not timed out yet (or a second process with the same id). It
                # is not us: wait for the node to go (the watch is armed).
                log.warning(
                    "/controller names this controller id but another ZooKeeper session holds "
                    "it; waiting for it to go",
                    path=paths.CONTROLLER,
                    owner_session=hex(owner),
                )
                return -2
        return active

    def elect(self) -> None:
        ctl = self.ctl
        if self._stopping:
            return
        ctl.active_controller_id = self._read_active_controller_id()
        resume = ctl.is_active and ctl.context.epoch == 0
        if ctl.active_controller_id != -1 and not resume:
            log.debug(
                "a controller is already active", active_controller_id=ctl.active_controller_id
            )
            return
        try:
            if resume:
                # /controller names us but we are not set up: we won an election on a new
                # session while an event that began on the expired one was still running
                # (kazoo reconnects on its own; Kafka's client waits for Expire to start), and
                # the Expire that followed resigned. Nobody can have been elected since (our
                # node exists), so /controller_epoch is still the epoch we won: take charge.
                current = ctl.gateway.get_controller_epoch()
                if current is None:
                    raise ControllerMovedError("/controller_epoch vanished")
                epoch, epoch_zk_version = current
                log.warning(
                    "holding /controller after a session expiry undid the failover; resuming",
                    epoch=epoch,
                )
            else:
                epoch, epoch_zk_version = ctl.gateway.register_controller_and_increment_epoch(
                    ctl.controller_id
                )
            ctl.context.epoch = epoch
            ctl.context.epoch_zk_version = epoch_zk_version
            ctl.active_controller_id = ctl.controller_id
            ctl.state_change_log.set_epoch(epoch)
            bind_controller_context(ctl.controller_id, epoch)
            ctl.state_change_log.controller("elected")
            # The epoch is taken; loading the context may take long enough to be OOM-killed.
            ctl.state_change_log.write_pending()
            if ctl.metrics is not None and not resume:  # a resume wins no new epoch
                ctl.metrics.inc_failovers()
            log.info(
                "elected as the active controller", epoch=epoch, epoch_zk_version=epoch_zk_version
            )
            self.on_controller_failover()
        except ControllerMovedError:
            was_active = ctl.is_active
            self.maybe_resign()
            if was_active and ctl.is_active:
                # /controller still names us, so no election moved the epoch: it was written
                # by hand during the failover. Staying would leave us "active" but not set
                # up (no watches, empty context) until the session ends.
                self.resign_after_foreign_epoch_write()
            elif ctl.active_controller_id != -1:
                log.debug(
                    "another controller was elected", active_controller_id=ctl.active_controller_id
                )
            else:
                log.warning("elected but just resigned; another election will follow")
        except Exception as exc:
            if isinstance(exc, NoAuthError):
                # An identity or ACL problem, not a defect: one line per retry, no traceback.
                log.error(
                    "error while electing or becoming controller",
                    error=str(exc),
                    hint="ZooKeeper refused this controller's identity: check "
                    "zookeeper.auth.* and the ACLs of the cluster's znodes",
                )
            else:
                log.error(
                    "error while electing or becoming controller", error=str(exc), exc_info=True
                )
            try:
                if ctl.is_active:  # else it failed before taking charge: nothing to move
                    self.trigger_controller_move()
            except Exception as move_exc:
                # /controller may still be ours: resign in memory anyway, so the retry below
                # takes charge afresh (the resume path) instead of finding us "active".
                log.error("could not trigger a controller move", error=str(move_exc))
                if ctl.is_active:
                    ctl.active_controller_id = -1
                    with contextlib.suppress(Exception):
                        self.on_controller_resignation()
            finally:  # the retry must not depend on ZooKeeper answering the move
                self.ctl.scheduler.startup()
                self.ctl.scheduler.schedule_once(
                    "reelect", ELECTION_RETRY_BACKOFF_S, lambda: self.ctl.put(Reelect())
                )

    def maybe_resign(self) -> None:
        ctl = self.ctl
        was_active = ctl.is_active
        ctl.gateway.register_change_handler_and_check_existence(self._controller_change_handler())
        ctl.active_controller_id = self._read_active_controller_id()
        if was_active and not ctl.is_active:
            self.on_controller_resignation()

    def resign_after_foreign_epoch_write(self) -> None:
        """A fenced write failed, yet ``/controller`` still names this controller: no election
        moved ``/controller_epoch`` (elections write both at once), someone wrote it by hand.
        Kafka's controller stays active and every later write fails; here it resigns and
        gives ``/controller`` up, so that the election that follows reads the epoch again (an
        unreadable one is retried every 2 s until repaired)."""
        ctl = self.ctl
        log.error(
            "the controller epoch znode changed under the active controller, which /controller "
            "still names (written by hand?): resigning and giving up /controller for an election",
            path=paths.CONTROLLER_EPOCH,
            epoch=ctl.context.epoch,
            epoch_zk_version=ctl.context.epoch_zk_version,
        )
        ctl.active_controller_id = -1
        self.on_controller_resignation()
        try:
            deleted = ctl.gateway.delete_own_controller()
        except ZkError as exc:
            # The resignation stands, but no election follows until this session ends.
            log.error(
                "could not give up /controller; delete it to start an election",
                path=paths.CONTROLLER,
                error=str(exc),
            )
            return
        if not deleted:
            log.warning("/controller was no longer this controller's; not deleted")

    def trigger_controller_move(self) -> None:
        ctl = self.ctl
        ctl.active_controller_id = self._read_active_controller_id()
        if not ctl.is_active:
            log.warning("controller has already moved; not triggering a controller move")
            return
        epoch_zk_version = ctl.context.epoch_zk_version
        ctl.active_controller_id = -1
        self.on_controller_resignation()
        try:
            ctl.gateway.delete_controller(epoch_zk_version)
        except ControllerMovedError:
            log.warning("controller moved to another node while deleting /controller")

    # -- failover ------------------------------------------------------------------------

    def _child_handlers(self) -> list[ZNodeChildChangeHandler]:
        put = self.ctl.put
        return [
            ZNodeChildChangeHandler(paths.BROKERS_IDS, lambda: put(BrokerChange())),
            ZNodeChildChangeHandler(paths.BROKERS_TOPICS, lambda: put(TopicChange())),
            ZNodeChildChangeHandler(paths.DELETE_TOPICS, lambda: put(TopicDeletion())),
            ZNodeChildChangeHandler(
                paths.LOG_DIR_EVENT_NOTIFICATION, lambda: put(LogDirEventNotification())
            ),
            ZNodeChildChangeHandler(
                paths.ISR_CHANGE_NOTIFICATION, lambda: put(IsrChangeNotification())
            ),
        ]

    def _admin_handlers(self) -> list[ZNodeChangeHandler]:
        put = self.ctl.put
        return [
            ZNodeChangeHandler(  # deletion too: see Elections._preferred_election_handler
                paths.PREFERRED_REPLICA_ELECTION,
                on_creation=lambda: put(ReplicaLeaderElection()),
                on_deletion=lambda: put(ReplicaLeaderElection()),
            ),
            ZNodeChangeHandler(
                paths.REASSIGN_PARTITIONS, on_creation=lambda: put(ZkPartitionReassignment())
            ),
        ]

    def on_controller_failover(self) -> None:
        """Kafka's ``onControllerFailover``, in Kafka's order (reference §2.3)."""
        ctl = self.ctl
        gateway = ctl.gateway
        epoch_zk_version = ctl.context.epoch_zk_version
        # Startup makes them, but a session lost before Startup was processed preempts it
        # (Expire); the child watches below are set only on paths that exist. (Kafka's
        # brokers make them first, in KafkaServer.startup.)
        gateway.ensure_persistent_paths()
        if ctl.features is not None:
            ctl.features.setup_feature_versioning()  # step 1: /feature, before brokers are read
        for handler in self._child_handlers():
            gateway.register_child_handler(handler)
        for change in self._admin_handlers():
            gateway.register_change_handler_and_check_existence(change)
        # Pending notifications are discarded: the full state read and the LeaderAndIsr sent
        # below make up for them (pitfall 11).
        gateway.delete_log_dir_event_notifications(
            gateway.get_all_log_dir_event_notifications(), epoch_zk_version
        )
        gateway.delete_isr_change_notifications(
            gateway.get_all_isr_change_notifications(), epoch_zk_version
        )
        from controller.handlers.context_loader import initialize_controller_context

        initialize_controller_context(ctl)
        from controller.handlers.config_changes import load_dynamic_broker_defaults

        load_dynamic_broker_defaults(ctl)  # before the state machines elect (Kafka: at boot)
        deletion = getattr(ctl, "topic_deletion_manager", None)
        if deletion is not None:
            deletion.init_from_zookeeper()
        ctl.send_update_metadata_request(ctl.context.live_or_shutting_down_broker_ids(), ())
        ctl.replica_state_machine.startup()
        ctl.partition_state_machine.startup()
        for hook in self._failover_hooks:
            hook()
        ctl.scheduler.startup()
        log.info(
            "controller failover complete",
            epoch=ctl.context.epoch,
            brokers=len(ctl.context.live_or_shutting_down_broker_ids()),
            partitions=ctl.context.partition_count(),
        )
        ctl.state_change_log.controller("ready")

    def add_failover_hook(self, hook: Any) -> None:
        """Steps that later concerns add to the end of failover (reassignments, deletions,
        pending preferred elections, auto-rebalance), in registration order."""
        self._failover_hooks.append(hook)

    def on_controller_resignation(self) -> None:
        """Kafka's ``onControllerResignation``, in Kafka's order; idempotent."""
        ctl = self.ctl
        gateway = ctl.gateway
        was_ready = ctl.context.epoch != 0
        # /config/changes too: ours, not Kafka's (its brokers watch config changes).
        for path in (
            paths.ISR_CHANGE_NOTIFICATION,
            paths.LOG_DIR_EVENT_NOTIFICATION,
            paths.CONFIG_CHANGES,
        ):
            gateway.unregister_child_handler(path)
        for path in (paths.REASSIGN_PARTITIONS, paths.PREFERRED_REPLICA_ELECTION, paths.FEATURE):
            gateway.unregister_change_handler(path)
        # Every broker's, not only the live ones': unreadable and incompatible registrations
        # are watched too (so that a repair brings the broker in).
        gateway.unregister_change_handlers_under(paths.BROKERS_IDS)
        ctl.scheduler.shutdown()
        gateway.unregister_child_handler(paths.BROKERS_TOPICS)
        for topic in ctl.context.all_topics:
            gateway.unregister_change_handler(paths.topic_path(topic))
        gateway.unregister_child_handler(paths.DELETE_TOPICS)
        gateway.unregister_child_handler(paths.BROKERS_IDS)
        ctl.channel.shutdown()
        for batch in (
            ctl.request_batch,
            ctl.partition_state_machine.batch,
            ctl.replica_state_machine.batch,
        ):
            batch.clear()
        ctl.context.reset_context()
        if was_ready:
            ctl.state_change_log.controller("resigned")
            ctl.state_change_log.set_epoch(None)
            log.info("resigned as the active controller")
