"""The controller's ZooKeeper gateway: Kafka's ``KafkaZkClient`` operations (reference §1.6).

All controller ZooKeeper access goes through this class. It knows Kafka's paths and JSON
formats, arms watches the way Kafka does (reads arm watches only for paths with a registered
handler, see ``controller.zk.watches``), batches reads (multi-read) and writes (multi), and
fences every controller write with ``/controller_epoch``'s zkVersion.

Consistency classes of its methods:

- *election*: ``register_controller_and_increment_epoch`` is its own compare-and-set multi;
- *fenced writes* (take ``epoch_zk_version``): raise ``ControllerMovedError`` when another
  controller was elected since; conditional state writes report BADVERSION per partition;
- *reads*: plain reads, batched where they touch many znodes; a malformed znode is reported
  (logged, naming its path) and skipped, never allowed to kill the caller.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import structlog

from controller.core.model import (
    BrokerAndEpoch,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from controller.zk import codecs, paths
from controller.zk.errors import (
    BadVersionError,
    ControllerMovedError,
    MalformedZnodeError,
    NodeExistsError,
    NoNodeError,
    ZkError,
)
from controller.zk.fenced import FencedWriter
from controller.zk.gateway_admin import AdminZnodes
from controller.zk.gateway_cluster import ClusterZnodes
from controller.zk.gateway_topics import TopicZnodes
from controller.zk.port import (
    Create,
    Delete,
    Op,
    OpResult,
    SetData,
    ZkPort,
    ZnodeStat,
)
from controller.zk.watches import (
    ChildrenDataChangeHandler,
    WatchRegistry,
    ZNodeChangeHandler,
    ZNodeChildChangeHandler,
)

log = structlog.get_logger("controller.zk.gateway")

_BROKER_ID = re.compile(r"0|[1-9][0-9]{0,9}")  # canonical decimal, as brokers name their znode


@dataclass(frozen=True, slots=True)
class UpdateLeaderAndIsrResult:
    """Per-partition outcome of ``update_leader_and_isr`` (Kafka's UpdateLeaderAndIsrResult)."""

    finished: dict[TopicPartition, LeaderAndIsr | Exception]
    to_retry: set[TopicPartition]


class ZkGateway(AdminZnodes, ClusterZnodes, TopicZnodes):
    def __init__(self, port: ZkPort, *, read_batch: int = 1000) -> None:
        self.port = port
        self.watches = WatchRegistry()
        self._writer = FencedWriter(port)
        self._read_batch = read_batch

    # -- watch registry ------------------------------------------------------------------

    def register_change_handler(self, handler: ZNodeChangeHandler) -> None:
        self.watches.register_change(handler)

    def register_children_data_handler(
        self, handler: ChildrenDataChangeHandler, names: Iterable[str]
    ) -> None:
        """``register_change_handler`` of ``parent/name`` for many names with one callback
        (see ``ChildrenDataChangeHandler``); ``unregister_change_handler`` of a member's path
        removes it."""
        self.watches.register_children_data(handler, names)

    def unregister_change_handler(self, path: str) -> None:
        self.watches.unregister_change(path)

    def unregister_change_handlers_under(self, parent: str) -> None:
        """``unregister_change_handler`` of every child of ``parent`` that has one."""
        self.watches.unregister_changes_under(parent)

    def register_child_handler(self, handler: ZNodeChildChangeHandler) -> None:
        self.watches.register_child(handler)

    def unregister_child_handler(self, path: str) -> None:
        self.watches.unregister_child(path)

    def register_change_handler_and_check_existence(self, handler: ZNodeChangeHandler) -> bool:
        """Register, then ``exists`` (which arms the watch even on a missing node)."""
        return self.register_change_handler_and_stat(handler) is not None

    def register_change_handler_and_stat(self, handler: ZNodeChangeHandler) -> ZnodeStat | None:
        """``register_change_handler_and_check_existence``, giving the node's stat."""
        self.watches.register_change(handler)
        return self.port.exists(handler.path, self.watches.data_watcher(handler.path))

    # -- generic reads -------------------------------------------------------------------

    def get_children(self, path: str, *, watch: bool = True) -> list[str]:
        """Children of ``path`` ([] when absent). Arms a registered child watch.

        A read of a missing node arms nothing in ZooKeeper, so ``exists`` arms a creation
        watch that the handler hears as a child change: an operator's ``deleteall
        /admin/delete_topics`` must not leave the controller deaf to its recreation until
        the next failover (Kafka's client has this gap). Re-read if created in between.
        """
        watcher = self.watches.child_watcher(path) if watch else None
        while True:
            try:
                return self.port.get_children(path, watcher)
            except NoNodeError:
                if watcher is None or self.port.exists(path, watcher) is None:
                    return []

    def get_data(self, path: str, *, watch: bool = True) -> tuple[bytes, int, int] | None:
        """(data, zkVersion, czxid), or None when absent. Arms a registered data watch.

        A read of a missing node arms nothing in ZooKeeper, so ``exists`` arms a creation
        watch instead. If the node was created between the two calls, that watch is set on
        an existing node and the creation would never be reported: read it again.
        """
        watcher = self.watches.data_watcher(path) if watch else None
        while True:
            try:
                data, stat = self.port.get(path, watcher)
            except NoNodeError:
                if watcher is None or self.port.exists(path, watcher) is None:
                    return None
                continue
            return data, stat.version, stat.czxid

    def _get_many(self, path_list: list[str]) -> list:
        out = []
        for start in range(0, len(path_list), self._read_batch * 10):
            out.extend(self.port.get_many(path_list[start : start + self._read_batch * 10]))
        return out

    # -- controller election -------------------------------------------------------------

    def get_controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, zkVersion) of ``/controller_epoch``, or None if absent."""
        try:
            data, stat = self.port.get(paths.CONTROLLER_EPOCH)
        except NoNodeError:
            return None
        return codecs.decode_controller_epoch(data, paths.CONTROLLER_EPOCH), stat.version

    def get_controller_id(self) -> int | None:
        """The active controller's id, arming the ``/controller`` watch if registered.

        Raises ``MalformedZnodeError`` when the node exists but cannot be decoded; the watch
        is armed before decoding, so a repair of the node is noticed.
        """
        got = self.get_data(paths.CONTROLLER)
        if got is None:
            return None
        return codecs.decode_controller(got[0], paths.CONTROLLER)

    def get_controller_owner_session(self) -> int | None:
        """The session that holds ``/controller`` (its ephemeral owner), None if absent."""
        stat = self.port.exists(paths.CONTROLLER)
        return None if stat is None else stat.ephemeral_owner

    def register_controller_and_increment_epoch(self, controller_id: int) -> tuple[int, int]:
        """Kafka's ``registerControllerAndIncrementControllerEpoch`` (reference §1.6).

        Returns (new epoch, new epochZkVersion). Raises ControllerMovedError when another
        controller won.
        """
        current = self.get_controller_epoch()
        if current is None:
            with contextlib.suppress(NodeExistsError):
                self.port.create(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(0))
            current = self.get_controller_epoch()
            if current is None:
                raise ControllerMovedError("/controller_epoch vanished during election")
        epoch, version = current
        if epoch >= codecs.INT32_MAX:
            # Kafka's epoch is an int32; a wrapped value would fence out nobody.
            raise ZkError(
                f"{paths.CONTROLLER_EPOCH} holds {epoch}, the int32 maximum: no controller can "
                "be elected until an operator resets it"
            )
        new_epoch = epoch + 1
        results = self.port.multi(
            [
                Create(
                    paths.CONTROLLER,
                    # v2, as Kafka 3.4+ writes it (kraftControllerEpoch -1: a ZK controller);
                    # readers of v1 only look at brokerid.
                    codecs.encode_controller(controller_id, int(time.time() * 1000), version=2),
                    ephemeral=True,
                ),
                SetData(paths.CONTROLLER_EPOCH, codecs.encode_controller_epoch(new_epoch), version),
            ]
        )
        if all(r.ok for r in results):
            stat = results[1].stat
            assert stat is not None
            return new_epoch, stat.version
        error = next(
            r.error for r in results if r.error is not None and r.error.code != "ROLLEDBACK"
        )
        if not isinstance(error, (NodeExistsError, BadVersionError)):
            raise error
        # Lost the race, or our multi succeeded but its reply was lost and it was retried.
        try:
            owner = self.get_controller_id()
        except MalformedZnodeError as exc:
            raise ControllerMovedError(str(exc)) from exc
        if owner is None:
            raise ControllerMovedError("the controller node vanished during the election")
        latest = self.get_controller_epoch()
        if owner == controller_id and latest is not None and latest[0] == new_epoch:
            # Ours only if our session holds the node: Kafka's ids are unique (a broker
            # registers its own), but a second process with this controller id can win the
            # same race, and taking its win as ours would be two controllers at one epoch.
            holder = self.get_controller_owner_session()
            if holder is not None and holder == self.port.session_id:
                return latest
            raise ControllerMovedError(
                f"another process with controller id {controller_id} (ZooKeeper session "
                f"{hex(holder) if holder is not None else 'gone'}) was elected; two "
                "controllers must not share an id"
            )
        raise ControllerMovedError(f"controller {owner} was elected instead of {controller_id}")

    def delete_controller(self, epoch_zk_version: int) -> None:
        result = self._writer.run_one([Delete(paths.CONTROLLER)], epoch_zk_version)
        if isinstance(result, ZkError) and not isinstance(result, NoNodeError):
            raise result

    def delete_own_controller(self) -> bool:
        """Delete ``/controller`` if this session holds it, without the epoch fence: for a
        controller still named there although ``/controller_epoch`` moved under it (written
        by hand), so that an election reads the epoch afresh. False if it is not ours."""
        stat = self.port.exists(paths.CONTROLLER)
        if stat is None or stat.ephemeral_owner != self.port.session_id:
            return False
        try:
            self.port.delete(paths.CONTROLLER, version=stat.version)
        except NoNodeError:
            # Gone since the check: our own delete resent after a lost reply (or someone
            # else's). Either way the election it was for follows.
            return True
        except BadVersionError:
            return False
        return True

    def ensure_persistent_paths(self) -> None:
        for path in paths.PERSISTENT_PATHS:
            self.port.ensure_path(path)

    # -- brokers -------------------------------------------------------------------------

    def get_all_broker_and_epochs(
        self, malformed: dict[int, int] | None = None
    ) -> dict[int, BrokerAndEpoch]:
        """Live registrations (ids sorted as ints) with their epochs (czxid).

        Arms the ``/brokers/ids`` child watch. Malformed registrations are logged and left
        out (their ids and czxids go to ``malformed`` when given); brokers that vanish between
        the listing and the read are skipped. A child whose name is not a broker id (Kafka's
        ``toInt`` takes "-1" and "007", and fails the whole event on "abc") is logged and
        skipped.
        """
        ids = []
        for child in self.get_children(paths.BROKERS_IDS):
            if _BROKER_ID.fullmatch(child) and int(child) <= codecs.INT32_MAX:
                ids.append(int(child))
            else:
                log.error(
                    "ignoring broker registration whose name is not a broker id "
                    f"(a decimal integer in [0, {codecs.INT32_MAX}])",
                    path=f"{paths.BROKERS_IDS}/{child}",
                )
        ids.sort()
        out: dict[int, BrokerAndEpoch] = {}
        for broker_id, res in zip(
            ids, self._get_many([paths.broker_path(i) for i in ids]), strict=True
        ):
            if not res.ok:
                continue
            try:
                broker = codecs.decode_broker(broker_id, res.data, res.path)
            except MalformedZnodeError as exc:
                log.error(
                    "ignoring malformed broker registration", path=res.path, error=exc.problem
                )
                if malformed is not None:
                    malformed[broker_id] = res.stat.czxid
                continue
            out[broker_id] = BrokerAndEpoch(broker, res.stat.czxid)
        return out

    def get_broker(self, broker_id: int) -> BrokerAndEpoch | None:
        """Read one registration, arming its data watch if a handler is registered."""
        path = paths.broker_path(broker_id)
        got = self.get_data(path)
        if got is None:
            return None
        data, _version, czxid = got
        return BrokerAndEpoch(codecs.decode_broker(broker_id, data, path), czxid)

    # -- partition state -----------------------------------------------------------------

    def get_partition_states_raw(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception]:
        """Decoded state znodes; a missing node maps to NoNodeError, a bad one to its error."""
        tps = list(partitions)
        results = self._get_many([paths.partition_state_path(tp.topic, tp.partition) for tp in tps])
        out: dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception] = {}
        for tp, res in zip(tps, results, strict=True):
            if res.error is not None:
                out[tp] = res.error
            elif not res.data:
                out[tp] = NoNodeError("LeaderAndIsr information doesn't exist", res.path)
            else:
                try:
                    out[tp] = codecs.decode_partition_state(res.data, res.stat.version, res.path)
                except MalformedZnodeError as exc:
                    out[tp] = exc
        return out

    def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """Decoded states; missing nodes are skipped; malformed ones are logged and skipped."""
        out = {}
        for tp, res in self.get_partition_states_raw(partitions).items():
            if isinstance(res, LeaderIsrAndControllerEpoch):
                out[tp] = res
            elif isinstance(res, MalformedZnodeError):
                log.error("ignoring malformed partition state", path=res.path, error=res.problem)
            elif not isinstance(res, NoNodeError):
                raise res
        return out

    def create_topic_partition_states(
        self,
        states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
        epoch_zk_version: int,
    ) -> dict[TopicPartition, ZkError | None]:
        """Fenced creation of parents and ``state`` znodes (createTopicPartitionStatesRaw).

        Parents that already exist are fine; a state znode that exists is NODEEXISTS for that
        partition.
        """
        topics = {tp.topic for tp in states}
        parents = {t: [Create(paths.topic_partitions_path(t))] for t in topics}
        for _ in self._writer.run(parents, epoch_zk_version).values():
            pass  # NODEEXISTS (or NONODE for a vanished topic, reported below) is expected
        items: dict[TopicPartition, list[Op]] = {
            tp: [
                Create(paths.partition_path(tp.topic, tp.partition)),
                Create(
                    paths.partition_state_path(tp.topic, tp.partition),
                    codecs.encode_partition_state(state),
                ),
            ]
            for tp, state in states.items()
        }
        out: dict[TopicPartition, ZkError | None] = {}
        retry: dict[TopicPartition, list[Op]] = {}
        for tp, result in self._writer.run(items, epoch_zk_version).items():
            if isinstance(result, NodeExistsError):
                # Either the partition parent or the state exists; retrying with just the
                # state tells which (a second NODEEXISTS means the state itself).
                retry[tp] = items[tp][1:]
            else:
                out[tp] = result if isinstance(result, ZkError) else None
        if retry:
            for tp, result in self._writer.run(retry, epoch_zk_version).items():
                out[tp] = result if isinstance(result, ZkError) else None
        # A NODEEXISTS that is our own create, resent after its reply was lost (see
        # _own_lost_writes): the state holds exactly what we wrote, at version 0.
        exists = [tp for tp, error in out.items() if isinstance(error, NodeExistsError)]
        if exists:
            with contextlib.suppress(ZkError):
                for tp, now in self.get_partition_states_raw(exists).items():
                    if now == states[tp]:  # same leadership, controller epoch, version 0
                        out[tp] = None
        return out

    def update_leader_and_isr(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> UpdateLeaderAndIsrResult:
        """Fenced conditional writes of state znodes at each state's ``partition_epoch``.

        As Kafka's: BADVERSION partitions go to ``to_retry``, other per-partition errors to
        ``finished``; ``ControllerMovedError`` propagates, and any other exception (e.g. the
        connection is lost for good) fails every partition, so callers still settle the
        partitions of their earlier rounds instead of aborting the whole state change.
        """
        items: dict[TopicPartition, list[Op]] = {
            tp: [
                SetData(
                    paths.partition_state_path(tp.topic, tp.partition),
                    codecs.encode_partition_state(
                        LeaderIsrAndControllerEpoch(lai, controller_epoch)
                    ),
                    lai.partition_epoch,
                )
            ]
            for tp, lai in states.items()
        }
        finished: dict[TopicPartition, LeaderAndIsr | Exception] = {}
        to_retry: set[TopicPartition] = set()
        try:
            written = self._writer.run(items, epoch_zk_version)
        except ControllerMovedError:
            raise
        except Exception as exc:
            return UpdateLeaderAndIsrResult(dict.fromkeys(states, exc), set())
        for tp, result in written.items():
            if isinstance(result, BadVersionError):
                to_retry.add(tp)
            elif isinstance(result, ZkError):
                finished[tp] = result
            else:
                stat = result[0].stat
                assert stat is not None
                finished[tp] = states[tp].with_partition_epoch(stat.version)
        for tp, landed in self._own_lost_writes(states, to_retry, controller_epoch).items():
            to_retry.discard(tp)
            finished[tp] = landed
        return UpdateLeaderAndIsrResult(finished, to_retry)

    def _own_lost_writes(
        self,
        states: Mapping[TopicPartition, LeaderAndIsr],
        partitions: Iterable[TopicPartition],
        controller_epoch: int,
    ) -> dict[TopicPartition, LeaderAndIsr]:
        """The BADVERSION partitions whose znode holds exactly our write, one version on.

        A write whose reply is lost to a connection loss is resent by the client (as Kafka's
        ZooKeeperClient does); if the first attempt had committed, the resend fails with
        BADVERSION against our own write. Only this controller writes states with its epoch,
        so the same content at ``partition_epoch + 1`` is that first attempt: report it as
        written. Otherwise an AlterPartition would be refused although its ISR is in
        ZooKeeper, leaving the cache and the leader one version behind for good (found by
        the chaos suite, seed 1: a ZooKeeper leader stop during an ISR expansion stalled a
        reassignment), and an election would be redone at yet another leader epoch.
        """
        tps = sorted(partitions)
        if not tps:
            return {}
        try:
            current = self.get_partition_states_raw(tps)
        except ZkError:
            return {}  # the caller retries them by re-reading anyway
        landed: dict[TopicPartition, LeaderAndIsr] = {}
        for tp in tps:
            now = current.get(tp)
            ours = states[tp]
            if (
                isinstance(now, LeaderIsrAndControllerEpoch)
                and now.controller_epoch == controller_epoch
                and now.leader_and_isr.partition_epoch == ours.partition_epoch + 1
                and now.leader_and_isr.equals_ignore_partition_epoch(ours)
            ):
                landed[tp] = now.leader_and_isr
        return landed


def assignment_with(
    current: TopicAssignment, partition: int, assignment: ReplicaAssignment
) -> TopicAssignment:
    """The topic's assignment with one partition replaced (used by reassignment)."""
    partitions = dict(current.partitions)
    partitions[partition] = assignment
    return TopicAssignment(current.topic, current.topic_id, partitions)


__all__ = ["OpResult", "UpdateLeaderAndIsrResult", "ZkGateway", "assignment_with"]
