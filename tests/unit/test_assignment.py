"""Replica assignment: Kafka's AdminRackAwareTest / AdminZkClientTest / AddPartitionsTest
expectations, plus hypothesis properties of the algorithm."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.admin.assignment import (
    BrokerMetadata,
    IncompleteRackInfoError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    RackAwareMode,
    assign_replicas_to_brokers,
    broker_metadatas,
    rack_alternated_broker_list,
)
from controller.core.model import Broker, EndPoint


def unracked(*ids: int) -> list[BrokerMetadata]:
    return [BrokerMetadata(i) for i in ids]


def racked(rack_map: Mapping[int, str]) -> list[BrokerMetadata]:
    return [BrokerMetadata(i, rack) for i, rack in sorted(rack_map.items())]


def check_distribution(
    assignment: Mapping[int, list[int]],
    rack_map: Mapping[int, str],
    partitions: int,
    rf: int,
    *,
    rack_aware: bool = True,
    leaders_even: bool = True,
    replicas_even: bool = True,
) -> None:
    """Kafka's RackAwareTest.checkReplicaDistribution."""
    n = len(rack_map)
    assert sorted(assignment) == list(range(partitions))
    for replicas in assignment.values():
        assert len(set(replicas)) == len(replicas) == rf
    if rack_aware:
        assert [len({rack_map[b] for b in r}) for r in assignment.values()] == [rf] * partitions
    if leaders_even:
        leaders = Counter(r[0] for r in assignment.values())
        assert sorted(leaders.values()) == [partitions // n] * n
    if replicas_even:
        counts = Counter(b for r in assignment.values() for b in r)
        assert sorted(counts.values()) == [partitions * rf // n] * n


# --- Kafka's fixed expectations ---------------------------------------------------------------


def test_rack_unaware_classic_five_brokers_ten_partitions() -> None:
    # AdminRackAwareTest.testReplicaAssignment
    expected = {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }
    assert (
        assign_replicas_to_brokers(unracked(0, 1, 2, 3, 4), 10, 3, fixed_start_index=0) == expected
    )


def test_rack_unaware_uses_broker_ids_not_positions() -> None:
    # Same positions as the classic case, other ids: the mapping is positional.
    ids = [10, 20, 30, 40, 50]
    got = assign_replicas_to_brokers(unracked(*ids), 10, 3, fixed_start_index=0)
    assert got[5] == [10, 30, 40]
    assert got[9] == [50, 20, 30]


def test_rack_alternated_broker_list() -> None:
    rack_map = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(rack_map) == [0, 3, 1, 5, 4, 2]
    del rack_map[5]
    assert rack_alternated_broker_list(rack_map) == [0, 3, 1, 4, 2]
    assert rack_alternated_broker_list({}) == []


def test_rack_aware_fixed_start_expected_map() -> None:
    # AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers
    rack_map = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    got = assign_replicas_to_brokers(
        racked(rack_map), 7, 3, fixed_start_index=0, start_partition_id=0
    )
    assert got == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],  # second round: followers shifted, not a repeat of partition 0
    }


def test_add_partitions_placement_all_servers() -> None:
    # AddPartitionsTest.testReplicaPlacementAllServers: partition 0 is [2,3,0,1] on brokers
    # 0-3, so the start index is 2 (first broker id >= 2) and new ids start at 1.
    got = assign_replicas_to_brokers(
        unracked(0, 1, 2, 3), 6, 4, fixed_start_index=2, start_partition_id=1
    )
    assert [r[0] for r in got.values()] == [3, 0, 1, 2, 3, 0]
    assert got[1] == [3, 2, 0, 1]
    assert got[4] == [2, 3, 0, 1]
    assert all(sorted(r) == [0, 1, 2, 3] for r in got.values())


