"""Controller defects the simulator's checks found, replayed deterministically."""

from __future__ import annotations

from controller.sim.checks import watch_violations
from controller.sim.runner import quiet_logs
from controller.sim.world import SimConfig, World
from controller.zk import paths


def test_a_controller_whose_startup_was_dropped_still_sees_topic_deletions() -> None:
    """c100's session expires before it processes Startup: ``clear_and_put(Expire)`` drops
    Startup, so ``ensure_persistent_paths`` never runs; RegisterBrokerAndReelect elects it and
    its failover reads /admin/delete_topics (and /isr_change_notification,
    /log_dir_event_notification, /config/changes) while they do not exist: no child watch.
    c101's Startup creates them afterwards; a topic deletion was then never processed. The
    failover now makes the persistent paths itself (found by sim-watch-armed)."""
    with quiet_logs():
        w = World(0, SimConfig(interleave_p=0.0, admin_mid_event_p=0.0))
        for broker in sorted(w.brokers):
            w.op_restart_broker(broker)  # simulated brokers create /brokers/ids only
        w.op_create_topic("t0", partitions=1, replication=2)
        w.start_controller(100)
        port = w.controllers[100].port
        assert port is not None
        w.zk.expire(port.inner, reconnect=True)  # before c100 processed Startup
        w.quiesce()
        assert w.active_controller() is w.controllers[100]
        w.start_controller(101)  # its Startup creates the persistent paths
        w.quiesce()
        assert watch_violations(w) == []
        w.op_delete_topic("t0")
        w.quiesce()
        w._advance(30.0)
        w.quiesce()
        assert "t0" not in w.zk.children(paths.BROKERS_TOPICS)
