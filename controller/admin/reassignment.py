"""Partition reassignment plans for the CLI: kafka-reassign-partitions.sh's formats and checks.

- *topics to move*: ``{"version":1,"topics":[{"topic":"foo"}]}`` (``--topics-to-move-json-file``);
- *plan*: ``{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2],
  "log_dirs":["any","any"]}]}`` (``--reassignment-json-file``; ``log_dirs`` optional);
- ``generate`` proposes a plan with Kafka's replica placement (``assign_replicas_to_brokers``)
  over the given brokers, rack-aware unless disabled;
- a plan to execute is checked before anything is submitted: Kafka's tool's checks (valid
  JSON, version 1, a non-empty partition list, no duplicate partitions, no empty or duplicate
  replica lists, registered brokers) and two of its own: the partitions exist (Kafka's tool
  leaves that to the controller's UNKNOWN_TOPIC_OR_PARTITION) and ``log_dirs`` is ``"any"``
  (moving replicas between log directories is not supported). verify and cancel read a plan
  without these checks, as Kafka's tool does.

Reads go to ZooKeeper (topic znodes, broker registrations); submissions go either to the active
controller's admin API (the CLI does that) or, like Kafka's pre-2.4 ``--zookeeper`` tool, to
``/admin/reassign_partitions`` (``write_reassignment_znode``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from controller.admin.assignment import (
    AdminError,
    RackAwareMode,
    assign_replicas_to_brokers,
    broker_metadatas,
)
from controller.admin.topic_reads import check_readable, live_brokers
from controller.admin.writes import holds
from controller.core.model import Broker, ReplicaAssignment, TopicAssignment, TopicPartition
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError, NodeExistsError, NoNodeError
from controller.zk.port import ZkPort

ANY_LOG_DIR = "any"
INT32_MAX = 2**31 - 1
EXISTING_REASSIGNMENT_MESSAGE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. The "
    "--additional flag can also be used to change the throttle by resubmitting the current "
    "reassignment."
)


class InvalidPlanError(AdminError):
    """A topics-to-move file, broker list or reassignment plan Kafka's tool would refuse."""


class UnknownPartitionError(AdminError):
    """A plan names a topic or partition that does not exist."""


class UnknownBrokerError(AdminError):
    """A plan or broker list names a broker that is not registered."""


class ReassignmentInProgressError(AdminError):
    """``/admin/reassign_partitions`` exists (a ZooKeeper submission is pending)."""


def tp_key(tp: TopicPartition) -> tuple[str, int]:
    """Kafka's ``compareTopicPartitions``: by topic, then partition."""
    return tp.topic, tp.partition


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


def _duplicates(items: Sequence[Any]) -> list[Any]:
    seen: set[Any] = set()
    dups: list[Any] = []
    for item in items:
        if item in seen and item not in dups:
            dups.append(item)
        seen.add(item)
    return dups


# -- parsing --------------------------------------------------------------------------------


