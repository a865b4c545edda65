"""Cluster-wide znodes the controller owns: ``/feature`` and ``/latest_producer_id_block``."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.zk import paths
from controller.zk.codecs._json import (
    INT16_MAX,
    bad,
    decimal_str,
    dumps,
    fail,
    int_field,
    load,
    typed_field,
    version_field,
)
from controller.zk.codecs.key_order import scala_mutable_order, scala_presized

FEATURE_STATUS_DISABLED = 0
FEATURE_STATUS_ENABLED = 1
PRODUCER_ID_BLOCK_SIZE = 1000


# --- /feature ---


@dataclass(frozen=True, slots=True)
class FeatureZNode:
    """Finalized features. ``features`` maps a name to (min, max) version levels.

    v1 stores both levels; v2 stores only the max, decoded as (max, max): since 3.3 a
    finalized feature is a single level and Kafka itself writes v1 as min = max = level.
    """

    version: int
    status: int
    features: dict[str, tuple[int, int]] = field(default_factory=dict, hash=False)

    def levels(self) -> dict[str, int]:
        return {name: hi for name, (_, hi) in self.features.items()}


# Kafka's FeatureZNode.encode: a mutable.Map of these three keys.
_FEATURE_ORDER = scala_mutable_order(("version", "status", "features"), scala_presized(3))


def encode_feature_znode(node: FeatureZNode) -> bytes:
    """Keys in Kafka's order; the features keep theirs (Kafka's for up to four features)."""
    if node.version == 1:
        features = {
            name: {"max_version_level": hi, "min_version_level": lo}
            for name, (lo, hi) in node.features.items()
        }
    elif node.version == 2:
        features = {name: {"max_version_level": hi} for name, (_, hi) in node.features.items()}
    else:
        raise ValueError(f"unsupported /feature version {node.version}")
    doc = {"version": node.version, "status": node.status, "features": features}
    return dumps({key: doc[key] for key in _FEATURE_ORDER})


def decode_feature_znode(data: bytes | None, path: str = paths.FEATURE) -> FeatureZNode:
    obj = load(data, path)
    version = version_field(obj, path, (1, 2))
    status = int_field(obj, "status", path, FEATURE_STATUS_DISABLED, FEATURE_STATUS_ENABLED)
    features: dict[str, tuple[int, int]] = {}
    for name, levels in typed_field(obj, "features", path, dict).items():
        where = f"features.{name}"
        if type(levels) is not dict:
            bad(path, where, 'an object {"max_version_level":..}', levels)
        if version == 1:
            lo = int_field(levels, "min_version_level", path, 1, INT16_MAX, f"{where}.")
            hi = int_field(levels, "max_version_level", path, lo, INT16_MAX, f"{where}.")
        else:
            lo = hi = int_field(levels, "max_version_level", path, 1, INT16_MAX, f"{where}.")
        features[name] = (lo, hi)
    return FeatureZNode(version, status, features)


# --- /latest_producer_id_block ---


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """The last allocated block of producer ids; ``block_end`` is inclusive."""

    broker: int
    block_start: int
    block_end: int

    @property
    def size(self) -> int:
        return self.block_end - self.block_start + 1


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    start, end = str(block.block_start), str(block.block_end)
    return dumps({"version": 1, "broker": block.broker, "block_start": start, "block_end": end})


def decode_producer_id_block(
    data: bytes | None, path: str = paths.LATEST_PRODUCER_ID_BLOCK
) -> ProducerIdBlock | None:
    """None when the znode has no data: Kafka creates it empty, before the first allocation."""
    if not data:
        return None
    obj = load(data, path)
    # No version check: Kafka's parseProducerIdBlockData never reads it.
    # Any int, as Kafka reads it: its ZooKeeper migration writes broker -1.
    broker = int_field(obj, "broker", path)
    start = decimal_str(obj, "block_start", path)
    end = decimal_str(obj, "block_end", path)
    if end < start:
        fail(path, "block_end", f"{end} is before block_start {start}")
    return ProducerIdBlock(broker, start, end)
