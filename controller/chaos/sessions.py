"""Server-side expiry of another process's ZooKeeper session, knowing only its id.

ZooKeeper derives a session's password from its id: ``ZooKeeperServer.generatePasswd`` seeds
``java.util.Random`` with ``id ^ 0xB3415C00`` and takes 16 bytes (checked against ZooKeeper
3.8; ``tests/unit/test_chaos_parts.py`` pins a real session's id and password).
The id of the session that holds an ephemeral znode is public (``ephemeralOwner`` in its stat),
so the chaos suite can expire the active controller's session exactly as ZooKeeper does when
a client stops pinging: it attaches a second client to the same session
(``client_id=(id, password)``) and closes it, which makes the server expire the session and
delete its ephemerals. The victim sees SESSION_EXPIRED when it next talks to the server.

This needs no hook in the controller, so nothing is exposed over HTTP. It is also why network
access and authentication, not session secrecy, must protect a production ensemble: anyone who
can reach it can end any session whose id they can learn.
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

_SUPER_SECRET = 0xB3415C00
_MULTIPLIER = 0x5DEECE66D
_MASK = (1 << 48) - 1


class JavaRandom:
    """The part of ``java.util.Random`` that ``generatePasswd`` uses (48-bit LCG)."""

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ _MULTIPLIER) & _MASK

    def next_int(self) -> int:
        """``next(32)`` as a signed Java int."""
        self._seed = (self._seed * _MULTIPLIER + 0xB) & _MASK
        value = self._seed >> 16
        return value - (1 << 32) if value >= 1 << 31 else value

    def next_bytes(self, count: int) -> bytes:
        # Java fills 4 bytes per nextInt(), least significant byte first.
        out = bytearray()
        while len(out) < count:
            rnd = self.next_int()
            for _ in range(min(count - len(out), 4)):
                out.append(rnd & 0xFF)
                rnd >>= 8
        return bytes(out)


def session_password(session_id: int) -> bytes:
    """The password ZooKeeper gave session ``session_id`` (``generatePasswd``)."""
    # Java computes ``id ^ superSecret`` on signed longs; the low 48 bits are all the LCG keeps.
    return JavaRandom(session_id ^ _SUPER_SECRET).next_bytes(16)


def expire_session(hosts: str, session_id: int, timeout: float = 10.0) -> None:
    """End session ``session_id`` on the server (its ephemerals go at once).

    Raises kazoo's errors when the ensemble cannot be reached within ``timeout``, and
    ``kazoo.exceptions.SessionExpiredError``-style failures when the session is already gone.
    """
    client = KazooClient(
        hosts=hosts,
        client_id=(session_id, session_password(session_id)),
        timeout=timeout,
        connection_retry=KazooRetry(max_tries=3, delay=0.1, max_delay=1.0),
        command_retry=KazooRetry(max_tries=0),
    )
    try:
        client.start(timeout=timeout)
        # The attach proves we held the session; closing it is what expires it.
    finally:
        client.stop()
        client.close()
