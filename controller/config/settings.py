"""The declarative settings table: every setting's name, type, default, bounds and doc."""

from __future__ import annotations

import enum
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.config.addresses import canonical_zookeeper_connect, parse_host_port
from controller.zk import limits

ENV_PREFIX = "ZKC_"

DEFAULT_METRICS_LISTEN = "127.0.0.1:9309"
DEFAULT_GRPC_LISTEN = "127.0.0.1:9095"


class Kind(enum.Enum):
    INT = "int"
    BOOL = "bool"
    STR = "string"
    CHOICE = "choice"
    HOST_PORT = "host:port"
    ZK_CONNECT = "connect string"
    PATH = "path"
    LISTENER = "listener name"


# Kafka's INT settings (and the int32 ids and timeouts they end up in on the wire and in
# kazoo's ConnectRequest) stop here; a larger value is refused at load, naming the key.
INT32_MAX = 2**31 - 1

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_LISTENER_RE = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    kind: Kind
    default: Any
    doc: str
    required: bool = False
    nullable: bool = False
    dynamic: bool = False  # may change on SIGHUP without a restart
    kafka: bool = False  # name and meaning are Kafka's (reference §5.2)
    min: int | None = None
    max: int | None = INT32_MAX
    choices: tuple[str, ...] = ()
    default_doc: str | None = None  # how to show a derived default in docs
    secret: bool = False  # never shown: --validate-config prints a mask instead of the value

    @property
    def attr(self) -> str:
        return self.name.replace(".", "_")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.attr.upper()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace(".", "-")

    def coerce(self, raw: object, *, textual: bool) -> Any:
        """Turn a raw value into the setting's type; raise ValueError with a reason.

        ``textual`` values (environment, flags) are strings to parse; file values must already
        have the right TOML type, so ``timeout = "30"`` is reported rather than guessed at.
        """
        if self.secret:
            try:
                return self._coerce(raw, textual=textual)
            except ValueError:
                # The reasons below quote the value; a secret's must not reach a terminal or
                # a log through --validate-config or a start-up error.
                raise ValueError(
                    f"not a valid {self.kind.name.lower()} ({type(raw).__name__}; the value "
                    "is a secret and is not shown)"
                ) from None
        return self._coerce(raw, textual=textual)

    def _coerce(self, raw: object, *, textual: bool) -> Any:
        if textual:
            assert isinstance(raw, str)
            if raw.strip() == "" or raw.strip().lower() in ("null", "none"):
                if self.nullable:
                    return None
                if raw.strip() == "":
                    raise ValueError("empty value")
        value = _coerce_kind(self, raw, textual)
        if self.kind is Kind.INT:
            if self.min is not None and value < self.min:
                raise ValueError(f"{value} is below the minimum {self.min}")
            if self.max is not None and value > self.max:
                raise ValueError(f"{value} is above the maximum {self.max}")
        return value


def _coerce_kind(s: Setting, raw: object, textual: bool) -> Any:
    kind = s.kind
    if kind is Kind.INT:
        if textual:
            try:
                return int(str(raw).strip(), 10)
            except ValueError:
                raise ValueError(f"expected an integer, got {raw!r}") from None
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise ValueError(f"expected an integer, got {type(raw).__name__} {raw!r}")
        return raw
    if kind is Kind.BOOL:
        if textual:
            lowered = str(raw).strip().lower()
            if lowered in _TRUE:
                return True
            if lowered in _FALSE:
                return False
            raise ValueError(f"expected true or false, got {raw!r}")
        if not isinstance(raw, bool):
            raise ValueError(f"expected a boolean, got {type(raw).__name__} {raw!r}")
        return raw
    if not isinstance(raw, str):
        raise ValueError(f"expected a string, got {type(raw).__name__} {raw!r}")
    text = raw.strip()
    if kind is Kind.CHOICE:
        wanted = "WARNING" if s.name == "log.level" and text.upper() == "WARN" else text
        for choice in s.choices:
            if choice.lower() == wanted.lower():
                return choice
        raise ValueError(f"expected one of {', '.join(s.choices)}, got {raw!r}")
    if kind is Kind.HOST_PORT:
        return parse_host_port(text)
    if kind is Kind.ZK_CONNECT:
        return canonical_zookeeper_connect(text)
    if kind is Kind.PATH:
        if not text:
            raise ValueError("empty path")
        if "\x00" in text:  # no file system takes it; open() would fail later, unexplained
            raise ValueError(f"a path cannot contain a NUL character, got {raw!r}")
        return Path(text)
    if kind is Kind.LISTENER:
        if not _LISTENER_RE.fullmatch(text):
            raise ValueError(f"bad listener name {raw!r}")
        # Kafka's ListenerName.normalised: registrations carry upper-case names.
        return text.upper()
    if not text:
        raise ValueError("empty value")
    return text


