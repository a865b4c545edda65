from controller.api.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PartitionRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARTITION_ROLE_UNSPECIFIED: _ClassVar[PartitionRole]
    PARTITION_ROLE_LEADER: _ClassVar[PartitionRole]
    PARTITION_ROLE_FOLLOWER: _ClassVar[PartitionRole]
    PARTITION_ROLE_STOPPED: _ClassVar[PartitionRole]
PARTITION_ROLE_UNSPECIFIED: PartitionRole
PARTITION_ROLE_LEADER: PartitionRole
PARTITION_ROLE_FOLLOWER: PartitionRole
PARTITION_ROLE_STOPPED: PartitionRole

class LeaderAndIsrRequest(_message.Message):
    __slots__ = ("controller_id", "is_kraft_controller", "controller_epoch", "broker_epoch", "type", "topic_states", "live_leaders")
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    IS_KRAFT_CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TOPIC_STATES_FIELD_NUMBER: _ClassVar[int]
    LIVE_LEADERS_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    is_kraft_controller: bool
    controller_epoch: int
    broker_epoch: int
    type: _common_pb2.RequestType
    topic_states: _containers.RepeatedCompositeFieldContainer[LeaderAndIsrTopicState]
    live_leaders: _containers.RepeatedCompositeFieldContainer[LeaderAndIsrLiveLeader]
    def __init__(self, controller_id: _Optional[int] = ..., is_kraft_controller: _Optional[bool] = ..., controller_epoch: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., type: _Optional[_Union[_common_pb2.RequestType, str]] = ..., topic_states: _Optional[_Iterable[_Union[LeaderAndIsrTopicState, _Mapping]]] = ..., live_leaders: _Optional[_Iterable[_Union[LeaderAndIsrLiveLeader, _Mapping]]] = ...) -> None: ...

class LeaderAndIsrTopicState(_message.Message):
    __slots__ = ("topic_name", "topic_id", "partition_states")
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATES_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    topic_id: str
    partition_states: _containers.RepeatedCompositeFieldContainer[LeaderAndIsrPartitionState]
    def __init__(self, topic_name: _Optional[str] = ..., topic_id: _Optional[str] = ..., partition_states: _Optional[_Iterable[_Union[LeaderAndIsrPartitionState, _Mapping]]] = ...) -> None: ...

class LeaderAndIsrPartitionState(_message.Message):
    __slots__ = ("partition_index", "controller_epoch", "leader", "leader_epoch", "isr", "partition_epoch", "replicas", "adding_replicas", "removing_replicas", "is_new", "leader_recovery_state")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ADDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REMOVING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    IS_NEW_FIELD_NUMBER: _ClassVar[int]
    LEADER_RECOVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    partition_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    adding_replicas: _containers.RepeatedScalarFieldContainer[int]
    removing_replicas: _containers.RepeatedScalarFieldContainer[int]
    is_new: bool
    leader_recovery_state: _common_pb2.LeaderRecoveryState
    def __init__(self, partition_index: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., partition_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., adding_replicas: _Optional[_Iterable[int]] = ..., removing_replicas: _Optional[_Iterable[int]] = ..., is_new: _Optional[bool] = ..., leader_recovery_state: _Optional[_Union[_common_pb2.LeaderRecoveryState, str]] = ...) -> None: ...

class LeaderAndIsrLiveLeader(_message.Message):
    __slots__ = ("broker_id", "host_name", "port")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    host_name: str
    port: int
    def __init__(self, broker_id: _Optional[int] = ..., host_name: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class LeaderAndIsrResponse(_message.Message):
    __slots__ = ("error_code", "topics")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    topics: _containers.RepeatedCompositeFieldContainer[LeaderAndIsrTopicError]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., topics: _Optional[_Iterable[_Union[LeaderAndIsrTopicError, _Mapping]]] = ...) -> None: ...

class LeaderAndIsrTopicError(_message.Message):
    __slots__ = ("topic_id", "topic_name", "partition_errors")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ERRORS_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    topic_name: str
    partition_errors: _containers.RepeatedCompositeFieldContainer[LeaderAndIsrPartitionError]
    def __init__(self, topic_id: _Optional[str] = ..., topic_name: _Optional[str] = ..., partition_errors: _Optional[_Iterable[_Union[LeaderAndIsrPartitionError, _Mapping]]] = ...) -> None: ...

class LeaderAndIsrPartitionError(_message.Message):
    __slots__ = ("partition_index", "error_code")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    error_code: _common_pb2.ErrorCode
    def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ...) -> None: ...

