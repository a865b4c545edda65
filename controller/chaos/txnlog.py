"""A reader for ZooKeeper's transaction logs (``dataDir/version-2/log.<zxid>``).

The transaction log is the complete, ordered history of every write the ensemble accepted,
with the session that made it. After a chaos run the union of the three servers' logs (each
committed transaction is logged by a quorum before it commits) lets the audit re-check the
safety invariants over every version of every znode, which polling cannot promise.

Format (``FileTxnLog``, jute serialization, big-endian): a file header (magic ``ZKLG``,
version, dbid), then entries of ``crc (long) | length (int) | txn bytes | 'B'``, until a
zero length (the preallocated tail). The txn bytes are a ``TxnHeader`` (clientId, cxid,
zxid, time, type), the type's record, and (3.6+) a ``TxnDigest`` that is ignored here. A
failed multi is logged with every op as an ``ErrorTxn``; failed plain requests are logged as
``error`` transactions: neither changes anything, and both are reported as such.
"""

from __future__ import annotations

import builtins
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"ZKLG"

CREATE, DELETE, SET_DATA, SET_ACL, CHECK, MULTI = 1, 2, 5, 7, 13, 14
CREATE2, CREATE_CONTAINER, DELETE_CONTAINER, CREATE_TTL = 15, 19, 20, 21
CREATE_SESSION, CLOSE_SESSION, ERROR = -10, -11, -1
_CREATES = (CREATE, CREATE2, CREATE_CONTAINER, CREATE_TTL)


class TxnLogError(ValueError):
    """The file is not a ZooKeeper transaction log, or an entry is corrupt."""


@dataclass(frozen=True, slots=True)
class Op:
    """One change inside a transaction (a plain request is a transaction with one op)."""

    type: int
    path: str = ""
    data: bytes = b""
    version: int = -1  # SetData: the version after the write; Check: the expected version
    ephemeral: bool = False

    @property
    def is_create(self) -> bool:
        return self.type in _CREATES

    @property
    def is_delete(self) -> bool:
        return self.type in (DELETE, DELETE_CONTAINER)


@dataclass(frozen=True, slots=True)
class Txn:
    zxid: int
    session: int
    time_ms: int
    type: int
    ops: tuple[Op, ...]  # successful changes only; empty for errors and session events

    @property
    def failed(self) -> bool:
        return self.type == ERROR or (self.type == MULTI and not self.ops)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, size: int) -> bytes:
        if self.pos + size > len(self.data):
            raise TxnLogError("truncated record")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def int(self) -> int:
        value: int = struct.unpack(">i", self._take(4))[0]
        return value

    def long(self) -> builtins.int:  # `int` is the method above in this class body
        value: builtins.int = struct.unpack(">q", self._take(8))[0]
        return value

    def bool(self) -> bool:
        return self._take(1) != b"\x00"

    def buffer(self) -> bytes:
        size = self.int()
        return b"" if size < 0 else self._take(size)

    def string(self) -> str:
        return self.buffer().decode("utf-8", "replace")

    def acls(self) -> None:
        for _ in range(max(self.int(), 0)):
            self.int()  # perms
            self.string()  # scheme
            self.string()  # id


def _op(op_type: int, reader: _Reader) -> Op | None:
    """Parse one record; None for records that change nothing the audit needs."""
    if op_type in (CREATE, CREATE2, CREATE_TTL):
        path, data = reader.string(), reader.buffer()
        reader.acls()
        ephemeral = reader.bool()
        return Op(op_type, path, data, 0, ephemeral)
    if op_type == CREATE_CONTAINER:
        path, data = reader.string(), reader.buffer()
        return Op(op_type, path, data, 0)
    if op_type in (DELETE, DELETE_CONTAINER):
        return Op(op_type, reader.string())
    if op_type == SET_DATA:
        path, data = reader.string(), reader.buffer()
        return Op(op_type, path, data, reader.int())
    if op_type == CHECK:
        path = reader.string()
        return Op(op_type, path, version=reader.int())
    if op_type == SET_ACL:
        return Op(op_type, reader.string())
    return None  # errors, sessions, reconfig


def parse_txn(payload: bytes) -> Txn:
    reader = _Reader(payload)
    session, _cxid, zxid = reader.long(), reader.int(), reader.long()
    time_ms, txn_type = reader.long(), reader.int()
    ops: list[Op] = []
    if txn_type == MULTI:
        for _ in range(max(reader.int(), 0)):
            sub_type = reader.int()
            sub = _op(sub_type, _Reader(reader.buffer()))
            if sub is not None:
                ops.append(sub)
    else:
        op = _op(txn_type, reader)
        if op is not None:
            ops.append(op)
    return Txn(zxid, session, time_ms, txn_type, tuple(ops))


def read_log(path: Path) -> Iterator[Txn]:
    """The transactions of one log file, in order (stops at the preallocated zero tail or a
    torn last entry, as ZooKeeper's own reader does)."""
    data = path.read_bytes()
    if data[:4] != MAGIC:
        raise TxnLogError(f"{path}: not a ZooKeeper transaction log")
    pos = 16  # magic, version, dbid
    while pos + 12 <= len(data):
        crc, length = struct.unpack_from(">qi", data, pos)
        if length <= 0 or pos + 12 + length + 1 > len(data):
            return
        payload = data[pos + 12 : pos + 12 + length]
        if zlib.adler32(payload) != crc & 0xFFFFFFFF:
            return  # a torn write at the end of the file
        yield parse_txn(payload)
        pos += 12 + length + 1  # the 'B' end-of-record marker


def log_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "version-2").glob("log.*"), key=lambda p: int(p.suffix[1:], 16))


def read_ensemble(data_dirs: Iterable[Path]) -> list[Txn]:
    """Every transaction any server logged, once, in zxid order."""
    seen: dict[int, Txn] = {}
    for data_dir in data_dirs:
        for path in log_files(Path(data_dir)):
            for txn in read_log(path):
                seen.setdefault(txn.zxid, txn)
    return [seen[zxid] for zxid in sorted(seen)]
