"""A discrete-event model of one cluster's controller, emitting its state-change log.

The model follows Kafka's ZooKeeper-mode controller closely enough that the log has the
shapes the analytics must handle: a broker failure moves the partitions it led to
OfflinePartition and elects new leaders from the ISR (or leaves them offline when no ISR
member is alive, or elects uncleanly when the topic allows it); a returning broker brings its
replicas back, re-elects stranded partitions, rejoins ISRs after catching up and regains
preferred leadership; rolling restarts go through controlled shutdown; reassignments add and
retire replicas; ISRs shrink and expand around slow followers; topics come and go; and the
controller itself fails over, sometimes with a clean resignation, sometimes by crashing.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.analytics import schema as S
from controller.analytics.generate.writer import RecordWriter

SECOND = 1_000_000  # the simulation clock counts microseconds

_DOMAINS = (
    "orders", "payments", "clicks", "inventory", "audit", "metrics", "logs", "sessions",
    "shipments", "users", "search", "ads", "billing", "fraud", "telemetry", "notifications",
)
_SUFFIXES = ("events", "cdc", "changelog", "v2", "raw", "enriched", "dlq", "compacted")
_PARTITION_COUNTS = (1, 3, 6, 6, 12, 12, 24, 32, 50, 64, 100, 128)


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    name: str
    brokers: int
    partitions: int  # roughly, at creation; spread over topics
    replication: int = 3
    auto_rebalance: bool = True  # auto.leader.rebalance.enable
    unclean_share: float = 0.15  # share of topics with unclean.leader.election.enable


@dataclass(slots=True, eq=False)  # identity hash: partitions are dict keys
class Part:
    topic: str
    index: int
    replicas: list[int]
    unclean: bool
    leader: int = S.NO_LEADER
    leader_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    state: str = S.NON_EXISTENT_PARTITION


class ClusterSim:
    """Simulates one cluster until the writer's line budget is spent."""

    def __init__(
        self,
        spec: ClusterSpec,
        writer: RecordWriter,
        rng: random.Random,
        start_us: int,
        end_us: int,
    ) -> None:
        self.spec = spec
        self.w = writer
        self.rng = rng
        self.end_us = end_us
        self.clock = start_us
        self.busy_until = start_us  # the controller handles one event at a time
        self.brokers = list(range(1, spec.brokers + 1))
        self.live = set(self.brokers)
        self.topics: dict[str, list[Part]] = {}
        # Insertion-ordered "sets" keep the run deterministic for a given seed.
        self.hosted: dict[int, dict[Part, None]] = {b: {} for b in self.brokers}
        self.shut_down: dict[int, dict[Part, None]] = {}  # replicas already moved offline
        self.seq = dict.fromkeys(self.brokers, 0)  # per broker process
        self.controller = rng.choice(self.brokers)
        self.epoch = rng.randint(1, 40)
        self.queue: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._order = 0
        self._incidents = 0

    # ---- records -------------------------------------------------------------------------

    def _tick(self) -> int:
        self.clock += 20 + int(self.rng.random() * 400)
        self.seq[self.controller] += 1
        return self.seq[self.controller]

    def _prec(
        self,
        p: Part,
        frm: str | None,
        to: str,
        election: str | None,
        event: str,
        result: str = S.RESULT_OK,
        error: str | None = None,
    ) -> None:
        seq = self._tick()
        # A partition found offline at a failover (NonExistent -> Offline) has its state.
        known = to != S.NEW_PARTITION and (
            frm != S.NON_EXISTENT_PARTITION or to == S.OFFLINE_PARTITION
        )
        self.w.emit(
            self.clock, seq, self.controller, self.epoch, S.KIND_PARTITION, p.topic, p.index,
            None, frm, to, p.leader if known else None, p.leader_epoch if known else None,
            list(p.isr) if known else None, election, event, result, error,
        )

    def _rrec(self, p: Part, replica: int, frm: str, to: str, event: str) -> None:
        seq = self._tick()
        known = p.state != S.NEW_PARTITION  # no leader and ISR before the first election
        self.w.emit(
            self.clock, seq, self.controller, self.epoch, S.KIND_REPLICA, p.topic, p.index,
            replica, frm, to, p.leader if known else None, p.leader_epoch if known else None,
            list(p.isr) if known else None, None, event,
        )

    def _crec(self, frm: str | None, to: str) -> None:
        seq = self._tick()
        self.w.emit(
            self.clock, seq, self.controller, self.epoch, S.KIND_CONTROLLER, None, None, None,
            frm, to, None, None, None, None, S.EV_CONTROLLER_CHANGE,
        )

    # ---- scheduling ----------------------------------------------------------------------

    def _later(self, delay_us: int, fn: Callable[..., None], *args: Any) -> None:
        self._order += 1
        heapq.heappush(self.queue, (self.clock + delay_us, self._order, fn, args))

    def _seconds(self, lo: float, hi: float) -> int:
        return int(self.rng.uniform(lo, hi) * SECOND)

    def _downtime(self) -> int:
        """Most failures are restarts; some take a human; a few take a hardware swap."""
        r = self.rng.random()
        if r < 0.7:
            return self._seconds(20, 300)
        if r < 0.95:
            return self._seconds(300, 3600)
        return self._seconds(3600, 12 * 3600)

    def run(self) -> None:
        self._crec(None, S.CONTROLLER_ELECTED)
        self._crec(S.CONTROLLER_ELECTED, S.CONTROLLER_READY)
        self._create_initial_topics()
        self.busy_until = self.clock
        next_incident = self.clock + self._gap()
        while not self.w.full:
            if self.queue and self.queue[0][0] <= next_incident:
                t, _, fn, args = heapq.heappop(self.queue)
                self._handle(t, fn, *args)
            else:
                self._handle(next_incident, self._incident)
                next_incident = self.clock + self._gap()

    def _handle(self, t: int, fn: Callable[..., None], *args: Any) -> None:
        self.clock = max(t, self.busy_until)
        fn(*args)
        self.busy_until = self.clock

    def _gap(self) -> int:
        """Space incidents so the budget lasts until the requested end time."""
        done = max(1, self.w.lines)
        per_incident = done / max(1, self._incidents) if self._incidents > 3 else 400.0
        left_incidents = max(1.0, (self.w.budget - self.w.lines) / per_incident)
        mean = max(SECOND, (self.end_us - self.clock) / left_incidents)
        return int(self.rng.expovariate(1.0 / mean))

    def _incident(self) -> None:
        self._incidents += 1
        r = self.rng.random()
        for weight, action in (
            (0.28, self._broker_failure),
            (0.04, self._rack_failure),
            (0.05, self._rolling_restart),
            (0.14, self._reassignment),
            (0.03, self._controller_failover),
            (0.32, self._isr_flap),
            (0.05, self._create_topic),
            (0.03, self._delete_topic),
            (0.06, self._manual_preferred),
        ):
            if r < weight:
                action()
                return
            r -= weight

    # ---- topics --------------------------------------------------------------------------

    def _create_initial_topics(self) -> None:
        total = 0
        while total < self.spec.partitions:
            total += self._create_topic(initial=True)

    def _topic_name(self) -> str:
        base = f"{self.rng.choice(_DOMAINS)}.{self.rng.choice(_SUFFIXES)}"
        name, n = base, 1
        while name in self.topics:
            n += 1
            name = f"{base}-{n}"
        return name

    def _create_topic(self, initial: bool = False) -> int:
        name = self._topic_name()
        count = self.rng.choice(_PARTITION_COUNTS)
        if initial:
            count = min(count, max(1, self.spec.partitions // 4))
        rf = min(self.spec.replication, len(self.brokers))
        unclean = self.rng.random() < self.spec.unclean_share
        parts = [
            Part(name, i, self.rng.sample(self.brokers, rf), unclean) for i in range(count)
        ]
        self.topics[name] = parts
        ev = S.EV_TOPIC_CHANGE
        for p in parts:
            for r in p.replicas:
                self.hosted[r][p] = None
            p.state = S.NEW_PARTITION
            self._prec(p, S.NON_EXISTENT_PARTITION, S.NEW_PARTITION, None, ev)
            for r in p.replicas:
                self._rrec(p, r, S.NON_EXISTENT_REPLICA, S.NEW_REPLICA, ev)
        for p in parts:
            live = [r for r in p.replicas if r in self.live]
            if not live:
                self._prec(p, S.NEW_PARTITION, S.ONLINE_PARTITION, None, ev, "failed",
                           "StateChangeFailedException: no live replicas")
                continue
            p.leader, p.isr, p.leader_epoch = live[0], live, 0
            p.state = S.ONLINE_PARTITION
            self._prec(p, S.NEW_PARTITION, S.ONLINE_PARTITION, None, ev)
            for r in live:
                self._rrec(p, r, S.NEW_REPLICA, S.ONLINE_REPLICA, ev)
        return count

    def _delete_topic(self) -> None:
        if len(self.topics) < 3:
            return
        name = self.rng.choice(list(self.topics))
        parts = self.topics.pop(name)
        ev = S.EV_TOPIC_DELETION
        for p in parts:
            for r in p.replicas:
                if r in self.live:
                    self._rrec(p, r, S.ONLINE_REPLICA, S.OFFLINE_REPLICA, ev)
            before = p.state
            p.state, p.leader = S.OFFLINE_PARTITION, S.NO_LEADER
            self._prec(p, before, S.OFFLINE_PARTITION, None, ev)
            for r in p.replicas:
                if r in self.live:
                    self._rrec(p, r, S.OFFLINE_REPLICA, S.REPLICA_DELETION_STARTED, ev)
                    self._rrec(p, r, S.REPLICA_DELETION_STARTED,
                               S.REPLICA_DELETION_SUCCESSFUL, ev)
                    self._rrec(p, r, S.REPLICA_DELETION_SUCCESSFUL, S.NON_EXISTENT_REPLICA, ev)
                else:
                    self._rrec(p, r, S.OFFLINE_REPLICA, S.REPLICA_DELETION_INELIGIBLE, ev)
                self.hosted[r].pop(p, None)
                self.shut_down.get(r, {}).pop(p, None)
            p.state = S.NON_EXISTENT_PARTITION
            self._prec(p, S.OFFLINE_PARTITION, S.NON_EXISTENT_PARTITION, None, ev)

    # ---- elections -----------------------------------------------------------------------

    def _elect_offline(self, p: Part, event: str) -> None:
        """Kafka's offline election: the first live ISR member in assignment order, else (if
        the topic allows it) any live replica, which is an unclean election."""
        for r in p.replicas:
            if r in self.live and r in p.isr:
                p.leader, p.leader_epoch = r, p.leader_epoch + 1
                p.isr = [x for x in p.isr if x in self.live]
                p.state = S.ONLINE_PARTITION
                self._prec(p, S.OFFLINE_PARTITION, S.ONLINE_PARTITION, "offline", event)
                return
        if p.unclean:
            for r in p.replicas:
                if r in self.live:
                    p.leader, p.leader_epoch, p.isr = r, p.leader_epoch + 1, [r]
                    p.state = S.ONLINE_PARTITION
                    self._prec(p, S.OFFLINE_PARTITION, S.ONLINE_PARTITION, "offline_unclean",
                               event)
                    return
        if self.rng.random() < 0.3:  # the controller logs some of its failed attempts
            self._prec(p, S.OFFLINE_PARTITION, S.ONLINE_PARTITION, "offline", event, "failed",
                       "NoReplicaOnlineException: no replica in ISR is alive")

    def _move_leader(self, p: Part, leader: int, election: str, event: str) -> None:
        p.leader, p.leader_epoch = leader, p.leader_epoch + 1
        self._prec(p, S.ONLINE_PARTITION, S.ONLINE_PARTITION, election, event)

    # ---- brokers -------------------------------------------------------------------------

    def _broker_failure(self) -> None:
        live = sorted(self.live)
        if len(live) <= 1:
            return
        b = self.rng.choice(live)
        self._fail(b)
        self._later(self._downtime(), self._return, b)

    def _rack_failure(self) -> None:
        live = sorted(self.live)
        if len(live) <= 3:
            return
        down = self.rng.sample(live, self.rng.randint(2, 3))
        outage = self._downtime()
        for i, b in enumerate(down):
            self._later(self._seconds(0, 3) * i, self._fail, b)
            self._later(outage + self._seconds(0, 120), self._return, b)

    def _fail(self, b: int) -> None:
        if b not in self.live:
            return
        self.live.discard(b)
        if b == self.controller:  # the controller's broker died with it: no resignation
            self._fail_with_controller(b)
            return
        ev = S.EV_BROKER_CHANGE
        hosted = self.hosted[b]
        led = [p for p in hosted if p.state == S.ONLINE_PARTITION and p.leader == b]
        for p in led:
            p.state, p.leader = S.OFFLINE_PARTITION, S.NO_LEADER
            self._prec(p, S.ONLINE_PARTITION, S.OFFLINE_PARTITION, None, ev)
        for p in led:
            self._elect_offline(p, ev)
        already = self.shut_down.pop(b, {})
        for p in hosted:
            if p in already:
                continue
            if b in p.isr:
                if len(p.isr) > 1:
                    p.isr = [x for x in p.isr if x != b]
                    p.leader_epoch += 1
                else:  # the last ISR member: ZooKeeper keeps it in the ISR, with no leader
                    p.leader = S.NO_LEADER
            self._rrec(p, b, S.ONLINE_REPLICA, S.OFFLINE_REPLICA, ev)

    def _fail_with_controller(self, b: int) -> None:
        """The controller's own broker died: nobody records the failure as it happens. The
        next controller finds the partitions b led without a live leader when it loads the
        cluster (NonExistent -> Offline) and elects them in its failover, as Kafka's
        ``onControllerFailover`` does; b's replicas start out ineligible (no record), and the
        leaders of the partitions b followed drop it from their ISRs once it lags."""
        for p in self.hosted[b]:
            if p.state == S.ONLINE_PARTITION and p.leader == b:
                p.state, p.leader = S.OFFLINE_PARTITION, S.NO_LEADER
        self.shut_down.pop(b, None)
        self._elect_controller(crashed=True)
        lag = self._seconds(10, 30)  # replica.lag.time.max.ms
        for p in self.hosted[b]:
            self._later(lag, self._drop_lagging, p, b)

    def _drop_lagging(self, p: Part, b: int) -> None:
        if p.state == S.ONLINE_PARTITION and b not in self.live and b in p.isr and b != p.leader:
            self._isr_remove(p, b)

    def _return(self, b: int) -> None:
        if b in self.live:
            return
        self.live.add(b)
        self.seq[b] = 0  # a new broker process, a new sequence
        ev = S.EV_BROKER_CHANGE
        hosted = list(self.hosted[b])
        for p in hosted:
            self._rrec(p, b, S.OFFLINE_REPLICA, S.ONLINE_REPLICA, ev)
        for p in hosted:
            if p.state == S.OFFLINE_PARTITION:
                self._elect_offline(p, ev)
        catch_up = self._seconds(5, 240)
        self._later(catch_up, self._isr_expand, b)
        if self.spec.auto_rebalance:
            self._later(catch_up + self._seconds(30, 300), self._auto_preferred, b)

    def _isr_expand(self, b: int) -> None:
        if b not in self.live:
            return
        for p in self.hosted[b]:
            if p.state == S.ONLINE_PARTITION and b not in p.isr and p.leader in self.live:
                self._isr_add(p, b)

    def _isr_add(self, p: Part, b: int) -> None:
        members = {*p.isr, b}
        p.isr = [r for r in p.replicas if r in members]
        self._prec(p, S.ONLINE_PARTITION, S.ONLINE_PARTITION, None, self._isr_event(p))

    def _isr_remove(self, p: Part, b: int) -> None:
        p.isr = [r for r in p.isr if r != b]
        self._prec(p, S.ONLINE_PARTITION, S.ONLINE_PARTITION, None, self._isr_event(p))

    @staticmethod
    def _isr_event(p: Part) -> str:
        # Brokers change ISRs with AlterPartition; a few partitions' leaders are legacy
        # brokers writing ISR-change notifications. By partition, not drawn: the random
        # stream (and so every log of a given seed) stays as it was.
        return S.EV_ISR_CHANGE if p.index % 5 == 0 else S.EV_ALTER_PARTITION

    def _auto_preferred(self, b: int) -> None:
        for p in self.hosted[b]:
            if (
                b in self.live and p.state == S.ONLINE_PARTITION and p.replicas[0] == b
                and p.leader != b and b in p.isr
            ):
                self._move_leader(p, b, "preferred", S.EV_AUTO_PREFERRED)

    def _manual_preferred(self) -> None:
        for parts in self.topics.values():
            for p in parts:
                pref = p.replicas[0]
                if (
                    p.state == S.ONLINE_PARTITION and p.leader != pref and pref in self.live
                    and pref in p.isr
                ):
                    self._move_leader(p, pref, "preferred", S.EV_PREFERRED)

    def _rolling_restart(self) -> None:
        delay = 0
        for b in sorted(self.live):
            down = self._seconds(30, 180)
            self._later(delay, self._controlled_shutdown, b, down)
            delay += down + self._seconds(60, 240)

    def _controlled_shutdown(self, b: int, down: int) -> None:
        if b not in self.live:
            return
        ev = S.EV_CONTROLLED_SHUTDOWN
        hosted = self.hosted[b]
        for p in hosted:
            if p.state == S.ONLINE_PARTITION and p.leader == b:
                others = [r for r in p.replicas if r != b and r in self.live and r in p.isr]
                if others:
                    p.isr = [r for r in p.isr if r != b]
                    self._move_leader(p, others[0], "controlled_shutdown", ev)
        moved: dict[Part, None] = {}
        for p in hosted:
            if p.leader != b:
                if b in p.isr and len(p.isr) > 1:
                    p.isr = [r for r in p.isr if r != b]
                    p.leader_epoch += 1
                self._rrec(p, b, S.ONLINE_REPLICA, S.OFFLINE_REPLICA, ev)
                moved[p] = None
        self.shut_down[b] = moved
        self._later(self._seconds(2, 15), self._fail, b)
        self._later(down, self._return, b)

    # ---- controller ----------------------------------------------------------------------

    def _controller_failover(self) -> None:
        crashed = self.rng.random() < 0.5
        if not crashed:
            self._crec(S.CONTROLLER_READY, S.CONTROLLER_RESIGNED)
        self._elect_controller(crashed)

    def _elect_controller(self, crashed: bool) -> None:
        # A crash is noticed only when the controller's ZooKeeper session expires.
        self.clock += self._seconds(6, 18) if crashed else self._seconds(0.05, 1.0)
        candidates = sorted(self.live) or self.brokers
        self.controller = self.rng.choice(candidates)
        self.epoch += 1
        self._crec(None, S.CONTROLLER_ELECTED)
        # As the controller does: the partitions it finds without a live leader.
        for parts in self.topics.values():
            for p in parts:
                if p.state == S.OFFLINE_PARTITION:
                    self._prec(p, S.NON_EXISTENT_PARTITION, S.OFFLINE_PARTITION, None,
                               S.EV_REELECT)  # fmt: skip
        # ... and elects them (the offline ones with a live replica come back online).
        for parts in list(self.topics.values()):
            for p in parts:
                if p.state == S.OFFLINE_PARTITION:
                    self._elect_offline(p, S.EV_REELECT)
        size = sum(len(parts) for parts in self.topics.values())
        self.clock += self._seconds(0.2, 2.0) + size * 400  # loading state from ZooKeeper
        self._crec(S.CONTROLLER_ELECTED, S.CONTROLLER_READY)

    # ---- reassignment and ISR churn ------------------------------------------------------

    def _online_parts(self, k: int) -> list[Part]:
        names = list(self.topics)
        picked: list[Part] = []
        for _ in range(k * 3):
            if len(picked) >= k or not names:
                break
            p = self.rng.choice(self.topics[self.rng.choice(names)])
            if p.state == S.ONLINE_PARTITION and p not in picked:
                picked.append(p)
        return picked

    def _reassignment(self) -> None:
        ev = S.EV_REASSIGNMENT
        for p in self._online_parts(self.rng.randint(1, 30)):
            olds = [r for r in p.replicas if r in self.live]
            news = [b for b in sorted(self.live) if b not in p.replicas]
            if not olds or not news or len(p.replicas) != self.spec.replication:
                continue
            old, new = self.rng.choice(olds), self.rng.choice(news)
            p.replicas = [*p.replicas, new]  # Kafka's ORS + TRS while moving
            self.hosted[new][p] = None
            self._rrec(p, new, S.NON_EXISTENT_REPLICA, S.NEW_REPLICA, ev)
            self._rrec(p, new, S.NEW_REPLICA, S.ONLINE_REPLICA, ev)
            self._later(self._seconds(10, 900), self._finish_reassignment, p, old, new)

    def _finish_reassignment(self, p: Part, old: int, new: int) -> None:
        if (
            p.topic not in self.topics or p.state != S.ONLINE_PARTITION or new not in self.live
            or p.leader not in self.live
        ):
            return  # stalled: left with the extra replica, as a stuck reassignment would be
        ev = S.EV_REASSIGNMENT
        if new not in p.isr:
            self._isr_add(p, new)
        target = [new if r == old else r for r in p.replicas if r != new]
        p.replicas = target
        if p.leader not in target:
            leader = next((r for r in target if r in self.live and r in p.isr), None)
            if leader is None:
                return
            p.isr = [r for r in p.isr if r != old]
            self._move_leader(p, leader, "reassign", ev)
        elif old in p.isr:
            p.isr = [r for r in p.isr if r != old]
        if old in self.live:
            self._rrec(p, old, S.ONLINE_REPLICA, S.OFFLINE_REPLICA, ev)
            self._rrec(p, old, S.OFFLINE_REPLICA, S.REPLICA_DELETION_STARTED, ev)
            self._rrec(p, old, S.REPLICA_DELETION_STARTED, S.REPLICA_DELETION_SUCCESSFUL, ev)
            self._rrec(p, old, S.REPLICA_DELETION_SUCCESSFUL, S.NON_EXISTENT_REPLICA, ev)
        self.hosted[old].pop(p, None)

    def _isr_flap(self) -> None:
        """A slow follower (or, sometimes, all of them) falls out of the ISR and back, a few
        times: the partitions an operator would call flapping."""
        period = self._seconds(30, 1200)
        cycles = self.rng.randint(2, 8)
        everyone = self.rng.random() < 0.3
        for p in self._online_parts(self.rng.randint(1, 6)):
            followers = [r for r in p.isr if r != p.leader]
            if not followers:
                continue
            lagging = followers if everyone else [self.rng.choice(followers)]
            for c in range(cycles):
                self._later(c * period, self._flap_out, p, lagging)
                self._later(c * period + period // 2, self._flap_in, p, lagging)

    def _flap_out(self, p: Part, lagging: list[int]) -> None:
        for b in lagging:
            if p.state == S.ONLINE_PARTITION and b in p.isr and b != p.leader and len(p.isr) > 1:
                self._isr_remove(p, b)

    def _flap_in(self, p: Part, lagging: list[int]) -> None:
        for b in lagging:
            if (
                p.state == S.ONLINE_PARTITION and b in self.live and b not in p.isr
                and b in p.replicas and p.leader in self.live
            ):
                self._isr_add(p, b)


def size_for(records: int, index: int) -> tuple[int, int]:
    """(brokers, partitions) for a cluster given its share of the record budget: bigger logs
    come from bigger clusters, so incidents stay realistic in size at any scale."""
    factor = (1.0, 0.5, 1.6, 0.8, 1.2)[index % 5]
    partitions = int(min(6000, max(12, records / 1500)) * factor)
    # At least one broker more than the replication factor (3), or no reassignment can move
    # a replica anywhere.
    brokers = int(min(30, max(4, round(math.sqrt(partitions) / 3))))
    return brokers, max(6, partitions)
