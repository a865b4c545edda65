"""Simulated brokers for benchmarks: many ``BrokerService`` endpoints in one process.

The benchmark measures the controller, so its brokers do the least a broker must: register in
ZooKeeper (``/brokers/ids/N``, one session each, so killing one ends only its session), check
the broker and controller epochs of every request, apply LeaderAndIsr leader epochs per
partition the way Kafka's ``ReplicaManager`` does (a higher epoch wins, a lower one is stale)
and answer each partition, as Kafka's brokers do. They keep no metadata cache and run no
replication; the reference broker (``controller.broker``) does that, at a cost per partition
that would be charged to the controller here on a 2-core machine.

The host also keeps the cluster-wide view the benchmark waits on, updated as requests are
applied: the newest leader (highest leader epoch) known for each partition, the number of
partitions each broker leads, and when the last request was answered (``time.time()``, which
other processes on the host can compare with their own clocks).

Run as ``python -m controller.bench.simbroker --zookeeper CONNECT --brokers 5``. It prints one
JSON line when ready, then answers one JSON command per stdin line with one JSON line:
``{"cmd": "stats"}``, ``{"cmd": "kill", "broker": B}`` (stop serving, then end B's session;
answers the time the session close began), ``{"cmd": "start", "broker": B}`` (serve and
register again, with a new broker epoch), ``{"cmd": "expect", "broker": B, "count": N}`` then
``{"cmd": "reached", ...}`` (when an answered LeaderAndIsr first left B leading exactly N
partitions), ``{"cmd": "quit"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from concurrent import futures
from typing import Any

import grpc

from controller.api import MESSAGE_SIZE_OPTIONS
from controller.api.errors import Errors, wire_code
from controller.api.v1 import broker_pb2, broker_pb2_grpc
from controller.core.model import UNKNOWN_BROKER_EPOCH, EndPoint
from controller.logs import configure_logging
from controller.zk import paths
from controller.zk.codecs import BrokerRegistration, encode_broker_registration
from controller.zk.kazoo_port import KazooPort

NONE = int(Errors.NONE)
STALE_CONTROLLER_EPOCH = int(Errors.STALE_CONTROLLER_EPOCH)
STALE_BROKER_EPOCH = int(Errors.STALE_BROKER_EPOCH)
NOT_CONTROLLER = int(Errors.NOT_CONTROLLER)
UNKNOWN_TOPIC_OR_PARTITION = int(Errors.UNKNOWN_TOPIC_OR_PARTITION)
SESSION_TIMEOUT_S = 6.0

Key = tuple[str, int]


class Cluster:
    """What all simulated brokers of the process share: the merged leader view and timing."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.leaders: dict[Key, tuple[int, int]] = {}  # newest (leader, leader epoch)
        self.lead_counts: Counter[int] = Counter()
        self.received: Counter[str] = Counter()
        self.last_ack = 0.0
        self.inflight = 0
        # ``expect``: (broker, count) -> when a LeaderAndIsr answer first left that broker
        # leading exactly count partitions in the merged view (None until then).
        self.expected: dict[tuple[int, int], float | None] = {}

    def begin(self, kind: str) -> None:
        with self.lock:
            self.inflight += 1
            self.received[kind] += 1

    def end(self, leadership_changed: bool = False) -> None:
        with self.lock:
            self.inflight -= 1
            self.last_ack = now = time.time()
            if leadership_changed:
                for (broker, count), reached in self.expected.items():
                    if reached is None and self.lead_counts[broker] == count:
                        self.expected[(broker, count)] = now

    def expect(self, broker: int, count: int) -> None:
        with self.lock:
            self.expected[(broker, count)] = None

    def reached(self, broker: int, count: int) -> float | None:
        with self.lock:
            return self.expected.get((broker, count))

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "partitions": len(self.leaders),
                "lead_counts": {str(b): n for b, n in self.lead_counts.items()},
                "received": dict(self.received),
                "last_ack": self.last_ack,
                "inflight": self.inflight,
            }


