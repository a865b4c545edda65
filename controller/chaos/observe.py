"""Reading what the cluster holds: ZooKeeper snapshots, brokers' Describe, and the logs.

Everything here only reads. A snapshot is taken with pipelined asynchronous reads (one round
for the top-level nodes, one for the topics, one for the partition states), so a poll of a
few hundred znodes costs a few milliseconds of ZooKeeper time. ``/controller_epoch`` is read
both first and last: every state znode read in between was written before the last read,
which bounds the epoch that was current when it committed.

The logs are tailed incrementally: each controller's state-change log (elections, unclean
elections) and each broker's JSON log (every controller request it accepted or rejected; the
brokers run at DEBUG so that accepted requests are logged).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from controller.api import MESSAGE_SIZE_OPTIONS
from controller.api.v1 import broker_pb2, broker_pb2_grpc
from controller.invariants import PartitionAssignment

Tp = tuple[str, int]
READ_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class Registration:
    """An election: the multi that created ``/controller`` and set ``/controller_epoch``
    (both carry its zxid, which is how the two reads are paired)."""

    epoch: int
    zxid: int
    controller_id: int
    session_id: int


@dataclass(frozen=True, slots=True)
class StateNode:
    topic: str
    partition: int
    czxid: int
    mzxid: int
    version: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicNode:
    topic: str
    czxid: int
    mzxid: int
    partitions: dict[int, PartitionAssignment]
    topic_id: str | None


@dataclass(slots=True)
class ZkSnapshot:
    t: float
    epoch: int | None = None  # /controller_epoch at the end of the snapshot
    epoch_zxid: int | None = None
    registrations: list[Registration] = field(default_factory=list)
    active: tuple[int, int] | None = None  # (controller id, session id) holding /controller
    live_brokers: frozenset[int] = frozenset()
    broker_addresses: dict[int, str] = field(default_factory=dict)
    broker_epochs: dict[int, int] = field(default_factory=dict)  # czxid of /brokers/ids/N
    topics: dict[str, TopicNode] = field(default_factory=dict)
    states: dict[Tp, StateNode] = field(default_factory=dict)
    deleting: frozenset[str] = frozenset()
    reassigning_znode: bool = False
    controllers_up: frozenset[int] = frozenset()  # controllers whose endpoint znode exists


def _get(client: KazooClient, path: str) -> Any:
    return client.get_async(path)


def _result(async_result: Any) -> Any:
    """The value, or None for a node that does not exist."""
    try:
        return async_result.get(timeout=READ_TIMEOUT_S)
    except NoNodeError:
        return None


def _controller_and_epoch(client: KazooClient) -> tuple[Any, Any]:
    return _result(_get(client, "/controller")), _result(_get(client, "/controller_epoch"))


def _registration(controller: Any, epoch: Any) -> Registration | None:
    if controller is None or epoch is None:
        return None
    (cdata, cstat), (edata, estat) = controller, epoch
    if cstat.czxid != estat.mzxid:
        return None  # not the same multi: /controller changed hands between the reads
    try:
        controller_id = int(json.loads(cdata)["brokerid"])
        value = int(edata)
    except (ValueError, KeyError, TypeError):
        return None
    return Registration(value, estat.mzxid, controller_id, cstat.ephemeralOwner)


def read_snapshot(client: KazooClient) -> ZkSnapshot:
    """One consistent-enough view of the chroot (raises kazoo errors when ZooKeeper is out)."""
    snap = ZkSnapshot(t=time.time())
    first = _controller_and_epoch(client)
    ids_async = client.get_children_async("/brokers/ids")
    topics_async = client.get_children_async("/brokers/topics")
    deleting_async = client.get_children_async("/admin/delete_topics")
    reassign_async = client.exists_async("/admin/reassign_partitions")
    endpoints_async = client.get_children_async("/zk-controller/controllers")
    broker_ids = sorted(int(b) for b in (_result(ids_async) or []))
    topic_names = sorted(_result(topics_async) or [])
    snap.deleting = frozenset(_result(deleting_async) or [])
    snap.reassigning_znode = _result(reassign_async) is not None
    snap.controllers_up = frozenset(int(c) for c in _result(endpoints_async) or [] if c.isdigit())

    broker_reads = {b: _get(client, f"/brokers/ids/{b}") for b in broker_ids}
    topic_reads = {t: _get(client, f"/brokers/topics/{t}") for t in topic_names}
    live = set()
    for broker_id, pending in broker_reads.items():
        got = _result(pending)
        if got is None:
            continue
        live.add(broker_id)
        snap.broker_epochs[broker_id] = got[1].czxid
        address = _controller_address(got[0])
        if address is not None:
            snap.broker_addresses[broker_id] = address
    snap.live_brokers = frozenset(live)

    state_reads: dict[Tp, Any] = {}
    for topic, pending in topic_reads.items():
        got = _result(pending)
        if got is None:
            continue
        node = _topic_node(topic, got[0], got[1])
        if node is None:
            continue
        snap.topics[topic] = node
        for p in node.partitions:
            path = f"/brokers/topics/{topic}/partitions/{p}/state"
            state_reads[(topic, p)] = _get(client, path)
    for tp, pending in state_reads.items():
        got = _result(pending)
        if got is not None:
            state = _state_node(tp, got[0], got[1])
            if state is not None:
                snap.states[tp] = state

    last = _controller_and_epoch(client)
    for controller, epoch in (first, last):
        registration = _registration(controller, epoch)
        if registration is not None and registration not in snap.registrations:
            snap.registrations.append(registration)
    controller, epoch = last
    if epoch is not None:
        with contextlib.suppress(ValueError):
            snap.epoch, snap.epoch_zxid = int(epoch[0]), epoch[1].mzxid
    if (
        snap.epoch
        and snap.epoch_zxid is not None
        and not any(r.epoch == snap.epoch for r in snap.registrations)
    ):
        # An election whose /controller is already gone (resigned, expired): its epoch and
        # zxid still bound the windows; who won it is unknown (-1).
        snap.registrations.append(Registration(snap.epoch, snap.epoch_zxid, -1, 0))
    if controller is not None:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            snap.active = (int(json.loads(controller[0])["brokerid"]), controller[1].ephemeralOwner)
    return snap


def _controller_address(data: bytes) -> str | None:
    try:
        endpoints = json.loads(data)["endpoints"]
    except (ValueError, KeyError, TypeError):
        return None
    for endpoint in endpoints:
        if isinstance(endpoint, str) and endpoint.startswith("CONTROLLER://"):
            return endpoint.removeprefix("CONTROLLER://")
    return None


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in value or ())


def _topic_node(topic: str, data: bytes, stat: Any) -> TopicNode | None:
    try:
        obj = json.loads(data)
        adding = obj.get("adding_replicas") or {}
        removing = obj.get("removing_replicas") or {}
        partitions = {
            int(p): PartitionAssignment(
                _ints(replicas), _ints(adding.get(p)), _ints(removing.get(p))
            )
            for p, replicas in obj["partitions"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # malformed: the controller's problem to report, not a snapshot's
    return TopicNode(topic, stat.czxid, stat.mzxid, partitions, obj.get("topic_id"))


def _state_node(tp: Tp, data: bytes, stat: Any) -> StateNode | None:
    try:
        obj = json.loads(data)
        return StateNode(
            tp[0], tp[1], stat.czxid, stat.mzxid, stat.version,
            int(obj["controller_epoch"]), int(obj["leader"]), int(obj["leader_epoch"]),
            _ints(obj["isr"]),
        )  # fmt: skip
    except (ValueError, KeyError, TypeError):
        return None


# -- brokers ------------------------------------------------------------------------------------


class BrokerProbe:
    """Describe RPCs to the brokers, one channel per address.

    A failed call drops its channel: gRPC backs a failed channel off for up to two minutes,
    and a broker restarted on the same port would read as down for that long (seen with seed
    2026: 30 s of false "leaderless" after broker 1 came back on its old port)."""

    def __init__(self, timeout_s: float = 1.0) -> None:
        self.timeout_s = timeout_s
        self._channels: dict[str, grpc.Channel] = {}

    def describe(self, address: str) -> broker_pb2.DescribeResponse | None:
        channel = self._channels.get(address)
        if channel is None:
            # A local subchannel pool: a new channel must mean a new connection, not gRPC's
            # shared subchannel for the address, still in backoff after a failed attempt
            # (a broker now registers before it serves, so a probe can catch it in between).
            # A broker's Describe (its partitions and metadata cache) outgrows 4 MiB.
            channel = self._channels[address] = grpc.insecure_channel(
                address, options=[*MESSAGE_SIZE_OPTIONS, ("grpc.use_local_subchannel_pool", 1)]
            )
        try:
            response: broker_pb2.DescribeResponse = broker_pb2_grpc.BrokerServiceStub(
                channel
            ).Describe(broker_pb2.DescribeRequest(), timeout=self.timeout_s)
        except grpc.RpcError:
            self._channels.pop(address, None)
            channel.close()
            return None
        return response

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()


def confirmed_leaders(response: broker_pb2.DescribeResponse) -> dict[Tp, int]:
    """Partitions the broker leads, with the leader epoch it leads them at."""
    return {
        (p.topic_name, p.partition_index): p.leader_epoch
        for p in response.partitions
        if p.role == broker_pb2.PARTITION_ROLE_LEADER
    }


# -- logs -----------------------------------------------------------------------------------


class LogTail:
    """New complete lines of a growing file (a partial last line waits for its end)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""

    def lines(self) -> Iterator[bytes]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
        except FileNotFoundError:
            return
        self._offset += len(chunk)
        data = self._partial + chunk
        *complete, self._partial = data.split(b"\n")
        yield from complete


