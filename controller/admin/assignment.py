"""Kafka's replica assignment for new topics and partitions (``assignReplicasToBrokers``).

Two goals, as in Kafka: spread replicas (and preferred leaders) evenly over the brokers, and
spread each broker's followers over the other brokers; with rack information, also put the
replicas of a partition on distinct racks while racks without a replica remain.

- Rack-unaware: the first replica of partition ``p`` is ``brokers[(p + start) % n]``
  (round-robin from a random start); the others follow at an increasing shift that grows by one
  every ``n`` partitions, so that partition ``n + i`` does not repeat partition ``i``.
- Rack-aware: the same over a rack-alternated broker list (one broker from each rack in turn,
  racks in name order, brokers in id order within a rack); a follower candidate is skipped while
  its rack, or the broker itself, already holds a replica and some rack (broker) does not.

The results equal Kafka's for equal inputs, including ``fixed_start_index`` /
``start_partition_id`` (``-1`` = random / 0, as in Kafka). Randomness comes from an injectable
``random.Random``. The broker order given is significant for rack-unaware assignment: callers
pass brokers sorted by id, as Kafka's ``getBrokerMetadatas`` does (``broker_metadatas`` here).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from controller.core.model import Broker


class AdminError(Exception):
    """Base class of every error an admin operation reports (the CLI prints its message)."""


class InvalidReplicationFactorError(AdminError):
    """Kafka's ``InvalidReplicationFactorException``."""


class InvalidPartitionsError(AdminError):
    """Kafka's ``InvalidPartitionsException``."""


class InvalidReplicaAssignmentError(AdminError):
    """Kafka's ``InvalidReplicaAssignmentException``: a bad manual assignment."""


class IncompleteRackInfoError(AdminError):
    """Some brokers have a rack and some do not (Kafka's ``AdminOperationException``)."""


class RackAwareMode(enum.Enum):
    """Kafka's ``RackAwareMode``: how broker racks are used when assigning replicas."""

    ENFORCED = "enforced"  # use racks; fail if only some brokers have one (the CLI default)
    SAFE = "safe"  # use racks only if every broker has one
    DISABLED = "disabled"  # ignore racks (--disable-rack-aware)


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    """A broker as the assignment sees it (Kafka's ``BrokerMetadata``)."""

    id: int
    rack: str | None = None


def broker_metadatas(
    brokers: Iterable[Broker], mode: RackAwareMode = RackAwareMode.ENFORCED
) -> list[BrokerMetadata]:
    """Kafka's ``AdminZkClient.getBrokerMetadatas``: brokers sorted by id, racks per ``mode``."""
    all_brokers = sorted(brokers, key=lambda b: b.id)
    with_rack = [b.id for b in all_brokers if b.rack is not None]
    partial = 0 < len(with_rack) < len(all_brokers)
    if mode is RackAwareMode.ENFORCED and partial:
        without = [b.id for b in all_brokers if b.rack is None]
        raise IncompleteRackInfoError(
            f"not all brokers have rack information: broker(s) {_ids(without)} have no rack "
            f"while {_ids(with_rack)} do; use --disable-rack-aware to assign replicas without "
            "rack information"
        )
    use_racks = mode is RackAwareMode.ENFORCED or (mode is RackAwareMode.SAFE and not partial)
    return [BrokerMetadata(b.id, b.rack if use_racks else None) for b in all_brokers]


