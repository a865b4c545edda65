"""Topic deletion end to end (reference §2.6): a real ZooKeeper, controller daemons, reference
brokers over real gRPC. Requests arrive as Kafka's tools make them (``/admin/delete_topics/T``)
or through ``zk-controller topics delete``; the StopReplica(deletePartition=true) round trip is
driven by the brokers' answers, and every znode of the topic goes at the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.core.model import TopicPartition
from controller.daemon import ControllerDaemon
from controller.zk import paths
from tests.cluster import Cluster
from tests.integration.test_reassignment import hold, release, wait_topic
from tests.support import scrape, wait_until

pytestmark = pytest.mark.zookeeper

CLI = str(Path(sys.executable).with_name("zk-controller"))
P = "kafka_controller_"
T = [TopicPartition("t", 0), TopicPartition("t", 1)]
DELETION_METRICS = (
    "topics_to_delete_count",
    "replicas_to_delete_count",
    "topics_ineligible_to_delete_count",
    "replicas_ineligible_to_delete_count",
)


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


def deletion_metrics(daemon: ControllerDaemon) -> tuple[float, ...]:
    assert daemon.http is not None
    scraped = scrape(f"{daemon.http.url}/metrics")
    return tuple(scraped[P + name] for name in DELETION_METRICS)


def wait_metrics(cluster: Cluster, expected: tuple[float, ...]) -> None:
    wait_until(
        lambda: deletion_metrics(cluster.active_controller()) == expected,
        what=f"deletion metrics {dict(zip(DELETION_METRICS, expected, strict=True))}",
    )


def three_brokers_and_topic(cluster: Cluster, *controllers: int, **settings: str) -> None:
    for b in (1, 2, 3):
        cluster.start_broker(b)
    for c in controllers or (0,):
        cluster.start_controller(c, **settings)
    cluster.active_controller()
    cluster.zk.create(
        paths.topic_config_path("t"),
        json.dumps({"version": 1, "config": {"retention.ms": "1000"}}).encode(),
        makepath=True,
    )
    cluster.create_topic("t", {0: [1, 2, 3], 1: [2, 3, 1]})
    cluster.wait_state("t", 0, leader=1)
    cluster.wait_state("t", 1, leader=2)
    for b in (1, 2, 3):
        wait_until(lambda b=b: set(T) <= set(cluster.hosted(b)), what=f"broker {b} hosts t")


def topic_znodes(cluster: Cluster, topic: str = "t") -> list[str]:
    """The znodes of ``topic`` that still exist."""
    candidates = [
        paths.topic_path(topic),
        paths.topic_config_path(topic),
        paths.delete_topic_path(topic),
        *(paths.partition_state_path(topic, p) for p in range(2)),
    ]
    return [p for p in candidates if cluster.zk.exists(p)]


def wait_gone(cluster: Cluster, topic: str = "t") -> None:
    wait_until(lambda: topic_znodes(cluster, topic) == [], what=f"every znode of {topic} deleted")


def hosts_none(cluster: Cluster, brokers: tuple[int, ...], topic: str = "t") -> bool:
    return all(
        not any(tp.topic == topic for tp in cluster.hosted(b))
        and not any(tp.topic == topic for tp in cluster.metadata(b))
        for b in brokers
    )


def cli(*args: str, zk: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ZK_CONNECT": zk}
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=60)


def test_zk_request_deletes_the_topic_everywhere(cluster: Cluster):
    three_brokers_and_topic(cluster)
    wait_metrics(cluster, (0, 0, 0, 0))
    cluster.zk.create(paths.delete_topic_path("t"), makepath=True)  # what Kafka's tools write
    wait_gone(cluster)
    # Every replica was deleted by its broker; every metadata cache dropped the topic.
    wait_until(lambda: hosts_none(cluster, (1, 2, 3)), what="brokers dropped t")
    assert cluster.zk.get_children(paths.DELETE_TOPICS) == []
    daemon = cluster.active_controller()
    assert daemon.controller.call(lambda c: "t" not in c.context.all_topics)
    wait_metrics(cluster, (0, 0, 0, 0))
    # The name can be used again: the old topic's watch no longer reacts.
    cluster.create_topic("t", {0: [3]})
    state = cluster.wait_state("t", 0, leader=3)
    assert (state["leader_epoch"], state["isr"]) == (0, [3])


def test_cli_delete_with_a_replica_offline_resumes_when_the_broker_returns(cluster: Cluster):
    three_brokers_and_topic(cluster)
    cluster.kill_broker(3)
    cluster.wait_state("t", 0, isr=[1, 2])
    result = cli("topics", "delete", "t", zk=cluster.connect)
    assert result.returncode == 0, result.stderr
    assert "Topic t is marked for deletion." in result.stdout
    # Brokers 1 and 2 delete their replicas; broker 3's two replicas hold the topic back.
    wait_until(lambda: hosts_none(cluster, (1, 2)), what="brokers 1 and 2 dropped t")
    # Queued, ineligible, two replicas left (broker 3's, reset to OfflineReplica for a retry).
    wait_metrics(cluster, (1, 2, 1, 0))
    assert paths.topic_path("t") in topic_znodes(cluster)
    assert cluster.zk.exists(paths.delete_topic_path("t"))
    listed = cli("topics", "list", zk=cluster.connect)
    assert listed.stdout.strip() == "t - marked for deletion"
    cluster.start_broker(3)
    wait_gone(cluster)
    wait_until(lambda: hosts_none(cluster, (3,)), what="broker 3 dropped t")
    wait_metrics(cluster, (0, 0, 0, 0))


def test_failover_mid_deletion_is_completed_by_the_new_controller(cluster: Cluster):
    three_brokers_and_topic(cluster, 0, 1)
    first = cluster.active_controller()
    cluster.kill_broker(3)
    cluster.zk.create(paths.delete_topic_path("t"), makepath=True)
    wait_until(lambda: hosts_none(cluster, (1, 2)), what="brokers 1 and 2 dropped t")
    wait_metrics(cluster, (1, 2, 1, 0))
    cluster.stop_controller(first.config.controller_id)
    second = cluster.active_controller()
    assert second is not first
    # The new controller re-queues the request (the marker is still there) and holds it back
    # for the same reason: broker 3 is still down. Replica deletions are not persisted, so it
    # counts all six replicas as still to delete (Kafka does the same).
    wait_metrics(cluster, (1, 6, 1, 0))
    assert paths.topic_path("t") in topic_znodes(cluster)
    cluster.start_broker(3)
    wait_gone(cluster)
    wait_until(lambda: hosts_none(cluster, (3,)), what="broker 3 dropped t")
    wait_metrics(cluster, (0, 0, 0, 0))


def test_deletion_waits_for_a_reassignment_of_the_topic_to_complete(cluster: Cluster):
    three_brokers_and_topic(cluster)
    cluster.create_topic("r", {0: [1]})
    cluster.wait_state("r", 0, leader=1)
    hold(cluster, 2)  # the reassignment cannot complete while broker 2 does not catch up
    cluster.zk.create(
        paths.REASSIGN_PARTITIONS,
        json.dumps(
            {"version": 1, "partitions": [{"topic": "r", "partition": 0, "replicas": [2]}]}
        ).encode(),
        makepath=True,
    )
    wait_topic(cluster, "r", adding_replicas={"0": [2]})
    cluster.zk.create(paths.delete_topic_path("r"), makepath=True)
    # Queued but held back: nothing is deleted while its partition is being reassigned.
    wait_metrics(cluster, (1, 2, 1, 0))
    assert cluster.zk.exists(paths.topic_path("r"))
    assert TopicPartition("r", 0) in cluster.hosted(1)
    release(cluster, 2)
    wait_gone(cluster, "r")
    wait_until(lambda: not cluster.zk.exists(paths.REASSIGN_PARTITIONS), what="znode removed")
    wait_until(lambda: hosts_none(cluster, (1, 2), "r"), what="brokers dropped r")
    wait_metrics(cluster, (0, 0, 0, 0))
    assert topic_znodes(cluster) != []  # t is untouched


def test_deletion_disabled_drops_requests(cluster: Cluster):
    three_brokers_and_topic(cluster, **{"delete.topic.enable": "false"})
    cluster.zk.create(paths.delete_topic_path("t"), makepath=True)
    wait_until(lambda: not cluster.zk.exists(paths.delete_topic_path("t")), what="request dropped")
    assert topic_znodes(cluster) == [
        paths.topic_path("t"),
        paths.topic_config_path("t"),
        *(paths.partition_state_path("t", p) for p in range(2)),
    ]
    assert set(T) <= set(cluster.hosted(1))
    wait_metrics(cluster, (0, 0, 0, 0))


def test_odd_requests_are_cleaned_up_and_the_controller_keeps_serving(cluster: Cluster):
    three_brokers_and_topic(cluster)
    # A request for a topic that does not exist, one whose name Kafka would refuse, and one
    # for an existing topic carrying unexpected data: the first two are removed, the third
    # is honoured (Kafka ignores the data).
    cluster.zk.create(paths.delete_topic_path("ghost"), makepath=True)
    cluster.zk.create(f"{paths.DELETE_TOPICS}/bad name!", b"")
    cluster.zk.create(paths.delete_topic_path("t"), b"\x00garbage")
    wait_until(lambda: cluster.zk.get_children(paths.DELETE_TOPICS) == [], what="requests handled")
    wait_gone(cluster)
    # A malformed topic znode can still be deleted.
    cluster.zk.create(paths.topic_path("broken"), b"{not json")
    wait_until(
        lambda: cluster.active_controller().controller.call(
            lambda c: "broken" in c.context.all_topics
        ),
        what="broken topic seen",
    )
    cluster.zk.create(paths.delete_topic_path("broken"), makepath=True)
    wait_gone(cluster, "broken")
    # Still serving: a new topic gets its leader.
    cluster.create_topic("after", {0: [2]})
    cluster.wait_state("after", 0, leader=2)


def test_requests_are_heard_after_an_operator_removes_the_requests_znode(cluster: Cluster):
    # `deleteall /admin/delete_topics` (to drop pending requests) must not leave the
    # controller deaf to new ones until the next failover.
    three_brokers_and_topic(cluster)
    cluster.zk.delete(paths.DELETE_TOPICS, recursive=True)
    cluster.zk.create(paths.delete_topic_path("t"), makepath=True)
    wait_gone(cluster)
    wait_until(lambda: hosts_none(cluster, (1, 2, 3)), what="brokers dropped t")
