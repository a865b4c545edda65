"""``sim-scl-matches-zk``: the state-change log tells the story ZooKeeper ends with.

The state-change log (``controller.state_change_log``) is what the analytics read to follow
each partition's leadership. On a quiet simulated cluster, the last record of a partition
that carries a leadership (leader and ISR) and succeeded must name the leader and ISR its
state znode holds: a leader or ISR change written to ZooKeeper without a record (one made
through AlterPartition, say) leaves the log telling an older story. Records of all controller
processes are read in ``seq`` order (process-wide, so the order they were written in).

Topics queued for deletion are left out, as in the other quiet-cluster checks.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from controller.core.model import TopicPartition
from controller.invariants import Violation

if TYPE_CHECKING:
    from controller.sim.checks import State
    from controller.sim.world import World

SCL_MATCHES_ZK = "sim-scl-matches-zk"


def records(world: World) -> list[dict[str, Any]]:
    """Every state-change record of every controller process of the run, in ``seq`` order."""
    out = [
        json.loads(line) for log in world.state_change_logs for line in log.getvalue().splitlines()
    ]
    return sorted(out, key=lambda r: r["seq"])


def scl_violations(
    world: World, states: dict[TopicPartition, State], deleting: set[str]
) -> list[Violation]:
    last: dict[TopicPartition, tuple[int, tuple[int, ...]]] = {}
    for r in records(world):
        leadership = r["leader"] is not None and r["result"] == "ok"
        if leadership and r["kind"] in ("partition", "replica"):
            last[TopicPartition(r["topic"], r["partition"])] = (r["leader"], tuple(r["isr"]))
    out: list[Violation] = []
    for tp, (leader, leader_epoch, isr, _version) in sorted(states.items()):
        if tp.topic in deleting:
            continue
        logged = last.get(tp)
        if logged != (leader, isr):
            out.append(
                Violation(
                    SCL_MATCHES_ZK,
                    f"{tp}: last state-change record (leader, ISR) {logged}, ZooKeeper has "
                    f"{(leader, isr)} (leader epoch {leader_epoch})",
                )
            )
    return out


__all__ = ["SCL_MATCHES_ZK", "records", "scl_violations"]
