"""The order in which Kafka writes a JSON object's keys, so our znodes match its bytes.

Kafka's ZkData encoders build each document from a Scala map (``Map(...)`` keeps insertion
order up to four entries; ``mutable.Map`` is a hash table), a ``java.util.HashMap`` or a
``java.util.Properties``, and Jackson writes the keys in that collection's iteration order.
Readers ignore key order, but operators diff znodes and tools compare bytes, so the encoders
lay out their dicts in the order these functions compute. Each function replays its
collection's insertion and resizing rules (Scala 2.13, Java 17); the test vectors in
``tests/unit/kafka_json`` are Kafka's real bytes, produced with those libraries.

Not replayed, because Kafka's documents never reach them in practice: Java bins long enough
to be turned into trees (eight keys with one hash bucket).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TypeVar

_K = TypeVar("_K")
_V = TypeVar("_V")
_MASK = 0xFFFFFFFF


def java_string_hash(key: str) -> int:
    """``String.hashCode()``, as an unsigned 32-bit value (UTF-16 code units)."""
    h = 0
    if key.isascii():
        for ch in key:
            h = (31 * h + ord(ch)) & _MASK
        return h
    units = key.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & _MASK
    return h


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def _table_size_for(capacity: int) -> int:
    # scala.collection.mutable.HashMap.tableSizeFor
    return min(1 << (max(capacity - 1, 4).bit_length()), 1 << 30)


def scala_presized(entries: int) -> int:
    """Table size of ``mutable.Map(k1 -> v1, ...)`` built from ``entries`` pairs at once."""
    return _table_size_for(int((entries + 1) / 0.75)) if entries else 16


@lru_cache(maxsize=4096)
def _scala_improved_hash(key: str) -> int:
    h = java_string_hash(key)
    return h ^ (h >> 16)


def scala_mutable_order(keys: Sequence[str], table_size: int = 16) -> list[str]:
    """Iteration order of a Scala 2.13 ``mutable.HashMap`` after inserting ``keys`` in order.

    Buckets are ``hash & (size - 1)`` of the improved hash ``h ^ (h >>> 16)``; each bucket's
    list is kept sorted by that hash as a signed int (ties in insertion order); the table
    doubles before an insertion that would reach three quarters of it.
    """
    return _scala_mutable(keys, [_scala_improved_hash(k) for k in keys], table_size)


def scala_mutable_set_order(items: Sequence[_K], hash_of: Callable[[_K], int]) -> list[_K]:
    """``scala_mutable_order`` for a ``mutable.HashSet`` of any elements (``hash_of``: their
    Java ``hashCode``, unsigned)."""
    return _scala_mutable(items, [(h := hash_of(i)) ^ (h >> 16) for i in items], 16)


def _scala_mutable(items: Sequence[_K], hashes: Sequence[int], table_size: int) -> list[_K]:
    size = table_size
    for count in range(len(items)):
        if count + 1 >= int(size * 0.75):
            size *= 2
    mask = size - 1
    order = sorted(range(len(items)), key=lambda i: (hashes[i] & mask, _signed(hashes[i]), i))
    return [items[i] for i in order]


def _scala_improve(h: int) -> int:
    """``scala.collection.Hashing.improve``, the hash Scala's immutable HashMap/HashSet use."""
    h = (h + (_MASK ^ ((h << 9) & _MASK))) & _MASK
    h ^= h >> 14
    h = (h + ((h << 4) & _MASK)) & _MASK
    return h ^ (h >> 10)


def scala_immutable_order(items: Sequence[_K], hash_of: Callable[[_K], int]) -> list[_K]:
    """Iteration order of a Scala 2.13 immutable ``Map``/``Set`` built from ``items`` in
    order: up to four keep it (Map1-Map4); more are a CHAMP trie, iterated node by node (a
    node's own entries by 5-bit hash fragment, then its sub-nodes, depth first)."""
    if len(items) <= 4:
        return list(items)
    improved = [(_scala_improve(hash_of(item)), i) for i, item in enumerate(items)]
    return [items[i] for i in _champ(improved, 0)]


