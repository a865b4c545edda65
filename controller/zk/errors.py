"""ZooKeeper errors as the controller sees them.

kazoo's exceptions are translated into these at the port boundary (as tooz does), so the
controller core never imports kazoo and the in-memory ZooKeeper raises the same types.
"""

from __future__ import annotations


class ZkError(Exception):
    """Base class of every ZooKeeper error the port raises or reports."""

    code: str = "SYSTEMERROR"

    def __init__(self, message: str = "", path: str | None = None) -> None:
        self.path = path
        super().__init__(message or (f"{self.code} for {path}" if path else self.code))


class NoNodeError(ZkError):
    code = "NONODE"


class NodeExistsError(ZkError):
    code = "NODEEXISTS"


class BadVersionError(ZkError):
    code = "BADVERSION"


class NotEmptyError(ZkError):
    code = "NOTEMPTY"


class NoChildrenForEphemeralsError(ZkError):
    code = "NOCHILDRENFOREPHEMERALS"


class RolledBackError(ZkError):
    """An op of a multi that did not fail itself but was rolled back with the multi."""

    code = "ROLLEDBACK"


class ConnectionLossError(ZkError):
    code = "CONNECTIONLOSS"


class SessionExpiredError(ZkError):
    code = "SESSIONEXPIRED"


class OperationTimeoutError(ZkError):
    code = "OPERATIONTIMEOUT"


class NoAuthError(ZkError):
    code = "NOAUTH"


class RequestTooLargeError(ZkError):
    """A write refused before it was sent: larger than ZooKeeper's default jute.maxbuffer.
    The server would drop the connection, and the port, resending on connection loss, would
    retry it for as long as the session lives (not a ZooKeeper code: ours)."""

    code = "REQUESTTOOLARGE"


class ControllerMovedError(Exception):
    """A fenced write failed its ``/controller_epoch`` check: another controller was elected.

    Not a ZkError on purpose: it is a controller-level verdict, and it must not be swallowed by
    code that handles ZooKeeper errors generically.
    """


class MalformedZnodeError(ValueError):
    """A znode's content could not be decoded. The message names the path and the problem."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"malformed data in znode {path}: {problem}")
