"""The gRPC contract: generated code is current, documented, and matches the Python helpers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2

from controller.api import codegen
from controller.api.errors import (
    CONTROLLER_ID_METADATA_KEY,
    ApiError,
    Errors,
    controller_hint,
    error_for_exception,
    error_name,
)
from controller.api.v1 import broker_pb2, broker_pb2_grpc, common_pb2, controller_pb2
from controller.channel import convert
from controller.core.events import NotControllerError
from controller.core.model import (
    Broker,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)
from controller.zk.errors import ControllerMovedError

# -- generated code --------------------------------------------------------------------------


def test_generated_code_is_up_to_date() -> None:
    # Stale generated code fails CI here; `make proto` regenerates it.
    result = subprocess.run(
        [sys.executable, "-m", "controller.api.codegen", "--check"],
        capture_output=True,
        text=True,
        cwd=codegen.REPO_ROOT,
    )
    assert result.returncode == 0, result.stderr


def test_check_reports_changed_missing_and_extra_files() -> None:
    fresh = {"a_pb2.py": b"x = 1\n", "b_pb2.py": b"y = 2\n"}
    committed = {"a_pb2.py": b"x = 0\n", "c_pb2_grpc.py": b"old\n"}
    problems = codegen.diff(fresh, committed)
    assert len(problems) == 3
    assert "-x = 0" in problems[0] and "+x = 1" in problems[0]
    assert problems[1] == "missing: controller/api/v1/b_pb2.py"
    assert problems[2].startswith("not generated from any .proto")
    assert codegen.diff(fresh, dict(fresh)) == []


def test_generated_modules_import_by_package_path() -> None:
    # The import-path trap: the generated _grpc module must import its _pb2 by our package.
    source = Path(broker_pb2_grpc.__file__).read_text()
    assert "from controller.api.v1 import broker_pb2" in source
    assert broker_pb2.DESCRIPTOR.package == "zkcontroller.v1"
    assert controller_pb2.DESCRIPTOR.services_by_name["ControllerService"].full_name == (
        "zkcontroller.v1.ControllerService"
    )
    rpcs = {m.name for m in broker_pb2.DESCRIPTOR.services_by_name["BrokerService"].methods}
    assert rpcs == {"LeaderAndIsr", "UpdateMetadata", "StopReplica", "Describe", "Fetch"}


def _descriptor_set(tmp_path: Path) -> descriptor_pb2.FileDescriptorSet:
    from grpc_tools import protoc

    out = tmp_path / "api.pb"
    files = [str(f) for f in codegen.proto_files()]
    args = [
        "protoc",
        f"-I{codegen.PROTO_ROOT}",
        "--include_source_info",
        f"--descriptor_set_out={out}",
        *files,
    ]
    assert protoc.main(args) == 0
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(out.read_bytes())
    return fds


def test_every_message_enum_service_and_rpc_is_documented(tmp_path: Path) -> None:
    undocumented: list[str] = []
    for f in _descriptor_set(tmp_path).file:
        documented = {
            tuple(loc.path) for loc in f.source_code_info.location if loc.leading_comments.strip()
        }
        # Descriptor field numbers: message_type=4, enum_type=5, service=6, method=2.
        for i, m in enumerate(f.message_type):
            if (4, i) not in documented:
                undocumented.append(f"message {m.name}")
        for i, e in enumerate(f.enum_type):
            if (5, i) not in documented:
                undocumented.append(f"enum {e.name}")
        for i, s in enumerate(f.service):
            if (6, i) not in documented:
                undocumented.append(f"service {s.name}")
            for j, rpc in enumerate(s.method):
                if (6, i, 2, j) not in documented:
                    undocumented.append(f"rpc {s.name}.{rpc.name}")
    assert undocumented == []


def test_section_4_4_fields_are_all_carried() -> None:
    def fields(message: type) -> set[str]:
        return {f.name for f in message.DESCRIPTOR.fields}

    header = {"controller_id", "is_kraft_controller", "controller_epoch", "broker_epoch"}
    assert header | {"type", "topic_states", "live_leaders"} <= fields(
        broker_pb2.LeaderAndIsrRequest
    )
    assert {
        "partition_index", "controller_epoch", "leader", "leader_epoch", "isr", "partition_epoch",
        "replicas", "adding_replicas", "removing_replicas", "is_new", "leader_recovery_state",
    } == fields(broker_pb2.LeaderAndIsrPartitionState)  # fmt: skip
    assert {"topic_name", "topic_id"} <= fields(broker_pb2.LeaderAndIsrTopicState)
    assert {"broker_id", "host_name", "port"} == fields(broker_pb2.LeaderAndIsrLiveLeader)
    assert header | {"type", "topic_states", "live_brokers"} <= fields(
        broker_pb2.UpdateMetadataRequest
    )
    assert {
        "partition_index", "controller_epoch", "leader", "leader_epoch", "isr", "zk_version",
        "replicas", "offline_replicas",
    } == fields(broker_pb2.UpdateMetadataPartitionState)  # fmt: skip
    assert {"id", "endpoints", "rack"} == fields(broker_pb2.UpdateMetadataBroker)
    assert {"port", "host", "listener", "security_protocol"} == fields(
        broker_pb2.UpdateMetadataEndpoint
    )
    assert header | {"delete_partitions", "topic_states"} <= fields(broker_pb2.StopReplicaRequest)
    assert {"partition_index", "leader_epoch", "delete_partition"} == fields(
        broker_pb2.StopReplicaPartitionState
    )
    assert {"error_code", "remaining_partitions"} == fields(
        controller_pb2.ControlledShutdownResponse
    )
    assert {
        "partition_index", "leader_epoch", "new_isr_with_epochs", "leader_recovery_state",
        "partition_epoch",
    } == fields(controller_pb2.AlterPartitionPartitionData)  # fmt: skip


# -- error codes ---------------------------------------------------------------------------------


def test_python_errors_mirror_the_proto_enum_exactly() -> None:
    proto = {v.name: v.number for v in common_pb2.ErrorCode.DESCRIPTOR.values}
    assert proto == {e.name: e.value for e in Errors}


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("NONE", 0),
        ("UNKNOWN_SERVER_ERROR", -1),
        ("UNKNOWN_TOPIC_OR_PARTITION", 3),
        ("NOT_LEADER_OR_FOLLOWER", 6),
        ("BROKER_NOT_AVAILABLE", 8),
        ("STALE_CONTROLLER_EPOCH", 11),
        ("INVALID_TOPIC_EXCEPTION", 17),
        ("INVALID_REPLICA_ASSIGNMENT", 39),
        ("NOT_CONTROLLER", 41),
        ("INVALID_REQUEST", 42),
        ("OPERATION_NOT_ATTEMPTED", 55),
        ("KAFKA_STORAGE_ERROR", 56),
        ("TOPIC_DELETION_DISABLED", 73),
        ("FENCED_LEADER_EPOCH", 74),
        ("STALE_BROKER_EPOCH", 77),
        ("PREFERRED_LEADER_NOT_AVAILABLE", 80),
        ("ELIGIBLE_LEADERS_NOT_AVAILABLE", 83),
        ("ELECTION_NOT_NEEDED", 84),
        ("NO_REASSIGNMENT_IN_PROGRESS", 85),
        ("INVALID_UPDATE_VERSION", 95),
        ("UNKNOWN_TOPIC_ID", 100),
        ("INELIGIBLE_REPLICA", 107),
    ],
)
def test_kafka_numbers(name: str, code: int) -> None:
    assert Errors.for_name(name) == code
    assert common_pb2.ErrorCode.Value(name) == code


def test_error_helpers() -> None:
    assert Errors.for_code(41) is Errors.NOT_CONTROLLER
    assert Errors.for_code(12345) is Errors.UNKNOWN_SERVER_ERROR  # Kafka's forCode
    assert error_name(77) == "STALE_BROKER_EPOCH"
    assert error_name(-99) == "UNKNOWN(-99)"
    assert error_for_exception(ApiError(Errors.INVALID_REQUEST, "bad")) is Errors.INVALID_REQUEST
    assert error_for_exception(ControllerMovedError()) is Errors.NOT_CONTROLLER
    assert error_for_exception(NotControllerError(3)) is Errors.NOT_CONTROLLER
    assert error_for_exception(KeyError("x")) is Errors.UNKNOWN_SERVER_ERROR


def test_controller_hint_metadata() -> None:
    assert controller_hint([(CONTROLLER_ID_METADATA_KEY, "3")]) == 3
    assert controller_hint([("other", "1"), (CONTROLLER_ID_METADATA_KEY, b"7")]) == 7
    assert controller_hint([(CONTROLLER_ID_METADATA_KEY, "x")]) is None
    assert controller_hint(None) is None


# -- conversions ---------------------------------------------------------------------------------


def test_leader_and_isr_request_from_model_round_trips() -> None:
    leadership = LeaderIsrAndControllerEpoch(
        LeaderAndIsr(2, 7, (2, 3), LeaderRecoveryState.RECOVERING, 12), controller_epoch=4
    )
    assignment = ReplicaAssignment.of([2, 3, 4], adding=[4], removing=[3])
    parts = {
        TopicPartition("foo", 1): convert.LeaderAndIsrPartition(leadership, assignment, True),
        TopicPartition("bar", 0): convert.LeaderAndIsrPartition(leadership, assignment, False),
        TopicPartition("foo", 0): convert.LeaderAndIsrPartition(leadership, assignment, False),
    }
    req = convert.leader_and_isr_request(
        controller_id=1,
        controller_epoch=9,
        broker_epoch=55,
        partitions=parts,
        topic_ids={"foo": "AAAAAAAAAAAAAAAAAAAAAQ"},
        live_leaders=[(2, EndPoint("PLAINTEXT", "h2", 9092))],
    )
    assert (req.controller_id, req.controller_epoch, req.broker_epoch) == (1, 9, 55)
    assert not req.is_kraft_controller and req.type == common_pb2.REQUEST_TYPE_UNKNOWN
    # Grouped by topic in insertion order; bar has no id.
    assert [(t.topic_name, t.topic_id) for t in req.topic_states] == [
        ("foo", "AAAAAAAAAAAAAAAAAAAAAQ"),
        ("bar", ""),
    ]
    assert [p.partition_index for p in req.topic_states[0].partition_states] == [1, 0]
    assert convert.request_partitions(req) == [
        TopicPartition("foo", 1),
        TopicPartition("foo", 0),
        TopicPartition("bar", 0),
    ]
    state = req.topic_states[0].partition_states[0]
    assert (
        state.is_new and state.leader_recovery_state == common_pb2.LEADER_RECOVERY_STATE_RECOVERING
    )
    assert convert.leader_and_isr_from_wire(state) == (leadership, assignment)
    assert [(x.broker_id, x.host_name, x.port) for x in req.live_leaders] == [(2, "h2", 9092)]
    # It survives serialisation unchanged (what the broker receives).
    assert broker_pb2.LeaderAndIsrRequest.FromString(req.SerializeToString()) == req


def test_update_metadata_request_and_brokers() -> None:
    brokers = [
        Broker(1, (EndPoint("PLAINTEXT", "h1", 9092), EndPoint("CONTROLLER", "h1", 9093, "SSL"))),
        Broker(2, (EndPoint("PLAINTEXT", "h2", 9092),), rack="r2"),
    ]
    deleting = LeaderIsrAndControllerEpoch(LeaderAndIsr.during_delete((1, 2)), 3)
    req = convert.update_metadata_request(
        controller_id=1,
        controller_epoch=3,
        broker_epoch=8,
        partitions={
            TopicPartition("t", 0): convert.UpdateMetadataPartition(deleting, (1, 2), (2,))
        },
        topic_ids=lambda topic: "AAAAAAAAAAAAAAAAAAAAAQ",
        live_brokers=brokers,
    )
    state = req.topic_states[0].partition_states[0]
    assert (state.leader, state.leader_epoch, state.zk_version) == (-2, 0, 0)
    assert (list(state.isr), list(state.offline_replicas)) == ([1, 2], [2])
    assert req.topic_states[0].topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert not req.live_brokers[0].HasField("rack") and req.live_brokers[1].rack == "r2"
    assert req.live_brokers[0].endpoints[1].security_protocol == common_pb2.SECURITY_PROTOCOL_SSL
    assert [convert.broker_from_wire(b) for b in req.live_brokers] == brokers
    with pytest.raises(ValueError, match="unknown security protocol"):
        convert.security_protocol_to_wire("TLS")


def test_stop_replica_request() -> None:
    req = convert.stop_replica_request(
        controller_id=1,
        controller_epoch=2,
        broker_epoch=3,
        partitions={
            TopicPartition("t", 0): convert.StopReplicaPartition(-2, True),
            TopicPartition("t", 1): convert.StopReplicaPartition(5, False),
        },
    )
    assert req.delete_partitions is False
    states = req.topic_states[0].partition_states
    assert [(p.partition_index, p.leader_epoch, p.delete_partition) for p in states] == [
        (0, -2, True),
        (1, 5, False),
    ]


def test_response_parsers() -> None:
    resp = broker_pb2.LeaderAndIsrResponse(error_code=0)
    named = resp.topics.add(topic_id="id-a", topic_name="a")
    named.partition_errors.add(partition_index=0, error_code=56)
    by_id = resp.topics.add(topic_id="id-b")  # a broker that echoes only the id
    by_id.partition_errors.add(partition_index=1, error_code=0)
    unknown = resp.topics.add(topic_id="id-zzz")
    unknown.partition_errors.add(partition_index=0, error_code=0)
    result = convert.parse_leader_and_isr_response(resp, {"id-b": "b"})
    assert result == (0, {TopicPartition("a", 0): 56, TopicPartition("b", 1): 0})

    sr = broker_pb2.StopReplicaResponse(error_code=0)
    sr.partition_errors.add(topic_name="t", partition_index=2, error_code=74)
    assert convert.parse_stop_replica_response(sr) == (0, {TopicPartition("t", 2): 74})
    umr = broker_pb2.UpdateMetadataResponse(error_code=77)
    assert convert.parse_update_metadata_response(umr) == 77


def test_controller_service_helpers() -> None:
    resp = convert.controlled_shutdown_response(0, {TopicPartition("b", 1), TopicPartition("a", 0)})
    assert [(p.topic, p.partition) for p in resp.remaining_partitions] == [("a", 0), ("b", 1)]

    req = controller_pb2.AlterPartitionRequest(broker_id=2, broker_epoch=40)
    topic = req.topics.add(topic_id="AAAAAAAAAAAAAAAAAAAAAQ", topic_name="")
    p = topic.partitions.add(partition_index=3, leader_epoch=6, partition_epoch=9)
    p.new_isr_with_epochs.add(broker_id=2, broker_epoch=40)
    p.new_isr_with_epochs.add(broker_id=1, broker_epoch=-1)
    [item] = convert.alter_partition_items(req)
    assert item.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ" and item.partition_index == 3
    assert item.proposed == LeaderAndIsr(2, 6, (2, 1), LeaderRecoveryState.RECOVERED, 9)
    assert item.isr_broker_epochs == ((2, 40), (1, -1))

    ok = convert.alter_partition_partition_response(3, 0, item.proposed.with_partition_epoch(10))
    assert (ok.leader_id, ok.leader_epoch, list(ok.isr), ok.partition_epoch) == (2, 6, [2, 1], 10)
    failed = convert.alter_partition_partition_response(3, 74, item.proposed)
    assert failed.error_code == 74 and failed.leader_id == 0 and list(failed.isr) == []
