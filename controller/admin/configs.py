"""Config overrides over ZooKeeper, as Kafka's ``ConfigCommand --zookeeper`` (kafka-configs.sh)
writes them through ``AdminZkClient.changeTopicConfig`` / ``changeBrokerConfig``: a topic's
overrides (``/config/topics/T``), and the dynamic broker configs of the whole cluster
(``/config/brokers/<default>``) limited to the one a controller reads,
``unclean.leader.election.enable``. Per-broker entities configure brokers, not the controller,
and are left to Kafka's tool.

An alter reads the entity's config znode, applies the additions and deletions, and writes the
result together with a change notification (``/config/changes/config_change_N``,
``{"version":2,"entity_path":"topics/T"}`` or ``"brokers/<default>"``). The notification is
what tells brokers, and this controller (``controller.handlers.config_changes``: unclean
elections turned on), to read the config again.

One deliberate difference: Kafka writes the config and the notification as two requests, and
overwrites the config whatever happened since it read it. Here both go in one multi guarded by
the config znode's version, so a refused alter changes nothing, and two concurrent alters of one
topic do not lose each other's changes (the one that loses the race reads again and retries).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.admin.topic_configs import (
    InvalidConfigError,
    validate_topic_config_combination,
    validate_topic_configs,
)
from controller.admin.topic_errors import (
    ConcurrentModificationError,
    CorruptMetadataError,
    InvalidRequestError,
    UnknownTopicError,
)
from controller.admin.writes import commit, missing_parents
from controller.core.election import UNCLEAN_CONFIG
from controller.zk import codecs, paths
from controller.zk.codecs.key_order import java_properties_order, ordered
from controller.zk.errors import BadVersionError, MalformedZnodeError, NodeExistsError, NoNodeError
from controller.zk.port import Create, Op, ReadResult, SetData, ZkPort

TOPICS = paths.CONFIG_TYPE_TOPICS
BROKERS = paths.CONFIG_TYPE_BROKERS
DEFAULT = paths.CONFIG_DEFAULT_ENTITY
#: The dynamic broker configs set here for the whole cluster: the ones a controller reads.
BROKER_DEFAULT_CONFIGS = frozenset({UNCLEAN_CONFIG})
# A lost race (another alter of the same topic in between) is retried on a fresh read.
_WRITE_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class EntityConfig:
    """An entity's (a topic's, or ``<default>``) overrides; ``error`` names the problem when
    its znode is unreadable."""

    entity: str
    config: dict[str, str]
    error: str | None = None


def parse_config_list(text: str) -> dict[str, str]:
    """Kafka's ``--add-config`` syntax: ``k1=v1,k2=[v2a,v2b]``.

    Commas inside square brackets belong to the value; the brackets are dropped, so
    ``k2=[v2a,v2b]`` sets ``k2`` to ``v2a,v2b`` (how list configs are given).
    """
    entries: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            entries.append(text[start:i])
            start = i + 1
    entries.append(text[start:])
    configs: dict[str, str] = {}
    for entry in entries:
        pair = split_config_pair(entry)
        if pair is None:
            raise InvalidConfigError(
                f"invalid config {entry.strip()!r} in {text!r}: every config to add must be "
                "KEY=VALUE, with one '=' and a value (a list value in square brackets: "
                "KEY=[V1,V2])"
            )
        key, value = pair
        if len(value) >= 2 and value[0] == "[" and value[-1] == "]":
            value = value[1:-1].strip()
        if key in configs:
            raise InvalidConfigError(f"config {key!r} is given twice in {text!r}")
        configs[key] = value
    return configs


def split_config_pair(entry: str) -> tuple[str, str] | None:
    """``KEY=VALUE`` split as Kafka's tools split it (on ``=`` and the spaces around it), or
    None: they refuse anything but two parts, so ``k=a=b`` and, since Java's split drops a
    trailing empty string, ``k=`` too (an empty key is ours to refuse)."""
    parts = [part.strip() for part in entry.split("=")]
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def properties_order(configs: Mapping[str, str]) -> dict[str, str]:
    """``configs`` in the iteration order of a ``java.util.Properties`` holding them: the
    order in which Kafka's ConfigCommand adds its ``--add-config`` entries to a stored config
    (the admin API's incremental alters add theirs in request order: ``add``'s own)."""
    return ordered(configs, java_properties_order(configs))


def parse_config_names(text: str) -> list[str]:
    """Kafka's ``--delete-config`` syntax: ``k1,k2``."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise InvalidConfigError(
            f"invalid --delete-config {text!r}: expected config names separated by commas"
        )
    return list(dict.fromkeys(names))


