"""Configuration: one declarative table, four layers, one immutable ``ControllerConfig``.

Every setting is declared once in ``SETTINGS`` (name, type, default, validation, doc). Where
Kafka has the setting, the name and default are Kafka's dotted ones (reference §5.2), so an
operator's ``server.properties`` knowledge carries over.

Precedence, lowest first: built-in defaults < TOML file (``--config FILE``; keys are the dotted
names, written flat or as nested tables) < environment (``ZKC_`` + the name upper-cased with
dots turned into underscores; ``ZK_CONNECT`` is also accepted) < command-line flags (``--`` +
the name with dots turned into dashes). Validation collects every problem, each with its
source and key, and raises them together in one ``ConfigError``.
"""

from __future__ import annotations

import argparse
import enum
import json
import os
import re
import tomllib
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

ENV_PREFIX = "ZKC_"
#: Conventional variable for the connect string (as in many ZooKeeper tools); ``ZKC_`` wins.
ENV_ALIASES: Mapping[str, str] = types.MappingProxyType({"ZK_CONNECT": "zookeeper.connect"})
#: Short flags kept from the CLI contract (``zk-controller run --zookeeper ...``).
FLAG_ALIASES: Mapping[str, tuple[str, ...]] = types.MappingProxyType(
    {"zookeeper.connect": ("--zookeeper",)}
)

DEFAULT_METRICS_LISTEN = "127.0.0.1:9309"
DEFAULT_GRPC_LISTEN = "127.0.0.1:9095"


# -- value types --------------------------------------------------------------------------


