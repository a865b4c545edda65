"""An ensemble whose jute.maxbuffer is raised (4 MiB), as large Kafka clusters run: with the
setting zookeeper.jute.maxbuffer the controller reads a topic znode over 1 MiB and manages its
partitions, on a real ZooKeeper. (Without the setting the same topic is refused as too large:
checked by hand with the limit at its default, the partition state never appears.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from controller.config import load_config
from controller.core.model import EndPoint
from controller.daemon import ControllerDaemon
from controller.zk import codecs, limits, paths
from controller.zk.server import LocalZooKeeper, free_port
from tests.conftest import _unavailable
from tests.support import running, wait_until

JUTE_MAXBUFFER = 4 * 1024 * 1024


@pytest.fixture(scope="module")
def big_zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalZooKeeper]:
    from controller.zk.server import local_zookeeper_problem

    if (problem := local_zookeeper_problem()) is not None:
        _unavailable(problem)
    server = LocalZooKeeper(
        work_dir=tmp_path_factory.mktemp("big-zk"), jvm_args=[f"-Djute.maxbuffer={JUTE_MAXBUFFER}"]
    )
    with running(server):
        yield server


@pytest.fixture
def zk(big_zk: LocalZooKeeper) -> Iterator[KazooClient]:
    client = KazooClient(hosts=big_zk.hosts)
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


def _big_topic() -> bytes:
    """A topic znode of ~1.5 MB: partition 0 on broker 1 and a field Kafka ignores."""
    return json.dumps(
        {"version": 3, "partitions": {"0": [1]}, "pad": "x" * (1536 * 1024)},
        separators=(",", ":"),
    ).encode()


def test_a_topic_znode_over_one_mib_is_managed_when_the_limit_is_raised(
    zk: KazooClient, big_zk: LocalZooKeeper, tmp_path: Path
) -> None:
    registration = codecs.BrokerRegistration(
        1, (EndPoint("CONTROLLER", "127.0.0.1", free_port()),), timestamp_ms=0
    )
    zk.create(
        paths.broker_path(1),
        codecs.encode_broker_registration(registration),
        ephemeral=True,
        makepath=True,
    )
    zk.create(paths.topic_path("big"), _big_topic(), makepath=True)
    config = load_config(
        flags={
            "zookeeper.connect": big_zk.hosts,
            "controller.id": "0",
            "metrics.listen": f"127.0.0.1:{free_port()}",
            "grpc.listen": f"127.0.0.1:{free_port()}",
            "log.dir": str(tmp_path / "controller-0"),
            "zookeeper.jute.maxbuffer": str(JUTE_MAXBUFFER),
        },
        env={},
    )
    daemon = ControllerDaemon(config, configure_logs=False)
    daemon.start()
    try:
        state_path = paths.partition_state_path("big", 0)
        wait_until(lambda: zk.exists(state_path), timeout=30, what="big-0's partition state")
        state = codecs.decode_partition_state(zk.get(state_path)[0], state_path)
        assert state.leader_and_isr.leader == 1
        # A topic znode over the raised limit would be refused, not parsed.
        assert limits.current().read_bytes == JUTE_MAXBUFFER + 1
    finally:
        daemon.stop(resign_timeout=2)
        limits.configure(limits.DEFAULT_JUTE_MAXBUFFER)
