"""``KazooPort``'s writes: single calls, multis (one or pipelined), recursive deletes, and
creates under a per-path ACL policy.

A mixin of ``KazooPort``, kept apart to keep that module readable. Multis are serialized in one
go by ``fastmulti`` (per-path ACLs included) unless an op needs kazoo's own path handling
(sequential creates, non-canonical paths). A create without data is ZooKeeper's null, as
Kafka writes its data-less znodes (parents created along the way too).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from controller.zk import errors, fastmulti, multiread
from controller.zk.kazoo_support import observed, op_results, to_stat
from controller.zk.port import Check, Create, Delete, Op, OpResult, SetData, ZnodeStat

_DELETE_BATCH = 1000  # deletes per multi in a recursive delete (~100 KB requests at most)


class KazooWrites:
    """What it needs from ``KazooPort`` is declared here; ``KazooPort`` provides it."""

    _client: Any
    _chroot: str
    _max_in_flight: int
    _acl_provider: Callable[[str], Sequence[Any]] | None
    _call: Callable[..., Any]
    _translated: Callable[..., AbstractContextManager[None]]
    _pipeline: Callable[..., list[Any]]
    _read_batch: Callable[[Sequence[str], int], list[Any]]
    exists: Callable[..., ZnodeStat | None]

    @observed("multi", lambda ops: len(ops))
    def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        if not ops:
            return []
        raw = self._call(lambda: self._commit_async(ops))
        return op_results(ops, raw)

    @observed("multi_many", lambda transactions: sum(len(t) for t in transactions))
    def multi_many(self, transactions: Sequence[Sequence[Op]]) -> list[list[OpResult]]:
        """Independent multis, pipelined. A multi resent after a connection loss may be
        reordered relative to the others: callers must not rely on their relative order."""
        todo = [i for i, ops in enumerate(transactions) if ops]
        with self._translated():
            raw = self._pipeline(
                [transactions[i] for i in todo],
                self._commit_async,
                self._max_in_flight,
            )
        out: list[list[OpResult]] = [[] for _ in transactions]
        for index, results in zip(todo, raw, strict=True):
            out[index] = op_results(transactions[index], results)
        return out

    def _commit_async(self, ops: Sequence[Op]) -> Any:
        """Submit a multi: serialized in one go (``fastmulti``) unless an op needs kazoo's path
        handling."""
        payload = fastmulti.encode(
            ops, self._chroot, self._client.default_acl, acl_for=self._acl_provider
        )
        if payload is None:
            return self._transaction(ops).commit_async()
        return fastmulti.submit(self._client, payload)

    def _transaction(self, ops: Sequence[Op]) -> Any:
        txn = self._client.transaction()
        for op in ops:
            if isinstance(op, Create):
                txn.create(
                    op.path,
                    op.data or b"",
                    acl=self._acl(op.path),
                    ephemeral=op.ephemeral,
                    sequence=op.sequential,
                )
            elif isinstance(op, SetData):
                txn.set_data(op.path, op.data, op.version)
            elif isinstance(op, Delete):
                txn.delete(op.path, op.version)
            elif isinstance(op, Check):
                txn.check(op.path, op.version)
            else:
                raise TypeError(f"not a ZooKeeper op: {op!r}")
        return txn

    @observed("create")
    def create(
        self,
        path: str,
        data: bytes | None = None,
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        """``data`` None is ZooKeeper's null, as Kafka writes its data-less znodes."""
        if makepath:
            # Not kazoo's makepath: it gives the parents the leaf's ACL and empty data; Kafka
            # gives each its own ACL and null.
            try:
                return self.create(path, data, ephemeral=ephemeral, sequential=sequential)
            except errors.NoNodeError:
                self._ensure_path(path.rsplit("/", 1)[0])
                return self.create(path, data, ephemeral=ephemeral, sequential=sequential)
        created: str = self._call(
            lambda: self._client.create_async(
                path,
                data,
                acl=self._acl(path),
                ephemeral=ephemeral,
                sequence=sequential,
            ),
            path,
        )
        return created

    def _acl(self, path: str) -> list[Any] | None:
        """The ACL to create ``path`` with; None: kazoo's default."""
        return None if self._acl_provider is None else list(self._acl_provider(path))

    def _ensure_path(self, path: str) -> None:
        """Kafka's ``createRecursive`` with null data: every missing level is created with
        null data and its own ACL from the provider (kazoo's ensure_path writes empty data)."""
        if not path or path == "/" or self.exists(path) is not None:
            return
        self._ensure_path(path.rsplit("/", 1)[0])
        with contextlib.suppress(errors.NodeExistsError):  # created meanwhile by another
            self._call(lambda: self._client.create_async(path, None, acl=self._acl(path)), path)

    @observed("set")
    def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        return to_stat(self._call(lambda: self._client.set_async(path, data, version), path))

    @observed("delete")
    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        """Delete ``path``. ``recursive`` deletes descendants first (any version), then the
        node with ``version``; a missing node is then not an error (as kazoo and Kafka)."""
        if not recursive:
            self._call(lambda: self._client.delete_async(path, version), path)
            return
        for _ in range(3):  # a batch raced with another writer: list the tree again
            stat = self.exists(path)
            if stat is None:
                return
            if version != -1 and stat.version != version:
                raise errors.BadVersionError(path=path)
            # Deletes in multis (one write per 1,000 nodes instead of one per node); one
            # session's requests run in order, so the deepest nodes go first.
            victims = self._descendants(path)[::-1]
            batches = [
                [Delete(p) for p in victims[i : i + _DELETE_BATCH]]
                for i in range(0, len(victims), _DELETE_BATCH)
            ]
            *_, (last,) = self.multi_many([*batches, [Delete(path, version)]])
            error = last.error
            # The node itself gone means its whole tree is: a failed batch above only raced.
            if error is None or isinstance(error, errors.NoNodeError):
                return
            if not isinstance(error, errors.NotEmptyError):
                raise error  # e.g. BadVersion: the node changed since we looked
        raise errors.NotEmptyError(f"could not delete the tree under {path}", path=path)

    def _descendants(self, root: str) -> list[str]:
        """Every node under ``root``, parents before children (breadth first); each level is
        listed with one batched read (multi-read getChildren when available)."""
        found: list[str] = []
        level = [root]
        while level:
            with self._translated(root):
                listings = self._read_batch(level, multiread.GET_CHILDREN)
            level = [
                f"{parent.rstrip('/')}/{child}"
                for parent, children in zip(level, listings, strict=True)
                if not isinstance(children, Exception)  # deleted meanwhile: nothing to do
                for child in children
            ]
            found += level
        return found

    @observed("ensure_path")
    def ensure_path(self, path: str) -> None:
        self._ensure_path(path)
