"""The loaded result (``ControllerConfig``), its problems, and what changed between two."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.config.addresses import HostPort, parse_zookeeper_connect
from controller.config.settings import SETTINGS, SETTINGS_BY_NAME, Setting


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """The effective configuration; attribute names are the dotted names with underscores."""

    controller_id: int
    zookeeper_connect: str
    zookeeper_session_timeout_ms: int
    zookeeper_connection_timeout_ms: int  # already resolved: never None
    zookeeper_max_in_flight_requests: int
    zookeeper_jute_maxbuffer: int
    auto_leader_rebalance_enable: bool
    leader_imbalance_check_interval_seconds: int
    leader_imbalance_per_broker_percentage: int
    unclean_leader_election_enable: bool
    delete_topic_enable: bool
    controller_socket_timeout_ms: int
    request_timeout_ms: int
    control_plane_listener_name: str | None
    controller_listener_name: str
    inter_broker_listener_name: str
    grpc_listen: HostPort
    grpc_max_workers: int
    metrics_listen: HostPort
    log_dir: Path
    log_level: str
    log_format: str
    state_change_log_file: Path  # already joined with log_dir
    state_change_log_max_bytes: int
    state_change_log_backups: int
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
    #: dotted name -> the config file whose different value the environment overrode: an
    #: exported ZK_CONNECT (as the admin tools are used) silently retargets a daemon.
    file_values_overridden: Mapping[str, str] = field(
        default_factory=dict, compare=False, repr=False
    )

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


#: ``ConfigProblem.key`` of a problem with a whole source (an unreadable file), not a setting.
WHOLE_SOURCE = "-"


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    source: str  # "file F", "env V", "flag --f", or "config" for cross-setting checks
    key: str
    message: str

    def __str__(self) -> str:
        # Named once: an environment variable is its own key ("env ZKC_X").
        if self.key == WHOLE_SOURCE or self.source.endswith(f" {self.key}"):
            return f"{self.source}: {self.message}"
        return f"{self.source}: {self.key}: {self.message}"


class ConfigError(Exception):
    """Every configuration problem found, reported together."""

    def __init__(self, problems: Iterable[ConfigProblem]) -> None:
        self.problems: tuple[ConfigProblem, ...] = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} configuration problem(s):\n{lines}")


# -- reload -------------------------------------------------------------------------------


def changed_settings(old: ControllerConfig, new: ControllerConfig) -> tuple[Setting, ...]:
    """Settings whose value differs (for SIGHUP: restart needed unless all are dynamic)."""
    return tuple(s for s in SETTINGS if getattr(old, s.attr) != getattr(new, s.attr))
