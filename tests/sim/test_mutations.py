"""The simulation has teeth: a controller broken on purpose fails it.

Each test breaks one thing the invariants depend on (monkeypatched for the test only) and
checks that a modest range of seeds catches it with the expected invariant. If a change to the
simulator ever stops it from reaching these situations, these tests say so.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from controller.channel.batch import ControllerBrokerRequestBatch
from controller.core.partition_state_machine import PartitionStateMachine
from controller.sim.runner import run_schedule
from controller.zk import fenced, paths
from controller.zk.gateway_cluster import ClusterZnodes
from controller.zk.port import Check, Op

SEEDS = range(0, 200)


def caught(invariant: str, seeds: range = SEEDS) -> int | None:
    """The first seed whose schedule violates ``invariant``."""
    for seed in seeds:
        if any(v.invariant == invariant for v in run_schedule(seed).violations):
            return seed
    return None


def test_writes_without_epoch_fencing_let_two_controllers_write_in_one_epoch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unfenced(batch: Sequence[tuple[object, list[Op]]], epoch_zk_version: int) -> list[Op]:
        return [Check(paths.CONTROLLER_EPOCH, -1)] + [op for _, ops in batch for op in ops]

    monkeypatch.setattr(fenced.FencedWriter, "_with_check", staticmethod(unfenced))
    assert caught("single-writer-per-epoch") is not None


def test_a_lost_leader_and_isr_leaves_brokers_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    original = ControllerBrokerRequestBatch.add_leader_and_isr_request_for_brokers
    calls = [0]

    def every_fifth_dropped(self, broker_ids, tp, leadership, assignment, *, is_new):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] % 5 == 0:
            return None
        return original(self, broker_ids, tp, leadership, assignment, is_new=is_new)

    monkeypatch.setattr(
        ControllerBrokerRequestBatch,
        "add_leader_and_isr_request_for_brokers",
        every_fifth_dropped,
    )
    assert caught("sim-brokers-converged", range(0, 20)) is not None


def test_unclean_elections_without_permission_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A controller that ignores the cluster setting and the topic configs, and elects a
    leader outside the ISR whenever one is alive, risks data loss nobody allowed."""

    def always_unclean(self, current, allow_unclean, failed):  # type: ignore[no-untyped-def]
        online = self._ctx.is_replica_online
        return {tp: not any(online(r, tp) for r in lai.isr) for tp, lai in current.items()}

    monkeypatch.setattr(PartitionStateMachine, "_unclean_permissions", always_unclean)
    assert caught("unclean-election-not-allowed") is not None


def test_producer_id_blocks_allocated_without_reading_the_last_one_overlap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A controller that does not read the last allocated block (say, one that trusts its own
    memory) starts again at 0 and hands out ids another producer already has."""
    original = ClusterZnodes.get_producer_id_block

    def forgetful(self):  # type: ignore[no-untyped-def]
        _, version = original(self)
        return None, version

    monkeypatch.setattr(ClusterZnodes, "get_producer_id_block", forgetful)
    assert caught("producer-id-blocks-overlap", range(0, 50)) is not None