class SimBroker(broker_pb2_grpc.BrokerServiceServicer):
    def __init__(self, broker_id: int, cluster: Cluster, connect: str) -> None:
        self.broker_id = broker_id
        self.cluster = cluster
        self.connect = connect
        self.broker_epoch = UNKNOWN_BROKER_EPOCH
        self.controller_epoch = 0
        self.hosted: dict[Key, int] = {}  # leader epoch per hosted partition
        self.lock = threading.Lock()
        self.server: grpc.Server | None = None
        self.port = 0
        self.session: KazooPort | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> int:
        """Serve, then register; returns the broker epoch."""
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"sim-{self.broker_id}"),
            options=MESSAGE_SIZE_OPTIONS,
        )
        broker_pb2_grpc.add_BrokerServiceServicer_to_server(self, server)
        self.port = server.add_insecure_port(f"127.0.0.1:{self.port}")
        server.start()
        self.server = server
        session = KazooPort(self.connect, session_timeout=SESSION_TIMEOUT_S)
        session.start()
        self.session = session
        path = paths.broker_path(self.broker_id)
        endpoints = (
            EndPoint("CONTROLLER", "127.0.0.1", self.port),
            EndPoint("PLAINTEXT", "127.0.0.1", self.port),
        )
        registration = BrokerRegistration(
            self.broker_id, endpoints, timestamp_ms=int(time.time() * 1000)
        )
        session.ensure_path(paths.BROKERS_IDS)
        session.create(path, encode_broker_registration(registration), ephemeral=True)
        stat = session.exists(path)
        assert stat is not None
        with self.lock:
            self.broker_epoch = stat.czxid
        return stat.czxid

    def kill(self) -> float:
        """Stop answering, then end the session; returns when the session close began."""
        if self.server is not None:
            self.server.stop(grace=None)
            self.server = None
        began = time.time()
        if self.session is not None:
            self.session.stop()
            self.session = None
        return began

    # -- requests ----------------------------------------------------------------------------

    def _rejected(self, broker_epoch: int, controller_epoch: int) -> int | None:
        if broker_epoch != UNKNOWN_BROKER_EPOCH and broker_epoch < self.broker_epoch:
            return STALE_BROKER_EPOCH
        if controller_epoch < self.controller_epoch:
            return STALE_CONTROLLER_EPOCH
        self.controller_epoch = controller_epoch
        return None

    def LeaderAndIsr(
        self, request: broker_pb2.LeaderAndIsrRequest, context: grpc.ServicerContext
    ) -> broker_pb2.LeaderAndIsrResponse:
        cluster = self.cluster
        cluster.begin("LeaderAndIsr")
        try:
            with self.lock:
                error = self._rejected(request.broker_epoch, request.controller_epoch)
                if error is not None:
                    return broker_pb2.LeaderAndIsrResponse(error_code=wire_code(error))
                return self._apply_leader_and_isr(request)
        finally:
            cluster.end(leadership_changed=True)

    def _apply_leader_and_isr(
        self, request: broker_pb2.LeaderAndIsrRequest
    ) -> broker_pb2.LeaderAndIsrResponse:
        hosted = self.hosted
        me = self.broker_id
        changed: list[tuple[Key, int, int]] = []
        response = broker_pb2.LeaderAndIsrResponse(error_code=wire_code(NONE))
        add_topic = response.topics.add
        for topic in request.topic_states:
            name = topic.topic_name
            add_error = add_topic(topic_id=topic.topic_id, topic_name=name).partition_errors.add
            for state in topic.partition_states:
                index = state.partition_index
                key = (name, index)
                epoch = state.leader_epoch
                current = hosted.get(key, -1)
                if epoch > current and me in state.replicas:
                    hosted[key] = epoch
                    changed.append((key, state.leader, epoch))
                    code = NONE
                elif epoch > current:
                    code = UNKNOWN_TOPIC_OR_PARTITION  # not a replica of this partition
                else:
                    code = STALE_CONTROLLER_EPOCH
                add_error(partition_index=index, error_code=code)
        cluster = self.cluster
        with cluster.lock:
            leaders = cluster.leaders
            counts = cluster.lead_counts
            for key, leader, epoch in changed:
                known = leaders.get(key)
                if known is None or epoch > known[1]:
                    if known is not None:
                        counts[known[0]] -= 1
                    leaders[key] = (leader, epoch)
                    counts[leader] += 1
        return response

    def UpdateMetadata(
        self, request: broker_pb2.UpdateMetadataRequest, context: grpc.ServicerContext
    ) -> broker_pb2.UpdateMetadataResponse:
        cluster = self.cluster
        cluster.begin("UpdateMetadata")
        try:
            with self.lock:
                if request.broker_epoch != UNKNOWN_BROKER_EPOCH and (
                    request.broker_epoch < self.broker_epoch
                ):
                    return broker_pb2.UpdateMetadataResponse(
                        error_code=wire_code(STALE_BROKER_EPOCH)
                    )
                if request.controller_epoch < self.controller_epoch:
                    return broker_pb2.UpdateMetadataResponse(error_code=wire_code(NOT_CONTROLLER))
                self.controller_epoch = request.controller_epoch
                return broker_pb2.UpdateMetadataResponse(error_code=wire_code(NONE))
        finally:
            cluster.end()

    def StopReplica(
        self, request: broker_pb2.StopReplicaRequest, context: grpc.ServicerContext
    ) -> broker_pb2.StopReplicaResponse:
        cluster = self.cluster
        cluster.begin("StopReplica")
        try:
            with self.lock:
                error = self._rejected(request.broker_epoch, request.controller_epoch)
                if error is not None:
                    return broker_pb2.StopReplicaResponse(error_code=wire_code(error))
                response = broker_pb2.StopReplicaResponse(error_code=wire_code(NONE))
                add = response.partition_errors.add
                for topic in request.topic_states:
                    name = topic.topic_name
                    for state in topic.partition_states:
                        if state.delete_partition:
                            self.hosted.pop((name, state.partition_index), None)
                        add(topic_name=name, partition_index=state.partition_index, error_code=NONE)
                return response
        finally:
            cluster.end()

    def Describe(
        self, request: broker_pb2.DescribeRequest, context: grpc.ServicerContext
    ) -> broker_pb2.DescribeResponse:
        with self.lock:
            return broker_pb2.DescribeResponse(
                broker_id=self.broker_id,
                broker_epoch=self.broker_epoch,
                controller_epoch=self.controller_epoch,
                metadata_controller_id=-1,
            )

    def Fetch(
        self, request: broker_pb2.FetchRequest, context: grpc.ServicerContext
    ) -> broker_pb2.FetchResponse:
        return broker_pb2.FetchResponse(error_code=wire_code(NONE))


