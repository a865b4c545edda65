"""Feature versioning and producer-id rules (``controller.core.features``), exhaustively:
Kafka's ``validateFeatureUpdate`` case by case, broker compatibility, and the block
arithmetic of ``getNewProducerIdBlock``."""

from __future__ import annotations

import re

import pytest

from controller.api.errors import ApiError, Errors
from controller.core.features import (
    INT64_MAX,
    FeatureUpdateItem,
    ProducerIdsExhaustedError,
    UpgradeType,
    apply_feature_updates,
    incompatible_features,
    next_producer_id_block,
    partition_on_feature_compatibility,
    validate_feature_update,
)
from controller.zk.codecs import ProducerIdBlock

UP = UpgradeType.UPGRADE
SAFE = UpgradeType.SAFE_DOWNGRADE
UNSAFE = UpgradeType.UNSAFE_DOWNGRADE
# Three live brokers; broker 3 is older and supports only levels 1-2 of "f".
LIVE = {1: {"f": (1, 5), "g": (1, 1)}, 2: {"f": (1, 5), "g": (1, 1)}, 3: {"f": (1, 2)}}


def outcome(update: FeatureUpdateItem, existing: int | None, live=LIVE) -> object:
    result = validate_feature_update(update, existing, live)
    return (result.error.name, str(result)) if isinstance(result, ApiError) else result


def error_of(update: FeatureUpdateItem, existing: int | None, live=LIVE) -> str | None:
    result = validate_feature_update(update, existing, live)
    return result.error.name if isinstance(result, ApiError) else None


# -- validateFeatureUpdate -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("update", "existing", "expected"),
    [
        # New features: any valid level every live broker supports.
        (FeatureUpdateItem("f", 2, UP), None, 2),
        (FeatureUpdateItem("f", 1, UP), None, 1),
        # Raising a finalized level.
        (FeatureUpdateItem("f", 2, UP), 1, 2),
        # A safe downgrade to a lower level.
        (FeatureUpdateItem("f", 1, SAFE), 2, 1),
        # Deletion: a level below 1 with either downgrade type, of an existing feature.
        (FeatureUpdateItem("f", 0, SAFE), 2, None),
        (FeatureUpdateItem("f", -1, UNSAFE), 2, None),
    ],
)
def test_valid_updates(update: FeatureUpdateItem, existing: int | None, expected: object) -> None:
    assert outcome(update, existing) == expected


@pytest.mark.parametrize(
    ("update", "existing", "message"),
    [
        (FeatureUpdateItem("", 1, UP), None, "Feature name can not be empty."),
        (FeatureUpdateItem("f", 1, UpgradeType.UNKNOWN), None, "Received unknown upgrade type."),
        (FeatureUpdateItem("f", 0, SAFE), None, "Can not delete non-existing finalized feature."),
        (FeatureUpdateItem("f", 0, UP), 2, "less than 1 without setting the SAFE downgradeType"),
        (FeatureUpdateItem("f", -3, UP), None, "versionLevel: -3 less than 1"),
        (
            FeatureUpdateItem("f", 2, UP),
            2,
            "Can not upgrade a finalized feature from existing versionLevel:2 to the same value.",
        ),
        (FeatureUpdateItem("f", 2, SAFE), 2, "Can not downgrade a finalized feature"),
        (FeatureUpdateItem("f", 1, UP), 2, "without setting the downgradeType to SAFE"),
        # Kafka's ZooKeeper controller: UNSAFE only deletes; a lower level needs SAFE.
        (FeatureUpdateItem("f", 1, UNSAFE), 2, "without setting the downgradeType to SAFE"),
        (FeatureUpdateItem("f", 2, SAFE), 1, "can not be greater than existing versionLevel:1"),
        (FeatureUpdateItem("f", 2, UNSAFE), 1, "can not be greater than existing versionLevel:1"),
        # Support by the live brokers.
        (FeatureUpdateItem("h", 1, UP), None, "'h' is not supported by any live broker"),
        (FeatureUpdateItem("f", 3, UP), 2, "not supported by broker(s) 3"),
        (FeatureUpdateItem("g", 1, UP), None, "not supported by broker(s) 3"),
        (FeatureUpdateItem("f", 6, UP), None, "not supported by broker(s) 1, 2, 3"),
        (FeatureUpdateItem("f", 40000, UP), None, "above the largest level, 32767"),
    ],
)
def test_invalid_updates_say_why(
    update: FeatureUpdateItem, existing: int | None, message: str
) -> None:
    name, text = outcome(update, existing)  # type: ignore[misc]
    assert name == "INVALID_REQUEST"
    assert message in text