def _load_json(text: str, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise InvalidPlanError(f"the {what} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InvalidPlanError(f"the {what} must be a JSON object, got {type(doc).__name__}")
    version = doc.get("version", 1)
    if version != 1 or type(version) is not int:
        raise InvalidPlanError(f"the {what} has an unsupported version field value {version!r}")
    return doc


def _list(doc: Mapping[str, Any], key: str, what: str) -> list[Any]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise InvalidPlanError(f'the {what}\'s "{key}" must be a JSON array, got {value!r}')
    return value


def _topic(entry: Any, where: str) -> str:
    if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
        raise InvalidPlanError(f'{where}: expected an object with a string "topic", got {entry!r}')
    topic = entry["topic"]
    try:
        return paths.validate_topic_name(topic)
    except paths.InvalidTopicError as exc:
        raise InvalidPlanError(f"{where}: {exc}") from None


def _int(value: Any, where: str, minimum: int = 0) -> int:
    if type(value) is not int or not minimum <= value <= INT32_MAX:
        raise InvalidPlanError(
            f"{where}: expected an integer in [{minimum}, {INT32_MAX}], got {value!r}"
        )
    return value


def parse_topics_to_move(text: str) -> list[str]:
    """Kafka's ``parseTopicsData``; refuses an empty or duplicated topic list."""
    doc = _load_json(text, "topics-to-move JSON")
    topics = [
        _topic(entry, f"topics[{i}]")
        for i, entry in enumerate(_list(doc, "topics", "topics-to-move JSON"))
    ]
    if not topics:
        raise InvalidPlanError('the topics-to-move JSON lists no topics ("topics" is empty)')
    dups = _duplicates(topics)
    if dups:
        raise InvalidPlanError(
            f"list of topics to reassign contains duplicate entries: {', '.join(dups)}"
        )
    return topics


def parse_broker_list(text: str) -> list[int]:
    """``--broker-list "1,2,3"``: distinct non-negative broker ids."""
    brokers: list[int] = []
    for item in text.split(","):
        item = item.strip()
        if not item.isdecimal():
            raise InvalidPlanError(
                f"--broker-list: {item!r} is not a broker id (expected e.g. 1,2,3)"
            )
        brokers.append(_int(int(item), "--broker-list"))
    dups = _duplicates(brokers)
    if dups:
        raise InvalidPlanError(f"broker list contains duplicate entries: {_ids(dups)}")
    return brokers


def parse_reassignment_json(
    text: str, *, for_execute: bool = True
) -> dict[TopicPartition, tuple[int, ...]]:
    """Kafka's ``parsePartitionReassignmentData``, plus ``parseExecuteAssignmentArgs``' checks
    when ``for_execute`` (verify and cancel read a plan as Kafka's tool does: no checks of
    the replica lists, and log dirs, which only execute would act on, ignored). Unknown
    fields are ignored, as Kafka's tool ignores them."""
    doc = _load_json(text, "reassignment JSON")
    entries: list[tuple[TopicPartition, tuple[int, ...]]] = []
    for i, entry in enumerate(_list(doc, "partitions", "reassignment JSON")):
        where = f"partitions[{i}]"
        topic = _topic(entry, where)
        tp = TopicPartition(topic, _int(entry.get("partition"), f"{where}.partition"))
        raw = entry.get("replicas")
        if not isinstance(raw, list):
            raise InvalidPlanError(f'{where} ({tp}): "replicas" must be an array, got {raw!r}')
        replicas = tuple(_int(r, f"{where}.replicas") for r in raw)
        log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
            raise InvalidPlanError(
                f"size of replicas list {list(replicas)} is different from size of log dirs "
                f"list {log_dirs} for partition {tp}"
            )
        if for_execute and any(d != ANY_LOG_DIR for d in log_dirs):
            raise InvalidPlanError(
                f"partition {tp}: moving replicas between log directories is not supported "
                f'(log_dirs must be "{ANY_LOG_DIR}")'
            )
        entries.append((tp, replicas))
    if not entries:
        raise InvalidPlanError("partition reassignment list cannot be empty")
    if not for_execute:
        return dict(entries)
    empty = [str(tp) for tp, r in entries if not r]
    if empty:
        raise InvalidPlanError(f"partition replica list cannot be empty: {', '.join(empty)}")
    dup_parts = _duplicates([tp for tp, _ in entries])
    if dup_parts:
        raise InvalidPlanError(
            "partition reassignment contains duplicate topic partitions: "
            + ", ".join(map(str, dup_parts))
        )
    dup_replicas = [(tp, _duplicates(r)) for tp, r in entries if _duplicates(r)]
    if dup_replicas:
        raise InvalidPlanError(
            "partition replica lists may not contain duplicate entries: "
            + ". ".join(f"{tp} contains multiple entries for {_ids(d)}" for tp, d in dup_replicas)
        )
    return dict(entries)


def format_reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's ``formatAsReassignmentJson``: compact, sorted, ``log_dirs`` all ``any``."""
    partitions = [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "replicas": list(assignment[tp]),
            "log_dirs": [ANY_LOG_DIR] * len(assignment[tp]),
        }
        for tp in sorted(assignment, key=tp_key)
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


# -- reading the cluster --------------------------------------------------------------------


def read_topic_assignments(port: ZkPort, topics: Iterable[str]) -> dict[str, TopicAssignment]:
    """Topic znodes of ``topics``; missing ones are left out, malformed ones refused."""
    topic_list = sorted(set(topics))
    out: dict[str, TopicAssignment] = {}
    reads = port.get_many([paths.topic_path(t) for t in topic_list])
    for topic, read in zip(topic_list, reads, strict=True):
        if isinstance(read.error, NoNodeError):
            continue
        if read.error is not None:
            raise read.error
        try:
            out[topic] = codecs.decode_topic_assignment(topic, read.data, read.path)
        except MalformedZnodeError as exc:
            raise AdminError(f"cannot read topic {topic}: {exc}") from None
    return out


def current_assignments(
    port: ZkPort, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, ReplicaAssignment]:
    """Each partition's full replica assignment; refuses partitions that do not exist."""
    wanted = sorted(set(partitions), key=tp_key)
    topics = read_topic_assignments(port, {tp.topic for tp in wanted})
    out: dict[TopicPartition, ReplicaAssignment] = {}
    missing: list[str] = []
    for tp in wanted:
        assignment = topics.get(tp.topic)
        ra = assignment.partitions.get(tp.partition) if assignment is not None else None
        if ra is None:
            missing.append(str(tp))
        else:
            out[tp] = ra
    if missing:
        raise UnknownPartitionError(f"unable to find partition(s): {', '.join(missing)}")
    return out


def moving_partitions(port: ZkPort) -> dict[TopicPartition, ReplicaAssignment]:
    """Every partition with adding or removing replicas in its topic znode (the reassignments
    in progress, as ZooKeeper records them); topic znodes that cannot be read are skipped."""
    try:
        topics = sorted(port.get_children(paths.BROKERS_TOPICS))
    except NoNodeError:
        return {}
    out: dict[TopicPartition, ReplicaAssignment] = {}
    for topic, read in zip(topics, port.get_many([paths.topic_path(t) for t in topics]),
                           strict=True):  # fmt: skip
        if read.error is not None:
            continue
        try:
            assignment = codecs.decode_topic_assignment(topic, read.data, read.path)
        except MalformedZnodeError:
            continue
        for partition, ra in assignment.partitions.items():
            if ra.adding_replicas or ra.removing_replicas:
                out[TopicPartition(topic, partition)] = ra
    return out


def registered_brokers(
    port: ZkPort, unreadable: dict[int, str] | None = None
) -> dict[int, Broker]:
    """The readable registrations by id. An unreadable one is left out, as the controller
    leaves it out (one bad znode must not stop every reassignment); its problem goes to
    ``unreadable`` when given."""
    brokers, problems = live_brokers(port)
    if unreadable is not None:
        unreadable.update({b: f"cannot read broker {b}: {p}" for b, p in problems.items()})
    return {b.id: b for b in brokers}


def check_brokers_registered(port: ZkPort, brokers: Iterable[int]) -> None:
    """Kafka's ``verifyBrokerIds``."""
    brokers = list(brokers)
    unreadable: dict[int, str] = {}
    registered = registered_brokers(port, unreadable)
    check_readable(sorted(brokers), unreadable)
    unknown = sorted(set(brokers) - set(registered))
    if unknown:
        raise UnknownBrokerError(
            f"unknown broker id(s) {_ids(unknown)} (registered brokers: "
            f"{_ids(sorted(registered)) or 'none'})"
        )


def validate_plan(
    port: ZkPort, plan: Mapping[TopicPartition, Sequence[int]]
) -> dict[TopicPartition, ReplicaAssignment]:
    """Existing partitions of topics not marked for deletion, and registered brokers;
    returns the current assignments. The controller would refuse a partition of a topic
    being deleted (UNKNOWN_TOPIC_OR_PARTITION) after starting the rest of the plan."""
    current = current_assignments(port, plan)
    # One lookup per topic, not per partition: a plan can name thousands of partitions.
    topics = {tp.topic for tp in current}
    deleting = {t for t in topics if port.exists(paths.delete_topic_path(t)) is not None}
    going = sorted(str(tp) for tp in current if tp.topic in deleting)
    if going:
        raise UnknownPartitionError(
            f"partition(s) of topics marked for deletion cannot be reassigned: {', '.join(going)}"
        )
    check_brokers_registered(port, {b for replicas in plan.values() for b in replicas})
    return current


# -- generate -------------------------------------------------------------------------------


def generate_assignment(
    port: ZkPort,
    topics: Sequence[str],
    broker_list: Sequence[int],
    *,
    rack_aware: bool = True,
    rng: random.Random | None = None,
) -> tuple[dict[TopicPartition, tuple[int, ...]], dict[TopicPartition, tuple[int, ...]]]:
    """(current, proposed) for every partition of ``topics`` over ``broker_list``.

    Kafka's ``calculateAssignment``: per topic, as many partitions as now, the replication
    factor of its partitions, placed by ``assignReplicasToBrokers``.
    """
    assignments = read_topic_assignments(port, topics)
    missing = sorted(set(topics) - set(assignments))
    if missing:
        raise UnknownPartitionError(f"topic(s) {', '.join(missing)} do not exist")
    unreadable: dict[int, str] = {}
    registered = registered_brokers(port, unreadable)
    check_readable(sorted(broker_list), unreadable)
    unknown = [b for b in broker_list if b not in registered]
    if unknown:
        raise UnknownBrokerError(
            f"--broker-list names unregistered broker(s) {_ids(unknown)} (registered: "
            f"{_ids(sorted(registered)) or 'none'})"
        )
    metadata = broker_metadatas(
        [registered[b] for b in broker_list],
        RackAwareMode.ENFORCED if rack_aware else RackAwareMode.DISABLED,
    )
    current: dict[TopicPartition, tuple[int, ...]] = {}
    proposed: dict[TopicPartition, tuple[int, ...]] = {}
    for topic in sorted(assignments):
        parts = assignments[topic].partitions
        if not parts:
            raise UnknownPartitionError(f"topic {topic} has no partitions")
        for p, ra in parts.items():
            current[TopicPartition(topic, p)] = ra.replicas
        rf = len(parts[min(parts)].replicas)
        placed = assign_replicas_to_brokers(metadata, len(parts), rf, rng=rng)
        for p, replicas in placed.items():
            proposed[TopicPartition(topic, p)] = tuple(replicas)
    return current, proposed


# -- the legacy ZooKeeper submission --------------------------------------------------------


def write_reassignment_znode(port: ZkPort, plan: Mapping[TopicPartition, Sequence[int]]) -> None:
    """Create ``/admin/reassign_partitions`` as Kafka's pre-2.4 tool did (never overwrite:
    the controller only reacts to its creation)."""
    data = codecs.encode_reassignment({tp: tuple(plan[tp]) for tp in sorted(plan, key=tp_key)})
    # Checked first, as Kafka's tool does: the same plan submitted again is refused, and a
    # node that appears after this read with our bytes is our create's own first attempt.
    refuse_if_reassignment_znode_exists(port)
    try:
        port.create(paths.REASSIGN_PARTITIONS, data, makepath=True)
    except NodeExistsError:
        if holds(port, paths.REASSIGN_PARTITIONS, data):
            return  # ours: the create committed and its reply was lost (the resend met it)
        raise _in_progress() from None


def refuse_if_reassignment_znode_exists(port: ZkPort) -> None:
    """Kafka's pre-2.4 tool: one ZooKeeper submission at a time. A malformed one is named as
    such: nothing runs, and only deleting it lets a submission through."""
    if port.exists(paths.REASSIGN_PARTITIONS) is None:
        return
    _, problem = read_reassignment_znode(port)
    if problem is not None:
        raise ReassignmentInProgressError(
            f"{paths.REASSIGN_PARTITIONS} exists but is malformed, so nothing is running and "
            f"the controller ignores it ({problem}): delete it (zkCli.sh: delete "
            f"{paths.REASSIGN_PARTITIONS}) to submit through ZooKeeper, or submit without "
            "--via-zookeeper (which also deletes it)"
        )
    raise _in_progress()


def _in_progress() -> ReassignmentInProgressError:
    return ReassignmentInProgressError(
        f"there is an existing assignment running ({paths.REASSIGN_PARTITIONS} exists)"
    )


def read_reassignment_znode(
    port: ZkPort,
) -> tuple[dict[TopicPartition, tuple[int, ...]], str | None]:
    """(entries, problem): the pending ZooKeeper submission, and why it is unreadable if so."""
    try:
        data, _ = port.get(paths.REASSIGN_PARTITIONS)
    except NoNodeError:
        return {}, None
    try:
        return codecs.decode_reassignment(data, paths.REASSIGN_PARTITIONS), None
    except MalformedZnodeError as exc:
        return {}, str(exc)


# -- progress -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionProgress:
    """Kafka's ``PartitionReassignmentState`` plus what the controller reports in flight."""

    tp: TopicPartition
    target: tuple[int, ...]
    current: tuple[int, ...]
    done: bool
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    isr: tuple[int, ...] | None = None

    @property
    def completed(self) -> bool:
        return self.done and self.current == self.target

    def status_line(self) -> str:
        """Kafka's lines, word for word."""
        if self.completed:
            return f"Reassignment of partition {self.tp} is completed."
        if self.done:
            return (
                f"There is no active reassignment of partition {self.tp}, but replica set is "
                f"{_ids(self.current)} rather than {_ids(self.target)}."
            )
        return f"Reassignment of partition {self.tp} is still in progress."

    def detail_line(self) -> str | None:
        """Where an in-flight reassignment stands: which adding replicas have caught up."""
        if self.done:
            return None
        isr = set(self.isr or ())
        caught_up = [r for r in self.adding if r in isr]
        return (
            f"\treplicas: {_ids(self.current)}  adding: {_ids(self.adding) or '-'}  "
            f"removing: {_ids(self.removing) or '-'}  isr: "
            f"{_ids(self.isr) if self.isr is not None else 'unknown'}  "
            f"({len(caught_up)} of {len(self.adding)} adding replicas in sync)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "target_replicas": list(self.target),
            "current_replicas": list(self.current),
            "adding_replicas": list(self.adding),
            "removing_replicas": list(self.removing),
            "isr": None if self.isr is None else list(self.isr),
            "in_progress": not self.done,
            "completed": self.completed,
        }


def partition_progress(
    port: ZkPort,
    plan: Mapping[TopicPartition, Sequence[int]],
    ongoing: Mapping[TopicPartition, ReplicaAssignment],
) -> dict[TopicPartition, PartitionProgress]:
    """Kafka's ``findPartitionReassignmentStates``: ``ongoing`` comes from the controller
    (ListPartitionReassignments); the rest is read from ZooKeeper."""
    topics = read_topic_assignments(port, {tp.topic for tp in plan})
    states = _isrs(port, [tp for tp in plan if tp in ongoing])
    out: dict[TopicPartition, PartitionProgress] = {}
    for tp in sorted(plan, key=tp_key):
        target = tuple(plan[tp])
        if tp in ongoing:
            ra = ongoing[tp]
            out[tp] = PartitionProgress(
                tp, target, ra.replicas, False, ra.adding_replicas, ra.removing_replicas,
                states.get(tp),
            )  # fmt: skip
            continue
        topic = topics.get(tp.topic)
        current = topic.partitions.get(tp.partition) if topic is not None else None
        out[tp] = PartitionProgress(
            tp, target, current.replicas if current is not None else (), True
        )
    return out


def _isrs(
    port: ZkPort, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, tuple[int, ...]]:
    out: dict[TopicPartition, tuple[int, ...]] = {}
    state_paths = [paths.partition_state_path(tp.topic, tp.partition) for tp in partitions]
    for tp, read in zip(partitions, port.get_many(state_paths), strict=True):
        if read.error is not None or read.stat is None:
            continue
        try:
            out[tp] = codecs.decode_partition_state(
                read.data, read.stat.version, read.path
            ).leader_and_isr.isr
        except MalformedZnodeError:
            continue
    return out


def format_progress(
    progress: Mapping[TopicPartition, PartitionProgress], *, details: bool = True
) -> str:
    lines = ["Status of partition reassignment:"]
    for tp in sorted(progress, key=tp_key):
        p = progress[tp]
        lines.append(p.status_line())
        detail = p.detail_line() if details else None
        if detail:
            lines.append(detail)
    return "\n".join(lines)


def format_ongoing(ongoing: Mapping[TopicPartition, ReplicaAssignment]) -> str:
    """Kafka's ``curReassignmentsToString`` (``--list``)."""
    if not ongoing:
        return "No partition reassignments found."
    lines = ["Current partition reassignments:"]
    for tp in sorted(ongoing, key=tp_key):
        ra = ongoing[tp]
        line = f"{tp}: replicas: {_ids(ra.replicas)}."
        if ra.adding_replicas:
            line += f" adding: {_ids(ra.adding_replicas)}."
        if ra.removing_replicas:
            line += f" removing: {_ids(ra.removing_replicas)}."
        lines.append(line)
    return "\n".join(lines)
