"""What every admin command shares: ZooKeeper connection options, one-line errors, the
session around an action, and calls to the active controller's admin API.

Every error exits 1 with one line on stderr naming what was wrong (``fail``); usage errors
too (``OneLineErrorParser``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from controller.admin.assignment import AdminError
from controller.admin.client import DEFAULT_SESSION_TIMEOUT_MS, admin_session, resolve_connect
from controller.admin.controller_client import ControllerClient, NoActiveControllerError
from controller.api.errors import Errors, error_name
from controller.cli.argtypes import int_in, positive_ms
from controller.config.settings import SETTINGS_BY_NAME
from controller.logs import configure_logging
from controller.security.acls import CredentialsError
from controller.security.cli import (
    add_zookeeper_security_arguments,
    channel_opener_from_args,
    zk_security_from_args,
)
from controller.security.tls import TlsConfigError
from controller.zk import limits
from controller.zk.errors import MalformedZnodeError, NoAuthError, ZkError
from controller.zk.paths import InvalidTopicError
from controller.zk.port import ZkPort

PROG_ERROR = "zk-controller: error:"


class OneLineErrorParser(argparse.ArgumentParser):
    """Usage errors as one stderr line and exit code 1, like every other error here.

    No abbreviated options: Kafka's ``--timeout`` (ms) must not silently mean ``--timeout-s``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"{self.prog}: error: {message}\n")


def one_line_usage_errors(parser: argparse.ArgumentParser) -> None:
    """``OneLineErrorParser``'s errors for a parser made by the top-level subparsers (whose
    class is argparse's, shared with the daemons), for a command without actions."""
    parser.error = OneLineErrorParser.error.__get__(parser)  # type: ignore[method-assign]


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--zookeeper",
        metavar="CONNECT",
        help="ZooKeeper connect string HOST:PORT[,HOST:PORT...][/CHROOT] (default: $ZK_CONNECT)",
    )
    parser.add_argument(
        "--session-timeout-ms",
        type=positive_ms,
        default=DEFAULT_SESSION_TIMEOUT_MS,
        metavar="MS",
        help="ZooKeeper session timeout, also the connection wait (default %(default)s)",
    )
    parser.add_argument(
        "--zookeeper-jute-maxbuffer",
        type=int_in(limits.MIN_JUTE_MAXBUFFER),
        default=None,
        metavar="BYTES",
        help="the ensemble's jute.maxbuffer when raised: the largest znode read or written "
        f"(default ${JUTE_MAXBUFFER_ENV} or {limits.DEFAULT_JUTE_MAXBUFFER})",
    )
    parser.add_argument(
        "--verbose", action="store_true", help="log ZooKeeper client activity to stderr"
    )
    add_zookeeper_security_arguments(parser)  # controller.security: auth and ACLs on creates


def run_admin(args: argparse.Namespace, action: Callable[[ZkPort], int]) -> int:
    """Open the session, run ``action``, turn every expected failure into one stderr line."""
    # Library logs (kazoo's reconnect warnings...) would break the one-line error contract.
    configure_logging("DEBUG" if args.verbose else "CRITICAL", "console", sys.stderr)
    try:
        connect = resolve_connect(args.zookeeper)
        _configure_jute_maxbuffer(getattr(args, "zookeeper_jute_maxbuffer", None))
        security = zk_security_from_args(args, admin_tool=True)
        with admin_session(connect, args.session_timeout_ms, security) as port:
            return action(port)
    except (AdminError, InvalidTopicError, MalformedZnodeError) as exc:
        return fail(str(exc))
    except (CredentialsError, TlsConfigError) as exc:  # unusable credentials or certificates
        return fail(str(exc))
    except NoAuthError as exc:
        return fail(with_auth_hint(f"ZooKeeper request failed: {exc}"))
    except ZkError as exc:
        return fail(f"ZooKeeper request failed: {exc}")


# What a NOAUTH almost always means for an admin tool: it did not authenticate as the cluster's
# processes do (their znodes carry Kafka's secure ACLs).
NO_AUTH_HINT = (
    "the znode's ACL refuses this session: give the cluster's ZooKeeper credentials with "
    "--zookeeper-auth-scheme and --zookeeper-auth-credentials-file (or the ZKC_ZOOKEEPER_AUTH_* "
    "environment)"
)


def with_auth_hint(message: str) -> str:
    """``message``, with what to do about it when it reports a NOAUTH."""
    return f"{message}; {NO_AUTH_HINT}" if NoAuthError.code in message else message


JUTE_MAXBUFFER_ENV = SETTINGS_BY_NAME["zookeeper.jute.maxbuffer"].env  # the controller's


def _configure_jute_maxbuffer(flag: int | None) -> None:
    if flag is None and (text := os.environ.get(JUTE_MAXBUFFER_ENV, "").strip()):
        try:
            flag = int(text)
        except ValueError:
            raise AdminError(f"{JUTE_MAXBUFFER_ENV}={text!r} is not an integer") from None
    try:
        limits.configure(limits.DEFAULT_JUTE_MAXBUFFER if flag is None else flag)
    except ValueError as exc:
        raise AdminError(f"{JUTE_MAXBUFFER_ENV}: {exc}") from None


DEFAULT_ADMIN_TIMEOUT_MS = 30_000


#: How much longer than ``--timeout-ms`` a call the controller took may take to answer.
ANSWER_GRACE_S = 5.0


def add_admin_timeout_argument(parser: argparse.ArgumentParser) -> None:
    """``--timeout-ms`` of the commands that call the controller's admin API."""
    parser.add_argument(
        "--timeout-ms",
        type=positive_ms,
        default=DEFAULT_ADMIN_TIMEOUT_MS,
        metavar="MS",
        help="how long to wait for the controller (default %(default)s); a request it has not "
        "finished by then is answered REQUEST_TIMED_OUT and may still be applied: check "
        "before resending",
    )


def call_controller_admin(
    port: ZkPort, args: argparse.Namespace, method: str, request: Any, what: str
) -> Any:
    """Send an AdminService ``request`` to the active controller (found through ZooKeeper,
    followed when it moves) and return its response; ``AdminError`` (one line on stderr
    through ``run_admin``) when no controller answers or the response carries a
    request-level error. ``args`` gives ``timeout_ms`` and the TLS options."""
    # The controller answers within timeout_ms, REQUEST_TIMED_OUT at worst: a call that
    # reached it waits a little longer for that answer, but finding it takes timeout_ms.
    client = ControllerClient(
        port,
        timeout_s=args.timeout_ms / 1000,
        channel_opener=channel_opener_from_args(args),
        answer_grace_s=ANSWER_GRACE_S,
    )
    try:
        response = client.admin(method, request)
    except NoActiveControllerError as exc:
        raise AdminError(str(exc)) from None
    finally:
        client.close()
    if response.error_code != Errors.NONE:
        detail = f": {response.error_message}" if response.error_message else ""
        raise AdminError(f"{what} failed: {error_name(response.error_code)}{detail}")
    return response


def fail(message: str) -> int:
    print(f"{PROG_ERROR} {' '.join(message.split())}", file=sys.stderr)
    return 1


def join(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)
