"""The chaos checkers against a real ZooKeeper: a forged zombie write (the controller of an
old epoch writing a state znode after a new controller was elected, bypassing the fence) must
be caught both by the live checker, from snapshots, and by the audit, from the server's own
transaction log. The controllers here are plain ZooKeeper sessions doing by hand what an
election and a fenced write do, so that the forbidden write can be made at all."""

from __future__ import annotations

import json
import time

from kazoo.client import KazooClient

from controller import invariants as inv
from controller.chaos.audit import audit_ensemble
from controller.chaos.checker import LiveChecker
from controller.chaos.observe import read_snapshot
from controller.chaos.sessions import expire_session
from controller.zk.server import LocalZooKeeper

STATE = "/brokers/topics/t/partitions/0/state"


def _client(hosts: str) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=15)
    return client


def _elect(client: KazooClient, controller_id: int, epoch: int) -> int:
    """The election multi; returns /controller_epoch's new version."""
    version = client.get("/controller_epoch")[1].version
    txn = client.transaction()
    txn.create("/controller", json.dumps({"brokerid": controller_id}).encode(), ephemeral=True)
    txn.set_data("/controller_epoch", str(epoch).encode(), version)
    assert all(r is not None and not isinstance(r, Exception) for r in txn.commit())
    return version + 1


def _state(controller_epoch: int, leader_epoch: int) -> bytes:
    return json.dumps(
        {
            "controller_epoch": controller_epoch,
            "leader": 1,
            "version": 1,
            "leader_epoch": leader_epoch,
            "isr": [1, 2],
        }
    ).encode()


def test_a_forged_zombie_write_is_caught_live_and_by_the_audit(
    zk_standalone: LocalZooKeeper,
) -> None:
    hosts = zk_standalone.hosts
    admin, first, second, zombie = (_client(hosts) for _ in range(4))
    checker = LiveChecker(session_timeout_s=4.0)
    try:
        admin.create("/controller_epoch", b"0")
        assignment = {"version": 3, "partitions": {"0": [1, 2]}, "topic_id": "tid"}
        checker.request(inv.AssignmentRequest("create", "t", {0: (1, 2)}))
        admin.create("/brokers/topics/t", json.dumps(assignment).encode(), makepath=True)

        # Controller 0 wins epoch 1 and writes the state behind the fence.
        fence = _elect(first, 0, 1)
        txn = first.transaction()
        txn.check("/controller_epoch", fence)
        txn.create("/brokers/topics/t/partitions", b"")
        txn.create("/brokers/topics/t/partitions/0", b"")
        txn.create(STATE, _state(1, 0))
        assert not any(isinstance(r, Exception) for r in txn.commit())
        snap = read_snapshot(admin)
        assert ("t", 0) in snap.states and snap.registrations
        checker.observe_snapshot(snap)
        assert checker.violations() == []

        # Its session expires on the server; controller 1 wins epoch 2.
        expire_session(hosts, first.client_id[0])
        deadline = time.monotonic() + 10
        while admin.exists("/controller") and time.monotonic() < deadline:
            time.sleep(0.05)
        _elect(second, 1, 2)
        # The zombie write: epoch-1 content, without the epoch check.
        zombie.set(STATE, _state(1, 1))
        checker.observe_snapshot(read_snapshot(admin))
    finally:
        for client in (admin, first, second, zombie):
            client.stop()
            client.close()

    live = [v.invariant for v in checker.violations()]
    print(*checker.violations(), sep="\n")
    assert live == [inv.SINGLE_WRITER], checker.violations()

    zk_standalone.stop()  # the transaction log is complete once the server stopped
    audit = audit_ensemble([zk_standalone.data_dir])
    print(*audit.violations, sep="\n")
    assert audit.elections == 2
    assert any(f"{STATE} written by session" in v for v in audit.violations), audit.violations
