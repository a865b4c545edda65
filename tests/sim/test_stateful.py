"""Hypothesis stateful testing of the simulated cluster (controller.sim).

Hypothesis drives the same ``World`` as the seeded sweep, one rule per operation or fault,
with the scheduler's own steps as a rule too, so it can shrink a failure to a short sequence
of operations. The safety invariants are checked after every rule; at the end the faults stop
and liveness and the quiet-cluster checks run. ``derandomize=True``: CI runs the same
examples every time (set ``SIM_HYPOTHESIS_EXAMPLES`` to run more).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from controller.core.model import TopicPartition
from controller.sim.runner import quiet_logs, setup
from controller.sim.world import SimConfig, World

BROKERS = (1, 2, 3)
CONTROLLERS = (100, 101)
EXAMPLES = int(os.environ.get("SIM_HYPOTHESIS_EXAMPLES", "150"))

brokers = st.sampled_from(BROKERS)
controllers = st.sampled_from(CONTROLLERS)
replica_lists = st.lists(brokers, min_size=1, max_size=3, unique=True).map(tuple)


class SimulatedCluster(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.world: World | None = None
        self._logs = quiet_logs()
        self._logs.__enter__()

    @property
    def w(self) -> World:
        assert self.world is not None
        return self.world

    @initialize(seed=st.integers(0, 2**32 - 1), interleave=st.sampled_from((0.0, 0.05)))
    def start(self, seed: int, interleave: float) -> None:
        self.world = World(seed, SimConfig(BROKERS, CONTROLLERS, interleave_p=interleave))
        setup(self.world)

    def _partition(self, index: int) -> TopicPartition | None:
        parts = [
            TopicPartition(t, p)
            for t in self.w._topics()
            for p in sorted(getattr(self.w._topic_assignment(t), "partitions", {}))
        ]
        return parts[index % len(parts)] if parts else None

    def _topic(self, index: int) -> str | None:
        topics = self.w._topics()
        return topics[index % len(topics)] if topics else None

    # -- the scheduler -----------------------------------------------------------------------

    @rule(steps=st.integers(0, 60))
    def run(self, steps: int) -> None:
        self.w.run(steps)

    # -- admin -------------------------------------------------------------------------------

    @rule(partitions=st.integers(1, 3), replication=st.integers(1, 3))
    def create_topic(self, partitions: int, replication: int) -> None:
        self.w.op_create_topic(partitions=partitions, replication=replication)

    @rule(index=st.integers(0, 20), count=st.integers(1, 2))
    def add_partitions(self, index: int, count: int) -> None:
        topic = self._topic(index)
        if topic is not None:
            self.w.op_add_partitions(topic, count)

    @rule(index=st.integers(0, 20))
    def delete_topic(self, index: int) -> None:
        topic = self._topic(index)
        if topic is not None:
            self.w.op_delete_topic(topic)

    @rule(index=st.integers(0, 50), replicas=replica_lists, via_zk=st.booleans())
    def reassign(self, index: int, replicas: tuple[int, ...], via_zk: bool) -> None:
        tp = self._partition(index)
        if tp is not None:
            self.w.op_reassign(tp.topic, tp.partition, replicas, via_zk)

    @rule(index=st.integers(0, 50))
    def cancel_reassignment(self, index: int) -> None:
        tp = self._partition(index)
        if tp is not None:
            self.w.op_cancel_reassignment(tp.topic, tp.partition)

    @rule(index=st.integers(0, 50), unclean=st.booleans(), via_zk=st.booleans())
    def elect(self, index: int, unclean: bool, via_zk: bool) -> None:
        tp = self._partition(index)
        if tp is not None:
            self.w.op_elect([tp], unclean, via_zk)

    @rule(index=st.integers(0, 20), unclean=st.booleans())
    def alter_topic_config(self, index: int, unclean: bool) -> None:
        topic = self._topic(index)
        if topic is not None:
            self.w.op_alter_topic_config(topic, unclean)

    @rule(unclean=st.booleans())
    def alter_broker_default(self, unclean: bool) -> None:
        self.w.op_alter_broker_default(unclean)

    # -- brokers -----------------------------------------------------------------------------

    @rule(index=st.integers(0, 50), broker=brokers, member=brokers, expand=st.booleans())
    def alter_isr(self, index: int, broker: int, member: int, expand: bool) -> None:
        tp = self._partition(index)
        if tp is not None:
            self.w.op_alter_isr(broker, tp.topic, tp.partition, member, expand)

    @rule(broker=brokers)
    def allocate_producer_ids(self, broker: int) -> None:
        self.w.op_allocate_producer_ids(broker)

    @rule(broker=brokers)
    def controlled_shutdown(self, broker: int) -> None:
        self.w.op_controlled_shutdown(broker)

    @rule(broker=brokers, kill=st.booleans())
    def crash_broker(self, broker: int, kill: bool) -> None:
        (self.w.op_kill_broker if kill else self.w.op_crash_broker)(broker)

    @rule(broker=brokers)
    def restart_broker(self, broker: int) -> None:
        self.w.op_restart_broker(broker)

    @rule(broker=brokers)
    def expire_broker(self, broker: int) -> None:
        self.w.op_expire_broker(broker)

    @rule(broker=brokers, seconds=st.floats(0.1, 3.0))
    def pause_broker(self, broker: int, seconds: float) -> None:
        self.w.op_pause_broker(broker, seconds)

    @rule(broker=brokers, count=st.integers(1, 3))
    def lose_answers(self, broker: int, count: int) -> None:
        self.w.op_lose_answers(broker, count)

    # -- malformed input ---------------------------------------------------------------------

    @rule()
    def malformed_topic(self) -> None:
        self.w.op_malformed_topic()

    @rule()
    def repair_topics(self) -> None:
        self.w.op_repair_topics()

    @rule(broker=brokers)
    def malformed_registration(self, broker: int) -> None:
        self.w.op_malformed_registration(broker)

    @rule(preferred=st.booleans())
    def malformed_admin_request(self, preferred: bool) -> None:
        self.w.op_malformed_admin_request(preferred)

    # -- controllers -------------------------------------------------------------------------

    @rule(controller=controllers)
    def crash_controller(self, controller: int) -> None:
        self.w.op_crash_controller(controller)

    @rule(controller=controllers)
    def restart_controller(self, controller: int) -> None:
        self.w.op_restart_controller(controller)

    @rule(controller=controllers)
    def expire_controller(self, controller: int) -> None:
        self.w.op_expire_controller(controller)

    @rule(controller=controllers, seconds=st.floats(0.05, 4.0))
    def disconnect_controller(self, controller: int, seconds: float) -> None:
        self.w.op_disconnect_controller(controller, seconds)

    @rule(controller=controllers, seconds=st.floats(0.1, 9.0))
    def stall_controller(self, controller: int, seconds: float) -> None:
        self.w.op_stall_controller(controller, seconds)

    @rule(controller=controllers)
    def zombie_controller(self, controller: int) -> None:
        self.w.op_zombie_controller(controller)

    # -- checks ------------------------------------------------------------------------------

    @invariant()
    def safety_holds(self) -> None:
        if self.world is not None and self.w.observer.found_any():
            self._fail(self.w.observer.violations())

    def teardown(self) -> None:
        try:
            if self.world is not None:
                found = self.w.heal() + self.w.final_violations()
                if found:
                    self._fail(found)
        finally:
            self._logs.__exit__(None, None, None)

    def _fail(self, violations: list) -> None:
        note("\n".join(list(self.w.trace)[-80:]))
        raise AssertionError("\n".join(str(v) for v in violations[:10]))


SimulatedCluster.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=30,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
test_simulated_cluster = SimulatedCluster.TestCase
