"""Command line: one ``--dotted-name-with-dashes`` flag per setting, plus ``--config FILE``."""

from __future__ import annotations

import argparse
import types
from collections.abc import Mapping

from controller.config.loading import load_config
from controller.config.model import ControllerConfig
from controller.config.settings import SETTINGS

#: Short flags kept from the CLI contract (``zk-controller run --zookeeper ...``).
FLAG_ALIASES: Mapping[str, tuple[str, ...]] = types.MappingProxyType(
    {"zookeeper.connect": ("--zookeeper",)}
)

_FLAG_DEST_PREFIX = "zkc_setting__"


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--config FILE`` and one ``--dotted-name-with-dashes VALUE`` flag per setting."""
    parser.add_argument("--config", metavar="FILE", help="TOML configuration file")
    group = parser.add_argument_group(
        "settings", "override the config file and ZKC_* environment variables")
    for s in SETTINGS:
        if s.secret:
            continue  # a flag's value is in argv, which `ps` shows to every user
        group.add_argument(
            s.flag, *FLAG_ALIASES.get(s.name, ()), dest=_FLAG_DEST_PREFIX + s.attr,
            metavar=s.kind.value.upper(), default=None, help=s.doc.replace("%", "%%"))


def flags_from_args(args: argparse.Namespace) -> dict[str, str]:
    return {
        s.name: value
        for s in SETTINGS
        if not s.secret
        and (value := getattr(args, _FLAG_DEST_PREFIX + s.attr, None)) is not None
    }


def load_config_from_args(
    args: argparse.Namespace, env: Mapping[str, str] | None = None
) -> ControllerConfig:
    return load_config(getattr(args, "config", None), env=env, flags=flags_from_args(args))

