"""A broker's ZooKeeper registration: the ephemeral ``/brokers/ids/N`` and its epoch.

Done the way Kafka's ``KafkaZkClient.registerBroker`` does it (reference §1.4, §1.6):

* The persistent top-level paths (Kafka's ``PersistentZkPaths``) are created if missing.
* The znode is created by one multi, ``create(ephemeral, no data)`` then ``setData(version
  0)``, so its stat.version is 1, exactly as Kafka leaves it. The **broker epoch is the
  znode's czxid**.
* NODEEXISTS is checked, not trusted (Kafka's ``CheckedEphemeral``): a node owned by *this*
  session with our very bytes is ours (a create whose reply was lost and that was resent,
  ZOOKEEPER-2985); other bytes of this session are a registration of another broker object
  sharing the session (live: the id is taken) or left by a stop without deregistering
  (deleted and re-created, a new epoch: the restarted broker has lost its state); a node
  owned by a session this registrar held before (e.g. the deletion of an expired session's
  ephemerals not yet visible on the server we reconnected to) is deleted and re-created; any
  other owner means the broker id is taken: ``BrokerIdInUseError`` (also for a persistent
  node, owner 0, which never expires: the error says to delete it by hand).
* After a session expiry (``LOST`` followed by ``CONNECTED`` on a new session) the broker
  registers again, which gives it a new epoch. That runs on a worker thread because session
  listeners must not block, and it retries until it succeeds or the registrar stops.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
import weakref
from collections.abc import Callable

import structlog

from controller.zk import paths
from controller.zk.codecs import BrokerRegistration, encode_broker_registration
from controller.zk.errors import NodeExistsError, NoNodeError, ZkError
from controller.zk.port import Create, SessionState, SetData, ZkPort, ZnodeStat

log = structlog.get_logger("controller.broker.registration")

RETRY_BACKOFF_S = 1.0

# Registrars holding their node, by (ZooKeeper client, path): brokers in one process may
# share a session, where the node's owner alone cannot tell them apart.
_holders: weakref.WeakValueDictionary[tuple[int, str], BrokerRegistrar] = (
    weakref.WeakValueDictionary()
)
_holders_lock = threading.Lock()


class BrokerIdInUseError(Exception):
    """``/brokers/ids/N`` exists and belongs to another live session (another broker), or is
    a persistent node (``owner`` 0), which no session expiry will ever remove."""

    def __init__(self, broker_id: int, owner: int) -> None:
        self.broker_id = broker_id
        self.owner = owner
        path = paths.broker_path(broker_id)
        if owner == 0:
            message = (
                f"broker id {broker_id} cannot register: {path} (under the ZooKeeper chroot) "
                "is a persistent (non-ephemeral) znode, which no session expiry removes; "
                "delete it by hand"
            )
        else:
            message = (
                f"broker id {broker_id} is already registered in ZooKeeper by session "
                f"{owner:#x}; another broker with this id is running (or its session has not "
                "expired yet)"
            )
        super().__init__(message)


class BrokerRegistrar:
    """Registers one broker and keeps it registered across session expiries.

    ``on_registered(epoch)`` is called after every successful registration, with the new
    broker epoch (czxid).
    """

    def __init__(
        self,
        zk: ZkPort,
        registration: BrokerRegistration,
        on_registered: Callable[[int], None] | None = None,
        *,
        retry_backoff_s: float = RETRY_BACKOFF_S,
        previous_sessions: set[int] | None = None,
    ) -> None:
        self._zk = zk
        self._registration = registration
        self._on_registered = on_registered
        self._backoff = retry_backoff_s
        self.path = paths.broker_path(registration.broker_id)
        # Sessions this broker has registered under; a leftover node of one of them is ours.
        self._sessions: set[int] = set(previous_sessions or ())
        self._epoch: int | None = None
        self._lock = threading.Lock()  # serialises registrations
        self._lost = False
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._worker: threading.Thread | None = None

    @property
    def broker_id(self) -> int:
        return self._registration.broker_id

    @property
    def epoch(self) -> int | None:
        """The current broker epoch, None before the first registration."""
        return self._epoch

    @property
    def sessions(self) -> frozenset[int]:
        return frozenset(self._sessions)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> int:
        """Register now (raising on failure) and keep re-registering after session expiry."""
        self._stopping.clear()
        self._zk.add_session_listener(self._on_session_state)
        try:
            epoch = self.register()
        except BaseException:
            self._zk.remove_session_listener(self._on_session_state)
            raise
        self._worker = threading.Thread(
            target=self._reregister_loop,
            name=f"broker-{self.broker_id}-registration",
            daemon=True,
        )
        self._worker.start()
        return epoch

    def stop(self, deregister: bool = True) -> None:
        """Stop re-registering; with ``deregister``, delete our znode if we still own it."""
        self._stopping.set()
        self._wake.set()
        self._zk.remove_session_listener(self._on_session_state)
        if self._worker is not None and self._worker is not threading.current_thread():
            self._worker.join()
        self._worker = None
        with _holders_lock:
            if _holders.get(self._holder_key) is self:
                del _holders[self._holder_key]
        if deregister:
            with contextlib.suppress(ZkError):  # ZooKeeper unreachable: the session will expire
                self._delete_if_ours()

    @property
    def _holder_key(self) -> tuple[int, str]:
        return (id(self._zk), self.path)

    # -- registration ------------------------------------------------------------------------

    def register(self) -> int:
        """Create ``/brokers/ids/N`` (Kafka-style) and return the broker epoch (its czxid)."""
        with self._lock:
            for path in paths.PERSISTENT_PATHS:
                self._zk.ensure_path(path)
            registration = dataclasses.replace(
                self._registration, timestamp_ms=int(time.time() * 1000)
            )
            data = encode_broker_registration(registration)
            epoch = self._checked_ephemeral_create(data)
            session = self._zk.session_id
            if session is not None:
                self._sessions.add(session)
            self._epoch = epoch
            with _holders_lock:
                _holders[self._holder_key] = self
        log.info(
            "registered broker",
            broker_id=self.broker_id,
            path=self.path,
            broker_epoch=epoch,
            endpoints=[e.connection_string() for e in registration.endpoints],
            session_id=hex(session) if session else None,
        )
        if self._on_registered is not None:
            self._on_registered(epoch)
        return epoch

    def _checked_ephemeral_create(self, data: bytes) -> int:
        while True:
            results = self._zk.multi(
                [Create(self.path, None, ephemeral=True), SetData(self.path, data, 0)]
            )
            if all(r.ok for r in results):
                stat = results[1].stat
                if stat is not None:
                    return stat.czxid
                return self._zk.get(self.path)[1].czxid
            error = next(r.error for r in results if r.error and r.error.code != "ROLLEDBACK")
            if not isinstance(error, NodeExistsError):
                raise error
            epoch = self._after_node_exists(data)
            if epoch is not None:
                return epoch
            # The node was gone, or a leftover of ours was deleted: create again.

    def _after_node_exists(self, data: bytes) -> int | None:
        """The epoch if the existing node is this very create's; None to retry the create."""
        try:
            stored, stat = self._zk.get(self.path)
        except NoNodeError:
            log.info("broker znode went away while checking it; creating again", path=self.path)
            return None
        owner = stat.ephemeral_owner
        if owner != 0 and owner == self._zk.session_id:
            if stored == data:
                # Our own create, resent after a lost reply: the multi applied, data and all
                # (the bytes hold this registration's timestamp: no other create wrote them).
                return stat.czxid
            with _holders_lock:
                holder = _holders.get(self._holder_key)
            if holder is not None and holder is not self and holder.epoch == stat.czxid:
                raise BrokerIdInUseError(self.broker_id, owner)  # a live broker, our session
            self._delete_leftover(
                stat,
                "deleting a registration this session left (a broker stopped without "
                "deregistering); registering again with a new epoch",
            )
            return None
        if owner != 0 and owner in self._sessions:
            self._delete_leftover(
                stat, "deleting our registration left over from a previous session"
            )
            return None
        raise BrokerIdInUseError(self.broker_id, owner)

    def _delete_leftover(self, stat: ZnodeStat, why: str) -> None:
        log.warning(why, path=self.path, owner=hex(stat.ephemeral_owner))
        with contextlib.suppress(NoNodeError):
            self._zk.delete(self.path, stat.version)

    def _delete_if_ours(self) -> None:
        stat = self._zk.exists(self.path)
        session = self._zk.session_id
        # The czxid too: another broker object sharing our session may hold the id.
        if (
            stat is not None
            and session is not None
            and stat.ephemeral_owner == session
            and stat.czxid == self._epoch
        ):
            with contextlib.suppress(NoNodeError):
                self._zk.delete(self.path, stat.version)
            log.info("deregistered broker", broker_id=self.broker_id, path=self.path)

    # -- session expiry ------------------------------------------------------------------------

    def _on_session_state(self, state: SessionState) -> None:
        # On the ZooKeeper client's thread: only flag and wake the worker.
        if state is SessionState.LOST:
            self._lost = True
            log.warning("ZooKeeper session lost; broker registration is gone", path=self.path)
        elif state is SessionState.CONNECTED and self._lost:
            self._lost = False
            self._wake.set()

    def _reregister_loop(self) -> None:
        structlog.contextvars.bind_contextvars(broker_id=self.broker_id)
        while not self._stopping.is_set():
            self._wake.wait()
            self._wake.clear()
            while not self._stopping.is_set():
                try:
                    self.register()
                    break
                except Exception as exc:  # keep trying: an unregistered broker gets no requests
                    log.error(
                        "re-registration after session expiry failed; retrying",
                        path=self.path,
                        error=str(exc),
                    )
                    self._stopping.wait(self._backoff)
