"""Feature versioning and producer-id allocation on the in-memory harness: ``/feature`` at
failover (Kafka's test expectations, reference §2.12), brokers kept out for incompatible
features, UpdateFeatures, and AllocateProducerIds with its races and bad znodes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from controller.api.errors import ApiError, Errors
from controller.core.events import (
    AllocateProducerIds,
    BrokerChange,
    NotControllerError,
    UpdateFeatures,
)
from controller.core.features import FeatureUpdateItem, UpgradeType
from controller.core.model import TopicPartition
from controller.zk import codecs, paths
from controller.zk.codecs import FEATURE_STATUS_DISABLED, FEATURE_STATUS_ENABLED, FeatureZNode
from controller.zk.errors import ControllerMovedError
from tests.harness import ControllerHarness

UP = UpgradeType.UPGRADE
SAFE = UpgradeType.SAFE_DOWNGRADE
NEW = {"f": (1, 3)}  # what an up-to-date broker supports
OLD = {"f": (1, 1)}  # an older broker


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    harness = ControllerHarness(controller_id=5)
    yield harness
    harness.close()


def write_feature(h: ControllerHarness, node: FeatureZNode) -> int:
    data = codecs.encode_feature_znode(node)
    if h.admin.exists(paths.FEATURE) is None:
        h.admin.create(paths.FEATURE, data, makepath=True)
        return 0
    return h.admin.set(paths.FEATURE, data).version


def feature_znode(h: ControllerHarness) -> tuple[dict, int]:
    data, stat = h.admin.get(paths.FEATURE)
    return json.loads(data), stat.version


def update(h: ControllerHarness, *items: FeatureUpdateItem, validate_only: bool = False) -> dict:
    event = UpdateFeatures(updates=items, validate_only=validate_only)
    h.process(event)
    return {
        name: None if result is None else result.error.name
        for name, result in event.reply.result(0).items()
    }


# -- /feature at failover (Kafka's expectations) -----------------------------------------------


def test_absent_feature_znode_is_created_enabled_and_empty(h: ControllerHarness) -> None:
    h.start()
    assert feature_znode(h) == ({"version": 2, "status": 1, "features": {}}, 0)
    assert h.controller.features.finalized == {}


def test_enabled_feature_znode_is_left_unchanged(h: ControllerHarness) -> None:
    write_feature(h, FeatureZNode(2, FEATURE_STATUS_ENABLED, {"f": (2, 2)}))
    h.start()
    assert feature_znode(h) == (
        {"version": 2, "status": 1, "features": {"f": {"max_version_level": 2}}},
        0,
    )
    assert h.controller.features.finalized == {"f": 2}


def test_disabled_feature_znode_is_enabled_with_features_cleared(h: ControllerHarness) -> None:
    write_feature(h, FeatureZNode(2, FEATURE_STATUS_DISABLED, {"f": (2, 2)}))
    h.start()
    assert feature_znode(h) == ({"version": 2, "status": 1, "features": {}}, 1)
    assert h.controller.features.finalized == {}


def test_a_version_1_znode_is_rewritten_in_version_2_keeping_its_levels(
    h: ControllerHarness,
) -> None:
    write_feature(h, FeatureZNode(1, FEATURE_STATUS_ENABLED, {"f": (3, 3)}))
    h.start()
    assert feature_znode(h) == (
        {"version": 2, "status": 1, "features": {"f": {"max_version_level": 3}}},
        1,
    )


@pytest.mark.parametrize("existing", [FeatureZNode(1, FEATURE_STATUS_ENABLED, {}), None])
def test_a_failover_write_whose_reply_was_lost_is_taken_as_done(
    h: ControllerHarness, existing: FeatureZNode | None
) -> None:
    """Failover rewrites a version-1 /feature (or creates it); the write committed, its
    reply was lost and the resend met it (BADVERSION, NODEEXISTS): the failover goes on, at
    the epoch it won (before: it failed and a second election followed)."""
    if existing is not None:
        write_feature(h, existing)
    h.port.before(
        "multi_many",
        lambda: write_feature(h, FeatureZNode(2, FEATURE_STATUS_ENABLED, {})),
        when=lambda txns: any(getattr(op, "path", "") == paths.FEATURE for t in txns for op in t),
    )
    h.start()
    assert h.controller.is_active and h.ctx.epoch == 1
    assert feature_znode(h)[0] == {"version": 2, "status": 1, "features": {}}
    assert h.controller.features.finalized == {}


def test_a_failover_write_beaten_by_other_content_still_fails(h: ControllerHarness) -> None:
    write_feature(h, FeatureZNode(1, FEATURE_STATUS_ENABLED, {}))
    other = FeatureZNode(2, FEATURE_STATUS_ENABLED, {"f": (2, 2)})
    h.port.before(
        "multi_many",
        lambda: write_feature(h, other),
        when=lambda txns: any(getattr(op, "path", "") == paths.FEATURE for t in txns for op in t),
        times=1,
    )
    h.start()
    # The failover failed (not our content) and the next election, at epoch 2, keeps theirs.
    assert h.controller.is_active and h.ctx.epoch == 2
    assert h.controller.features.finalized == {"f": 2}


def test_a_malformed_feature_znode_is_left_alone_and_checks_no_broker(h: ControllerHarness) -> None:
    h.admin.create(paths.FEATURE, b'{"version":2,"status":7,"features":{}}', makepath=True)
    h.register_broker(1, features=OLD)
    h.start()
    assert h.controller.is_active
    assert h.read(paths.FEATURE) == b'{"version":2,"status":7,"features":{}}'
    assert h.controller.features.finalized is None
    assert 1 in h.ctx.live_broker_ids()
    # Updates are refused until it is repaired; nothing is written.
    assert update(h, FeatureUpdateItem("f", 1, UP)) == {"f": "FEATURE_UPDATE_FAILED"}
    assert h.read(paths.FEATURE) == b'{"version":2,"status":7,"features":{}}'


def test_a_feature_name_that_is_no_unicode_text_is_malformed_not_a_failover_loop(
    h: ControllerHarness,
) -> None:
    # A lone surrogate escape in a v1 node's feature name: the failover's v1 -> v2 rewrite
    # could not encode it, failed, and the controller re-elected itself for ever.
    data = (
        b'{"version":1,"status":1,"features":{"f\\ud800":'
        b'{"min_version_level":1,"max_version_level":1}}}'
    )
    h.admin.create(paths.FEATURE, data, makepath=True)
    h.register_broker(1, features=OLD)
    h.start()
    assert h.controller.is_active and h.controller.event_errors == 0
    assert h.read(paths.FEATURE) == data  # left alone, as any malformed /feature
    assert h.controller.features.finalized is None


# -- brokers and the finalized features ----------------------------------------------------------


def test_an_incompatible_broker_is_not_live_after_failover(h: ControllerHarness) -> None:
    write_feature(h, FeatureZNode(2, FEATURE_STATUS_ENABLED, {"f": (2, 2)}))
    h.register_broker(1, features=NEW)
    h.register_broker(2, features=OLD)
    h.register_broker(3)  # advertises nothing
    h.start()
    assert h.ctx.live_broker_ids() == {1}
    assert h.channel.broker_ids() == {1}
    assert h.controller.features.incompatible_brokers == {2, 3}


def test_an_incompatible_broker_joining_later_is_left_out(h: ControllerHarness) -> None:
    write_feature(h, FeatureZNode(2, FEATURE_STATUS_ENABLED, {"f": (2, 2)}))
    h.register_broker(1, features=NEW)
    h.start()
    h.register_broker(2, features=OLD)
    h.register_broker(3, features=NEW)
    h.drain()
    assert h.ctx.live_broker_ids() == {1, 3}
    assert h.channel.broker_ids() == {1, 3}
    assert h.controller.features.incompatible_brokers == {2}
    # It goes away: it is forgotten, not kept as incompatible.
    h.kill_broker(2)
    h.drain()
    assert h.controller.features.incompatible_brokers == set()


def test_a_bounced_broker_that_comes_back_incompatible_is_failed(h: ControllerHarness) -> None:
    write_feature(h, FeatureZNode(2, FEATURE_STATUS_ENABLED, {"f": (2, 2)}))
    h.register_broker(1, features=NEW)
    h.register_broker(2, features=NEW)
    h.create_topic("t", {0: [2, 1]}, in_context=False)
    h.start()
    h.kill_broker(2)
    h.register_broker(2, features=OLD)  # a new registration (epoch) before the controller looks
    h.drain()
    assert h.ctx.live_broker_ids() == {1}
    assert h.channel.broker_ids() == {1}
    state = h.zk_state(TopicPartition("t", 0))
    assert state is not None and state.leader_and_isr.leader == 1


def _broker_2_refused_at_f_2(h: ControllerHarness) -> None:
    write_feature(h, FeatureZNode(2, FEATURE_STATUS_ENABLED, {"f": (2, 2)}))
    h.register_broker(1, features=NEW)
    h.register_broker(2, features=OLD)
    h.start()
    assert h.ctx.live_broker_ids() == {1}


def test_an_update_that_makes_a_refused_broker_compatible_brings_it_in(
    h: ControllerHarness,
) -> None:
    _broker_2_refused_at_f_2(h)
    assert update(h, FeatureUpdateItem("f", 1, SAFE)) == {"f": None}
    # (and the write's own FeatureZNodeChange, which finds the levels it knows)
    assert BrokerChange in [type(e) for e in h.pending_events()]
    h.drain()
    assert h.ctx.live_broker_ids() == {1, 2}
    assert h.controller.features.incompatible_brokers == set()


# -- UpdateFeatures ---------------------------------------------------------------------------


def test_update_writes_the_valid_levels_and_reports_the_invalid(h: ControllerHarness) -> None:
    h.register_broker(1, features={"f": (1, 3), "g": (1, 2)})
    h.register_broker(2, features={"f": (1, 3)})
    h.start()
    results = update(h, FeatureUpdateItem("f", 3, UP), FeatureUpdateItem("g", 1, UP))
    assert results == {"f": None, "g": "INVALID_REQUEST"}
    assert feature_znode(h) == (
        {"version": 2, "status": 1, "features": {"f": {"max_version_level": 3}}},
        1,
    )
    assert h.controller.features.finalized == {"f": 3}
    assert h.controller.features.epoch == 1


def test_validate_only_writes_nothing(h: ControllerHarness) -> None:
    h.register_broker(1, features=NEW)
    h.start()
    assert update(h, FeatureUpdateItem("f", 2, UP), validate_only=True) == {"f": None}
    assert feature_znode(h)[1] == 0
    assert h.controller.features.finalized == {}


def test_update_with_nothing_to_change_writes_nothing(h: ControllerHarness) -> None:
    h.register_broker(1, features=NEW)
    h.start()
    assert update(h, FeatureUpdateItem("x", 1, UP)) == {"x": "INVALID_REQUEST"}
    assert feature_znode(h)[1] == 0


def test_a_concurrent_write_fails_the_update_instead_of_overwriting(h: ControllerHarness) -> None:
    h.register_broker(1, features=NEW)
    h.start()
    h.port.before(
        "multi_many",
        lambda: write_feature(h, FeatureZNode(2, FEATURE_STATUS_ENABLED, {"other": (1, 1)})),
    )
    assert update(h, FeatureUpdateItem("f", 2, UP)) == {"f": "FEATURE_UPDATE_FAILED"}
    assert feature_znode(h)[0]["features"] == {"other": {"max_version_level": 1}}
    # The controller's view follows what is in ZooKeeper now.
    assert h.controller.features.finalized == {"other": 1}
    assert h.controller.features.epoch == 1


def test_an_update_whose_reply_was_lost_is_reported_as_done(h: ControllerHarness) -> None:
    """The write committed but its reply was lost; the client's resend met it as BADVERSION
    (played by writing the same content just before the controller's multi)."""
    h.register_broker(1, features=NEW)
    h.start()
    h.port.before(
        "multi_many",
        lambda: write_feature(h, FeatureZNode(2, FEATURE_STATUS_ENABLED, {"f": (2, 2)})),
    )
    assert update(h, FeatureUpdateItem("f", 2, UP)) == {"f": None}
    assert h.controller.features.finalized == {"f": 2}


def test_an_update_whose_reply_was_lost_still_brings_a_refused_broker_in(
    h: ControllerHarness,
) -> None:
    _broker_2_refused_at_f_2(h)
    h.port.lose_reply("multi_many")
    assert update(h, FeatureUpdateItem("f", 1, SAFE)) == {"f": None}
    h.drain()
    assert h.ctx.live_broker_ids() == {1, 2}


def test_a_deposed_controller_changes_nothing(h: ControllerHarness) -> None:
    h.register_broker(1, features=NEW)
    h.start()
    h.elect_rival()
    event = UpdateFeatures(updates=(FeatureUpdateItem("f", 2, UP),))
    h.process(event)
    assert event.reply.done()
    with pytest.raises(ControllerMovedError):
        event.reply.result(0)
    assert feature_znode(h) == ({"version": 2, "status": 1, "features": {}}, 0)


def test_update_on_a_standby_is_not_controller(h: ControllerHarness) -> None:
    event = UpdateFeatures(updates=(FeatureUpdateItem("f", 2, UP),))
    h.process(event)
    with pytest.raises(ApiError) as info:
        event.reply.result(0)
    assert info.value.error is Errors.NOT_CONTROLLER


# -- AllocateProducerIds --------------------------------------------------------------------------


def allocate(h: ControllerHarness, broker_id: int, epoch: int) -> object:
    event = AllocateProducerIds(broker_id=broker_id, broker_epoch=epoch)
    h.process(event)
    try:
        block = event.reply.result(0)
    except ApiError as exc:
        return exc.error.name
    return (block.broker, block.block_start, block.block_end)


def test_blocks_are_handed_out_in_order_across_brokers(h: ControllerHarness) -> None:
    b1 = h.register_broker(1)
    b2 = h.register_broker(2)
    h.start()
    assert allocate(h, 1, b1.epoch) == (1, 0, 999)
    assert allocate(h, 2, b2.epoch) == (2, 1000, 1999)
    assert allocate(h, 1, b1.epoch) == (1, 2000, 2999)
    assert json.loads(h.read(paths.LATEST_PRODUCER_ID_BLOCK)) == {
        "version": 1,
        "broker": 1,
        "block_start": "2000",
        "block_end": "2999",
    }


def test_a_missing_block_znode_is_created(h: ControllerHarness) -> None:
    b1 = h.register_broker(1)
    h.start()
    h.admin.delete(paths.LATEST_PRODUCER_ID_BLOCK)
    assert allocate(h, 1, b1.epoch) == (1, 0, 999)


def test_unknown_broker_and_stale_epoch_are_refused(h: ControllerHarness) -> None:
    b1 = h.register_broker(1)
    h.start()
    assert allocate(h, 9, b1.epoch) == "BROKER_ID_NOT_REGISTERED"
    assert allocate(h, 1, b1.epoch - 1) == "STALE_BROKER_EPOCH"
    assert allocate(h, 1, b1.epoch + 1) == "STALE_BROKER_EPOCH"
    assert h.read(paths.LATEST_PRODUCER_ID_BLOCK) in (b"", None)


def test_a_lost_race_takes_the_next_block(h: ControllerHarness) -> None:
    b1 = h.register_broker(1)
    h.start()
    # An older broker allocates by itself between the controller's read and its write.
    rival = codecs.encode_producer_id_block(codecs.ProducerIdBlock(7, 0, 999))
    h.port.before("multi_many", lambda: h.admin.set(paths.LATEST_PRODUCER_ID_BLOCK, rival))
    assert allocate(h, 1, b1.epoch) == (1, 1000, 1999)


def test_an_unreadable_block_stops_allocation_and_is_not_overwritten(h: ControllerHarness) -> None:
    b1 = h.register_broker(1)
    h.start()
    bad = b'{"version":1,"broker":2,"block_start":"x","block_end":"999"}'
    h.admin.set(paths.LATEST_PRODUCER_ID_BLOCK, bad)
    assert allocate(h, 1, b1.epoch) == "UNKNOWN_SERVER_ERROR"
    assert h.read(paths.LATEST_PRODUCER_ID_BLOCK) == bad
    assert h.controller.is_active


def test_a_block_znode_emptied_after_an_allocation_stops_allocation(h: ControllerHarness) -> None:
    # Only a never-written znode (version 0) means "no block yet": starting over at 0 after
    # someone blanked it would hand out ids producers already hold.
    b1 = h.register_broker(1)
    h.start()
    assert allocate(h, 1, b1.epoch) == (1, 0, 999)
    h.admin.set(paths.LATEST_PRODUCER_ID_BLOCK, b"")
    assert allocate(h, 1, b1.epoch) == "UNKNOWN_SERVER_ERROR"
    assert h.read(paths.LATEST_PRODUCER_ID_BLOCK) == b""
    assert h.controller.is_active


def test_a_block_kafkas_zookeeper_migration_wrote_is_followed(h: ControllerHarness) -> None:
    # Kafka's ZkMigrationClient writes broker -1; Kafka's reader takes any int. It used to
    # stop allocation (UNKNOWN_SERVER_ERROR) until the znode was edited by hand.
    b1 = h.register_broker(1)
    h.start()
    migrated = b'{"version":1,"broker":-1,"block_start":"5000","block_end":"5999"}'
    h.admin.set(paths.LATEST_PRODUCER_ID_BLOCK, migrated)
    assert allocate(h, 1, b1.epoch) == (1, 6000, 6999)


def test_exhausted_producer_ids_are_an_error_not_a_wrap(h: ControllerHarness) -> None:
    b1 = h.register_broker(1)
    h.start()
    end = 2**63 - 1
    last = codecs.encode_producer_id_block(codecs.ProducerIdBlock(2, end - 999, end))
    h.admin.set(paths.LATEST_PRODUCER_ID_BLOCK, last)
    assert allocate(h, 1, b1.epoch) == "UNKNOWN_SERVER_ERROR"
    assert h.read(paths.LATEST_PRODUCER_ID_BLOCK) == last


def test_a_deposed_controller_hands_out_nothing(h: ControllerHarness) -> None:
    b1 = h.register_broker(1)
    h.start()
    h.elect_rival()
    event = AllocateProducerIds(broker_id=1, broker_epoch=b1.epoch)
    h.process(event)
    assert event.reply.done()  # answered, not left hanging
    with pytest.raises(ControllerMovedError):  # the RPC layer answers NOT_CONTROLLER
        event.reply.result(0)
    assert h.read(paths.LATEST_PRODUCER_ID_BLOCK) in (b"", None)


def test_allocate_on_a_standby_is_not_controller(h: ControllerHarness) -> None:
    event = AllocateProducerIds(broker_id=1, broker_epoch=1)
    h.process(event)
    with pytest.raises(NotControllerError):
        event.reply.result(0)


# -- /feature changed by hand ------------------------------------------------------------------


def test_a_feature_znode_emptied_by_hand_lets_a_refused_broker_in(h: ControllerHarness) -> None:
    # Kafka's feature cache follows /feature through a watch; ours used to keep the levels
    # of the last failover or update: broker 2 stayed out until the next failover.
    _broker_2_refused_at_f_2(h)
    write_feature(h, FeatureZNode(2, FEATURE_STATUS_ENABLED, {}))
    h.drain()
    assert h.controller.features.finalized == {}
    assert h.ctx.live_broker_ids() == {1, 2}
    assert h.controller.features.incompatible_brokers == set()


def test_a_feature_znode_deleted_by_hand_is_no_features(h: ControllerHarness) -> None:
    _broker_2_refused_at_f_2(h)
    h.admin.delete(paths.FEATURE)
    h.drain()
    assert h.controller.features.finalized == {}
    assert h.ctx.live_broker_ids() == {1, 2}
    # An update creates it again.
    assert update(h, FeatureUpdateItem("f", 1, UP)) == {"f": None}
    assert feature_znode(h)[1] == 0 and h.controller.features.finalized == {"f": 1}


def test_a_repaired_feature_znode_is_checked_against_again(h: ControllerHarness) -> None:
    # Malformed at failover: no broker is checked. Repaired as the log tells the operator:
    # brokers that cannot run its levels are kept out again.
    h.admin.create(paths.FEATURE, b'{"version":2,"status":7,"features":{}}', makepath=True)
    h.register_broker(1, features=NEW)
    h.start()
    assert h.controller.features.finalized is None
    h.admin.set(paths.FEATURE, codecs.encode_feature_znode(
        FeatureZNode(2, FEATURE_STATUS_ENABLED, {"f": (2, 2)})))
    h.drain()
    assert h.controller.features.finalized == {"f": 2}
    h.register_broker(2, features=OLD)
    h.drain()
    assert h.ctx.live_broker_ids() == {1}
    assert h.controller.features.incompatible_brokers == {2}
    # Broken again by hand: logged, and no broker is checked until it is repaired.
    h.admin.set(paths.FEATURE, b"{")
    h.drain()
    assert h.controller.features.finalized is None and h.controller.is_active


def test_the_feature_watch_is_not_timed_as_an_update_request() -> None:
    # Its events (our own writes fire the watch too) doubled UpdateFeaturesRateAndTimeMs.
    from controller.core.events import FeatureZNodeChange

    assert not FeatureZNodeChange.state.is_timed
    assert UpdateFeatures.state.is_timed
