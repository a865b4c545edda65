"""Turning what happens in the simulated cluster into invariant observations.

The ``Observer`` owns a ``controller.invariants.Checker`` and feeds it: every committed
version of a partition state or topic znode (from ``ObservedZooKeeper``), every fenced write a
controller got accepted (with ``/controller_epoch`` as it was at commit), every unclean
election, every controller request a broker handled, and every request somebody made to
create, change or delete a topic, and what allowed unclean elections (the cluster setting, a
topic config committed to ZooKeeper, an admin's request). The end-of-run checks
(``final_violations``) add liveness and three simulation-only checks on the quiet cluster (see
``controller.sim.world``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable

from controller import invariants as inv
from controller.core.election import UNCLEAN_CONFIG
from controller.sim.zk import Change
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError

#: Simulation-only: a controller write that bypassed the epoch fencing (reference §1.5).
UNFENCED_WRITE = "sim-unfenced-write"

_STATE = re.compile(r"/brokers/topics/([^/]+)/partitions/([0-9]+)/state")
_TOPIC = re.compile(r"/brokers/topics/([^/]+)")
_TOPIC_CONFIG = re.compile(r"/config/topics/([^/]+)")


class Observer:
    def __init__(
        self, log: Callable[[str], None] | None = None, *, unclean_default: bool = False
    ) -> None:
        """``unclean_default``: the controllers' ``unclean.leader.election.enable``."""
        self.checker = inv.Checker(unclean_default=unclean_default)
        self._log = log
        self.epoch_now = 0  # /controller_epoch's current value, kept up to date from commits
        self.state_writes = 0
        self.fenced_writes = 0
        # Partitions whose reassignment was cancelled or re-targeted: such a request may leave
        # a replica that was being added alone in the ISR (Kafka's behaviour).
        self.retargeted: set[tuple[str, int]] = set()
        self.unfenced: list[inv.Violation] = []
        self._reassigning: set[tuple[str, int]] = set()  # per the last topic znode version

    # -- ZooKeeper ---------------------------------------------------------------------------

    def on_commit(self, changes: list[Change]) -> None:
        for path, data, czxid, version in changes:
            if path == paths.CONTROLLER_EPOCH and data is not None:
                with contextlib.suppress(MalformedZnodeError):
                    self.epoch_now = codecs.decode_controller_epoch(data, path)
                continue
            m = _TOPIC_CONFIG.fullmatch(path)
            if m is not None and data is not None:
                self._entity_config(m.group(1), data, path)
                continue
            if path == paths.BROKER_DEFAULT_CONFIG and data is not None:
                self._entity_config(None, data, path)
                continue
            if not path.startswith(paths.BROKERS_TOPICS):
                continue
            m = _STATE.fullmatch(path)
            if m is not None:
                self._state(m.group(1), int(m.group(2)), data, czxid, version, path)
                continue
            m = _TOPIC.fullmatch(path)
            if m is not None:
                self._topic(m.group(1), data, path)

    def _state(
        self, topic: str, partition: int, data: bytes | None, czxid: int, version: int, path: str
    ) -> None:
        if data is None:
            self.checker.observe_state_deleted(topic, partition)
            return
        try:
            info = codecs.decode_partition_state(data, version, path)
        except MalformedZnodeError:
            return  # written malformed on purpose (fault injection): nothing to compare
        lai = info.leader_and_isr
        self.state_writes += 1
        if self._log is not None:
            self._log(
                f"  zk: {topic}-{partition} v{version} leader {lai.leader} epoch "
                f"{lai.leader_epoch} ISR {list(lai.isr)} (controller epoch "
                f"{info.controller_epoch})"
            )
        self.checker.observe_state_write(
            inv.StateWrite(
                topic,
                partition,
                czxid,
                version,
                info.controller_epoch,
                lai.leader,
                lai.leader_epoch,
                tuple(lai.isr),
            )
        )

    def _entity_config(self, topic: str | None, data: bytes, path: str) -> None:
        """A topic's config, or (``topic`` None) the brokers' dynamic cluster default."""
        try:
            config = codecs.decode_topic_config(data, path)
        except MalformedZnodeError:
            return  # a controller reading it refuses the unclean election: nothing allowed
        if config.get(UNCLEAN_CONFIG, "").strip().lower() == "true":
            self.checker.observe_unclean_permission(topic)

    def _topic(self, topic: str, data: bytes | None, path: str) -> None:
        if data is None:
            if self._log is not None:
                self._log(f"  zk: {path} deleted")
            self.checker.observe_topic(inv.TopicSnapshot(topic, None))
            return
        try:
            assignment = codecs.decode_topic_assignment(topic, data, path)
        except MalformedZnodeError:
            return
        for p, ra in assignment.partitions.items():
            if ra.adding_replicas or ra.removing_replicas:
                self._reassigning.add((topic, p))
            else:
                self._reassigning.discard((topic, p))
        if self._log is not None:
            self._log(
                f"  zk: {path} "
                + " ".join(
                    f"{p}:{list(ra.replicas)}"
                    + (f"+{list(ra.adding_replicas)}" if ra.adding_replicas else "")
                    + (f"-{list(ra.removing_replicas)}" if ra.removing_replicas else "")
                    for p, ra in sorted(assignment.partitions.items())
                )
            )
        self.checker.observe_topic(
            inv.TopicSnapshot(
                topic,
                {
                    p: inv.PartitionAssignment(
                        tuple(ra.replicas), tuple(ra.adding_replicas), tuple(ra.removing_replicas)
                    )
                    for p, ra in assignment.partitions.items()
                },
                assignment.topic_id,
            )
        )

    # -- controllers, brokers, requests ------------------------------------------------------

    def on_fenced_write(self, controller_id: int, written: list[str]) -> None:
        self.fenced_writes += 1
        for path in written:
            self.checker.observe_controller_write(
                inv.ControllerWrite(controller_id, self.epoch_now, path)
            )

    def on_unfenced_write(self, controller_id: int, method: str, written: list[str]) -> None:
        """Writes a controller made without the ``/controller_epoch`` check: only its election
        (its own compare-and-set) and Kafka's unfenced housekeeping are allowed (§1.5)."""
        if method == "multi" and sorted(written) == [paths.CONTROLLER, paths.CONTROLLER_EPOCH]:
            return  # the election multi
        if method == "create" and written == [paths.CONTROLLER_EPOCH]:
            return  # the first election creates the epoch node
        if method == "delete" and all(p.startswith(paths.CONFIG_CHANGES + "/") for p in written):
            return  # expired config change notifications, as Kafka's brokers purge them
        self.unfenced.append(
            inv.Violation(
                UNFENCED_WRITE,
                f"controller {controller_id} wrote {written} without the epoch check ({method})",
            )
        )

    def on_unclean_request(self, topic: str, partition: int) -> None:
        """An admin asks an unclean election of this partition (before the request is sent)."""
        self.checker.observe_unclean_permission(topic, partition)

    def on_unclean_election(self, topic: str, partition: int, leader_epoch: int) -> None:
        self.checker.observe_unclean_election(inv.UncleanElection(topic, partition, leader_epoch))

    def on_producer_id_block(self, broker: int, start: int, end: int) -> None:
        self.checker.observe_producer_id_block(broker, start, end)

    def on_broker_request(self, request: inv.BrokerRequest) -> None:
        self.checker.observe_broker_request(request)

    def on_request(self, request: inv.AssignmentRequest) -> None:
        if request.kind in ("cancel", "reassign"):
            for p in request.partitions:
                if (request.topic, p) in self._reassigning:
                    self.retargeted.add((request.topic, p))
        self.checker.observe_request(request)

    # -- results -----------------------------------------------------------------------------

    def violations(self) -> list[inv.Violation]:
        return self.checker.violations() + self.unfenced

    def found_any(self) -> bool:
        """Cheap test, after each step, for violations found so far (pending checks aside)."""
        return self.checker.flagged > 0 or bool(self.unfenced)


__all__ = ["Observer"]