def test_add_partitions_placement_partial_servers() -> None:
    # AddPartitionsTest.testReplicaPlacementPartialServers: partition 0 is [1,2].
    got = assign_replicas_to_brokers(
        unracked(0, 1, 2, 3), 2, 2, fixed_start_index=1, start_partition_id=1
    )
    assert got == {1: [2, 0], 2: [3, 1]}


# --- Kafka's rack-aware distribution tests ------------------------------------------------------

SIX = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


@pytest.mark.parametrize("seed", range(20))
def test_rack_aware_six_partitions_random_start(seed: int) -> None:
    got = assign_replicas_to_brokers(racked(SIX), 6, 3, rng=random.Random(seed))
    check_distribution(got, SIX, 6, 3)


def test_rack_aware_fixed_start_two() -> None:
    check_distribution(
        assign_replicas_to_brokers(racked(SIX), 6, 3, fixed_start_index=2), SIX, 6, 3
    )


def test_rack_aware_uneven_replicas() -> None:
    got = assign_replicas_to_brokers(racked(SIX), 13, 3, fixed_start_index=0, start_partition_id=0)
    check_distribution(got, SIX, 13, 3, leaders_even=False, replicas_even=False)


@pytest.mark.parametrize("seed", range(10))
def test_rack_aware_uneven_racks(seed: int) -> None:
    rack_map = {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    got = assign_replicas_to_brokers(racked(rack_map), 12, 3, rng=random.Random(seed))
    check_distribution(got, rack_map, 12, 3, replicas_even=False)


@pytest.mark.parametrize(("partitions", "seed"), [(12, 1), (12, 2), (6, 3), (6, 4)])
def test_rack_aware_two_replicas(partitions: int, seed: int) -> None:
    got = assign_replicas_to_brokers(racked(SIX), partitions, 2, rng=random.Random(seed))
    check_distribution(got, SIX, partitions, 2)


def test_rack_aware_expansion_from_partition_twelve() -> None:
    rack_map = {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}
    got = assign_replicas_to_brokers(
        racked(rack_map), 12, 2, start_partition_id=12, rng=random.Random(7)
    )
    assert sorted(got) == list(range(12, 24))
    check_distribution({p - 12: r for p, r in got.items()}, rack_map, 12, 2)


def test_rack_aware_three_brokers_three_racks() -> None:
    rack_map = {0: "rack1", 1: "rack2", 4: "rack3"}
    got = assign_replicas_to_brokers(racked(rack_map), 3, 2, rng=random.Random(3))
    check_distribution(got, rack_map, 3, 2)


def test_rack_aware_large_number_of_partitions() -> None:
    rack_map = {
        0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1",
        6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack1", 11: "rack3",
    }  # fmt: skip
    got = assign_replicas_to_brokers(racked(rack_map), 96, 3, rng=random.Random(11))
    check_distribution(got, rack_map, 96, 3)


def test_more_replicas_than_racks_covers_every_rack() -> None:
    rack_map = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    got = assign_replicas_to_brokers(racked(rack_map), 6, 5, rng=random.Random(5))
    assert all(len(r) == 5 and len(set(r)) == 5 for r in got.values())
    assert all(len({rack_map[b] for b in r}) == 3 for r in got.values())


def test_less_replicas_than_racks_uses_distinct_racks() -> None:
    rack_map = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    got = assign_replicas_to_brokers(racked(rack_map), 6, 2, rng=random.Random(6))
    assert all(len({rack_map[b] for b in r}) == 2 for r in got.values())


def test_single_rack() -> None:
    rack_map = dict.fromkeys(range(6), "rack1")
    got = assign_replicas_to_brokers(racked(rack_map), 6, 3, rng=random.Random(8))
    assert all(len(set(r)) == 3 for r in got.values())
    assert Counter(r[0] for r in got.values()) == dict.fromkeys(range(6), 1)


def test_skip_broker_with_replica_already_assigned() -> None:
    # RF 4 over racks a, b, c: after one replica per rack, the fourth must be a new broker.
    rack_map = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    got = assign_replicas_to_brokers(racked(rack_map), 6, 4, fixed_start_index=2)
    check_distribution(
        got, rack_map, 6, 4, rack_aware=False, leaders_even=False, replicas_even=False
    )
    assert all(len({rack_map[b] for b in r}) == 3 for r in got.values())


# --- errors -------------------------------------------------------------------------------------


def test_replication_factor_zero_and_too_large() -> None:
    brokers = unracked(0, 1, 2, 3, 4)
    with pytest.raises(InvalidReplicationFactorError, match="larger than 0, got 0"):
        assign_replicas_to_brokers(brokers, 10, 0)
    with pytest.raises(
        InvalidReplicationFactorError, match=r"replication factor 6 .* brokers \(5: 0, 1, 2, 3, 4\)"
    ):
        assign_replicas_to_brokers(brokers, 10, 6)
    with pytest.raises(InvalidReplicationFactorError, match=r"\(0\)"):
        assign_replicas_to_brokers([], 1, 1)


@pytest.mark.parametrize("partitions", [0, -3])
def test_partitions_must_be_positive(partitions: int) -> None:
    with pytest.raises(InvalidPartitionsError, match=f"got {partitions}"):
        assign_replicas_to_brokers(unracked(0, 1), partitions, 1)


def test_non_integer_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="number of partitions"):
        assign_replicas_to_brokers(unracked(0, 1), True, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="replication factor"):
        assign_replicas_to_brokers(unracked(0, 1), 1, 1.0)  # type: ignore[arg-type]


