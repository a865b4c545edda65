"""``KazooPort``: the ``ZkPort`` on a real ZooKeeper, through kazoo (pinned 2.11.0).

Retries, the way Kafka's ``retryRequestsUntilConnected`` does them:

- The connection is retried forever (``KazooRetry(max_tries=-1, delay=0.1, max_delay=1)``):
  never kazoo's implicit default, which backs off for up to an hour.
- A call is resent on ``ConnectionLoss`` until ``command_deadline`` seconds pass without a
  reply (default: the session timeout); then it raises ``ConnectionLossError``. The
  controller's own port sets ``retry_until_expired``: like Kafka's client it then resends for
  as long as the session lives, because an ensemble without quorum expires no session (its
  next leader resets every timeout): giving up would abandon an event half done on a session
  that comes back, with no ``Expire`` to repair it. Such a call still ends when the session is
  lost or the port is stopped. Session expiry is never retried (``ignore_expire=False``).
- A call never spans two sessions: if the session was lost since the call began, it raises
  ``SessionExpiredError`` rather than resend on the new session (whose watches and ephemerals
  differ; the controller must resign and re-initialise first).

Callbacks: kazoo runs watch callbacks on one thread and session listeners on its connection
thread. Both must only enqueue (kazoo: "This function must not block"). Watches survive a
connection loss within the session, as with ZooKeeper's Java client (``kazoo_watches``); a lost
session gives each a NONE event.

Pipelining (``multi_many``, ``get_many``, recursive ``delete``) keeps at most ``max_in_flight``
requests outstanding, so kazoo's pings are not starved and ZooKeeper's
``globalOutstandingLimit`` (1,000) is never reached.

kazoo internals: only ``multiread`` reaches past kazoo's public API (``KazooClient._call``, for
ZooKeeper's multi-read, which kazoo lacks); see its docstring for the version assumption.

Metrics: an optional ``observer`` (``ZkObserver``) is told each public call's latency and, for
batched calls, its size (paths read, ops written). A call counts once however many requests it
pipelines; the calls a recursive delete makes are counted too.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import structlog
from kazoo import exceptions as kex
from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState, KeeperState
from kazoo.retry import KazooRetry, RetryFailedError

from controller.zk import errors, multiread
from controller.zk.kazoo_support import (
    ZkObserver,
    observed,
    to_stat,
    translate,
    unresolvable_hosts,
    zxid_of,
)
from controller.zk.kazoo_watches import WatchKeeper
from controller.zk.kazoo_writes import KazooWrites
from controller.zk.port import (
    CHILD_WATCH,
    DATA_WATCH,
    ReadResult,
    SessionListener,
    SessionState,
    WatchCallback,
    WatchEvent,
    ZnodeStat,
    reconnect_event,
)
from controller.zk.watched_reads import WatchedReads

log = structlog.get_logger("zkctl.zk.kazoo")
_AUTH_REJECTED = (
    "ZooKeeper rejected this client's authentication (check zookeeper.auth.* against the "
    "server's configuration)"
)
T = TypeVar("T")

_STATES = {
    KazooState.CONNECTED: SessionState.CONNECTED,
    KazooState.SUSPENDED: SessionState.SUSPENDED,
    KazooState.LOST: SessionState.LOST,
}


class _Progress:
    """A deadline that moves forward whenever ZooKeeper answers (for long pipelines)."""

    def __init__(self, window: float) -> None:
        self.window = window
        self.end = time.monotonic() + window

    def advance(self) -> None:
        self.end = time.monotonic() + self.window

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def wait(self) -> float | None:
        """A timeout for one wait on a reply (None: no limit)."""
        return None if math.isinf(self.window) else max(self.remaining(), 0.001)


class KazooPort(WatchedReads, KazooWrites):
    """``ZkPort`` over one kazoo client, i.e. one ZooKeeper session at a time.

    ``connect`` is a ZooKeeper connect string, optionally with a chroot
    (``"h1:2181,h2:2181/kafka"``); every path given to or returned by the port is relative to
    it. ``session_timeout`` is in seconds (Kafka's default is 18). ``auth_data`` and
    ``default_acl`` are handed to kazoo unchanged.

    Security (``controller.security.acls``): ``sasl_options`` authenticate the session with
    SASL (kazoo's, e.g. DIGEST-MD5); ``acl_provider(path)`` gives the ACL of every znode this
    port creates (``create``, ``ensure_path`` level by level, ``Create`` in multis), as
    Kafka's ``defaultAcls(path)`` does. Without it, creates use kazoo's default (open) ACL.
    """

    def __init__(
        self,
        connect: str,
        session_timeout: float = 18.0,
        *,
        command_deadline: float | None = None,
        retry_until_expired: bool = False,
        max_in_flight: int = 64,
        multiread_batch: int = 1000,
        multiread_in_flight: int = 4,
        use_multiread: bool = True,
        auth_data: Sequence[tuple[str, str]] | None = None,
        default_acl: Sequence[Any] | None = None,
        observer: ZkObserver | None = None,
        sasl_options: Mapping[str, Any] | None = None,
        acl_provider: Callable[[str], Sequence[Any]] | None = None,
    ) -> None:
        if max_in_flight < 1 or multiread_batch < 1 or multiread_in_flight < 1:
            raise ValueError("pipelining limits must be positive")
        self.connect = connect
        self.observer = observer  # settable later: the daemon creates its metrics separately
        # Bounded waits (start's authentication check, re-arming watches) keep a deadline.
        self._bounded_deadline = (
            command_deadline if command_deadline is not None else session_timeout
        )
        self._deadline = math.inf if retry_until_expired else self._bounded_deadline
        self._session_id: int | None = None  # kept while SUSPENDED: the session lives on
        self._max_in_flight = max_in_flight
        self._multiread_batch = multiread_batch
        self._multiread_in_flight = multiread_in_flight
        self._listeners: list[SessionListener] = []
        self._stopped_while_starting = False  # stop() from another thread ends start()'s wait
        # kazoo replaces AUTH_FAILED with CLOSED within microseconds: remembered when seen.
        self._auth_rejected = False
        self._listeners_lock = threading.Lock()
        self._generation = 0  # +1 on every LOST: a call must not span two sessions
        self._client = KazooClient(
            hosts=connect,
            timeout=session_timeout,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
            command_retry=KazooRetry(
                max_tries=-1,
                delay=0.1,
                max_delay=1.0,
                deadline=None,  # each call's own progress deadline decides (``_Progress``)
                ignore_expire=False,
            ),
            auth_data=list(auth_data) if auth_data else None,
            default_acl=list(default_acl) if default_acl else None,
            sasl_options=dict(sasl_options) if sasl_options else None,
            logger=logging.getLogger("kazoo.client"),
        )
        self._acl_provider = acl_provider
        self._authenticates = bool(auth_data or sasl_options)
        self._chroot: str = self._client.chroot or ""
        self._multiread = use_multiread and multiread.supports_custom_requests(self._client)
        if use_multiread and not self._multiread:
            log.warning("kazoo has no _call hook; get_many falls back to pipelined gets")
        elif use_multiread and multiread.kazoo_version() != multiread.KAZOO_VERSION_ASSUMED:
            log.warning(
                "multi-read was written against another kazoo version",
                assumed=multiread.KAZOO_VERSION_ASSUMED,
                installed=multiread.kazoo_version(),
            )
        self._keeper = WatchKeeper(self._client.handler)
        self._last_state = SessionState.LOST
        self._client.add_listener(self._on_state)

    # ------------------------------------------------------------ session lifecycle

    def start(self, timeout: float = 15.0) -> None:
        """Connect and open a session; raises ``ConnectionLossError`` after ``timeout`` s, or
        ``NoAuthError`` when the server rejects the client's authentication.

        Not ``KazooClient.start``: a SASL failure can land between the session coming up and
        that method's ``connected`` check, which it then reports as a time-out (and its
        clean-up erases the AUTH_FAILED state that would tell the two apart).
        """
        self._stopped_while_starting = False
        self._auth_rejected = False
        live = self._client.start_async()
        deadline = time.monotonic() + timeout
        while not live.wait(min(0.1, max(0.0, deadline - time.monotonic()))):
            if self._stopped_while_starting:
                raise errors.ConnectionLossError(
                    f"the session with {self.connect} was closed while connecting"
                )
            if self._auth_failed() or time.monotonic() >= deadline:
                break
        if self._auth_failed():
            self.stop()
            raise errors.NoAuthError(_AUTH_REJECTED)
        if not self._client.connected:
            self.stop()
            unresolved = unresolvable_hosts(self.connect)
            why = f" (cannot resolve {', '.join(unresolved)})" if unresolved else ""
            raise errors.ConnectionLossError(
                f"no ZooKeeper session with {self.connect} within {timeout}s{why}"
            )
        if self._authenticates:
            self._check_authentication()

    def _auth_failed(self) -> bool:
        return self._auth_rejected or self._client.client_state == KeeperState.AUTH_FAILED

    def _check_authentication(self) -> None:
        """kazoo reports CONNECTED before SASL completes, and a failed SASL login closes the
        client for good: one round trip (queued behind the authentication) tells at start."""
        try:
            self._call(lambda: self._client.exists_async("/"), "/", self._bounded_deadline)
        except errors.NoAuthError as exc:
            self.stop()
            raise errors.NoAuthError(_AUTH_REJECTED) from exc
        except errors.ConnectionLossError as exc:
            self.stop()  # e.g. SASL against a server that does not offer it: no answer at all
            raise errors.ConnectionLossError(
                "no answer from ZooKeeper while authenticating (does the server offer the "
                "configured zookeeper.auth.scheme?)"
            ) from exc

    def stop(self) -> None:
        """Close the session (ephemerals go at once, listeners get LOST) and free the socket."""
        self._stopped_while_starting = True
        self._keeper.discard()  # our own close: no NONE events (they would outlive the stop)
        self._client.stop()
        self._client.close()

    def restart(self, timeout: float = 15.0) -> None:
        """Close the session and open a new one."""
        self.stop()
        self.start(timeout)

    @property
    def session_id(self) -> int | None:
        """The session's id, also while the connection is suspended (the session lives on
        in the ensemble; kazoo's ``client_id`` is None then); None once it is lost."""
        client_id = self._client.client_id
        if client_id:
            return client_id[0]
        return self._session_id if self._last_state is SessionState.SUSPENDED else None

    @property
    def client_id(self) -> tuple[int, bytes] | None:
        """``(session id, password)`` while connected: another client can take the session over
        with it (the way tests force a real server-side expiry)."""
        client_id = self._client.client_id
        return (client_id[0], client_id[1]) if client_id else None

    @property
    def state(self) -> SessionState:
        return _STATES[self._client.state]

    @property
    def chroot(self) -> str:
        return self._chroot

    @property
    def max_in_flight(self) -> int:
        """Requests pipelined at most by one call (Kafka's zookeeper.max.in.flight.requests)."""
        return self._max_in_flight

    def add_session_listener(self, listener: SessionListener) -> None:
        with self._listeners_lock:
            if listener not in self._listeners:
                self._listeners.append(listener)

    def remove_session_listener(self, listener: SessionListener) -> None:
        with self._listeners_lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def _on_state(self, state: str) -> None:
        # On kazoo's connection thread: must not block.
        ours = _STATES[state]
        previous, self._last_state = self._last_state, ours
        if ours is SessionState.CONNECTED:
            client_id = self._client.client_id
            self._session_id = client_id[0] if client_id else None
        if ours is SessionState.SUSPENDED:
            self._keeper.connection_lost()
        elif ours is SessionState.LOST:
            # Read here, in kazoo's AUTH_FAILED callback: its connection loop closes the
            # client right after, and a poll of the state would find CLOSED.
            if self._client.client_state == KeeperState.AUTH_FAILED:
                self._auth_rejected = True
            self._session_id = None
            self._generation += 1
            self._keeper.session_lost()
        elif previous is SessionState.SUSPENDED:  # back on the same session: restore watches
            threading.Thread(target=self._rearm, name="zk-rearm-watches", daemon=True).start()
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(ours)
            except Exception:
                log.exception("session listener failed", state=ours.value)

    # -------------------------------------------------------------------- calls

    @contextmanager
    def _translated(self, path: str | None = None) -> Iterator[None]:
        try:
            yield
        except (kex.KazooException, RetryFailedError) as exc:
            raise translate(exc, path) from exc

    def _call(
        self, submit: Callable[[], Any], path: str | None = None, deadline: float | None = None
    ) -> Any:
        """Run one request, resending it on connection loss until the deadline."""
        generation = self._generation
        progress = _Progress(self._deadline if deadline is None else deadline)

        def attempt() -> Any:
            self._same_session(generation)
            if progress.remaining() <= 0:
                raise RetryFailedError("no reply from ZooKeeper within the deadline")
            try:
                return submit().get(timeout=progress.wait())
            except self._client.handler.timeout_exception:
                # Still queued or unanswered: the outcome is unknown, as after a lost reply.
                raise RetryFailedError("no reply from ZooKeeper within the deadline") from None

        with self._translated(path):
            return self._client.retry(attempt)

    def _same_session(self, generation: int) -> None:
        if generation != self._generation:
            raise kex.SessionExpiredError("session lost during the call")

    def _pipeline(
        self,
        items: Sequence[T],
        submit: Callable[[T], Any],
        window: int,
        item_errors: tuple[type[Exception], ...] = (),
        deadline: float | None = None,
    ) -> list[Any]:
        """``submit(item)`` for every item with at most ``window`` outstanding.

        Returns each item's value in order (an ``item_errors`` exception counts as a value).
        Items that lost their connection are resent until the deadline passes without a reply;
        any other failure is raised (as kazoo's exception) at once.
        """
        generation = self._generation
        progress = _Progress(self._deadline if deadline is None else deadline)
        out: list[Any] = [None] * len(items)
        todo = list(range(len(items)))
        delay = 0.1
        while True:
            lost: list[int] = []
            inflight: deque[tuple[int, Any]] = deque()
            for index in todo:
                if len(inflight) >= window:
                    self._settle(inflight.popleft(), out, lost, progress, item_errors)
                self._same_session(generation)
                inflight.append((index, submit(items[index])))
            while inflight:
                self._settle(inflight.popleft(), out, lost, progress, item_errors)
            if not lost:
                return out
            if progress.remaining() <= delay:
                raise RetryFailedError("no reply from ZooKeeper within the deadline")
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
            todo = lost

    def _settle(
        self,
        entry: tuple[int, Any],
        out: list[Any],
        lost: list[int],
        progress: _Progress,
        item_errors: tuple[type[Exception], ...],
    ) -> None:
        index, pending = entry
        try:
            out[index] = pending.get(timeout=progress.wait())
            progress.advance()
        except item_errors as exc:
            out[index] = exc
            progress.advance()
        except (kex.ConnectionLoss, kex.OperationTimeoutError):
            lost.append(index)
        except self._client.handler.timeout_exception:
            raise RetryFailedError("no reply from ZooKeeper within the deadline") from None

    def _watched_read(
        self,
        kind: str,
        path: str,
        watch: WatchCallback | None,
        read: Callable[[Any], Any],
        zxid_of: Callable[[Any], int | None],
    ) -> Any:
        """``read(watcher)``, noting the watch it arms (with the zxid read) in the keeper."""
        if watch is None:
            return self._call(lambda: read(None), path)
        watcher = self._keeper.watcher(kind, path, watch)
        generation = self._generation
        while True:
            epoch = self._keeper.epoch
            result = self._call(lambda: read(watcher), path)
            if self._keeper.record((kind, path, watch), zxid_of(result), epoch):
                return result
            if generation != self._generation:
                raise errors.SessionExpiredError("session lost during the call", path=path)
            # The connection dropped while we read: the watch may be gone, so read again.

    def _rearm(self) -> None:
        """Set every watch again after a reconnect; fire those whose node changed meanwhile."""
        epoch, entries = self._keeper.snapshot()
        if not entries:
            return

        def submit(entry: tuple[tuple[str, str, WatchCallback], int | None]) -> Any:
            (kind, path, callback), _ = entry
            watcher = self._keeper.watcher(kind, path, callback)
            if kind == DATA_WATCH:
                return self._client.exists_async(path, watch=watcher)
            return self._client.get_children_async(path, watch=watcher, include_data=True)

        try:
            results = self._pipeline(
                entries,
                submit,
                self._max_in_flight,
                # A node whose ACL no longer lets us read it fails alone, not the others.
                item_errors=(kex.NoNodeError, kex.NoAuthError),
                deadline=self._bounded_deadline,  # a later reconnect starts another re-arm
            )
        except Exception as exc:  # dropped again (the next reconnect retries) or session lost
            log.warning("could not re-arm watches after reconnect", error=repr(exc))
            return
        fired = 0
        refused: list[str] = []
        for (key, seen), result in zip(entries, results, strict=True):
            kind, path, callback = key
            if isinstance(result, kex.NoAuthError):
                refused.append(path)  # unarmed; tried again at the next reconnect
                continue
            now = None if isinstance(result, Exception) else zxid_of(kind, result)
            if not self._keeper.record(key, now, epoch):
                return  # dropped again meanwhile: the next reconnect re-arms them all
            event = reconnect_event(kind, seen, now)
            if event is not None:
                fired += 1
                self._keeper.dispatch(callback, WatchEvent(event, path))
        if refused:
            log.error(
                "could not re-arm watches after reconnect: their znodes' ACL denies this "
                "session; changes there go unseen until it is fixed (each reconnect retries)",
                paths=refused[:20],
                count=len(refused),
            )
        log.info(
            "watches re-armed after reconnect",
            watches=len(entries) - len(refused),
            fired=fired,
        )

    # -------------------------------------------------------------------- reads

    @observed("get")
    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, ZnodeStat]:
        data, stat = self._watched_read(
            DATA_WATCH,
            path,
            watch,
            lambda w: self._client.get_async(path, watch=w),
            lambda result: result[1].mzxid,
        )
        return data or b"", to_stat(stat)

    @observed("exists")
    def exists(self, path: str, watch: WatchCallback | None = None) -> ZnodeStat | None:
        stat = self._watched_read(
            DATA_WATCH,
            path,
            watch,
            lambda w: self._client.exists_async(path, watch=w),
            lambda result: zxid_of(DATA_WATCH, result),
        )
        return None if stat is None else to_stat(stat)

    @observed("get_children")
    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        # With the stat (GetChildren2): its pzxid tells whether the children changed.
        children, _ = self._watched_read(
            CHILD_WATCH,
            path,
            watch,
            lambda w: self._client.get_children_async(path, watch=w, include_data=True),
            lambda result: zxid_of(CHILD_WATCH, result),
        )
        return list(children)

    @observed("get_many", lambda paths: len(paths))
    def get_many(self, paths: Sequence[str]) -> list[ReadResult]:
        """Batched reads: multi-read (ZooKeeper >= 3.6) in chunks, else pipelined gets."""
        with self._translated():
            raw = self._read_batch(paths, multiread.GET_DATA)
        return [
            ReadResult(p, error=translate(r, p))
            if isinstance(r, Exception)
            else ReadResult(p, r[0] or b"", to_stat(r[1]))
            for p, r in zip(paths, raw, strict=True)
        ]

    def _read_batch(self, paths: Sequence[str], op: int) -> list[Any]:
        """getData (``(data, stat)``) or getChildren (``list[str]``) of every path, in order;
        a per-path failure is a kazoo exception instance. Raises kazoo's exceptions."""
        if not paths:
            return []
        if self._multiread:
            try:
                return self._multiread_batch_of(paths, op)
            except kex.UnimplementedError:
                # ZooKeeper < 3.6. The server also dropped our connection (kazoo reconnects
                # the same session and fires NONE at our watches).
                self._multiread = False
                log.warning("server lacks multi-read (ZooKeeper < 3.6); using pipelined reads")
        read = (
            self._client.get_async if op == multiread.GET_DATA else self._client.get_children_async
        )
        return self._pipeline(
            paths, read, self._max_in_flight, item_errors=(kex.NoNodeError, kex.NoAuthError)
        )

    def _multiread_batch_of(self, paths: Sequence[str], op: int) -> list[Any]:
        chroot = self._chroot
        chunks = [
            paths[start:end]
            for start, end in multiread.chunk_bounds(paths, self._multiread_batch, chroot=chroot)
        ]

        def submit(chunk: Sequence[str]) -> Any:
            server_paths = [chroot + p if p != "/" else chroot or "/" for p in chunk]
            return multiread.submit(self._client, server_paths, op)

        replies = self._pipeline(chunks, submit, self._multiread_in_flight)
        return [
            kex.EXCEPTIONS[entry]() if isinstance(entry, int) else entry
            for reply in replies
            for entry in reply
        ]

    def __repr__(self) -> str:
        sid = self.session_id
        return f"KazooPort({self.connect!r}, session_id={hex(sid) if sid else None})"
