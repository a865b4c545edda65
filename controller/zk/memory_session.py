"""The client side of the in-memory ZooKeeper: ``MemoryZkSession`` implements ``ZkPort``.

Semantics, fault injection and callback delivery are described in ``controller.zk.memory``.
This module only translates chroot-relative paths, checks the session is live and runs each
call as one transaction of the model under its lock.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial

from controller.zk.errors import (
    BadVersionError,
    ConnectionLossError,
    NoNodeError,
    RolledBackError,
    SessionExpiredError,
    ZkError,
)
from controller.zk.memory import (
    RECURSIVE_DELETE_BATCH,
    MemoryZooKeeper,
    _depth_first,
    _guarded,
    _parent,
    _rebase,
    _Txn,
    _validate,
)
from controller.zk.port import (
    Check,
    Create,
    Delete,
    Op,
    OpResult,
    ReadResult,
    SessionListener,
    SessionState,
    SetData,
    WatchCallback,
    ZnodeStat,
)


class MemoryZkSession:
    """A client of ``MemoryZooKeeper`` implementing ``ZkPort``. Create with ``open_session``."""

    def __init__(self, zk: MemoryZooKeeper, chroot: str = "") -> None:
        chroot = chroot.rstrip("/")
        if chroot:
            _validate(chroot)
        self._zk = zk
        self._chroot = chroot
        self._sid: int | None = None
        self._connected = False
        self._state = SessionState.LOST
        self._listeners: list[SessionListener] = []
        # Watches held back while disconnected: (kind, absolute path, callback, zxid seen).
        self._parked: list[tuple[str, str, WatchCallback, int | None]] = []

    # ----------------------------------------------------------- session handling

    @property
    def session_id(self) -> int | None:
        """The session id while the session lives, also while disconnected (as
        ``KazooPort.session_id``); None once it is lost or closed."""
        with self._zk._lock:
            return self._sid

    @property
    def client_id(self) -> tuple[int, bytes] | None:
        """While connected (as kazoo's ``client_id``)."""
        with self._zk._lock:
            sid = self._sid if self._connected else None
        return None if sid is None else (sid, sid.to_bytes(16, "big"))

    @property
    def state(self) -> SessionState:
        with self._zk._lock:
            return self._state

    def start(self, timeout: float = 15.0) -> None:
        del timeout  # connecting to the model never waits
        with self._zk._lock:
            if self._sid is None:
                self._zk._open(self)
            else:
                self._zk._resume(self)
        self._zk._flush()

    def stop(self) -> None:
        with self._zk._lock:
            if self._sid is not None:
                self._zk._close_session(self)
                self._set_state(SessionState.LOST)
        self._zk._flush()

    def restart(self) -> None:
        self.stop()
        self.start()

    def add_session_listener(self, listener: SessionListener) -> None:
        with self._zk._lock:
            if listener not in self._listeners:
                self._listeners.append(listener)

    def remove_session_listener(self, listener: SessionListener) -> None:
        with self._zk._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _set_state(self, state: SessionState) -> None:
        # Lock held. Like kazoo, a repeated state is not reported again.
        if state is self._state:
            return
        self._state = state
        for listener in list(self._listeners):
            self._zk._post(partial(_guarded, "listener", listener, state))

    # -------------------------------------------------------------------- paths

    def _abs(self, path: str) -> str:
        _validate(path)
        if not self._chroot:
            return path
        return self._chroot if path == "/" else self._chroot + path

    def _unchroot(self, path: str) -> str:
        chroot = self._chroot
        if chroot and (path == chroot or path.startswith(chroot + "/")):
            return path[len(chroot) :] or "/"
        return path

    def _live(self) -> MemoryZooKeeper:
        # Lock held.
        if self._sid is None:
            raise SessionExpiredError("no session (expired or closed)")
        if not self._connected:
            raise ConnectionLossError("disconnected")
        return self._zk

    # -------------------------------------------------------------------- reads

    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, ZnodeStat]:
        apath = self._abs(path)
        with self._zk._lock:
            zk = self._live()
            node = zk._nodes.get(apath)
            if node is None:
                raise NoNodeError(path=path)
            if watch is not None:
                zk._arm(zk._data_watches, apath, (self, watch))
            return node.data, node.stat()

    def exists(self, path: str, watch: WatchCallback | None = None) -> ZnodeStat | None:
        apath = self._abs(path)
        with self._zk._lock:
            zk = self._live()
            if watch is not None:
                zk._arm(zk._data_watches, apath, (self, watch))
            node = zk._nodes.get(apath)
            return None if node is None else node.stat()

    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        apath = self._abs(path)
        with self._zk._lock:
            zk = self._live()
            node = zk._nodes.get(apath)
            if node is None:
                raise NoNodeError(path=path)
            if watch is not None:
                zk._arm(zk._child_watches, apath, (self, watch))
            return sorted(node.children)  # sorted: deterministic for the simulator

    def get_many(self, paths: Sequence[str]) -> list[ReadResult]:
        apaths = [self._abs(p) for p in paths]
        results: list[ReadResult] = []
        with self._zk._lock:
            zk = self._live()
            for path, apath in zip(paths, apaths, strict=True):
                node = zk._nodes.get(apath)
                if node is None:
                    results.append(ReadResult(path, error=NoNodeError(path=path)))
                else:
                    results.append(ReadResult(path, node.data, node.stat()))
        return results

    def get_many_watched(self, paths: Sequence[str], watch: WatchCallback) -> list[ReadResult]:
        """Each path read and watched atomically, as ``get`` (or ``exists`` when missing)."""
        results: list[ReadResult] = []
        with self._zk._lock:
            zk = self._live()
            for path in paths:
                apath = self._abs(path)
                zk._arm(zk._data_watches, apath, (self, watch))
                node = zk._nodes.get(apath)
                if node is None:
                    results.append(ReadResult(path, error=NoNodeError(path=path)))
                else:
                    results.append(ReadResult(path, node.data, node.stat()))
        return results

    # ------------------------------------------------------------------- writes

    def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        return self.multi_many([ops])[0]

    def multi_many(self, transactions: Sequence[Sequence[Op]]) -> list[list[OpResult]]:
        out: list[list[OpResult]] = []
        try:
            with self._zk._lock:
                zk = self._live()
                for ops in transactions:
                    out.append(self._multi_locked(zk, ops))
        finally:
            self._zk._flush()  # deliver the watches of the multis that did commit
        return out

    def _multi_locked(self, zk: MemoryZooKeeper, ops: Sequence[Op]) -> list[OpResult]:
        if not ops:
            return []
        txn = _Txn(zk._zxid + 1)
        results: list[OpResult] = []
        for index, op in enumerate(ops):
            try:
                results.append(self._apply_op(zk, txn, op))
            except ZkError as exc:
                txn.rollback()
                return [
                    OpResult(error=exc if i == index else RolledBackError(path=o.path))
                    for i, o in enumerate(ops)
                ]
            except BaseException:  # a malformed op: nothing of this multi may stay applied
                txn.rollback()
                raise
        zk._commit(txn)
        return results

    def _apply_op(self, zk: MemoryZooKeeper, txn: _Txn, op: Op) -> OpResult:
        """Apply one op (lock held); a ``ZkError`` carries the caller's (chroot-relative) path."""
        with self._relabel(op.path):
            if isinstance(op, Create):
                owner = (self._sid or 0) if op.ephemeral else 0
                created = _rebase(op, self._abs_create(op.path))
                return OpResult(path=self._unchroot(zk._apply_create(txn, created, owner=owner)))
            if isinstance(op, SetData | Delete | Check):
                return zk._apply(txn, _rebase(op, self._abs(op.path)))
        raise TypeError(f"not a ZooKeeper op: {op!r}")

    @contextmanager
    def _relabel(self, path: str) -> Iterator[None]:
        """Report a ``ZkError`` with the caller's (chroot-relative) path, like kazoo."""
        try:
            yield
        except ZkError as exc:
            raise type(exc)(path=self._unchroot(exc.path) if exc.path else path) from None

    def _abs_create(self, path: str) -> str:
        # A sequential create may end with "/" (the name is then just the counter).
        if path.endswith("/") and path != "/":
            return self._abs(path[:-1]) + "/"
        return self._abs(path)

    def _write(self, op: Op) -> OpResult:
        with self._zk._lock:
            zk = self._live()
            txn = _Txn(zk._zxid + 1)
            try:
                result = self._apply_op(zk, txn, op)
            except BaseException:
                txn.rollback()
                raise
            zk._commit(txn)
        self._zk._flush()
        return result

    def create(
        self,
        path: str,
        data: bytes | None = None,
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        op = Create(path, data, ephemeral=ephemeral, sequential=sequential)
        if not makepath:
            created = self._write(op).path
        else:
            try:
                created = self._write(op).path
            except NoNodeError:
                # As kazoo: create the missing parents, then try again.
                self.ensure_path(path[:-1] if path.endswith("/") else _parent(path))
                created = self._write(op).path
        assert created is not None
        return created

    def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        stat = self._write(SetData(path, data, version)).stat
        assert stat is not None
        return stat

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        """Delete ``path``. ``recursive`` deletes descendants first (any version), then the
        node with ``version``; a missing node is then not an error (as kazoo and Kafka)."""
        if not recursive:
            self._write(Delete(path, version))
            return
        apath = self._abs(path)
        with self._zk._lock:
            zk = self._live()
            node = zk._nodes.get(apath)
            if node is None:
                return
            if version != -1 and version != node.version:
                raise BadVersionError(path=path)
            *victims, _ = _depth_first(zk, apath)
            # Batched as KazooPort sends them: multis of descendants, then the node itself.
            for start in range(0, len(victims), RECURSIVE_DELETE_BATCH):
                txn = _Txn(zk._zxid + 1)
                for victim in victims[start : start + RECURSIVE_DELETE_BATCH]:
                    zk._apply_delete(txn, victim, -1)
                zk._commit(txn)
            txn = _Txn(zk._zxid + 1)
            zk._apply_delete(txn, apath, version)
            zk._commit(txn)
        self._zk._flush()

    def ensure_path(self, path: str) -> None:
        apath = self._abs(path)
        try:
            with self._zk._lock, self._relabel(path):
                zk = self._live()
                missing: list[str] = []
                cursor = apath
                while cursor not in zk._nodes:
                    missing.append(cursor)
                    cursor = _parent(cursor)
                for target in reversed(missing):  # one create per node, as kazoo sends them
                    txn = _Txn(zk._zxid + 1)
                    zk._apply_create(txn, Create(target))
                    zk._commit(txn)
        finally:
            self._zk._flush()

    def __repr__(self) -> str:
        sid = f"{self._sid:#x}" if self._sid is not None else None
        return f"MemoryZkSession(session_id={sid}, chroot={self._chroot!r})"
