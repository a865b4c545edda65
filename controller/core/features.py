"""Feature versioning (KIP-584) and producer-id blocks (KIP-730): the rules, as pure functions.

Finalized features are cluster-wide version levels stored in ``/feature`` (``{name: level}``);
each broker advertises the range of levels it supports in its registration
(``{name: (min, max)}``). A broker that does not support a finalized level is *incompatible*
and is kept out of the live set (reference §2.12).

Kafka validates a level against the controller broker's own supported range. This controller
is not a broker, so a feature is "supported" when the live brokers advertise it: at least one
must, and every live broker must support the new level (Kafka's second check).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from controller.api.errors import ApiError, Errors
from controller.zk.codecs import INT16_MAX, INT64_MAX, PRODUCER_ID_BLOCK_SIZE, ProducerIdBlock

#: What a broker advertises: feature name -> (min, max) supported level.
SupportedFeatures = Mapping[str, tuple[int, int]]

MAX_FEATURE_LEVEL = INT16_MAX  # the wire's int16


class UpgradeType(enum.IntEnum):
    """Kafka's ``FeatureUpdate.UpgradeType`` (its int8 wire values)."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3

    @classmethod
    def from_code(cls, code: int) -> UpgradeType:
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class FeatureUpdateItem:
    feature: str
    max_version_level: int
    upgrade_type: UpgradeType = UpgradeType.UPGRADE

    @property
    def is_delete_request(self) -> bool:
        return self.max_version_level < 1 and self.upgrade_type is not UpgradeType.UPGRADE


def incompatible_features(
    supported: SupportedFeatures, finalized: Mapping[str, int]
) -> dict[str, int]:
    """Kafka's ``BrokerFeatures.incompatibleFeatures``: the finalized features a broker does not
    know, or whose level is outside the range it supports."""
    out: dict[str, int] = {}
    for name, level in finalized.items():
        rng = supported.get(name)
        if rng is None or not rng[0] <= level <= rng[1]:
            out[name] = level
    return out


def partition_on_feature_compatibility(
    brokers: Mapping[int, SupportedFeatures], finalized: Mapping[str, int] | None
) -> tuple[list[int], list[int]]:
    """(compatible, incompatible) broker ids, each sorted. With no finalized features (``None``
    or empty) every broker is compatible."""
    compatible: list[int] = []
    incompatible: list[int] = []
    for broker_id in sorted(brokers):
        bad = finalized and incompatible_features(brokers[broker_id], finalized)
        (incompatible if bad else compatible).append(broker_id)
    return compatible, incompatible


def _new_level_or_error(
    update: FeatureUpdateItem, live: Mapping[int, SupportedFeatures]
) -> int | ApiError:
    """Kafka's ``newFinalizedVersionOrIncompatibilityError`` for a non-delete update."""
    level = update.max_version_level
    advertisers = [b for b, features in live.items() if update.feature in features]
    if not advertisers:
        return ApiError(
            Errors.INVALID_REQUEST,
            f"Could not apply finalized feature update because the provided feature "
            f"{update.feature!r} is not supported by any live broker.",
        )
    if level > MAX_FEATURE_LEVEL:
        return ApiError(
            Errors.INVALID_REQUEST,
            f"versionLevel:{level} is above the largest level, {MAX_FEATURE_LEVEL}.",
        )
    refusing = sorted(
        b
        for b, features in live.items()
        if incompatible_features(features, {update.feature: level})
    )
    if refusing:
        return ApiError(
            Errors.INVALID_REQUEST,
            "Could not apply finalized feature update because brokers were found to have "
            f"incompatible versions for the feature: {update.feature} level {level} is not "
            f"supported by broker(s) {', '.join(map(str, refusing))}.",
        )
    return level