class HostPort(NamedTuple):
    """A listen or connect address; an empty host binds every interface, port 0 is ephemeral."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_host_port(text: str, *, default_port: int | None = None) -> HostPort:
    """Parse ``host:port``, ``[v6addr]:port`` or ``:port``; raise ValueError with a reason."""
    text = text.strip()
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"bad address {text!r}: expected [ipv6]:port")
        port_text = rest[1:] if rest else ""
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            host, port_text = text, ""
        elif ":" in host:
            raise ValueError(f"bad address {text!r}: put an IPv6 address in brackets")
    if not port_text:
        if default_port is None:
            raise ValueError(f"bad address {text!r}: expected host:port")
        port = default_port
    else:
        if not port_text.isdigit():
            raise ValueError(f"bad address {text!r}: port {port_text!r} is not a number")
        port = int(port_text)
    if not 0 <= port <= 65535:
        raise ValueError(f"bad address {text!r}: port {port} is outside 0-65535")
    if host and not re.fullmatch(r"[A-Za-z0-9._:%-]+", host):
        raise ValueError(f"bad address {text!r}: invalid host {host!r}")
    return HostPort(host, port)


def parse_zookeeper_connect(text: str) -> tuple[tuple[HostPort, ...], str | None]:
    """Split ``h1:2181,h2:2181/chroot`` into hosts and chroot (None when absent)."""
    text = text.strip()
    hosts_text, slash, chroot_rest = text.partition("/")
    chroot = f"/{chroot_rest}" if slash else None
    if chroot is not None and chroot != "/" and (chroot.endswith("/") or "//" in chroot):
        raise ValueError(f"bad chroot {chroot!r} in {text!r}")
    if not hosts_text:
        raise ValueError(f"bad connect string {text!r}: no hosts")
    hosts = []
    for part in hosts_text.split(","):
        hp = parse_host_port(part, default_port=2181)
        if not hp.host or hp.port == 0:
            raise ValueError(f"bad connect string {text!r}: {part!r} needs a host and a port")
        hosts.append(hp)
    return tuple(hosts), (None if chroot == "/" else chroot)


class Kind(enum.Enum):
    INT = "int"
    BOOL = "bool"
    STR = "string"
    CHOICE = "choice"
    HOST_PORT = "host:port"
    ZK_CONNECT = "connect string"
    PATH = "path"
    LISTENER = "listener name"


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
    max: int | None = None
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
        parse_zookeeper_connect(text)
        return text
    if kind is Kind.PATH:
        if not text:
            raise ValueError("empty path")
        return Path(text)
    if kind is Kind.LISTENER:
        if not _LISTENER_RE.fullmatch(text):
            raise ValueError(f"bad listener name {raw!r}")
        return text
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
                "this string, as in Kafka."),
    Setting("zookeeper.session.timeout.ms", Kind.INT, 18000, kafka=True, min=1,
            doc="ZooKeeper session timeout (Kafka's default since 2.5, KIP-537)."),
    Setting("zookeeper.connection.timeout.ms", Kind.INT, None, nullable=True, kafka=True, min=1,
            default_doc="zookeeper.session.timeout.ms",
            doc="How long to wait for the ZooKeeper connection (also the feature-cache wait at "
                "failover); unset means the session timeout."),
    Setting("zookeeper.max.in.flight.requests", Kind.INT, 10, kafka=True, min=1,
            doc="Maximum unacknowledged ZooKeeper requests pipelined by the client."),
    Setting("auto.leader.rebalance.enable", Kind.BOOL, True, kafka=True, dynamic=True,
            doc="Run the preferred-leader election periodically (first run 5 s after failover)."),
    Setting("leader.imbalance.check.interval.seconds", Kind.INT, 300, kafka=True, dynamic=True,
            min=1, doc="Interval between automatic leader-balance checks."),
    Setting("leader.imbalance.per.broker.percentage", Kind.INT, 10, kafka=True, dynamic=True,
            min=0, max=100,
            doc="Rebalance a broker when its share of non-preferred leaders exceeds this."),
    Setting("unclean.leader.election.enable", Kind.BOOL, False, kafka=True, dynamic=True,
            doc="Cluster default for electing an out-of-sync replica; topics may override it."),
    Setting("delete.topic.enable", Kind.BOOL, True, kafka=True,
            doc="If false, topic deletion requests are dropped (their znodes deleted)."),
    Setting("controller.socket.timeout.ms", Kind.INT, 30000, kafka=True, min=0,
            doc="Connect timeout of the controller-to-broker channel."),
    Setting("request.timeout.ms", Kind.INT, 30000, kafka=True, min=0,
            doc="Timeout of one controller-to-broker request."),
    Setting("control.plane.listener.name", Kind.LISTENER, None, nullable=True, kafka=True,
            doc="Kafka's dedicated controller listener (KIP-291); when set, it takes precedence "
                "over controller.listener.name."),
    Setting("controller.listener.name", Kind.LISTENER, "CONTROLLER",
            doc="Broker listener (in each broker's registered endpoints) that the controller "
                "connects to over gRPC."),
    Setting("grpc.listen", Kind.HOST_PORT, parse_host_port(DEFAULT_GRPC_LISTEN),
            doc="host:port of the controller's gRPC server (port 0 picks a free port)."),
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
    Setting("embedded.zookeeper.data.dir", Kind.PATH, Path("var/zookeeper"),
            doc="Data directory of the embedded development ZooKeeper, relative to the "
                "current directory unless absolute."),
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


# -- the result ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """The effective configuration; attribute names are the dotted names with underscores."""

    controller_id: int
    zookeeper_connect: str
    zookeeper_session_timeout_ms: int
    zookeeper_connection_timeout_ms: int  # already resolved: never None
    zookeeper_max_in_flight_requests: int
    auto_leader_rebalance_enable: bool
    leader_imbalance_check_interval_seconds: int
    leader_imbalance_per_broker_percentage: int
    unclean_leader_election_enable: bool
    delete_topic_enable: bool
    controller_socket_timeout_ms: int
    request_timeout_ms: int
    control_plane_listener_name: str | None
    controller_listener_name: str
    grpc_listen: HostPort
    metrics_listen: HostPort
    log_dir: Path
    log_level: str
    log_format: str
    state_change_log_file: Path  # already joined with log_dir
    embedded_zookeeper_data_dir: Path
    zookeeper_set_acl: bool
    zookeeper_auth_scheme: str
    zookeeper_auth_credentials_file: Path | None
    zookeeper_auth_credentials_value: str | None = field(repr=False)  # a secret: never in reprs
    grpc_tls_cert_file: Path | None
    grpc_tls_key_file: Path | None
    grpc_tls_ca_file: Path | None
    grpc_tls_client_auth: str
    admin_allowed_principals: str | None
    broker_allowed_principals: str | None
    #: dotted name -> where its value came from ("default", "file F", "env V", "flag --f").
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def zookeeper_hosts(self) -> tuple[HostPort, ...]:
        return parse_zookeeper_connect(self.zookeeper_connect)[0]

    @property
    def zookeeper_chroot(self) -> str | None:
        return parse_zookeeper_connect(self.zookeeper_connect)[1]

    @property
    def broker_listener_name(self) -> str:
        """The listener the controller dials on each broker."""
        return self.control_plane_listener_name or self.controller_listener_name

    def value(self, name: str) -> Any:
        return getattr(self, SETTINGS_BY_NAME[name].attr)

    def source(self, name: str) -> str:
        return self.sources.get(name, "default")


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    source: str  # "file F", "env V", "flag --f", or "config" for cross-setting checks
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}"


class ConfigError(Exception):
    """Every configuration problem found, reported together."""

    def __init__(self, problems: Iterable[ConfigProblem]) -> None:
        self.problems: tuple[ConfigProblem, ...] = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} configuration problem(s):\n{lines}")


# -- loading ------------------------------------------------------------------------------


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in table.items():
        name = f"{prefix}{key}"
        # A table under a known leaf name is a type error, not nesting: report it as such.
        if isinstance(value, dict) and name not in SETTINGS_BY_NAME:
            yield from _flatten(value, name + ".")
        else:
            yield name, value


def read_config_file(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[ConfigProblem]]:
    """Read a TOML file into ``{dotted name: raw value}``; problems instead of exceptions."""
    source = f"file {os.fspath(path)}"
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        return {}, [ConfigProblem(source, "-", f"cannot read: {exc.strerror or exc}")]
    except tomllib.TOMLDecodeError as exc:
        return {}, [ConfigProblem(source, "-", f"invalid TOML: {exc}")]
    values: dict[str, Any] = {}
    problems: list[ConfigProblem] = []
    for name, value in _flatten(data):
        if name not in SETTINGS_BY_NAME:
            problems.append(ConfigProblem(source, name, "unknown setting"))
        elif name in values:
            problems.append(ConfigProblem(source, name, "set twice (flat and nested)"))
        else:
            values[name] = value
    return values, problems


def load_config(
    config_file: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> ControllerConfig:
    """Build the effective config or raise ``ConfigError`` listing every problem.

    ``env`` defaults to ``os.environ``; ``flags`` maps dotted names to the strings given on
    the command line; ``overrides`` (typed values, highest precedence) is for tests and
    embedding.
    """
    env = os.environ if env is None else env
    problems: list[ConfigProblem] = []
    values: dict[str, Any] = {s.name: s.default for s in SETTINGS}
    sources: dict[str, str] = {s.name: "default" for s in SETTINGS}

    def apply(name: str, raw: object, source: str, textual: bool) -> None:
        try:
            values[name] = SETTINGS_BY_NAME[name].coerce(raw, textual=textual)
            sources[name] = source
        except ValueError as exc:
            problems.append(ConfigProblem(source, name, str(exc)))

    if config_file is not None:
        file_values, file_problems = read_config_file(config_file)
        problems.extend(file_problems)
        for name, raw in file_values.items():
            apply(name, raw, f"file {os.fspath(config_file)}", textual=False)

    for var, name in ENV_ALIASES.items():
        if var in env:
            apply(name, env[var], f"env {var}", textual=True)
    for var in sorted(env):
        if not var.startswith(ENV_PREFIX):
            continue
        setting = _SETTINGS_BY_ENV.get(var)
        if setting is None:
            # Our prefix, so almost certainly a typo that would otherwise be silently ignored.
            problems.append(ConfigProblem(f"env {var}", var, "unknown setting"))
        else:
            apply(setting.name, env[var], f"env {var}", textual=True)

    for name, raw in (flags or {}).items():
        if name not in SETTINGS_BY_NAME:
            problems.append(ConfigProblem("flag", name, "unknown setting"))
        else:
            apply(name, raw, f"flag {SETTINGS_BY_NAME[name].flag}", textual=True)

    for name, raw in (overrides or {}).items():
        if name not in SETTINGS_BY_NAME:
            problems.append(ConfigProblem("override", name, "unknown setting"))
        else:
            apply(name, raw, "override", textual=False)

    reported = {p.key for p in problems}
    for s in SETTINGS:
        if s.required and values[s.name] is None and s.name not in reported:
            problems.append(ConfigProblem(
                "config", s.name, f"required; set it in the config file, {s.env} or {s.flag}"))

    _resolve_derived(values, sources)
    problems.extend(_cross_checks(values, sources))
    if problems:
        raise ConfigError(problems)
    return ControllerConfig(
        **{s.attr: values[s.name] for s in SETTINGS},
        sources=types.MappingProxyType(dict(sources)),
    )


def _resolve_derived(values: dict[str, Any], sources: dict[str, str]) -> None:
    if values["zookeeper.connection.timeout.ms"] is None:
        values["zookeeper.connection.timeout.ms"] = values["zookeeper.session.timeout.ms"]
        sources["zookeeper.connection.timeout.ms"] = "default (= zookeeper.session.timeout.ms)"
    log_dir, scl = values["log.dir"], values["state.change.log.file"]
    if isinstance(log_dir, Path) and isinstance(scl, Path) and not scl.is_absolute():
        values["state.change.log.file"] = log_dir / scl


def _cross_checks(values: Mapping[str, Any], sources: Mapping[str, str]) -> list[ConfigProblem]:
    problems = []
    grpc, metrics = values["grpc.listen"], values["metrics.listen"]
    if isinstance(grpc, HostPort) and grpc == metrics and grpc.port != 0:
        problems.append(ConfigProblem(
            sources["metrics.listen"], "metrics.listen", f"same address as grpc.listen ({grpc})"))
    problems.extend(_security_checks(values, sources))
    return problems


def _security_checks(values: Mapping[str, Any], sources: Mapping[str, str]) -> list[ConfigProblem]:
    """Combinations that cannot work (file contents are checked when the daemon starts)."""
    problems = []

    def problem(key: str, message: str) -> None:
        problems.append(ConfigProblem(sources.get(key, "config"), key, message))

    scheme = values["zookeeper.auth.scheme"]
    inline = values["zookeeper.auth.credentials.value"]
    file = values["zookeeper.auth.credentials.file"]
    if scheme == "none" and (inline or file):
        problem("zookeeper.auth.scheme", "credentials are set but the scheme is none")
    if scheme != "none" and not (inline or file):
        problem("zookeeper.auth.credentials.file", f"required by zookeeper.auth.scheme={scheme}")
    if inline and file:
        problem("zookeeper.auth.credentials.value",
                "set this or zookeeper.auth.credentials.file, not both")  # fmt: skip
    if values["zookeeper.set.acl"] and scheme == "none":
        problem("zookeeper.set.acl", "needs ZooKeeper authentication (zookeeper.auth.scheme)")
    cert, key = values["grpc.tls.cert.file"], values["grpc.tls.key.file"]
    if (cert is None) != (key is None):
        problem("grpc.tls.key.file" if key is None else "grpc.tls.cert.file",
                "grpc.tls.cert.file and grpc.tls.key.file go together")  # fmt: skip
    mutual = values["grpc.tls.client.auth"] == "required"
    if mutual and (cert is None or values["grpc.tls.ca.file"] is None):
        problem("grpc.tls.client.auth", "required needs grpc.tls.cert.file, "
                "grpc.tls.key.file and grpc.tls.ca.file")  # fmt: skip
    for name in ("admin.allowed.principals", "broker.allowed.principals"):
        if values[name] is not None and not mutual:
            problem(name, "callers can only be identified with grpc.tls.client.auth=required")
    return problems


# -- command line -------------------------------------------------------------------------

_FLAG_DEST_PREFIX = "zkc_setting__"


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--config FILE`` and one ``--dotted-name-with-dashes VALUE`` flag per setting."""
    parser.add_argument("--config", metavar="FILE", help="TOML configuration file")
    group = parser.add_argument_group(
        "settings", "override the config file and ZKC_* environment variables")
    for s in SETTINGS:
        group.add_argument(
            s.flag, *FLAG_ALIASES.get(s.name, ()), dest=_FLAG_DEST_PREFIX + s.attr,
            metavar=s.kind.value.upper(), default=None, help=s.doc.replace("%", "%%"))


