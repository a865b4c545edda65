"""Topic configuration overrides (``/config/topics/T``): the names and value rules of Kafka
3.6's topic configs (``LogConfig``), checked before anything is written."""

from __future__ import annotations

import re
from collections.abc import Mapping

from controller.admin.assignment import AdminError


class InvalidConfigError(AdminError):
    """An unknown topic config name or a value Kafka would refuse."""


_INTEGER = re.compile(r"[+-]?[0-9]+")  # ASCII only, like Java's Integer.parseInt

# Kafka 3.6's topic configs (LogConfig): name -> (type, minimum or allowed values).
_I32, _I64 = (-(2**31), 2**31 - 1), (-(2**63), 2**63 - 1)
TOPIC_CONFIGS: Mapping[str, tuple[str, object]] = {
    "cleanup.policy": ("list", {"compact", "delete"}),
    "compression.type": ("choice", {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}),
    "delete.retention.ms": ("long", 0),
    "file.delete.delay.ms": ("long", 0),
    "flush.messages": ("long", 1),
    "flush.ms": ("long", 0),
    "follower.replication.throttled.replicas": ("string", None),
    "index.interval.bytes": ("int", 0),
    "leader.replication.throttled.replicas": ("string", None),
    "local.retention.bytes": ("long", -2),
    "local.retention.ms": ("long", -2),
    "max.compaction.lag.ms": ("long", 1),
    "max.message.bytes": ("int", 0),
    "message.downconversion.enable": ("bool", None),
    "message.format.version": ("string", None),
    "message.timestamp.after.max.ms": ("long", 0),
    "message.timestamp.before.max.ms": ("long", 0),
    "message.timestamp.difference.max.ms": ("long", 0),
    "message.timestamp.type": ("choice", {"CreateTime", "LogAppendTime"}),
    "min.cleanable.dirty.ratio": ("ratio", None),
    "min.compaction.lag.ms": ("long", 0),
    "min.insync.replicas": ("int", 1),
    "preallocate": ("bool", None),
    "remote.storage.enable": ("bool", None),
    "retention.bytes": ("long", None),
    "retention.ms": ("long", -1),
    "segment.bytes": ("int", 14),  # LegacyRecord.RECORD_OVERHEAD_V0
    "segment.index.bytes": ("int", 4),
    "segment.jitter.ms": ("long", 0),
    "segment.ms": ("long", 1),
    "unclean.leader.election.enable": ("bool", None),
}



def validate_topic_configs(configs: Mapping[str, str]) -> dict[str, str]:
    """Check names and values as Kafka's ``LogConfig.validate`` would; return a plain dict."""
    for name, value in configs.items():
        if name not in TOPIC_CONFIGS:
            raise InvalidConfigError(f"unknown topic config name: {name!r}")
        if type(value) is not str:
            raise InvalidConfigError(f"topic config {name}: value must be a string, got {value!r}")
        _check_config_value(name, value)
    return dict(configs)


def _check_config_value(name: str, value: str) -> None:
    kind, rule = TOPIC_CONFIGS[name]
    text = value.strip()
    expected = None
    if kind in ("int", "long"):
        lo, hi = _I32 if kind == "int" else _I64
        lo = rule if isinstance(rule, int) else lo
        if not (_INTEGER.fullmatch(text) and lo <= int(text) <= hi):
            expected = f"an integer in [{lo}, {hi}]"
    elif kind == "bool" and text.lower() not in ("true", "false"):
        expected = "true or false"
    elif kind == "ratio" and not _in_unit_interval(text):
        expected = "a number in [0, 1]"
    elif kind == "choice" and isinstance(rule, set) and text not in rule:
        expected = f"one of {', '.join(sorted(rule))}"
    elif kind == "list" and isinstance(rule, set):
        items = [i.strip() for i in text.split(",") if i.strip()]
        if not items or any(i not in rule for i in items):
            expected = f"a comma-separated list of {', '.join(sorted(rule))}"
    if expected is not None:
        raise InvalidConfigError(
            f"invalid value {value!r} for topic config {name}: expected {expected}"
        )


def _in_unit_interval(text: str) -> bool:
    try:
        return 0.0 <= float(text) <= 1.0
    except ValueError:
        return False
