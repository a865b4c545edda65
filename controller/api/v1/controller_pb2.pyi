from controller.api.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ControlledShutdownRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class ControlledShutdownResponse(_message.Message):
    __slots__ = ("error_code", "remaining_partitions")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    REMAINING_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    remaining_partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartition]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., remaining_partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartition, _Mapping]]] = ...) -> None: ...

class AlterPartitionRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "topics")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    topics: _containers.RepeatedCompositeFieldContainer[AlterPartitionTopicData]
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[AlterPartitionTopicData, _Mapping]]] = ...) -> None: ...

class AlterPartitionTopicData(_message.Message):
    __slots__ = ("topic_id", "topic_name", "partitions")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    topic_name: str
    partitions: _containers.RepeatedCompositeFieldContainer[AlterPartitionPartitionData]
    def __init__(self, topic_id: _Optional[str] = ..., topic_name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[AlterPartitionPartitionData, _Mapping]]] = ...) -> None: ...

class AlterPartitionPartitionData(_message.Message):
    __slots__ = ("partition_index", "leader_epoch", "new_isr_with_epochs", "leader_recovery_state", "partition_epoch")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    NEW_ISR_WITH_EPOCHS_FIELD_NUMBER: _ClassVar[int]
    LEADER_RECOVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    leader_epoch: int
    new_isr_with_epochs: _containers.RepeatedCompositeFieldContainer[BrokerState]
    leader_recovery_state: _common_pb2.LeaderRecoveryState
    partition_epoch: int
    def __init__(self, partition_index: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., new_isr_with_epochs: _Optional[_Iterable[_Union[BrokerState, _Mapping]]] = ..., leader_recovery_state: _Optional[_Union[_common_pb2.LeaderRecoveryState, str]] = ..., partition_epoch: _Optional[int] = ...) -> None: ...

class BrokerState(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class AlterPartitionResponse(_message.Message):
    __slots__ = ("error_code", "topics")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    topics: _containers.RepeatedCompositeFieldContainer[AlterPartitionTopicResponse]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., topics: _Optional[_Iterable[_Union[AlterPartitionTopicResponse, _Mapping]]] = ...) -> None: ...

class AlterPartitionTopicResponse(_message.Message):
    __slots__ = ("topic_id", "topic_name", "partitions")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    topic_name: str
    partitions: _containers.RepeatedCompositeFieldContainer[AlterPartitionPartitionResponse]
    def __init__(self, topic_id: _Optional[str] = ..., topic_name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[AlterPartitionPartitionResponse, _Mapping]]] = ...) -> None: ...

class AlterPartitionPartitionResponse(_message.Message):
    __slots__ = ("partition_index", "error_code", "leader_id", "leader_epoch", "isr", "leader_recovery_state", "partition_epoch")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    LEADER_RECOVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    error_code: _common_pb2.ErrorCode
    leader_id: int
    leader_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    leader_recovery_state: _common_pb2.LeaderRecoveryState
    partition_epoch: int
    def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., leader_recovery_state: _Optional[_Union[_common_pb2.LeaderRecoveryState, str]] = ..., partition_epoch: _Optional[int] = ...) -> None: ...

class AllocateProducerIdsRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class AllocateProducerIdsResponse(_message.Message):
    __slots__ = ("error_code", "producer_id_start", "producer_id_len")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_START_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_LEN_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    producer_id_start: int
    producer_id_len: int
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., producer_id_start: _Optional[int] = ..., producer_id_len: _Optional[int] = ...) -> None: ...
