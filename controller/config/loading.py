"""Loading: defaults < TOML file < environment < flags, then derived values and cross-checks."""

from __future__ import annotations

import os
import tomllib
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from controller.config.addresses import HostPort
from controller.config.model import WHOLE_SOURCE, ConfigError, ConfigProblem, ControllerConfig
from controller.config.settings import (
    _SETTINGS_BY_ENV,
    ENV_PREFIX,
    SETTINGS,
    SETTINGS_BY_NAME,
)
from controller.security.acls import credentials_problem
from controller.security.authz import ENV_CONTROLLER_ALLOWED_PRINCIPALS

#: ZKC_* variables read by other processes of the cluster (one environment serves them all).
OTHER_PROCESSES_ENV = frozenset({ENV_CONTROLLER_ALLOWED_PRINCIPALS})

#: Conventional variable for the connect string (as in many ZooKeeper tools); ``ZKC_`` wins.
ENV_ALIASES: Mapping[str, str] = types.MappingProxyType({"ZK_CONNECT": "zookeeper.connect"})


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
        return {}, [ConfigProblem(source, WHOLE_SOURCE, f"cannot read: {exc.strerror or exc}")]
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.start + 1].hex()
        problem = f"not UTF-8: byte 0x{bad} at offset {exc.start}"
        return {}, [ConfigProblem(source, WHOLE_SOURCE, problem)]
    except tomllib.TOMLDecodeError as exc:
        # Kafka's operators know server.properties (key=value, strings unquoted): say so.
        hint = 'settings are TOML, strings quoted: zookeeper.connect = "zk1:2181/kafka"'
        return {}, [ConfigProblem(source, WHOLE_SOURCE, f"invalid TOML: {exc} ({hint})")]
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

    from_file: dict[str, Any] = {}
    file_unread = False  # then "required" would only repeat the file's own problem
    if config_file is not None:
        file_values, file_problems = read_config_file(config_file)
        problems.extend(file_problems)
        file_unread = any(p.key == WHOLE_SOURCE for p in file_problems)
        for name, raw in file_values.items():
            apply(name, raw, f"file {os.fspath(config_file)}", textual=False)
            if sources[name].startswith("file "):
                from_file[name] = values[name]

    for var, name in ENV_ALIASES.items():
        if var in env:
            apply(name, env[var], f"env {var}", textual=True)
    for var in sorted(env):
        if not var.startswith(ENV_PREFIX):
            continue
        setting = _SETTINGS_BY_ENV.get(var)
        if setting is None and var in OTHER_PROCESSES_ENV:
            continue  # the reference broker's, in an environment shared with it
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
        if s.required and values[s.name] is None and s.name not in reported and not file_unread:
            problems.append(ConfigProblem(
                "config", s.name, f"required; set it in the config file, {s.env} or {s.flag}"))

    file_name = os.fspath(config_file) if config_file is not None else ""
    overridden = {
        name: file_name
        for name, value in from_file.items()
        if sources[name].startswith("env ") and values[name] != value
    }
    _resolve_derived(values, sources)
    problems.extend(_cross_checks(values, sources))
    if problems:
        raise ConfigError(problems)
    return ControllerConfig(
        **{s.attr: values[s.name] for s in SETTINGS},
        sources=types.MappingProxyType(dict(sources)),
        file_values_overridden=types.MappingProxyType(overridden),
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
    if isinstance(grpc, HostPort) and isinstance(metrics, HostPort) and _overlap(grpc, metrics):
        where = "" if grpc == metrics else ", on an interface both would bind"
        problems.append(ConfigProblem(
            sources["metrics.listen"], "metrics.listen",
            f"same port as grpc.listen ({grpc}){where}"))
    problems.extend(_security_checks(values, sources))
    return problems


def _overlap(a: HostPort, b: HostPort) -> bool:
    """Whether two listeners would contend for one port: a configuration error (exit 2, not
    a start that fails and is retried for ever). "::" (dual-stack) and "" take the port on
    every interface, "0.0.0.0" on every IPv4 one."""
    if a.port != b.port or a.port == 0:
        return False
    if a.host == b.host or {a.host, b.host} & {"", "::"}:
        return True
    other = b.host if a.host == "0.0.0.0" else a.host if b.host == "0.0.0.0" else None
    return other is not None and ":" not in other


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
    elif inline:
        reason = credentials_problem(inline)  # never holds the secret
        if reason is not None:
            problem("zookeeper.auth.credentials.value", reason)
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