def test_duplicate_broker_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="duplicate broker ids"):
        assign_replicas_to_brokers(unracked(0, 0, 1), 1, 1)


def test_partial_rack_information_is_an_error() -> None:
    brokers = [BrokerMetadata(0, "r1"), BrokerMetadata(1), BrokerMetadata(2, "r2")]
    with pytest.raises(IncompleteRackInfoError, match=r"broker\(s\) 1 have no rack"):
        assign_replicas_to_brokers(brokers, 3, 2)


def broker(i: int, rack: str | None = None) -> Broker:
    return Broker(i, (EndPoint("PLAINTEXT", f"h{i}", 9092),), rack)


def test_broker_metadatas_modes() -> None:
    # AdminZkClientTest.testGetBrokerMetadatas: broker 4 has no rack.
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack1", 5: "rack3"}
    brokers = [broker(i, racks.get(i)) for i in (5, 3, 1, 0, 4, 2)]
    for mode in (RackAwareMode.DISABLED, RackAwareMode.SAFE):
        assert broker_metadatas(brokers, mode) == unracked(0, 1, 2, 3, 4, 5)
    with pytest.raises(
        IncompleteRackInfoError, match=r"broker\(s\) 4 have no rack while 0, 1, 2, 3, 5"
    ):
        broker_metadatas(brokers, RackAwareMode.ENFORCED)
    full = [b for b in brokers if b.id != 4]
    assert broker_metadatas(full, RackAwareMode.ENFORCED) == racked(racks)
    assert broker_metadatas(full, RackAwareMode.SAFE) == racked(racks)
    assert broker_metadatas(full, RackAwareMode.DISABLED) == unracked(0, 1, 2, 3, 5)


def test_random_start_comes_from_the_injected_rng() -> None:
    brokers = unracked(0, 1, 2, 3, 4)
    a = assign_replicas_to_brokers(brokers, 10, 3, rng=random.Random(42))
    b = assign_replicas_to_brokers(brokers, 10, 3, rng=random.Random(42))
    assert a == b

    class Fixed(random.Random):
        def randrange(self, *args: object, **kwargs: object) -> int:  # type: ignore[override]
            return 3

    # Start index and shift both 3: the same as fixed_start_index=3.
    assert assign_replicas_to_brokers(brokers, 10, 3, rng=Fixed()) == assign_replicas_to_brokers(
        brokers, 10, 3, fixed_start_index=3
    )


# --- properties -----------------------------------------------------------------------------------