def flags_from_args(args: argparse.Namespace) -> dict[str, str]:
    return {
        s.name: value
        for s in SETTINGS
        if (value := getattr(args, _FLAG_DEST_PREFIX + s.attr, None)) is not None
    }


def load_config_from_args(
    args: argparse.Namespace, env: Mapping[str, str] | None = None
) -> ControllerConfig:
    return load_config(getattr(args, "config", None), env=env, flags=flags_from_args(args))


def changed_settings(old: ControllerConfig, new: ControllerConfig) -> tuple[Setting, ...]:
    """Settings whose value differs (for SIGHUP: restart needed unless all are dynamic)."""
    return tuple(s for s in SETTINGS if getattr(old, s.attr) != getattr(new, s.attr))


# -- rendering ----------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string here


def render_effective_config(cfg: ControllerConfig) -> str:
    """The effective config as TOML (pasteable into a file), each line with its source."""
    rows = []
    for s in SETTINGS:
        value = getattr(cfg, s.attr)
        if s.secret and value is not None:
            value = "********"
        left = f"# {s.name} is unset" if value is None else f"{s.name} = {_toml_value(value)}"
        rows.append((left, cfg.source(s.name)))
    width = max(len(left) for left, _ in rows)
    return "".join(f"{left:<{width}}  # {source}\n" for left, source in rows)


