"""The faults and their schedule.

Each fault is injected, held, and healed by the injector, which reports when it began and
when it ended ("faults stop": the recovery deadline runs from there). Targets are roles, not
processes: "the active controller", "the ZooKeeper leader", so a schedule means the same
thing in every run; which broker, which follower and every duration are drawn from the seed.

=====================  ==========================================================================
``controller_kill``    ``kill -9`` the active controller; restart it once a standby took over
``controller_expire``  expire its ZooKeeper session on the server (``sessions.expire_session``)
``controller_zombie``  SIGSTOP it past the session timeout until a standby took over, then
                       SIGCONT: it wakes up believing it is active (its writes must be fenced,
                       brokers must refuse its requests)
``broker_kill``        ``kill -9`` a broker, restart it after a while (before or after its
                       session expires)
``broker_restart``     SIGTERM a broker (it deregisters) and start it again at once
``broker_bounce``      ``kill -9`` a broker, expire its session and start it again at once: the
                       controller sees the id come back with a new broker epoch
``zk_follower_stop``   stop a ZooKeeper follower, start it again
``zk_leader_stop``     stop the ZooKeeper leader (the ensemble elects another), start it again
``zk_freeze_all``      SIGSTOP all three ZooKeeper servers for a few seconds (less than the
                       session timeout), then SIGCONT
=====================  ==========================================================================
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import structlog
from kazoo.exceptions import NoNodeError

from controller.chaos.checker import LiveChecker
from controller.chaos.cluster import ChaosCluster
from controller.chaos.observer import Observer

log = structlog.get_logger("controller.chaos.faults")

CONTROLLER_FAULTS = ("controller_kill", "controller_expire", "controller_zombie")
BROKER_FAULTS = ("broker_kill", "broker_restart", "broker_bounce")
ZOOKEEPER_FAULTS = ("zk_follower_stop", "zk_leader_stop", "zk_freeze_all")
ALL_FAULTS = CONTROLLER_FAULTS + BROKER_FAULTS + ZOOKEEPER_FAULTS

# The long run's mix: controller faults dominate (each is one failover).
WEIGHTS = {
    "controller_kill": 20,
    "controller_expire": 20,
    "controller_zombie": 20,
    "broker_kill": 10,
    "broker_restart": 6,
    "broker_bounce": 8,
    "zk_follower_stop": 6,
    "zk_leader_stop": 5,
    "zk_freeze_all": 5,
}


@dataclass(frozen=True)
class FaultPlan:
    """One scheduled fault: its kind and every random choice it needs (from the seed)."""

    index: int
    kind: str
    broker: int = 0  # which broker (broker faults)
    pick: int = 0  # which follower (zk_follower_stop), as an index into the followers
    hold_s: float = 0.0  # how long the fault is held (kills, stops, freezes)
    extra_s: float = 0.0  # zombie: how long it stays frozen after the failover
    pause_s: float = 1.0  # quiet time after recovery, before the next fault

    def describe(self) -> str:
        target = f" broker {self.broker}" if self.kind in BROKER_FAULTS else ""
        return f"#{self.index} {self.kind}{target}"


@dataclass
class FaultRecord:
    plan: FaultPlan
    target: str = ""
    injected_at: float = 0.0
    healed_at: float = 0.0
    recovered_at: float | None = None  # full leadership again
    epoch_before: int | None = None
    epoch_after: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def recovery_s(self) -> float | None:
        """Time from the end of the fault to full leadership."""
        return None if self.recovered_at is None else self.recovered_at - self.healed_at

    @property
    def outage_s(self) -> float | None:
        """Time from the injection to full leadership (a failover included)."""
        return None if self.recovered_at is None else self.recovered_at - self.injected_at


def schedule(
    seed: int, session_s: float, kinds: tuple[str, ...] | None = None
) -> Iterator[FaultPlan]:
    """The faults of a run: ``kinds`` once each in that order (the short run), else an endless
    weighted draw (the long run stops it)."""
    rng = random.Random(f"faults-{seed}")
    index = 0
    while True:
        if kinds is not None:
            if index >= len(kinds):
                return
            kind = kinds[index]
        else:
            names, weights = zip(*WEIGHTS.items(), strict=True)
            kind = rng.choices(names, weights)[0]
        index += 1
        yield FaultPlan(
            index=index,
            kind=kind,
            broker=rng.randrange(5),
            pick=rng.randrange(2),
            # Broker kills are held from half to one and a half session timeouts: the restart
            # lands before or after the old session expires. ZooKeeper stops: 1-4 s. Freezes
            # of the whole ensemble stay well below the session timeout.
            hold_s=(
                rng.uniform(0.5 * session_s, 1.5 * session_s)
                if kind == "broker_kill"
                else rng.uniform(0.4 * session_s, 0.6 * session_s)
                if kind == "zk_freeze_all"
                else rng.uniform(1.0, 4.0)
            ),
            extra_s=rng.uniform(0.0, 2.0),
            pause_s=rng.uniform(0.5, 2.0),
        )


class Injector:
    """Injects planned faults into a cluster, telling the checker when faults run."""

    def __init__(
        self, cluster: ChaosCluster, checker: LiveChecker, observer: Observer, session_s: float
    ) -> None:
        self.cluster = cluster
        self.checker = checker
        self.observer = observer
        self.session_s = session_s
        self._kinds: dict[str, Callable[[FaultPlan, FaultRecord], None]] = {
            name: getattr(self, f"_{name}") for name in ALL_FAULTS
        }

    def inject(self, plan: FaultPlan) -> FaultRecord:
        record = FaultRecord(plan, epoch_before=self._epoch())
        self.checker.fault_started()
        record.injected_at = time.time()
        try:
            self._kinds[plan.kind](plan, record)
        finally:
            record.healed_at = time.time()
            self.checker.fault_stopped(record.healed_at)
        log.info("fault healed", fault=plan.describe(), target=record.target, notes=record.notes)
        return record

    # -- helpers ------------------------------------------------------------------------------

    def _epoch(self) -> int | None:
        sample = self.observer.latest
        return sample.epoch if sample is not None else None

    def _wait_failover(self, epoch: int | None, record: FaultRecord, timeout: float) -> None:
        """Until a new controller (epoch above ``epoch``) is active."""
        sample = self.observer.wait(
            lambda s: s.epoch is not None and s.active is not None and s.epoch > (epoch or 0),
            timeout,
        )
        if sample is None:
            record.notes.append(f"no failover within {timeout:.0f}s")

    def _active(self, record: FaultRecord) -> tuple[int, int] | None:
        active = self.cluster.active_controller()
        if active is None:
            record.notes.append("no active controller to target")
        else:
            record.target = f"controller {active[0]} (session {active[1]:#x})"
        return active

    # -- controllers ----------------------------------------------------------------------------

    def _controller_kill(self, plan: FaultPlan, record: FaultRecord) -> None:
        active = self._active(record)
        if active is None:
            return
        node = self.cluster.controllers[active[0]]
        with self.cluster.lock:
            node.desired = False
            node.kill()
        self._wait_failover(record.epoch_before, record, 3 * self.session_s + 10)
        with self.cluster.lock:
            node.start()  # back as a standby

    def _controller_expire(self, plan: FaultPlan, record: FaultRecord) -> None:
        active = self._active(record)
        if active is None:
            return
        try:
            self.cluster.expire_session(active[1])
        except Exception as exc:
            record.notes.append(f"expiry failed: {exc!r}")
            return
        self._wait_failover(record.epoch_before, record, 3 * self.session_s + 10)

    def _controller_zombie(self, plan: FaultPlan, record: FaultRecord) -> None:
        active = self._active(record)
        if active is None:
            return
        node = self.cluster.controllers[active[0]]
        node.freeze()
        try:
            self._wait_failover(record.epoch_before, record, 3 * self.session_s + 10)
            time.sleep(plan.extra_s)
        finally:
            node.thaw()

    # -- brokers --------------------------------------------------------------------------------

    def _broker_kill(self, plan: FaultPlan, record: FaultRecord) -> None:
        node = self.cluster.brokers[plan.broker]
        record.target = f"broker {plan.broker}, held {plan.hold_s:.1f}s"
        with self.cluster.lock:
            node.desired = False
            node.kill()
        time.sleep(plan.hold_s)
        with self.cluster.lock:
            node.start()  # exits with 4 while the old session holds the id; supervised

    def _broker_restart(self, plan: FaultPlan, record: FaultRecord) -> None:
        node = self.cluster.brokers[plan.broker]
        record.target = f"broker {plan.broker}"
        with self.cluster.lock:
            node.desired = False
        node.stop(timeout=20)
        with self.cluster.lock:
            node.start()

    def _broker_bounce(self, plan: FaultPlan, record: FaultRecord) -> None:
        node = self.cluster.brokers[plan.broker]
        record.target = f"broker {plan.broker}"
        owner = None
        with contextlib.suppress(NoNodeError):
            owner = self.cluster.zk.exists(f"/brokers/ids/{plan.broker}").ephemeralOwner
        with self.cluster.lock:
            node.desired = False
            node.kill()
            if owner:
                try:
                    self.cluster.expire_session(owner)
                except Exception as exc:
                    record.notes.append(f"expiry failed: {exc!r}")
            node.start()

    # -- ZooKeeper ------------------------------------------------------------------------------

    def _zk_follower_stop(self, plan: FaultPlan, record: FaultRecord) -> None:
        ensemble = self.cluster.ensemble
        leader = ensemble.wait_for_quorum(timeout=60)
        followers = [i for i in range(ensemble.size) if i != leader]
        index = followers[plan.pick % len(followers)]
        record.target = f"zookeeper node {index} (follower), held {plan.hold_s:.1f}s"
        ensemble.stop(index)
        time.sleep(plan.hold_s)
        ensemble.start(index)

    def _zk_leader_stop(self, plan: FaultPlan, record: FaultRecord) -> None:
        ensemble = self.cluster.ensemble
        leader = ensemble.wait_for_quorum(timeout=60)
        record.target = f"zookeeper node {leader} (leader), held {plan.hold_s:.1f}s"
        ensemble.stop(leader)
        time.sleep(plan.hold_s)
        ensemble.start(leader)

    def _zk_freeze_all(self, plan: FaultPlan, record: FaultRecord) -> None:
        ensemble = self.cluster.ensemble
        record.target = f"all zookeeper nodes, frozen {plan.hold_s:.1f}s"
        for index in range(ensemble.size):
            ensemble.freeze(index)
        try:
            time.sleep(plan.hold_s)
        finally:
            for index in range(ensemble.size):
                ensemble.thaw(index)