def _topic_path(topic: str) -> str:
    try:
        return paths.topic_path(topic)
    except ValueError as exc:  # not a znode name at all
        raise InvalidRequestError(str(exc)) from None


def _decode(read: ReadResult, entity: str) -> EntityConfig:
    if isinstance(read.error, NoNodeError):
        return EntityConfig(entity, {})
    if read.error is not None:
        return EntityConfig(entity, {}, f"{read.path}: {read.error}")
    try:
        return EntityConfig(entity, codecs.decode_topic_config(read.data, read.path))
    except MalformedZnodeError as exc:
        return EntityConfig(entity, {}, str(exc))


def describe_topic_configs(
    port: ZkPort, topics: Sequence[str] | None = None
) -> list[EntityConfig]:
    """The overrides of ``topics`` (each must exist), or of every topic with a config znode."""
    if topics:
        names = list(dict.fromkeys(topics))
        for topic in names:
            topic_path = _topic_path(topic)  # first: it refuses a name that is no znode name
            config_path = paths.topic_config_path(topic)
            if port.exists(topic_path) is None and port.exists(config_path) is None:
                raise UnknownTopicError(f"topic '{topic}' does not exist")
    else:
        try:
            names = sorted(port.get_children(paths.CONFIG_TOPICS))
        except NoNodeError:
            names = []
    reads = port.get_many([paths.topic_config_path(t) for t in names])
    return [_decode(read, topic) for topic, read in zip(names, reads, strict=True)]


def describe_broker_default_config(port: ZkPort) -> EntityConfig:
    """The cluster-wide dynamic broker configs (``/config/brokers/<default>``)."""
    [read] = port.get_many([paths.BROKER_DEFAULT_CONFIG])
    return _decode(read, DEFAULT)


def _broker_order(name: str) -> tuple[bool, int, str]:
    """``<default>`` first, then broker ids by number (anything else last, by name)."""
    numeric = name.isascii() and name.isdigit()
    return (name != DEFAULT, int(name) if numeric else 2**31, name)


def describe_broker_configs(port: ZkPort, brokers: Sequence[str] = ()) -> list[EntityConfig]:
    """Per-broker dynamic configs (``/config/brokers/<id>``; reassignment throttles live
    there): of ``brokers`` (integer ids, as Kafka requires), or of every broker entity with a
    config znode, the default entity included."""
    if brokers:
        names = list(dict.fromkeys(brokers))
        for name in names:
            if not (name.isascii() and name.isdigit() and int(name) < 2**31):
                raise InvalidRequestError(
                    f"the entity name for brokers must be a valid integer broker id, got {name!r}"
                )
    else:
        try:
            names = sorted(port.get_children(paths.CONFIG_BROKERS), key=_broker_order)
        except NoNodeError:
            names = []
    reads = port.get_many([paths.config_entity_path(BROKERS, n) for n in names])
    return [_decode(read, name) for name, read in zip(names, reads, strict=True)]


