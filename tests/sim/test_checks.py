"""The simulator's own checks are not vacuous: a quiet cluster passes them, and the same
cluster with one thing broken on purpose (a watch gone, a cached topic id wrong) fails them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.sim.checks import CACHE_COHERENT, NO_EVENT_ERROR, WATCH_ARMED
from controller.sim.runner import quiet_logs, setup
from controller.sim.world import SimConfig, SimController, World
from controller.zk import paths


@pytest.fixture
def world() -> Iterator[World]:
    with quiet_logs():
        w = World(7, SimConfig(interleave_p=0.0, admin_mid_event_p=0.0))
        setup(w)
        w.quiesce()
        w.op_create_topic_legacy(partitions=2)
        assert w.heal() == []
        assert w.final_violations() == []
        yield w


def _active(w: World) -> SimController:
    sc = w.active_controller()
    assert sc is not None and sc.port is not None
    return sc


def _unwatch(w: World, sc: SimController, path: str, *, child: bool = False) -> None:
    """Forget ``sc``'s session's watch on ``path`` (as if it had fired and not been re-armed)."""
    assert sc.port is not None
    registry = w.zk._child_watches if child else w.zk._data_watches
    session = sc.port.inner
    before = len(registry.get(path, []))
    registry[path] = [x for x in registry.get(path, []) if x[0] is not session]
    assert len(registry[path]) < before, f"c{sc.cid} held no watch on {path}"


def _flagged(w: World, invariant: str) -> list[str]:
    return [v.message for v in w.final_violations() if v.invariant == invariant]


def test_a_topic_created_without_id_gets_one_the_controller_caches(world: World) -> None:
    legacy = [t for t in world._topics() if t.startswith("l")]
    assignment = world._topic_assignment(legacy[0])
    assert assignment is not None and assignment.topic_id is not None


def test_a_topic_whose_data_watch_is_gone_is_flagged(world: World) -> None:
    sc = _active(world)
    _unwatch(world, sc, paths.topic_path(world._topics()[0]))
    assert any(paths.topic_path(world._topics()[0]) in d for d in _flagged(world, WATCH_ARMED))


def test_an_admin_request_znode_must_be_watched_while_absent(world: World) -> None:
    assert world.zk.read(paths.REASSIGN_PARTITIONS) is None
    _unwatch(world, _active(world), paths.REASSIGN_PARTITIONS)
    assert any(paths.REASSIGN_PARTITIONS in d for d in _flagged(world, WATCH_ARMED))


def test_a_lost_child_watch_is_flagged(world: World) -> None:
    _unwatch(world, _active(world), paths.BROKERS_IDS, child=True)
    assert any(paths.BROKERS_IDS in d for d in _flagged(world, WATCH_ARMED))


def test_a_standby_must_watch_the_controller_znode(world: World) -> None:
    active = _active(world)
    standby = next(sc for sc in world.controllers.values() if sc is not active)
    _unwatch(world, standby, paths.CONTROLLER)
    assert _flagged(world, WATCH_ARMED) == [
        f"c{standby.cid}: a handler for {paths.CONTROLLER} but no data watch on it"
    ]


def test_a_wrong_cached_topic_id_is_flagged(world: World) -> None:
    sc = _active(world)
    assert sc.ctl is not None
    topic = world._topics()[0]
    sc.ctl.context.topic_ids[topic] = "AAAAAAAAAAAAAAAAAAAAAA"
    assert any(
        f"{topic}: controller" in d and "topic id" in d for d in _flagged(world, CACHE_COHERENT)
    )


def test_admin_operations_land_in_the_middle_of_events() -> None:
    lines: list[str] = []
    with quiet_logs():
        w = World(3, SimConfig(interleave_p=0.0, admin_mid_event_p=0.3))
        log = w.log
        w.log = lambda text: (lines.append(text), log(text))[1]  # type: ignore[method-assign]
        setup(w)
        w.run(300)
        violations = w.heal() + w.final_violations()
    assert any("admin acts while" in line for line in lines)
    assert violations == []


def test_a_leadership_change_missing_from_the_state_change_log_is_flagged(world: World) -> None:
    from controller.core.model import LeaderIsrAndControllerEpoch
    from controller.sim.scl_check import SCL_MATCHES_ZK
    from controller.zk import codecs

    # Shrink an ISR in ZooKeeper behind the controller's back: nothing recorded it.
    topic = world._topics()[0]
    path = paths.partition_state_path(topic, 0)
    data, _ = world.admin.get(path)
    state = codecs.decode_partition_state(data, path)
    lai = state.leader_and_isr
    shrunk = LeaderIsrAndControllerEpoch(
        type(lai)(lai.leader, lai.leader_epoch, (lai.leader,)), state.controller_epoch
    )
    world.admin.set(path, codecs.encode_partition_state(shrunk))
    assert any(f"{topic}-0" in m for m in _flagged(world, SCL_MATCHES_ZK))


def test_a_handler_that_fails_is_flagged(world: World) -> None:
    """The controller survives a failing handler (logged and swallowed); the simulator must
    not: the event's work is unfinished whatever the other checks happen to see."""
    from controller.core.events import TopicChange

    sc = _active(world)
    assert sc.ctl is not None

    def broken(event: object) -> None:
        raise RuntimeError("a defect")

    sc.ctl._handlers[TopicChange] = broken
    world.op_create_topic_legacy(partitions=1)
    world.heal()
    flagged = _flagged(world, NO_EVENT_ERROR)
    assert flagged and all("TopicChange" in m for m in flagged)
