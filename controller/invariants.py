"""The controller's safety and liveness invariants, as pure checks over plain observations.

Shared by the deterministic simulator (``controller.sim``) and the live chaos suite: both
record what they saw as the plain values below and feed them to a ``Checker`` (or to the
``check_*`` functions, which wrap one). Nothing here reads ZooKeeper, talks to a broker or
looks at a clock: an observer decides how it learns each fact, this module decides what is a
violation.

The invariants (each ``Violation.invariant`` is one of these names):

``single-writer-per-epoch``
    Writes of two different controllers were accepted while ``/controller_epoch`` held the
    same epoch (the epoch fencing of every controller write failed).
``controller-epoch-regressed``
    A partition state znode was written with a ``controller_epoch`` lower than one already
    written to the same znode (same ``czxid``: a re-created znode starts afresh).
``leader-epoch-regressed``
    A partition state znode's ``leader_epoch`` went backwards (same znode).
``leader-outside-isr``
    A partition state names a leader that is not in its ISR, and no unclean election was
    recorded for that partition at that leader epoch.
``unclean-election-not-allowed``
    A controller made an unclean election (a leader outside the ISR: possible data loss) that
    nothing allowed: not the cluster's ``unclean.leader.election.enable``, not the topic's
    config (as committed at any earlier time: a controller may act on a read made just before
    an operator turned it off again), not an admin's request for that partition.
``stale-controller-accepted``
    A broker accepted a controller request whose controller epoch is lower than one it had
    already accepted (in the same broker process), or whose broker epoch is older than the
    broker's own registration.
``assignment-changed``
    A topic or a partition's replica assignment appeared, disappeared or changed without
    anyone asking: every observed assignment must be explained by a creation, partition
    addition, reassignment or deletion request; topic ids never change.
``producer-id-blocks-overlap``
    Two producer-id blocks handed to brokers (AllocateProducerIds answers) share an id: two
    producers could then get the same producer id.
``leaderless``
    After faults stop (in the simulation: and the event queues drain; live: after session
    timeout + 5 s), a partition has no live leader although a live broker is in its ISR (one
    of its replicas: only those can be elected; an ISR member outside the replica set is
    left behind by a cancelled reassignment, and Kafka keeps the partition offline then).

Observations of one partition state znode must be given in the order ZooKeeper applied them
(the znode's ``version`` order). Requests must be observed before the topic znodes they
explain (an observer records its own request, then performs it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

NO_LEADER = -1

SINGLE_WRITER = "single-writer-per-epoch"
CONTROLLER_EPOCH_REGRESSED = "controller-epoch-regressed"
LEADER_EPOCH_REGRESSED = "leader-epoch-regressed"
LEADER_OUTSIDE_ISR = "leader-outside-isr"
UNCLEAN_NOT_ALLOWED = "unclean-election-not-allowed"
STALE_CONTROLLER_ACCEPTED = "stale-controller-accepted"
ASSIGNMENT_CHANGED = "assignment-changed"
PRODUCER_IDS_OVERLAP = "producer-id-blocks-overlap"
LEADERLESS = "leaderless"

ALL_INVARIANTS = (
    SINGLE_WRITER,
    CONTROLLER_EPOCH_REGRESSED,
    LEADER_EPOCH_REGRESSED,
    LEADER_OUTSIDE_ISR,
    UNCLEAN_NOT_ALLOWED,
    STALE_CONTROLLER_ACCEPTED,
    ASSIGNMENT_CHANGED,
    PRODUCER_IDS_OVERLAP,
    LEADERLESS,
)

#: Partition key used throughout: (topic, partition).
Tp = tuple[str, int]


# -- observations ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str
    message: str

    def __str__(self) -> str:
        return f"[{self.invariant}] {self.message}"


@dataclass(frozen=True, slots=True)
class ControllerWrite:
    """A controller write ZooKeeper accepted; ``epoch`` is ``/controller_epoch``'s value when
    it committed (not what the controller believed)."""

    controller_id: int
    epoch: int
    path: str


@dataclass(frozen=True, slots=True)
class StateWrite:
    """One version of a partition state znode, as written (by anyone)."""

    topic: str
    partition: int
    czxid: int  # the znode's incarnation: a deleted and re-created znode starts a new history
    version: int  # stat.version after the write
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]

    @property
    def tp(self) -> Tp:
        return (self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class UncleanElection:
    """A controller elected a leader outside the ISR (state-change log ``offline_unclean``)."""

    topic: str
    partition: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class BrokerRequest:
    """A controller request as a broker process handled it.

    ``incarnation`` identifies the broker process (e.g. its registration czxid or a start
    counter): a restarted broker remembers no controller epoch. ``broker_epoch`` is the
    process's own registration epoch, ``request_broker_epoch`` what the request carried (-1:
    none)."""

    broker_id: int
    incarnation: int
    kind: str
    controller_id: int
    controller_epoch: int
    accepted: bool
    broker_epoch: int = -1
    request_broker_epoch: int = -1


@dataclass(frozen=True, slots=True)
class AssignmentRequest:
    """Somebody asked for a topic or assignment change.

    ``kind``: ``create`` and ``add_partitions`` (``partitions`` maps each new partition to its
    replicas), ``reassign`` (``partitions`` maps each partition to its target), ``cancel``
    (``partitions``' keys: the partitions whose reassignment is cancelled), ``delete``.

    A cancellation returns a partition to its original replicas in the order they have in
    the reassigning replica list (Kafka's ``originalReplicas``: replicas minus adding ones),
    which may differ from the original order: after one, any order of an allowed replica set
    is explained."""

    kind: str
    topic: str
    partitions: Mapping[int, tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PartitionAssignment:
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicSnapshot:
    """The content of ``/brokers/topics/T`` after a write; ``partitions`` None: deleted."""

    topic: str
    partitions: Mapping[int, PartitionAssignment] | None
    topic_id: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionView:
    """A partition's current leadership (from its state znode) and, when known, its replicas
    (from the topic znode)."""

    leader: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...] | None = None


# -- the incremental checker -----------------------------------------------------------------


@dataclass(slots=True)
class _TopicHistory:
    allowed: dict[int, set[tuple[int, ...]]] = field(default_factory=dict)
    any_order: set[int] = field(default_factory=set)  # partitions with a cancellation
    deletion_requested: bool = False
    topic_id: str | None = None


class Checker:
    """Feeds observations in, in the order they happened; ``violations`` says what broke.

    Each ``observe_*`` call checks what it can at once (so a simulator can stop at the first
    violation); ``violations()`` also settles the checks that wait for later facts (a leader
    outside its ISR may be explained by an unclean election recorded right after the write).
    """

    def __init__(self, *, unclean_default: bool = False) -> None:
        """``unclean_default``: the controllers' ``unclean.leader.election.enable``."""
        self._found: list[Violation] = []
        self.unclean_default = unclean_default
        self._unclean_topics: set[str] = set()  # topics whose config has allowed it
        self._unclean_requested: set[Tp] = set()  # partitions an admin asked it of
        self._epoch_owner: dict[int, int] = {}
        self._states: dict[Tp, StateWrite] = {}
        self._outside_isr: list[StateWrite] = []
        self._unclean: set[tuple[str, int, int]] = set()
        self._broker_epochs: dict[tuple[int, int], int] = {}
        self._topics: dict[str, _TopicHistory] = {}
        self._producer_blocks: list[tuple[int, int, int]] = []  # (start, end, broker)

    # -- recording -------------------------------------------------------------------------

    def _flag(self, invariant: str, message: str) -> None:
        self._found.append(Violation(invariant, message))

    def violations(self) -> list[Violation]:
        pending = [
            w
            for w in self._outside_isr
            if (w.topic, w.partition, w.leader_epoch) not in self._unclean
        ]
        return self._found + [
            Violation(
                LEADER_OUTSIDE_ISR,
                f"{_state_path(w.topic, w.partition)} v{w.version}: leader {w.leader} is not in "
                f"ISR {list(w.isr)} at leader epoch {w.leader_epoch}, and no unclean election "
                "was recorded",
            )
            for w in pending
        ]

    @property
    def ok(self) -> bool:
        return not self.violations()

    @property
    def flagged(self) -> int:
        """How many violations were found at once so far (cheap; excludes pending checks)."""
        return len(self._found)

    # -- controller writes -----------------------------------------------------------------

    def observe_controller_write(self, write: ControllerWrite) -> None:
        owner = self._epoch_owner.setdefault(write.epoch, write.controller_id)
        if owner != write.controller_id:
            self._flag(
                SINGLE_WRITER,
                f"controllers {owner} and {write.controller_id} both had writes accepted in "
                f"epoch {write.epoch} (this one to {write.path})",
            )

    # -- partition state znodes ------------------------------------------------------------

    def observe_state_write(self, write: StateWrite) -> None:
        previous = self._states.get(write.tp)
        if previous is not None and previous.czxid == write.czxid:
            path = _state_path(write.topic, write.partition)
            if write.controller_epoch < previous.controller_epoch:
                self._flag(
                    CONTROLLER_EPOCH_REGRESSED,
                    f"{path} v{write.version} written with controller_epoch "
                    f"{write.controller_epoch} after v{previous.version} had "
                    f"{previous.controller_epoch}",
                )
            if write.leader_epoch < previous.leader_epoch:
                self._flag(
                    LEADER_EPOCH_REGRESSED,
                    f"{path} v{write.version}: leader_epoch {write.leader_epoch} after "
                    f"{previous.leader_epoch} (v{previous.version})",
                )
        self._states[write.tp] = write
        if write.leader != NO_LEADER and write.leader not in write.isr:
            self._outside_isr.append(write)

    def observe_state_deleted(self, topic: str, partition: int) -> None:
        self._states.pop((topic, partition), None)

    def observe_unclean_permission(
        self, topic: str | None = None, partition: int | None = None
    ) -> None:
        """The cluster's default (``topic`` None: the dynamic broker default) or the topic's
        config now allows unclean elections, or an admin asks an unclean election of
        ``partition``. Observe it before it takes effect."""
        if topic is None:
            self.unclean_default = True
        elif partition is None:
            self._unclean_topics.add(topic)
        else:
            self._unclean_requested.add((topic, partition))

    def observe_producer_id_block(self, broker: int, start: int, end: int) -> None:
        """A broker was answered the producer ids [start, end] (inclusive)."""
        for other in self._producer_blocks:
            if other[0] <= end and start <= other[1]:
                self._flag(
                    PRODUCER_IDS_OVERLAP,
                    f"broker {broker} got producer ids [{start}, {end}], which overlap "
                    f"[{other[0]}, {other[1]}] given to broker {other[2]}",
                )
        self._producer_blocks.append((start, end, broker))

    def observe_unclean_election(self, election: UncleanElection) -> None:
        self._unclean.add((election.topic, election.partition, election.leader_epoch))
        if not (
            self.unclean_default
            or election.topic in self._unclean_topics
            or (election.topic, election.partition) in self._unclean_requested
        ):
            self._flag(
                UNCLEAN_NOT_ALLOWED,
                f"{election.topic}-{election.partition} got an unclean leader at leader epoch "
                f"{election.leader_epoch}, but neither the cluster setting, the topic's config "
                "nor an admin request allowed unclean elections",
            )

    # -- brokers ---------------------------------------------------------------------------

    def observe_broker_request(self, request: BrokerRequest) -> None:
        if not request.accepted:
            return
        key = (request.broker_id, request.incarnation)
        highest = self._broker_epochs.get(key, -1)
        if request.controller_epoch < highest:
            self._flag(
                STALE_CONTROLLER_ACCEPTED,
                f"broker {request.broker_id} accepted {request.kind} from controller "
                f"{request.controller_id} at controller epoch {request.controller_epoch} after "
                f"accepting epoch {highest}",
            )
        if -1 < request.request_broker_epoch < request.broker_epoch:
            self._flag(
                STALE_CONTROLLER_ACCEPTED,
                f"broker {request.broker_id} (epoch {request.broker_epoch}) accepted "
                f"{request.kind} addressed to its older epoch {request.request_broker_epoch}",
            )
        self._broker_epochs[key] = max(highest, request.controller_epoch)

    # -- topic assignments -----------------------------------------------------------------

    def observe_request(self, request: AssignmentRequest) -> None:
        history = self._topics.get(request.topic)
        if request.kind == "create":
            if history is None or history.deletion_requested:
                history = self._topics[request.topic] = _TopicHistory()
            for p, replicas in request.partitions.items():
                history.allowed.setdefault(p, set()).add(tuple(replicas))
        elif request.kind in ("add_partitions", "reassign"):
            if history is None:
                return  # a request about an unknown topic changes nothing
            for p, replicas in request.partitions.items():
                history.allowed.setdefault(p, set()).add(tuple(replicas))
        elif request.kind == "cancel":
            if history is not None:
                history.any_order.update(request.partitions)
        elif request.kind == "delete":
            if history is None:  # e.g. a topic whose znode was never readable
                history = self._topics[request.topic] = _TopicHistory()
            history.deletion_requested = True
        else:
            raise ValueError(f"unknown assignment request kind {request.kind!r}")

    def observe_topic(self, snapshot: TopicSnapshot) -> None:
        topic = snapshot.topic
        history = self._topics.get(topic)
        where = f"/brokers/topics/{topic}"
        if snapshot.partitions is None:
            if history is not None and not history.deletion_requested:
                self._flag(ASSIGNMENT_CHANGED, f"{where} was deleted but nobody asked to")
            self._topics.pop(topic, None)
            return
        if history is None:
            self._flag(ASSIGNMENT_CHANGED, f"{where} appeared but nobody created it")
            return
        if snapshot.topic_id is not None:
            if history.topic_id not in (None, snapshot.topic_id):
                self._flag(
                    ASSIGNMENT_CHANGED,
                    f"{where}: topic id changed from {history.topic_id} to {snapshot.topic_id}",
                )
            history.topic_id = snapshot.topic_id
        elif history.topic_id is not None:
            self._flag(ASSIGNMENT_CHANGED, f"{where}: topic id {history.topic_id} was removed")
        if not history.deletion_requested:
            # During deletion the controller reverts partitions added meanwhile (Kafka's
            # PartitionModifications restore), which the deletion request explains.
            for p in sorted(set(history.allowed) - set(snapshot.partitions)):
                self._flag(ASSIGNMENT_CHANGED, f"{where}: partition {p} disappeared")
        for p, seen in sorted(snapshot.partitions.items()):
            problem = _unexplained(seen, history.allowed.get(p), p in history.any_order)
            if problem is not None:
                self._flag(ASSIGNMENT_CHANGED, f"{where} partition {p}: {problem}")


def _unexplained(
    seen: PartitionAssignment, allowed: set[tuple[int, ...]] | None, any_order: bool
) -> str | None:
    if allowed is None:
        return f"appeared with replicas {list(seen.replicas)} but nobody added it"
    if not seen.adding and not seen.removing:
        if seen.replicas in allowed:
            return None
        if any_order and any(sorted(seen.replicas) == sorted(a) for a in allowed):
            return None  # back to the original replicas after a cancellation
        return (
            f"replicas {list(seen.replicas)} are none of the requested assignments "
            f"{sorted(list(a) for a in allowed)}"
        )
    # Mid-reassignment: RS = target + (original - target), adding/removing within RS.
    known = set().union(*allowed)
    members = set(seen.replicas)
    if not members <= known:
        return f"replicas {list(seen.replicas)} include brokers nobody asked for"
    if not (set(seen.adding) | set(seen.removing)) <= members:
        return (
            f"adding {list(seen.adding)} / removing {list(seen.removing)} are not within the "
            f"replicas {list(seen.replicas)}"
        )
    return None


def _state_path(topic: str, partition: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


# -- liveness --------------------------------------------------------------------------------


def leaderless_partitions(
    partitions: Mapping[Tp, PartitionView],
    live_brokers: Iterable[int],
    excluded_topics: Iterable[str] = (),
) -> list[Violation]:
    """Partitions without a live leader that have a live ISR member.

    ``live_brokers``: registered and serving. ``excluded_topics``: topics queued for deletion
    (Kafka takes their partitions offline on purpose)."""
    live = set(live_brokers)
    excluded = set(excluded_topics)
    out = []
    for (topic, partition), view in sorted(partitions.items()):
        if topic in excluded or (view.leader != NO_LEADER and view.leader in live):
            continue
        alive = [b for b in view.isr if b in live and (view.replicas is None or b in view.replicas)]
        if alive:
            leader = "no leader" if view.leader == NO_LEADER else f"leader {view.leader} is down"
            out.append(
                Violation(
                    LEADERLESS,
                    f"{topic}-{partition}: {leader} although ISR members {alive} are live "
                    f"(ISR {list(view.isr)})",
                )
            )
    return out


@dataclass(frozen=True, slots=True)
class LivenessSample:
    """What a live observer saw at time ``t`` (seconds, any origin)."""

    t: float
    partitions: Mapping[Tp, PartitionView]
    live_brokers: frozenset[int]
    excluded_topics: frozenset[str] = frozenset()


def recovery_deadline(
    faults_stopped_at: float, session_timeout_s: float, slack_s: float = 5.0
) -> float:
    """When every partition with a live ISR member must have a leader again."""
    return faults_stopped_at + session_timeout_s + slack_s


def check_recovery(samples: Iterable[LivenessSample], deadline: float) -> list[Violation]:
    """``leaderless`` violations in samples taken at or after ``deadline`` (first per
    partition, naming the time)."""
    out: list[Violation] = []
    reported: set[str] = set()
    for sample in sorted(samples, key=lambda s: s.t):
        if sample.t < deadline:
            continue
        for v in leaderless_partitions(
            sample.partitions, sample.live_brokers, sample.excluded_topics
        ):
            key = v.message.split(":", 1)[0]
            if key not in reported:
                reported.add(key)
                out.append(Violation(v.invariant, f"at t={sample.t:.1f}s: {v.message}"))
    return out


# -- batch forms -----------------------------------------------------------------------------


def check_controller_writes(writes: Iterable[ControllerWrite]) -> list[Violation]:
    checker = Checker()
    for w in writes:
        checker.observe_controller_write(w)
    return checker.violations()


def check_state_writes(
    writes: Iterable[StateWrite], unclean: Iterable[UncleanElection] = ()
) -> list[Violation]:
    """``unclean`` only explains leaders outside the ISR here; whether each unclean election
    was allowed is ``Checker.observe_unclean_election``'s business, with the permissions."""
    checker = Checker(unclean_default=True)
    for w in writes:
        checker.observe_state_write(w)
    for u in unclean:
        checker.observe_unclean_election(u)
    return checker.violations()


def check_broker_requests(requests: Iterable[BrokerRequest]) -> list[Violation]:
    checker = Checker()
    for r in requests:
        checker.observe_broker_request(r)
    return checker.violations()


def check_assignments(
    timeline: Sequence[AssignmentRequest | TopicSnapshot],
) -> list[Violation]:
    """Requests and topic znode snapshots, in the order they happened."""
    checker = Checker()
    for item in timeline:
        if isinstance(item, AssignmentRequest):
            checker.observe_request(item)
        else:
            checker.observe_topic(item)
    return checker.violations()


__all__ = [
    "ALL_INVARIANTS",
    "ASSIGNMENT_CHANGED",
    "CONTROLLER_EPOCH_REGRESSED",
    "LEADERLESS",
    "LEADER_EPOCH_REGRESSED",
    "LEADER_OUTSIDE_ISR",
    "SINGLE_WRITER",
    "STALE_CONTROLLER_ACCEPTED",
    "UNCLEAN_NOT_ALLOWED",
    "AssignmentRequest",
    "BrokerRequest",
    "Checker",
    "ControllerWrite",
    "LivenessSample",
    "PartitionAssignment",
    "PartitionView",
    "StateWrite",
    "TopicSnapshot",
    "UncleanElection",
    "Violation",
    "check_assignments",
    "check_broker_requests",
    "check_controller_writes",
    "check_recovery",
    "check_state_writes",
    "leaderless_partitions",
    "recovery_deadline",
]