_START_MARKER = re.compile(rb"^--- chaos: starting ")


@dataclass(frozen=True, slots=True)
class BrokerLogRecord:
    """A controller request as one broker process handled it (from its log)."""

    broker_id: int
    incarnation: int  # which start of the broker process (1, 2, ...)
    kind: str
    controller_id: int
    controller_epoch: int
    accepted: bool
    error: str | None
    request_broker_epoch: int
    broker_epoch: int


class BrokerLogReader:
    """Turns a broker's log into ``BrokerLogRecord``s; the driver's start markers count the
    process incarnations."""

    def __init__(self, broker_id: int, path: Path) -> None:
        self.broker_id = broker_id
        self._tail = LogTail(path)
        self.incarnation = 0

    def records(self) -> Iterator[BrokerLogRecord]:
        for line in self._tail.lines():
            if _START_MARKER.match(line):
                self.incarnation += 1
                continue
            relevant = b"controller request" in line or b'"applied ' in line
            if not (line.startswith(b"{") and relevant):
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            event = obj.get("event", "")
            if event == "rejected controller request":
                yield BrokerLogRecord(
                    self.broker_id, self.incarnation, obj.get("request", "?"),
                    int(obj.get("controller_id", -1)), int(obj.get("controller_epoch", -1)),
                    False, obj.get("error"), int(obj.get("request_broker_epoch", -1)),
                    int(obj.get("broker_epoch", -1)),
                )  # fmt: skip
            elif event.startswith("applied ") and "controller_epoch" in obj:
                yield BrokerLogRecord(
                    self.broker_id, self.incarnation, event.removeprefix("applied "),
                    int(obj.get("controller_id", -1)), int(obj["controller_epoch"]),
                    True, None, -1, -1,
                )  # fmt: skip


@dataclass(frozen=True, slots=True)
class ControllerLogRecord:
    """A line of a controller's state-change log that the checker needs."""

    controller_id: int
    controller_epoch: int | None
    kind: str  # "elected" | "unclean"
    topic: str | None = None
    partition: int | None = None
    leader: int | None = None
    leader_epoch: int | None = None


class StateChangeLogReader:
    def __init__(self, path: Path) -> None:
        self._tail = LogTail(path)

    def records(self) -> Iterator[ControllerLogRecord]:
        for line in self._tail.lines():
            if b'"elected"' not in line and b"offline_unclean" not in line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if obj.get("result") != "ok":
                continue
            if obj.get("kind") == "controller" and obj.get("to_state") == "elected":
                yield ControllerLogRecord(obj["controller_id"], obj["controller_epoch"], "elected")
            elif obj.get("kind") == "partition" and obj.get("election") == "offline_unclean":
                yield ControllerLogRecord(
                    obj["controller_id"], obj["controller_epoch"], "unclean",
                    obj["topic"], obj["partition"], obj["leader"], obj["leader_epoch"],
                )  # fmt: skip