def test_no_live_broker_supports_nothing() -> None:
    assert error_of(FeatureUpdateItem("f", 1, UP), None, live={}) == "INVALID_REQUEST"


def test_a_level_below_a_broker_minimum_is_refused() -> None:
    live = {1: {"f": (2, 4)}}
    assert error_of(FeatureUpdateItem("f", 1, UP), None, live) == "INVALID_REQUEST"
    assert error_of(FeatureUpdateItem("f", 2, UP), None, live) is None


@pytest.mark.parametrize("kind", list(UpgradeType))
@pytest.mark.parametrize("existing", [None, 1, 2, 3])
@pytest.mark.parametrize("level", [-1, 0, 1, 2, 3])
def test_every_combination_follows_kafkas_rules(
    kind: UpgradeType, existing: int | None, level: int
) -> None:
    """The whole table, against an independent statement of the rules."""
    live = {1: {"f": (1, 3)}}
    got = validate_feature_update(FeatureUpdateItem("f", level, kind), existing, live)
    if kind is UpgradeType.UNKNOWN:
        valid: object = "error"
    elif level < 1 and kind is not UP:
        valid = None if existing is not None else "error"
    elif level < 1:
        valid = "error"
    elif existing is None:
        valid = level
    elif level == existing:
        valid = "error"
    elif level < existing:
        valid = level if kind is SAFE else "error"
    else:
        valid = level if kind is UP else "error"
    assert ("error" if isinstance(got, ApiError) else got) == valid


# -- apply -----------------------------------------------------------------------------------


def test_valid_updates_apply_and_invalid_ones_are_reported() -> None:
    target, results = apply_feature_updates(
        [
            FeatureUpdateItem("f", 2, UP),
            FeatureUpdateItem("g", 1, UP),  # broker 3 lacks g
            FeatureUpdateItem("old", 0, SAFE),
        ],
        {"old": 4, "kept": 1},
        LIVE,
    )
    assert target == {"f": 2, "kept": 1}
    assert results["f"] is None and results["old"] is None
    assert isinstance(results["g"], ApiError) and results["g"].error is Errors.INVALID_REQUEST


def test_a_feature_named_twice_is_refused_both_times() -> None:
    target, results = apply_feature_updates(
        [FeatureUpdateItem("f", 2, UP), FeatureUpdateItem("f", 1, UP)], {}, LIVE
    )
    assert target == {}
    assert isinstance(results["f"], ApiError)
    assert "more than once" in str(results["f"])


def test_updates_are_validated_against_the_existing_levels_not_each_other() -> None:
    # Deleting and re-adding in one request is not a sequence: each sees the existing map.
    target, results = apply_feature_updates([FeatureUpdateItem("f", 0, SAFE)], {"f": 2}, LIVE)
    assert (target, results) == ({}, {"f": None})


# -- broker compatibility -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("supported", "finalized", "incompatible"),
    [
        ({}, {}, {}),
        ({"f": (1, 3)}, {"f": 2}, {}),
        ({"f": (1, 3)}, {"f": 3}, {}),
        ({"f": (2, 3)}, {"f": 1}, {"f": 1}),
        ({"f": (1, 3)}, {"f": 4}, {"f": 4}),
        ({}, {"f": 1}, {"f": 1}),  # unknown to the broker
        ({"f": (1, 3), "g": (1, 1)}, {"f": 2}, {}),  # supporting more is fine
        ({"f": (1, 3)}, {"f": 2, "g": 1}, {"g": 1}),
    ],
)
def test_incompatible_features(supported: dict, finalized: dict, incompatible: dict) -> None:
    assert incompatible_features(supported, finalized) == incompatible


