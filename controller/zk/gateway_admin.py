"""``ZkGateway``'s admin-side operations: topic deletion, the notification znodes and the
``/admin`` requests (reference §1.3: ``/admin/delete_topics``, ``/isr_change_notification``,
``/log_dir_event_notification``, ``/admin/reassign_partitions``,
``/admin/preferred_replica_election``).

A mixin of ``ZkGateway``, kept apart to keep that module readable. Deletes are fenced by the
controller epoch like every controller write; a malformed notification or request is logged,
naming its path, and skipped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence

import structlog

from controller.core.model import TopicPartition
from controller.zk import codecs, paths
from controller.zk.errors import MalformedZnodeError, NoNodeError, NotEmptyError, ZkError
from controller.zk.fenced import FencedWriter
from controller.zk.port import Create, Delete, ReadResult, SetData, ZkPort

log = structlog.get_logger("controller.zk.gateway")


class AdminZnodes:
    """What it needs from ``ZkGateway`` is declared here; ``ZkGateway`` provides it."""

    port: ZkPort
    _writer: FencedWriter
    get_children: Callable[..., list[str]]
    get_data: Callable[..., tuple[bytes, int, int] | None]
    _get_many: Callable[[list[str]], list[ReadResult]]

    # -- topic deletion ------------------------------------------------------------------

    def get_topic_deletions(self) -> list[str]:
        return sorted(self.get_children(paths.DELETE_TOPICS))

    def delete_topic_deletions(self, topics: Iterable[str], epoch_zk_version: int) -> None:
        self._delete_all(
            [paths.delete_topic_path(t) for t in topics], epoch_zk_version, subtrees=True
        )

    def delete_topic_configs(self, topics: Iterable[str], epoch_zk_version: int) -> None:
        self._delete_all(
            [paths.topic_config_path(t) for t in topics], epoch_zk_version, subtrees=True
        )

    def delete_topic_znode(self, topic: str, epoch_zk_version: int) -> bool:
        """Fenced recursive delete of ``/brokers/topics/T``; False when it did not exist."""
        return self.delete_recursive(paths.topic_path(topic), epoch_zk_version)

    def delete_recursive(self, path: str, epoch_zk_version: int) -> bool:
        tree = self._list_tree(path)
        if not tree:
            return False
        # Children before parents: deepest paths first.
        tree.sort(key=lambda p: p.count("/"), reverse=True)
        self._delete_all(tree, epoch_zk_version)
        return True

    def _list_tree(self, path: str) -> list[str]:
        """``path`` and every node under it ([] when it does not exist). Iterative: a chain of
        stray znodes 1000 deep must not hit Python's recursion limit (at failover, in a loop)."""
        out: list[str] = []
        pending = [path]
        while pending:
            node = pending.pop()
            try:
                children = self.port.get_children(node)
            except NoNodeError:
                continue  # deleted meanwhile (or never there)
            out.append(node)
            pending.extend(f"{node}/{child}" for child in children)
        return out

    def _delete_all(
        self, path_list: list[str], epoch_zk_version: int, *, strict: bool = True,
        subtrees: bool = False,
    ) -> None:  # fmt: skip
        """Fenced deletes; a missing node is not an error. Groups by depth to keep order.

        ``subtrees``: a node found with children of its own (a stray znode someone created
        under a request) is deleted with them. Kafka sends one delete and ignores its result;
        failing instead would fail every failover, and leaving the node would re-trigger its
        watch for ever.

        Not ``strict`` (notifications, as Kafka's ``deleteIsrChangeNotifications``, which
        checks only the controller epoch): a node that cannot be deleted (a child of its own,
        no DELETE permission) is logged and left, rather than failing the caller's event
        (at failover: every election, in a loop)."""
        by_depth: dict[int, list[str]] = {}
        for p in path_list:
            by_depth.setdefault(p.count("/"), []).append(p)
        for depth in sorted(by_depth, reverse=True):
            items = {p: [Delete(p)] for p in by_depth[depth]}
            for p, result in self._writer.run(items, epoch_zk_version).items():
                if subtrees and isinstance(result, NotEmptyError):
                    log.warning("deleting a request znode with children", path=p)
                    self.delete_recursive(p, epoch_zk_version)
                elif isinstance(result, ZkError) and not isinstance(result, NoNodeError):
                    if strict:
                        raise result if result.path else type(result)(str(result), p)
                    log.error("could not delete a notification; left in place", path=p,
                              error=str(result))  # fmt: skip

    # -- notifications -------------------------------------------------------------------

    def get_all_isr_change_notifications(self) -> list[str]:
        return sorted(self.get_children(paths.ISR_CHANGE_NOTIFICATION))

    def get_partitions_from_isr_change_notifications(
        self, names: Iterable[str]
    ) -> set[TopicPartition]:
        out: set[TopicPartition] = set()
        name_list = [f"{paths.ISR_CHANGE_NOTIFICATION}/{n}" for n in names]
        for res in self._get_many(name_list):
            if not res.ok:
                continue
            try:
                out |= codecs.decode_isr_change_notification(res.data, res.path)
            except MalformedZnodeError as exc:
                log.error(
                    "ignoring malformed ISR change notification", path=res.path, error=exc.problem
                )
        return out

    def delete_isr_change_notifications(self, names: Iterable[str], epoch_zk_version: int) -> None:
        self._delete_all(
            [f"{paths.ISR_CHANGE_NOTIFICATION}/{n}" for n in names], epoch_zk_version, strict=False
        )

    def get_all_log_dir_event_notifications(self) -> list[str]:
        return sorted(self.get_children(paths.LOG_DIR_EVENT_NOTIFICATION))

    def get_broker_ids_from_log_dir_events(self, names: Iterable[str]) -> list[int]:
        out = []
        name_list = [f"{paths.LOG_DIR_EVENT_NOTIFICATION}/{n}" for n in names]
        for res in self._get_many(name_list):
            if not res.ok:
                continue
            try:
                out.append(codecs.decode_log_dir_event(res.data, res.path))
            except MalformedZnodeError as exc:
                log.error("ignoring malformed log dir event", path=res.path, error=exc.problem)
        return out

    def delete_log_dir_event_notifications(
        self, names: Iterable[str], epoch_zk_version: int
    ) -> None:
        self._delete_all(
            [f"{paths.LOG_DIR_EVENT_NOTIFICATION}/{n}" for n in names],
            epoch_zk_version,
            strict=False,
        )

    # -- config change notifications (/config/changes) -----------------------------------

    def get_config_changes_czxid(self) -> int | None:
        """The czxid of ``/config/changes`` (None when absent): a new value means the node
        was recreated and its sequence numbers started again at 0."""
        stat = self.port.exists(paths.CONFIG_CHANGES)
        return None if stat is None else stat.czxid

    def get_config_change_notifications(
        self, names: Iterable[str]
    ) -> list[tuple[str, tuple[str, str] | ZkError | MalformedZnodeError]]:
        """Each notification's (entity type, entity name), in the order given; a notification
        purged meanwhile is left out, one that cannot be read or decoded gives its error."""
        out: list[tuple[str, tuple[str, str] | ZkError | MalformedZnodeError]] = []
        for res in self._get_many([f"{paths.CONFIG_CHANGES}/{n}" for n in names]):
            if isinstance(res.error, NoNodeError):
                continue
            if res.error is not None:
                out.append((res.path, res.error))
                continue
            try:
                out.append((res.path, codecs.decode_config_change(res.data, res.path)))
            except MalformedZnodeError as exc:
                out.append((res.path, exc))
        return out

    def purge_config_change_notification(self, name: str) -> None:
        """Delete an expired notification. Not fenced: the purge of Kafka's notification
        listener is not a controller write (every reader of the path may do it)."""
        with contextlib.suppress(NoNodeError):
            self.port.delete(f"{paths.CONFIG_CHANGES}/{name}")

    # -- admin znodes --------------------------------------------------------------------

    def get_partition_reassignment_request(self) -> codecs.ReassignmentRequest:
        """``/admin/reassign_partitions`` entry by entry; absent, or malformed as a whole,
        gives an empty request (Kafka's handling, logged)."""
        got = self.get_data(paths.REASSIGN_PARTITIONS, watch=False)
        if got is None:
            return codecs.ReassignmentRequest({}, {})
        try:
            return codecs.decode_reassignment_request(got[0], paths.REASSIGN_PARTITIONS)
        except MalformedZnodeError as exc:
            log.warning("ignoring malformed reassignment request", path=exc.path, error=exc.problem)
            return codecs.ReassignmentRequest({}, {}, malformed=exc.problem)

    def get_partition_reassignment(self) -> dict[TopicPartition, tuple[int, ...]]:
        """The valid targets of ``/admin/reassign_partitions`` (invalid entries left out)."""
        return self.get_partition_reassignment_request().targets

    def reassign_partitions_in_progress(self) -> bool:
        return self.port.exists(paths.REASSIGN_PARTITIONS) is not None

    def set_or_create_partition_reassignment(
        self,
        reassignment: Mapping[TopicPartition, Iterable[int]],
        epoch_zk_version: int,
        rewritten_from: Sequence[TopicPartition] | None = None,
    ) -> None:
        """``rewritten_from``: the partitions of the znode this rewrites, for Kafka's order."""
        data = codecs.encode_reassignment(
            {tp: tuple(r) for tp, r in reassignment.items()}, rewritten_from=rewritten_from
        )
        result = self._writer.run_one([SetData(paths.REASSIGN_PARTITIONS, data)], epoch_zk_version)
        if isinstance(result, NoNodeError):
            result = self._writer.run_one(
                [Create(paths.REASSIGN_PARTITIONS, data)], epoch_zk_version
            )
        if isinstance(result, ZkError):
            raise result

    def delete_partition_reassignment(self, epoch_zk_version: int) -> None:
        self.delete_recursive(paths.REASSIGN_PARTITIONS, epoch_zk_version)

    def get_preferred_replica_election(self) -> set[TopicPartition]:
        got = self.get_data(paths.PREFERRED_REPLICA_ELECTION, watch=False)
        if got is None:
            return set()
        try:
            return codecs.decode_preferred_replica_election(
                got[0], paths.PREFERRED_REPLICA_ELECTION
            )
        except MalformedZnodeError as exc:
            log.warning(
                "ignoring malformed preferred replica election request",
                path=exc.path,
                error=exc.problem,
            )
            return set()

    def delete_preferred_replica_election(self, epoch_zk_version: int) -> None:
        self._delete_all([paths.PREFERRED_REPLICA_ELECTION], epoch_zk_version, subtrees=True)
