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


@pytest.mark.parametrize(
    ("controller", "inter_broker"), [("CONTROLLER", "CONTROLLER"), ("PLAINTEXT", "plaintext")]
)
def test_config_refuses_one_name_for_both_listeners(controller: str, inter_broker: str) -> None:
    # Kafka refuses it too: two endpoints under one listener name in the registration.
    with pytest.raises(ValueError, match="controller listener and the inter-broker listener"):
        BrokerConfig(
            broker_id=1, controller_listener=controller, inter_broker_listener=inter_broker
        )


@pytest.mark.parametrize("field", ["controller_listener", "inter_broker_listener"])
def test_config_refuses_an_empty_listener_name(field: str) -> None:
    with pytest.raises(ValueError, match="listener needs a name"):
        BrokerConfig(broker_id=1, **{field: " "})  # type: ignore[arg-type]


def test_config_takes_two_listener_names() -> None:
    config = BrokerConfig(broker_id=1, controller_listener="CTL", inter_broker_listener="REPL")
    assert (config.controller_listener, config.inter_broker_listener) == ("CTL", "REPL")
