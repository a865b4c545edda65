"""``ControllerBrokerRequestBatch``: accumulate, then flush (reference §4.3).

Each state-machine call (and the controller itself) owns one batch. Requests are gathered per
broker and per partition while the call runs, then sent as ONE request per broker per kind, in
the order LeaderAndIsr -> UpdateMetadata -> StopReplica. Flags are sticky within a batch
(``is_new``, ``delete_partition``), UpdateMetadata partition states are last-writer-wins, and
requests for brokers that are not live-or-shutting-down are dropped at send time.

Responses come back on the broker's sender thread; the callbacks only turn them into controller
events (``put``), so the event thread handles them in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

import structlog

from controller.api.errors import Errors
from controller.api.v1 import broker_pb2
from controller.channel import convert, wire
from controller.channel.convert import (
    LeaderAndIsrPartition,
    StopReplicaPartition,
    UpdateMetadataPartition,
)
from controller.channel.sender import OutboundRequest
from controller.core.errors import IllegalRequestBatchStateError
from controller.core.events import (
    ControllerEvent,
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataResponseReceived,
)
from controller.core.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)

if TYPE_CHECKING:
    from controller.channel.manager import ControllerChannelManager
    from controller.core.context import ControllerContext

log = structlog.get_logger("controller.request_batch")

EventSink = Callable[[ControllerEvent], object]


class _TopicNamesOf(Mapping[str, str]):
    """Topic id -> name for the topics of a LeaderAndIsr request (those with an id), built
    from the request itself the first time a response needs it: brokers answer by name, so
    this is rarely used, and building it up front cost ~0.2 s per 100K partitions."""

    def __init__(self, request: Any) -> None:
        self._request = request
        self._names: dict[str, str] | None = None

    def _map(self) -> dict[str, str]:
        if self._names is None:
            states = self._request.topic_states
            self._names = {t.topic_id: t.topic_name for t in states if t.topic_id}
            self._request = None
        return self._names

    def __getitem__(self, topic_id: str) -> str:
        return self._map()[topic_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())


class ControllerBrokerRequestBatch:
    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        channel: ControllerChannelManager,
        put: EventSink,
        state_change_log: object | None = None,
        inter_broker_listener: str = "PLAINTEXT",
    ) -> None:
        self.controller_id = controller_id
        self.inter_broker_listener = inter_broker_listener
        self.context = context
        self.channel = channel
        self._put = put
        self.leader_and_isr_requests: dict[int, dict[TopicPartition, LeaderAndIsrPartition]] = {}
        self.stop_replica_requests: dict[int, dict[TopicPartition, StopReplicaPartition]] = {}
        self.update_metadata_brokers: set[int] = set()
        self.update_metadata_partitions: dict[TopicPartition, UpdateMetadataPartition] = {}

    # -- lifecycle -----------------------------------------------------------------------

    def new_batch(self) -> None:
        if self.leader_and_isr_requests or self.stop_replica_requests:
            raise IllegalRequestBatchStateError(
                "controller to broker request batch is not empty while creating a new one: "
                f"LeaderAndIsr for brokers {sorted(self.leader_and_isr_requests)}, "
                f"StopReplica for brokers {sorted(self.stop_replica_requests)}"
            )
        if self.update_metadata_brokers:
            raise IllegalRequestBatchStateError(
                "controller to broker request batch is not empty while creating a new one: "
                f"UpdateMetadata for brokers {sorted(self.update_metadata_brokers)}"
            )

    def clear(self) -> None:
        self.leader_and_isr_requests.clear()
        self.stop_replica_requests.clear()
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()

    @property
    def is_empty(self) -> bool:
        return not (
            self.leader_and_isr_requests
            or self.stop_replica_requests
            or self.update_metadata_brokers
        )

    # -- accumulation --------------------------------------------------------------------

    def add_leader_and_isr_request_for_brokers(
        self,
        broker_ids: Iterable[int],
        tp: TopicPartition,
        leadership: LeaderIsrAndControllerEpoch,
        assignment: ReplicaAssignment,
        *,
        is_new: bool,
    ) -> None:
        self.add_leader_and_isr_requests(broker_ids, ((tp, leadership, assignment),), is_new=is_new)

    def add_leader_and_isr_requests(
        self,
        broker_ids: Iterable[int],
        items: Iterable[tuple[TopicPartition, LeaderIsrAndControllerEpoch, ReplicaAssignment]],
        *,
        is_new: bool,
    ) -> None:
        """``add_leader_and_isr_request_for_brokers`` for many partitions with the same
        recipients, item after item (the UpdateMetadata state of each is taken when it is
        added, as one call per partition would): the state machines' bulk path."""
        items = list(items)
        if not items:
            return
        targets = [self.leader_and_isr_requests.setdefault(b, {}) for b in broker_ids if b >= 0]
        self.update_metadata_brokers.update(self.context.live_broker_id_and_epochs())
        metadata = self._metadata_states()
        update_metadata = self.update_metadata_partitions
        for tp, leadership, assignment in items:
            if is_new:
                entry = LeaderAndIsrPartition(leadership, assignment, True)
                for per_broker in targets:
                    per_broker[tp] = entry
            else:
                entry = LeaderAndIsrPartition(leadership, assignment, False)
                for per_broker in targets:
                    previous = per_broker.get(tp)
                    # isNew is sticky within a batch.
                    per_broker[tp] = entry if previous is None or not previous.is_new else (
                        LeaderAndIsrPartition(leadership, assignment, True)
                    )
            state = metadata(tp)
            if state is not None:
                update_metadata[tp] = state

    def add_stop_replica_request_for_brokers(
        self, broker_ids: Iterable[int], tp: TopicPartition, *, delete_partition: bool
    ) -> None:
        leader_epoch = self.context.leader_epoch(tp)
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            per_broker = self.stop_replica_requests.setdefault(broker_id, {})
            previous = per_broker.get(tp)
            sticky_delete = delete_partition or (previous is not None and previous.delete_partition)
            per_broker[tp] = StopReplicaPartition(leader_epoch, sticky_delete)

    def add_update_metadata_request_for_brokers(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition]
    ) -> None:
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        metadata = self._metadata_states()
        update_metadata = self.update_metadata_partitions
        for tp in partitions:
            state = metadata(tp)
            if state is not None:
                update_metadata[tp] = state

    def _metadata_states(self) -> Callable[[TopicPartition], UpdateMetadataPartition | None]:
        """``tp -> its UpdateMetadata state`` from the context as it is now (None, and a debug
        line, without leadership). The broker liveness it depends on is taken once: callers
        use it within one add call, during which the context does not change."""
        ctx = self.context
        online = ctx.live_broker_ids()
        dirs = ctx.replicas_on_offline_dirs
        queued = ctx.topics_to_be_deleted
        leadership_and_assignment = ctx.partition_leadership_and_assignment

        def state(tp: TopicPartition) -> UpdateMetadataPartition | None:
            info, assignment = leadership_and_assignment(tp)
            if info is None:
                log.debug(
                    "no leadership for partition; leaving it out of UpdateMetadata",
                    partition=str(tp),
                )
                return None
            replicas = assignment.replicas
            # Shutting-down brokers count as offline here (pitfall 7); so do replicas on
            # failed log dirs (is_replica_online).
            if not dirs and online.issuperset(replicas):
                offline: tuple[int, ...] = ()
            else:
                offline = tuple(r for r in replicas if r not in online or tp in dirs.get(r, ()))
            if tp.topic in queued:
                info = LeaderIsrAndControllerEpoch(
                    LeaderAndIsr.during_delete(info.leader_and_isr.isr), info.controller_epoch
                )
            return UpdateMetadataPartition(info, replicas, offline)

        return state

    # -- sending -------------------------------------------------------------------------

    def send_requests_to_brokers(self, controller_epoch: int) -> None:
        try:
            self._send_leader_and_isr(controller_epoch)
            self._send_update_metadata(controller_epoch)
            self._send_stop_replica(controller_epoch)
        except Exception as exc:
            log.error(
                "failed to send controller requests",
                leader_and_isr_brokers=sorted(self.leader_and_isr_requests),
                update_metadata_brokers=sorted(self.update_metadata_brokers),
                stop_replica_brokers=sorted(self.stop_replica_requests),
            )
            raise IllegalRequestBatchStateError(str(exc)) from exc

    def _epoch_of(self, broker_id: int) -> int | None:
        return self.context.live_broker_id_and_epochs().get(broker_id)

    def _send_leader_and_isr(self, controller_epoch: int) -> None:
        ctx = self.context
        # A partition's state is encoded once for all its replicas (controller.channel.wire).
        encoded = wire.EncodingCache(ctx.topic_ids.get)
        for broker_id, partitions in self.leader_and_isr_requests.items():
            broker_epoch = self._epoch_of(broker_id)
            if broker_epoch is None:
                continue  # not live-or-shutting-down: dropped silently (pitfall 10)
            leaders = sorted({p.leadership.leader_and_isr.leader for p in partitions.values()})
            live_leaders = []
            for leader in leaders:
                broker = ctx.live_or_shutting_down_broker(leader)
                if broker is None:
                    continue
                endpoint = broker.endpoint(self.inter_broker_listener)
                if endpoint is None:
                    # Kafka's Broker.node throws here, failing the whole batch; leaving the
                    # leader out lets its followers use their metadata cache instead.
                    log.warning(
                        "leader has no endpoint on the inter-broker listener; left out of "
                        "LeaderAndIsr live_leaders",
                        leader=leader,
                        listener=self.inter_broker_listener,
                        endpoints=[ep.connection_string() for ep in broker.endpoints],
                        broker=broker_id,
                    )
                    continue
                live_leaders.append((leader, endpoint))
            request = convert.leader_and_isr_request(
                controller_id=self.controller_id,
                controller_epoch=controller_epoch,
                broker_epoch=broker_epoch,
                partitions=partitions,
                topic_ids=ctx.topic_ids,
                live_leaders=live_leaders,
                encoded=encoded,
            )
            self.channel.send(
                broker_id,
                OutboundRequest.leader_and_isr(request),
                self._leader_and_isr_callback(broker_id, broker_epoch, _TopicNamesOf(request)),
            )
        self.leader_and_isr_requests.clear()

    def _leader_and_isr_callback(
        self, broker_id: int, broker_epoch: int, topic_names: Mapping[str, str]
    ):
        put = self._put

        def on_response(response: broker_pb2.LeaderAndIsrResponse) -> None:
            # Parsed by the event thread when it handles the event (see LazyPartitionErrors).
            put(
                LeaderAndIsrResponseReceived(
                    broker_id=broker_id,
                    broker_epoch=broker_epoch,
                    error_code=response.error_code,
                    partition_errors=convert.LazyPartitionErrors(response, topic_names),
                )
            )

        return on_response

    def _send_update_metadata(self, controller_epoch: int) -> None:
        # No early return when no broker is targeted: both maps must be emptied on every send
        # (as Kafka does), or partition states queued now would ride along, stale, in a later
        # batch's UpdateMetadata.
        ctx = self.context
        live = ctx.live_or_shutting_down_brokers()
        targets = sorted(self.update_metadata_brokers & ctx.live_or_shutting_down_broker_ids())
        put = self._put
        template = None
        for broker_id in targets:
            broker_epoch = self._epoch_of(broker_id)
            assert broker_epoch is not None  # targets are live-or-shutting-down
            # Every target gets the same request but its own broker epoch: build it once and
            # copy it (in C), instead of rebuilding 100K partition states per broker.
            if template is None:
                template = request = convert.update_metadata_request(
                    controller_id=self.controller_id,
                    controller_epoch=controller_epoch,
                    broker_epoch=broker_epoch,
                    partitions=self.update_metadata_partitions,
                    topic_ids=ctx.topic_ids,
                    live_brokers=live,
                )
            else:
                request = type(template)()
                request.CopyFrom(template)
                request.broker_epoch = broker_epoch

            def on_response(response: object, b: int = broker_id) -> None:
                # The channel answers each request with its own kind of response.
                code = convert.parse_update_metadata_response(
                    cast(broker_pb2.UpdateMetadataResponse, response)
                )
                put(UpdateMetadataResponseReceived(broker_id=b, error_code=code))

            self.channel.send(broker_id, OutboundRequest.update_metadata(request), on_response)
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()

    def _send_stop_replica(self, controller_epoch: int) -> None:
        ctx = self.context
        for broker_id, partitions in self.stop_replica_requests.items():
            broker_epoch = self._epoch_of(broker_id)
            if broker_epoch is None:
                continue
            request = convert.stop_replica_request(
                controller_id=self.controller_id,
                controller_epoch=controller_epoch,
                broker_epoch=broker_epoch,
                partitions=partitions,
            )
            # Only deletions of topics whose deletion has started report back (reference §4.3).
            watched = {
                tp
                for tp, p in partitions.items()
                if p.delete_partition and ctx.is_topic_deletion_in_progress(tp.topic)
            }
            self.channel.send(
                broker_id,
                OutboundRequest.stop_replica(request),
                self._stop_replica_callback(broker_id, watched) if watched else None,
            )
        self.stop_replica_requests.clear()

    def _stop_replica_callback(self, broker_id: int, watched: set[TopicPartition]):
        put = self._put

        def on_response(response: object) -> None:
            result = convert.parse_stop_replica_response(
                cast(broker_pb2.StopReplicaResponse, response)
            )
            if result.error_code == Errors.STALE_BROKER_EPOCH:
                # Answered by a newer instance of the broker: its bounce is a BrokerChange,
                # which fails these replicas and resumes the deletion with the new epoch. As
                # in Kafka, no event: one queued behind that BrokerChange would fail the
                # re-sent deletion's replicas and hold the topic back for good.
                return
            if result.error_code != Errors.NONE:
                # A request-level error fails every partition of the request (the broker sends
                # no per-partition errors then); the handler reads the top-level code.
                errors = dict.fromkeys(watched, result.error_code)
            else:
                # Kafka reports only the partitions the broker answered for: a partition
                # missing from the response is neither deleted nor failed yet.
                errors = {
                    tp: code for tp, code in result.partition_errors.items() if tp in watched
                }
            if not errors:
                return
            put(
                TopicDeletionStopReplicaResponseReceived(
                    replica_id=broker_id,
                    request_error=result.error_code,
                    partition_errors=errors,
                )
            )

        return on_response
