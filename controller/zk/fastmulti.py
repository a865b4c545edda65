"""ZooKeeper ``multi`` requests serialized in one go, for kazoo's connection thread.

kazoo builds a multi op by op: ``TransactionRequest.set_data`` normalizes each path
(``_prefix_root``: join + normpath), makes a namedtuple, and its connection thread then
serializes every op and header with separate struct calls: ~8 us of Python per op, for the
500 ops of every fenced multi of an election or ISR change. Here the ops are encoded straight
to jute bytes when the transaction is submitted; the reply is parsed by kazoo's own
``Transaction.deserialize`` (and un-chrooted by its connection thread like its own, since the
request type is the same), so callers get exactly what ``TransactionRequest.commit_async``
gives.

Only canonical paths take this path (what ``_prefix_root`` would not change: absolute, no
empty, ``.`` or ``..`` components, no trailing slash); anything else returns None and the
caller uses kazoo's ``TransactionRequest``. kazoo internals relied on (2.11.0):
``KazooClient._call(request, async_result)`` as in ``multiread``; ``client.default_acl``;
jute layouts of ``MultiHeader``, ``Create``, ``Delete``, ``SetData`` and ``CheckVersion``
(``kazoo/protocol/serialization.py``). A test compares the bytes with kazoo's serializer.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

from kazoo.protocol.serialization import Transaction
from kazoo.security import OPEN_ACL_UNSAFE

from controller.zk.port import Check, Create, Delete, Op, SetData

_INT = struct.Struct("!i")
_HEADER = struct.Struct("!iBi")  # MultiHeader: type, done, err
_CREATE, _DELETE, _SET_DATA, _CHECK = (
    _HEADER.pack(t, 0, -1) for t in (1, 2, 5, 13)
)
_END = _HEADER.pack(-1, 1, -1)
_NO_DATA = _INT.pack(-1)


class FastTransaction:
    """A ``Transaction`` whose ops are already serialized."""

    type = Transaction.type
    __slots__ = ("payload",)

    def __init__(self, payload: bytes) -> None:
        self.payload = payload

    def serialize(self) -> bytes:
        return self.payload

    def deserialize(self, buffer: bytes, offset: int) -> list[Any]:
        return Transaction.deserialize(buffer, offset)

    def __repr__(self) -> str:  # kazoo logs requests at DEBUG
        return f"FastTransaction({len(self.payload)} bytes)"


def _canonical(path: str) -> bool:
    if not path.startswith("/") or path.endswith("/"):
        return False
    return "//" not in path and "/./" not in path and "/../" not in path and not (
        path.endswith("/.") or path.endswith("/..")
    )


def _string(text: str) -> bytes:
    encoded = text.encode("utf-8")
    return _INT.pack(len(encoded)) + encoded


def _acl(acl: Sequence[Any]) -> bytes:
    out = [_INT.pack(len(acl))]
    for entry in acl:
        out.append(_INT.pack(entry.perms) + _string(entry.id.scheme) + _string(entry.id.id))
    return b"".join(out)


def encode(
    ops: Sequence[Op],
    chroot: str,
    default_acl: Sequence[Any] | None,
    acl_for: Callable[[str], Sequence[Any]] | None = None,
) -> bytes | None:
    """The jute body of a multi of ``ops`` (paths relative to ``chroot``), or None when one of
    them needs kazoo's path handling. Creates get ``acl_for(path)`` when given, else
    ``default_acl``; a create's data None is ZooKeeper's null (as Kafka's null-data znodes)."""
    out: list[bytes] = []
    append = out.append
    acl_bytes: bytes | None = None
    pack = _INT.pack
    for op in ops:
        path = op.path
        if not _canonical(path):
            return None
        server_path = _string(chroot + path)
        kind = type(op)
        if kind is SetData:
            data = op.data  # type: ignore[union-attr]
            append(
                _SET_DATA
                + server_path
                + (_NO_DATA if data is None else pack(len(data)) + data)
                + pack(op.version)  # type: ignore[union-attr]
            )
        elif kind is Check:
            append(_CHECK + server_path + pack(op.version))  # type: ignore[union-attr]
        elif kind is Delete:
            append(_DELETE + server_path + pack(op.version))  # type: ignore[union-attr]
        elif kind is Create:
            if op.sequential:  # type: ignore[union-attr]
                return None  # kazoo keeps a trailing slash for sequential names
            if acl_for is not None:
                acl = _acl(acl_for(path))
            else:
                if acl_bytes is None:
                    acl_bytes = _acl(default_acl or OPEN_ACL_UNSAFE)
                acl = acl_bytes
            data = op.data  # type: ignore[union-attr]
            flags = 1 if op.ephemeral else 0  # type: ignore[union-attr]
            append(
                _CREATE
                + server_path
                + (_NO_DATA if data is None else pack(len(data)) + data)
                + acl
                + pack(flags)
            )
        else:
            return None
    append(_END)
    return b"".join(out)


def submit(client: Any, payload: bytes) -> Any:
    """Queue the multi; returns kazoo's ``IAsyncResult`` (as ``commit_async``)."""
    async_result = client.handler.async_result()
    client._call(FastTransaction(payload), async_result)  # private: see the module docstring
    return async_result
