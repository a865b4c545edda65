"""``ControllerHarness``: a real ``Controller`` on an in-memory ZooKeeper (see the package doc)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from controller.channel.batch import ControllerBrokerRequestBatch
from controller.config import ControllerConfig, load_config
from controller.core.context import ControllerContext
from controller.core.controller import Controller
from controller.core.events import ControllerEvent, ShutdownEventThread, Startup
from controller.core.model import (
    BrokerAndEpoch,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from controller.core.partition_state_machine import PartitionStateMachine
from controller.core.replica_state_machine import ReplicaStateMachine
from controller.metrics import ControllerMetrics
from controller.state_change_log import StateChangeLog
from controller.zk import codecs, paths
from controller.zk.errors import NoNodeError
from controller.zk.gateway import ZkGateway
from controller.zk.memory import MemoryZooKeeper
from controller.zk.memory_session import MemoryZkSession
from controller.zk.port import ZnodeStat
from tests.harness.channel import RecordingChannel, make_broker
from tests.harness.faults import FaultInjectingPort


def leadership(
    leader: int,
    isr: Sequence[int],
    leader_epoch: int = 0,
    partition_epoch: int = 0,
    recovery: LeaderRecoveryState = LeaderRecoveryState.RECOVERED,
    controller_epoch: int = 0,
) -> LeaderIsrAndControllerEpoch:
    """A ``LeaderIsrAndControllerEpoch`` in one call (``partition_epoch`` is the zkVersion)."""
    return LeaderIsrAndControllerEpoch(
        LeaderAndIsr(leader, leader_epoch, tuple(isr), recovery, partition_epoch),
        controller_epoch,
    )


class ControllerHarness:
    """A real ``Controller`` on an in-memory ZooKeeper, driven on the caller's thread.

    ``flags`` are extra config settings (dotted names, string values, as on the command
    line). The controller's ZooKeeper session is ``h.port`` (a ``FaultInjectingPort``);
    ``h.admin`` is a second session used to seed and read znodes.
    """

    def __init__(
        self,
        controller_id: int = 5,
        *,
        flags: Mapping[str, str] | None = None,
        zk: MemoryZooKeeper | None = None,
        chroot: str = "",
        metrics: ControllerMetrics | None = None,
    ) -> None:
        self.zk = zk or MemoryZooKeeper()
        self.chroot = chroot
        self.port = FaultInjectingPort(self.zk.open_session(chroot=chroot))
        self.admin = self.zk.open_session(chroot=chroot)
        self.channel = RecordingChannel()
        self.config: ControllerConfig = load_config(
            flags={
                "controller.id": str(controller_id),
                "zookeeper.connect": "localhost:2181",
                **(flags or {}),
            },
            env={},
        )
        self.scl_stream = io.StringIO()
        self.state_change_log = StateChangeLog(self.scl_stream, controller_id)
        self.controller = Controller(
            self.config,
            self.port,  # type: ignore[arg-type]  # structurally a ZkPort
            self.channel,  # type: ignore[arg-type]  # structurally a ControllerChannelManager
            state_change_log=self.state_change_log,
            metrics=metrics,
        )
        self.broker_sessions: dict[int, MemoryZkSession] = {}
        self.batch_events: list[ControllerEvent] = []
        self._listening = False
        # A handler that fails unexpectedly is logged and swallowed by the controller (it must
        # survive it), so a test asserting "ignored, nothing changed" would pass on a crash:
        # ``drain`` and ``process`` fail instead, unless a test expects such errors.
        self.tolerate_event_errors = False
        self._event_errors_seen = 0

    # -- shortcuts -----------------------------------------------------------------------

    @property
    def controller_id(self) -> int:
        return self.controller.controller_id

    @property
    def ctx(self) -> ControllerContext:
        return self.controller.context

    @property
    def gateway(self) -> ZkGateway:
        return self.controller.gateway

    @property
    def psm(self) -> PartitionStateMachine:
        return self.controller.partition_state_machine

    @property
    def rsm(self) -> ReplicaStateMachine:
        return self.controller.replica_state_machine

    def new_batch(self) -> ControllerBrokerRequestBatch:
        """A separate batch over this controller's context and channel; the events its
        response callbacks raise are appended to ``batch_events`` (not queued)."""
        return ControllerBrokerRequestBatch(
            self.controller_id,
            self.ctx,
            self.channel,
            self.batch_events.append,  # type: ignore[arg-type]
            inter_broker_listener=self.config.inter_broker_listener_name,
        )

    # -- events --------------------------------------------------------------------------

    def start(self) -> list[ControllerEvent]:
        """Kafka's ``startup`` without the event thread: listen to the session, queue
        ``Startup`` and process the queue (a real election, and failover if it wins)."""
        if not self._listening:
            self.controller.startup(start_event_thread=False)
            self._listening = True
        else:
            self.controller.put(Startup())
        return self.drain()

    def put(self, event: ControllerEvent) -> None:
        self.controller.put(event)

    def process(self, event: ControllerEvent) -> None:
        """Process one event now, bypassing the queue."""
        self.controller.process(event)
        self._check_event_errors([event])

    def pending_events(self) -> list[ControllerEvent]:
        """Queued, not yet processed events (oldest first)."""
        return self.controller.events.pending()

    def drain(self, limit: int = 10_000) -> list[ControllerEvent]:
        """Process queued events in FIFO order, including those raised meanwhile, until the
        queue is empty; returns them. ``limit`` guards against an event loop."""
        processed: list[ControllerEvent] = []
        events = self.controller.events
        while (queued := events.poll()) is not None:
            if len(processed) >= limit:
                raise AssertionError(f"more than {limit} events: {processed[-5:]}")
            if isinstance(queued.event, ShutdownEventThread):
                continue
            queued.process(self.controller)
            processed.append(queued.event)
        self._check_event_errors(processed)
        return processed

    def _check_event_errors(self, processed: Sequence[ControllerEvent]) -> None:
        errors = self.controller.event_errors - self._event_errors_seen
        self._event_errors_seen = self.controller.event_errors
        if errors and not self.tolerate_event_errors:
            names = [e.name for e in processed[-10:]]
            raise AssertionError(
                f"{errors} controller event(s) failed with an unexpected error (logged as "
                f"'error processing event'); events processed: {names}"
            )

    # -- controller identity -------------------------------------------------------------

    def become_controller(self, epoch: int = 50, epoch_zk_version: int | None = None) -> int:
        """Make this controller active as if it had won the election at ``epoch``.

        Writes ``/controller_epoch`` (so fenced writes pass their check) and ``/controller``,
        then sets the context's epoch and epoch zkVersion. ``epoch_zk_version`` forces that
        version of ``/controller_epoch`` (by rewriting it); by default it is what the write
        gives (0 on a fresh ZooKeeper). Returns the epoch zkVersion.
        """
        data = codecs.encode_controller_epoch(epoch)
        if self.admin.exists(paths.CONTROLLER_EPOCH) is None:
            self.admin.create(paths.CONTROLLER_EPOCH, data, makepath=True)
            version = 0
        else:
            version = self.admin.set(paths.CONTROLLER_EPOCH, data).version
        while epoch_zk_version is not None and version < epoch_zk_version:
            version = self.admin.set(paths.CONTROLLER_EPOCH, data).version
        if epoch_zk_version is not None and version != epoch_zk_version:
            raise ValueError(f"/controller_epoch is already at version {version}")
        if self.port.exists(paths.CONTROLLER) is None:
            self.port.inner.create(
                paths.CONTROLLER, codecs.encode_controller(self.controller_id, 0), ephemeral=True
            )
        ctl = self.controller
        ctl.context.epoch = epoch
        ctl.context.epoch_zk_version = version
        ctl.active_controller_id = self.controller_id
        self.state_change_log.set_epoch(epoch)
        return version

    def elect_rival(self) -> int:
        """Another controller bumps ``/controller_epoch`` (as its election would): our epoch
        zkVersion is now stale and every fenced write fails. Returns the rival's epoch."""
        data, stat = self.admin.get(paths.CONTROLLER_EPOCH)
        rival = codecs.decode_controller_epoch(data) + 1
        self.admin.set(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(rival), stat.version)
        return rival

    # -- brokers -------------------------------------------------------------------------

    def register_broker(
        self,
        broker_id: int,
        *,
        features: Mapping[str, tuple[int, int]] | None = None,
        **kwargs: Any,
    ) -> BrokerAndEpoch:
        """A broker registers ``/brokers/ids/N`` from its own session (ephemeral, epoch =
        czxid), advertising ``features`` ({name: (min, max)}). ``kwargs`` go to
        ``make_broker``."""
        broker = make_broker(broker_id, **kwargs)
        if features:
            broker = replace(broker, features=dict(features))
        session = self.broker_sessions.get(broker_id)
        if session is None:
            session = self.broker_sessions[broker_id] = self.zk.open_session(chroot=self.chroot)
        reg = codecs.BrokerRegistration(
            broker_id, broker.endpoints, broker.rack, features=dict(broker.features)
        )
        session.ensure_path(paths.BROKERS_IDS)
        session.create(
            paths.broker_path(broker_id), codecs.encode_broker_registration(reg), ephemeral=True
        )
        stat = session.exists(paths.broker_path(broker_id))
        assert stat is not None
        return BrokerAndEpoch(broker, stat.czxid)

    def kill_broker(self, broker_id: int) -> None:
        """The broker's session expires: its registration znode disappears."""
        session = self.broker_sessions.pop(broker_id)
        self.zk.expire(session, reconnect=False)

    def set_live_brokers(
        self,
        broker_ids: Iterable[int],
        *,
        epoch: int | Mapping[int, int] = 1,
        shutting_down: Iterable[int] = (),
        register_with_channel: bool = True,
    ) -> None:
        """Context only: these brokers (and no others) are live, with ``epoch``;
        ``shutting_down`` ones are in controlled shutdown. They are added to the channel."""
        ids = list(broker_ids)
        epochs = epoch if isinstance(epoch, Mapping) else dict.fromkeys(ids, epoch)
        brokers = {make_broker(b): epochs[b] for b in ids}
        self.ctx.set_live_brokers(brokers)
        self.ctx.shutting_down_broker_ids.clear()
        self.ctx.shutting_down_broker_ids.update(shutting_down)
        if register_with_channel:
            self.channel.shutdown()
            for broker, e in brokers.items():
                self.channel.add_broker(broker, e)

    # -- topics and partitions -----------------------------------------------------------

    def create_topic(
        self,
        topic: str,
        partitions: Mapping[int, Sequence[int] | ReplicaAssignment],
        *,
        topic_id: str | None = None,
        in_zk: bool = True,
        in_context: bool = True,
    ) -> TopicAssignment:
        """Write ``/brokers/topics/T`` and/or record the topic, its id and its assignments in
        the context (no partition or replica states)."""
        assignment = TopicAssignment(
            topic,
            topic_id,
            {
                p: r if isinstance(r, ReplicaAssignment) else ReplicaAssignment(tuple(r))
                for p, r in partitions.items()
            },
        )
        if in_zk:
            path = paths.topic_path(topic)
            data = codecs.encode_topic_assignment(assignment)
            if self.admin.exists(path) is None:
                self.admin.create(path, data, makepath=True)
            else:
                self.admin.set(path, data)
        if in_context:
            self.ctx.all_topics.add(topic)
            if topic_id is not None:
                self.ctx.add_topic_id(topic, topic_id)
            for p, ra in assignment.partitions.items():
                self.set_assignment(TopicPartition(topic, p), ra)
        return assignment

    def set_assignment(
        self,
        tp: TopicPartition,
        replicas: Sequence[int] | ReplicaAssignment,
        adding: Sequence[int] = (),
        removing: Sequence[int] = (),
    ) -> None:
        """Context only."""
        ra = (
            replicas
            if isinstance(replicas, ReplicaAssignment)
            else ReplicaAssignment(tuple(replicas), tuple(adding), tuple(removing))
        )
        self.ctx.update_partition_full_replica_assignment(tp, ra)
        if ra.is_being_reassigned:
            self.ctx.partitions_being_reassigned.add(tp)

    def set_leadership(
        self,
        tp: TopicPartition,
        leader: int,
        isr: Sequence[int],
        *,
        leader_epoch: int = 0,
        controller_epoch: int | None = None,
        recovery: LeaderRecoveryState = LeaderRecoveryState.RECOVERED,
        in_zk: bool = True,
        in_context: bool = True,
    ) -> LeaderIsrAndControllerEpoch:
        """Write the partition's state znode and/or cache its leadership. The state carries
        ``controller_epoch`` (default: the context's epoch) and, when written, the znode's
        zkVersion as its partition epoch."""
        info = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(leader, leader_epoch, tuple(isr), recovery),
            self.ctx.epoch if controller_epoch is None else controller_epoch,
        )
        if in_zk:
            info = self.write_partition_state(tp, info)
        if in_context:
            self.ctx.put_partition_leadership_info(tp, info)
        return info

    def write_partition_state(
        self, tp: TopicPartition, info: LeaderIsrAndControllerEpoch
    ) -> LeaderIsrAndControllerEpoch:
        """Create or overwrite the state znode (as another writer); returns ``info`` with the
        znode's new zkVersion as partition epoch."""
        path = paths.partition_state_path(tp.topic, tp.partition)
        data = codecs.encode_partition_state(info)
        if self.admin.exists(path) is None:
            self.admin.create(path, data, makepath=True)
            version = 0
        else:
            version = self.admin.set(path, data).version
        lai = info.leader_and_isr.with_partition_epoch(version)
        return LeaderIsrAndControllerEpoch(lai, info.controller_epoch)

    def set_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        path = paths.topic_config_path(topic)
        data = codecs.encode_topic_config(config)
        if self.admin.exists(path) is None:
            self.admin.create(path, data, makepath=True)
        else:
            self.admin.set(path, data)

    # -- reading ZooKeeper ---------------------------------------------------------------

    def read(self, path: str) -> bytes | None:
        try:
            return self.admin.get(path)[0]
        except NoNodeError:
            return None

    def stat(self, path: str) -> ZnodeStat | None:
        return self.admin.exists(path)

    def zk_state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        """The decoded state znode (partition epoch = its zkVersion), or None if absent."""
        path = paths.partition_state_path(tp.topic, tp.partition)
        try:
            data, stat = self.admin.get(path)
        except NoNodeError:
            return None
        return codecs.decode_partition_state(data, stat.version, path)

    @property
    def zxid(self) -> int:
        """The last zxid: unchanged across a step means the step wrote nothing."""
        return self.zk.zxid

    # -- the state-change log ------------------------------------------------------------

    def state_changes(self, kind: str | None = None, **match: Any) -> list[dict[str, Any]]:
        """Parsed state-change records so far, optionally filtered by kind and field values
        (e.g. ``state_changes("partition", topic="t", result="invalid")``)."""
        self.state_change_log.flush()
        records = [json.loads(line) for line in self.scl_stream.getvalue().splitlines()]
        return [
            r
            for r in records
            if (kind is None or r["kind"] == kind) and all(r.get(k) == v for k, v in match.items())
        ]

    def close(self) -> None:
        self.controller.shutdown()
        self.state_change_log.close()
