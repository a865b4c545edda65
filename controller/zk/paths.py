"""Kafka's ZooKeeper paths (reference §1.3), relative to the chroot, as constants and builders.

The names mirror Kafka's ``ZkData`` objects (``TopicPartitionStateZNode.path`` ->
``partition_state_path``). Builders only check that a name cannot escape its parent znode
(no empty names, no ``/``, no ``.``/``..``): topics already in ZooKeeper may predate Kafka's
current naming rules and must stay addressable. Full Kafka topic-name validation, for topics
being *created*, is ``validate_topic_name``.
"""

from __future__ import annotations

import re

from controller.core.model import TopicPartition

# Top-level znodes.
ADMIN = "/admin"
BROKERS = "/brokers"
CONFIG = "/config"
CLUSTER = "/cluster"
CLUSTER_ID = "/cluster/id"
CONSUMERS = "/consumers"  # the old consumer path: Kafka still creates it at startup
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
FEATURE = "/feature"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
MIGRATION = "/migration"

# Our own (not Kafka's): where each controller node advertises its gRPC and metrics endpoints,
# so admin tools can reach the active controller named in /controller. Kafka's tools ignore it.
CONTROLLER_ENDPOINTS = "/zk-controller/controllers"


def controller_endpoint_path(controller_id: int) -> str:
    return f"{CONTROLLER_ENDPOINTS}/{controller_id}"


# Brokers and topics.
BROKERS_IDS = "/brokers/ids"
BROKERS_TOPICS = "/brokers/topics"
BROKERS_SEQID = "/brokers/seqid"

# Admin requests.
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"

# Notifications (children are persistent sequential znodes: prefix + 10 digits).
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"

# Config entity types (Kafka's ConfigType.all at 3.6, in Kafka's order).
CONFIG_TYPE_TOPICS = "topics"
CONFIG_TYPE_CLIENTS = "clients"
CONFIG_TYPE_USERS = "users"
CONFIG_TYPE_BROKERS = "brokers"
CONFIG_TYPE_IPS = "ips"
CONFIG_TYPES: tuple[str, ...] = (
    CONFIG_TYPE_TOPICS,
    CONFIG_TYPE_CLIENTS,
    CONFIG_TYPE_USERS,
    CONFIG_TYPE_BROKERS,
    CONFIG_TYPE_IPS,
)
CONFIG_TOPICS = "/config/topics"
CONFIG_CLIENTS = "/config/clients"
CONFIG_USERS = "/config/users"
CONFIG_BROKERS = "/config/brokers"
CONFIG_IPS = "/config/ips"
# Kafka's ConfigEntityName.Default: the entity of cluster-wide defaults (kafka-configs.sh
# --entity-default). The brokers' one holds dynamic broker configs for the whole cluster.
CONFIG_DEFAULT_ENTITY = "<default>"
BROKER_DEFAULT_CONFIG = f"{CONFIG_BROKERS}/{CONFIG_DEFAULT_ENTITY}"

# Kafka's ZkData.PersistentZkPaths, in Kafka's order: created (if absent) at startup.
PERSISTENT_PATHS: tuple[str, ...] = (
    CONSUMERS,
    BROKERS_IDS,
    BROKERS_TOPICS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    BROKERS_SEQID,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
    *(f"{CONFIG}/{t}" for t in CONFIG_TYPES),
)

# Kafka's topic naming rules (org.apache.kafka.common.internals.Topic).
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
_ILLEGAL_TOPIC_CHAR = re.compile(r"[^a-zA-Z0-9._-]")
# ZooKeeper sequential suffix: %010d of a signed 32-bit counter (negative once it overflows).
_SEQUENCE = re.compile(r"-?[0-9]{10}")


class InvalidTopicError(ValueError):
    """A topic name that Kafka would refuse (``InvalidTopicException``)."""


def validate_topic_name(topic: str) -> str:
    """Return ``topic`` if Kafka accepts it as a topic name, else raise ``InvalidTopicError``."""
    if not isinstance(topic, str) or not topic:
        raise InvalidTopicError(f"topic name {topic!r} is illegal: it must be a non-empty string")
    if topic in (".", ".."):
        raise InvalidTopicError(f'topic name {topic!r} is illegal: it cannot be "." or ".."')
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"topic name {topic[:20]!r}... is illegal: it is {len(topic)} characters long, "
            f"the maximum is {MAX_TOPIC_NAME_LENGTH}"
        )
    if _LEGAL_TOPIC.fullmatch(topic) is None:
        bad = _ILLEGAL_TOPIC_CHAR.search(topic)
        assert bad is not None
        raise InvalidTopicError(
            f"topic name {topic!r} is illegal: character {bad.group()!r} at index {bad.start()} "
            "is not one of ASCII letters, digits, '.', '_' and '-'"
        )
    return topic


def has_collision_chars(topic: str) -> bool:
    """Kafka warns about topics using both '.' and '_': they collide in metric names."""
    return "." in topic or "_" in topic


