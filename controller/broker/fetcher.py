"""The follower side of the reference broker's replication: one thread per broker that fetches
every followed partition from its leader (see ``controller.broker.replication`` for the rules)."""

from __future__ import annotations

import threading
from collections import defaultdict
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import grpc
import structlog

from controller.api import MESSAGE_SIZE_OPTIONS
from controller.api.errors import Errors
from controller.api.v1 import broker_pb2, broker_pb2_grpc
from controller.broker.state import ReplicaState
from controller.core.model import TopicPartition

if TYPE_CHECKING:
    from controller.broker.replication import ReplicationConfig

log = structlog.get_logger("controller.broker.replication")

# Short reconnect backoff: gRPC's default grows to minutes, and a follower must find its
# leader again as soon as it is back.
_CHANNEL_OPTIONS = [
    *MESSAGE_SIZE_OPTIONS,
    ("grpc.use_local_subchannel_pool", 1),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
]


class ReplicaFetcher:
    """The follower side: one thread fetching every followed partition from its leader."""

    def __init__(self, state: ReplicaState, config: ReplicationConfig) -> None:
        self.state = state
        self.config = config
        self.broker_id = state.broker_id
        self._channels: dict[str, tuple[grpc.Channel, broker_pb2_grpc.BrokerServiceStub]] = {}
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._thread: threading.Thread | None = None
        # The last outcome per partition (error name), for diagnostics and tests.
        self.last_results: dict[TopicPartition, str] = {}

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name=f"broker-{self.broker_id}-replica-fetcher", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(5)
        for channel, _ in self._channels.values():
            channel.close()
        self._channels.clear()

    def pause(self) -> None:
        """Stop fetching while still running (a follower stuck in a long GC pause, or cut off
        from its leaders): its leaders drop it from their ISRs after the lag time."""
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    def _run(self) -> None:
        period_s = self.config.replica_fetch_interval_ms / 1000
        while not self._stop.is_set():
            if not self._paused.is_set():
                try:
                    self.fetch_once()
                except Exception:
                    log.exception("fetch round failed", broker_id=self.broker_id)
            self._stop.wait(period_s)

    def fetch_once(self) -> dict[TopicPartition, Errors]:
        """One round: a fetch to each leader of a followed partition, sent in parallel.
        Returns each partition's outcome (UNKNOWN_SERVER_ERROR when its leader was
        unreachable, LEADER_NOT_AVAILABLE when its address is unknown)."""
        by_leader: dict[int, list[tuple[TopicPartition, str, int]]] = defaultdict(list)
        for tp, topic_id, leader, leader_epoch in self.state.followed_partitions():
            by_leader[leader].append((tp, topic_id, leader_epoch))
        timeout = max(self.config.replica_fetch_interval_ms / 1000, 1.0)
        calls: list[tuple[list[tuple[TopicPartition, str, int]], Future[Any]]] = []
        results: dict[TopicPartition, Errors] = {}
        for leader, partitions in sorted(by_leader.items()):
            address = self.state.leader_address(leader, self.config.inter_broker_listener)
            if address is None:
                for tp, _, _ in partitions:
                    results[tp] = Errors.LEADER_NOT_AVAILABLE
                continue
            request = broker_pb2.FetchRequest(
                replica_id=self.broker_id, replica_epoch=self.state.broker_epoch
            )
            topics: dict[tuple[str, str], broker_pb2.FetchTopic] = {}
            for tp, topic_id, leader_epoch in partitions:
                topic = topics.get((tp.topic, topic_id))
                if topic is None:
                    topic = request.topics.add(topic_name=tp.topic, topic_id=topic_id)
                    topics[(tp.topic, topic_id)] = topic
                topic.partitions.add(
                    partition_index=tp.partition, current_leader_epoch=leader_epoch
                )
            calls.append((partitions, self._stub(address).Fetch.future(request, timeout=timeout)))
        for partitions, call in calls:
            try:
                response = call.result()
            except grpc.RpcError as exc:
                log.debug("fetch failed", broker_id=self.broker_id, error=exc.code().name)
                for tp, _, _ in partitions:
                    results[tp] = Errors.UNKNOWN_SERVER_ERROR
                continue
            if response.error_code != Errors.NONE:
                for tp, _, _ in partitions:
                    results[tp] = Errors.for_code(response.error_code)
                continue
            for topic in response.topics:
                for p in topic.partitions:
                    results[TopicPartition(topic.topic_name, p.partition_index)] = Errors.for_code(
                        p.error_code
                    )
        self.last_results = {tp: e.name for tp, e in results.items()}
        return results

    def _stub(self, address: str) -> broker_pb2_grpc.BrokerServiceStub:
        entry = self._channels.get(address)
        if entry is None:
            channel = self.config.channel_opener.open(address, options=_CHANNEL_OPTIONS)
            entry = (channel, broker_pb2_grpc.BrokerServiceStub(channel))
            self._channels[address] = entry
        return entry[1]