def validate_feature_update(
    update: FeatureUpdateItem, existing: int | None, live: Mapping[int, SupportedFeatures]
) -> int | ApiError | None:
    """Kafka's ``validateFeatureUpdate``: the new level, ``None`` to delete the feature, or
    the error. ``existing`` is the feature's finalized level (None: not finalized); ``live``
    maps every live broker to what it supports."""
    if not update.feature:
        return ApiError(Errors.INVALID_REQUEST, "Feature name can not be empty.")
    if update.upgrade_type is UpgradeType.UNKNOWN:
        return ApiError(Errors.INVALID_REQUEST, "Received unknown upgrade type.")
    if update.is_delete_request:
        if existing is None:
            return ApiError(
                Errors.INVALID_REQUEST, "Can not delete non-existing finalized feature."
            )
        return None
    level = update.max_version_level
    if level < 1:
        return ApiError(
            Errors.INVALID_REQUEST,
            f"Can not provide versionLevel: {level} less than 1 without setting the SAFE "
            "downgradeType in the request.",
        )
    if existing is not None:
        safe = update.upgrade_type is UpgradeType.SAFE_DOWNGRADE
        if level == existing:
            verb = "downgrade" if safe else "upgrade"
            return ApiError(
                Errors.INVALID_REQUEST,
                f"Can not {verb} a finalized feature from existing versionLevel:{existing} "
                "to the same value.",
            )
        if level < existing and not safe:
            return ApiError(
                Errors.INVALID_REQUEST,
                f"Can not downgrade finalized feature from existing versionLevel:{existing} "
                f"to provided versionLevel:{level} without setting the downgradeType to SAFE "
                "in the request.",
            )
        if level > existing and update.upgrade_type is not UpgradeType.UPGRADE:
            return ApiError(
                Errors.INVALID_REQUEST,
                f"When the downgradeType is set to SAFE in the request, the provided "
                f"versionLevel:{level} can not be greater than existing versionLevel:"
                f"{existing}.",
            )
    return _new_level_or_error(update, live)


def apply_feature_updates(
    updates: Iterable[FeatureUpdateItem],
    existing: Mapping[str, int],
    live: Mapping[int, SupportedFeatures],
) -> tuple[dict[str, int], dict[str, ApiError | None]]:
    """Validate every update against ``existing`` (not against each other, as Kafka does);
    return the target features and each feature's outcome (None: valid).

    A feature named twice in one request is refused both times: which one should win is
    not something to guess.
    """
    items = list(updates)
    seen: dict[str, int] = {}
    for item in items:
        seen[item.feature] = seen.get(item.feature, 0) + 1
    target = dict(existing)
    results: dict[str, ApiError | None] = {}
    for item in items:
        if seen[item.feature] > 1:
            results[item.feature] = ApiError(
                Errors.INVALID_REQUEST, f"Feature {item.feature!r} is named more than once."
            )
            continue
        outcome = validate_feature_update(item, existing.get(item.feature), live)
        if isinstance(outcome, ApiError):
            results[item.feature] = outcome
            continue
        if outcome is None:
            target.pop(item.feature, None)
        else:
            target[item.feature] = outcome
        results[item.feature] = None
    return target, results


# -- producer ids ------------------------------------------------------------------------


class ProducerIdsExhaustedError(Exception):
    """The next block would pass the largest producer id (Kafka treats this as fatal)."""


def next_producer_id_block(current: ProducerIdBlock | None, broker_id: int) -> ProducerIdBlock:
    """Kafka's ``ZkProducerIdManager.getNewProducerIdBlock``: the block after ``current``
    (the first block, [0, 999], when none was allocated yet)."""
    if current is None:
        return ProducerIdBlock(broker_id, 0, PRODUCER_ID_BLOCK_SIZE - 1)
    if current.block_end > INT64_MAX - PRODUCER_ID_BLOCK_SIZE:
        raise ProducerIdsExhaustedError(
            f"every producer id has been allocated (the last block ends at {current.block_end})"
        )
    start = current.block_end + 1
    return ProducerIdBlock(broker_id, start, start + PRODUCER_ID_BLOCK_SIZE - 1)
