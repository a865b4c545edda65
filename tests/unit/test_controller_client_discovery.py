"""How ``ControllerClient`` finds the active controller when there is none to find: it waits
through a failover, but says at once-ish that no controller process is running at all."""

from __future__ import annotations

import threading
import time

import pytest

from controller.admin import controller_client
from controller.admin.controller_client import ControllerClient, NoActiveControllerError
from controller.api.v1 import admin_pb2
from controller.zk import paths
from controller.zk.codecs import encode_controller
from controller.zk.endpoints import ControllerEndpoint, encode_controller_endpoint
from controller.zk.memory import MemoryZooKeeper
from controller.zk.memory_session import MemoryZkSession

GRACE_S = 0.5


@pytest.fixture(autouse=True)
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(controller_client, "NONE_RUNNING_GRACE_S", GRACE_S)


def advertise(zk: MemoryZkSession, controller_id: int) -> None:
    endpoint = ControllerEndpoint(controller_id, "127.0.0.1:1", "127.0.0.1:2")
    zk.create(paths.controller_endpoint_path(controller_id),
              encode_controller_endpoint(endpoint), makepath=True)  # fmt: skip


def list_reassignments(zk: MemoryZkSession, timeout_s: float) -> tuple[str, float]:
    client = ControllerClient(zk, timeout_s=timeout_s)
    started = time.monotonic()
    with client, pytest.raises(NoActiveControllerError) as failed:
        client.admin("ListPartitionReassignments", admin_pb2.ListPartitionReassignmentsRequest())
    return str(failed.value), time.monotonic() - started


def test_no_controller_process_at_all_is_said_after_the_grace_not_the_deadline() -> None:
    zk = MemoryZooKeeper().open_session()
    message, took = list_reassignments(zk, timeout_s=30)
    assert GRACE_S <= took < 10
    assert message == (
        "could not reach the active controller: no controller is registered in /controller, "
        "and no zk-controller is running against this ZooKeeper (none is registered under "
        "/zk-controller/controllers): start one, or check the connect string's chroot"
    )


def test_a_kafka_broker_as_controller_is_named() -> None:
    zk = MemoryZooKeeper().open_session()
    zk.create(paths.CONTROLLER, encode_controller(7, 1), ephemeral=True)
    message, took = list_reassignments(zk, timeout_s=30)
    assert took < 10
    assert "controller 7 (in /controller) has not advertised an address: it is not a " in message
    assert "and no zk-controller is running against this ZooKeeper" in message


def test_a_kraft_controller_holding_the_controller_znode_is_named() -> None:
    # A ZooKeeper-to-KRaft migration: status named it, the admin tools guessed at a broker.
    zk = MemoryZooKeeper().open_session()
    zk.create(paths.CONTROLLER, b'{"version":2,"brokerid":3000,"timestamp":"1",'
              b'"kraftControllerEpoch":5}')  # fmt: skip
    message, took = list_reassignments(zk, timeout_s=30)
    assert took < 10
    assert (
        "controller 3000 (in /controller) is a KRaft controller (a ZooKeeper-to-KRaft "
        "migration, kraftControllerEpoch 5): no zk-controller can be elected while it holds "
        "/controller" in message
    )


def test_a_failover_with_a_standby_running_is_waited_through_to_the_deadline() -> None:
    """A standby is registered: a controller will come; only the deadline ends the wait."""
    zk = MemoryZooKeeper().open_session()
    advertise(zk, 2)
    message, took = list_reassignments(zk, timeout_s=GRACE_S * 3)
    assert took >= GRACE_S * 3
    assert message == (
        f"could not reach the active controller within {GRACE_S * 3:.0f}s: no controller is "
        "registered in /controller"
    )


def test_the_grace_starts_again_when_the_controllers_go_after_one_was_found() -> None:
    """Registered for a while (its port refusing connections, as while it restarts), then
    gone: the grace counts from when it went, not from the start of the call."""
    zk = MemoryZooKeeper().open_session()
    appeared, went = 0.2, 1.5

    def appear() -> None:
        zk.create(paths.CONTROLLER, encode_controller(3, 1), ephemeral=True)
        advertise(zk, 3)

    def go() -> None:
        zk.delete(paths.controller_endpoint_path(3))
        zk.delete(paths.CONTROLLER)

    timers = [threading.Timer(appeared, appear), threading.Timer(went, go)]
    for timer in timers:
        timer.start()
    try:
        message, took = list_reassignments(zk, timeout_s=30)
    finally:
        for timer in timers:
            timer.cancel()
    assert took >= went + GRACE_S
    assert "no zk-controller is running against this ZooKeeper" in message
