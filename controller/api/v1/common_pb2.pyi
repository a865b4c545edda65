from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NONE: _ClassVar[ErrorCode]
    UNKNOWN_SERVER_ERROR: _ClassVar[ErrorCode]
    UNKNOWN_TOPIC_OR_PARTITION: _ClassVar[ErrorCode]
    LEADER_NOT_AVAILABLE: _ClassVar[ErrorCode]
    NOT_LEADER_OR_FOLLOWER: _ClassVar[ErrorCode]
    REQUEST_TIMED_OUT: _ClassVar[ErrorCode]
    BROKER_NOT_AVAILABLE: _ClassVar[ErrorCode]
    REPLICA_NOT_AVAILABLE: _ClassVar[ErrorCode]
    STALE_CONTROLLER_EPOCH: _ClassVar[ErrorCode]
    NETWORK_EXCEPTION: _ClassVar[ErrorCode]
    INVALID_TOPIC_EXCEPTION: _ClassVar[ErrorCode]
    CLUSTER_AUTHORIZATION_FAILED: _ClassVar[ErrorCode]
    UNSUPPORTED_VERSION: _ClassVar[ErrorCode]
    TOPIC_ALREADY_EXISTS: _ClassVar[ErrorCode]
    INVALID_PARTITIONS: _ClassVar[ErrorCode]
    INVALID_REPLICATION_FACTOR: _ClassVar[ErrorCode]
    INVALID_REPLICA_ASSIGNMENT: _ClassVar[ErrorCode]
    INVALID_CONFIG: _ClassVar[ErrorCode]
    NOT_CONTROLLER: _ClassVar[ErrorCode]
    INVALID_REQUEST: _ClassVar[ErrorCode]
    POLICY_VIOLATION: _ClassVar[ErrorCode]
    OPERATION_NOT_ATTEMPTED: _ClassVar[ErrorCode]
    KAFKA_STORAGE_ERROR: _ClassVar[ErrorCode]
    LOG_DIR_NOT_FOUND: _ClassVar[ErrorCode]
    REASSIGNMENT_IN_PROGRESS: _ClassVar[ErrorCode]
    LISTENER_NOT_FOUND: _ClassVar[ErrorCode]
    TOPIC_DELETION_DISABLED: _ClassVar[ErrorCode]
    FENCED_LEADER_EPOCH: _ClassVar[ErrorCode]
    UNKNOWN_LEADER_EPOCH: _ClassVar[ErrorCode]
    STALE_BROKER_EPOCH: _ClassVar[ErrorCode]
    PREFERRED_LEADER_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ELIGIBLE_LEADERS_NOT_AVAILABLE: _ClassVar[ErrorCode]
    ELECTION_NOT_NEEDED: _ClassVar[ErrorCode]
    NO_REASSIGNMENT_IN_PROGRESS: _ClassVar[ErrorCode]
    INVALID_UPDATE_VERSION: _ClassVar[ErrorCode]
    FEATURE_UPDATE_FAILED: _ClassVar[ErrorCode]
    UNKNOWN_TOPIC_ID: _ClassVar[ErrorCode]
    BROKER_ID_NOT_REGISTERED: _ClassVar[ErrorCode]
    INCONSISTENT_TOPIC_ID: _ClassVar[ErrorCode]
    INELIGIBLE_REPLICA: _ClassVar[ErrorCode]
    NEW_LEADER_ELECTED: _ClassVar[ErrorCode]

class LeaderRecoveryState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LEADER_RECOVERY_STATE_RECOVERED: _ClassVar[LeaderRecoveryState]
    LEADER_RECOVERY_STATE_RECOVERING: _ClassVar[LeaderRecoveryState]

class RequestType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REQUEST_TYPE_UNKNOWN: _ClassVar[RequestType]
    REQUEST_TYPE_INCREMENTAL: _ClassVar[RequestType]
    REQUEST_TYPE_FULL: _ClassVar[RequestType]

class SecurityProtocol(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SECURITY_PROTOCOL_PLAINTEXT: _ClassVar[SecurityProtocol]
    SECURITY_PROTOCOL_SSL: _ClassVar[SecurityProtocol]
    SECURITY_PROTOCOL_SASL_PLAINTEXT: _ClassVar[SecurityProtocol]
    SECURITY_PROTOCOL_SASL_SSL: _ClassVar[SecurityProtocol]
NONE: ErrorCode
UNKNOWN_SERVER_ERROR: ErrorCode
UNKNOWN_TOPIC_OR_PARTITION: ErrorCode
LEADER_NOT_AVAILABLE: ErrorCode
NOT_LEADER_OR_FOLLOWER: ErrorCode
REQUEST_TIMED_OUT: ErrorCode
BROKER_NOT_AVAILABLE: ErrorCode
REPLICA_NOT_AVAILABLE: ErrorCode
STALE_CONTROLLER_EPOCH: ErrorCode
NETWORK_EXCEPTION: ErrorCode
INVALID_TOPIC_EXCEPTION: ErrorCode
CLUSTER_AUTHORIZATION_FAILED: ErrorCode
UNSUPPORTED_VERSION: ErrorCode
TOPIC_ALREADY_EXISTS: ErrorCode
INVALID_PARTITIONS: ErrorCode
INVALID_REPLICATION_FACTOR: ErrorCode
INVALID_REPLICA_ASSIGNMENT: ErrorCode
INVALID_CONFIG: ErrorCode
NOT_CONTROLLER: ErrorCode
INVALID_REQUEST: ErrorCode
POLICY_VIOLATION: ErrorCode
OPERATION_NOT_ATTEMPTED: ErrorCode
KAFKA_STORAGE_ERROR: ErrorCode
LOG_DIR_NOT_FOUND: ErrorCode
REASSIGNMENT_IN_PROGRESS: ErrorCode
LISTENER_NOT_FOUND: ErrorCode
TOPIC_DELETION_DISABLED: ErrorCode
FENCED_LEADER_EPOCH: ErrorCode
UNKNOWN_LEADER_EPOCH: ErrorCode
STALE_BROKER_EPOCH: ErrorCode
PREFERRED_LEADER_NOT_AVAILABLE: ErrorCode
ELIGIBLE_LEADERS_NOT_AVAILABLE: ErrorCode
ELECTION_NOT_NEEDED: ErrorCode
NO_REASSIGNMENT_IN_PROGRESS: ErrorCode
INVALID_UPDATE_VERSION: ErrorCode
FEATURE_UPDATE_FAILED: ErrorCode
UNKNOWN_TOPIC_ID: ErrorCode
BROKER_ID_NOT_REGISTERED: ErrorCode
INCONSISTENT_TOPIC_ID: ErrorCode
INELIGIBLE_REPLICA: ErrorCode
NEW_LEADER_ELECTED: ErrorCode
LEADER_RECOVERY_STATE_RECOVERED: LeaderRecoveryState
LEADER_RECOVERY_STATE_RECOVERING: LeaderRecoveryState
REQUEST_TYPE_UNKNOWN: RequestType
REQUEST_TYPE_INCREMENTAL: RequestType
REQUEST_TYPE_FULL: RequestType
SECURITY_PROTOCOL_PLAINTEXT: SecurityProtocol
SECURITY_PROTOCOL_SSL: SecurityProtocol
SECURITY_PROTOCOL_SASL_PLAINTEXT: SecurityProtocol
SECURITY_PROTOCOL_SASL_SSL: SecurityProtocol

class TopicPartition(_message.Message):
    __slots__ = ("topic", "partition")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...
