"""Kafka's znode formats (reference §1.4): encoders and strict decoders.

Modules by concern; import the names from this package (``codecs.encode_topic_assignment``):

- ``_json``: strict JSON parsing and the field checks every decoder shares;
- ``controller``: ``/controller`` and ``/controller_epoch``;
- ``brokers``: ``/brokers/ids/N`` registrations;
- ``topics``: topic assignments, partition states, topic configs;
- ``admin``: legacy admin requests (reassignment, preferred election) and notifications;
- ``cluster``: ``/feature`` and ``/latest_producer_id_block``.

Encoders write exactly what Kafka's Jackson writes: compact separators, non-ASCII as raw UTF-8,
keys in the order of the reference's examples, numbers as strings where Kafka uses strings
(pitfall 25). Encoders trust the model they are given.

Decoders are stricter than Kafka about shape and types: every problem raises
``MalformedZnodeError(path, problem)`` whose problem names the field, and the caller decides
what to do (log and skip, treat as empty...). They do not check controller semantics (e.g.
reassignment invariants), which Kafka does not check either. Unknown fields are ignored, as
Kafka's readers do, except in ``/admin/reassign_partitions`` (Kafka's strict mapper). Duplicate
JSON keys keep the last value, as Jackson does. Decoding runs for every partition at failover,
so each decoder parses once and does cheap type checks, building error text only on failure.
"""

from controller.zk.codecs._json import (
    INT16_MAX,
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    MAX_ZNODE_BYTES,
)
from controller.zk.codecs.admin import (
    LOG_DIR_FAILURE_EVENT,
    ReassignmentRequest,
    decode_config_change,
    decode_isr_change_notification,
    decode_log_dir_event,
    decode_preferred_replica_election,
    decode_reassignment,
    decode_reassignment_request,
    encode_config_change,
    encode_isr_change_notification,
    encode_log_dir_event,
    encode_preferred_replica_election,
    encode_reassignment,
)
from controller.zk.codecs.brokers import (
    SECURITY_PROTOCOLS,
    BrokerRegistration,
    decode_broker,
    decode_broker_registration,
    encode_broker_registration,
)
from controller.zk.codecs.cluster import (
    FEATURE_STATUS_DISABLED,
    FEATURE_STATUS_ENABLED,
    PRODUCER_ID_BLOCK_SIZE,
    FeatureZNode,
    ProducerIdBlock,
    decode_feature_znode,
    decode_producer_id_block,
    encode_feature_znode,
    encode_producer_id_block,
)
from controller.zk.codecs.controller import (
    ControllerRegistration,
    decode_controller,
    decode_controller_epoch,
    decode_controller_full,
    encode_controller,
    encode_controller_epoch,
)
from controller.zk.codecs.topics import (
    TopicAssignmentSize,
    decode_partition_state,
    decode_topic_assignment,
    decode_topic_config,
    encode_partition_state,
    encode_topic_assignment,
    encode_topic_config,
)

__all__ = [
    "FEATURE_STATUS_DISABLED",
    "FEATURE_STATUS_ENABLED",
    "INT16_MAX",
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "LOG_DIR_FAILURE_EVENT",
    "MAX_ZNODE_BYTES",
    "PRODUCER_ID_BLOCK_SIZE",
    "SECURITY_PROTOCOLS",
    "BrokerRegistration",
    "ControllerRegistration",
    "FeatureZNode",
    "ProducerIdBlock",
    "ReassignmentRequest",
    "TopicAssignmentSize",
    "decode_broker",
    "decode_broker_registration",
    "decode_config_change",
    "decode_controller",
    "decode_controller_epoch",
    "decode_controller_full",
    "decode_feature_znode",
    "decode_isr_change_notification",
    "decode_log_dir_event",
    "decode_partition_state",
    "decode_preferred_replica_election",
    "decode_producer_id_block",
    "decode_reassignment",
    "decode_reassignment_request",
    "decode_topic_assignment",
    "decode_topic_config",
    "encode_broker_registration",
    "encode_config_change",
    "encode_controller",
    "encode_controller_epoch",
    "encode_feature_znode",
    "encode_isr_change_notification",
    "encode_log_dir_event",
    "encode_partition_state",
    "encode_preferred_replica_election",
    "encode_producer_id_block",
    "encode_reassignment",
    "encode_topic_assignment",
    "encode_topic_config",
]
