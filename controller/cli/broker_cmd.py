"""``zk-controller broker``: run the reference broker in the foreground.

    zk-controller broker --zookeeper 127.0.0.1:2181/kafka --broker-id 1 --listen 0.0.0.0:9093

It serves ``zkcontroller.v1.BrokerService`` (plus gRPC health and reflection) and registers as
``/brokers/ids/N`` with ``CONTROLLER://`` and ``PLAINTEXT://`` endpoints on that address.
Security: --zookeeper-auth-* / --zookeeper-set-acl authenticate the ZooKeeper session and put
Kafka's ACLs on the znodes it creates; --tls-* make the gRPC server TLS (mutual with
--tls-client-auth required) and register its listeners as SSL; with mutual TLS,
--controller-allowed-principals and --broker-allowed-principals say which certificates may send
the controller's requests (LeaderAndIsr, UpdateMetadata, StopReplica) and Fetch. Each flag
defaults to the ZKC_* environment variable of the same setting.
SIGTERM or SIGINT stops it cleanly: a controlled shutdown first (the active controller moves
this broker's leaderships away; Kafka's controlled.shutdown.* settings), then deregistration,
the gRPC grace period, and the ZooKeeper session is closed. A second SIGTERM or SIGINT during
the controlled shutdown skips its remaining attempts and backoff (an attempt under way ends
within its request timeout). SIGUSR1 simulates a failed log dir: every partition hosted at
that moment goes offline on it (KAFKA_STORAGE_ERROR from then on)
and the controller is told through /log_dir_event_notification, as Kafka's broker does;
partitions created later land on a healthy dir. Exit codes: 0 on a requested stop,
1 when ZooKeeper or the listen address is unusable, 2 for bad arguments, 4 when the broker id
is already registered by another live broker (or a persistent /brokers/ids/N node, which must
be deleted by hand, blocks it).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Any

import structlog

from controller.broker.registration import BrokerIdInUseError
from controller.broker.replication import (
    DEFAULT_REPLICA_FETCH_INTERVAL_MS,
    DEFAULT_REPLICA_LAG_TIME_MAX_MS,
)
from controller.broker.server import BrokerConfig, BrokerServer, parse_host_port
from controller.broker.shutdown import (
    DEFAULT_ENABLE,
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_BACKOFF_MS,
    ControlledShutdownSettings,
)
from controller.core.features import MAX_FEATURE_LEVEL
from controller.logs import configure_logging, log_level_arg
from controller.security.acls import CredentialsError
from controller.security.cli import (
    add_broker_authorization_arguments,
    add_tls_arguments,
    add_zookeeper_security_arguments,
    broker_principals_from_args,
    tls_settings_from_args,
    zk_security_from_args,
)
from controller.security.tls import TlsConfigError
from controller.signals import SignalInbox
from controller.zk.chroot import create_chroot_if_necessary
from controller.zk.codecs import INT32_MAX
from controller.zk.codecs.brokers import check_endpoint_host
from controller.zk.errors import ZkError
from controller.zk.kazoo_port import KazooPort

log = structlog.get_logger("controller.cli.broker")

#: Exit code when another live session holds this broker id's registration (Kafka's
#: broker refuses to start then too).
EXIT_BROKER_ID_IN_USE = 4

DEFAULT_SESSION_TIMEOUT_MS = 18000  # Kafka's zookeeper.session.timeout.ms since 2.5


def _listen(value: str) -> str:
    try:
        parse_host_port(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _advertised_host(value: str) -> str:
    try:
        return check_endpoint_host(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def _non_negative(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {number}")
    return number


def _positive(value: str) -> int:
    number = _non_negative(value)
    if number == 0:
        raise argparse.ArgumentTypeError("must be >= 1, got 0")
    return number


def _feature_range(value: str) -> tuple[str, tuple[int, int]]:
    """NAME=MIN-MAX (or NAME=LEVEL for a single level)."""
    name, sep, levels = value.partition("=")
    lo_text, dash, hi_text = levels.partition("-")
    try:
        lo = int(lo_text)
        hi = int(hi_text) if dash else lo
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=MIN-MAX, got {value!r}") from None
    if not name.strip() or not sep or not 1 <= lo <= hi <= MAX_FEATURE_LEVEL:
        raise argparse.ArgumentTypeError(
            f"expected NAME=MIN-MAX with 1 <= MIN <= MAX <= {MAX_FEATURE_LEVEL}, got {value!r}"
        )
    return name.strip(), (lo, hi)


class _SecondStop:
    """During the controlled shutdown, a further SIGTERM/SIGINT means "stop now": the backoff
    ends early and the remaining attempts are skipped. Kafka's broker offers no such escape,
    but an operator who insists should not wait out every attempt and backoff."""

    def __init__(self, inbox: SignalInbox) -> None:
        self._inbox = inbox
        self._signal: int | None = None

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self._signal is None and (left := deadline - time.monotonic()) > 0:
            self._take(self._inbox.wait(left))

    def reason(self) -> str | None:
        while self._signal is None and (signum := self._inbox.wait(0)) is not None:
            self._take(signum)
        if self._signal is None:
            return None
        return f"{signal.Signals(self._signal).name} received during the controlled shutdown"

    def _take(self, signum: int | None) -> None:
        if signum in (signal.SIGINT, signal.SIGTERM):
            self._signal = signum
        elif signum is not None:
            log.info("ignoring a signal while stopping", signal=signal.Signals(signum).name)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "broker",
        help="run the reference broker (a gRPC BrokerService registered in ZooKeeper)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--zookeeper",
        default=os.environ.get("ZK_CONNECT"),
        metavar="CONNECT",
        help="ZooKeeper connect string, optionally with a chroot (default: $ZK_CONNECT)",
    )
    parser.add_argument("--broker-id", type=int, required=True, metavar="N")
    parser.add_argument(
        "--listen",
        type=_listen,
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="gRPC listen address; port 0 picks a free port (default: %(default)s)",
    )
    parser.add_argument(
        "--advertised-host",
        type=_advertised_host,
        default=None,
        metavar="HOST",
        help="host to register (default: the listen host, or the FQDN for a wildcard address)",
    )
    parser.add_argument("--rack", default=None, help="the broker's rack (broker.rack)")
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        default=DEFAULT_SESSION_TIMEOUT_MS,
        metavar="MS",
        help="ZooKeeper session timeout (default: %(default)s)",
    )
    parser.add_argument(
        "--controlled-shutdown-enable",
        type=_bool,
        default=DEFAULT_ENABLE,
        metavar="true|false",
        help="on SIGTERM, ask the controller to move leaderships away before deregistering "
        "(controlled.shutdown.enable; default: true)",
    )
    parser.add_argument(
        "--controlled-shutdown-max-retries",
        type=_positive,
        default=DEFAULT_MAX_RETRIES,
        metavar="N",
        help="controlled shutdown attempts (controlled.shutdown.max.retries; default: %(default)s)",
    )
    parser.add_argument(
        "--controlled-shutdown-retry-backoff-ms",
        type=_non_negative,
        default=DEFAULT_RETRY_BACKOFF_MS,
        metavar="MS",
        help="pause between attempts (controlled.shutdown.retry.backoff.ms; default: %(default)s)",
    )
    parser.add_argument(
        "--replica-lag-time-max-ms",
        type=_positive,
        default=DEFAULT_REPLICA_LAG_TIME_MAX_MS,
        metavar="MS",
        help="a follower that has not fetched for this long is removed from the ISR by its "
        "leader (replica.lag.time.max.ms; default: %(default)s)",
    )
    parser.add_argument(
        "--replica-fetch-interval-ms",
        type=_positive,
        default=DEFAULT_REPLICA_FETCH_INTERVAL_MS,
        metavar="MS",
        help="how often a follower fetches from its leader (default: %(default)s)",
    )
    parser.add_argument(
        "--feature",
        type=_feature_range,
        action="append",
        default=[],
        metavar="NAME=MIN-MAX",
        help="a feature level range this broker supports, advertised in its registration "
        "(KIP-584; repeat for several); none by default, as Kafka's ZooKeeper-mode brokers",
    )
    parser.add_argument(
        "--log-level", default="INFO", type=log_level_arg, help="default: %(default)s"
    )
    add_zookeeper_security_arguments(parser)
    add_tls_arguments(parser, server=True)
    add_broker_authorization_arguments(parser)
    parser.set_defaults(func=broker_command)


def broker_command(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)
    if not args.zookeeper:
        print("zk-controller broker: --zookeeper or ZK_CONNECT is required", file=sys.stderr)
        return 2
    if not 0 <= args.broker_id <= INT32_MAX:  # Kafka's broker.id is an int32
        print(
            f"zk-controller broker: --broker-id must be in [0, {INT32_MAX}], "
            f"got {args.broker_id}",
            file=sys.stderr,
        )
        return 2
    if args.session_timeout_ms <= 0:
        print(
            "zk-controller broker: --session-timeout-ms must be positive, "
            f"got {args.session_timeout_ms}",
            file=sys.stderr,
        )
        return 2

    try:
        zk_security = zk_security_from_args(args)
        tls = tls_settings_from_args(args)
        controller_principals, broker_principals = broker_principals_from_args(args)
    except (CredentialsError, TlsConfigError) as exc:
        print(f"zk-controller broker: {exc}", file=sys.stderr)
        return 2

    try:
        config = BrokerConfig(
            broker_id=args.broker_id,
            listen=args.listen,
            advertised_host=args.advertised_host,
            rack=args.rack,
            replica_lag_time_max_ms=args.replica_lag_time_max_ms,
            replica_fetch_interval_ms=args.replica_fetch_interval_ms,
            controlled_shutdown=ControlledShutdownSettings(
                enable=args.controlled_shutdown_enable,
                max_retries=args.controlled_shutdown_max_retries,
                retry_backoff_ms=args.controlled_shutdown_retry_backoff_ms,
            ),
            tls=tls,
            supported_features=dict(args.feature),
            controller_principals=controller_principals,
            broker_principals=broker_principals,
        )
    except ValueError as exc:  # allowed principals without mutual TLS
        print(f"zk-controller broker: {exc}", file=sys.stderr)
        return 2
    # SIGUSR1: simulate a failed log dir (fail_current_log_dir), for demos and drills.
    inbox = SignalInbox((signal.SIGINT, signal.SIGTERM, signal.SIGUSR1))
    zk = KazooPort(
        args.zookeeper,
        session_timeout=args.session_timeout_ms / 1000,
        **zk_security.port_options(),
    )
    try:
        server = BrokerServer(config, zk)
    except TlsConfigError as exc:  # unreadable or mismatched certificate files
        print(f"zk-controller broker: {exc}", file=sys.stderr)
        inbox.restore()
        return 2
    try:
        try:
            # As Kafka's brokers do: the first process on a fresh chroot creates it.
            create_chroot_if_necessary(
                args.zookeeper,
                session_timeout_s=args.session_timeout_ms / 1000,
                connection_timeout_s=15.0,  # KazooPort.start's default, as for ``zk`` below
                port_options=zk_security.port_options(),
            )
            zk.start()
            server.start()
        except BrokerIdInUseError as exc:
            log.error("cannot register broker", error=str(exc))
            return EXIT_BROKER_ID_IN_USE
        except (ZkError, OSError) as exc:
            log.error("broker failed to start", error=str(exc), zookeeper=args.zookeeper)
            return 1
        log.info(
            "broker started",
            broker_id=server.broker_id,
            broker_epoch=server.broker_epoch,
            address=server.address,
        )
        while (signum := inbox.wait()) == signal.SIGUSR1:
            failed = server.fail_current_log_dir()
            log.warning(
                "SIGUSR1: simulated a failed log dir",
                broker_id=server.broker_id,
                partitions=[str(tp) for tp in failed],
            )
        assert signum is not None  # no timeout
        log.info("stopping broker", signal=signal.Signals(signum).name)
        # Kafka's controlled shutdown: leadership moves away while we still serve (the
        # controller's LeaderAndIsr/StopReplica must reach us), then we deregister.
        second = _SecondStop(inbox)
        server.controlled_shutdown(sleep=second.sleep, abandon=second.reason)
        return 0
    finally:
        server.stop(grace=5.0)
        zk.stop()  # closing the session also removes the ephemeral registration
        inbox.restore()