# -- the table ----------------------------------------------------------------------------

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

SETTINGS: tuple[Setting, ...] = (
    Setting("controller.id", Kind.INT, None, required=True, min=0,
            doc="This controller's id, written to /controller on election (like broker.id)."),
    Setting("zookeeper.connect", Kind.ZK_CONNECT, None, required=True, kafka=True,
            doc="ZooKeeper ensemble, host:port[,host:port...][/chroot]; the chroot is part of "
                "this string, as in Kafka. For development, `zk-controller run "
                "--embedded-zookeeper` starts a local one instead."),
    Setting("zookeeper.session.timeout.ms", Kind.INT, 18000, kafka=True, min=1,
            doc="ZooKeeper session timeout (Kafka's default since 2.5, KIP-537)."),
    Setting("zookeeper.connection.timeout.ms", Kind.INT, None, nullable=True, kafka=True, min=1,
            default_doc="zookeeper.session.timeout.ms",
            doc="How long to wait for the ZooKeeper connection at start; unset means the "
                "session timeout. (Kafka's brokers also wait this long for their feature "
                "cache at failover; this controller writes /feature itself and needs no wait.)"),
    Setting("zookeeper.max.in.flight.requests", Kind.INT, 10, kafka=True, min=1,
            doc="Maximum unacknowledged ZooKeeper requests pipelined by the client."),
    Setting("zookeeper.jute.maxbuffer", Kind.INT, limits.DEFAULT_JUTE_MAXBUFFER,
            min=limits.MIN_JUTE_MAXBUFFER,
            doc="The ensemble's jute.maxbuffer (ZooKeeper's default, 1 MiB - 1): the largest "
                "request it accepts. Set it to the servers' value when raised for large "
                "topics; the controller then reads and writes znodes up to that size "
                "(larger ones it refuses: a ZooKeeper given one drops the connection)."),
    Setting("auto.leader.rebalance.enable", Kind.BOOL, True, kafka=True, dynamic=True,
            doc="Run the preferred-leader election periodically (first run 5 s after failover)."),
    Setting("leader.imbalance.check.interval.seconds", Kind.INT, 300, kafka=True, dynamic=True,
            min=1, doc="Interval between automatic leader-balance checks."),
    Setting("leader.imbalance.per.broker.percentage", Kind.INT, 10, kafka=True, dynamic=True,
            min=0,
            doc="Rebalance a broker when its share of non-preferred leaders exceeds this (as "
                "in Kafka, any value of 100 or more never triggers it)."),
    Setting("unclean.leader.election.enable", Kind.BOOL, False, kafka=True, dynamic=True,
            doc="Cluster default for electing an out-of-sync replica; the brokers' dynamic "
                "default (/config/brokers/<default>) overrides it, a topic's config both."),
    Setting("delete.topic.enable", Kind.BOOL, True, kafka=True,
            doc="If false, topic deletion requests are dropped (their znodes deleted)."),
    Setting("controller.socket.timeout.ms", Kind.INT, 30000, kafka=True, min=0,
            doc="Connect timeout of the controller-to-broker channel: a new connection that is "
                "not ready within it is closed and retried after 100 ms; 0 means "
                "request.timeout.ms."),
    Setting("request.timeout.ms", Kind.INT, 30000, kafka=True, min=1,
            doc="Timeout of one controller-to-broker request. (Kafka also accepts 0, which "
                "times every request out at once; refused here.)"),
    Setting("control.plane.listener.name", Kind.LISTENER, None, nullable=True, kafka=True,
            doc="Kafka's dedicated controller listener (KIP-291); when set, it takes precedence "
                "over controller.listener.name."),
    Setting("controller.listener.name", Kind.LISTENER, "CONTROLLER",
            doc="Broker listener (in each broker's registered endpoints) that the controller "
                "connects to over gRPC."),
    Setting("inter.broker.listener.name", Kind.LISTENER, "PLAINTEXT", kafka=True,
            doc="Broker listener advertised in LeaderAndIsr live_leaders, where followers "
                "reach their leaders; a leader that did not register it is left out (and "
                "logged)."),
    Setting("grpc.listen", Kind.HOST_PORT, parse_host_port(DEFAULT_GRPC_LISTEN),
            doc="host:port of the controller's gRPC server (port 0 picks a free port)."),
    # min: controller.rpc.server.RESERVED_WORKERS (8) plus at least one waiting request.
    Setting("grpc.max.workers", Kind.INT, 64, min=9, max=4096,
            doc="Threads of the gRPC server. Requests that wait for the event thread (broker "
                "and admin RPCs) may hold all but 8 of them; one more is answered "
                "RESOURCE_EXHAUSTED at once (callers resend it), so health checks and "
                "NOT_CONTROLLER answers always find a thread."),
    Setting("metrics.listen", Kind.HOST_PORT, parse_host_port(DEFAULT_METRICS_LISTEN),
            doc="host:port serving /metrics, /healthz and /readyz (port 0 picks a free port)."),
    Setting("log.dir", Kind.PATH, Path("."),
            doc="Directory of the controller's own log files (not Kafka's data log.dir)."),
    Setting("log.level", Kind.CHOICE, "INFO", dynamic=True, choices=_LOG_LEVELS,
            doc="Minimum level of the application log (WARN is accepted for WARNING)."),
    Setting("log.format", Kind.CHOICE, "auto", choices=("auto", "json", "console"),
            doc="Application log format; auto is console on a terminal, JSON lines otherwise."),
    Setting("state.change.log.file", Kind.PATH, Path("state-change.log"),
            doc="State-change log (JSON lines); a relative path is relative to log.dir."),
    Setting("state.change.log.max.bytes", Kind.INT, 0, min=0, max=2**63 - 1,
            doc="Rotate the state-change log (to FILE.1, FILE.2, ...) at the end of the event "
                "that makes it this large; 0 leaves rotation to logrotate and SIGHUP. For "
                "hosts with no logrotate (containers)."),
    Setting("state.change.log.backups", Kind.INT, 10, min=1,
            doc="Rotated state-change log files kept when state.change.log.max.bytes is set; "
                "the oldest is deleted."),
    Setting("embedded.zookeeper.data.dir", Kind.PATH, Path("var/zookeeper"),
            doc="Data directory of the embedded development ZooKeeper (`run "
                "--embedded-zookeeper`), relative to the current directory unless absolute."),
    # -- security (controller.security; docs/operations.md#security) --
    Setting("zookeeper.set.acl", Kind.BOOL, False, kafka=True,
            doc="Create znodes with Kafka's secure ACLs: creator-all plus world-read "
                "(creator-only under /config/users, /config/brokers). Needs "
                "zookeeper.auth.scheme."),
    Setting("zookeeper.auth.scheme", Kind.CHOICE, "none", choices=("none", "digest", "sasl"),
            doc="How the ZooKeeper session authenticates: digest (addauth digest) or sasl "
                "(SASL DIGEST-MD5; needs the pure-sasl package)."),
    Setting("zookeeper.auth.credentials.file", Kind.PATH, None, nullable=True,
            doc="File whose first line is user:password for zookeeper.auth.scheme."),
    Setting("zookeeper.auth.credentials.value", Kind.STR, None, nullable=True, secret=True,
            doc="user:password for zookeeper.auth.scheme, for secrets passed in the "
                "environment (ZKC_ZOOKEEPER_AUTH_CREDENTIALS_VALUE); prefer the file. "
                "Never shown."),
    Setting("grpc.tls.cert.file", Kind.PATH, None, nullable=True,
            doc="PEM certificate chain of the gRPC listener (enables TLS); also the client "
                "certificate presented to brokers. Reloaded when the file changes."),
    Setting("grpc.tls.key.file", Kind.PATH, None, nullable=True,
            doc="Unencrypted PEM private key of grpc.tls.cert.file."),
    Setting("grpc.tls.ca.file", Kind.PATH, None, nullable=True,
            doc="PEM CA bundle: verifies client certificates (mutual TLS) and the certificates "
                "of brokers whose controller listener is SSL (unset: the system roots)."),
    Setting("grpc.tls.client.auth", Kind.CHOICE, "none", choices=("none", "required"),
            doc="Mutual TLS on the gRPC listener (Kafka's ssl.client.auth; gRPC Python has no "
                "'requested')."),
    Setting("admin.allowed.principals", Kind.STR, None, nullable=True,
            doc="Comma-separated certificate CNs/SANs allowed to call AdminService (* = any "
                "authenticated client); needs grpc.tls.client.auth=required."),
    Setting("broker.allowed.principals", Kind.STR, None, nullable=True,
            doc="Comma-separated certificate CNs/SANs allowed to call ControllerService "
                "(the brokers); needs grpc.tls.client.auth=required."),
)

SETTINGS_BY_NAME: Mapping[str, Setting] = types.MappingProxyType({s.name: s for s in SETTINGS})
_SETTINGS_BY_ENV: Mapping[str, Setting] = {s.env: s for s in SETTINGS}
