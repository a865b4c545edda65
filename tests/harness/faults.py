"""``FaultInjectingPort``: make chosen ZooKeeper calls of the controller's session misbehave.

Kafka's unit tests mock the ZooKeeper client to throw; here the real gateway runs on a real
(in-memory) session, and this transparent decorator injects the few things a model cannot
produce by itself: a thrown client error, or another writer acting at an exact point of the
controller's sequence of calls.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from controller.zk.errors import ZkError
from controller.zk.memory_session import MemoryZkSession
from controller.zk.port import Op, OpResult, ReadResult, SessionListener, WatchCallback, ZnodeStat

_T = TypeVar("_T")


@dataclass(slots=True)
class _Rule:
    method: str
    times: int  # remaining; -1 = forever
    when: Callable[..., bool] | None
    error: BaseException | None = None
    action: Callable[[], object] | None = None
    lose_reply: bool = False


class FaultInjectingPort:
    """A transparent ``ZkPort`` decorator for the controller's session.

    ``fail(method, error)`` makes the next matching call raise ``error`` (a thrown client
    error, e.g. ``ConnectionLossError``); ``before(method, action)`` runs ``action`` just
    before the next matching call (e.g. another client writes a znode between the
    controller's read and its conditional write). ``when`` receives the call's arguments.
    ``lose_reply(method)`` makes the next matching write commit once before the call itself
    runs: the client's resend after a lost reply, which meets its own first attempt.
    ``calls`` counts calls per method.
    """

    def __init__(self, inner: MemoryZkSession) -> None:
        self.inner = inner
        self.calls: dict[str, int] = {}
        self._rules: list[_Rule] = []

    def fail(
        self,
        method: str,
        error: BaseException,
        *,
        times: int = 1,
        when: Callable[..., bool] | None = None,
    ) -> None:
        self._rules.append(_Rule(method, times, when, error=error))

    def before(
        self,
        method: str,
        action: Callable[[], object],
        *,
        times: int = 1,
        when: Callable[..., bool] | None = None,
    ) -> None:
        self._rules.append(_Rule(method, times, when, action=action))

    def lose_reply(
        self, method: str, *, times: int = 1, when: Callable[..., bool] | None = None
    ) -> None:
        self._rules.append(_Rule(method, times, when, lose_reply=True))

    def clear(self) -> None:
        self._rules.clear()

    def _enter(self, method: str, *args: Any) -> bool:
        """Apply the matching rules; whether the call is to commit once first (lose_reply)."""
        self.calls[method] = self.calls.get(method, 0) + 1
        commit_first = False
        for rule in list(self._rules):
            if rule.method != method or (rule.when is not None and not rule.when(*args)):
                continue
            if rule.times > 0:
                rule.times -= 1
                if rule.times == 0:
                    self._rules.remove(rule)
            if rule.action is not None:
                rule.action()
            if rule.error is not None:
                raise rule.error
            commit_first = commit_first or rule.lose_reply
        return commit_first

    @staticmethod
    def _resent(commit_first: bool, call: Callable[[], _T]) -> _T:
        if commit_first:
            with contextlib.suppress(ZkError):
                call()  # committed; its reply is lost
        return call()  # the resend, whose outcome the caller gets

    # -- ZkPort ------------------------------------------------------------------------

    @property
    def session_id(self) -> int | None:
        return self.inner.session_id

    def start(self, timeout: float = 15.0) -> None:
        self._enter("start")
        self.inner.start(timeout)

    def stop(self) -> None:
        self._enter("stop")
        self.inner.stop()

    def add_session_listener(self, listener: SessionListener) -> None:
        self.inner.add_session_listener(listener)

    def remove_session_listener(self, listener: SessionListener) -> None:
        self.inner.remove_session_listener(listener)

    def get(self, path: str, watch: WatchCallback | None = None) -> tuple[bytes, ZnodeStat]:
        self._enter("get", path)
        return self.inner.get(path, watch)

    def exists(self, path: str, watch: WatchCallback | None = None) -> ZnodeStat | None:
        self._enter("exists", path)
        return self.inner.exists(path, watch)

    def get_children(self, path: str, watch: WatchCallback | None = None) -> list[str]:
        self._enter("get_children", path)
        return self.inner.get_children(path, watch)

    def get_many(self, paths_: Sequence[str]) -> list[ReadResult]:
        self._enter("get_many", paths_)
        return self.inner.get_many(paths_)

    def get_many_watched(self, paths_: Sequence[str], watch: WatchCallback) -> list[ReadResult]:
        self._enter("get_many_watched", paths_)
        return self.inner.get_many_watched(paths_, watch)

    def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        return self._resent(self._enter("multi", ops), lambda: self.inner.multi(ops))

    def multi_many(self, transactions: Sequence[Sequence[Op]]) -> list[list[OpResult]]:
        return self._resent(
            self._enter("multi_many", transactions), lambda: self.inner.multi_many(transactions)
        )

    def create(
        self,
        path: str,
        data: bytes | None = None,
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        return self._resent(
            self._enter("create", path),
            lambda: self.inner.create(
                path, data, ephemeral=ephemeral, sequential=sequential, makepath=makepath
            ),
        )

    def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        return self._resent(self._enter("set", path), lambda: self.inner.set(path, data, version))

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        self._resent(
            self._enter("delete", path),
            lambda: self.inner.delete(path, version, recursive=recursive),
        )

    def ensure_path(self, path: str) -> None:
        self._enter("ensure_path", path)
        self.inner.ensure_path(path)


def touches(fragment: str) -> Callable[..., bool]:
    """A ``when`` predicate: the call's path(s) or ops mention ``fragment``."""

    def match(arg: Any) -> bool:
        return fragment in repr(arg)

    return match
