"""Replication for the reference broker: followers fetch, leaders keep the ISR honest.

The reference broker holds no data, so "replication" is reduced to what the controller can
observe: which replicas are fetching from their leader, and at which leader epoch. That is
enough to drive Kafka's ISR rules (``Partition.scala`` in 3.6, ZooKeeper mode):

* **Followers** (``fetcher.ReplicaFetcher``) call their leader's ``Fetch`` every
  ``replica_fetch_interval_ms``, one request per leader carrying every partition they follow
  there, with the leader epoch of their last LeaderAndIsr. A partition stops being fetched
  when the broker stops following it: StopReplica, a LeaderAndIsr that makes it leader, or a
  failed log dir. The leader's address comes from the UpdateMetadata cache, on the
  inter-broker listener (else from the LeaderAndIsr ``live_leaders``: ``state.leader_address``).
* **Leaders** (``Replication.handle_fetch``) accept a fetch at exactly their leader epoch from a
  replica of the partition, and record it: with no data, a follower that fetches is caught up.
  A fetching follower outside the ISR that is alive in the metadata cache is proposed for the
  ISR at once (``maybeExpandIsr``). Every ``replica_lag_time_max_ms / 2`` the leader removes
  the ISR members whose last fetch is older than ``replica_lag_time_max_ms``
  (``maybeShrinkIsr``). When a leader takes over a partition (a new leader epoch), ISR members
  count as caught up from that moment; others as never.
* **Proposals** go to the controller through ``AlterPartitionManager``. One change per partition
  is in flight; until it is answered no other is proposed. The answer is applied to the
  partition table (new ISR, partition epoch, recovery state; never the leader epoch, which
  AlterPartition does not change) unless a LeaderAndIsr has moved the partition on meanwhile.
  INELIGIBLE_REPLICA and OPERATION_NOT_ATTEMPTED return the partition to its committed state
  (a later fetch may propose again); FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INVALID_REQUEST
  and the unknown-partition errors freeze ISR changes until the next LeaderAndIsr, whose newer
  state supersedes the refused change; any other error resends the same proposal.

A leader always proposes RECOVERED: like Kafka's ``makeLeader``, it treats a partition handed
over as RECOVERING as recovered, and its first AlterPartition clears the flag in ZooKeeper.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from controller.api.errors import Errors, wire_code
from controller.api.v1 import broker_pb2
from controller.broker.fetcher import ReplicaFetcher
from controller.broker.isr_manager import AlterPartitionItem, AlterPartitionManager, Result
from controller.broker.state import Hosted, ReplicaState, Role
from controller.core.model import (
    UNKNOWN_BROKER_EPOCH,
    LeaderAndIsr,
    LeaderRecoveryState,
    TopicPartition,
)
from controller.security.tls import PLAINTEXT, ChannelOpener

log = structlog.get_logger("controller.broker.replication")

# Kafka's replica.lag.time.max.ms default.
DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000
# How often an idle follower fetches: Kafka's replica.fetch.wait.max.ms (an idle fetch
# returns after that long and the next one is sent at once).
DEFAULT_REPLICA_FETCH_INTERVAL_MS = 500
# Errors after which a refused ISR change is dropped until the next LeaderAndIsr.
_WAIT_FOR_LEADER_AND_ISR = frozenset(
    {
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.FENCED_LEADER_EPOCH,
        Errors.INVALID_UPDATE_VERSION,
        Errors.INVALID_REQUEST,
        # Never sent by ZooKeeper-mode controllers; Kafka's broker waits for metadata on it.
        Errors.NEW_LEADER_ELECTED,
    }
)
# Errors that return the partition to its committed state: the controller says the change
# was not applied and the partition epoch is right (Kafka's handleAlterPartitionError).
_RESET = frozenset({Errors.INELIGIBLE_REPLICA, Errors.OPERATION_NOT_ATTEMPTED})


def _now_ms() -> float:
    return time.monotonic() * 1000


@dataclass(slots=True)
class FollowerState:
    """What a leader knows of one follower of one partition."""

    last_caught_up_ms: float  # 0: never (since this leader epoch began)
    last_fetch_ms: float = 0.0
    broker_epoch: int = UNKNOWN_BROKER_EPOCH


@dataclass(eq=False, slots=True)
class PendingChange:
    """An ISR change sent to the controller and not answered yet (identity matters)."""

    kind: str  # "expand" or "shrink"
    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int


@dataclass(slots=True)
class LeaderState:
    """A leader's ISR bookkeeping for one partition, valid for one leader epoch of one
    incarnation of the partition (a topic deleted and created again starts at epoch 0 again)."""

    leader_epoch: int
    incarnation: int = 0
    followers: dict[int, FollowerState] = field(default_factory=dict)
    pending: PendingChange | None = None
    # Why ISR changes wait for the next LeaderAndIsr (see the module docstring), or None.
    frozen_by: str | None = None


@dataclass(frozen=True, slots=True)
class ReplicationConfig:
    replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS
    replica_fetch_interval_ms: int = DEFAULT_REPLICA_FETCH_INTERVAL_MS
    # The listener followers reach leaders on (LeaderAndIsr live_leaders carry that one).
    inter_broker_listener: str = "PLAINTEXT"
    # How fetch channels to leaders are opened: plaintext, or TLS (controller.security).
    channel_opener: ChannelOpener = PLAINTEXT

    def __post_init__(self) -> None:
        if self.replica_lag_time_max_ms <= 0:
            raise ValueError(
                f"replica.lag.time.max.ms must be positive, got {self.replica_lag_time_max_ms}"
            )
        if self.replica_fetch_interval_ms <= 0:
            raise ValueError(
                f"replica fetch interval must be positive, got {self.replica_fetch_interval_ms} ms"
            )


class Replication:
    """Leader-side ISR management and follower fetching for one broker."""

    def __init__(
        self,
        state: ReplicaState,
        config: ReplicationConfig,
        alter_partition: AlterPartitionManager | None,
        *,
        clock_ms: Callable[[], float] = _now_ms,
    ) -> None:
        """``alter_partition`` None: ISR changes are computed but never proposed (a broker
        that is not registered in ZooKeeper cannot reach a controller)."""
        self.state = state
        self.config = config
        self.broker_id = state.broker_id
        self._alter_partition = alter_partition
        self._clock = clock_ms
        self._lock = threading.Lock()
        self._leaders: dict[TopicPartition, LeaderState] = {}
        self.fetcher = ReplicaFetcher(state, config)
        self._stop = threading.Event()
        self._expiration: threading.Thread | None = None
        state.on_leadership(self._on_leadership)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._expiration is not None:
            return
        self._stop.clear()
        if self._alter_partition is not None:
            self._alter_partition.start()
        self.fetcher.start()
        self._expiration = threading.Thread(
            target=self._run_isr_expiration,
            name=f"broker-{self.broker_id}-isr-expiration",
            daemon=True,
        )
        self._expiration.start()

    def stop(self) -> None:
        self._stop.set()
        self.fetcher.stop()
        if self._alter_partition is not None:
            self._alter_partition.stop()
        with self._lock:
            # The manager dropped the queued changes: pending ones nobody sends would block
            # every ISR change of their partitions after a start again. Late answers to them
            # find no pending change and are ignored.
            self._leaders.clear()
        thread, self._expiration = self._expiration, None
        if thread is not None:
            thread.join(5)

    def _run_isr_expiration(self) -> None:
        # Kafka schedules isr-expiration every replica.lag.time.max.ms / 2.
        period_s = self.config.replica_lag_time_max_ms / 2000
        while not self._stop.wait(period_s):
            try:
                self.maybe_shrink_isr()
            except Exception:
                log.exception("ISR expiration failed", broker_id=self.broker_id)

    # -- leader side: fetches --------------------------------------------------------------

    def handle_fetch(self, request: broker_pb2.FetchRequest) -> broker_pb2.FetchResponse:
        replica = request.replica_id
        if replica < 0 or replica == self.broker_id:
            log.warning(
                "refusing a fetch from an impossible replica id",
                broker_id=self.broker_id,
                replica_id=replica,
            )
            return broker_pb2.FetchResponse(error_code=wire_code(Errors.INVALID_REQUEST))
        response = broker_pb2.FetchResponse(error_code=wire_code(Errors.NONE))
        now = self._clock()
        for topic in request.topics:
            out = response.topics.add(topic_name=topic.topic_name, topic_id=topic.topic_id)
            for p in topic.partitions:
                tp = TopicPartition(topic.topic_name, p.partition_index)
                error, leader_epoch = self._fetch_partition(
                    tp, topic.topic_id, p.current_leader_epoch, replica, request.replica_epoch, now
                )
                out.partitions.add(
                    partition_index=p.partition_index, error_code=error, leader_epoch=leader_epoch
                )
        return response

    def _fetch_partition(
        self,
        tp: TopicPartition,
        topic_id: str,
        fetch_epoch: int,
        replica: int,
        replica_epoch: int,
        now: float,
    ) -> tuple[Errors, int]:
        if self.state.is_offline(tp):
            return Errors.KAFKA_STORAGE_ERROR, -1
        hosted = self.state.hosted(tp)
        if hosted is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, -1
        epoch = hosted.leader_epoch
        if topic_id and hosted.topic_id and topic_id != hosted.topic_id:
            return Errors.INCONSISTENT_TOPIC_ID, epoch
        if hosted.role is not Role.LEADER:
            return Errors.NOT_LEADER_OR_FOLLOWER, epoch
        if fetch_epoch < epoch:
            return Errors.FENCED_LEADER_EPOCH, epoch
        if fetch_epoch > epoch:
            return Errors.UNKNOWN_LEADER_EPOCH, epoch
        if replica not in hosted.replicas:
            return Errors.NOT_LEADER_OR_FOLLOWER, epoch
        with self._lock:
            # Read again under the lock: an answer to an earlier ISR change may have been
            # applied since, and a proposal from the older row would be refused
            # (INVALID_UPDATE_VERSION) and freeze the partition until the next LeaderAndIsr.
            current = self.state.hosted(tp)
            if current is None or current.role is not Role.LEADER or current.leader_epoch != epoch:
                return Errors.NONE, epoch  # moved on meanwhile; the next fetch sees the new row
            hosted = current
            leader = self._leader_state(tp, hosted, now)
            follower = leader.followers.get(replica)
            if follower is None:
                follower = leader.followers[replica] = FollowerState(0.0)
            follower.last_fetch_ms = follower.last_caught_up_ms = now
            follower.broker_epoch = replica_epoch
            proposal = self._maybe_expand_isr(tp, hosted, leader, replica)
        if proposal is not None:
            self._submit(*proposal)
        return Errors.NONE, epoch

    def _on_leadership(self, rows: list[tuple[TopicPartition, Hosted]]) -> None:
        # Kafka's makeLeader resets the followers' state there and then: the ISR members'
        # lag is counted from becoming leader, not from the first fetch or expiration round
        # (which left a silent member in the ISR for up to twice replica.lag.time.max.ms).
        now = self._clock()
        with self._lock:
            for tp, hosted in rows:
                self._leader_state(tp, hosted, now)

    def _leader_state(self, tp: TopicPartition, hosted: Hosted, now: float) -> LeaderState:
        """The bookkeeping for the leader epoch ``hosted`` is at; a new epoch, or a new
        incarnation of the row (Kafka makes a fresh Partition for a re-created topic; a topic
        id given to the same row at the same epoch is no new one), starts afresh (Kafka's
        resetReplicaState: ISR members caught up now, the others never)."""
        leader = self._leaders.get(tp)
        if (
            leader is None
            or leader.leader_epoch != hosted.leader_epoch
            or leader.incarnation != hosted.incarnation
        ):
            leader = LeaderState(
                hosted.leader_epoch,
                hosted.incarnation,
                {
                    r: FollowerState(now if r in hosted.isr else 0.0)
                    for r in hosted.replicas
                    if r != self.broker_id
                },
            )
            self._leaders[tp] = leader
        return leader

    def _maybe_expand_isr(
        self, tp: TopicPartition, hosted: Hosted, leader: LeaderState, replica: int
    ) -> tuple[AlterPartitionItem, PendingChange] | None:
        if leader.pending is not None or leader.frozen_by is not None:
            return None
        if replica in hosted.isr:
            return None
        # ZooKeeper mode's isReplicaIsrEligible: alive in the metadata cache. A shutting-down
        # broker is still listed there; the controller refuses it (INELIGIBLE_REPLICA).
        if not self.state.has_alive_broker(replica):
            return None
        return self._propose(tp, hosted, leader, "expand", (*hosted.isr, replica))

    # -- leader side: ISR expiration -------------------------------------------------------

    def maybe_shrink_isr(self) -> list[TopicPartition]:
        """One isr-expiration round: propose removing lagging followers; returns the
        partitions a shrink was proposed for."""
        now = self._clock()
        lag = self.config.replica_lag_time_max_ms
        proposed: list[tuple[AlterPartitionItem, PendingChange]] = []
        with self._lock:
            # Under the lock, as in the fetch path: never propose from a row older than an
            # answer already applied.
            led = {tp: h for tp, h in self.state.led_partitions()}
            for tp in [tp for tp in self._leaders if tp not in led]:
                del self._leaders[tp]  # no longer led here: forget
            for tp, hosted in sorted(led.items()):
                leader = self._leader_state(tp, hosted, now)
                if leader.pending is not None or leader.frozen_by is not None:
                    continue
                out_of_sync = [
                    r
                    for r in hosted.isr
                    if r != self.broker_id
                    and now - self._follower(leader, r, now).last_caught_up_ms > lag
                ]
                if not out_of_sync:
                    continue
                log.info(
                    "followers stopped fetching; shrinking the ISR",
                    broker_id=self.broker_id,
                    partition=str(tp),
                    out_of_sync=out_of_sync,
                    lag_ms=lag,
                )
                isr = tuple(r for r in hosted.isr if r not in out_of_sync)
                proposed.append(self._propose(tp, hosted, leader, "shrink", isr))
        for item, pending in proposed:
            self._submit(item, pending)
        return [item.tp for item, _ in proposed]

    @staticmethod
    def _follower(leader: LeaderState, replica: int, now: float) -> FollowerState:
        # An ISR member the bookkeeping has not seen (the ISR grew through a LeaderAndIsr at
        # the same epoch, which does not happen in ZooKeeper mode): give it a full lag.
        follower = leader.followers.get(replica)
        if follower is None:
            follower = leader.followers[replica] = FollowerState(now)
        return follower

    # -- proposals and answers -------------------------------------------------------------

    def _propose(
        self,
        tp: TopicPartition,
        hosted: Hosted,
        leader: LeaderState,
        kind: str,
        isr: tuple[int, ...],
    ) -> tuple[AlterPartitionItem, PendingChange]:
        pending = PendingChange(kind, isr, hosted.leader_epoch, hosted.partition_epoch)
        leader.pending = pending
        epochs = []
        for b in isr:
            if b == self.broker_id:
                epochs.append((b, self.state.broker_epoch))
            else:
                f = leader.followers.get(b)
                epochs.append((b, f.broker_epoch if f is not None else UNKNOWN_BROKER_EPOCH))
        log.info(
            f"proposing an ISR {kind}",
            broker_id=self.broker_id,
            partition=str(tp),
            isr=list(hosted.isr),
            new_isr=list(isr),
            leader_epoch=hosted.leader_epoch,
            partition_epoch=hosted.partition_epoch,
        )
        item = AlterPartitionItem(
            tp=tp,
            topic_id=hosted.topic_id,
            leader_epoch=hosted.leader_epoch,
            isr=tuple(epochs),
            leader_recovery_state=LeaderRecoveryState.RECOVERED,
            partition_epoch=hosted.partition_epoch,
            callback=lambda result: self._on_answer(tp, pending, result),
        )
        return item, pending

    def _submit(self, item: AlterPartitionItem, pending: PendingChange) -> None:
        if self._alter_partition is None:
            log.debug("not registered: ISR change not proposed", partition=str(item.tp))
            self._drop_pending(item.tp, pending)
            return
        if not self._alter_partition.submit(item):
            # An older change (an earlier leader epoch) is still queued. Back to the committed
            # state, as Kafka does on OperationNotAttempted: a pending change nobody sends
            # would block every later expand and shrink of the partition.
            log.warning(
                "an ISR change is already queued; proposing again later", partition=str(item.tp)
            )
            self._drop_pending(item.tp, pending)

    def _drop_pending(self, tp: TopicPartition, pending: PendingChange) -> None:
        # Only this change: between its proposal and here (outside the lock) a LeaderAndIsr
        # may have moved the partition on and a newer change been proposed and queued.
        with self._lock:
            leader = self._leaders.get(tp)
            if leader is not None and leader.pending is pending:
                leader.pending = None

    def _on_answer(self, tp: TopicPartition, pending: PendingChange, result: Result) -> bool:
        """The controller's answer to ``pending``; True to send it again."""
        with self._lock:
            leader = self._leaders.get(tp)
            if leader is None or leader.pending is not pending:
                # A LeaderAndIsr moved the partition on while the change was in flight: this
                # answer describes a state we have left (Kafka ignores it too).
                log.info(
                    "ignoring the answer to an ISR change of a partition that moved on",
                    broker_id=self.broker_id,
                    partition=str(tp),
                    answer=_describe(result),
                )
                return False
            if isinstance(result, LeaderAndIsr):
                return self._on_success(tp, pending, leader, result)
            if result in _RESET:
                leader.pending = None
                log.info(
                    "ISR change refused; back to the committed ISR",
                    broker_id=self.broker_id,
                    partition=str(tp),
                    error=result.name,
                    proposed_isr=list(pending.isr),
                )
                return False
            if result in _WAIT_FOR_LEADER_AND_ISR:
                leader.pending = None
                leader.frozen_by = result.name
                log.info(
                    "ISR change refused; waiting for the next LeaderAndIsr",
                    broker_id=self.broker_id,
                    partition=str(tp),
                    error=result.name,
                    proposed_isr=list(pending.isr),
                )
                return False
            log.warning(
                "ISR change failed; sending it again",
                broker_id=self.broker_id,
                partition=str(tp),
                error=result.name,
            )
            return True

    def _on_success(
        self, tp: TopicPartition, pending: PendingChange, leader: LeaderState, result: LeaderAndIsr
    ) -> bool:
        applied = self.state.apply_isr_change(
            tp,
            leader_epoch=result.leader_epoch,
            isr=result.isr,
            leader_recovery_state=int(result.leader_recovery_state),
            partition_epoch=result.partition_epoch,
        )
        if applied:
            leader.pending = None
            log.info(
                "ISR updated",
                broker_id=self.broker_id,
                partition=str(tp),
                isr=list(result.isr),
                partition_epoch=result.partition_epoch,
            )
        else:
            # Kafka: a success for another leader epoch, or older than what we hold, is
            # ignored and the partition waits for its next LeaderAndIsr.
            leader.pending = None
            leader.frozen_by = f"an answer for a state we do not hold ({_describe(result)})"
            log.info(
                "ignoring an ISR change answer for a state we do not hold",
                broker_id=self.broker_id,
                partition=str(tp),
                answer=_describe(result),
            )
        return False

    # -- diagnostics -----------------------------------------------------------------------

    def leader_view(self, tp: TopicPartition) -> dict[str, Any] | None:
        """The leader's bookkeeping for a partition (tests and operators)."""
        with self._lock:
            leader = self._leaders.get(tp)
            if leader is None:
                return None
            now = self._clock()
            return {
                "leader_epoch": leader.leader_epoch,
                "pending": None if leader.pending is None else list(leader.pending.isr),
                "frozen_by": leader.frozen_by,
                "ms_since_caught_up": {
                    r: (now - f.last_caught_up_ms) if f.last_caught_up_ms else None
                    for r, f in sorted(leader.followers.items())
                },
            }


def _describe(result: Result) -> str:
    if isinstance(result, Errors):
        return result.name
    return (
        f"isr={list(result.isr)} leader_epoch={result.leader_epoch} "
        f"partition_epoch={result.partition_epoch}"
    )
