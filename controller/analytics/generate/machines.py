"""The controller's state-machine steps as the generator models them.

Each step changes the modelled partitions and writes the records the real controller writes
for it (``controller.core``'s state machines and handlers), in the same order and with the
same fields: which records carry the leader, leader epoch and ISR, which are null, how a
replica moved offline is cut from the ISR, what a failed election says. The sequences were
read off the controller's own log in the deterministic simulator (``controller.sim``);
``tests/analytics/test_generator_fidelity.py`` compares the two.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter

from controller.analytics import schema as S
from controller.analytics.generate.writer import RecordWriter

# Events the analytics do not single out, written as the controller names them.
EV_STARTUP = "Startup"
EV_EXPIRE = "Expire"
EV_REREGISTER = "RegisterBrokerAndReelect"
EV_REASSIGNMENT_ISR_CHANGE = "PartitionReassignmentIsrChange"
EV_STOP_REPLICA_RESPONSE = "TopicDeletionStopReplicaResponseReceived"


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    name: str
    brokers: int
    partitions: int  # roughly, at creation; spread over topics
    replication: int = 3
    auto_rebalance: bool = True  # auto.leader.rebalance.enable
    unclean_share: float = 0.15  # share of topics with unclean.leader.election.enable
    controllers: int = 3  # standalone controller processes (ids 0..n-1), as deployed
    min_failover_gap_h: float = 24.0  # failovers re-record every replica: keep them rare
    imbalance_percentage: int = 10  # leader.imbalance.per.broker.percentage


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
    led: bool = False  # has a leader and ISR znode (its first election succeeded)
    rstates: dict[int, str] = field(default_factory=dict)  # replica -> replica state


_KEY = attrgetter("topic", "index")

# Kafka's validPreviousStates for the replica moves the generator checks (in its order, which
# the refusal's error text shows).
_REPLICA_VALID_PREVIOUS = {
    S.NEW_REPLICA: (S.NON_EXISTENT_REPLICA,),
    S.ONLINE_REPLICA: (
        S.NEW_REPLICA, S.ONLINE_REPLICA, S.OFFLINE_REPLICA, S.REPLICA_DELETION_INELIGIBLE,
    ),
    S.REPLICA_DELETION_INELIGIBLE: (S.OFFLINE_REPLICA, S.REPLICA_DELETION_STARTED),
}


def by_key(parts: Iterable[Part]) -> list[Part]:
    """Partitions in the controller's order (topic, then partition)."""
    return sorted(parts, key=_KEY)


def by_broker(parts: Iterable[Part]) -> list[tuple[int, Part]]:
    """``parts``' replicas in the replica state machine's order: by broker, then partition."""
    rows = [(r, p) for p in parts for r in p.replicas]
    rows.sort(key=lambda rp: (rp[0], rp[1].topic, rp[1].index))
    return rows


def failed_election(p: Part, strategy: str) -> str:
    """The controller's error for an election that found no leader (``strategy`` as Kafka
    prints it, e.g. ``OfflinePartitionLeaderElectionStrategy(false)``)."""
    return f"Failed to elect leader for partition {p.topic}-{p.index} under strategy {strategy}"


