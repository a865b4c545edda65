"""The admin workload: a steady stream of topic creations and deletions, reassignments,
preferred elections, topic configs turning unclean elections on or off, and brokers' requests
for producer-id blocks, through the same library calls and RPCs the CLI and brokers use.

The sequence of operations is a function of the seed alone: each decision depends on the
random generator and on the workload's own ledger of what it asked for, never on what the
cluster answered (an answer can be lost in a failover; the request still counts). Every
request is recorded with the checker *before* it is sent, so that any assignment the cluster
shows can be explained by a request, and every unclean election by a topic config that
allowed it. Every producer-id block answered is recorded too: no two may overlap.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog

from controller.admin.configs import alter_topic_config
from controller.admin.controller_client import ControllerClient, NoActiveControllerError
from controller.admin.topics import create_topic, delete_topic
from controller.api.errors import Errors, error_name
from controller.api.v1 import admin_pb2, common_pb2, controller_pb2
from controller.chaos.checker import LiveChecker
from controller.core.election import UNCLEAN_CONFIG
from controller.invariants import AssignmentRequest
from controller.zk import paths
from controller.zk.kazoo_port import KazooPort

log = structlog.get_logger("controller.chaos.workload")

RPC_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class WorkloadSettings:
    interval_s: float = 0.5  # pause between two operations
    min_topics: int = 4
    max_topics: int = 12
    max_partitions: int = 3
    replication_factors: tuple[int, ...] = (2, 3)


@dataclass(frozen=True)
class Operation:
    kind: str  # create | delete | reassign | elect | unclean | producer_ids
    topic: str = ""
    assignment: dict[int, tuple[int, ...]] = field(default_factory=dict)
    partitions: tuple[tuple[str, int], ...] = ()
    enable: bool = False  # unclean: the topic's unclean.leader.election.enable
    broker: int = -1  # producer_ids: the broker asking

    def describe(self) -> str:
        if self.kind == "create":
            return f"create {self.topic} {self.assignment}"
        if self.kind == "delete":
            return f"delete {self.topic}"
        if self.kind == "reassign":
            return f"reassign {self.topic} {self.assignment}"
        if self.kind == "unclean":
            return f"{UNCLEAN_CONFIG}={str(self.enable).lower()} on {self.topic}"
        if self.kind == "producer_ids":
            return f"broker {self.broker} asks for producer ids"
        return f"elect preferred {list(self.partitions)}"


class Planner:
    """Decides the next operation (pure: seed + own ledger)."""

    WEIGHTS = (
        ("create", 25),
        ("delete", 15),
        ("reassign", 35),
        ("elect", 25),
        ("unclean", 8),
        ("producer_ids", 10),
    )

    def __init__(self, seed: int, brokers: Sequence[int], settings: WorkloadSettings) -> None:
        self.rng = random.Random(f"workload-{seed}")
        self.brokers = sorted(brokers)
        self.settings = settings
        self.alive: dict[str, dict[int, tuple[int, ...]]] = {}  # topic -> last requested
        self.sequence = 0

    def next(self) -> Operation:
        rng, count = self.rng, len(self.alive)
        if count < self.settings.min_topics:
            kind = "create"
        elif count >= self.settings.max_topics:
            kind = "delete"
        else:
            kinds, weights = zip(*self.WEIGHTS, strict=True)
            kind = rng.choices(kinds, weights)[0]
        if kind == "create":
            self.sequence += 1
            topic = f"chaos-{self.sequence:05d}"
            rf = rng.choice(self.settings.replication_factors)
            partitions = rng.randint(1, self.settings.max_partitions)
            assignment = {p: tuple(rng.sample(self.brokers, rf)) for p in range(partitions)}
            self.alive[topic] = dict(assignment)
            return Operation("create", topic, assignment)
        topics = sorted(self.alive)
        if kind == "delete":
            topic = rng.choice(topics)
            del self.alive[topic]
            return Operation("delete", topic)
        if kind == "reassign":
            topic = rng.choice(topics)
            current = self.alive[topic]
            partition = rng.choice(sorted(current))
            target = tuple(rng.sample(self.brokers, len(current[partition])))
            current[partition] = target
            return Operation("reassign", topic, {partition: target})
        if kind == "unclean":
            return Operation("unclean", rng.choice(topics), enable=rng.random() < 0.5)
        if kind == "producer_ids":
            return Operation("producer_ids", broker=rng.choice(self.brokers))
        chosen = {
            (t, rng.choice(sorted(self.alive[t]))) for t in rng.sample(topics, min(3, len(topics)))
        }
        return Operation("elect", partitions=tuple(sorted(chosen)))


class Workload:
    """Runs the planner's operations on a thread until stopped."""

    def __init__(
        self,
        connect: str,
        brokers: Sequence[int],
        checker: LiveChecker,
        seed: int,
        settings: WorkloadSettings,
        session_timeout_s: float,
    ) -> None:
        self.planner = Planner(seed, brokers, settings)
        self.settings = settings
        self.checker = checker
        self.port = KazooPort(connect, session_timeout=session_timeout_s)
        self.client = ControllerClient(self.port, timeout_s=RPC_TIMEOUT_S)
        self.outcomes: Counter[tuple[str, str]] = Counter()
        self.history: list[str] = []  # every operation, in order (reproducibility)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self.port.start(timeout=30)
        self._thread = threading.Thread(target=self._run, name="chaos-workload", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(RPC_TIMEOUT_S * 2)
        self.client.close()
        self.port.stop()

    @property
    def operations(self) -> int:
        return sum(self.outcomes.values())

    def _run(self) -> None:
        while not self._stop.is_set():
            op = self.planner.next()
            self.history.append(op.describe())
            try:
                outcome = self._execute(op)
            except Exception as exc:  # the cluster is under fire: any failure is an outcome
                outcome = type(exc).__name__
            self.outcomes[(op.kind, outcome)] += 1
            log.debug("operation", op=op.describe(), outcome=outcome)
            self._stop.wait(self.settings.interval_s)

    def _execute(self, op: Operation) -> str:
        if op.kind == "create":
            self.checker.request(AssignmentRequest("create", op.topic, op.assignment))
            create_topic(self.port, op.topic, replica_assignment=op.assignment)
            return "ok"
        if op.kind == "delete":
            self.checker.request(AssignmentRequest("delete", op.topic))
            delete_topic(self.port, op.topic)
            return "ok"
        if op.kind == "reassign":
            self.checker.request(AssignmentRequest("reassign", op.topic, op.assignment))
            request = admin_pb2.AlterPartitionReassignmentsRequest(
                partitions=[
                    admin_pb2.ReassignablePartition(topic=op.topic, partition=p, replicas=r)
                    for p, r in op.assignment.items()
                ],
                timeout_ms=int(RPC_TIMEOUT_S * 1000),
            )
            return self._answer(self._admin("AlterPartitionReassignments", request))
        if op.kind == "unclean":
            if op.enable:
                self.checker.allow_unclean(op.topic)
            alter_topic_config(self.port, op.topic, {UNCLEAN_CONFIG: str(op.enable).lower()})
            return "ok"
        if op.kind == "producer_ids":
            return self._producer_ids(op.broker)
        request = admin_pb2.ElectLeadersRequest(
            election_type=admin_pb2.ELECTION_TYPE_PREFERRED,
            partitions=[common_pb2.TopicPartition(topic=t, partition=p) for t, p in op.partitions],
            timeout_ms=int(RPC_TIMEOUT_S * 1000),
        )
        return self._answer(self._admin("ElectLeaders", request))

    def _producer_ids(self, broker: int) -> str:
        """What a broker does before its producers run out of ids: its current epoch is the
        czxid of its registration (none: it is down, and does not ask)."""
        stat = self.port.exists(paths.broker_path(broker))
        if stat is None:
            return "broker down"
        request = controller_pb2.AllocateProducerIdsRequest(
            broker_id=broker, broker_epoch=stat.czxid
        )
        try:
            response = self.client.controller("AllocateProducerIds", request)
        except NoActiveControllerError:
            time.sleep(0.5)
            raise
        if response.error_code == Errors.NONE:
            end = response.producer_id_start + response.producer_id_len - 1
            self.checker.producer_id_block(broker, response.producer_id_start, end, time.time())
        return self._answer(response)

    def _admin(self, method: str, request: object) -> object:
        try:
            return self.client.admin(method, request)
        except NoActiveControllerError:
            time.sleep(0.5)
            raise

    @staticmethod
    def _answer(response: object) -> str:
        code = getattr(response, "error_code", Errors.NONE)
        if code != Errors.NONE:
            return error_name(code)
        # ELECTION_NOT_NEEDED: the preferred replica already leads, which is a success here.
        fine = {"NONE", "ELECTION_NOT_NEEDED"}
        codes = {error_name(r.error_code) for r in getattr(response, "results", ())}
        return "ok" if codes <= fine else "/".join(sorted(codes - fine))
