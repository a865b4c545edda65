"""Fenced, batched ZooKeeper writes (reference §1.2, §1.5).

Every controller write goes into a ``multi`` whose first op is
``check(/controller_epoch, epochZkVersion)``. Many independent writes are packed into one
multi (the check costs one op per batch, not per write) and several multis are pipelined.
A multi is all-or-nothing, so when one item's op fails, that item gets its error and the rest
of its batch is retried without it (split-and-retry), matching Kafka's per-request results.
ZooKeeper names only the first failing op of a multi, so the rest is retried in two halves,
each packed on its own: when every item fails (a resent multi meeting its own committed
writes after a lost reply), the rounds grow with log2 of the batch, not with its size.

A failed check raises ``ControllerMovedError``: another controller has bumped the epoch.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from controller.zk import limits, paths
from controller.zk.errors import (
    BadVersionError,
    ControllerMovedError,
    RequestTooLargeError,
    RolledBackError,
    ZkError,
)
from controller.zk.port import Check, Create, Op, OpResult, SetData, ZkPort

K = TypeVar("K", bound=Hashable)

# Ops per multi: enough to amortise the round trip, the check op and ZooKeeper's per-request
# work (measured through KazooPort on 2 cores: ~28K setData/s in multis of 100, ~50K/s in
# multis of 500 or 1,000). Not more: one failing op (BADVERSION) fails its whole multi, and
# the rest of it is sent again.
DEFAULT_OPS_PER_MULTI = 500
# Bytes per multi. ZooKeeper's default jute.maxbuffer (1 MiB - 1) bounds a whole request;
# a larger one makes the server drop the connection, which the port resends until its
# deadline. Partition states are ~80 bytes, but a topic znode holds every partition's
# replicas (tens of KiB for thousands of partitions), so the op count alone is no bound.
# Half the limit leaves room for the framing this estimate leaves out.
DEFAULT_BYTES_PER_MULTI = 512 * 1024
_OP_OVERHEAD = 32  # per-op framing: multi header, op type, version, flags, ACL
# One item's ops share a multi, so an item larger than this can never be sent: default
# jute.maxbuffer (1 MiB - 1) less room for the check op and framing the estimate leaves out.
# A configured zookeeper.jute.maxbuffer replaces it (controller.zk.limits).
MAX_ITEM_BYTES = 1024 * 1024 - 4096


def max_item_bytes() -> int:
    configured = limits.current()
    return MAX_ITEM_BYTES if configured.is_default else configured.write_item_bytes


def op_size(op: Op) -> int:
    """An estimate of the op's share of a multi request, in bytes."""
    data = op.data if isinstance(op, Create | SetData) else None
    return _OP_OVERHEAD + len(op.path.encode()) + (len(data) if data else 0)


class FencedWriter:
    """Runs items (each a short list of ops) in fenced multis at a given epoch zkVersion."""

    def __init__(
        self,
        port: ZkPort,
        ops_per_multi: int = DEFAULT_OPS_PER_MULTI,
        bytes_per_multi: int = DEFAULT_BYTES_PER_MULTI,
    ) -> None:
        self._port = port
        self._ops_per_multi = ops_per_multi
        self._bytes_per_multi = bytes_per_multi

    def run(
        self, items: Mapping[K, Sequence[Op]], epoch_zk_version: int
    ) -> dict[K, list[OpResult] | ZkError]:
        """Apply every item's ops atomically per item; return per-item results or its error.

        An item's result is the list of its own ``OpResult``s when its ops were applied, or the
        ``ZkError`` of the op that failed (its other ops were not applied).
        """
        results: dict[K, list[OpResult] | ZkError] = {}
        first: list[tuple[K, list[Op]]] = []
        # Each item's size once: _pack needs it again in every round.
        sizes: dict[K, int] = {}
        max_item = max_item_bytes()
        for key, ops in items.items():
            size = sizes[key] = sum(op_size(op) for op in ops)
            if size > max_item:
                # Sent, it would be resent for ever (see RequestTooLargeError): fail it alone.
                results[key] = RequestTooLargeError(
                    f"a write of ~{size} bytes to {ops[0].path} is larger than ZooKeeper's "
                    f"jute.maxbuffer allows ({max_item} bytes here; the setting "
                    "zookeeper.jute.maxbuffer); not sent",
                    path=ops[0].path,
                )
            elif ops:
                first.append((key, list(ops)))
        # Groups of items, each packed into multis of its own (the halves of a failed batch).
        groups = [first] if first else []
        while groups:
            batches = [batch for group in groups for batch in self._pack(group, sizes)]
            outcomes = self._port.multi_many(
                [self._with_check(batch, epoch_zk_version) for batch in batches]
            )
            groups = []
            for batch, outcome in zip(batches, outcomes, strict=True):
                retry = self._settle(batch, outcome, results)
                half = (len(retry) + 1) // 2
                groups.extend(group for group in (retry[:half], retry[half:]) if group)
        return results

    def run_one(self, ops: Sequence[Op], epoch_zk_version: int) -> list[OpResult] | ZkError:
        return self.run({0: ops}, epoch_zk_version)[0]

    def _pack(
        self, items: list[tuple[K, list[Op]]], sizes: Mapping[K, int]
    ) -> list[list[tuple[K, list[Op]]]]:
        """Consecutive items per multi, within both the op and the byte budget (``sizes``:
        each item's ``op_size`` total).

        An item over a budget on its own (but within MAX_ITEM_BYTES) still gets a multi of
        its own: its ops must be atomic.
        """
        batches: list[list[tuple[K, list[Op]]]] = []
        current: list[tuple[K, list[Op]]] = []
        count = size = 0
        for key, ops in items:
            item_size = sizes[key]
            if current and (
                count + len(ops) > self._ops_per_multi or size + item_size > self._bytes_per_multi
            ):
                batches.append(current)
                current, count, size = [], 0, 0
            current.append((key, ops))
            count += len(ops)
            size += item_size
        if current:
            batches.append(current)
        return batches

    @staticmethod
    def _with_check(batch: list[tuple[K, list[Op]]], epoch_zk_version: int) -> list[Op]:
        ops: list[Op] = [Check(paths.CONTROLLER_EPOCH, epoch_zk_version)]
        for _, item_ops in batch:
            ops.extend(item_ops)
        return ops

    @staticmethod
    def _settle(
        batch: list[tuple[K, list[Op]]],
        outcome: list[OpResult],
        results: dict[K, list[OpResult] | ZkError],
    ) -> list[tuple[K, list[Op]]]:
        check = outcome[0]
        if check.error is not None and not isinstance(check.error, RolledBackError):
            if isinstance(check.error, BadVersionError):
                raise ControllerMovedError(
                    "controller epoch zkVersion check failed: another controller was elected"
                )
            raise check.error
        if all(r.ok for r in outcome):
            index = 1
            for key, ops in batch:
                results[key] = outcome[index : index + len(ops)]
                index += len(ops)
            return []
        # Find the item whose op failed; retry the others without it.
        retry: list[tuple[K, list[Op]]] = []
        index = 1
        for key, ops in batch:
            own = outcome[index : index + len(ops)]
            index += len(ops)
            failure = next((r.error for r in own if _is_real_failure(r)), None)
            if failure is not None:
                results[key] = failure
            else:
                retry.append((key, ops))
        if len(retry) == len(batch):
            # No op reported a real error (should not happen): fail the batch rather than loop.
            for key, _ in batch:
                results[key] = ZkError("multi failed without a reported cause")
            return []
        return retry


def _is_real_failure(result: OpResult) -> bool:
    return result.error is not None and not isinstance(result.error, RolledBackError)
