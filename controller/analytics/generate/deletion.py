"""Topic deletion as the generator models it: the controller's ``TopicDeletionManager``
(``controller.core.deletion``) step for step.

A topic queued for deletion leaves ``topics`` for ``deleting`` at once. Its deletion starts
when it is eligible (no replica being deleted, not held back): partitions Offline and
NonExistent (once per controller), replicas on dead or shutting-down brokers
DeletionIneligible (the topic is then held back), the others Offline and DeletionStarted. The
StopReplica answers come back a few milliseconds later in their own event: the replicas go
DeletionSuccessful and the deletions are looked at again (``_resume_deletions``): a topic
with every replica deleted is gone (all NonExistent); one with nothing in flight and some
replica ineligible has those moved back Offline, to be deleted when their broker is back (a
broker's return resumes the topics it holds replicas of). A topic with a partition being
reassigned is held back until the reassignment completes.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.analytics import schema as S
from controller.analytics.generate.machines import (
    EV_STOP_REPLICA_RESPONSE,
    Machines,
    Part,
    by_broker,
    by_key,
)


class TopicDeletions(Machines):
    """The deletion steps; ``ClusterSim`` calls them from its events."""

    deleting: dict[str, list[Part]]  # topics_to_be_deleted (out of ``topics``)
    deletion_ineligible: set[str]  # topics_ineligible_for_deletion
    deletion_started: set[str]  # topics_with_deletion_started (this controller)
    reassigning: dict[Part, tuple[int, int]]  # partition -> (replica added, replica retired)

    def _seconds(self, lo: float, hi: float) -> int:
        raise NotImplementedError

    def _queue_deletion(self, name: str, event: str) -> None:
        """``enqueueTopicsForDeletion``: held back while a partition is being reassigned."""
        parts = self.topics.pop(name)
        self.deleting[name] = parts
        if any(p in self.reassigning for p in parts):
            self.deletion_ineligible.add(name)
        self._resume_deletions(event)

    def _resume_deletion_for(self, names: Iterable[str], event: str) -> None:
        """``resumeDeletionForTopics``: no longer held back."""
        names = [name for name in names if name in self.deleting]
        if names:
            self.deletion_ineligible.difference_update(names)
            self._resume_deletions(event)

    def _fail_replica_deletion(self, b: int, event: str) -> None:
        """``failReplicaDeletion`` for broker ``b``'s replicas of queued topics (it died):
        DeletionIneligible (refused for those already deleted), their topics held back."""
        failed = [p for p in self._hosted(b) if p.topic in self.deleting]
        if not failed:
            return
        self._rrecs_checked(b, failed, S.REPLICA_DELETION_INELIGIBLE, event)
        self.deletion_ineligible.update(p.topic for p in failed)
        self._resume_deletions(event)

    def _resume_deletions(self, event: str) -> None:
        """``resumeDeletions``, then the StopReplica answers of the replicas it started
        deleting, each round of answers resuming the deletions again."""
        self._resume_deletions_once(event)
        while started := [
            (r, p) for name in sorted(self.deleting) for r, p in by_broker(self.deleting[name])
            if p.rstates.get(r) == S.REPLICA_DELETION_STARTED
        ]:
            self.clock += self._seconds(0.005, 0.2)
            for r, p in started:
                self._rrec(p, r, S.REPLICA_DELETION_SUCCESSFUL, EV_STOP_REPLICA_RESPONSE)
            self._resume_deletions_once(EV_STOP_REPLICA_RESPONSE)

    def _resume_deletions_once(self, event: str) -> None:
        retry: list[tuple[int, Part]] = []
        eligible: list[str] = []
        for name in sorted(self.deleting):
            replicas = by_broker(self.deleting[name])
            states = {p.rstates.get(r) for r, p in replicas}
            in_flight = S.REPLICA_DELETION_STARTED in states
            if states <= {S.REPLICA_DELETION_SUCCESSFUL}:
                self._complete_deletion(name, event)
                continue
            if not in_flight and S.REPLICA_DELETION_INELIGIBLE in states:
                retry += [
                    (r, p) for r, p in replicas
                    if p.rstates.get(r) == S.REPLICA_DELETION_INELIGIBLE
                ]
            if not in_flight and name not in self.deletion_ineligible:
                eligible.append(name)
        self._replicas_offline_by_broker(sorted(retry, key=_broker_order), event)
        if eligible:
            self._on_topic_deletion(eligible, event)

    def _complete_deletion(self, name: str, event: str) -> None:
        """``completeDeleteTopic``: every replica NonExistent; the topic is gone."""
        parts = self.deleting.pop(name)
        self.deletion_ineligible.discard(name)
        self.deletion_started.discard(name)
        for r, p in by_broker(parts):
            self._rrec(p, r, S.NON_EXISTENT_REPLICA, event)
            self.hosted[r].pop(p, None)
        for p in parts:
            self.reassigning.pop(p, None)

    def _on_topic_deletion(self, names: list[str], event: str) -> None:
        """``onTopicDeletion``: the partitions of topics not yet started Offline and
        NonExistent; then ``onPartitionDeletion``: replicas on brokers not online
        DeletionIneligible (the topic held back), the others not yet deleted Offline and
        DeletionStarted."""
        unseen = [name for name in names if name not in self.deletion_started]
        partitions = by_key(p for name in unseen for p in self.deleting[name])
        for p in partitions:
            self._to_offline(p, event)
        for p in partitions:
            p.state = S.NON_EXISTENT_PARTITION
            self._prec(p, S.OFFLINE_PARTITION, S.NON_EXISTENT_PARTITION, None, event)
        self.deletion_started.update(unseen)
        online = self.electable
        dead: list[tuple[int, Part]] = []
        retry: list[tuple[int, Part]] = []
        for name in names:
            for r, p in by_broker(self.deleting[name]):
                if r not in online:
                    dead.append((r, p))
                    self.deletion_ineligible.add(name)
                elif p.rstates.get(r) != S.REPLICA_DELETION_SUCCESSFUL:
                    retry.append((r, p))
        dead.sort(key=_broker_order)
        for b in sorted({r for r, _ in dead}):
            ps = [p for r, p in dead if r == b]
            self._rrecs_checked(b, ps, S.REPLICA_DELETION_INELIGIBLE, event)
        retry.sort(key=_broker_order)
        self._replicas_offline_by_broker(retry, event)
        for r, p in retry:
            self._rrec(p, r, S.REPLICA_DELETION_STARTED, event)

    def _deleting_on(self, b: int) -> list[str]:
        """The topics queued for deletion with a replica on ``b``."""
        return sorted(
            name for name, parts in self.deleting.items()
            if any(b in p.replicas for p in parts)
        )


def _broker_order(rp: tuple[int, Part]) -> tuple[int, str, int]:
    """The replica state machine's order: by broker, then partition."""
    return rp[0], rp[1].topic, rp[1].index
