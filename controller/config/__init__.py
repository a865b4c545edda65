"""Configuration: one declarative table, four layers, one immutable ``ControllerConfig``.

Every setting is declared once in ``SETTINGS`` (name, type, default, validation, doc). Where
Kafka has the setting, the name and default are Kafka's dotted ones (reference §5.2), so an
operator's ``server.properties`` knowledge carries over.

Precedence, lowest first: built-in defaults < TOML file (``--config FILE``; keys are the dotted
names, written flat or as nested tables) < environment (``ZKC_`` + the name upper-cased with
dots turned into underscores; ``ZK_CONNECT`` is also accepted) < command-line flags (``--`` +
the name with dots turned into dashes). Validation collects every problem, each with its
source and key, and raises them together in one ``ConfigError``.

Split by concern: ``addresses`` (value types), ``settings`` (the table), ``model`` (the result,
its errors and SIGHUP diffing), ``loading`` (layering and cross-checks), ``cmdline`` (flags)
and ``render`` (effective config and reference). Import from ``controller.config``.
"""

from __future__ import annotations

# ``X as X``: public before the split but never in ``__all__``; re-exported without adding them.
from controller.config.addresses import (
    HostPort,
    canonical_zookeeper_connect,
    format_zookeeper_connect,
    parse_host_port,
    parse_zookeeper_connect,
)
from controller.config.cmdline import FLAG_ALIASES as FLAG_ALIASES
from controller.config.cmdline import (
    add_config_arguments,
    flags_from_args,
    load_config_from_args,
)
from controller.config.loading import ENV_ALIASES as ENV_ALIASES
from controller.config.loading import load_config, read_config_file
from controller.config.model import (
    ConfigError,
    ConfigProblem,
    ControllerConfig,
    changed_settings,
)
from controller.config.render import render_config_reference, render_effective_config
from controller.config.settings import (
    DEFAULT_GRPC_LISTEN,
    DEFAULT_METRICS_LISTEN,
    SETTINGS,
    SETTINGS_BY_NAME,
    Kind,
    Setting,
)
from controller.config.settings import ENV_PREFIX as ENV_PREFIX

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
    "canonical_zookeeper_connect",
    "changed_settings",
    "flags_from_args",
    "format_zookeeper_connect",
    "load_config",
    "load_config_from_args",
    "parse_host_port",
    "parse_zookeeper_connect",
    "read_config_file",
    "render_config_reference",
    "render_effective_config",
]
