"""``KazooPort.start`` tells a rejected login from a server that never answered.

kazoo's connection thread reports AUTH_FAILED on its own schedule: before the session's
``live`` event is set, or just after it. Both orders must end in ``NoAuthError`` (CI once saw
the second reported as a time-out). The stand-in below replaces only the KazooClient surface
``start`` uses, so the orders can be forced; the real server is exercised in
``tests/integration/test_security_zk.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from kazoo.protocol.states import KazooState, KeeperState

from controller.zk import errors
from controller.zk.kazoo_port import KazooPort
from controller.zk.kazoo_support import unresolvable_hosts


class _ScriptedClient:
    """Replays one connection attempt: whether the session came up, then the final state."""

    def __init__(self, goes_live: bool, final_state: str, closes: bool = False) -> None:
        self._live = threading.Event()
        self._goes_live = goes_live
        self._final_state = final_state
        self._closes = closes
        self.client_state = KeeperState.CONNECTING
        self.stopped = False
        self.listener: Callable[[str], None] | None = None

    def start_async(self) -> threading.Event:
        if self._goes_live:
            self._live.set()
        self.client_state = self._final_state
        if self._final_state == KeeperState.AUTH_FAILED:
            self._live.clear()  # kazoo's session callback drops the session as it fails
            if self.listener is not None:
                self.listener(KazooState.LOST)  # from inside that callback, as kazoo does
            if self._closes:
                # kazoo's connection loop ends right after, and its clean-up reports CLOSED.
                self.client_state = KeeperState.CLOSED
        return self._live

    @property
    def connected(self) -> bool:
        return self._live.is_set()

    def stop(self) -> None:
        self.stopped = True
        self.client_state = KeeperState.CLOSED

    def close(self) -> None:
        pass


def _port_with(client: _ScriptedClient) -> KazooPort:
    port = KazooPort("127.0.0.1:1", session_timeout=4)
    port._client = client  # type: ignore[assignment]
    client.listener = port._on_state
    return port


@pytest.mark.parametrize("goes_live", [False, True], ids=["before-live", "after-live"])
def test_auth_failed_is_no_auth_error_whichever_order(goes_live: bool) -> None:
    client = _ScriptedClient(goes_live, KeeperState.AUTH_FAILED)
    with pytest.raises(errors.NoAuthError, match="rejected this client's authentication"):
        _port_with(client).start(timeout=5)
    assert client.stopped


@pytest.mark.parametrize("goes_live", [False, True], ids=["before-live", "after-live"])
def test_auth_failed_is_no_auth_error_though_kazoo_closes_at_once(goes_live: bool) -> None:
    # CI saw this as "no ZooKeeper session within 10s": by the time start() looked, kazoo
    # had replaced AUTH_FAILED with CLOSED.
    client = _ScriptedClient(goes_live, KeeperState.AUTH_FAILED, closes=True)
    with pytest.raises(errors.NoAuthError, match="rejected this client's authentication"):
        _port_with(client).start(timeout=5)
    assert client.stopped


def test_no_session_in_time_is_connection_loss() -> None:
    client = _ScriptedClient(False, KeeperState.CONNECTING)
    # The connect string is named: which ensemble could not be reached.
    no_session = r"no ZooKeeper session with 127\.0\.0\.1:1 within 0\.3s"
    with pytest.raises(errors.ConnectionLossError, match=no_session):
        _port_with(client).start(timeout=0.3)
    assert client.stopped


def test_no_session_with_a_host_that_does_not_resolve_says_so() -> None:
    client = _ScriptedClient(False, KeeperState.CONNECTING)
    port = _port_with(client)
    port.connect = "127.0.0.1:2181,no-such-zk.invalid:2181/kafka"
    unresolved = r"\(cannot resolve no-such-zk\.invalid\)$"
    with pytest.raises(errors.ConnectionLossError, match=unresolved):
        port.start(timeout=0.3)


def test_connect_string_hosts_that_do_not_resolve() -> None:
    assert unresolvable_hosts("localhost:2181,[::1]:2181,127.0.0.1/chroot") == []
    assert unresolvable_hosts("a.invalid:2181,[::1]:2181,b.invalid/x") == ["a.invalid", "b.invalid"]


def test_a_live_session_starts() -> None:
    client = _ScriptedClient(True, KeeperState.CONNECTED)
    _port_with(client).start(timeout=5)
    assert not client.stopped


def test_a_stop_from_another_thread_ends_the_wait_for_a_session() -> None:
    """The daemon abandons a start blocked on an unreachable ensemble by closing the session
    from its main thread: start() must give up then, not wait out its whole timeout (the
    real kazoo client's start would)."""
    port = KazooPort("127.0.0.1:1", session_timeout=4)  # a real client; nothing listens
    outcome: list[BaseException] = []

    def start() -> None:
        try:
            port.start(timeout=60)
        except BaseException as exc:
            outcome.append(exc)

    starting = threading.Thread(target=start)
    starting.start()
    time.sleep(0.3)
    port.stop()
    # As the daemon's abort does: a stop that came before the thread entered start() (a
    # slow VM) is repeated, since start() begins a new session.
    deadline = time.monotonic() + 5
    while starting.is_alive() and time.monotonic() < deadline:
        starting.join(0.5)
        port.stop()
    assert not starting.is_alive(), "start() still waiting 5 s after the stop"
    assert len(outcome) == 1 and isinstance(outcome[0], errors.ConnectionLossError)
    assert "closed while connecting" in str(outcome[0])