def _doc_default(s: Setting) -> str:
    if s.default_doc:
        return f"= `{s.default_doc}`"
    if s.default is None:
        return "required" if s.required else "unset"
    return f"`{_toml_value(s.default)}`"


def render_config_reference() -> str:
    """A Markdown reference of every setting, generated from ``SETTINGS``."""
    out = [
        "# zk-controller configuration reference",
        "",
        "Precedence, lowest first: defaults < TOML file (`--config FILE`) < environment "
        f"(`{ENV_PREFIX}*`; `ZK_CONNECT` is accepted for `zookeeper.connect`) < flags. "
        "TOML keys are the dotted names, flat (`\"zookeeper.connect\" = ...`) or nested "
        "(`[zookeeper]` / `connect = ...`). Dynamic settings can change on SIGHUP. "
        "Settings marked Kafka have Kafka's name, default and meaning.",
        "",
        "| Setting | Type | Default | Dynamic | Kafka | Environment | Flag | Description |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in SETTINGS:
        kind = " \\| ".join(s.choices) if s.choices else s.kind.value
        bounds = ""
        if s.min is not None or s.max is not None:
            lo, hi = ("" if b is None else str(b) for b in (s.min, s.max))
            bounds = f" ({lo}..{hi})"
        out.append(
            f"| `{s.name}` | {kind}{bounds} | {_doc_default(s)} | "
            f"{'yes' if s.dynamic else 'no'} | {'yes' if s.kafka else 'no'} | "
            f"`{s.env}` | `{s.flag}` | {s.doc} |"
        )
    return "\n".join(out) + "\n"


__all__ = [
    "DEFAULT_GRPC_LISTEN",
    "DEFAULT_METRICS_LISTEN",
    "SETTINGS",
    "SETTINGS_BY_NAME",
    "ConfigError",
    "ConfigProblem",
    "ControllerConfig",
    "HostPort",
    "Kind",
    "Setting",
    "add_config_arguments",
    "changed_settings",
    "flags_from_args",
    "load_config",
    "load_config_from_args",
    "parse_host_port",
    "parse_zookeeper_connect",
    "read_config_file",
    "render_config_reference",
    "render_effective_config",
]
