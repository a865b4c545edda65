"""kazoo's values as the port's: exceptions, stats, multi results; and KazooPort's metrics hook."""

from __future__ import annotations

import functools
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from kazoo import exceptions as kex
from kazoo.protocol.states import ZnodeStat as KazooStat
from kazoo.retry import RetryFailedError

from controller.config.addresses import parse_zookeeper_connect
from controller.zk import errors
from controller.zk.port import CHILD_WATCH, Op, OpResult, ZnodeStat

# kazoo's exceptions as ours. Order matters: ConnectionClosedError (our own stop) subclasses
# kazoo's SessionExpiredError.
_ERRORS: tuple[tuple[type[Exception], type[errors.ZkError]], ...] = (
    (kex.NoNodeError, errors.NoNodeError),
    (kex.NodeExistsError, errors.NodeExistsError),
    (kex.BadVersionError, errors.BadVersionError),
    (kex.NotEmptyError, errors.NotEmptyError),
    (kex.NoChildrenForEphemeralsError, errors.NoChildrenForEphemeralsError),
    (kex.RolledBackError, errors.RolledBackError),
    (kex.RuntimeInconsistency, errors.RolledBackError),  # ops after the failing one of a multi
    (kex.ConnectionLoss, errors.ConnectionLossError),
    (RetryFailedError, errors.ConnectionLossError),  # gave up resending at the deadline
    (kex.SessionExpiredError, errors.SessionExpiredError),
    (kex.OperationTimeoutError, errors.OperationTimeoutError),
    (kex.NoAuthError, errors.NoAuthError),
    (kex.AuthFailedError, errors.NoAuthError),
)


class ZkObserver(Protocol):
    """Metrics hook of ``KazooPort`` (implemented by ``controller.metrics.ControllerMetrics``)."""

    def zookeeper_request(self, operation: str, seconds: float) -> None: ...

    def zookeeper_batch(self, operation: str, size: int) -> None: ...


F = TypeVar("F", bound=Callable[..., Any])


def observed(operation: str, size: Callable[..., int] | None = None) -> Callable[[F], F]:
    """Time a public call for ``self.observer``; ``size`` gets the call's arguments."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            observer = self.observer
            if observer is None:
                return fn(self, *args, **kwargs)
            if size is not None:
                observer.zookeeper_batch(operation, size(*args, **kwargs))
            start = time.monotonic()
            try:
                return fn(self, *args, **kwargs)
            finally:
                observer.zookeeper_request(operation, time.monotonic() - start)

        return wrapper  # type: ignore[return-value]

    return decorate


def translate(exc: BaseException, path: str | None = None) -> errors.ZkError:
    """kazoo's exception as ours (a generic ``ZkError`` naming the kazoo type if unknown)."""
    if isinstance(exc, errors.ZkError):
        return exc
    for kazoo_type, ours in _ERRORS:
        if isinstance(exc, kazoo_type):
            return ours(str(exc), path=path) if str(exc) else ours(path=path)
    return errors.ZkError(f"{type(exc).__name__}: {exc}", path=path)


def zxid_of(kind: str, result: Any) -> int | None:
    """What a watch was armed at: a data watch's mzxid (from a stat, None: missing node), a child
    watch's pzxid (from a ``(children, stat)`` result)."""
    if kind == CHILD_WATCH:
        return int(result[1].pzxid)
    return None if result is None else int(result.mzxid)


def to_stat(raw: KazooStat | Sequence[int]) -> ZnodeStat:
    # kazoo's ZnodeStat and multiread's raw tuple share jute's field order.
    czxid, mzxid, _, _, version, cversion, _, owner, length, children, _ = raw
    return ZnodeStat(czxid, mzxid, version, cversion, owner, children, length)


def op_results(ops: Sequence[Op], raw: Sequence[Any]) -> list[OpResult]:
    """kazoo's multi result list as ours: the failing op keeps its error, the rest RolledBack."""
    if len(raw) != len(ops):
        raise errors.ZkError(f"multi returned {len(raw)} results for {len(ops)} ops")
    if any(isinstance(r, Exception) for r in raw):
        return [
            OpResult(
                error=errors.RolledBackError(path=op.path)
                if isinstance(r, kex.RolledBackError | kex.RuntimeInconsistency)
                or not isinstance(r, Exception)
                else translate(r, op.path)
            )
            for op, r in zip(ops, raw, strict=True)
        ]
    out: list[OpResult] = []
    for r in raw:
        if isinstance(r, str):
            out.append(OpResult(path=r))
        elif isinstance(r, KazooStat):
            out.append(OpResult(stat=to_stat(r)))
        else:
            out.append(OpResult())
    return out


# getaddrinfo's answers that a name does not exist (not that DNS could not be asked now).
_NO_SUCH_NAME = frozenset(
    code for code in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", None)) if code is not None
)


def unresolvable_hosts(connect: str, *, definitely: bool = False) -> list[str]:
    """The hosts of a connect string (``h1:2181,[::1]:2181/chroot``) that do not resolve:
    kazoo only logs that, and a session that never comes looks like an unreachable server.
    ``definitely``: only names DNS says do not exist, not a resolver that failed for now
    (EAI_AGAIN: a record not yet published, a DNS server down), which may yet resolve."""
    try:
        hosts, _ = parse_zookeeper_connect(connect)
    except ValueError:  # validated before it gets here; nothing to add if it was not
        return []
    out = []
    for hp in hosts:
        try:
            socket.getaddrinfo(hp.host, None)
        except socket.gaierror as exc:
            if not definitely or exc.errno in _NO_SUCH_NAME:
                out.append(hp.host)
        except (UnicodeError, ValueError):  # a label too long, a NUL: never a name
            out.append(hp.host)
    return out