@st.composite
def rack_unaware_case(draw: st.DrawFn) -> tuple[list[BrokerMetadata], int, int, int, int]:
    ids = draw(st.lists(st.integers(0, 1000), min_size=1, max_size=12, unique=True))
    rf = draw(st.integers(1, len(ids)))
    partitions = draw(st.integers(1, 60))
    start_index = draw(st.integers(-1, 2 * len(ids)))
    start_partition = draw(st.integers(-1, 40))
    return unracked(*sorted(ids)), partitions, rf, start_index, start_partition


@settings(max_examples=300, deadline=None)
@given(rack_unaware_case(), st.randoms(use_true_random=False))
def test_property_rack_unaware(
    case: tuple[list[BrokerMetadata], int, int, int, int], rng: random.Random
) -> None:
    brokers, partitions, rf, start_index, start_partition = case
    got = assign_replicas_to_brokers(
        brokers, partitions, rf, fixed_start_index=start_index,
        start_partition_id=start_partition, rng=rng,
    )  # fmt: skip
    first = max(0, start_partition)
    assert sorted(got) == list(range(first, first + partitions))
    ids = {b.id for b in brokers}
    for replicas in got.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= ids
    # Preferred leaders go round-robin: counts differ by at most one.
    leaders = Counter(r[0] for r in got.values())
    counts = [leaders.get(b, 0) for b in ids]
    assert max(counts) - min(counts) <= 1
    # Whole rounds starting at a round boundary give every broker the same replica count.
    if first % len(brokers) == 0 and partitions % len(brokers) == 0:
        per_broker = Counter(b for r in got.values() for b in r)
        assert set(per_broker.values()) == {partitions * rf // len(brokers)}


@st.composite
def rack_aware_case(draw: st.DrawFn) -> tuple[dict[int, str], int, int, int]:
    ids = draw(st.lists(st.integers(0, 500), min_size=1, max_size=12, unique=True))
    racks = draw(st.lists(st.sampled_from("abcde"), min_size=len(ids), max_size=len(ids)))
    rack_map = dict(zip(ids, racks, strict=True))
    rf = draw(st.integers(1, len(ids)))
    partitions = draw(st.integers(1, 60))
    start_index = draw(st.integers(-1, 2 * len(ids)))
    return rack_map, partitions, rf, start_index


@settings(max_examples=300, deadline=None)
@given(rack_aware_case(), st.randoms(use_true_random=False))
def test_property_rack_aware(
    case: tuple[dict[int, str], int, int, int], rng: random.Random
) -> None:
    rack_map, partitions, rf, start_index = case
    got = assign_replicas_to_brokers(
        racked(rack_map), partitions, rf, fixed_start_index=start_index, rng=rng
    )
    num_racks = len(set(rack_map.values()))
    assert sorted(got) == list(range(partitions))
    for replicas in got.values():
        assert len(replicas) == len(set(replicas)) == rf
        assert set(replicas) <= set(rack_map)
        # Each partition spans min(RF, racks) racks, and its first replicas take new racks.
        assert len({rack_map[b] for b in replicas}) == min(rf, num_racks)
        head = replicas[: min(rf, num_racks)]
        assert len({rack_map[b] for b in head}) == len(head)
    leaders = Counter(r[0] for r in got.values())
    counts = [leaders.get(b, 0) for b in rack_map]
    assert max(counts) - min(counts) <= 1


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.randoms(use_true_random=False))
def test_property_rack_aware_perfect_balance(
    num_racks: int, per_rack: int, rounds: int, rng: random.Random
) -> None:
    # Kafka's guarantee: RF = number of racks, equal racks, whole rounds -> even everything.
    rack_map = {r * per_rack + i: f"rack{r}" for r in range(num_racks) for i in range(per_rack)}
    n = len(rack_map)
    got = assign_replicas_to_brokers(racked(rack_map), n * rounds, num_racks, rng=rng)
    check_distribution(got, rack_map, n * rounds, num_racks)