class Host:
    """The process: its brokers and the stdin/stdout command loop."""

    def __init__(self, connect: str, broker_ids: list[int]) -> None:
        self.cluster = Cluster()
        self.brokers = {b: SimBroker(b, self.cluster, connect) for b in broker_ids}

    def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        cmd = command.get("cmd")
        if cmd == "stats":
            stats = self.cluster.stats()
            stats["brokers"] = {
                str(b): {"epoch": s.broker_epoch, "controller_epoch": s.controller_epoch,
                         "hosted": len(s.hosted), "serving": s.server is not None}
                for b, s in self.brokers.items()
            }  # fmt: skip
            return stats
        if cmd == "expect":
            self.cluster.expect(int(command["broker"]), int(command["count"]))
            return {}
        if cmd == "reached":
            return {"at": self.cluster.reached(int(command["broker"]), int(command["count"]))}
        if cmd == "kill":
            return {"t0": self.brokers[int(command["broker"])].kill()}
        if cmd == "start":
            return {"epoch": self.brokers[int(command["broker"])].start()}
        raise ValueError(f"unknown command {cmd!r}")

    def serve(self, stdin: Any, stdout: Any) -> None:
        ports = {str(b): (s.start(), s.port)[1] for b, s in self.brokers.items()}
        print(json.dumps({"ready": True, "ports": ports}), file=stdout, flush=True)
        for line in stdin:
            if not line.strip():
                continue
            command = json.loads(line)
            if command.get("cmd") == "quit":
                break
            try:
                reply = self.handle(command)
            except Exception as exc:
                reply = {"error": f"{type(exc).__name__}: {exc}"}
            print(json.dumps(reply), file=stdout, flush=True)
        for broker in self.brokers.values():
            broker.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.bench.simbroker")
    parser.add_argument("--zookeeper", required=True, help="connect string, with chroot")
    parser.add_argument("--brokers", type=int, default=5)
    args = parser.parse_args(argv)
    # stdout carries the command protocol: logs go to stderr.
    configure_logging("WARNING", "json", stream=sys.stderr)
    Host(args.zookeeper, list(range(args.brokers))).serve(sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
