# mypy: disable-error-code="misc"
# A mixin of World whose methods take `self: World`, which mypy allows only for a supertype.
"""Admin operations that land in the middle of a controller's event (a mixin of ``World``).

An admin tool writes to ZooKeeper whenever it likes, including between two ZooKeeper calls of
a controller processing an event: a topic is created, grown or deleted, a reassignment is
requested, an admin znode is deleted by hand while the controller is half-way through reading
or writing the same znodes. ``World._before_call`` applies one of these, with probability
``SimConfig.admin_mid_event_p`` per controller ZooKeeper call (``maybe_admin_mid_event``),
until ``World.heal`` (the admins stop with the faults: the cluster must get quiet).

The decision and the operation draw from a generator of their own (``random.Random`` seeded
with ``admin-<seed>``), swapped in for the world's while the operation runs: a schedule
without any mid-event operation is the one it was before they existed.

Also here: ``op_create_topic_legacy`` (a topic znode without topic id, as tools before Kafka
2.8 write it) and ``op_delete_admin_node``.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from controller.core.model import ReplicaAssignment, TopicAssignment
from controller.invariants import AssignmentRequest
from controller.zk import codecs, paths

if TYPE_CHECKING:
    from controller.sim.world import SimController, World

#: What an admin may do in the middle of a controller's event.
MID_EVENT_OPS: tuple[str, ...] = (
    "add_partitions",
    "create_topic",
    "create_topic_legacy",
    "delete_topic",
    "reassign",
    "delete_admin_node",
)


class AdminOperations:
    """The mid-event admin machinery and the ``op_*`` methods above (see the module doc)."""

    def op_create_topic_legacy(self: World, partitions: int = 1, replication: int = 2) -> None:
        """A topic znode without topic id (a pre-2.8 tool, or written by hand): the
        controller gives it one."""
        topic = f"l{next(self.topic_seq)}"
        rf = max(1, min(replication, len(self.brokers)))
        assignment = {p: self._replicas(rf) for p in range(max(1, partitions))}
        self.log(f"admin creates {topic} without topic id {assignment}")
        self.observer.on_request(AssignmentRequest("create", topic, assignment))
        data = codecs.encode_topic_assignment(
            TopicAssignment(topic, None, {p: ReplicaAssignment(r) for p, r in assignment.items()})
        )
        self.admin.create(paths.topic_path(topic), data, makepath=True)

    def op_delete_admin_node(self: World, preferred: bool) -> None:
        """An operator deletes /admin/reassign_partitions or /admin/preferred_replica_election
        by hand (to give up a request, or "unstick" one)."""
        path = paths.PREFERRED_REPLICA_ELECTION if preferred else paths.REASSIGN_PARTITIONS
        if self.zk.read(path) is None:
            return
        self.log(f"admin deletes {path} by hand")
        self.admin.delete(path)

    def random_admin_op(self: World) -> tuple[str, dict[str, Any]]:
        """One of ``MID_EVENT_OPS`` with its arguments, from the world's generator."""
        rng = self.rng
        topics = self._topics()
        name = rng.choice(MID_EVENT_OPS)
        if name in ("add_partitions", "delete_topic", "reassign") and not topics:
            name = "create_topic"
        if name == "add_partitions":
            return name, {"topic": rng.choice(topics), "count": 1}
        if name == "delete_topic":
            return name, {"topic": rng.choice(topics)}
        if name == "reassign":
            topic = rng.choice(topics)
            assignment = self._topic_assignment(topic)
            if assignment is None or not assignment.partitions:
                return "create_topic", {"partitions": 1, "replication": 2}
            brokers = sorted(self.brokers)
            return name, {
                "topic": topic,
                "partition": rng.choice(sorted(assignment.partitions)),
                "target": tuple(rng.sample(brokers, rng.randint(1, min(3, len(brokers))))),
                "via_zk": True,
            }
        if name == "delete_admin_node":
            return name, {"preferred": rng.random() < 0.5}
        return name, {"partitions": rng.randint(1, 2), "replication": 2}

    def maybe_admin_mid_event(self: World, sc: SimController, method: str) -> None:
        """With probability ``admin_mid_event_p``, one admin operation before ``sc``'s call."""
        p = self.config.admin_mid_event_p
        if not p or not self.admin_mid_event_on or self._admin_rng.random() >= p:
            return
        saved, self.rng = self.rng, self._admin_rng
        try:
            name, args = self.random_admin_op()
            self.log(f"admin acts while c{sc.cid} is about to call {method}: {name}")
            getattr(self, f"op_{name}")(**args)
        finally:
            self.rng = saved


def admin_rng(seed: int) -> random.Random:
    return random.Random(f"admin-{seed}")


__all__ = ["MID_EVENT_OPS", "AdminOperations", "admin_rng"]