class UpdateMetadataRequest(_message.Message):
    __slots__ = ("controller_id", "is_kraft_controller", "type", "controller_epoch", "broker_epoch", "topic_states", "live_brokers")
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    IS_KRAFT_CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TOPIC_STATES_FIELD_NUMBER: _ClassVar[int]
    LIVE_BROKERS_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    is_kraft_controller: bool
    type: _common_pb2.RequestType
    controller_epoch: int
    broker_epoch: int
    topic_states: _containers.RepeatedCompositeFieldContainer[UpdateMetadataTopicState]
    live_brokers: _containers.RepeatedCompositeFieldContainer[UpdateMetadataBroker]
    def __init__(self, controller_id: _Optional[int] = ..., is_kraft_controller: _Optional[bool] = ..., type: _Optional[_Union[_common_pb2.RequestType, str]] = ..., controller_epoch: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., topic_states: _Optional[_Iterable[_Union[UpdateMetadataTopicState, _Mapping]]] = ..., live_brokers: _Optional[_Iterable[_Union[UpdateMetadataBroker, _Mapping]]] = ...) -> None: ...

class UpdateMetadataTopicState(_message.Message):
    __slots__ = ("topic_name", "topic_id", "partition_states")
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATES_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    topic_id: str
    partition_states: _containers.RepeatedCompositeFieldContainer[UpdateMetadataPartitionState]
    def __init__(self, topic_name: _Optional[str] = ..., topic_id: _Optional[str] = ..., partition_states: _Optional[_Iterable[_Union[UpdateMetadataPartitionState, _Mapping]]] = ...) -> None: ...

class UpdateMetadataPartitionState(_message.Message):
    __slots__ = ("partition_index", "controller_epoch", "leader", "leader_epoch", "isr", "zk_version", "replicas", "offline_replicas")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    ZK_VERSION_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    zk_version: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    offline_replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition_index: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., zk_version: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., offline_replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class UpdateMetadataBroker(_message.Message):
    __slots__ = ("id", "endpoints", "rack")
    ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    id: int
    endpoints: _containers.RepeatedCompositeFieldContainer[UpdateMetadataEndpoint]
    rack: str
    def __init__(self, id: _Optional[int] = ..., endpoints: _Optional[_Iterable[_Union[UpdateMetadataEndpoint, _Mapping]]] = ..., rack: _Optional[str] = ...) -> None: ...

class UpdateMetadataEndpoint(_message.Message):
    __slots__ = ("port", "host", "listener", "security_protocol")
    PORT_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    LISTENER_FIELD_NUMBER: _ClassVar[int]
    SECURITY_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    port: int
    host: str
    listener: str
    security_protocol: _common_pb2.SecurityProtocol
    def __init__(self, port: _Optional[int] = ..., host: _Optional[str] = ..., listener: _Optional[str] = ..., security_protocol: _Optional[_Union[_common_pb2.SecurityProtocol, str]] = ...) -> None: ...

class UpdateMetadataResponse(_message.Message):
    __slots__ = ("error_code",)
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ...) -> None: ...

class StopReplicaRequest(_message.Message):
    __slots__ = ("controller_id", "is_kraft_controller", "controller_epoch", "broker_epoch", "delete_partitions", "topic_states")
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    IS_KRAFT_CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    DELETE_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_STATES_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    is_kraft_controller: bool
    controller_epoch: int
    broker_epoch: int
    delete_partitions: bool
    topic_states: _containers.RepeatedCompositeFieldContainer[StopReplicaTopicState]
    def __init__(self, controller_id: _Optional[int] = ..., is_kraft_controller: _Optional[bool] = ..., controller_epoch: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., delete_partitions: _Optional[bool] = ..., topic_states: _Optional[_Iterable[_Union[StopReplicaTopicState, _Mapping]]] = ...) -> None: ...

class StopReplicaTopicState(_message.Message):
    __slots__ = ("topic_name", "partition_states")
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATES_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    partition_states: _containers.RepeatedCompositeFieldContainer[StopReplicaPartitionState]
    def __init__(self, topic_name: _Optional[str] = ..., partition_states: _Optional[_Iterable[_Union[StopReplicaPartitionState, _Mapping]]] = ...) -> None: ...

class StopReplicaPartitionState(_message.Message):
    __slots__ = ("partition_index", "leader_epoch", "delete_partition")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    DELETE_PARTITION_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    leader_epoch: int
    delete_partition: bool
    def __init__(self, partition_index: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., delete_partition: _Optional[bool] = ...) -> None: ...

class StopReplicaResponse(_message.Message):
    __slots__ = ("error_code", "partition_errors")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ERRORS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    partition_errors: _containers.RepeatedCompositeFieldContainer[StopReplicaPartitionError]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., partition_errors: _Optional[_Iterable[_Union[StopReplicaPartitionError, _Mapping]]] = ...) -> None: ...