def is_znode_name(name: str) -> bool:
    """Whether ``name`` can be one path segment: a structural check, not Kafka's naming rules
    (names written by other tools must stay addressable)."""
    return (
        bool(name) and "/" not in name and name not in (".", "..")
        and (name.isascii() or _utf8_encodable(name))
    )  # fmt: skip


def _utf8_encodable(name: str) -> bool:
    # A lone surrogate (from a JSON escape) has no UTF-8 form: no request could carry it.
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refused_in_zookeeper_paths(ch: str) -> bool:
    # ZooKeeper's PathUtils.validatePath, on Java's UTF-16: controls, the surrogate and private
    # use range (so every character beyond the BMP, a surrogate pair in Java), U+FFF0-U+FFFF.
    c = ord(ch)
    return c <= 0x1F or 0x7F <= c <= 0x9F or 0xD800 <= c <= 0xF8FF or c >= 0xFFF0


def zookeeper_path_problem(path: str) -> str | None:
    """Why ZooKeeper (or kazoo, which cannot send it) would refuse ``path``, else None."""
    for segment in path.split("/")[1:]:
        if segment in (".", ".."):
            return f"relative segment {segment!r}"
    bad = next((ch for ch in path if _refused_in_zookeeper_paths(ch)), None)
    if bad is not None:
        return f"character {bad!a} is not allowed in a ZooKeeper path"
    return None


def _segment(name: str, what: str) -> str:
    # Cheap structural guard so a name can never address another znode.
    if not is_znode_name(name):
        raise ValueError(f"{what} {name!r} cannot be used as a znode name")
    return name


def _non_negative(value: int, what: str) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def broker_path(broker_id: int) -> str:
    return f"{BROKERS_IDS}/{_non_negative(broker_id, 'broker id')}"


def topic_path(topic: str) -> str:
    return f"{BROKERS_TOPICS}/{_segment(topic, 'topic')}"


def topic_partitions_path(topic: str) -> str:
    return f"{BROKERS_TOPICS}/{_segment(topic, 'topic')}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return (
        f"{BROKERS_TOPICS}/{_segment(topic, 'topic')}/partitions/"
        f"{_non_negative(partition, 'partition id')}"
    )


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partition_path(topic, partition)}/state"


def partition_path_of(tp: TopicPartition) -> str:
    return partition_path(tp.topic, tp.partition)


def state_path(tp: TopicPartition) -> str:
    """``/brokers/topics/T/partitions/P/state`` for a TopicPartition."""
    return partition_path(tp.topic, tp.partition) + "/state"


_STATE_PATH = re.compile(r"/brokers/topics/([^/]+)/partitions/(0|[1-9][0-9]*)/state")


def parse_state_path(path: str) -> TopicPartition | None:
    """The partition a state znode path names, or None if ``path`` is not a state path."""
    m = _STATE_PATH.fullmatch(path)
    return TopicPartition(m.group(1), int(m.group(2))) if m else None


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{_segment(topic, 'topic')}"


def config_entity_path(entity_type: str, entity: str) -> str:
    return f"{CONFIG}/{_segment(entity_type, 'config entity type')}/{_segment(entity, 'entity')}"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{_segment(topic, 'topic')}"


def _sequence_child(parent: str, prefix: str, seq: int | str) -> str:
    # An int is formatted as ZooKeeper does; a str is the suffix exactly as listed.
    suffix = f"{seq:010d}" if isinstance(seq, int) else _segment(seq, "sequence suffix")
    return f"{parent}/{prefix}{suffix}"


def isr_change_path(seq: int | str) -> str:
    return _sequence_child(ISR_CHANGE_NOTIFICATION, ISR_CHANGE_PREFIX, seq)


def log_dir_event_path(seq: int | str) -> str:
    return _sequence_child(LOG_DIR_EVENT_NOTIFICATION, LOG_DIR_EVENT_PREFIX, seq)


def config_change_path(seq: int | str) -> str:
    return _sequence_child(CONFIG_CHANGES, CONFIG_CHANGE_PREFIX, seq)


# Paths to pass to a sequential create: ZooKeeper appends the 10-digit counter.
ISR_CHANGE_CREATE_PATH = f"{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}"
LOG_DIR_EVENT_CREATE_PATH = f"{LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}"
CONFIG_CHANGE_CREATE_PATH = f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}"


def parse_sequence_number(name: str, prefix: str) -> int:
    """The counter of a sequential child such as ``isr_change_0000000042`` (-> 42).

    ``name`` is a child name as ``get_children`` returns it (a full path is also accepted: only
    its last segment is used). The suffix must be exactly ZooKeeper's: 10 digits, or ``-`` and
    10 digits once the parent's signed 32-bit counter has overflowed. Raises ValueError.
    """
    child = name.rpartition("/")[2]
    if not child.startswith(prefix):
        raise ValueError(f"znode name {name!r} does not start with {prefix!r}")
    suffix = child[len(prefix) :]
    if _SEQUENCE.fullmatch(suffix) is None:
        raise ValueError(
            f"znode name {name!r}: sequence suffix {suffix!r} is not ZooKeeper's 10-digit counter"
        )
    return int(suffix)