def alter_topic_config(
    port: ZkPort,
    topic: str,
    add: Mapping[str, str] | None = None,
    delete: Sequence[str] = (),
) -> dict[str, str]:
    """Kafka's ``changeTopicConfig``: set ``add``, remove ``delete``; return the new overrides.

    Refused, with nothing written: an unknown topic, an unknown config name or a value Kafka
    would refuse (``InvalidConfigError``), deleting a config the topic does not set, a name
    both added and deleted, nothing to change, an unreadable config znode.
    """
    add, delete = _check_change(add, delete)
    validate_topic_configs(add)
    if port.exists(_topic_path(topic)) is None:
        raise UnknownTopicError(f"topic '{topic}' does not exist")
    return _alter(port, TOPICS, topic, paths.topic_config_path(topic), f"topic '{topic}'", add,
                  delete)  # fmt: skip


def alter_broker_default_config(
    port: ZkPort,
    add: Mapping[str, str] | None = None,
    delete: Sequence[str] = (),
    *,
    require_cluster: bool = True,
) -> dict[str, str]:
    """Kafka's ``changeBrokerConfig`` for the cluster default, limited to
    ``unclean.leader.election.enable``; refusals as ``alter_topic_config``'s, and, with
    ``require_cluster``, where no cluster has ever started (no ``/brokers/ids``)."""
    add, delete = _check_change(add, delete)
    for name in [*add, *delete]:
        if name not in BROKER_DEFAULT_CONFIGS:
            raise InvalidConfigError(
                f"{name!r} is not set here for the brokers' default: only "
                f"{', '.join(sorted(BROKER_DEFAULT_CONFIGS))}, the dynamic broker config a "
                "controller reads (set the others with kafka-configs.sh)"
            )
    validate_topic_configs(add)  # the same names and value rules as the topic configs
    if require_cluster:
        _require_cluster(port)
    return _alter(port, BROKERS, DEFAULT, paths.BROKER_DEFAULT_CONFIG, "the brokers' default",
                  add, delete)  # fmt: skip


def _require_cluster(port: ZkPort) -> None:
    """Refuse a cluster-wide write where no cluster lives: with the chroot left out of the
    connect string it would land beside the cluster, be read by nobody, and still report
    success. (A topic's configs need the topic, which says the same.)"""
    if port.exists(paths.BROKERS_IDS) is None:
        raise InvalidRequestError(
            f"no Kafka cluster here ({paths.BROKERS_IDS} does not exist): is the chroot "
            "missing from the connect string (e.g. zk1:2181/kafka)? A cluster's controller "
            "and brokers create it when they first start: start one first to configure a "
            "cluster that has never run"
        )


def alter_broker_config(port: ZkPort, broker_id: int, add: Mapping[str, str]) -> dict[str, str]:
    """Set dynamic configs of one broker (``/config/brokers/<id>``): here only the replication
    throttle rates a reassignment sets (``controller.admin.throttles``), non-negative longs."""
    for name, value in add.items():
        if not (value.isascii() and value.isdigit() and int(value) < 2**63):
            raise InvalidConfigError(f"invalid value {value!r} for {name}: not a long >= 0")
    return _alter(port, BROKERS, str(broker_id), paths.config_entity_path(BROKERS, str(broker_id)),
                  f"broker {broker_id}", dict(add), [])  # fmt: skip


def remove_broker_configs(port: ZkPort, broker_id: int, names: Sequence[str]) -> bool:
    """Remove those of ``names`` that broker ``broker_id`` sets; whether any was."""
    path = paths.config_entity_path(BROKERS, str(broker_id))
    return _remove(port, BROKERS, str(broker_id), path, f"broker {broker_id}", names)


def remove_topic_configs(port: ZkPort, topic: str, names: Sequence[str]) -> bool:
    """Remove those of ``names`` that ``topic`` sets; whether any was (a topic that no longer
    exists, or sets none of them, is left alone)."""
    path = paths.topic_config_path(topic)
    return _remove(port, TOPICS, topic, path, f"topic '{topic}'", names)


def _remove(
    port: ZkPort, entity_type: str, entity: str, path: str, label: str, names: Sequence[str]
) -> bool:
    before, _ = _read_config(port, path, label)
    if not any(name in before for name in names):
        return False
    after = _alter(port, entity_type, entity, path, label, {}, list(names), missing_ok=True)
    return after != before


