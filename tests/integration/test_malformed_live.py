"""Malformed znodes in a live cluster on a real ZooKeeper with reference brokers: a mix of bad
znodes of every kind the controller watches, each logged by path, while the controller keeps
serving (the cases one by one, on the in-memory harness: ``tests/unit/test_malformed_input.py``;
``docs/reliability.md`` lists them all)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from controller.core.model import TopicPartition
from controller.zk import paths
from tests.cluster import Cluster
from tests.harness.malformed import HEALTHY, valid_registration

# -- a live cluster on a real ZooKeeper ---------------------------------------------------------


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


def test_a_live_cluster_shrugs_off_a_mix_of_malformed_znodes(cluster: Cluster) -> None:
    """Bad znodes of every kind the controller watches, written into a running cluster with
    reference brokers: each is logged by path, the controller keeps electing leaders and
    creating topics, and the next controller's failover loads everything readable."""
    for b in (1, 2, 3):
        cluster.start_broker(b)
    cluster.start_controller(0, **{"auto.leader.rebalance.enable": "false"})
    cluster.create_topic("healthy", {0: [1, 2], 1: [2, 3]})
    cluster.create_topic("two", {0: [1, 3], 1: [3, 1]})
    cluster.wait_state("healthy", 1, leader=2)
    cluster.wait_state("two", 1, leader=3)

    # The daemon's threads log through structlog: capture_logs sees them, whatever an
    # earlier test did to the stdlib logging configuration.
    with capture_logs() as logs:
        cluster.zk.create(paths.broker_path(9), b'{"version":5}', ephemeral=True)
        cluster.zk.create(f"{paths.BROKERS_IDS}/-1", valid_registration(4), ephemeral=True)
        cluster.zk.create(paths.topic_path("bad"), b'{"version":3,"partitions":{"0":[1,1]}}')
        cluster.zk.set(paths.partition_state_path("two", 0), b'{"version":1,"leader":"x"}')
        cluster.zk.create(paths.topic_config_path("healthy"), b"{nope", makepath=True)
        cluster.create_topic("good", {0: [3, 2]})
        cluster.wait_state("good", 0, leader=3, isr=[3, 2])

        # The leader of healthy-0 and two-0 dies: healthy-0 moves; two-0's state is unreadable.
        cluster.kill_broker(1)
        cluster.wait_state("healthy", 0, leader=2, isr=[2])
        cluster.wait_state("two", 1, leader=3, isr=[3])
        assert (
            cluster.zk.get(paths.partition_state_path("two", 0))[0] == b'{"version":1,"leader":"x"}'
        )
        daemon = cluster.active_controller()
        live = daemon.controller.call(lambda c: sorted(c.context.live_broker_ids()))
        assert live == [2, 3]

        # A second controller takes over and loads everything readable.
        cluster.start_controller(1, **{"auto.leader.rebalance.enable": "false"})
        cluster.stop_controller(0)
        successor = cluster.active_controller()
        assert successor.controller.controller_id == 1
        cluster.create_topic("after", {0: [2, 3]})
        cluster.wait_state("after", 0, leader=2, isr=[2, 3])
        loaded = successor.controller.call(
            lambda c: (
                sorted(c.context.live_broker_ids()),
                c.context.partition_leadership_info(HEALTHY) is not None,
                c.context.partition_leadership_info(TopicPartition("two", 0)) is None,
            )
        )
        assert loaded == ([2, 3], True, True)

    logged = " ".join(str(e.get("path", "")) for e in logs)
    for path in (
        paths.broker_path(9),
        f"{paths.BROKERS_IDS}/-1",
        paths.topic_path("bad"),
        paths.partition_state_path("two", 0),
    ):
        assert path in logged, path
