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
    "follower.replication.throttled.replicas": ("throttled", None),
    "index.interval.bytes": ("int", 0),
    "leader.replication.throttled.replicas": ("throttled", None),
    "local.retention.bytes": ("long", -2),
    "local.retention.ms": ("long", -2),
    "max.compaction.lag.ms": ("long", 1),
    "max.message.bytes": ("int", 0),
    "message.downconversion.enable": ("bool", None),
    "message.format.version": ("version", None),
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



# Kafka 3.6's inter-broker protocol versions (MetadataVersion), the values
# message.format.version takes: each release with its internal versions ("" for none).
_RELEASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("0.8.0", ("",)), ("0.8.1", ("",)), ("0.8.2", ("",)), ("0.9.0", ("",)),
    ("0.10.0", ("IV0", "IV1")), ("0.10.1", ("IV0", "IV1", "IV2")), ("0.10.2", ("IV0",)),
    ("0.11.0", ("IV0", "IV1", "IV2")), ("1.0", ("IV0",)), ("1.1", ("IV0",)),
    ("2.0", ("IV0", "IV1")), ("2.1", ("IV0", "IV1", "IV2")), ("2.2", ("IV0", "IV1")),
    ("2.3", ("IV0", "IV1")), ("2.4", ("IV0", "IV1")), ("2.5", ("IV0",)), ("2.6", ("IV0",)),
    ("2.7", ("IV0", "IV1", "IV2")), ("2.8", ("IV0", "IV1")), ("3.0", ("IV0", "IV1")),
    ("3.1", ("IV0",)), ("3.2", ("IV0",)), ("3.3", ("IV0", "IV1", "IV2", "IV3")),
    ("3.4", ("IV0",)), ("3.5", ("IV0", "IV1", "IV2")), ("3.6", ("IV0", "IV1", "IV2")),
)  # fmt: skip
_VERSIONS = frozenset(
    [release for release, _ in _RELEASES]
    + [f"{release}-{sub}" for release, subs in _RELEASES for sub in subs if sub]
)
_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")
_JAVA_DOUBLE = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?")


def _is_version(text: str) -> bool:
    """Kafka's ``MetadataVersion.fromVersionString``: only the first segments count (three
    for "0.x" versions, two otherwise), so "3.6.1" is "3.6"."""
    segments = text.split(".")
    while segments and not segments[-1]:
        segments.pop()  # Java's String.split drops trailing empty strings: "3.6." stays whole
    wanted = 3 if text.startswith("0.") else 2
    key = text if wanted >= len(segments) else ".".join(segments[:wanted])
    return key in _VERSIONS


def _list(text: str) -> list[str]:
    """A ConfigDef LIST: empty for blank text, else split on commas; empty items are kept."""
    return [] if not text else re.split(r"\s*,\s*", text)


def validate_topic_configs(configs: Mapping[str, str]) -> dict[str, str]:
    """Check names and values as Kafka's ``LogConfig.validate`` would; return a plain dict."""
    for name, value in configs.items():
        if name not in TOPIC_CONFIGS:
            raise InvalidConfigError(f"unknown topic config name: {name!r}")
        if type(value) is not str:
            raise InvalidConfigError(f"topic config {name}: value must be a string, got {value!r}")
        _check_config_value(name, value)
    return dict(configs)


def validate_topic_config_combination(configs: Mapping[str, str]) -> None:
    """Kafka's ``LogConfig.validateValues`` on a topic's whole set of overrides (the broker
    defaults for the rest): the compaction lags must not cross."""
    # The stored values may predate our checks (an old tool, a hand edit): validate the
    # result as a whole, as Kafka's LogConfig.validate does, before comparing them.
    for name in ("min.compaction.lag.ms", "max.compaction.lag.ms"):
        if name in configs:
            _check_config_value(name, configs[name])
    low = int(configs.get("min.compaction.lag.ms", "0").strip())
    high = int(configs.get("max.compaction.lag.ms", str(2**63 - 1)).strip())
    if low > high:
        raise InvalidConfigError(
            "conflicting topic configs: min.compaction.lag.ms "
            f"({low}) > max.compaction.lag.ms ({high})"
        )


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
        if any(item not in rule for item in _list(text)):
            expected = f"a comma-separated list of {', '.join(sorted(rule))}"
    elif kind == "throttled":
        items = _list(text)
        # Kafka's ThrottledReplicaListValidator: all pairs, or the items together just "*".
        pairs = all(_THROTTLED_REPLICA.fullmatch(i) for i in items)
        if not ("".join(items).strip() == "*" or pairs):
            expected = "* or a comma-separated list of partition:broker pairs"
    elif kind == "version" and not _is_version(text):
        expected = "a Kafka version (e.g. 3.6, 2.8-IV1)"
    if expected is not None:
        raise InvalidConfigError(
            f"invalid value {value!r} for topic config {name}: expected {expected}"
        )


def _in_unit_interval(text: str) -> bool:
    # Java's Double.parseDouble, not Python's float: no "0.2_5"; a trailing d or f is allowed.
    if not _JAVA_DOUBLE.fullmatch(text):
        return False
    return 0.0 <= float(text.rstrip("dDfF")) <= 1.0
