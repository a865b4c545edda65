"""Checks that only make sense in the simulation, on a quiet cluster after ``World.heal``.

Beyond the shared invariants (``controller.invariants``), a quiet simulated cluster must be
*consistent*: nothing is in flight, so every view of a partition must agree.

``sim-one-active-controller``
    Exactly one running controller believes it is active, and it is the one ``/controller``
    names.
``sim-cache-coherent``
    The active controller's cached leadership (leader, leader epoch, ISR, zkVersion) and
    replica assignments equal what ZooKeeper holds.
``sim-brokers-converged``
    Every running broker in a partition's replica set hosts it at the state znode's leader
    and leader epoch (it received the LeaderAndIsr that made it so).
``sim-cache-coherent`` (topic ids)
    The active controller's context holds, for every readable topic with partitions, the
    topic id its znode holds (one it gave a topic created without id included).
``sim-watch-armed``
    Every handler registered in the active controller's watch registry has a watch of its
    kind (data/exists, or children) held by the controller's session in ZooKeeper: a handler
    without a watch is a notification that never comes. Handlers of znodes that are gone are
    left out (a dead broker's, a deleted topic's: nothing left to see), except those of
    ``/controller`` and the two admin request znodes, which must be watched while absent to
    see them created. A standby need only watch ``/controller``.
``sim-no-event-error``
    No controller event's handler failed with an unexpected error. The controller logs and
    survives one (it must), leaving the event's work unfinished; in the simulation every
    such failure is a defect, whatever the other checks see.
``sim-isr-within-replicas``
    Every ISR member is one of the partition's replicas, unless its reassignment was
    cancelled or re-targeted (which may leave a replica that was being added alone in the
    ISR, as in Kafka).

Topics queued for deletion are left out: their partitions are being torn down on purpose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.core.model import TopicPartition
from controller.invariants import Violation
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError

if TYPE_CHECKING:
    from controller.sim.world import World

ONE_ACTIVE = "sim-one-active-controller"
CACHE_COHERENT = "sim-cache-coherent"
CONVERGED = "sim-brokers-converged"
ISR_WITHIN_REPLICAS = "sim-isr-within-replicas"
WATCH_ARMED = "sim-watch-armed"
NO_EVENT_ERROR = "sim-no-event-error"

#: Znodes whose handler must hold a watch even while the znode does not exist.
WATCHED_WHILE_ABSENT = frozenset(
    {paths.CONTROLLER, paths.REASSIGN_PARTITIONS, paths.PREFERRED_REPLICA_ELECTION}
)

State = tuple[int, int, tuple[int, ...], int]  # leader, leader epoch, ISR, zkVersion


def assignments(world: World, deleting: set[str]) -> dict[TopicPartition, tuple[int, ...]]:
    """Replicas of every partition of every topic not being deleted, from the topic znodes."""
    out: dict[TopicPartition, tuple[int, ...]] = {}
    for topic in world.zk.children(paths.BROKERS_TOPICS):
        if topic in deleting:
            continue
        data = world.zk.read(paths.topic_path(topic))
        try:
            assignment = codecs.decode_topic_assignment(topic, data, paths.topic_path(topic))
        except MalformedZnodeError:
            continue
        for p, ra in assignment.partitions.items():
            out[TopicPartition(topic, p)] = tuple(ra.replicas)
    return out


def quiet_cluster_violations(
    world: World,
    states: dict[TopicPartition, State],
    deleting: set[str],
    live: set[int],
    replicas: dict[TopicPartition, tuple[int, ...]],
) -> list[Violation]:
    out: list[Violation] = []
    active = [
        sc for sc in world.controllers.values() if sc.up and sc.ctl is not None and sc.ctl.is_active
    ]
    owner = world.active_controller()
    if len(active) != 1 or owner is None or owner is not active[0]:
        out.append(
            Violation(
                ONE_ACTIVE,
                f"controllers believing they are active: {[sc.cid for sc in active]}; "
                f"/controller names {owner.cid if owner else 'no running active controller'}",
            )
        )
        return out
    ctx = active[0].ctl.context  # type: ignore[union-attr]
    for topic in world.zk.children(paths.BROKERS_TOPICS):
        if topic in deleting:
            continue
        try:
            data = world.zk.read(paths.topic_path(topic))
            assignment = codecs.decode_topic_assignment(topic, data, paths.topic_path(topic))
        except MalformedZnodeError:
            continue
        cached_id = ctx.topic_ids.get(topic)
        if assignment.partitions and cached_id != assignment.topic_id:
            out.append(
                Violation(
                    CACHE_COHERENT,
                    f"{topic}: controller {active[0].cid} caches topic id {cached_id}, "
                    f"ZooKeeper has {assignment.topic_id}",
                )
            )
    for tp, zk_replicas in sorted(replicas.items()):
        cached = tuple(ctx.partition_replica_assignment(tp))
        if cached != zk_replicas:
            out.append(
                Violation(
                    CACHE_COHERENT,
                    f"{tp}: controller {active[0].cid} caches replicas {list(cached)}, "
                    f"ZooKeeper has {list(zk_replicas)}",
                )
            )
    for tp, (leader, leader_epoch, isr, version) in sorted(states.items()):
        if tp.topic in deleting or tp not in replicas:
            continue
        strays = [b for b in isr if b not in replicas[tp]]
        if strays and (tp.topic, tp.partition) not in world.observer.retargeted:
            out.append(
                Violation(
                    ISR_WITHIN_REPLICAS,
                    f"{tp}: ISR {list(isr)} holds {strays}, not replicas ({list(replicas[tp])})",
                )
            )
        info = ctx.partition_leadership_info(tp)
        cached_leadership: tuple[object, ...] | None = None
        if info is not None:
            lai = info.leader_and_isr
            cached_leadership = (
                lai.leader,
                lai.leader_epoch,
                tuple(lai.isr),
                lai.partition_epoch,
            )
        if cached_leadership != (leader, leader_epoch, isr, version):
            out.append(
                Violation(
                    CACHE_COHERENT,
                    f"{tp}: controller {active[0].cid} caches (leader, leader epoch, ISR, "
                    f"zkVersion) {cached_leadership}, ZooKeeper has "
                    f"{(leader, leader_epoch, isr, version)}",
                )
            )
        if leader < 0:
            continue
        for b in replicas[tp]:
            if b not in live:
                continue
            state = world.brokers[b].state
            hosted = state.hosted(tp) if state is not None else None
            seen = None if hosted is None else (hosted.leader, hosted.leader_epoch)
            if seen != (leader, leader_epoch):
                out.append(
                    Violation(
                        CONVERGED,
                        f"{tp}: broker {b} hosts (leader, leader epoch) {seen}, the state "
                        f"znode says {(leader, leader_epoch)}",
                    )
                )
    return out


def watch_violations(world: World) -> list[Violation]:
    """``sim-watch-armed`` for every running controller (see the module doc)."""
    out: list[Violation] = []
    active = world.active_controller()
    nodes = world.zk.snapshot()
    for sc in world.controllers.values():
        if not sc.up or sc.ctl is None or sc.port is None:
            continue
        session = sc.port.inner
        data = {p for p, ws in world.zk._data_watches.items() if any(s is session for s, _ in ws)}
        child = {p for p, ws in world.zk._child_watches.items() if any(s is session for s, _ in ws)}
        want_data = {paths.CONTROLLER}
        want_child: set[str] = set()
        if sc is active:
            registry = sc.ctl.gateway.watches
            want_data |= set(registry._change)
            for family in registry._children:
                want_data |= {family.prefix + member for member in family.members}
            want_child |= set(registry._child)
        want_data = {p for p in want_data if p in nodes or p in WATCHED_WHILE_ABSENT}
        want_child = {p for p in want_child if p in nodes}
        for path in sorted(want_data - data):
            out.append(
                Violation(WATCH_ARMED, f"c{sc.cid}: a handler for {path} but no data watch on it")
            )
        for path in sorted(want_child - child):
            out.append(
                Violation(WATCH_ARMED, f"c{sc.cid}: a child handler for {path} but no child watch")
            )
    return out


__all__ = [
    "CACHE_COHERENT",
    "CONVERGED",
    "ISR_WITHIN_REPLICAS",
    "ONE_ACTIVE",
    "WATCHED_WHILE_ABSENT",
    "WATCH_ARMED",
    "assignments",
    "quiet_cluster_violations",
    "watch_violations",
]