class StopReplicaPartitionError(_message.Message):
    __slots__ = ("topic_name", "partition_index", "error_code")
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    partition_index: int
    error_code: _common_pb2.ErrorCode
    def __init__(self, topic_name: _Optional[str] = ..., partition_index: _Optional[int] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HostedPartition(_message.Message):
    __slots__ = ("topic_name", "topic_id", "partition_index", "role", "leader", "leader_epoch", "partition_epoch", "isr", "replicas", "adding_replicas", "removing_replicas", "leader_recovery_state", "controller_epoch", "is_new")
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ADDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REMOVING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    LEADER_RECOVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    IS_NEW_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    topic_id: str
    partition_index: int
    role: PartitionRole
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    replicas: _containers.RepeatedScalarFieldContainer[int]
    adding_replicas: _containers.RepeatedScalarFieldContainer[int]
    removing_replicas: _containers.RepeatedScalarFieldContainer[int]
    leader_recovery_state: _common_pb2.LeaderRecoveryState
    controller_epoch: int
    is_new: bool
    def __init__(self, topic_name: _Optional[str] = ..., topic_id: _Optional[str] = ..., partition_index: _Optional[int] = ..., role: _Optional[_Union[PartitionRole, str]] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., partition_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., replicas: _Optional[_Iterable[int]] = ..., adding_replicas: _Optional[_Iterable[int]] = ..., removing_replicas: _Optional[_Iterable[int]] = ..., leader_recovery_state: _Optional[_Union[_common_pb2.LeaderRecoveryState, str]] = ..., controller_epoch: _Optional[int] = ..., is_new: _Optional[bool] = ...) -> None: ...

class CachedPartition(_message.Message):
    __slots__ = ("topic_name", "topic_id", "state")
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    topic_id: str
    state: UpdateMetadataPartitionState
    def __init__(self, topic_name: _Optional[str] = ..., topic_id: _Optional[str] = ..., state: _Optional[_Union[UpdateMetadataPartitionState, _Mapping]] = ...) -> None: ...

class DescribeResponse(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "controller_epoch", "metadata_controller_id", "partitions", "live_brokers", "metadata_partitions", "offline_partitions", "requests_received")
    class RequestsReceivedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    METADATA_CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    LIVE_BROKERS_FIELD_NUMBER: _ClassVar[int]
    METADATA_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    controller_epoch: int
    metadata_controller_id: int
    partitions: _containers.RepeatedCompositeFieldContainer[HostedPartition]
    live_brokers: _containers.RepeatedCompositeFieldContainer[UpdateMetadataBroker]
    metadata_partitions: _containers.RepeatedCompositeFieldContainer[CachedPartition]
    offline_partitions: _containers.RepeatedCompositeFieldContainer[_common_pb2.TopicPartition]
    requests_received: _containers.ScalarMap[str, int]
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., metadata_controller_id: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[HostedPartition, _Mapping]]] = ..., live_brokers: _Optional[_Iterable[_Union[UpdateMetadataBroker, _Mapping]]] = ..., metadata_partitions: _Optional[_Iterable[_Union[CachedPartition, _Mapping]]] = ..., offline_partitions: _Optional[_Iterable[_Union[_common_pb2.TopicPartition, _Mapping]]] = ..., requests_received: _Optional[_Mapping[str, int]] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("replica_id", "replica_epoch", "topics")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICA_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    replica_epoch: int
    topics: _containers.RepeatedCompositeFieldContainer[FetchTopic]
    def __init__(self, replica_id: _Optional[int] = ..., replica_epoch: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[FetchTopic, _Mapping]]] = ...) -> None: ...

class FetchTopic(_message.Message):
    __slots__ = ("topic_name", "topic_id", "partitions")
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    topic_id: str
    partitions: _containers.RepeatedCompositeFieldContainer[FetchPartition]
    def __init__(self, topic_name: _Optional[str] = ..., topic_id: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[FetchPartition, _Mapping]]] = ...) -> None: ...

class FetchPartition(_message.Message):
    __slots__ = ("partition_index", "current_leader_epoch")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    current_leader_epoch: int
    def __init__(self, partition_index: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ...) -> None: ...

class FetchResponse(_message.Message):
    __slots__ = ("error_code", "topics")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error_code: _common_pb2.ErrorCode
    topics: _containers.RepeatedCompositeFieldContainer[FetchTopicResponse]
    def __init__(self, error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., topics: _Optional[_Iterable[_Union[FetchTopicResponse, _Mapping]]] = ...) -> None: ...

class FetchTopicResponse(_message.Message):
    __slots__ = ("topic_name", "topic_id", "partitions")
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    topic_id: str
    partitions: _containers.RepeatedCompositeFieldContainer[FetchPartitionResponse]
    def __init__(self, topic_name: _Optional[str] = ..., topic_id: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[FetchPartitionResponse, _Mapping]]] = ...) -> None: ...

class FetchPartitionResponse(_message.Message):
    __slots__ = ("partition_index", "error_code", "leader_epoch")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    error_code: _common_pb2.ErrorCode
    leader_epoch: int
    def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[_Union[_common_pb2.ErrorCode, str]] = ..., leader_epoch: _Optional[int] = ...) -> None: ...