def _check_change(
    add: Mapping[str, str] | None, delete: Sequence[str]
) -> tuple[dict[str, str], list[str]]:
    add_dict, delete_list = dict(add or {}), list(dict.fromkeys(delete))
    if not add_dict and not delete_list:
        raise InvalidRequestError("nothing to change: give configs to add or to delete")
    both = sorted(set(add_dict) & set(delete_list))
    if both:
        raise InvalidRequestError(f"config(s) both added and deleted: {', '.join(both)}")
    return add_dict, delete_list


def _read_config(port: ZkPort, path: str, label: str) -> tuple[dict[str, str], int | None]:
    """The overrides at ``path`` and the znode's version (None: no znode yet)."""
    try:
        data, stat = port.get(path)
    except NoNodeError:
        return {}, None
    try:
        return codecs.decode_topic_config(data, path), stat.version
    except MalformedZnodeError as exc:
        raise CorruptMetadataError(
            f"{exc}; the config of {label} cannot be altered until that znode is fixed or "
            "removed"
        ) from None


def _validate_kept(label: str, kept: Mapping[str, str]) -> None:
    """The stored configs an alter keeps, checked as Kafka's ``LogConfig.validate`` checks
    the whole result: one written by hand or by another tool, unknown or invalid, refuses the
    change until it is deleted or replaced (in the same command, if need be)."""
    for name, value in kept.items():
        try:
            validate_topic_configs({name: value})
        except InvalidConfigError as exc:
            raise InvalidConfigError(
                f"{label} stores a config Kafka would refuse ({exc}): delete it "
                f"(--delete-config {name}) or set a valid value in the same command"
            ) from None


def _alter(
    port: ZkPort,
    entity_type: str,
    entity: str,
    config_path: str,
    label: str,
    add: dict[str, str],
    delete: list[str],
    missing_ok: bool = False,
) -> dict[str, str]:
    """Apply the change on a fresh read, guarded by the znode's version; ``missing_ok``:
    deleting a config that is not set is no error, and no change writes nothing. The keys are
    written in Kafka's order: the stored ones, then ``add`` in its order, less ``delete``."""
    notification = Create(
        paths.CONFIG_CHANGE_CREATE_PATH,
        codecs.encode_config_change(entity_type, entity),
        sequential=True,
    )
    tried: dict[str, str] | None = None
    for _ in range(_WRITE_ATTEMPTS):
        current, version = _read_config(port, config_path, label)
        if tried is not None and version is not None and current == tried:
            # What we wrote is there: our multi committed, and its reply was lost (the resend
            # met its own write). Its notification went with it.
            return tried
        not_set = [name for name in delete if name not in current]
        if missing_ok:
            if not add and len(not_set) == len(delete):
                return current
            not_set = []
        if not_set:
            raise InvalidConfigError(
                f"cannot delete config(s) that {label} does not set: {', '.join(not_set)}"
            )
        new = {k: v for k, v in current.items() if k not in delete} | add
        if entity_type == TOPICS:
            if add:  # a removal only ever takes a problem away
                _validate_kept(label, {k: v for k, v in new.items() if k not in add})
            validate_topic_config_combination(new)  # on the result, as Kafka validates it
        data = codecs.encode_topic_config(new, inserted=[*current, *add])
        seen: set[str] = set()
        ops: list[Op] = (
            [*missing_parents(port, config_path, seen), Create(config_path, data)]
            if version is None
            else [SetData(config_path, data, version)]
        )
        ops += [*missing_parents(port, notification.path, seen), notification]
        failure = commit(port, ops)
        if failure is None:
            return new
        _, error = failure
        if not isinstance(error, BadVersionError | NodeExistsError | NoNodeError):
            raise error
        tried = new
        # The config znode changed (or appeared, or went) since it was read: read again.
    raise ConcurrentModificationError(
        f"could not alter the config of {label}: its config znode kept changing; nothing was "
        "written"
    )
