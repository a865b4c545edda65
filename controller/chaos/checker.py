"""The live invariant checker: turns what the observer saw into ``controller.invariants``
observations, and adds what only a live run can check.

The definitions of the invariants live in ``controller.invariants`` (shared with the
deterministic simulator); this module decides how each fact is learnt from a real cluster:

* **State znodes** (``StateWrite``): every new (czxid, version) seen in a snapshot. Polling can
  miss a version that was overwritten between two polls; the audit of ZooKeeper's transaction
  log after the run (``controller.chaos.audit``) sees every one.
* **Single writer per epoch** (``ControllerWrite``): a state znode's ``controller_epoch`` says
  which election's controller wrote it, its ``mzxid`` when ZooKeeper accepted it, and the
  registrations (the election multis' zxids) which epoch was current then. The shared check
  compares controller ids; a controller re-elected after its own session expired keeps its
  id, so the zxid window itself is also checked here: a write of epoch E must commit after
  E's registration and before E+1's.
* **Stale controller accepted** (``BrokerRequest``): every request a broker logged as applied
  or rejected, per broker process.
* **Unclean elections** (``UncleanElection``): each ``offline_unclean`` line of a controller's
  state-change log; the workload allows them per topic (its config) before it does so, and the
  controllers run with ``unclean.leader.election.enable`` off, so any other one is a violation.
* **Leaderless**: a partition counts as led only when its leader is registered *and* the
  leader broker's Describe says it leads it at (at least) that leader epoch; deadlines run from
  the end of the last fault.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from controller import invariants as inv
from controller.chaos.observe import (
    BrokerLogRecord,
    ControllerLogRecord,
    Registration,
    StateNode,
    ZkSnapshot,
)

Tp = tuple[str, int]
SLACK_S = 5.0


@dataclass(frozen=True, slots=True)
class TimedViolation:
    at: float  # wall-clock time the violation was seen
    violation: inv.Violation

    @property
    def invariant(self) -> str:
        return self.violation.invariant

    def __str__(self) -> str:
        return str(self.violation)


class EpochWindows:
    """The zxid at which each controller epoch began (its election multi)."""

    def __init__(self) -> None:
        self.registrations: dict[int, Registration] = {}

    def add(self, registration: Registration) -> str | None:
        """Record an election; a second, different election of the same epoch is a problem."""
        known = self.registrations.get(registration.epoch)
        if known is None or (known.zxid == registration.zxid and known.controller_id < 0):
            self.registrations[registration.epoch] = registration
            return None
        if known.zxid != registration.zxid:
            return (
                f"controller epoch {registration.epoch} was registered twice: by {_who(known)} "
                f"at zxid {known.zxid:#x} and by {_who(registration)} at zxid "
                f"{registration.zxid:#x}"
            )
        return None

    def epoch_at(self, zxid: int) -> int | None:
        """The epoch current at ``zxid``, when the registrations around it are all known."""
        before = [r for r in self.registrations.values() if r.zxid <= zxid]
        if not before:
            return None
        current = max(before, key=lambda r: r.zxid)
        following = self.registrations.get(current.epoch + 1)
        later = [r for r in self.registrations.values() if r.zxid > zxid]
        if following is None and later:
            return None  # epoch+1 began somewhere before the next known one: ambiguous
        return current.epoch

    def window_problem(self, epoch: int, zxid: int, what: str) -> str | None:
        """Why a write by the controller of ``epoch`` committed at ``zxid`` is outside its
        epoch, or None."""
        own = self.registrations.get(epoch)
        if own is not None and zxid < own.zxid:
            return (
                f"{what} carries controller epoch {epoch} but committed at zxid {zxid:#x}, "
                f"before epoch {epoch} was registered (zxid {own.zxid:#x})"
            )
        nxt = min((r for r in self.registrations.values() if r.epoch > epoch),
                  key=lambda r: r.epoch, default=None)  # fmt: skip
        if nxt is not None and zxid > nxt.zxid:
            return (
                f"{what} was written by the controller of epoch {epoch} but committed at zxid "
                f"{zxid:#x}, after {_who(nxt)} registered epoch "
                f"{nxt.epoch} (zxid {nxt.zxid:#x})"
            )
        return None


class LiveChecker:
    """Thread-safe: the workload records requests, the observer feeds snapshots and logs."""

    def __init__(self, session_timeout_s: float) -> None:
        self.session_timeout_s = session_timeout_s
        self._lock = threading.Lock()
        self._checker = inv.Checker()
        self._shared_seen = 0
        self._own: list[TimedViolation] = []
        self._all: list[TimedViolation] = []
        self.windows = EpochWindows()
        self._elected: dict[int, int] = {}  # epoch -> controller id (state-change logs)
        self._fed: set[int] = set()  # epochs whose election went to the shared checker
        self._states: dict[Tp, StateNode] = {}
        self._topics: dict[str, tuple[int, int]] = {}  # topic -> (czxid, mzxid) last fed
        self._deleting: set[str] = set()
        # Liveness: faults in progress, when the last one stopped, episodes already reported.
        self._faults_active = 0
        self._quiet_since: float | None = None
        self._leaderless_reported: set[Tp] = set()
        self.last_leaderless: list[inv.Violation] = []

    # -- results ------------------------------------------------------------------------------

    def _flag(self, at: float, invariant: str, message: str) -> None:
        self._own.append(TimedViolation(at, inv.Violation(invariant, message)))

    def _collect(self, at: float) -> None:
        shared = self._checker.violations()
        # The shared checker's list only grows, except leader-outside-ISR candidates that a
        # later unclean-election record explains; those are settled in violations().
        found = [v for v in shared if v.invariant != inv.LEADER_OUTSIDE_ISR]
        for violation in found[self._shared_seen :]:
            self._all.append(TimedViolation(at, violation))
        self._shared_seen = len(found)

    def violations(self) -> list[TimedViolation]:
        with self._lock:
            outside = [
                TimedViolation(0.0, v)
                for v in self._checker.violations()
                if v.invariant == inv.LEADER_OUTSIDE_ISR
            ]
            return sorted(self._all + self._own, key=lambda v: v.at) + outside

    # -- requests (the workload) ---------------------------------------------------------------

    def request(self, request: inv.AssignmentRequest) -> None:
        with self._lock:
            self._checker.observe_request(request)
            if request.kind == "delete":
                self._deleting.add(request.topic)

    def allow_unclean(self, topic: str) -> None:
        """The workload is about to turn ``unclean.leader.election.enable`` on for ``topic``."""
        with self._lock:
            self._checker.observe_unclean_permission(topic)

    def producer_id_block(self, broker: int, start: int, end: int, at: float) -> None:
        """A broker was answered the producer ids [start, end] (AllocateProducerIds)."""
        with self._lock:
            self._checker.observe_producer_id_block(broker, start, end)
            self._collect(at)

    # -- faults (the runner) -------------------------------------------------------------------

    def fault_started(self) -> None:
        with self._lock:
            self._faults_active += 1
            self._quiet_since = None

    def fault_stopped(self, at: float) -> None:
        with self._lock:
            self._faults_active = max(0, self._faults_active - 1)
            if self._faults_active == 0:
                self._quiet_since = at
                self._leaderless_reported.clear()

    def recovery_deadline(self) -> float | None:
        with self._lock:
            if self._quiet_since is None:
                return None
            return inv.recovery_deadline(self._quiet_since, self.session_timeout_s, SLACK_S)

    # -- the observer ----------------------------------------------------------------------------

    def observe_logs(
        self, controllers: Iterable[ControllerLogRecord], brokers: Iterable[BrokerLogRecord],
        at: float,
    ) -> None:  # fmt: skip
        with self._lock:
            for record in controllers:
                if record.kind == "elected" and record.controller_epoch is not None:
                    owner = self._elected.setdefault(record.controller_epoch, record.controller_id)
                    if owner != record.controller_id:
                        self._flag(
                            at, inv.SINGLE_WRITER,
                            f"controllers {owner} and {record.controller_id} both logged their "
                            f"election at controller epoch {record.controller_epoch}",
                        )  # fmt: skip
                elif record.kind == "unclean" and record.topic is not None:
                    assert record.partition is not None and record.leader_epoch is not None
                    self._checker.observe_unclean_election(
                        inv.UncleanElection(record.topic, record.partition, record.leader_epoch)
                    )
            for r in brokers:
                self._checker.observe_broker_request(
                    inv.BrokerRequest(
                        r.broker_id, r.incarnation, r.kind, r.controller_id, r.controller_epoch,
                        r.accepted, r.broker_epoch, r.request_broker_epoch,
                    )
                )  # fmt: skip
            self._collect(at)

    def observe_snapshot(self, snap: ZkSnapshot) -> None:
        with self._lock:
            for registration in snap.registrations:
                problem = self.windows.add(registration)
                if problem is not None:
                    self._flag(snap.t, inv.SINGLE_WRITER, problem)
                elif registration.controller_id >= 0 and registration.epoch not in self._fed:
                    # The election multi is the first write of its epoch: any write of
                    # another controller accepted in that epoch then conflicts with it.
                    self._fed.add(registration.epoch)
                    self._checker.observe_controller_write(
                        inv.ControllerWrite(registration.controller_id, registration.epoch,
                                            "/controller")
                    )  # fmt: skip
            self._observe_states(snap)
            self._observe_topics(snap)
            self._collect(snap.t)

    def _observe_states(self, snap: ZkSnapshot) -> None:
        for tp, node in snap.states.items():
            previous = self._states.get(tp)
            if previous is not None and (previous.czxid, previous.version) == (
                node.czxid, node.version,
            ):  # fmt: skip
                continue
            if (
                previous is not None
                and previous.czxid == node.czxid
                and (node.version < previous.version)
            ):
                continue  # an older read (a lagging server): not a new write
            self._states[tp] = node
            self._checker.observe_state_write(
                inv.StateWrite(
                    node.topic, node.partition, node.czxid, node.version, node.controller_epoch,
                    node.leader, node.leader_epoch, node.isr,
                )
            )  # fmt: skip
            self._check_window(node, snap.t)
        # A state node disappears only with its topic (deletion); forget it then.
        for tp in [tp for tp in self._states if tp[0] not in snap.topics]:
            del self._states[tp]
            self._checker.observe_state_deleted(*tp)

    def _check_window(self, node: StateNode, now: float) -> None:
        """The epoch window of a new state write. Sound in the same snapshot: the snapshot
        reads ``/controller_epoch`` after the states, so any election before this write
        committed is already known (or, if it was missed between polls, nothing is claimed)."""
        what = f"/brokers/topics/{node.topic}/partitions/{node.partition}/state v{node.version}"
        epoch = self.windows.epoch_at(node.mzxid)
        writer = self.windows.registrations.get(node.controller_epoch)
        current = self.windows.registrations.get(epoch) if epoch is not None else None
        shared_flags = False
        if (
            epoch is not None
            and writer is not None
            and writer.controller_id >= 0
            and current is not None
            and current.controller_id >= 0
        ):
            self._checker.observe_controller_write(
                inv.ControllerWrite(writer.controller_id, epoch, what)
            )
            # By controller id: another controller's write in this epoch is flagged there.
            shared_flags = current.controller_id != writer.controller_id
        problem = self.windows.window_problem(node.controller_epoch, node.mzxid, what)
        if problem is not None and not shared_flags:
            # The same controller re-elected (a zombie of itself), or an epoch we could not
            # pin down: the zxid window says it.
            self._flag(now, inv.SINGLE_WRITER, problem)

    def _observe_topics(self, snap: ZkSnapshot) -> None:
        for topic, node in snap.topics.items():
            if self._topics.get(topic) == (node.czxid, node.mzxid):
                continue
            self._topics[topic] = (node.czxid, node.mzxid)
            self._checker.observe_topic(inv.TopicSnapshot(topic, node.partitions, node.topic_id))
        for topic in [t for t in self._topics if t not in snap.topics]:
            del self._topics[topic]
            self._checker.observe_topic(inv.TopicSnapshot(topic, None))
            self._deleting.discard(topic)

    # -- liveness ----------------------------------------------------------------------------------

    def leaderless(
        self, snap: ZkSnapshot, led: dict[tuple[int, Tp], int], serving: set[int]
    ) -> list[inv.Violation]:
        """Partitions without a confirmed leader that have a live ISR member.

        ``led``: (broker, partition) -> leader epoch for every partition a broker's Describe
        says it leads; ``serving``: the registered brokers that answered Describe."""
        views: dict[Tp, inv.PartitionView] = {}
        for tp, node in snap.states.items():
            claimed = led.get((node.leader, tp), -1)
            confirmed = claimed >= node.leader_epoch and node.leader in serving
            views[tp] = inv.PartitionView(node.leader if confirmed else inv.NO_LEADER, node.isr)
        excluded = set(snap.deleting) | self._deleting
        return inv.leaderless_partitions(views, serving, excluded)

    def observe_leadership(
        self, snap: ZkSnapshot, led: dict[tuple[int, Tp], int], serving: set[int]
    ) -> list[inv.Violation]:
        """Record a liveness sample; returns the leaderless partitions (empty: full
        leadership) and flags those past the recovery deadline."""
        current = self.leaderless(snap, led, serving)
        with self._lock:
            self.last_leaderless = current
            if self._faults_active or self._quiet_since is None:
                return current
            deadline = inv.recovery_deadline(self._quiet_since, self.session_timeout_s, SLACK_S)
            if snap.t < deadline:
                return current
            for violation in current:
                tp = _tp_of(violation.message)
                if tp in self._leaderless_reported:
                    continue
                self._leaderless_reported.add(tp)
                late = snap.t - self._quiet_since
                self._flag(
                    snap.t, inv.LEADERLESS,
                    f"{late:.1f}s after faults stopped (deadline: session timeout "
                    f"{self.session_timeout_s:.0f}s + {SLACK_S:.0f}s): {violation.message}",
                )  # fmt: skip
        return current


def _who(registration: Registration) -> str:
    if registration.controller_id < 0:
        return "a controller"
    return f"controller {registration.controller_id}"


def _tp_of(message: str) -> Tp:
    """The partition named at the start of a ``leaderless_partitions`` message."""
    name = message.split(":", 1)[0]
    topic, _, partition = name.rpartition("-")
    return topic, int(partition)
