from controller.api.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ElectionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ELECTION_TYPE_PREFERRED: _ClassVar[ElectionType]
    ELECTION_TYPE_UNCLEAN: _ClassVar[ElectionType]

class FeatureUpgradeType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FEATURE_UPGRADE_TYPE_UNKNOWN: _ClassVar[FeatureUpgradeType]
    FEATURE_UPGRADE_TYPE_UPGRADE: _ClassVar[FeatureUpgradeType]
    FEATURE_UPGRADE_TYPE_SAFE_DOWNGRADE: _ClassVar[FeatureUpgradeType]
    FEATURE_UPGRADE_TYPE_UNSAFE_DOWNGRADE: _ClassVar[FeatureUpgradeType]
ELECTION_TYPE_PREFERRED: ElectionType
ELECTION_TYPE_UNCLEAN: ElectionType
FEATURE_UPGRADE_TYPE_UNKNOWN: FeatureUpgradeType
FEATURE_UPGRADE_TYPE_UPGRADE: FeatureUpgradeType
FEATURE_UPGRADE_TYPE_SAFE_DOWNGRADE: FeatureUpgradeType
FEATURE_UPGRADE_TYPE_UNSAFE_DOWNGRADE: FeatureUpgradeType

class ReassignablePartition(_message.Message):
    __slots__ = ("topic", "partition", "replicas", "cancel")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    cancel: bool
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., cancel: _Optional[bool] = ...) -> None: ...

class AlterPartitionReassignmentsRequest(_message.Message):
    __slots__ = ("partitions", "timeout_ms")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[ReassignablePartition]
    timeout_ms: int
    def __init__(self, partitions: _Optional[_Iterable[_Union[ReassignablePartition, _Mapping]]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class PartitionResult(_message.Message):
    __slots__ = ("topic", "partition", "error_code", "error_message")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error_code: _common_pb2.ErrorCode
    error_message: str
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ...) -> None: ...

class AlterPartitionReassignmentsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "results")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    results: _containers.RepeatedCompositeFieldContainer[PartitionResult]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., results: _Optional[_Iterable[_Union[PartitionResult, _Mapping]]] = ...) -> None: ...

class ListPartitionReassignmentsRequest(_message.Message):
    __slots__ = ("partitions",)
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartition]
    def __init__(self, partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartition, _Mapping]]] = ...) -> None: ...

class OngoingReassignment(_message.Message):
    __slots__ = ("topic", "partition", "replicas", "adding_replicas", "removing_replicas")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ADDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REMOVING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    adding_replicas: _containers.RepeatedScalarFieldContainer[int]
    removing_replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., adding_replicas: _Optional[_Iterable[int]] = ..., removing_replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class ListPartitionReassignmentsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "reassignments")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    reassignments: _containers.RepeatedCompositeFieldContainer[OngoingReassignment]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., reassignments: _Optional[_Iterable[_Union[OngoingReassignment, _Mapping]]] = ...) -> None: ...

class ElectLeadersRequest(_message.Message):
    __slots__ = ("election_type", "partitions", "timeout_ms")
    ELECTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    election_type: ElectionType
    partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartition]
    timeout_ms: int
    def __init__(self, election_type: _Optional[_Union[ElectionType, str]] = ..., partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartition, _Mapping]]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class ElectionResult(_message.Message):
    __slots__ = ("topic", "partition", "error_code", "error_message", "leader")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error_code: _common_pb2.ErrorCode
    error_message: str
    leader: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., leader: _Optional[int] = ...) -> None: ...

class ElectLeadersResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "results")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    results: _containers.RepeatedCompositeFieldContainer[ElectionResult]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., results: _Optional[_Iterable[_Union[ElectionResult, _Mapping]]] = ...) -> None: ...

class FeatureUpdate(_message.Message):
    __slots__ = ("feature", "max_version_level", "upgrade_type")
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    MAX_VERSION_LEVEL_FIELD_NUMBER: _ClassVar[int]
    UPGRADE_TYPE_FIELD_NUMBER: _ClassVar[int]
    feature: str
    max_version_level: int
    upgrade_type: FeatureUpgradeType
    def __init__(self, feature: _Optional[str] = ..., max_version_level: _Optional[int] = ..., upgrade_type: _Optional[_Union[FeatureUpgradeType, str]] = ...) -> None: ...

class UpdateFeaturesRequest(_message.Message):
    __slots__ = ("feature_updates", "timeout_ms", "validate_only")
    FEATURE_UPDATES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    feature_updates: _containers.RepeatedCompositeFieldContainer[FeatureUpdate]
    timeout_ms: int
    validate_only: bool
    def __init__(self, feature_updates: _Optional[_Iterable[_Union[FeatureUpdate, _Mapping]]] = ..., timeout_ms: _Optional[int] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class UpdatableFeatureResult(_message.Message):
    __slots__ = ("feature", "error_code", "error_message")
    FEATURE_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    feature: str
    error_code: _common_pb2.ErrorCode
    error_message: str
    def __init__(self, feature: _Optional[str] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ...) -> None: ...

class UpdateFeaturesResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "results")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    error_message: str
    results: _containers.RepeatedCompositeFieldContainer[UpdatableFeatureResult]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., error_message: _Optional[str] = ..., results: _Optional[_Iterable[_Union[UpdatableFeatureResult, _Mapping]]] = ...) -> None: ...
