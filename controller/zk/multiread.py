"""ZooKeeper's multi-read (``OpCode.multiRead`` = 22, ZooKeeper >= 3.6) on top of kazoo.

kazoo has no public API for it, so this module is the one place that reaches into kazoo's
internals. Assumptions, checked against **kazoo 2.11.0** (the pinned version):

- ``KazooClient._call(request, async_result)`` (private) queues any request object for the
  connection thread, exactly as ``get_async`` does; it fails ``async_result`` itself when the
  client is closed or the session expired. Nothing of kazoo is modified or patched.
- The connection thread (``kazoo/protocol/connection.py``) frames a request as
  ``xid, request.type, request.serialize()``; on a reply without error it calls
  ``request.deserialize(buffer, offset)`` and sets the result; a reply with an error code sets
  the matching kazoo exception (``UnimplementedError`` from a server older than 3.6). It only
  un-chroots ``Transaction`` replies and registers a watch only if the request has a truthy
  ``watcher`` attribute; ours has neither, so paths here carry the chroot explicitly.

Wire format (jute, big-endian), for ``n`` paths::

    request:  n * (MultiHeader(type=4 getData, done=false, err=-1)
                   + GetDataRequest(path, watch=false))
              + MultiHeader(type=-1, done=true, err=-1)
    response: n * (MultiHeader(type=4, done=false, err=0) + GetDataResponse(data, stat)
                   | MultiHeader(type=-1, done=false, err=code) + int code)
              + MultiHeader(type=-1, done=true, err=-1)

getChildren (type 8) is the same with GetChildrenRequest(path, watch=false) and
GetChildrenResponse(vector<ustring> children).

Each read succeeds or fails on its own (a missing node fails only its entry).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import kazoo
import kazoo.version

KAZOO_VERSION_ASSUMED = "2.11.0"
MULTI_READ = 22
GET_DATA = 4
GET_CHILDREN = 8

_INT = struct.Struct("!i")
_HEADER = struct.Struct("!iBi")  # MultiHeader: type, done, err
# Stat: czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner, dataLength,
# numChildren, pzxid.
_STAT = struct.Struct("!qqqqiiiqiiq")
_END = _HEADER.pack(-1, 1, -1)

RawStat = tuple[int, int, int, int, int, int, int, int, int, int, int]
# One entry of a reply, else ZooKeeper's error code: (data, stat) for getData, the child
# names for getChildren.
RawRead = tuple[bytes | None, RawStat] | list[str] | int


#: Bytes of request per multi-read. ZooKeeper drops a connection whose request is larger than
#: its jute.maxbuffer (just under 1 MiB by default) and kazoo re-sends the same request on the
#: next connection, for ever; so chunks are bounded by size as well as by count.
MAX_REQUEST_BYTES = 512 * 1024
_PER_PATH_BYTES = _HEADER.size + _INT.size + 1  # header, path length, watch flag


def chunk_bounds(
    paths: Sequence[str], max_count: int, *, chroot: str = "",
    max_bytes: int = MAX_REQUEST_BYTES,
) -> list[tuple[int, int]]:  # fmt: skip
    """``[start, end)`` ranges of ``paths`` (each to be sent under ``chroot``), each at most
    ``max_count`` paths and ``max_bytes`` bytes of request (a longer path goes alone)."""
    bounds: list[tuple[int, int]] = []
    start, size = 0, 0
    fixed = _PER_PATH_BYTES + len(chroot.encode("utf-8"))
    for i, path in enumerate(paths):
        n = fixed + (len(path) if path.isascii() else len(path.encode("utf-8")))
        if i > start and (i - start >= max_count or size + n > max_bytes):
            bounds.append((start, i))
            start, size = i, 0
        size += n
    if start < len(paths):
        bounds.append((start, len(paths)))
    return bounds


def kazoo_version() -> str:
    return str(getattr(getattr(kazoo, "version", None), "__version__", "unknown"))


def supports_custom_requests(client: Any) -> bool:
    """Whether this kazoo client has the private hook this module needs."""
    return callable(getattr(client, "_call", None))


class MultiReadRequest:
    """A multi-read of ``paths`` (absolute server paths: chroot already prepended), each with
    ``op``: ``GET_DATA`` or ``GET_CHILDREN``."""

    type = MULTI_READ
    __slots__ = ("op", "paths")

    def __init__(self, paths: Sequence[str], op: int = GET_DATA) -> None:
        if op not in (GET_DATA, GET_CHILDREN):
            raise ValueError(f"not a multi-read op: {op}")
        self.paths = paths
        self.op = op

    def serialize(self) -> bytearray:
        out = bytearray()
        header = _HEADER.pack(self.op, 0, -1)
        for path in self.paths:
            encoded = path.encode("utf-8")
            out += header
            out += _INT.pack(len(encoded))
            out += encoded
            out.append(0)  # watch=false: a multi-read never arms watches
        out += _END
        return out

    def deserialize(self, buffer: bytes, offset: int) -> list[RawRead]:
        results: list[RawRead] = []
        unpack_header, unpack_int, unpack_stat = (
            _HEADER.unpack_from,
            _INT.unpack_from,
            _STAT.unpack_from,
        )
        while True:
            op_type, done, _err = unpack_header(buffer, offset)
            offset += _HEADER.size
            if done:
                break
            if op_type == GET_DATA:
                length = unpack_int(buffer, offset)[0]
                offset += 4
                data = None if length < 0 else bytes(buffer[offset : offset + length])
                offset += max(length, 0)
                results.append((data, unpack_stat(buffer, offset)))
                offset += _STAT.size
            elif op_type == GET_CHILDREN:
                count = unpack_int(buffer, offset)[0]
                offset += 4
                names: list[str] = []
                for _ in range(max(count, 0)):
                    length = unpack_int(buffer, offset)[0]
                    offset += 4
                    names.append(bytes(buffer[offset : offset + length]).decode("utf-8"))
                    offset += length
                results.append(names)
            elif op_type == -1:
                results.append(unpack_int(buffer, offset)[0])
                offset += 4
            else:
                raise ValueError(f"unexpected multi-read result type {op_type}")
        if len(results) != len(self.paths):
            raise ValueError(f"multi-read returned {len(results)} results for {len(self.paths)}")
        return results

    def __repr__(self) -> str:
        # kazoo logs requests at DEBUG: keep it short for 1,000 paths.
        first = self.paths[0] if self.paths else None
        return f"MultiReadRequest(op={self.op}, n={len(self.paths)}, first={first!r})"


def submit(client: Any, server_paths: Sequence[str], op: int = GET_DATA) -> Any:
    """Queue one multi-read on ``client``; returns kazoo's ``IAsyncResult``.

    Its value is a ``list[RawRead]`` in path order; a whole-request failure (connection loss,
    session expiry, ``UnimplementedError``) is raised by ``.get()`` as a kazoo exception.
    """
    async_result = client.handler.async_result()
    client._call(MultiReadRequest(server_paths, op), async_result)  # private: see module docstring
    return async_result
