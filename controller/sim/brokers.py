"""Simulated brokers: the reference broker's partition table, without gRPC or threads.

A ``SimBroker`` is one broker id across its lifetimes. While its process runs it has a
``ReplicaState`` (Kafka's broker-side acceptance rules, §4.4a, exactly as the reference broker
applies them) and a ZooKeeper session holding its ephemeral registration; its epoch is that
znode's czxid. A crash stops the process and leaves the session to time out; a restart is a
new process (a fresh ``ReplicaState``: Kafka keeps no controller state across restarts) with a
new session and a new epoch. A session expiry under a running process re-registers (kazoo
reconnects, the broker registers again) and keeps the partition table.

The broker also originates the two requests brokers send the controller: AlterPartition (a
leader shrinking or expanding its ISR) and ControlledShutdown.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.api.errors import Errors
from controller.api.v1 import controller_pb2
from controller.broker.isr_manager import AlterPartitionItem, build_request
from controller.broker.state import ReplicaState, Role
from controller.channel.sender import OutboundRequest, RequestKind
from controller.core.model import EndPoint, LeaderRecoveryState, TopicPartition
from controller.invariants import BrokerRequest
from controller.sim.zk import ObservedZooKeeper
from controller.zk import codecs, paths
from controller.zk.memory_session import MemoryZkSession
from controller.zk.port import SessionState

PLAINTEXT_PORT_BASE = 9900
CONTROLLER_PORT_BASE = 19900


def registration(broker_id: int) -> bytes:
    endpoints = (
        EndPoint("PLAINTEXT", "localhost", PLAINTEXT_PORT_BASE + broker_id),
        EndPoint("CONTROLLER", "localhost", CONTROLLER_PORT_BASE + broker_id),
    )
    return codecs.encode_broker_registration(codecs.BrokerRegistration(broker_id, endpoints))


@dataclass(slots=True)
class Handled:
    """What handling one controller request produced."""

    response: object
    observation: BrokerRequest


class SimBroker:
    def __init__(self, broker_id: int, zk: ObservedZooKeeper) -> None:
        self.broker_id = broker_id
        self._zk = zk
        self.session: MemoryZkSession | None = None
        self.state: ReplicaState | None = None  # None: the process is down
        self.incarnation = 0
        self.shutting_down = False
        self.paused_until = 0.0  # a stalled process answers nothing until then
        self.unreadable = False  # its registration was rewritten with bad data

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def up(self) -> bool:
        return self.state is not None

    @property
    def registered(self) -> bool:
        return self.session is not None

    @property
    def epoch(self) -> int:
        return self.state.broker_epoch if self.state is not None else -1

    def start(self) -> None:
        """A new process: forget everything, register with a new session."""
        if self.session is not None:  # the old session has not timed out yet: it must first
            self.expire_session()
        self.incarnation += 1
        self.shutting_down = False
        self.unreadable = False
        self.state = ReplicaState(self.broker_id)
        self._register()

    def _register(self) -> None:
        session = self._zk.open_session()
        session.ensure_path(paths.BROKERS_IDS)
        path = paths.broker_path(self.broker_id)
        session.create(path, registration(self.broker_id), ephemeral=True)
        stat = session.exists(path)
        assert stat is not None and self.state is not None
        self.session = session
        self.state.broker_epoch = stat.czxid

    def crash(self) -> None:
        """The process dies; its session lives on until it times out (``expire_session``)."""
        self.state = None
        self.shutting_down = False

    def stop(self) -> None:
        """A clean stop: the process exits and closes its session (registration gone at once)."""
        self.state = None
        self.shutting_down = False
        if self.session is not None:
            self.session.stop()
            self.session = None

    def expire_session(self) -> None:
        """ZooKeeper expires the session. A running broker registers again (new epoch)."""
        if self.session is None:
            return
        session, self.session = self.session, None
        if session.state is not SessionState.LOST:
            self._zk.expire(session, reconnect=False)
        if self.state is not None:
            self._register()

    # -- controller requests -----------------------------------------------------------------

    def handle(self, request: OutboundRequest) -> Handled:
        state = self.state
        assert state is not None, "requests are delivered to running brokers only"
        msg = request.message
        epoch_before = state.broker_epoch
        if request.kind is RequestKind.LEADER_AND_ISR:
            response: object = state.leader_and_isr(msg)
        elif request.kind is RequestKind.UPDATE_METADATA:
            response = state.update_metadata(msg)
        else:
            response = state.stop_replica(msg)
        accepted = response.error_code == Errors.NONE  # type: ignore[attr-defined]
        return Handled(
            response,
            BrokerRequest(
                broker_id=self.broker_id,
                incarnation=self.incarnation,
                kind=request.kind.value,
                controller_id=msg.controller_id,
                controller_epoch=msg.controller_epoch,
                accepted=accepted,
                broker_epoch=epoch_before,
                request_broker_epoch=msg.broker_epoch,
            ),
        )

    # -- requests to the controller ----------------------------------------------------------

    def led_partitions(self) -> list[TopicPartition]:
        if self.state is None:
            return []
        return [tp for tp, _ in self.state.led_partitions()]

    def alter_partition_request(
        self, tp: TopicPartition, member: int, *, expand: bool
    ) -> controller_pb2.AlterPartitionRequest | None:
        """The leader's proposal to add ``member`` to (or drop it from) the ISR of ``tp``, or
        None when it would change nothing or the broker does not lead ``tp``."""
        state = self.state
        hosted = state.hosted(tp) if state is not None else None
        if state is None or hosted is None or hosted.role is not Role.LEADER:
            return None
        isr = list(hosted.isr)
        if expand and member not in isr and member in hosted.replicas:
            isr.append(member)
        elif not expand and member in isr and member != self.broker_id:
            isr.remove(member)
        else:
            return None
        item = AlterPartitionItem(
            tp=tp,
            topic_id=hosted.topic_id,
            leader_epoch=hosted.leader_epoch,
            isr=tuple((b, -1) for b in isr),
            leader_recovery_state=LeaderRecoveryState.RECOVERED,
            partition_epoch=hosted.partition_epoch,
            callback=lambda _result: False,
        )
        return build_request(self.broker_id, state.broker_epoch, [item])

    def apply_alter_partition_response(self, tp: TopicPartition, response: object) -> None:
        """Apply the controller's answer for ``tp`` (Kafka's ``handleAlterPartitionResponse``:
        only an accepted change, only while still leading at that epoch)."""
        state = self.state
        if state is None or not isinstance(response, controller_pb2.AlterPartitionResponse):
            return
        if response.error_code != Errors.NONE:
            return
        for topic in response.topics:
            for p in topic.partitions:
                if p.partition_index != tp.partition or p.error_code != Errors.NONE:
                    continue
                state.apply_isr_change(
                    tp,
                    leader_epoch=p.leader_epoch,
                    isr=tuple(p.isr),
                    leader_recovery_state=p.leader_recovery_state,
                    partition_epoch=p.partition_epoch,
                )

    def follows(self, tp: TopicPartition, leader_epoch: int) -> bool:
        """Whether this broker runs and follows ``tp`` at ``leader_epoch`` (it caught up with
        the leader's epoch: the reference broker's condition for joining the ISR)."""
        hosted = self.state.hosted(tp) if self.state is not None else None
        return (
            hosted is not None
            and hosted.role is Role.FOLLOWER
            and hosted.leader_epoch == leader_epoch
        )


__all__ = ["Handled", "SimBroker", "registration"]
