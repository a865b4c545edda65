"""Feature versioning and producer ids on a real ZooKeeper with real controllers and reference
brokers over gRPC: ``zk-controller features`` against the active controller, a broker that
cannot run the finalized levels kept out of the cluster (and let in when they change), the
levels surviving a failover, and AllocateProducerIds handing out blocks that never overlap,
from concurrent brokers and across a failover."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from controller.admin.controller_client import ControllerClient
from controller.api.errors import Errors, controller_hint
from controller.api.v1 import controller_pb2, controller_pb2_grpc
from controller.zk import paths
from tests.cluster import Cluster
from tests.integration.admin_support import cli, one_error_line
from tests.support import wait_until

pytestmark = pytest.mark.zookeeper

NO_AUTO_REBALANCE = {"auto.leader.rebalance.enable": "false"}
NEW = {"f": (1, 3)}
OLD = {"f": (1, 1)}


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    yield c
    c.close()


def feature_znode(cluster: Cluster) -> tuple[dict, int]:
    data, stat = cluster.zk.get(paths.FEATURE)
    return json.loads(data), stat.version


def live_brokers(cluster: Cluster) -> set[int]:
    ctl = cluster.active_controller().controller
    return ctl.call(lambda c: set(c.context.live_broker_ids()))


def features_cli(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("features", *args, "--zookeeper", cluster.connect)


def test_features_upgrade_downgrade_disable_and_an_incompatible_broker(cluster: Cluster) -> None:
    cluster.start_broker(1, supported_features=NEW)
    cluster.start_broker(2, supported_features=NEW)
    cluster.start_broker(3, supported_features=OLD)
    cluster.start_controller(0, **NO_AUTO_REBALANCE)
    wait_until(lambda: live_brokers(cluster) == {1, 2, 3}, what="three live brokers")
    assert feature_znode(cluster) == ({"version": 2, "status": 1, "features": {}}, 0)

    r = features_cli(cluster, "describe")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == (
        "Feature: f\tSupportedMinVersion: 1\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0\t"
        "Epoch: 0\n"
    )

    # Broker 3 supports only level 1: level 2 is refused, nothing is written.
    r = features_cli(cluster, "upgrade", "--feature", "f=2")
    assert r.returncode == 1
    assert r.stdout.startswith("Could not upgrade f to 2. ")
    assert "broker(s) 3" in r.stdout
    one_error_line(r, "1 out of 1 operation(s) failed.")
    assert feature_znode(cluster)[1] == 0

    r = features_cli(cluster, "upgrade", "--feature", "f=1", "--dry-run")
    assert (r.returncode, r.stdout) == (0, "f can be upgraded to 1.\n")
    assert feature_znode(cluster)[1] == 0

    # Without broker 3, level 2 is finalized.
    cluster.kill_broker(3)
    wait_until(lambda: live_brokers(cluster) == {1, 2}, what="broker 3 gone")
    r = features_cli(cluster, "upgrade", "--feature", "f=2")
    assert (r.returncode, r.stdout, r.stderr) == (0, "f was upgraded to 2.\n", "")
    assert feature_znode(cluster) == (
        {"version": 2, "status": 1, "features": {"f": {"max_version_level": 2}}},
        1,
    )

    # Broker 3 comes back still supporting only level 1: it is not let into the cluster.
    cluster.start_broker(3, supported_features=OLD)
    wait_until(
        lambda: cluster.active_controller().controller.call(
            lambda c: 3 in c.features.incompatible_brokers
        ),
        what="broker 3 refused",
    )
    assert live_brokers(cluster) == {1, 2}
    r = features_cli(cluster, "describe", "--json")
    described = json.loads(r.stdout)
    assert described["epoch"] == 1
    assert described["features"] == [
        {
            "name": "f",
            "supported_min_version": 1,
            "supported_max_version": 1,
            "finalized_version_level": 2,
            "unsupported_by": [3],
        }
    ]

    # Downgrading to what broker 3 supports lets it in.
    r = features_cli(cluster, "downgrade", "--feature", "f=1")
    assert (r.returncode, r.stdout) == (0, "f was downgraded to 1.\n")
    wait_until(lambda: live_brokers(cluster) == {1, 2, 3}, what="broker 3 let in")

    r = features_cli(cluster, "disable", "--feature", "f")
    assert (r.returncode, r.stdout) == (0, "f was disabled.\n")
    assert feature_znode(cluster) == ({"version": 2, "status": 1, "features": {}}, 3)

    r = features_cli(cluster, "disable", "--feature", "f")
    assert r.returncode == 1
    assert r.stdout == "Could not disable f. Can not delete non-existing finalized feature.\n"


def test_finalized_levels_survive_a_failover_and_still_keep_old_brokers_out(
    cluster: Cluster,
) -> None:
    cluster.start_broker(1, supported_features=NEW)
    cluster.start_controller(0, **NO_AUTO_REBALANCE)
    wait_until(lambda: live_brokers(cluster) == {1}, what="broker 1 live")
    r = features_cli(cluster, "upgrade", "--feature", "f=3")
    assert r.returncode == 0, r.stdout + r.stderr
    cluster.start_broker(2, supported_features=OLD)
    cluster.start_controller(1, **NO_AUTO_REBALANCE)
    cluster.stop_controller(0)  # resigns: controller 1 takes over and reads /feature
    wait_until(lambda: cluster.controllers[1].controller.is_active, what="controller 1 active")
    assert live_brokers(cluster) == {1}
    assert feature_znode(cluster) == (
        {"version": 2, "status": 1, "features": {"f": {"max_version_level": 3}}},
        1,
    )


def test_a_broker_advertises_its_features_in_kafkas_format(cluster: Cluster) -> None:
    cluster.start_broker(4, supported_features={"f": (1, 3), "g": (2, 2)})
    cluster.start_broker(5)
    data, _ = cluster.zk.get(paths.broker_path(4))
    assert json.loads(data)["features"] == {
        "f": {"min_version": 1, "max_version": 3},
        "g": {"min_version": 2, "max_version": 2},
    }
    # brokers list shows the ranges (and nothing for a broker advertising none).
    r = cli("brokers", "list", "--zookeeper", cluster.connect)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Broker: 4\t") and lines[0].endswith("\tFeatures: f=1-3,g=2-2")
    assert lines[1].startswith("Broker: 5\t") and "Features" not in lines[1]
    doc = json.loads(cli("brokers", "list", "--json", "--zookeeper", cluster.connect).stdout)
    assert [b["features"] for b in doc["brokers"]] == [{"f": [1, 3], "g": [2, 2]}, {}]


def test_the_broker_command_refuses_a_malformed_feature_range() -> None:
    r = cli("broker", "--broker-id", "1", "--zookeeper", "127.0.0.1:1", "--feature", "f=3-1")
    assert r.returncode == 2
    assert "expected NAME=MIN-MAX with 1 <= MIN <= MAX <= 32767, got 'f=3-1'" in r.stderr


def test_the_broker_command_refuses_an_advertised_host_no_controller_would_accept() -> None:
    # Kafka refuses an unparseable advertised.listeners at start; registering it would leave a
    # broker that looks healthy but is never live to the controller.
    r = cli("broker", "--broker-id", "1", "--zookeeper", "127.0.0.1:1",
            "--advertised-host", "bad host")  # fmt: skip
    assert r.returncode == 2
    assert "--advertised-host: 'bad host' is not a valid endpoint host" in r.stderr


# -- AllocateProducerIds ---------------------------------------------------------------------------


def allocate(client: ControllerClient, broker_id: int, epoch: int) -> tuple[int, int, int]:
    response = client.controller(
        "AllocateProducerIds",
        controller_pb2.AllocateProducerIdsRequest(broker_id=broker_id, broker_epoch=epoch),
    )
    return response.error_code, response.producer_id_start, response.producer_id_len


def test_producer_id_blocks_never_overlap_across_brokers_and_failovers(cluster: Cluster) -> None:
    for b in (1, 2):
        cluster.start_broker(b)
    cluster.start_controller(0, **NO_AUTO_REBALANCE)
    cluster.start_controller(1, **NO_AUTO_REBALANCE)
    wait_until(lambda: live_brokers(cluster) == {1, 2}, what="two live brokers")
    epochs = {b: cluster.brokers[b].broker_epoch for b in (1, 2)}
    blocks: list[tuple[int, int, int]] = []
    lock = threading.Lock()

    def broker(b: int, count: int) -> None:
        with ControllerClient(cluster.broker_port(b), timeout_s=20) as client:
            for _ in range(count):
                got = allocate(client, b, epochs[b])
                with lock:
                    blocks.append(got)

    threads = [threading.Thread(target=broker, args=(b, 15)) for b in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    # The active controller resigns; the standby continues after the last block.
    active = cluster.active_controller().controller.controller_id
    cluster.stop_controller(active)
    broker(1, 5)

    assert all(code == Errors.NONE and length == 1000 for code, _, length in blocks)
    starts = sorted(start for _, start, _ in blocks)
    assert starts == list(range(0, 35_000, 1000))  # contiguous, no block given twice
    data = json.loads(cluster.zk.get(paths.LATEST_PRODUCER_ID_BLOCK)[0])
    assert (data["version"], data["block_start"], data["block_end"]) == (1, "34000", "34999")


def test_allocate_producer_ids_refusals(cluster: Cluster) -> None:
    cluster.start_broker(1)
    cluster.start_controller(0, **NO_AUTO_REBALANCE)
    wait_until(lambda: live_brokers(cluster) == {1}, what="broker 1 live")
    epoch = cluster.brokers[1].broker_epoch
    with ControllerClient(cluster.broker_port(1), timeout_s=20) as client:
        assert allocate(client, 1, epoch - 1)[0] == Errors.STALE_BROKER_EPOCH
        assert allocate(client, 7, epoch)[0] == Errors.BROKER_ID_NOT_REGISTERED
        # A malformed block znode stops allocation; it is reported, not overwritten.
        bad = b'{"version":1,"broker":1,"block_start":"0","block_end":"-5"}'
        cluster.zk.set(paths.LATEST_PRODUCER_ID_BLOCK, bad)
        assert allocate(client, 1, epoch)[0] == Errors.UNKNOWN_SERVER_ERROR
        assert cluster.zk.get(paths.LATEST_PRODUCER_ID_BLOCK)[0] == bad
        # Repaired, allocation resumes after it.
        cluster.zk.set(
            paths.LATEST_PRODUCER_ID_BLOCK,
            b'{"version":1,"broker":1,"block_start":"5000","block_end":"5999"}',
        )
        assert allocate(client, 1, epoch) == (Errors.NONE, 6000, 1000)

    standby = cluster.start_controller(1, **NO_AUTO_REBALANCE)
    wait_until(lambda: standby.controller.active_controller_id == 0, what="standby ready")
    with grpc.insecure_channel(standby.grpc.address) as channel:
        response, call = controller_pb2_grpc.ControllerServiceStub(
            channel
        ).AllocateProducerIds.with_call(
            controller_pb2.AllocateProducerIdsRequest(broker_id=1, broker_epoch=epoch), timeout=10
        )
    assert response.error_code == Errors.NOT_CONTROLLER
    assert controller_hint(call.trailing_metadata()) == 0
