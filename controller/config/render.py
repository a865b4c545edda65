"""Rendering: the effective config as annotated TOML, and the Markdown settings reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.config.model import ControllerConfig
from controller.config.settings import ENV_PREFIX, SETTINGS, Kind, Setting


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))  # a JSON string is a valid TOML basic string here


def _as_loaded(state_change_log: Path, log_dir: Path) -> Path:
    """The setting as written: loading joins a relative state.change.log.file to log.dir, so
    the joined path rendered as is would be joined again (``var/log/var/log/...``)."""
    try:
        return state_change_log.relative_to(log_dir)
    except ValueError:  # absolute, elsewhere
        return state_change_log


def render_effective_config(cfg: ControllerConfig) -> str:
    """The effective config as TOML (pasteable into a file), each line with its source."""
    rows = []
    for s in SETTINGS:
        value = getattr(cfg, s.attr)
        if s.name == "state.change.log.file":
            value = _as_loaded(value, cfg.log_dir)
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
        "A file value that the environment overrides with a different one is logged at start "
        '("a setting of the config file is overridden by the environment", naming the '
        "setting): a `ZK_CONNECT` exported for the admin tools would otherwise point a daemon "
        "run from a file at another cluster. "
        "TOML keys are the dotted names, flat (`\"zookeeper.connect\" = ...`) or nested "
        "(`[zookeeper]` / `connect = ...`). Dynamic settings can change on SIGHUP, "
        "which re-reads the file and the flags; the environment is the process's own, fixed "
        "at start, so a setting given there changes only with a restart. "
        "Settings marked Kafka have Kafka's name, default and meaning.",
        "",
        "| Setting | Type | Default | Dynamic | Kafka | Environment | Flag | Description |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in SETTINGS:
        kind = " \\| ".join(s.choices) if s.choices else s.kind.value
        bounds = ""
        if s.kind is Kind.INT and (s.min is not None or s.max is not None):
            lo, hi = ("" if b is None else str(b) for b in (s.min, s.max))
            bounds = f" ({lo}..{hi})"
        out.append(
            f"| `{s.name}` | {kind}{bounds} | {_doc_default(s)} | "
            f"{'yes' if s.dynamic else 'no'} | {'yes' if s.kafka else 'no'} | "
            f"`{s.env}` | {'none (a secret)' if s.secret else f'`{s.flag}`'} | {s.doc} |"
        )
    return "\n".join(out) + "\n"
