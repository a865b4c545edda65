"""ZooKeeper's ``SetWatches`` request (``OpCode.setWatches`` = 101) on top of kazoo.

ZooKeeper's Java client sends it after reconnecting to re-register its watches; nothing stops a
client from sending it at any time, and it is the one way to arm many watches in one request:
a multi-read cannot arm watches (the server drops their watch flag), and one ``exists`` per
znode costs ~90 µs of kazoo's Python each, i.e. 9 s for the 100,000 topic znodes of a large
cluster. With ``SetWatches`` the same 100,000 data watches are ~25 requests.

Semantics (the server's ``DataTree.setWatches``), for each path of ``dataWatches``: a missing
node fires ``NodeDeleted`` at once; a node whose mzxid is greater than ``relativeZxid`` (it
changed since the client read it) fires ``NodeDataChanged`` at once; any other node gets a
one-shot data watch. So a caller that read the nodes, then sends ``SetWatches`` with a zxid no
greater than the one it read at, misses no change: a change after the read either fires at once
or fires the watch. (A change between ``relativeZxid`` and the read fires although the read saw
it: a spurious event, never a lost one.)

kazoo internals this relies on, checked against **kazoo 2.11.0** (the pinned version), in the
same spirit as ``multiread``:

- ``KazooClient._call(request, async_result)`` queues any request object; kazoo's connection
  thread calls ``request.serialize()`` in ``_submit`` right before writing it, then
  ``request.deserialize(buffer, offset)`` on a reply without error (``SetWatches`` replies
  carry no body);
- watch notifications are dispatched from ``client._data_watchers[server_path]`` (a
  ``defaultdict(set)`` keyed by the path *with* the chroot), which kazoo's own reads fill on
  the connection thread. This request adds its watchers there from ``serialize``, i.e. on the
  connection thread too, before the server can arm (and fire) anything.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Any

from controller.zk import multiread

SET_WATCHES = 101
# The Java client's bound per request (ClientCnxn.SET_WATCHES_MAX_LENGTH): well below
# jute.maxbuffer, so a request is never refused for its size.
MAX_REQUEST_BYTES = 128 * 1024

_INT = struct.Struct("!i")
_LONG = struct.Struct("!q")


class Watchers:
    """What kazoo keeps per watched path (a ``set`` in kazoo, which only adds to, iterates and
    pops it): one watcher held in a slot, a list only if a second one comes. One watcher per
    path is the norm; kazoo's set costs 216 bytes, a one-item list ~100, this 48."""

    __slots__ = ("_first", "_more")

    def __init__(self, first: Any) -> None:
        self._first = first
        self._more: list[Any] | None = None

    def add(self, watcher: Any) -> None:
        if watcher == self._first or (self._more is not None and watcher in self._more):
            return
        if self._more is None:
            self._more = [watcher]
        else:
            self._more.append(watcher)

    def __iter__(self) -> Iterator[Any]:
        yield self._first
        if self._more is not None:
            yield from self._more

    def __len__(self) -> int:
        return 1 + (len(self._more) if self._more is not None else 0)


class SetWatchesRequest:
    """Data watches on ``watches`` (absolute server paths, each with kazoo's watcher object)
    relative to ``relative_zxid``; no exist or child watches."""

    type = SET_WATCHES
    __slots__ = ("client", "relative_zxid", "watches")

    def __init__(self, client: Any, relative_zxid: int, watches: Sequence[tuple[str, Any]]):
        self.client = client
        self.relative_zxid = relative_zxid
        self.watches = watches

    def serialize(self) -> bytearray:
        client = self.client
        # On kazoo's connection thread, before the bytes leave: see the module docstring.
        if not client._stopped.is_set():
            registry = client._data_watchers
            for path, watcher in self.watches:
                watchers = registry.get(path)
                if watchers is None:
                    registry[path] = Watchers(watcher)
                else:
                    watchers.add(watcher)
        out = bytearray(_LONG.pack(self.relative_zxid))
        out += _INT.pack(len(self.watches))
        for path, _ in self.watches:
            encoded = path.encode("utf-8")
            out += _INT.pack(len(encoded))
            out += encoded
        out += _INT.pack(0)  # existWatches
        out += _INT.pack(0)  # childWatches
        return out

    def deserialize(self, buffer: bytes, offset: int) -> None:
        return None

    def __repr__(self) -> str:
        first = self.watches[0][0] if self.watches else None
        return f"SetWatchesRequest(zxid={self.relative_zxid}, n={len(self.watches)}, {first!r})"


class ZxidMultiRead(multiread.MultiReadRequest):
    """A multi-read that remembers the zxid its reply was served at: kazoo's connection thread
    sets ``client.last_zxid`` from the reply header just before calling ``deserialize``, so
    reading it there is exact (a later reply to another request may carry a higher zxid, which
    would make a ``SetWatches`` miss the changes in between)."""

    __slots__ = ("client", "zxid")

    def __init__(self, client: Any, paths: Sequence[str], op: int = multiread.GET_DATA) -> None:
        super().__init__(paths, op)
        self.client = client
        self.zxid = 0

    def deserialize(self, buffer: bytes, offset: int) -> list[multiread.RawRead]:
        self.zxid = self.client.last_zxid
        return super().deserialize(buffer, offset)


def chunks(watches: Sequence[tuple[str, Any]]) -> list[Sequence[tuple[str, Any]]]:
    """Split into requests of at most ``MAX_REQUEST_BYTES`` of paths."""
    out: list[Sequence[tuple[str, Any]]] = []
    start = size = 0
    for index, (path, _) in enumerate(watches):
        path_bytes = len(path) + 4
        if index > start and size + path_bytes > MAX_REQUEST_BYTES:
            out.append(watches[start:index])
            start, size = index, 0
        size += path_bytes
    if start < len(watches):
        out.append(watches[start:])
    return out


def submit(client: Any, request: SetWatchesRequest | ZxidMultiRead) -> Any:
    """Queue ``request``; returns kazoo's ``IAsyncResult``."""
    async_result = client.handler.async_result()
    client._call(request, async_result)  # private: see the module docstring
    return async_result