def test_partition_on_feature_compatibility() -> None:
    brokers = {3: {"f": (1, 2)}, 1: {"f": (1, 5)}, 2: {}}
    assert partition_on_feature_compatibility(brokers, {"f": 3}) == ([1], [2, 3])
    assert partition_on_feature_compatibility(brokers, {"f": 2}) == ([1, 3], [2])
    # Nothing finalized (or unknown): every broker is compatible.
    assert partition_on_feature_compatibility(brokers, {}) == ([1, 2, 3], [])
    assert partition_on_feature_compatibility(brokers, None) == ([1, 2, 3], [])


# -- producer-id blocks ---------------------------------------------------------------------


def test_the_first_block_is_zero_to_999() -> None:
    assert next_producer_id_block(None, 7) == ProducerIdBlock(7, 0, 999)


def test_blocks_follow_each_other_whoever_allocated_the_last() -> None:
    block = next_producer_id_block(ProducerIdBlock(2, 5000, 5999), 3)
    assert block == ProducerIdBlock(3, 6000, 6999)
    assert block.size == 1000


def test_the_last_possible_block_and_exhaustion() -> None:
    last_end = INT64_MAX - 1000
    block = next_producer_id_block(ProducerIdBlock(1, last_end - 999, last_end), 1)
    assert (block.block_start, block.block_end) == (last_end + 1, INT64_MAX)
    with pytest.raises(ProducerIdsExhaustedError, match="every producer id"):
        next_producer_id_block(ProducerIdBlock(1, last_end - 998, last_end + 1), 1)


# -- the features command's arguments ---------------------------------------------------------


def test_the_features_command_builds_kafkas_update_types() -> None:
    from controller.api.v1 import admin_pb2
    from controller.cli.features_cmd import parse_updates

    up = parse_updates("upgrade", ["f=2", " g = 3 "], unsafe=False)
    assert [(u.feature, u.max_version_level, u.upgrade_type) for u in up] == [
        ("f", 2, admin_pb2.FEATURE_UPGRADE_TYPE_UPGRADE),
        ("g", 3, admin_pb2.FEATURE_UPGRADE_TYPE_UPGRADE),
    ]
    down = parse_updates("downgrade", ["f=1"], unsafe=True)
    assert down[0].upgrade_type == admin_pb2.FEATURE_UPGRADE_TYPE_UNSAFE_DOWNGRADE
    gone = parse_updates("disable", ["f"], unsafe=False)
    assert (gone[0].max_version_level, gone[0].upgrade_type) == (
        0,
        admin_pb2.FEATURE_UPGRADE_TYPE_SAFE_DOWNGRADE,
    )


@pytest.mark.parametrize(
    ("op", "specs", "message"),
    [
        ("upgrade", [], "You must specify at least one feature to upgrade"),
        ("upgrade", ["f"], "expected NAME=LEVEL"),
        ("upgrade", ["f=x"], "the level must be an integer"),
        ("upgrade", ["f=0"], "the level must be 1..32767"),
        ("downgrade", ["f=40000"], "the level must be 1..32767"),
        ("upgrade", ["=2"], "the feature name is empty"),
        ("upgrade", ["f=2", "f=3"], "Feature f was specified more than once."),
        ("disable", ["f=1"], "disable takes a feature name"),
    ],
)
def test_the_features_command_names_a_bad_argument(op: str, specs: list[str], message: str) -> None:
    from controller.cli.features_cmd import UsageError, parse_updates

    with pytest.raises(UsageError, match=re.escape(message)):
        parse_updates(op, specs, unsafe=False)
