"""``ZkGateway``'s topic znodes: ``/brokers/topics/T`` (assignment and topic id) and
``/config/topics/T`` (reference §1.2, §1.3).

A mixin of ``ZkGateway``. Reads are batched and arm the data watches of topics with a
registered handler; the writes are fenced, and the two that merge (``merge_topic_partitions``,
``set_topic_ids``) are conditional on the version read, so partitions an admin adds in between
are never lost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import structlog

from controller.core.model import ReplicaAssignment, TopicAssignment
from controller.zk import codecs, fenced, paths
from controller.zk.errors import (
    BadVersionError,
    MalformedZnodeError,
    NoNodeError,
    RequestTooLargeError,
    ZkError,
)
from controller.zk.port import Op, ReadResult, SetData, ZkPort

if TYPE_CHECKING:
    from controller.zk.fenced import FencedWriter
    from controller.zk.watches import WatchRegistry

log = structlog.get_logger("controller.zk.gateway")

#: The version that matches any version of a znode (an unconditional write).
MATCH_ANY_VERSION = -1


class TopicZnodes:
    """What it needs from ``ZkGateway`` is declared here; ``ZkGateway`` provides it."""

    port: ZkPort
    watches: WatchRegistry
    _writer: FencedWriter
    _read_batch: int
    _get_many: Callable[[list[str]], list[ReadResult]]
    get_children: Callable[..., list[str]]

    def get_all_topics(self, *, watch: bool = True) -> set[str]:
        return set(self.get_children(paths.BROKERS_TOPICS, watch=watch))

    def get_topic_assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        """Assignments and ids of topics; an absent topic gives an empty assignment.

        Data watches are armed for topics with a registered handler (PartitionModifications),
        as Kafka's read does, by the port's watched batch read: a write landing after the read
        is always notified. Malformed topic znodes, and those the session may not read (Kafka's
        read throws on any error but NoNode), are logged and left out.
        """
        topic_list = list(topics)
        results = self._get_many_watching([paths.topic_path(t) for t in topic_list])
        out: dict[str, TopicAssignment] = {}
        for topic, res in zip(topic_list, results, strict=True):
            if isinstance(res.error, NoNodeError):
                out[topic] = TopicAssignment(topic, None, {})
                continue
            if res.error is not None:
                log.error("cannot read topic znode", path=res.path, error=str(res.error))
                continue
            try:
                out[topic] = codecs.decode_topic_assignment(topic, res.data, res.path)
            except MalformedZnodeError as exc:
                log.error("ignoring malformed topic znode", path=res.path, error=exc.problem)
        return out

    def _get_many_watching(self, path_list: list[str]) -> list[ReadResult]:
        """Batched reads that arm the data watch of every path with a registered handler, the
        way a watched ``get`` would (one ``exists`` per path cost ~90 us of kazoo each: 9 s
        for 100,000 topics)."""
        watched = [p for p in path_list if self.watches.data_watcher(p) is not None]
        if not watched:
            return self._get_many(path_list)
        callback = self.watches.data_watcher(watched[0])
        assert callback is not None
        step = self._read_batch * 10
        by_path: dict[str, ReadResult] = {}
        for start in range(0, len(watched), step):
            for res in self.port.get_many_watched(watched[start : start + step], callback):
                by_path[res.path] = res
        rest = [p for p in path_list if p not in by_path]
        for res in self._get_many(rest):
            by_path[res.path] = res
        return [by_path[p] for p in path_list]

    def set_topic_assignment(self, assignment: TopicAssignment, epoch_zk_version: int) -> None:
        """Fenced, unconditional rewrite of ``/brokers/topics/T`` (setTopicAssignmentRaw)."""
        path = paths.topic_path(assignment.topic)
        result = self._writer.run_one(
            [SetData(path, codecs.encode_topic_assignment(assignment), MATCH_ANY_VERSION)],
            epoch_zk_version,
        )
        if isinstance(result, ZkError):
            raise result

    def merge_topic_partitions(
        self,
        topic: str,
        topic_id: str | None,
        known: Mapping[int, ReplicaAssignment],
        updates: Mapping[int, ReplicaAssignment],
        epoch_zk_version: int,
    ) -> dict[int, ZkError]:
        """One fenced rewrite of ``/brokers/topics/T`` giving every partition in ``updates``
        its new assignment: the controller's ``known`` assignments, then ``updates``, then the
        partitions the controller does not know yet, as found in the znode; conditional on
        the version read (re-read on BADVERSION).

        Kafka's ``setTopicAssignmentRaw`` writes the controller's cached assignment blindly, so
        partitions an admin adds while the controller is about to rewrite the topic (a
        reassignment step) were lost: the controller never learns of them, since its own
        write removes them before it reads the znode. Partitions in both keep the
        controller's value (pitfall 13).

        One write for many partitions (Kafka writes the whole topic once per partition:
        minutes for a topic of thousands). Partitions whose update would take the znode past
        ZooKeeper's size limit are left out, in partition order, as they would fail one write
        each: they are returned with their error. ``NoNodeError`` when the topic znode is gone.
        """
        path = paths.topic_path(topic)
        while True:
            data, stat = self.port.get(path)
            base = dict(known)
            try:
                current = codecs.decode_topic_assignment(topic, data, path)
            except MalformedZnodeError:
                pass  # overwritten with the controller's view, as Kafka would
            else:
                for p, ra in current.partitions.items():
                    base.setdefault(p, ra)
                topic_id = topic_id or current.topic_id
            merged = TopicAssignment(topic, topic_id, {**base, **updates})
            encoded = codecs.encode_topic_assignment(merged)
            refused: dict[int, ZkError] = {}
            if fenced.op_size(SetData(path, encoded, stat.version)) > fenced.max_item_bytes():
                refused = _refused_for_size(TopicAssignment(topic, topic_id, base), updates)
                if len(refused) == len(updates):
                    return refused
                accepted = {p: ra for p, ra in updates.items() if p not in refused}
                merged = TopicAssignment(topic, topic_id, {**base, **accepted})
                encoded = codecs.encode_topic_assignment(merged)
            result = self._writer.run_one([SetData(path, encoded, stat.version)], epoch_zk_version)
            if isinstance(result, BadVersionError):
                continue  # written meanwhile: merge with the new content
            if isinstance(result, ZkError):
                raise result
            return refused

    def set_topic_ids(
        self, topic_ids: Mapping[str, str], epoch_zk_version: int
    ) -> dict[str, TopicAssignment | Exception]:
        """Write each topic's new id onto its znode's current content, fenced and conditional
        on the version read (re-read on BADVERSION); a topic that has an id by then keeps it.
        Gives each topic's assignment as written (or found), else its error.

        Kafka's ``setTopicIds`` writes the assignment it read blindly: partitions an admin
        added in between were lost for good (the controller never learns of them).
        """
        out: dict[str, TopicAssignment | Exception] = {}
        todo = dict(topic_ids)
        while todo:
            topics = list(todo)
            reads = self._get_many([paths.topic_path(t) for t in topics])
            items: dict[str, list[Op]] = {}
            written: dict[str, TopicAssignment] = {}
            for topic, res in zip(topics, reads, strict=True):
                if not res.ok or res.stat is None:
                    out[topic] = res.error or NoNodeError("no topic znode", res.path)
                    continue
                try:
                    current = codecs.decode_topic_assignment(topic, res.data or b"", res.path)
                except MalformedZnodeError as exc:
                    out[topic] = exc
                    continue
                if current.topic_id is not None:
                    out[topic] = current  # given one meanwhile (or our write's lost reply)
                    continue
                written[topic] = TopicAssignment(topic, todo[topic], current.partitions)
                data = codecs.encode_topic_assignment(written[topic])
                items[topic] = [SetData(res.path, data, res.stat.version)]
            retry: dict[str, str] = {}
            for topic, result in self._writer.run(items, epoch_zk_version).items():
                if isinstance(result, BadVersionError):
                    retry[topic] = todo[topic]  # written meanwhile: merge with the new content
                elif isinstance(result, ZkError):
                    out[topic] = result
                else:
                    out[topic] = written[topic]
            todo = retry
        return out

    def get_topic_partition_children(self, topic: str) -> list[int]:
        out = []
        for child in self.get_children(paths.topic_partitions_path(topic), watch=False):
            try:
                out.append(int(child))
            except ValueError:
                continue
        return sorted(out)

    def get_topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str] | Exception]:
        """Per-topic overrides from ``/config/topics/T``; absent gives {}; errors per topic."""
        topic_list = list(topics)
        out: dict[str, dict[str, str] | Exception] = {}
        results = self._get_many([paths.topic_config_path(t) for t in topic_list])
        for topic, res in zip(topic_list, results, strict=True):
            if isinstance(res.error, NoNodeError):
                out[topic] = {}
            elif res.error is not None:
                out[topic] = res.error
            else:
                try:
                    out[topic] = codecs.decode_topic_config(res.data, res.path)
                except MalformedZnodeError as exc:
                    out[topic] = exc
        return out

    def get_broker_default_config(self) -> dict[str, str]:
        """Cluster-wide dynamic broker configs (``/config/brokers/<default>``, written by
        ``kafka-configs.sh --entity-type brokers --entity-default``); {} when absent.
        Raises ``MalformedZnodeError`` for an unreadable znode."""
        try:
            data, _ = self.port.get(paths.BROKER_DEFAULT_CONFIG)
        except NoNodeError:
            return {}
        return codecs.decode_topic_config(data, paths.BROKER_DEFAULT_CONFIG)  # same format


def _refused_for_size(
    base: TopicAssignment, updates: Mapping[int, ReplicaAssignment]
) -> dict[int, ZkError]:
    """The updates that do not fit, taken in partition order onto ``base`` (what one write
    per partition would refuse: each one that fits stays for the next)."""
    path = paths.topic_path(base.topic)
    sizer = codecs.TopicAssignmentSize(base)
    overhead = fenced.op_size(SetData(path, b"", MATCH_ANY_VERSION))
    refused: dict[int, ZkError] = {}
    max_item = fenced.max_item_bytes()
    for p in sorted(updates):
        size = overhead + sizer.size_with(p, updates[p])
        if size > max_item:
            refused[p] = RequestTooLargeError(
                f"a write of ~{size} bytes to {path} is larger than ZooKeeper's "
                f"jute.maxbuffer allows ({max_item} bytes here; the setting "
                "zookeeper.jute.maxbuffer); not sent",
                path=path,
            )
        else:
            sizer.set(p, updates[p])
    return refused