def assign_replicas_to_brokers(
    brokers: Sequence[BrokerMetadata],
    partitions: int,
    replication_factor: int,
    *,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Partition id -> replica list (preferred leader first), for ``partitions`` partitions
    numbered from ``max(0, start_partition_id)``.

    Raises ``InvalidPartitionsError`` (partitions <= 0), ``InvalidReplicationFactorError``
    (RF <= 0 or RF > number of brokers) and ``IncompleteRackInfoError`` (some brokers have a
    rack, some do not). ``fixed_start_index`` >= 0 fixes both the start index and the initial
    follower shift, as in Kafka; otherwise both are drawn from ``rng``.
    """
    _check_int(partitions, "number of partitions")
    _check_int(replication_factor, "replication factor")
    _check_int(fixed_start_index, "fixed start index")
    _check_int(start_partition_id, "start partition id")
    if partitions <= 0:
        raise InvalidPartitionsError(
            f"number of partitions must be larger than 0, got {partitions}"
        )
    if replication_factor <= 0:
        raise InvalidReplicationFactorError(
            f"replication factor must be larger than 0, got {replication_factor}"
        )
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the number of available "
            f"brokers ({len(brokers)}{': ' + _ids(b.id for b in brokers) if brokers else ''})"
        )
    ids = [b.id for b in brokers]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate broker ids in {ids}")
    rng = rng if rng is not None else random.Random()
    if all(b.rack is None for b in brokers):
        return _rack_unaware(
            partitions, replication_factor, ids, fixed_start_index, start_partition_id, rng
        )
    without = [b.id for b in brokers if b.rack is None]
    if without:
        raise IncompleteRackInfoError(
            f"not all brokers have rack information for rack-aware replica assignment: "
            f"broker(s) {_ids(without)} have no rack"
        )
    racks = {b.id: b.rack for b in brokers if b.rack is not None}
    return _rack_aware(
        partitions, replication_factor, racks, fixed_start_index, start_partition_id, rng
    )


def rack_alternated_broker_list(broker_racks: Mapping[int, str]) -> list[int]:
    """Brokers taken one per rack in turn (racks sorted by name, brokers by id within a rack).

    ``{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}`` gives
    ``[0, 3, 1, 5, 4, 2]``.
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker)
    columns = [sorted(by_rack[rack]) for rack in sorted(by_rack)]
    depth = max((len(c) for c in columns), default=0)
    # Row by row: the i-th broker of every rack that still has one.
    return [column[i] for i in range(depth) for column in columns if i < len(column)]


def _java_split(text: str, sep: str) -> list[str]:
    """Java's ``String.split``, which Kafka's tool uses: trailing empty fields are dropped
    (``"0:1,1:2,"`` is two partitions)."""
    if sep not in text:
        return [text]  # Java too: no match gives the string itself, even an empty one
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_replica_assignment(text: str) -> dict[int, tuple[int, ...]]:
    """Kafka's ``--replica-assignment``: partitions split by ``,``, replicas by ``:``.

    ``"0:1,1:2"`` -> ``{0: (0, 1), 1: (1, 2)}``. Raises ``InvalidReplicaAssignmentError``.
    """
    entries = _java_split(text, ",")
    if not text.strip() or not entries:
        raise InvalidReplicaAssignmentError("--replica-assignment is empty")
    out: dict[int, tuple[int, ...]] = {}
    for partition, entry in enumerate(entries):
        replicas: list[int] = []
        for item in _java_split(entry, ":"):
            item = item.strip()
            if not item.isascii() or not item.isdigit():
                raise InvalidReplicaAssignmentError(
                    f"--replica-assignment: {item!r} in partition {partition} ({entry.strip()!r}) "
                    "is not a broker id (expected e.g. 0:1,1:2)"
                )
            replicas.append(int(item))
        out[partition] = tuple(replicas)
    return out


