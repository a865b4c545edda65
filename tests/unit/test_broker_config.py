"""The reference broker's id is Kafka's broker.id, an int32: ``BrokerConfig`` and
``zk-controller broker`` refuse anything outside [0, 2147483647] before touching ZooKeeper
(an id above it used to register a znode the controller ignores, then crash on SIGTERM)."""

from __future__ import annotations

import os
import subprocess

import pytest

from controller.broker.server import BrokerConfig
from tests.support import CLI, REPO

INT32_MAX = 2**31 - 1


@pytest.mark.parametrize("broker_id", [0, 1, INT32_MAX])
def test_config_accepts_every_int32_broker_id(broker_id: int) -> None:
    assert BrokerConfig(broker_id=broker_id).broker_id == broker_id


@pytest.mark.parametrize("broker_id", [-1, INT32_MAX + 1, 3_000_000_000])
def test_config_refuses_a_broker_id_outside_int32(broker_id: int) -> None:
    expected = rf"^broker id must be in \[0, {INT32_MAX}\], got {broker_id}$"
    with pytest.raises(ValueError, match=expected):
        BrokerConfig(broker_id=broker_id)


@pytest.mark.parametrize("broker_id", ["-1", "2147483648", "3000000000"])
def test_cli_refuses_a_broker_id_outside_int32_in_one_line(broker_id: str) -> None:
    # Nothing listens on port 1: the id must be refused before any connection is tried.
    done = subprocess.run(
        [*CLI, "broker", "--zookeeper", "127.0.0.1:1", "--broker-id", broker_id],
        capture_output=True, text=True, cwd=REPO, timeout=60,
        env={**os.environ, "ZK_CONNECT": ""},
    )  # fmt: skip
    assert done.returncode == 2, done
    assert done.stderr.splitlines() == [
        f"zk-controller broker: --broker-id must be in [0, {INT32_MAX}], got {broker_id}"
    ]