class Machines:
    """Record writing and the state-machine steps; ``ClusterSim`` drives them."""

    w: RecordWriter
    rng: random.Random
    clock: int
    controller: int | None
    epoch: int
    seq: dict[int, int]
    live: set[int]
    shutting_down: set[int]  # brokers between their controlled shutdown and their exit
    brokers: list[int]
    topics: dict[str, list[Part]]
    hosted: dict[int, dict[Part, None]]

    @property
    def electable(self) -> set[int]:
        """Brokers a leader may be elected on: live and not shutting down (Kafka's
        ``isReplicaOnline``)."""
        return self.live - self.shutting_down if self.shutting_down else self.live

    # ---- records -------------------------------------------------------------------------

    def _tick(self) -> int:
        self.clock += 20 + int(self.rng.random() * 400)
        cid = self.controller
        assert cid is not None, "a record needs an active controller"
        self.seq[cid] += 1
        return self.seq[cid]

    def _prec(
        self,
        p: Part,
        frm: str,
        to: str,
        election: str | None,
        event: str,
        result: str = S.RESULT_OK,
        error: str | None = None,
    ) -> None:
        seq = self._tick()
        # As the controller writes them: no leadership on a failed step, on New and
        # NonExistent, nor on a move offline (only a new controller's NonExistent -> Offline,
        # the partitions it finds without a live leader, says what it found).
        shown = (
            result == S.RESULT_OK
            and to not in (S.NEW_PARTITION, S.NON_EXISTENT_PARTITION)
            and (to != S.OFFLINE_PARTITION or frm == S.NON_EXISTENT_PARTITION)
        )
        self.w.emit(
            self.clock, seq, self.controller, self.epoch, S.KIND_PARTITION, p.topic,  # type: ignore[arg-type]
            p.index, None, frm, to, p.leader if shown else None,
            p.leader_epoch if shown else None, list(p.isr) if shown else None, election,
            event, result, error,
        )

    def _rrec(self, p: Part, replica: int, to: str, event: str) -> None:
        """Move one replica to ``to`` from the state it is in, with its partition's
        leadership (none before the partition's first election, nor on NonExistent)."""
        seq = self._tick()
        frm = p.rstates.get(replica, S.NON_EXISTENT_REPLICA)
        shown = p.led and to != S.NON_EXISTENT_REPLICA
        self.w.emit(
            self.clock, seq, self.controller, self.epoch, S.KIND_REPLICA, p.topic, p.index,  # type: ignore[arg-type]
            replica, frm, to, p.leader if shown else None, p.leader_epoch if shown else None,
            list(p.isr) if shown else None, None, event,
        )
        if to == S.NON_EXISTENT_REPLICA:
            p.rstates.pop(replica, None)
        else:
            p.rstates[replica] = to

    def _rrec_checked(self, p: Part, replica: int, to: str, event: str) -> None:
        """``_rrec`` if the replica state machine allows the move from the replica's state;
        else the refusal it records (``logInvalidTransition``): the state the replica stays
        in and the error, nothing else."""
        frm = p.rstates.get(replica, S.NON_EXISTENT_REPLICA)
        allowed = _REPLICA_VALID_PREVIOUS[to]
        if frm in allowed:
            self._rrec(p, replica, to, event)
            return
        seq = self._tick()
        error = (
            f"Replica [Topic={p.topic},Partition={p.index},Replica={replica}] should be in the "
            f"{','.join(allowed)} states before moving to {to} state. Instead it is in "
            f"{frm} state"
        )
        self.w.emit(
            self.clock, seq, self.controller, self.epoch, S.KIND_REPLICA, p.topic, p.index,  # type: ignore[arg-type]
            replica, frm, to, None, None, None, None, event, S.RESULT_INVALID, error,
        )

    def _rrecs_checked(self, b: int, parts: list[Part], to: str, event: str) -> None:
        """``b``'s replicas of ``parts`` to ``to`` in one call of the replica state machine,
        which records the moves it refuses first, then makes the others."""
        allowed = _REPLICA_VALID_PREVIOUS[to]
        ok = [p for p in parts if p.rstates.get(b, S.NON_EXISTENT_REPLICA) in allowed]
        for p in parts:
            if p not in ok:
                self._rrec_checked(p, b, to, event)
        for p in ok:
            self._rrec(p, b, to, event)

    def _crec(self, to: str, event: str) -> None:
        seq = self._tick()
        self.w.emit(
            self.clock, seq, self.controller, self.epoch, S.KIND_CONTROLLER, None, None, None,  # type: ignore[arg-type]
            None, to, None, None, None, None, event,
        )

    # ---- partition state machine ---------------------------------------------------------

    def _to_offline(self, p: Part, event: str) -> None:
        """Online (or New, or Offline) -> Offline. ZooKeeper keeps the old leader until an
        election or an ISR cut replaces it."""
        before, p.state = p.state, S.OFFLINE_PARTITION
        self._prec(p, before, S.OFFLINE_PARTITION, None, event)

    def _elect(self, p: Part, event: str) -> None:
        """New or Offline -> Online: a New partition's first leader and ISR, or Kafka's
        offline election (the first live ISR member in assignment order; else, if the topic
        allows it, any live replica: an unclean election). Failures are recorded too. A
        broker shutting down counts as dead here."""
        live = self.electable
        if p.state == S.NEW_PARTITION:
            alive = [r for r in p.replicas if r in live]
            if not alive:
                replicas = ",".join(map(str, p.replicas))
                self._prec(
                    p, S.NEW_PARTITION, S.ONLINE_PARTITION, None, event, S.RESULT_FAILED,
                    f"Controller {self.controller} epoch {self.epoch} encountered error during "
                    f"state change of partition {p.topic}-{p.index} from New to Online, "
                    f"assigned replicas are [{replicas}], live brokers are "
                    f"[{','.join(map(str, sorted(live)))}]. No assigned replica is alive.",
                )
                return
            p.leader, p.isr, p.leader_epoch, p.led = alive[0], alive, 0, True
            p.state = S.ONLINE_PARTITION
            self._prec(p, S.NEW_PARTITION, S.ONLINE_PARTITION, None, event)
            return
        leader = next((r for r in p.replicas if r in live and r in p.isr), None)
        election = "offline"
        if leader is not None:
            isr = [r for r in p.isr if r in live]
        elif p.unclean:
            leader = next((r for r in p.replicas if r in live), None)
            election, isr = "offline_unclean", [] if leader is None else [leader]
        if leader is None:
            self._prec(
                p, S.OFFLINE_PARTITION, S.ONLINE_PARTITION, "offline", event, S.RESULT_FAILED,
                failed_election(p, "OfflinePartitionLeaderElectionStrategy(false)"),
            )
            return
        p.leader, p.leader_epoch, p.isr = leader, p.leader_epoch + 1, isr
        p.state = S.ONLINE_PARTITION
        self._prec(p, S.OFFLINE_PARTITION, S.ONLINE_PARTITION, election, event)

    def _elect_all(self, event: str) -> None:
        """``triggerOnlinePartitionStateChange``: every New or Offline partition."""
        waiting = [
            p for parts in self.topics.values() for p in parts
            if p.state in (S.NEW_PARTITION, S.OFFLINE_PARTITION)
        ]
        self._elect_many(by_key(waiting), event)

    def _elect_many(self, parts: list[Part], event: str) -> None:
        """``parts`` (in key order) Online, in the controller's order: the New ones first
        (those with no live replica fail before the rest are initialized), then the
        elections of the Offline ones."""
        new = [p for p in parts if p.state == S.NEW_PARTITION]
        offline = [p for p in parts if p.state == S.OFFLINE_PARTITION]
        live = self.electable
        dead = [p for p in new if not any(r in live for r in p.replicas)]
        for p in (*dead, *(p for p in new if p not in dead), *offline):
            self._elect(p, event)

    def _move_leader(self, p: Part, leader: int, election: str, event: str) -> None:
        """A new leader for a led partition (Online, or Offline for a controlled shutdown's
        election of a partition its broker still leads in ZooKeeper)."""
        before, p.state = p.state, S.ONLINE_PARTITION
        p.leader, p.leader_epoch = leader, p.leader_epoch + 1
        self._prec(p, before, S.ONLINE_PARTITION, election, event)

    # ---- replica state machine -----------------------------------------------------------

    @staticmethod
    def _cut_from_isr(p: Part, b: int) -> None:
        """``removeReplicasFromIsr``: only where the ISR holds ``b``; the last member stays
        (with no leader), and the leader epoch moves on."""
        if not p.led or b not in p.isr:
            return
        if p.leader == b:
            p.leader = S.NO_LEADER
        if len(p.isr) > 1:
            p.isr = [r for r in p.isr if r != b]
        p.leader_epoch += 1

    def _replicas_offline(self, b: int, parts: list[Part], event: str) -> None:
        """``b``'s replicas of ``parts`` (in key order) Offline, recorded in the controller's
        order: those whose ISR did not hold ``b``, then those cut from it, then those of
        partitions never led."""
        kept = [p for p in parts if p.led and b not in p.isr]
        cut = [p for p in parts if p.led and b in p.isr]
        for p in cut:
            self._cut_from_isr(p, b)
        for p in (*kept, *cut, *(p for p in parts if not p.led)):
            self._rrec(p, b, S.OFFLINE_REPLICA, event)

    def _replicas_offline_by_broker(self, replicas: list[tuple[int, Part]], event: str) -> None:
        """``replicas`` (in broker order) Offline, one broker after the other."""
        for b in sorted({r for r, _ in replicas}):
            self._replicas_offline(b, [p for r, p in replicas if r == b], event)

    def _hosted(self, b: int) -> list[Part]:
        return by_key(self.hosted[b])