def validate_replica_assignment(
    assignment: Mapping[int, Sequence[int]],
    registered: Iterable[int],
    *,
    first_partition: int = 0,
    count: int | None = None,
    expected_rf: int | None = None,
) -> dict[int, tuple[int, ...]]:
    """Check a manual assignment; return it sorted, with tuple replica lists.

    Each partition needs distinct, registered brokers; all partitions the same number of
    replicas (``expected_rf`` if given: an existing topic's); and the partition ids must be
    exactly ``first_partition`` .. ``first_partition + count - 1`` (``count`` defaults to the
    number of entries, so a new topic's ids must be 0..N-1, as Kafka requires).
    Raises ``InvalidReplicaAssignmentError`` naming the partition and the problem.
    """
    out: dict[int, tuple[int, ...]] = {}
    known = set(registered)
    for p, replicas in assignment.items():
        if type(p) is not int or p < 0:
            raise InvalidReplicaAssignmentError(f"partition id {p!r} is not a non-negative integer")
        reps = tuple(replicas)
        if not reps:
            raise InvalidReplicaAssignmentError(f"partition {p} has no replicas")
        if any(type(b) is not int or b < 0 for b in reps):
            raise InvalidReplicaAssignmentError(f"partition {p}: {list(reps)} are not broker ids")
        if len(set(reps)) != len(reps):
            dup = next(b for i, b in enumerate(reps) if b in reps[:i])
            raise InvalidReplicaAssignmentError(
                f"partition {p} lists broker {dup} more than once: {list(reps)}"
            )
        unknown = [b for b in reps if b not in known]
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"partition {p}: broker(s) {_ids(unknown)} not registered in ZooKeeper "
                f"(registered brokers: {_ids(sorted(known)) or 'none'})"
            )
        out[p] = reps
    out = dict(sorted(out.items()))
    if out:
        first_p = next(iter(out))
        rf = expected_rf if expected_rf is not None else len(out[first_p])
        odd = {p: len(r) for p, r in out.items() if len(r) != rf}
        if odd:
            base = (
                f"partition 0 has {rf}"
                if expected_rf is not None
                else (f"partition {first_p} has {rf}")
            )
            raise InvalidReplicaAssignmentError(
                f"inconsistent replication factor between partitions: {base} replicas while "
                f"partition(s) {_ids(odd)} have {_ids(odd.values())}"
            )
    wanted = list(range(first_partition, first_partition + (len(out) if count is None else count)))
    if list(out) != wanted or not out:
        if count is None:
            problem = "partitions should be a consecutive 0-based integer sequence"
        elif len(out) != count:
            problem = (
                f"increasing the number of partitions by {count} "
                f"but {len(out)} assignments provided"
            )
        else:
            problem = f"the new partitions are {_ids(wanted)}"
        raise InvalidReplicaAssignmentError(f"{problem}; got partition(s) {_ids(out) or 'none'}")
    return out


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    # Kafka's replicaIndex: the j-th follower sits 1..n-1 places after the first replica.
    return (first + 1 + (shift + j) % (n - 1)) % n


def _start(fixed_start_index: int, n: int, rng: random.Random) -> tuple[int, int]:
    if fixed_start_index >= 0:
        return fixed_start_index, fixed_start_index
    # Two independent draws, like Kafka's two rand.nextInt calls.
    return rng.randrange(n), rng.randrange(n)


def _rack_unaware(
    partitions: int,
    rf: int,
    brokers: list[int],
    fixed_start_index: int,
    start_partition_id: int,
    rng: random.Random,
) -> dict[int, list[int]]:
    n = len(brokers)
    start, shift = _start(fixed_start_index, n, rng)
    out: dict[int, list[int]] = {}
    for partition in range(max(0, start_partition_id), max(0, start_partition_id) + partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        out[partition] = [brokers[first]] + [
            brokers[_replica_index(first, shift, j, n)] for j in range(rf - 1)
        ]
    return out


def _rack_aware(
    partitions: int,
    rf: int,
    racks: Mapping[int, str],
    fixed_start_index: int,
    start_partition_id: int,
    rng: random.Random,
) -> dict[int, list[int]]:
    arranged = rack_alternated_broker_list(racks)
    n = len(arranged)
    num_racks = len(set(racks.values()))
    start, shift = _start(fixed_start_index, n, rng)
    out: dict[int, list[int]] = {}
    for partition in range(max(0, start_partition_id), max(0, start_partition_id) + partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {racks[leader]}
        brokers_used = {leader}
        k = 0
        for _ in range(rf - 1):
            # Terminates: n - 1 consecutive k visit every broker but the leader, and RF <= n
            # guarantees an unused broker (on an unused rack while one remains).
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                k += 1
                rack = racks[broker]
                if (rack not in racks_used or len(racks_used) == num_racks) and (
                    broker not in brokers_used or len(brokers_used) == n
                ):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        out[partition] = replicas
    return out


def _check_int(value: object, what: str) -> None:
    if type(value) is not int:  # `type is`: True is not a partition count
        raise TypeError(f"{what} must be an integer, got {value!r}")


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(str(i) for i in ids)
