"""A discrete-event model of one cluster and its controllers, emitting the state-change log.

The model follows the controller closely enough that the log has the shapes the analytics
must handle: a broker failure moves the partitions it led to OfflinePartition and elects new
leaders from the ISR (or leaves them offline when no ISR member is alive, or elects uncleanly
when the topic allows it); a returning broker brings its replicas back, re-elects stranded
partitions, rejoins ISRs after catching up and regains preferred leadership; rolling restarts
go through controlled shutdown; reassignments add and retire replicas; ISRs shrink and expand
around slow followers; topics come and go (a deletion finishes when the brokers holding its
replicas are up).

The controllers are standalone processes (ids 0..n-1), as deployed. The active one fails over
now and then, by resigning or by crashing; a crash is noticed only when its ZooKeeper session
expires, and what happened to the brokers meanwhile is found by its successor, which (as the
real one does) re-records every replica and elects what it finds without a live leader. A rack
failure sometimes takes the active controller with it. The record-level steps are in
``machines``.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from typing import Any

from controller.analytics import schema as S
from controller.analytics.generate.deletion import TopicDeletions
from controller.analytics.generate.machines import (
    EV_EXPIRE,
    EV_REASSIGNMENT_ISR_CHANGE,
    EV_REREGISTER,
    EV_STARTUP,
    ClusterSpec,
    Part,
    by_broker,
    by_key,
    failed_election,
)
from controller.analytics.generate.writer import RecordWriter

__all__ = ["SECOND", "ClusterSim", "ClusterSpec", "Part", "size_for"]

SECOND = 1_000_000  # the simulation clock counts microseconds

_DOMAINS = (
    "orders", "payments", "clicks", "inventory", "audit", "metrics", "logs", "sessions",
    "shipments", "users", "search", "ads", "billing", "fraud", "telemetry", "notifications",
)
_SUFFIXES = ("events", "cdc", "changelog", "v2", "raw", "enriched", "dlq", "compacted")
_PARTITION_COUNTS = (1, 3, 6, 6, 12, 12, 24, 32, 50, 64, 100, 128)
# What happens while no controller is active: brokers come and go (the next controller finds
# out); everything else waits for a controller.
_WITHOUT_CONTROLLER = frozenset({"_fail", "_return", "_elect_controller"})


class ClusterSim(TopicDeletions):
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
        self.shutting_down: set[int] = set()
        self.topics: dict[str, list[Part]] = {}
        # Topics queued for deletion (out of ``topics``) until every replica is deleted, and
        # those whose partitions this controller has already taken away.
        self.deleting: dict[str, list[Part]] = {}
        self.deletion_ineligible: set[str] = set()
        self.deletion_started: set[str] = set()
        self.reassigning: dict[Part, tuple[int, int]] = {}  # partition -> (added, retired)
        # Insertion-ordered "sets" keep the run deterministic for a given seed.
        self.hosted: dict[int, dict[Part, None]] = {b: {} for b in self.brokers}
        self.controllers = list(range(max(1, spec.controllers)))
        self.controller: int | None = rng.choice(self.controllers)
        self.seq = dict.fromkeys(self.controllers, 0)  # per controller process
        self.epoch = rng.randint(1, 40)
        self.last_failover = start_us - int(spec.min_failover_gap_h * 3600 * SECOND)
        self.gap_end = start_us  # when the successor of a crashed controller takes over
        self.queue: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._order = 0
        self._incidents = 0
        self._initial_lines: int | None = None

    # ---- scheduling ----------------------------------------------------------------------

    def _later(self, delay_us: int, fn: Callable[..., None], *args: Any) -> None:
        self._at(self.clock + delay_us, fn, *args)

    def _at(self, t: int, fn: Callable[..., None], *args: Any) -> None:
        self._order += 1
        heapq.heappush(self.queue, (t, self._order, fn, args))

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
        self._crec(S.CONTROLLER_ELECTED, EV_STARTUP)
        self._crec(S.CONTROLLER_READY, EV_STARTUP)
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
        if self.controller is None and fn.__name__ not in _WITHOUT_CONTROLLER:
            self._at(self.gap_end + 1, fn, *args)  # after the successor's failover
            return
        fn(*args)
        self.busy_until = self.clock

    def _gap(self) -> int:
        """Space incidents so the budget lasts until the requested end time."""
        if self._initial_lines is None:  # the first call: the initial topics are created
            self._initial_lines = self.w.lines
        # Lines per incident so far, smoothed towards a prior that scales with the cluster (an
        # incident touches about a broker's share of it): a fixed prior for every size spent
        # small logs' first incidents' gaps as if each took a tenth of the budget.
        prior = max(10.0, 4.0 * self._initial_lines / len(self.brokers))
        spent = self.w.lines - self._initial_lines
        per_incident = (spent + 3 * prior) / (self._incidents + 3)
        left_incidents = max(1.0, (self.w.budget - self.w.lines) / per_incident)
        mean = max(SECOND, (self.end_us - self.clock) / left_incidents)
        # Not past the end: a small log's first few gaps have a mean of the whole span, and
        # one long draw made a 30-day log span three months.
        return min(int(self.rng.expovariate(1.0 / mean)), max(SECOND, self.end_us - self.clock))

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
        while name in self.topics or name in self.deleting:
            n += 1
            name = f"{base}-{n}"
        return name

    def _create_topic(self, initial: bool = False) -> int:
        """``onNewPartitionCreation``: partitions and replicas New, the partitions' first
        leaders, then every replica Online (those on dead brokers too)."""
        name = self._topic_name()
        count = self.rng.choice(_PARTITION_COUNTS)
        if initial:
            count = min(count, max(1, self.spec.partitions // 4))
        rf = min(self.spec.replication, len(self.brokers))
        unclean = self.rng.random() < self.spec.unclean_share
        parts = [
            Part(name, i, self.rng.sample(self.brokers, rf), unclean) for i in range(count)
        ]
        self._create_partitions(name, parts)
        return count

    def _create_partitions(self, name: str, parts: list[Part]) -> None:
        self.topics[name] = parts
        ev = S.EV_TOPIC_CHANGE
        for p in parts:
            for r in p.replicas:
                self.hosted[r][p] = None
            p.state = S.NEW_PARTITION
            self._prec(p, S.NON_EXISTENT_PARTITION, S.NEW_PARTITION, None, ev)
        replicas = by_broker(parts)
        for r, p in replicas:
            self._rrec(p, r, S.NEW_REPLICA, ev)
        self._elect_many(parts, ev)
        for r, p in replicas:
            self._rrec(p, r, S.ONLINE_REPLICA, ev)

    def _delete_topic(self, name: str | None = None) -> None:
        """An admin deletes a topic (``name``, or one drawn when at least three are left)."""
        if name is None:
            if len(self.topics) < 3:
                return
            name = self.rng.choice(list(self.topics))
        self._queue_deletion(name, S.EV_TOPIC_DELETION)

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
        if self.rng.random() < 0.25 and self._failover_allowed():
            self._crash_controller()  # the active controller ran in the same rack
        for i, b in enumerate(down):
            self._later(self._seconds(0, 3) * i, self._fail, b)
            self._later(outage + self._seconds(0, 120), self._return, b)

    def _fail(self, b: int) -> None:
        """``onBrokerFailure``: the partitions ``b`` led go Offline, every New or Offline
        partition is elected, and ``b``'s replicas go Offline (cut from their ISRs)."""
        if b not in self.live:
            return
        self.live.discard(b)
        self.shutting_down.discard(b)
        if self.controller is None:
            return  # the next controller finds it dead
        ev = S.EV_BROKER_CHANGE
        # Every partition whose leader is not live (or is shutting down) goes (again)
        # Offline, not only b's; one sorted pass serves that and the elections.
        everything = by_key(p for parts in self.topics.values() for p in parts)
        live = self.electable
        for p in everything:
            if p.led and p.leader not in live and p.state != S.NEW_PARTITION:
                self._to_offline(p, ev)
        waiting = (S.NEW_PARTITION, S.OFFLINE_PARTITION)
        self._elect_many([p for p in everything if p.state in waiting], ev)
        hosted = [p for p in self._hosted(b) if p.topic not in self.deleting]
        self._replicas_offline(b, hosted, ev)
        self._fail_replica_deletion(b, ev)

    def _return(self, b: int) -> None:
        """``onBrokerStartup``: ``b``'s replicas Online, then every New or Offline partition
        elected; it rejoins ISRs once caught up, and regains preferred leadership."""
        if b in self.live:
            return
        self.live.add(b)
        self.shutting_down.discard(b)
        if self.controller is not None:  # else the next controller finds it live
            ev = S.EV_BROKER_CHANGE
            self._rrecs_checked(b, self._hosted(b), S.ONLINE_REPLICA, ev)
            self._elect_all(ev)
            self._resume_reassignments(ev, b)
            self._resume_deletion_for(self._deleting_on(b), ev)
        catch_up = self._seconds(5, 240)
        self._later(catch_up, self._isr_expand, b)
        if self.spec.auto_rebalance:
            self._later(catch_up + self._seconds(30, 300), self._auto_preferred, b)

    def _isr_expand(self, b: int) -> None:
        if b not in self.live:
            return
        for p in self._hosted(b):
            if p.state == S.ONLINE_PARTITION and b not in p.isr and p.leader in self.live:
                self._isr_add(p, b)

    def _isr_add(self, p: Part, b: int) -> None:
        p.isr = [*p.isr, b]  # the leader appends the follower that caught up
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
        """The periodic rebalance check, for the broker that came back
        (``checkAndTriggerAutoLeaderRebalance``): only when more than
        ``imbalance_percentage`` of the partitions preferring ``b`` are led elsewhere, those
        of them ``b`` can lead now (live, in the ISR) are elected back to it."""
        preferring = [
            p for p in self._hosted(b) if p.replicas[0] == b and p.topic in self.topics
        ]
        misplaced = [p for p in preferring if p.led and p.leader != b]
        # Strictly more than the percentage, in integers, as controller.core.rebalance does
        # (not imported: the job's zip for spark-submit carries controller.analytics only).
        if len(misplaced) * 100 <= self.spec.imbalance_percentage * len(preferring):
            return
        for p in misplaced:
            if b in self.electable and p.state == S.ONLINE_PARTITION and b in p.isr:
                self._move_leader(p, b, "preferred", S.EV_AUTO_PREFERRED)

    def _manual_preferred(self) -> None:
        """An admin asks for preferred elections of every partition: those led elsewhere
        move, or fail (recorded) when the preferred replica is down or out of the ISR."""
        ev = S.EV_PREFERRED
        for p in by_key(p for parts in self.topics.values() for p in parts):
            pref = p.replicas[0]
            if p.state != S.ONLINE_PARTITION or p.leader == pref:
                continue
            if pref in self.electable and pref in p.isr:
                self._move_leader(p, pref, "preferred", ev)
            else:
                self._prec(
                    p, S.ONLINE_PARTITION, S.ONLINE_PARTITION, "preferred", ev,
                    S.RESULT_FAILED,
                    failed_election(p, "PreferredReplicaPartitionLeaderElectionStrategy"),
                )

    def _rolling_restart(self) -> None:
        delay = 0
        for b in sorted(self.live):
            down = self._seconds(30, 180)
            self._later(delay, self._controlled_shutdown, b, down)
            delay += down + self._seconds(60, 240)

    def _controlled_shutdown(self, b: int, down: int, attempt: int = 1) -> None:
        """``doControlledShutdown``: of the led partitions with more than one replica, those
        ``b`` leads get a leader from the rest of the ISR (or a failed election), and ``b``'s
        replica of the others goes Offline. The broker asks again while it still leads some
        (controlled.shutdown.max.retries = 3, 5 s apart), then stops: the broker failure
        re-records all of its replicas. Until it exits, it is no candidate for any election."""
        if b not in self.live:
            return
        self.shutting_down.add(b)
        live = self.electable
        ev = S.EV_CONTROLLED_SHUTDOWN
        acted = [
            p for p in self._hosted(b)
            if len(p.replicas) > 1 and p.led and p.topic not in self.deleting
        ]
        followed = [p for p in acted if p.leader != b]
        stuck = False
        for p in acted:
            # Led by b in ZooKeeper, whatever its state: one that went Offline while b was
            # shutting down (another broker's failure) is elected from there.
            if p.leader == b:
                others = [r for r in p.replicas if r in live and r in p.isr]
                if others:
                    # Every broker shutting down leaves the ISR, not only this one.
                    p.isr = [r for r in p.isr if r not in self.shutting_down]
                    self._move_leader(p, others[0], "controlled_shutdown", ev)
                else:
                    stuck = True
                    self._prec(
                        p, p.state, S.ONLINE_PARTITION, "controlled_shutdown", ev,
                        S.RESULT_FAILED,
                        failed_election(p, "ControlledShutdownPartitionLeaderElectionStrategy"),
                    )
        self._replicas_offline(b, followed, ev)
        if stuck and attempt < 3:
            self._later(5 * SECOND, self._controlled_shutdown, b, down, attempt + 1)
            return
        self._later(self._seconds(2, 15), self._fail, b)
        self._later(down, self._return, b)

    # ---- controller ----------------------------------------------------------------------

    def _failover_allowed(self) -> bool:
        gap = int(self.spec.min_failover_gap_h * 3600 * SECOND)
        return self.controller is not None and self.clock - self.last_failover >= gap

    def _controller_failover(self) -> None:
        if not self._failover_allowed():
            return
        if self.rng.random() < 0.5:
            self._crash_controller()
        else:
            self._resign_controller()

    def _resign_controller(self) -> None:
        """Its ZooKeeper session expired: it resigns, and whichever process creates
        /controller first takes over at once (a standby, or itself when it registers again)."""
        self._crec(S.CONTROLLER_RESIGNED, EV_EXPIRE)
        self.clock += self._seconds(0.05, 1.0)
        self._elect_controller(None)

    def _crash_controller(self) -> None:
        """The process dies without resigning; a standby notices when the session expires."""
        crashed = self.controller
        assert crashed is not None
        self.controller = None
        self.seq[crashed] = 0  # its restarted process counts from the start
        self.last_failover = self.clock
        gap = self._seconds(6, 18)  # zookeeper.session.timeout.ms and detection
        self.gap_end = self.clock + gap
        self._later(gap, self._elect_controller, crashed)

    def _elect_controller(self, previous: int | None) -> None:
        """A controller other than ``previous`` (a crashed one) is elected.

        ``onControllerFailover``: load the cluster; every replica re-recorded (Online, or
        Offline and cut from its ISR on a dead broker); the partitions without a live leader
        found Offline (NonExistent -> Offline); every New or Offline partition elected."""
        resigned = self.controller
        # A new controller knows of no controlled shutdown, and starts deletions over.
        self.shutting_down.clear()
        self.deletion_started.clear()
        self.deletion_ineligible.clear()
        others = [c for c in self.controllers if c != previous]
        self.controller = self.rng.choice(others or self.controllers)
        # The process that resigned and won again elects itself in the event that made it
        # register again.
        ev = S.EV_REELECT if self.controller != resigned else EV_REREGISTER
        self.epoch += 1
        self.last_failover = self.clock
        self._crec(S.CONTROLLER_ELECTED, ev)
        size = sum(len(parts) for parts in self.topics.values())
        self.clock += self._seconds(0.2, 2.0) + size * 400  # loading state from ZooKeeper
        for b in self.brokers:
            if b in self.live:
                for p in self._hosted(b):
                    p.rstates[b] = S.ONLINE_REPLICA
                    self._rrec(p, b, S.ONLINE_REPLICA, ev)
        for b in self.brokers:
            if b not in self.live:
                parts = self._hosted(b)
                for p in parts:
                    p.rstates[b] = S.REPLICA_DELETION_INELIGIBLE
                self._replicas_offline(b, parts, ev)
        for parts in self.deleting.values():
            for p in parts:  # no record: they are queued for deletion
                p.state = S.OFFLINE_PARTITION if p.led else S.NEW_PARTITION
        for p in by_key(p for parts in self.topics.values() for p in parts):
            if not p.led:
                continue  # still New
            if p.leader in self.live:
                p.state = S.ONLINE_PARTITION
            else:
                p.state = S.OFFLINE_PARTITION
                self._prec(p, S.NON_EXISTENT_PARTITION, S.OFFLINE_PARTITION, None, ev)
        self._elect_all(ev)
        self._resume_reassignments(ev)
        # Held back: the queued topics with a replica on a dead broker or being reassigned.
        self.deletion_ineligible.update(
            name for name, parts in self.deleting.items()
            if any(p in self.reassigning or any(r not in self.live for r in p.replicas)
                   for p in parts)
        )
        self._resume_deletions(ev)  # tryTopicDeletion
        self._crec(S.CONTROLLER_READY, ev)

    def _resume_reassignments(self, event: str, returned: int | None = None) -> None:
        """``initializePartitionReassignments`` (or, for a broker that came back, the
        reassignments moving a replica to it or keeping one there): each is started again:
        a new leader epoch, and its new replica to NewReplica, which the state machine
        refuses (it was recorded Online, or Offline on a dead broker). Its completion then
        moves it Online from there."""
        for p in by_key(self.reassigning):
            new, old = self.reassigning[p]
            if returned is not None and (returned == old or returned not in p.replicas):
                continue
            if p.led:
                p.leader_epoch += 1
            self._rrec_checked(p, new, S.NEW_REPLICA, event)

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
        """An admin moves a few partitions, one replica each, to brokers without one."""
        ev = S.EV_REASSIGNMENT
        for p in self._online_parts(self.rng.randint(1, 30)):
            olds = [r for r in p.replicas if r in self.live]
            news = [b for b in sorted(self.live) if b not in p.replicas]
            if not olds or not news or len(p.replicas) != self.spec.replication:
                continue
            old, new = self.rng.choice(olds), self.rng.choice(news)
            self._start_reassignment(p, new, old, ev)
            self._later(self._seconds(10, 900), self._finish_reassignment, p, old, new)

    def _start_reassignment(self, p: Part, new: int, old: int, event: str) -> None:
        """Phase A of ``onPartitionReassignment``: a new leader epoch carries the grown
        replica set (Kafka's ORS + TRS while moving; no record), and ``new`` goes New."""
        p.replicas = [*p.replicas, new]
        p.leader_epoch += 1
        self.reassigning[p] = (new, old)
        self.hosted[new][p] = None
        self._rrec(p, new, S.NEW_REPLICA, event)

    def _finish_reassignment(self, p: Part, old: int, new: int) -> None:
        """Phase B, in the event that brings the new replica into the ISR: it goes Online;
        the leader moves if it is leaving (else a new epoch, no record); the old replica goes
        Offline (cut from the ISR) and is deleted. A partition offline, or a new replica or
        leader down, stalls it until a later try, as the controller resumes it later."""
        if p not in self.reassigning:
            return  # its topic was deleted
        target = [new if r == old else r for r in p.replicas if r != new]
        live = self.electable
        leader: int | None = p.leader
        if leader not in target or leader not in live:
            members = {*p.isr, new}
            leader = next((r for r in target if r in live and r in members), None)
        if p.state != S.ONLINE_PARTITION or new not in self.live or leader is None:
            self._later(self._seconds(60, 600), self._finish_reassignment, p, old, new)
            return
        # Brokers' AlterPartition completes it inside that event; a legacy leader's ISR
        # write, through the partition znode's watch.
        alter = self._isr_event(p) == S.EV_ALTER_PARTITION
        ev = S.EV_ALTER_PARTITION if alter else EV_REASSIGNMENT_ISR_CHANGE
        if new not in p.isr:
            self._isr_add(p, new)  # it caught up
        self._rrec(p, new, S.ONLINE_REPLICA, ev)
        del self.reassigning[p]
        p.replicas = target
        if leader == p.leader:
            p.leader_epoch += 1
        else:
            self._move_leader(p, leader, "reassign", ev)
        self._replicas_offline(old, [p], ev)
        for to in (
            S.REPLICA_DELETION_STARTED, S.REPLICA_DELETION_SUCCESSFUL, S.NON_EXISTENT_REPLICA,
        ):
            self._rrec(p, old, to, ev)
        self.hosted[old].pop(p, None)
        self._resume_deletion_for([p.topic], ev)  # a deletion held back by it

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
