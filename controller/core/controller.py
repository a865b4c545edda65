"""The controller hub: owns the components and dispatches events to handlers by concern.

This is the part of Kafka's ``KafkaController`` that is not a handler: the event processor
(``process``/``preempt``), the active-controller bookkeeping, the ZooKeeper session listener
and the per-event metrics refresh. The handlers themselves live in ``controller.handlers``,
one module per concern (controller election and failover, broker membership, topics, ...).

Threading: ``process`` and everything it calls run on the controller event thread only. Other
threads (ZooKeeper callbacks, gRPC servicers, timers, broker-response callbacks) only call
``put``/``clear_and_put`` on ``self.events``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import structlog

from controller.config import ControllerConfig
from controller.core.context import ControllerContext
from controller.core.errors import IllegalRequestBatchStateError
from controller.core.event_manager import ControllerEventManager
from controller.core.events import (
    ControllerEvent,
    Expire,
    NotControllerError,
    Probe,
    RegisterBrokerAndReelect,
    ReplyingEvent,
    Startup,
)
from controller.core.model import ReplicaState, TopicPartition
from controller.core.scheduler import Scheduler
from controller.logs import bind_controller_context
from controller.metrics import ControllerMetricsSnapshot
from controller.state_change_log import NullStateChangeLog, StateChangeLog
from controller.zk.errors import ConnectionLossError, ControllerMovedError, SessionExpiredError
from controller.zk.gateway import ZkGateway
from controller.zk.port import SessionState, ZkPort

if TYPE_CHECKING:
    from controller.channel.batch import ControllerBrokerRequestBatch
    from controller.channel.manager import ControllerChannelManager
    from controller.core.partition_state_machine import PartitionStateMachine
    from controller.core.replica_state_machine import ReplicaStateMachine
    from controller.handlers.failover import ControllerElection
    from controller.metrics import ControllerMetrics

log = structlog.get_logger("controller")

Handler = Callable[[Any], None]


class Controller:
    def __init__(
        self,
        config: ControllerConfig,
        port: ZkPort,
        channel: ControllerChannelManager,
        *,
        state_change_log: StateChangeLog | NullStateChangeLog | None = None,
        metrics: ControllerMetrics | None = None,
    ) -> None:
        self.config = config
        self.controller_id = config.controller_id
        self.port = port
        self.gateway = ZkGateway(port)
        self.context = ControllerContext()
        self.channel = channel
        self.state_change_log = state_change_log or NullStateChangeLog()
        self.metrics = metrics
        self.scheduler = Scheduler()
        self.active_controller_id = -1
        self.unclean_leader_elections = 0
        # Events whose handler failed unexpectedly (a defect, logged with its traceback):
        # counted so tests, the simulator and operators (a metric) notice them.
        self.event_errors = 0
        # unclean.leader.election.enable in /config/brokers/<default> (kafka-configs.sh
        # --entity-default), read at failover and on its change notification; None: not set.
        self.dynamic_unclean_default: bool | None = None
        # Optional concerns, set by their handlers (controller.handlers): topic deletion
        # (Kafka's TopicDeletionManager) and partition reassignment.
        self.topic_deletion_manager: Any = None
        self.reassignments: Any = None
        # Feature versioning (handlers.features): the finalized features, broker compatibility.
        self.features: Any = None
        self.events = ControllerEventManager(
            self,
            on_queue_time=metrics.observe_event_queue_time if metrics else None,
            on_processed=self._on_processed,
        )
        self._session_lost = False
        self._shut_down = False  # our own session close then reads as LOST: not an expiry
        # Session losses heard (kazoo's thread) and the last one whose Expire was processed:
        # between the two, is_active is stale (the Expire waits behind the event in progress).
        self._expires_heard = 0
        self._expires_handled = 0
        # When the connection was lost (SUSPENDED), None while connected: cut off longer than
        # the session timeout, the session has expired on the server (with a quorum) though
        # kazoo hears of it only on reconnecting, and a successor may be in charge.
        self._suspended_since: float | None = None
        self._clock: Callable[[], float] = time.monotonic
        self._handlers: dict[type[ControllerEvent], Handler] = {}
        # Called on the event thread after every event (e.g. gRPC health follows is_active).
        self.after_event_hooks: list[Callable[[Controller], None]] = []
        # Called on kazoo's thread after each session-state change has been taken into account.
        self.session_hooks: list[Callable[[SessionState], None]] = []
        if metrics is not None:
            metrics.set_state_source(lambda: self.events.state)
            metrics.set_leadership_source(lambda: (self.serving_active, self.context.epoch))
            metrics.set_queue_size_source(self.events.queue_size)
        self._build_components()

    # -- composition ---------------------------------------------------------------------

    def _build_components(self) -> None:
        from controller.channel.batch import ControllerBrokerRequestBatch
        from controller.core.partition_state_machine import PartitionStateMachine
        from controller.core.replica_state_machine import ReplicaStateMachine
        from controller.handlers import all_handlers
        from controller.handlers.failover import ControllerElection

        def new_batch() -> ControllerBrokerRequestBatch:
            return ControllerBrokerRequestBatch(
                self.controller_id,
                self.context,
                self.channel,
                self.events.put,
                self.state_change_log,
                inter_broker_listener=self.config.inter_broker_listener_name,
            )

        self.request_batch: ControllerBrokerRequestBatch = new_batch()
        self.replica_state_machine: ReplicaStateMachine = ReplicaStateMachine(self, new_batch())
        self.partition_state_machine: PartitionStateMachine = PartitionStateMachine(
            self, new_batch()
        )
        self.election: ControllerElection = ControllerElection(self)
        for handler in all_handlers(self):
            for event_type, fn in handler.handlers().items():
                self._handlers[event_type] = fn

    # -- state ---------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.controller_id

    @property
    def serving_active(self) -> bool:
        """Active as far as anyone outside should know: ``is_active``, not stopping, no
        session loss heard whose Expire is still queued, and not cut off from ZooKeeper for
        longer than the session timeout. In each of those cases ``is_active`` can still be
        true while another controller is elected; health, readiness, the ActiveControllerCount
        and context gauges (summed over controllers by the alerts) and RPCs must not say
        "active" meanwhile (past the cut-off's timeout: the client notices a silent cut-off
        late, so a few seconds of overlap remain). A cut-off shorter than the timeout keeps
        it active, as Kafka's. (Handlers keep using ``is_active``: the resume path relies on
        it.)"""
        return (
            self.is_active
            and not self._shut_down  # its own session is being closed: a standby takes over
            and self._expires_handled >= self._expires_heard
            and not self._cut_off_past_session_timeout()
        )

    def _cut_off_past_session_timeout(self) -> bool:
        since = self._suspended_since
        timeout_s = self.config.zookeeper_session_timeout_ms / 1000
        return since is not None and self._clock() - since > timeout_s

    @property
    def epoch(self) -> int:
        return self.context.epoch

    @property
    def unclean_leader_election_default(self) -> bool:
        """The cluster's default: the dynamic broker config when set (it overrides static
        configs, as in Kafka), else this controller's ``unclean.leader.election.enable``."""
        dynamic = self.dynamic_unclean_default
        return self.config.unclean_leader_election_enable if dynamic is None else dynamic

    def put(self, event: ControllerEvent) -> None:
        self.events.put(event)

    # -- lifecycle -----------------------------------------------------------------------

    def startup(self, *, start_event_thread: bool = True) -> None:
        """Kafka's ``startup``: listen to the session, queue ``Startup``, start the thread.

        Without the thread, the caller drains the queue itself (``events.poll()``), which is
        how deterministic tests and the simulator drive the controller.
        """
        self.port.add_session_listener(self._on_session_state)
        self.events.put(Startup())
        if start_event_thread:
            self.events.start()

    def mark_stopping(self) -> None:
        """From now on a lost session is our own close, not an expiry (no Expire, no
        expiration counted); the daemon calls it before closing a session early."""
        self._shut_down = True

    def shutdown(self, event_thread_timeout: float = 30.0) -> None:
        """Stop processing; resign in memory. Does not delete ``/controller`` (see Resign)."""
        self._shut_down = True
        stopped = self.events.close(timeout=event_thread_timeout)
        self.scheduler.shutdown()
        if not stopped:
            # Resigning here would mutate the context under the event thread's feet. The
            # process is exiting; the session close removes /controller.
            log.warning(
                "the event thread is still busy; shutting down without resigning in memory",
                controller_state=self.events.state.name,
            )
        else:
            try:
                self.election.on_controller_resignation()
            except Exception:
                log.exception("resignation during shutdown failed")
        self.active_controller_id = -1
        self.refresh_metrics()

    def _on_session_state(self, state: SessionState) -> None:
        # Called on the ZooKeeper client's thread: only enqueue (reference §1.1, App. B).
        try:
            self._track_session_state(state)
        finally:
            # After this controller's own view is updated, whatever the listeners' order
            # on the port (gRPC health read serving_active before it was).
            for hook in self.session_hooks:
                try:
                    hook(state)
                except Exception:
                    log.exception("session-state hook failed")

    def _track_session_state(self, state: SessionState) -> None:
        if self._shut_down:
            return
        if state is not SessionState.SUSPENDED:
            self._suspended_since = None
        elif self._suspended_since is None:  # a repeated SUSPENDED keeps the first time
            self._suspended_since = self._clock()
        if state is SessionState.LOST:
            self._session_lost = True
            self._expires_heard += 1  # before the Expire is queued: it clears this
            if self.metrics is not None:
                self.metrics.inc_zookeeper_session_expirations()
            self.events.clear_and_put(Expire())
        elif state is SessionState.CONNECTED and self._session_lost:
            self._session_lost = False
            self.events.put(RegisterBrokerAndReelect())
        elif state is SessionState.SUSPENDED:
            log.warning("ZooKeeper connection suspended; waiting for it to come back")

    # -- the event processor -------------------------------------------------------------

    def process(self, event: ControllerEvent) -> None:
        # An Expire covers every session loss heard before it was taken.
        expires_heard = self._expires_heard if isinstance(event, Expire) else None
        bind_controller_context(self.controller_id, self.context.epoch)
        self.state_change_log.set_event(event.name)
        handler = self._handlers.get(type(event))
        try:
            if isinstance(event, Probe):
                event.reply.set_result(event.fn(self))
            elif handler is None:
                log.warning("no handler for event", controller_event=event.name)
                if isinstance(event, ReplyingEvent) and not event.reply.done():
                    event.reply.set_exception(NotImplementedError(event.name))
            else:
                handler(event)
        except ControllerMovedError as exc:
            log.info(
                "controller moved to another node", controller_event=event.name, reason=str(exc)
            )
            self._fail_reply(event, exc)
            was_active = self.is_active
            self.election.maybe_resign()
            if was_active and self.is_active:
                self.election.resign_after_foreign_epoch_write()
        except (SessionExpiredError, ConnectionLossError) as exc:
            # Our ZooKeeper session went away mid-event: this node cannot finish the request
            # and is about to resign, so the caller should retry on whoever is active next.
            log.warning(
                "lost the ZooKeeper session while processing an event",
                controller_event=event.name,
                error=str(exc),
            )
            self._fail_reply(event, NotControllerError(-1))
        except Exception as exc:
            log.exception("error processing event", controller_event=event.name)
            self.event_errors += 1
            if self.metrics is not None:
                self.metrics.inc_event_errors(event.name)
            self._fail_reply(event, exc)
        finally:
            if expires_heard is not None:
                self._expires_handled = expires_heard
            self.state_change_log.flush()
            self.refresh_metrics()
            for hook in self.after_event_hooks:
                try:
                    hook(self)
                except Exception:
                    log.exception("after-event hook failed")
            bind_controller_context(self.controller_id, self.context.epoch)

    def preempt(self, event: ControllerEvent) -> None:
        event.preempt()

    @staticmethod
    def _fail_reply(event: ControllerEvent, exc: BaseException) -> None:
        if isinstance(event, ReplyingEvent) and not event.reply.done():
            event.reply.set_exception(exc)

    def _on_processed(self, state: Any, seconds: float, event: ControllerEvent) -> None:
        if self.metrics is not None:
            self.metrics.observe_event_processing(state, seconds, event)
        log.info(
            "processed event",
            controller_event=event.name,
            duration_ms=round(seconds * 1000, 3),
            active=self.is_active,
        )

    def refresh_metrics(self) -> None:
        """Kafka's ``updateMetrics``, run after every event."""
        if self.metrics is None:
            return
        if not self.is_active:
            self.metrics.update(ControllerMetricsSnapshot())
            return
        ctx = self.context
        queued = ctx.topics_to_be_deleted
        replicas_to_delete = 0
        replicas_ineligible = 0
        for topic in queued:
            for pr in ctx.replicas_for_topic(topic):
                state = ctx.replica_state(pr)
                if state is not ReplicaState.ReplicaDeletionSuccessful:
                    replicas_to_delete += 1
                if state is ReplicaState.ReplicaDeletionIneligible:
                    replicas_ineligible += 1
        self.metrics.update(
            ControllerMetricsSnapshot(
                active=True,
                epoch=ctx.epoch,
                global_topic_count=len(ctx.all_topics),
                global_partition_count=ctx.partition_with_leaders_count(),
                active_broker_count=len(ctx.live_broker_id_and_epochs()),
                offline_partitions_count=ctx.offline_partition_count,
                preferred_replica_imbalance_count=ctx.preferred_replica_imbalance_count,
                topics_to_delete_count=len(queued),
                replicas_to_delete_count=replicas_to_delete,
                topics_ineligible_to_delete_count=len(ctx.topics_ineligible_for_deletion),
                replicas_ineligible_to_delete_count=replicas_ineligible,
            )
        )

    def record_leader_election(self, election_type: str, count: int = 1) -> None:
        """Count elected partition leaders by type (``core.election.ElectionKind``)."""
        if self.metrics is not None:
            self.metrics.inc_leader_elections(election_type, count)

    def record_unclean_election(self, tp: TopicPartition) -> None:
        self.unclean_leader_elections += 1
        if self.metrics is not None:
            self.metrics.inc_unclean_leader_elections()
        log.warning(
            "unclean leader election: a replica outside the ISR became leader", partition=str(tp)
        )

    def send_update_metadata_request(
        self, brokers: Iterable[int], partitions: Iterable[TopicPartition]
    ) -> None:
        """Kafka's ``sendUpdateMetadataRequest``: one UMR batch from the controller itself."""
        with self.own_request_batch() as batch:
            batch.add_update_metadata_request_for_brokers(brokers, partitions)
            batch.send_requests_to_brokers(self.context.epoch)

    @contextmanager
    def own_request_batch(self) -> Iterator[ControllerBrokerRequestBatch]:
        """The controller's own request batch (not a state machine's), for one send.

        A batch found dirty or a send that fails is Kafka's ``handleIllegalState``: a bug or
        an inconsistent context, so the batch is cleared and the controller resigns and
        deletes ``/controller``; the re-election (here or elsewhere) rebuilds the context from
        ZooKeeper, which repairs whatever the event left half done. Any other error only
        clears the batch, so that the next send can start."""
        batch = self.request_batch
        try:
            batch.new_batch()
            yield batch
        except IllegalRequestBatchStateError as exc:
            self.handle_illegal_state(exc)
        except Exception:
            batch.clear()
            raise

    def handle_illegal_state(self, exc: IllegalRequestBatchStateError) -> NoReturn:
        """Kafka's ``handleIllegalState``: clear the batch, move the controller, rethrow."""
        log.error("controller request batch in an illegal state; resigning", error=str(exc))
        self.request_batch.clear()
        self.election.trigger_controller_move()
        raise exc

    # -- helpers for handlers ------------------------------------------------------------

    def call(self, fn: Callable[[Controller], Any], timeout: float | None = 30.0) -> Any:
        """Run ``fn`` on the event thread and return its result (tests, status, benchmarks)."""
        probe = Probe(fn=fn)
        self.events.put(probe)
        return probe.reply.result(timeout)
