"""Every exported metric, scraped over HTTP from controllers of a live cluster (real ZooKeeper,
reference brokers over gRPC), and how each moves when the cluster changes: failover, brokers
dying and returning, topics appearing, partitions going offline and coming back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.core.controller_state import TIMED_STATES
from controller.daemon import ControllerDaemon
from controller.metrics import ELECTION_TYPES
from tests.cluster import Cluster
from tests.support import scrape, wait_until

pytestmark = pytest.mark.zookeeper
P = "kafka_controller_"

#: Every family the daemon exports, with the series that must exist on any controller.
ALWAYS = [
    "active_controller_count", "controller_state", "controller_epoch", "global_topic_count",
    "global_partition_count", "active_broker_count", "fenced_broker_count",
    "offline_partitions_count", "preferred_replica_imbalance_count", "topics_to_delete_count",
    "replicas_to_delete_count", "topics_ineligible_to_delete_count",
    "replicas_ineligible_to_delete_count", "zk_migration_state", "event_queue_size",
    "unclean_leader_elections_total", "failovers_total", "zookeeper_session_expirations_total",
    "zookeeper_disconnects_total", "channel_total_queue_size", "controller_id",
    "event_queue_time_seconds_count", "event_queue_time_seconds_sum",
]  # fmt: skip


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


def metrics(daemon: ControllerDaemon) -> dict[str, float]:
    assert daemon.http is not None
    return scrape(f"{daemon.http.url}/metrics")


def value(daemon: ControllerDaemon, series: str) -> float:
    return metrics(daemon).get(P + series, float("nan"))


def wait_metric(daemon: ControllerDaemon, series: str, expected: float) -> None:
    wait_until(lambda: value(daemon, series) == expected, what=f"{series} == {expected}")


def test_every_metric_exists_and_follows_the_cluster(cluster: Cluster) -> None:
    for b in (1, 2, 3):
        cluster.start_broker(b)
    c0 = cluster.start_controller(0)
    active = cluster.active_controller()
    assert active is c0
    c1 = cluster.start_controller(1)  # standby

    cluster.create_topic("t", {0: [1, 2], 1: [3]})
    cluster.wait_state("t", 0, leader=1)
    cluster.wait_state("t", 1, leader=3)
    wait_metric(c0, "global_partition_count", 2)

    s0, s1 = metrics(c0), metrics(c1)
    for name in ALWAYS:
        assert P + name in s0, name
        assert P + name in s1, name
    assert any(k.startswith(P + "build_info{") for k in s0)
    assert not [k for k in s0 if "topic=" in k or "partition=" in k or k.endswith("_created")]
    for state in TIMED_STATES:
        assert f'{P}event_processing_seconds_count{{state="{state.name}"}}' in s0
    for kind in ELECTION_TYPES:
        assert f'{P}leader_elections_total{{type="{kind}"}}' in s0

    # One active controller, one standby; the standby's context gauges read 0 (Kafka).
    assert (s0[P + "active_controller_count"], s1[P + "active_controller_count"]) == (1, 0)
    assert (s0[P + "controller_id"], s1[P + "controller_id"]) == (0, 1)
    assert s0[P + "controller_epoch"] >= 1 and s1[P + "controller_epoch"] == 0
    assert s0[P + "failovers_total"] == 1 and s1[P + "failovers_total"] == 0
    assert s0[P + "active_broker_count"] == 3 and s1[P + "active_broker_count"] == 0
    assert s0[P + "global_topic_count"] == 1 and s1[P + "global_topic_count"] == 0
    assert s0[P + "offline_partitions_count"] == 0
    assert s0[P + "preferred_replica_imbalance_count"] == 0
    assert s0[P + "zk_migration_state"] == 4 and s1[P + "zk_migration_state"] == 4
    assert s0[P + "fenced_broker_count"] == 0
    # The unclean-election default each applies (unclean.leader.election.enable's, false).
    assert s0[P + "unclean_leader_election_enabled"] == 0
    assert s1[P + "unclean_leader_election_enabled"] == 0
    for s in (s0, s1):
        assert s[P + 'zookeeper_session_state{state="connected"}'] == 1
        assert s[P + 'zookeeper_session_state{state="lost"}'] == 0
    # Events were queued and processed: the failover and the new topic.
    assert s0[P + "event_queue_time_seconds_count"] > 0
    assert s0[P + 'event_processing_seconds_count{state="ControllerChange"}'] >= 1
    assert s0[P + 'event_processing_seconds_count{state="TopicChange"}'] >= 1
    # The channel: a queue per broker, requests sent and timed per broker and request kind.
    for b in (1, 2, 3):
        assert f'{P}channel_queue_size{{broker_id="{b}"}}' in s0
        assert s0[f'{P}channel_request_queue_time_seconds_count{{broker_id="{b}"}}'] >= 1
        assert s0[f'{P}channel_request_send_seconds_count{{broker_id="{b}",request="UpdateMetadata"}}'] >= 1  # noqa: E501
    assert s0[f'{P}channel_request_send_seconds_count{{broker_id="1",request="LeaderAndIsr"}}'] >= 1
    assert not [k for k in s1 if k.startswith(P + "channel_queue_size{")]  # standby: no channel
    # ZooKeeper calls are timed; batched ones report their size.
    assert s0[P + 'zookeeper_request_seconds_count{operation="multi"}'] >= 1
    assert s0[P + 'zookeeper_request_seconds_count{operation="get_many"}'] >= 1
    assert s0[P + 'zookeeper_batch_size_count{operation="get_many"}'] >= 1
    assert s1[P + 'zookeeper_request_seconds_count{operation="get"}'] >= 1  # standby watches

    # Broker 1 dies: partition 0 moves to broker 2 (an offline election) and is no longer led
    # by its preferred replica; the channel drops broker 1's series.
    before = metrics(c0)
    cluster.kill_broker(1)
    cluster.wait_state("t", 0, leader=2)
    wait_metric(c0, "active_broker_count", 2)
    wait_metric(c0, "preferred_replica_imbalance_count", 1)
    after = metrics(c0)
    assert after[P + 'leader_elections_total{type="offline"}'] == (
        before[P + 'leader_elections_total{type="offline"}'] + 1
    )
    assert after[P + 'event_processing_seconds_count{state="BrokerChange"}'] > (
        before[P + 'event_processing_seconds_count{state="BrokerChange"}']
    )
    assert f'{P}channel_queue_size{{broker_id="1"}}' not in after
    assert not [k for k in after if 'broker_id="1"' in k]
    assert after[P + "offline_partitions_count"] == 0

    # Broker 3, the only replica of partition 1, dies: the partition is offline...
    cluster.kill_broker(3)
    wait_metric(c0, "offline_partitions_count", 1)
    assert value(c0, "active_broker_count") == 1
    assert value(c1, "offline_partitions_count") == 0  # the standby reports 0, as in Kafka
    # ... and comes back with it.
    cluster.start_broker(3)
    cluster.wait_state("t", 1, leader=3)
    wait_metric(c0, "offline_partitions_count", 0)
    wait_metric(c0, "active_broker_count", 2)
    assert f'{P}channel_queue_size{{broker_id="3"}}' in metrics(c0)

    # Failover: the active controller stops; the standby takes over with a higher epoch.
    epoch = value(c0, "controller_epoch")
    cluster.stop_controller(0)
    wait_metric(c1, "active_controller_count", 1)
    # ActiveControllerCount is live (set on election, as Kafka's); the context gauges are
    # refreshed once the failover event is done.
    wait_metric(c1, "global_partition_count", 2)
    s1 = metrics(c1)
    assert s1[P + "failovers_total"] == 1
    assert s1[P + "controller_epoch"] == epoch + 1
    assert s1[P + "global_topic_count"] == 1
    assert s1[P + "global_partition_count"] == 2
    assert s1[P + "active_broker_count"] == 2
    assert s1[P + "preferred_replica_imbalance_count"] == 1  # partition 0, led by broker 2
    assert f'{P}channel_queue_size{{broker_id="2"}}' in s1