def _champ(entries: list[tuple[int, int]], shift: int) -> list[int]:
    if shift >= 32:  # equal hashes: a collision node, in insertion order
        return [i for _, i in entries]
    groups: dict[int, list[tuple[int, int]]] = {}
    for entry in entries:
        groups.setdefault((entry[0] >> shift) & 31, []).append(entry)
    order = [group[0][1] for _, group in sorted(groups.items()) if len(group) == 1]
    for _, group in sorted(groups.items()):
        if len(group) > 1:
            order.extend(_champ(group, shift + 5))
    return order


def topic_partition_hash(topic: str, partition: int) -> int:
    """Kafka's ``TopicPartition.hashCode()``, unsigned."""
    return (31 * (31 + partition) + java_string_hash(topic)) & _MASK


_TOPIC_HASH, _PARTITION_HASH = java_string_hash("topic"), java_string_hash("partition")


def partition_entry_hash(topic: str, partition: int) -> int:
    """``hashCode()`` of the Java map ``{"topic": t, "partition": p}`` Kafka lists partitions
    with (a map's hash is the sum of its entries' ``key.hashCode() ^ value.hashCode()``)."""
    return (
        (_TOPIC_HASH ^ java_string_hash(topic)) + (_PARTITION_HASH ^ (partition & _MASK))
    ) & _MASK


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a ``java.util.HashMap()`` after ``put``-ting ``keys`` in order."""
    size, threshold = 16, 12
    entries: list[tuple[int, str]] = []
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            continue
        seen.add(key)
        h = java_string_hash(key)
        entries.append((h ^ (h >> 16), key))
        if len(entries) > threshold:
            size, threshold = size * 2, threshold * 2
    # A resize splits each bin into two, keeping relative order: the final bin's order is the
    # insertion order of its keys.
    ordered = sorted(range(len(entries)), key=lambda i: (entries[i][0] & (size - 1), i))
    return [entries[i][1] for i in ordered]


def java_properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a ``java.util.Properties`` (a ``ConcurrentHashMap`` since Java 9).

    New keys go to the tail of their bin. At three quarters full the table doubles, and each
    bin is split the ConcurrentHashMap way: the longest tail run whose keys land in the same
    half is moved as is, and the nodes before it are pushed to the front of their half's list
    one by one, so their order reverses.
    """
    size, size_ctl, count = 16, 12, 0
    table: list[list[tuple[int, str]]] = [[] for _ in range(size)]
    for key in keys:
        h = java_string_hash(key)
        spread = (h ^ (h >> 16)) & 0x7FFFFFFF
        bin_ = table[spread & (size - 1)]
        if any(k == key for _, k in bin_):
            continue
        bin_.append((spread, key))
        count += 1
        if count >= size_ctl:
            table = _transfer(table, size)
            size *= 2
            size_ctl = size - (size >> 2)
    return [key for bin_ in table for _, key in bin_]


def _transfer(table: list[list[tuple[int, str]]], n: int) -> list[list[tuple[int, str]]]:
    new: list[list[tuple[int, str]]] = [[] for _ in range(2 * n)]
    for i, bin_ in enumerate(table):
        if not bin_:
            continue
        run_bit, last_run = bin_[0][0] & n, 0
        for j in range(1, len(bin_)):
            bit = bin_[j][0] & n
            if bit != run_bit:
                run_bit, last_run = bit, j
        low: list[tuple[int, str]] = [] if run_bit else list(bin_[last_run:])
        high: list[tuple[int, str]] = list(bin_[last_run:]) if run_bit else []
        for node in bin_[:last_run]:
            (high if node[0] & n else low).insert(0, node)
        new[i], new[i + n] = low, high
    return new


def ordered(doc: Mapping[str, _V], order: Iterable[str]) -> dict[str, _V]:
    """``doc`` as a dict whose keys follow ``order`` (keys of ``doc`` only)."""
    return {key: doc[key] for key in order if key in doc}
