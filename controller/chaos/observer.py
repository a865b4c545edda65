"""The observer thread: polls ZooKeeper and the brokers, tails the logs, feeds the checker.

It has its own ZooKeeper session (which rides out the ensemble's faults: kazoo reconnects,
and a poll that fails is simply retried) and keeps the latest sample for the runner, which
waits on it to measure the time to full leadership after each fault.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import structlog

from controller.chaos.checker import LiveChecker
from controller.chaos.cluster import ChaosCluster, admin_client
from controller.chaos.observe import (
    BrokerLogReader,
    BrokerProbe,
    StateChangeLogReader,
    ZkSnapshot,
    confirmed_leaders,
    read_snapshot,
)
from controller.invariants import UncleanElection

log = structlog.get_logger("controller.chaos.observer")

POLL_INTERVAL_S = 0.3


@dataclass(slots=True)
class Sample:
    """The latest poll, as the runner needs it."""

    t: float
    epoch: int | None
    active: int | None  # controller id holding /controller
    live_brokers: frozenset[int]
    serving: frozenset[int]
    partitions: int  # partitions with a state znode
    leaderless: int
    deleting: int
    reassigning: int  # partitions with adding/removing replicas
    topics: frozenset[str] = field(default_factory=frozenset)
    controllers_up: frozenset[int] = field(default_factory=frozenset)

    @property
    def full_leadership(self) -> bool:
        return self.active is not None and self.leaderless == 0


class Observer:
    def __init__(self, cluster: ChaosCluster, checker: LiveChecker) -> None:
        self.cluster = cluster
        self.checker = checker
        self.probe = BrokerProbe()
        self._broker_logs = {
            b: BrokerLogReader(b, node.log_path) for b, node in cluster.brokers.items()
        }
        self._controller_logs = [
            StateChangeLogReader(node.state_change_log) for node in cluster.controllers.values()
        ]
        self.latest: Sample | None = None
        self.snapshot: ZkSnapshot | None = None
        self.first_epoch: int | None = None
        self.max_epoch: int | None = None
        self.elections_logged = 0
        self.polls = 0
        self.failed_polls = 0
        self.broker_rejections: Counter[str] = Counter()  # error -> requests refused
        self.broker_accepted = 0
        self.unclean: list[UncleanElection] = []  # for the transaction-log audit
        self._stop = threading.Event()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._zk = admin_client(cluster.connect)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="chaos-observer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        self.probe.close()
        self._zk.stop()
        self._zk.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                self.poll()
            except Exception as exc:  # ZooKeeper frozen or stopped: try again next round
                self.failed_polls += 1
                log.debug("poll failed", error=repr(exc))
            self._stop.wait(max(0.0, POLL_INTERVAL_S - (time.monotonic() - began)))

    def poll(self) -> Sample:
        snap = read_snapshot(self._zk)
        self.checker.observe_snapshot(snap)
        led: dict[tuple[int, tuple[str, int]], int] = {}
        serving: set[int] = set()
        for broker_id, address in sorted(snap.broker_addresses.items()):
            response = self.probe.describe(address)
            # The address may already belong to a restarted process with another id.
            if response is None or response.broker_id != broker_id:
                continue
            serving.add(broker_id)
            for tp, leader_epoch in confirmed_leaders(response).items():
                led[(broker_id, tp)] = leader_epoch
        self._read_logs()
        leaderless = self.checker.observe_leadership(snap, led, serving)
        if snap.epoch is not None:
            if self.first_epoch is None:
                self.first_epoch = snap.epoch
            self.max_epoch = max(self.max_epoch or 0, snap.epoch)
        sample = Sample(
            t=snap.t,
            epoch=snap.epoch,
            active=snap.active[0] if snap.active else None,
            live_brokers=snap.live_brokers,
            serving=frozenset(serving),
            partitions=len(snap.states),
            leaderless=len(leaderless),
            deleting=len(snap.deleting),
            reassigning=sum(
                1
                for node in snap.topics.values()
                for a in node.partitions.values()
                if a.adding or a.removing
            ),
            topics=frozenset(snap.topics),
            controllers_up=snap.controllers_up,
        )
        with self._changed:
            self.latest = sample
            self.snapshot = snap
            self.polls += 1
            self._changed.notify_all()
        return sample

    def _read_logs(self) -> None:
        controllers = [r for reader in self._controller_logs for r in reader.records()]
        brokers = [r for reader in self._broker_logs.values() for r in reader.records()]
        self.elections_logged += sum(1 for r in controllers if r.kind == "elected")
        self.unclean += [
            UncleanElection(r.topic, r.partition, r.leader_epoch)
            for r in controllers
            if r.kind == "unclean"
            and r.topic is not None
            and r.partition is not None
            and r.leader_epoch is not None
        ]
        for record in brokers:
            if record.accepted:
                self.broker_accepted += 1
            else:
                self.broker_rejections[record.error or "?"] += 1
        self.checker.observe_logs(controllers, brokers, time.time())

    def wait(self, condition: object, timeout: float) -> Sample | None:
        """The first sample taken after now that satisfies ``condition(sample)``, or None."""
        deadline = time.time() + timeout
        after = time.time()
        with self._changed:
            while True:
                sample = self.latest
                if (
                    sample is not None
                    and sample.t >= after
                    and callable(condition)
                    and (condition(sample))
                ):
                    return sample
                remaining = deadline - time.time()
                if remaining <= 0:
                    return None
                self._changed.wait(min(remaining, 1.0))
