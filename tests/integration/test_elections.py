"""Leader elections end to end (§2.8): a real ZooKeeper, controller daemons, reference brokers
and real gRPC. Elections are requested the way Kafka's tools do (``/admin/preferred_replica_
election``), through the ElectLeaders admin RPC, and through ``zk-controller elect``; the
automatic rebalance and the unclean-election switches run on their own.

Partitions are seeded in ZooKeeper before the controller starts (assignment and state znode,
as an earlier controller would have left them), so that a leader other than the preferred
replica is in place with the preferred replica in the ISR.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from controller.admin.controller_client import ControllerClient
from controller.api.errors import Errors, controller_hint
from controller.api.v1 import admin_pb2, admin_pb2_grpc, broker_pb2, common_pb2
from controller.core.model import TopicPartition
from controller.handlers import elections
from controller.zk import paths
from controller.zk.kazoo_port import KazooPort
from tests.cluster import Cluster
from tests.support import REPO, wait_until

CONTROLLER = 9
PREFERRED = admin_pb2.ELECTION_TYPE_PREFERRED
UNCLEAN = admin_pb2.ELECTION_TYPE_UNCLEAN
NO_AUTO_REBALANCE = {"auto.leader.rebalance.enable": "false"}
# Reference brokers replicate: followers fetch and leaders grow or shrink the ISR through
# AlterPartition. Tests that seed an ISR on purpose (a live replica left out of it) stop that.
FROZEN_ISR: dict[str, Any] = {
    "replica_fetch_interval_ms": 600_000,
    "replica_lag_time_max_ms": 600_000,
}
ZNODE = paths.PREFERRED_REPLICA_ELECTION


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


@pytest.fixture
def client(cluster: Cluster) -> Iterator[ControllerClient]:
    port = KazooPort(cluster.connect)
    port.start()
    c = ControllerClient(port, timeout_s=15)
    yield c
    c.close()
    port.stop()


def seed(
    cluster: Cluster, topic: str, partitions: dict[int, tuple[list[int], int, list[int]]]
) -> None:
    """``/brokers/topics/T`` and each ``.../partitions/P/state`` as Kafka writes them:
    ``{p: (replicas, leader, isr)}``, leader epoch 0, written by controller epoch 0."""
    cluster.create_topic(topic, {p: replicas for p, (replicas, _, _) in partitions.items()})
    for p, (_, leader, isr) in partitions.items():
        state = {"controller_epoch": 0, "leader": leader, "version": 1, "leader_epoch": 0,
                 "isr": isr}  # fmt: skip
        cluster.zk.create(
            paths.partition_state_path(topic, p), json.dumps(state).encode(), makepath=True
        )


def start(cluster: Cluster, brokers: tuple[int, ...] = (1, 2, 3), **settings: str) -> None:
    """Brokers with a frozen ISR, then the controller."""
    for b in brokers:
        cluster.start_broker(b, **FROZEN_ISR)
    cluster.start_controller(CONTROLLER, **settings)
    cluster.active_controller()


def request_zk_election(cluster: Cluster, data: bytes) -> None:
    """What kafka-preferred-replica-election.sh does: create the znode (only when absent)."""
    cluster.zk.create(ZNODE, data, makepath=True)


def zk_request(*tps: tuple[str, int]) -> bytes:
    return json.dumps(
        {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in tps]}
    ).encode()


def wait_znode_consumed(cluster: Cluster) -> None:
    wait_until(lambda: cluster.zk.exists(ZNODE) is None, what=f"{ZNODE} deleted")


def elect(client: ControllerClient, kind: int, *tps: tuple[str, int]) -> dict[str, Any]:
    response = client.admin(
        "ElectLeaders",
        admin_pb2.ElectLeadersRequest(
            election_type=kind,
            partitions=[common_pb2.TopicPartition(topic=t, partition=p) for t, p in tps],
        ),
    )
    assert response.error_code == Errors.NONE, response
    return {
        f"{r.topic}-{r.partition}": (
            r.leader if r.error_code == Errors.NONE else Errors(r.error_code).name
        )
        for r in response.results
    }


def role(cluster: Cluster, broker: int, topic: str, partition: int) -> int:
    hosted = cluster.hosted(broker).get(TopicPartition(topic, partition))
    return broker_pb2.PARTITION_ROLE_UNSPECIFIED if hosted is None else hosted.role


# -- /admin/preferred_replica_election ----------------------------------------------------


def test_zk_preferred_election_moves_leaders_and_deletes_the_znode(cluster: Cluster) -> None:
    seed(cluster, "t", {0: ([1, 2, 3], 2, [1, 2, 3]), 1: ([2, 3, 1], 3, [2, 3, 1]),
                        2: ([3, 1, 2], 3, [3, 1, 2])})  # fmt: skip
    start(cluster, **NO_AUTO_REBALANCE)
    request_zk_election(cluster, zk_request(("t", 0), ("t", 1)))
    wait_znode_consumed(cluster)
    s0 = cluster.state("t", 0)
    s1 = cluster.state("t", 1)
    assert (s0["leader"], s0["leader_epoch"], s0["isr"]) == (1, 1, [1, 2, 3])  # ISR unchanged
    assert (s1["leader"], s1["leader_epoch"], s1["isr"]) == (2, 1, [2, 3, 1])
    assert cluster.state("t", 2)["leader_epoch"] == 0  # not requested, untouched
    wait_until(
        lambda: (
            role(cluster, 1, "t", 0) == broker_pb2.PARTITION_ROLE_LEADER
            and role(cluster, 2, "t", 0) == broker_pb2.PARTITION_ROLE_FOLLOWER
            and cluster.metadata(3)[TopicPartition("t", 1)].leader == 2
        ),
        what="brokers learn the new leaders",
    )


def test_preferred_replica_offline_keeps_the_leader_and_still_deletes_the_znode(
    cluster: Cluster,
) -> None:
    seed(cluster, "t", {0: ([1, 2, 3], 1, [1, 2, 3])})
    start(cluster, **NO_AUTO_REBALANCE)
    cluster.kill_broker(1)
    before = cluster.wait_state("t", 0, leader=2, isr=[2, 3])
    request_zk_election(cluster, zk_request(("t", 0)))
    wait_znode_consumed(cluster)
    assert cluster.state("t", 0) == before  # no write at all: the leader stays 2
    # The watch is re-armed: a later request is seen (and fails the same way).
    request_zk_election(cluster, zk_request(("t", 0)))
    wait_znode_consumed(cluster)
    assert cluster.state("t", 0) == before


def test_back_to_back_preferred_elections(cluster: Cluster) -> None:
    seed(cluster, "t", {p: ([1, 2], 2, [1, 2]) for p in range(3)})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    for p in range(3):
        # Each request is written as soon as the previous znode is gone.
        request_zk_election(cluster, zk_request(("t", p)))
        wait_znode_consumed(cluster)
        assert cluster.state("t", p)["leader"] == 1
    # One that is already done: consumed, nothing written.
    request_zk_election(cluster, zk_request(("t", 0)))
    wait_znode_consumed(cluster)
    assert cluster.state("t", 0)["leader_epoch"] == 1


def test_zk_request_with_unknown_partitions_elects_the_known_ones(cluster: Cluster) -> None:
    seed(cluster, "t", {0: ([1, 2], 2, [1, 2])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    request_zk_election(cluster, zk_request(("nope", 0), ("t", 0), ("t", 7)))
    wait_znode_consumed(cluster)
    assert cluster.state("t", 0)["leader"] == 1


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"{not json", id="invalid-json"),
        pytest.param(b"", id="empty"),
        pytest.param(b'["t", 0]', id="not-an-object"),
        pytest.param(b'{"version": 1, "partitions": {}}', id="partitions-not-a-list"),
        pytest.param(
            b'{"version": 1, "partitions": [{"topic": "t", "partition": "0"}]}',
            id="partition-not-an-integer",
        ),
        pytest.param(b'{"version": 1}', id="no-partitions"),
    ],
)
def test_malformed_znode_is_consumed_and_the_controller_keeps_serving(
    cluster: Cluster, data: bytes
) -> None:
    seed(cluster, "t", {0: ([1, 2], 2, [1, 2]), 1: ([1, 2], 2, [1, 2])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    before = {p: cluster.state("t", p) for p in (0, 1)}
    request_zk_election(cluster, data)
    wait_znode_consumed(cluster)
    # Nothing was elected from the bad request; the topic is intact.
    assert {p: cluster.state("t", p) for p in (0, 1)} == before
    # Still serving: the next (valid) request works.
    request_zk_election(cluster, zk_request(("t", 1)))
    wait_znode_consumed(cluster)
    assert cluster.state("t", 1)["leader"] == 1
    assert cluster.state("t", 0) == before[0]
    assert cluster.active_controller().controller.is_active


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'{"partitions": [{"topic": "t", "partition": 0}]}', id="no-version"),
        pytest.param(zk_request(("t", 0), ("t", 0)), id="duplicates"),
        pytest.param(zk_request(("a/b", 0), ("t", -1), ("t", 0)), id="impossible-names"),
    ],
)
def test_znode_content_kafka_accepts_is_elected(cluster: Cluster, data: bytes) -> None:
    # Kafka's decoder reads only "partitions", as a set: a file written by hand for the old
    # election tool (no version), naming a partition twice, or naming partitions no cluster
    # can have (skipped as unknown) is a valid request for the rest.
    seed(cluster, "t", {0: ([1, 2], 2, [1, 2])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    request_zk_election(cluster, data)
    wait_znode_consumed(cluster)
    assert cluster.wait_state("t", 0, leader=1)["leader_epoch"] == 1


def test_pending_znode_is_processed_at_failover(cluster: Cluster) -> None:
    seed(cluster, "t", {0: ([1, 2], 2, [1, 2]), 1: ([1, 2], 1, [1, 2])})
    request_zk_election(cluster, zk_request(("t", 0), ("t", 1)))  # before any controller
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    wait_znode_consumed(cluster)
    assert cluster.wait_state("t", 0, leader=1)["leader_epoch"] == 1
    assert cluster.state("t", 1)["leader_epoch"] == 0  # already preferred: left alone
    # The creation watch is armed after the failover's deletion.
    request_zk_election(cluster, zk_request(("t", 0)))
    wait_znode_consumed(cluster)


# -- ElectLeaders admin RPC ---------------------------------------------------------------


def test_elect_leaders_preferred_gives_a_result_per_partition(
    cluster: Cluster, client: ControllerClient
) -> None:
    seed(cluster, "t", {0: ([1, 2, 3], 2, [1, 2, 3]), 1: ([3, 1, 2], 3, [3, 1, 2]),
                        2: ([1, 2, 3], 2, [2, 3])})  # fmt: skip
    start(cluster, **NO_AUTO_REBALANCE)
    results = elect(client, PREFERRED, ("t", 0), ("t", 1), ("t", 2), ("nope", 0), ("t", 9))
    assert results == {
        "t-0": 1,
        "t-1": "ELECTION_NOT_NEEDED",
        "t-2": "PREFERRED_LEADER_NOT_AVAILABLE",  # preferred replica 1 is not in the ISR
        "nope-0": "UNKNOWN_TOPIC_OR_PARTITION",
        "t-9": "UNKNOWN_TOPIC_OR_PARTITION",
    }
    assert cluster.state("t", 0)["leader"] == 1
    assert cluster.state("t", 2)["leader"] == 2
    assert cluster.zk.exists(ZNODE) is None  # the admin API never writes the znode


def test_elect_leaders_with_no_partitions_means_all(
    cluster: Cluster, client: ControllerClient
) -> None:
    seed(cluster, "t", {0: ([1, 2], 2, [1, 2]), 1: ([2, 1], 2, [2, 1])})
    seed(cluster, "u", {0: ([2, 1], 1, [1, 2])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    # As Kafka: partitions already led by their preferred replica are left out (t-1).
    assert elect(client, PREFERRED) == {"t-0": 1, "u-0": 2}
    assert elect(client, PREFERRED) == {}


def test_elect_leaders_unclean_elects_outside_the_isr(
    cluster: Cluster, client: ControllerClient
) -> None:
    seed(cluster, "t", {0: ([1, 2], 1, [1]), 1: ([2, 1], 2, [2, 1])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    cluster.kill_broker(1)
    # The last ISR member died: no leader, the ISR keeps it (pitfall 1).
    cluster.wait_state("t", 0, leader=-1, isr=[1])
    results = elect(client, UNCLEAN, ("t", 0), ("t", 1))
    assert results == {"t-0": 2, "t-1": "ELECTION_NOT_NEEDED"}
    state = cluster.state("t", 0)
    assert (state["leader"], state["isr"], state.get("leader_recovery_state")) == (2, [2], 1)


def test_elect_leaders_unclean_without_a_live_replica_fails_for_that_partition(
    cluster: Cluster, client: ControllerClient
) -> None:
    seed(cluster, "t", {0: ([1], 1, [1])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    cluster.kill_broker(1)
    before = cluster.wait_state("t", 0, leader=-1)
    assert elect(client, UNCLEAN, ("t", 0)) == {"t-0": "ELIGIBLE_LEADERS_NOT_AVAILABLE"}
    assert cluster.state("t", 0) == before


def test_elect_leaders_unknown_election_type_is_refused(
    cluster: Cluster, client: ControllerClient
) -> None:
    seed(cluster, "t", {0: ([1, 2], 2, [1, 2])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    before = cluster.state("t", 0)
    response = client.admin(
        "ElectLeaders",
        admin_pb2.ElectLeadersRequest(
            election_type=7, partitions=[common_pb2.TopicPartition(topic="t", partition=0)]
        ),
    )
    assert response.error_code == Errors.INVALID_REQUEST
    assert "unknown election type 7" in response.error_message
    assert cluster.state("t", 0) == before
    assert elect(client, PREFERRED, ("t", 0)) == {"t-0": 1}  # still serving


def stale_client(visited: list[str]) -> type[ControllerClient]:
    """A ControllerClient whose first discovery names the standby (as when the controller has
    just moved), recording every address it connects to in ``visited``."""

    class StaleClient(ControllerClient):
        first = True

        def active_controller_id(self) -> int | None:
            if self.first:
                self.first = False
                return CONTROLLER + 1
            return super().active_controller_id()

        def _channel(self, address: str) -> grpc.Channel:
            visited.append(address)
            return super()._channel(address)

    return StaleClient


def test_standby_answers_not_controller_naming_the_active_one(
    cluster: Cluster, client: ControllerClient
) -> None:
    seed(cluster, "t", {0: ([1, 2], 2, [1, 2])})
    for b in (1, 2):
        cluster.start_broker(b, **FROZEN_ISR)
    cluster.start_controller(CONTROLLER, **NO_AUTO_REBALANCE)
    active = cluster.active_controller()
    standby = cluster.start_controller(CONTROLLER + 1, **NO_AUTO_REBALANCE)
    assert active is cluster.controllers[CONTROLLER]
    wait_until(lambda: standby.controller.active_controller_id == CONTROLLER,
               what="the standby knows the active controller")  # fmt: skip
    with grpc.insecure_channel(standby.grpc.address) as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        response, call = stub.ElectLeaders.with_call(
            admin_pb2.ElectLeadersRequest(
                election_type=PREFERRED,
                partitions=[common_pb2.TopicPartition(topic="t", partition=0)],
            ),
            timeout=10,
        )
    assert response.error_code == Errors.NOT_CONTROLLER
    assert controller_hint(call.trailing_metadata()) == CONTROLLER
    assert cluster.state("t", 0)["leader"] == 2  # the standby did nothing

    # A client that first lands on the standby follows the hint to the active controller.
    visited: list[str] = []

    stale = stale_client(visited)(client._port, timeout_s=15)
    try:
        assert elect(stale, PREFERRED, ("t", 0)) == {"t-0": 1}
    finally:
        stale.close()
    assert visited == [standby.grpc.address, active.grpc.address]


# -- the CLI --------------------------------------------------------------------------------


def run_cli(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller", "elect", "--zookeeper", cluster.connect, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


def test_cli_preferred_election_for_a_topic(cluster: Cluster) -> None:
    seed(cluster, "t", {0: ([1, 2], 2, [1, 2]), 1: ([2, 1], 2, [2, 1]), 2: ([1, 2], 2, [2])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    done = run_cli(cluster, "--type", "preferred", "--topic", "t")
    assert done.returncode == 1, done
    assert done.stdout.splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions t-0",
        "Valid replica already elected for partitions t-1",
        "Error completing leader election (PREFERRED) for partition: t-2: "
        "PREFERRED_LEADER_NOT_AVAILABLE: Failed to elect leader for partition t-2 under "
        "strategy PreferredReplicaPartitionLeaderElectionStrategy",
    ]
    assert done.stderr == "zk-controller: error: 1 replica(s) could not be elected\n"
    assert cluster.state("t", 0)["leader"] == 1


def test_cli_single_partition_json_and_all(cluster: Cluster) -> None:
    seed(cluster, "t", {0: ([1, 2], 2, [1, 2]), 1: ([1, 2], 2, [1, 2])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    done = run_cli(cluster, "--type", "preferred", "--topic", "t", "--partition", "1", "--json")
    assert done.returncode == 0, done
    assert json.loads(done.stdout) == {
        "election_type": "PREFERRED",
        "results": [{"topic": "t", "partition": 1, "leader": 1, "error": None, "message": None}],
    }
    assert cluster.state("t", 0)["leader"] == 2
    done = run_cli(cluster, "--type", "preferred", "--all")
    assert done.returncode == 0, done
    # Over all partitions, those already led by their preferred replica are not listed.
    assert done.stdout.splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions t-0",
    ]


def test_cli_unclean_election_elects_outside_the_isr_and_is_counted(cluster: Cluster) -> None:
    seed(cluster, "t", {0: ([1, 2], 1, [1])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    cluster.kill_broker(1)
    cluster.wait_state("t", 0, leader=-1, isr=[1])
    done = run_cli(cluster, "--type", "unclean", "--topic", "t", "--partition", "0")
    assert done.returncode == 0, done
    assert done.stdout.splitlines() == [
        "Successfully completed leader election (UNCLEAN) for partitions t-0"
    ]
    state = cluster.state("t", 0)
    assert (state["leader"], state["isr"], state.get("leader_recovery_state")) == (2, [2], 1)
    registry = cluster.active_controller().metrics.registry
    assert registry.get_sample_value("kafka_controller_unclean_leader_elections_total") == 1.0
    by_type = {"type": "offline_unclean"}
    assert registry.get_sample_value("kafka_controller_leader_elections_total", by_type) == 1.0


def test_cli_takes_kafkas_spellings_and_a_json_file(cluster: Cluster, tmp_path: Path) -> None:
    """kafka-leader-election.sh's options: --election-type, --all-topic-partitions and
    --path-to-json-file, whose partitions alone are elected."""
    seed(cluster, "t", {0: ([1, 2], 2, [1, 2]), 1: ([1, 2], 2, [1, 2])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    listed = tmp_path / "partitions.json"
    listed.write_text(json.dumps({"partitions": [{"topic": "t", "partition": 0}]}))
    done = run_cli(cluster, "--election-type", "PREFERRED", "--path-to-json-file", str(listed))
    assert done.returncode == 0, done
    assert done.stdout.splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions t-0"
    ]
    assert (cluster.state("t", 0)["leader"], cluster.state("t", 1)["leader"]) == (1, 2)
    done = run_cli(cluster, "--election-type", "preferred", "--all-topic-partitions")
    assert done.returncode == 0, done
    assert done.stdout.splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions t-1",
    ]
    listed.write_text('{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t"}]}')
    done = run_cli(cluster, "--type", "preferred", "--path-to-json-file", str(listed))
    assert (done.returncode, done.stdout) == (1, "")
    assert "partitions[1]: 'partition' must be a non-negative integer" in done.stderr


def test_cli_errors_are_one_line(cluster: Cluster) -> None:
    start(cluster, brokers=(1,), **NO_AUTO_REBALANCE)
    done = run_cli(cluster, "--type", "preferred", "--topic", "missing")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "zk-controller: error: topic 'missing' does not exist\n"
    # A topic znode without partitions (written by another tool): an empty request would mean
    # every partition of the cluster, so nothing is sent.
    cluster.zk.create(paths.topic_path("empty"), b'{"version":3,"partitions":{}}')
    done = run_cli(cluster, "--type", "unclean", "--topic", "empty")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "zk-controller: error: topic 'empty' has no partitions\n"
    done = run_cli(cluster, "--type", "unclean", "--all", "--partition", "0")
    assert done.stderr == "zk-controller: error: --partition needs --topic\n"


def test_cli_follows_a_standby_to_the_active_controller(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI's discovery lands on the standby (as when the controller just moved); the
    standby's NOT_CONTROLLER answer names the active one and the CLI goes there."""
    from controller.cli import admin_common
    from controller.cli.main import main

    seed(cluster, "t", {0: ([1, 2], 2, [1, 2])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    standby = cluster.start_controller(CONTROLLER + 1, **NO_AUTO_REBALANCE)
    visited: list[str] = []

    # The admin commands reach the controller through admin_common.call_controller_admin.
    monkeypatch.setattr(admin_common, "ControllerClient", stale_client(visited))
    code = main(["elect", "--zookeeper", cluster.connect, "--type", "preferred", "--topic", "t"])
    assert code == 0
    assert "Successfully completed leader election (PREFERRED) for partitions t-0" in (
        capsys.readouterr().out
    )
    assert visited[0] == standby.grpc.address
    assert visited[-1] == cluster.controllers[CONTROLLER].grpc.address


# -- automatic rebalance --------------------------------------------------------------------


def test_auto_rebalance_returns_leadership_after_the_preferred_replica_comes_back(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real replication: broker 1 comes back, fetches from the leader, the leader adds it to
    the ISR (AlterPartition), and the next rebalance check moves leadership back to it."""
    monkeypatch.setattr(elections, "FIRST_REBALANCE_CHECK_DELAY_S", 0.2)
    fast = {"replica_fetch_interval_ms": 100}
    cluster.start_broker(1, **fast)
    cluster.start_broker(2, **fast)
    cluster.start_controller(CONTROLLER, **{"leader.imbalance.check.interval.seconds": "1"})
    cluster.active_controller()
    cluster.create_topic("t", {0: [1, 2], 1: [1, 2], 2: [2, 1]})
    cluster.wait_state("t", 0, leader=1, isr=[1, 2])
    cluster.wait_state("t", 1, leader=1, isr=[1, 2])
    cluster.kill_broker(1)
    cluster.wait_state("t", 0, leader=2, isr=[2])
    cluster.wait_state("t", 1, leader=2, isr=[2])
    cluster.start_broker(1, **fast)
    # 2 of the 2 partitions preferring broker 1 are led elsewhere (100 % > 10 %): once
    # broker 1 is back in their ISR, they are led by it again.
    for p in (0, 1):
        state = cluster.wait_state("t", p, leader=1, isr=[2, 1], timeout=15)
        # Failure and preferred election bump the epoch; the ISR expansion does not.
        assert state["leader_epoch"] == 2
    assert cluster.state("t", 2)["leader"] == 2
    wait_until(
        lambda: role(cluster, 1, "t", 0) == broker_pb2.PARTITION_ROLE_LEADER,
        what="broker 1 leads t-0 again",
    )


def test_auto_rebalance_below_the_threshold_does_nothing(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(elections, "FIRST_REBALANCE_CHECK_DELAY_S", 0.1)
    # 10 partitions prefer broker 1, one is led by 2: 10 % is not > 10 %.
    seed(cluster, "t", {p: ([1, 2], 2 if p == 0 else 1, [1, 2]) for p in range(10)})
    start(cluster, brokers=(1, 2), **{"leader.imbalance.check.interval.seconds": "1"})
    ctl = cluster.active_controller().controller
    runs_before = _auto_rebalance_runs(cluster)
    wait_until(lambda: _auto_rebalance_runs(cluster) >= runs_before + 2,
               what="two rebalance checks")  # fmt: skip
    assert ctl.is_active
    assert cluster.state("t", 0)["leader"] == 2


def _auto_rebalance_runs(cluster: Cluster) -> float:
    """How many AutoPreferredReplicaLeaderElection events were processed (Kafka's
    AutoLeaderBalanceRateAndTimeMs timer)."""
    for metric in cluster.active_controller().metrics.registry.collect():
        for sample in metric.samples:
            if sample.labels.get("state") == "AutoLeaderBalance" and sample.name.endswith("_count"):
                return sample.value
    return 0.0


# -- unclean.leader.election.enable switched on ------------------------------------------


def change_topic_config(cluster: Cluster, topic: str, config: dict[str, str]) -> None:
    """Kafka's AdminZkClient.changeTopicConfig: the config znode, then a change notification."""
    path = paths.topic_config_path(topic)
    data = json.dumps({"version": 1, "config": config}).encode()
    if cluster.zk.exists(path):
        cluster.zk.set(path, data)
    else:
        cluster.zk.create(path, data, makepath=True)
    cluster.zk.create(
        f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}",
        json.dumps({"version": 2, "entity_path": f"topics/{topic}"}).encode(),
        sequence=True,
        makepath=True,
    )


def offline_last_isr(cluster: Cluster) -> None:
    """t-0 [1, 2] with ISR [1]; broker 1 dies: no leader, and broker 2 is not in the ISR."""
    seed(cluster, "t", {0: ([1, 2], 1, [1])})
    seed(cluster, "u", {0: ([1, 2], 1, [1])})
    start(cluster, brokers=(1, 2), **NO_AUTO_REBALANCE)
    cluster.kill_broker(1)
    cluster.wait_state("t", 0, leader=-1, isr=[1])
    cluster.wait_state("u", 0, leader=-1, isr=[1])


def test_topic_unclean_enabled_through_config_changes_elects_at_once(cluster: Cluster) -> None:
    offline_last_isr(cluster)
    change_topic_config(cluster, "t", {"unclean.leader.election.enable": "true"})
    state = cluster.wait_state("t", 0, leader=2, isr=[2])
    assert state["leader_recovery_state"] == 1
    assert cluster.state("u", 0)["leader"] == -1  # other topics are not touched
    # A malformed notification among good ones is skipped; the good ones still work.
    cluster.zk.create(f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}", b"{oops",
                      sequence=True)  # fmt: skip
    change_topic_config(cluster, "u", {"unclean.leader.election.enable": "TRUE"})
    cluster.wait_state("u", 0, leader=2, isr=[2])


def test_topic_config_without_unclean_does_nothing(cluster: Cluster) -> None:
    offline_last_isr(cluster)
    change_topic_config(cluster, "t", {"retention.ms": "1000"})
    change_topic_config(cluster, "t", {"unclean.leader.election.enable": "false"})
    # The controller has read both notifications once it reacts to a later one.
    change_topic_config(cluster, "u", {"unclean.leader.election.enable": "true"})
    cluster.wait_state("u", 0, leader=2)
    assert cluster.state("t", 0)["leader"] == -1


def test_configs_cli_turns_unclean_on_for_one_topic_and_the_controller_elects(
    cluster: Cluster,
) -> None:
    """``zk-controller configs alter``, as an operator runs it: the controller sees the
    notification, elects t-0's only live replica, and leaves u-0 alone."""
    offline_last_isr(cluster)
    alter = [sys.executable, "-m", "controller", "configs", "alter", "--zookeeper",
             cluster.connect, "--topic", "t"]  # fmt: skip
    done = subprocess.run(
        [*alter, "--add-config", "unclean.leader.election.enable=true"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, ""), done
    state = cluster.wait_state("t", 0, leader=2, isr=[2])
    assert state["leader_recovery_state"] == 1
    assert cluster.state("u", 0)["leader"] == -1
    done = subprocess.run(
        [*alter, "--delete-config", "unclean.leader.election.enable"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done
    assert json.loads(cluster.zk.get(paths.topic_config_path("t"))[0]) == {
        "version": 1,
        "config": {},
    }


def test_configs_cli_turns_unclean_on_for_the_cluster_and_the_controller_elects(
    cluster: Cluster,
) -> None:
    """``configs alter --entity-type brokers --entity-default``: the dynamic broker default
    overrides the controller's own (off) setting, and every offline partition is elected (the
    read at failover is in ``tests/unit/test_election_handlers.py``)."""
    offline_last_isr(cluster)
    done = subprocess.run(
        [sys.executable, "-m", "controller", "configs", "alter", "--zookeeper", cluster.connect,
         "--entity-type", "brokers", "--entity-default",
         "--add-config", "unclean.leader.election.enable=true"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, ""), done
    cluster.wait_state("t", 0, leader=2, isr=[2])
    cluster.wait_state("u", 0, leader=2, isr=[2])
    assert cluster.active_controller().controller.unclean_leader_election_default is True


def test_cluster_unclean_enabled_by_reload_elects_offline_partitions(cluster: Cluster) -> None:
    offline_last_isr(cluster)
    daemon = cluster.active_controller()
    new = dataclasses.replace(daemon.config, unclean_leader_election_enable=True)
    daemon.apply_config(new)
    cluster.wait_state("t", 0, leader=2, isr=[2])
    cluster.wait_state("u", 0, leader=2, isr=[2])
