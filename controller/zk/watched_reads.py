"""``KazooPort.get_many_watched``: batched reads that arm a data watch per node.

A mixin of ``KazooPort`` (kept apart to keep that module readable): multi-reads cannot arm
watches, so the data watches follow in ZooKeeper ``SetWatches`` requests
(``controller.zk.setwatches``), each relative to the zxid its multi-read was served at; without
multi-read (ZooKeeper < 3.6) the reads are pipelined watched gets. Arming 100K topic watches
this way takes ~25 requests instead of 100K ``exists`` calls (~9 s of kazoo).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import structlog
from kazoo import exceptions as kex

from controller.zk import errors, multiread, setwatches
from controller.zk.kazoo_support import observed, to_stat, translate
from controller.zk.kazoo_watches import WatchKeeper
from controller.zk.port import DATA_WATCH, ReadResult, WatchCallback, ZnodeStat

log = structlog.get_logger("zkctl.zk.kazoo")


class WatchedReads:
    """What it needs from ``KazooPort`` is declared here; ``KazooPort`` provides it."""

    _generation: int
    _keeper: WatchKeeper
    _client: Any
    _chroot: str
    _multiread: bool
    _multiread_batch: int
    _multiread_in_flight: int
    _max_in_flight: int
    _translated: Callable[..., AbstractContextManager[None]]
    _pipeline: Callable[..., list[Any]]
    exists: Callable[..., ZnodeStat | None]
    get: Callable[..., tuple[bytes, ZnodeStat]]

    @observed("get_many", lambda paths, watch: len(paths))
    def get_many_watched(self, paths: Sequence[str], watch: WatchCallback) -> list[ReadResult]:
        """``get_many`` arming ``watch`` on every path, as ``get``/``exists`` would one by one:
        a data watch on each node read, a creation watch on each missing one.

        Multi-reads cannot arm watches, so the data watches follow in ``SetWatches`` requests
        (``controller.zk.setwatches``), each relative to the zxid its nodes were read at: a
        change made after a node was read is always reported, and only such a change.
        """
        if not paths:
            return []
        generation = self._generation
        while True:
            epoch = self._keeper.epoch
            with self._translated():
                raw = self._read_and_watch(paths, watch)
            # r[1] is a raw multi-read stat or kazoo's ZnodeStat: both have mzxid at [1].
            recorded = [
                self._keeper.record((DATA_WATCH, p, watch), r[1][1], epoch)
                for p, r in zip(paths, raw, strict=True)
                if not isinstance(r, Exception)
            ]
            if all(recorded):
                break
            if generation != self._generation:
                raise errors.SessionExpiredError("session lost during the call")
            # The connection dropped meanwhile: the watches may be gone, so read again.
        out: list[ReadResult] = []
        for path, r in zip(paths, raw, strict=True):
            if not isinstance(r, Exception):
                out.append(ReadResult(path, r[0] or b"", to_stat(r[1])))
            elif not isinstance(r, kex.NoNodeError):
                out.append(ReadResult(path, error=translate(r, path)))
            else:
                out.append(self._read_or_watch_creation(path, watch))
        return out

    def _read_and_watch(self, paths: Sequence[str], watch: WatchCallback) -> list[Any]:
        """getData of every path (raw, as ``_read_batch``) with a data watch on each node read:
        multi-reads then ``SetWatches`` at each multi-read's zxid; without multi-read (ZooKeeper
        < 3.6), pipelined watched gets."""
        if self._multiread:
            bounds = multiread.chunk_bounds(paths, self._multiread_batch, chroot=self._chroot)
            sent: dict[int, setwatches.ZxidMultiRead] = {}

            def submit(index: int) -> Any:
                start, end = bounds[index]
                sent[index] = request = setwatches.ZxidMultiRead(
                    self._client, [self._chroot + p for p in paths[start:end]]
                )
                return setwatches.submit(self._client, request)

            try:
                replies = self._pipeline(range(len(bounds)), submit, self._multiread_in_flight)
            except kex.UnimplementedError:
                self._multiread = False
                log.warning("server lacks multi-read (ZooKeeper < 3.6); using pipelined reads")
            else:
                raw = [
                    kex.EXCEPTIONS[entry]() if isinstance(entry, int) else entry
                    for reply in replies
                    for entry in reply
                ]
                requests = []
                for index, (start, end) in enumerate(bounds):
                    watchers = [
                        (self._chroot + p, self._keeper.watcher(DATA_WATCH, p, watch))
                        for p, r in zip(paths[start:end], raw[start:end], strict=True)
                        if not isinstance(r, Exception)
                    ]
                    requests += [
                        setwatches.SetWatchesRequest(self._client, sent[index].zxid, chunk)
                        for chunk in setwatches.chunks(watchers)
                    ]
                self._pipeline(
                    requests,
                    lambda request: setwatches.submit(self._client, request),
                    self._multiread_in_flight,
                )
                return raw
        return self._pipeline(
            paths,
            lambda p: self._client.get_async(
                p, watch=self._keeper.watcher(DATA_WATCH, p, watch)
            ),
            self._max_in_flight,
            item_errors=(kex.NoNodeError, kex.NoAuthError),
        )

    def _read_or_watch_creation(self, path: str, watch: WatchCallback) -> ReadResult:
        """A node missing from a watched batch read: arm a creation watch, and read the node
        with a data watch if it was created meanwhile (rare)."""
        while True:
            try:
                if self.exists(path, watch) is None:
                    return ReadResult(path, error=errors.NoNodeError(path=path))
                data, stat = self.get(path, watch)
                return ReadResult(path, data, stat)
            except errors.NoNodeError:
                continue  # deleted again between the two calls
