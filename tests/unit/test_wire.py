"""The hand-encoded requests (controller.channel.wire) equal what the protobuf API builds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.api.v1 import broker_pb2, common_pb2
from controller.channel import convert, wire
from controller.channel.convert import LeaderAndIsrPartition, UpdateMetadataPartition
from controller.core.model import (
    Broker,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)

int32 = st.integers(-(2**31), 2**31 - 1)
ids = st.lists(st.integers(0, 2**31 - 1), max_size=5).map(tuple)
topics = st.sampled_from(["a", "b", "topic-with-a-long-name", "ü", ""])
leadership = st.builds(
    lambda leader, epoch, isr, recovery, version, controller_epoch: LeaderIsrAndControllerEpoch(
        LeaderAndIsr(leader, epoch, isr, recovery, version), controller_epoch
    ),
    st.one_of(st.sampled_from([-2, -1, 0, 1]), int32),
    int32,
    ids,
    st.sampled_from(list(LeaderRecoveryState)),
    int32,
    int32,
)
assignment = st.builds(ReplicaAssignment, ids, ids, ids)
partitions = st.lists(
    st.tuples(topics, st.integers(0, 2**31 - 1)), max_size=12, unique=True
).map(lambda keys: [TopicPartition(t, p) for t, p in keys])
topic_ids = st.dictionaries(topics, st.text("abcdefghijklmnopqrstuvwxyz0123456789-_", max_size=22))


def test_field_numbers_match_the_proto() -> None:
    wire.check_field_numbers()


def test_varints() -> None:
    for value in (0, 1, 127, 128, 16383, 16384, 2**31 - 1, -1, -2, -(2**31)):
        message = broker_pb2.UpdateMetadataPartitionState(leader=value)
        assert wire.update_metadata_partition(0, 0, value, 0, (), 0, (), ()) == (
            message.SerializeToString()
        )


@settings(max_examples=300)
@given(partitions, st.data(), topic_ids)
def test_leader_and_isr_request_equals_the_protobuf_built_one(
    tps: list[TopicPartition], data: st.DataObject, ids_by_topic: dict[str, str]
) -> None:
    states = {
        tp: LeaderAndIsrPartition(
            data.draw(leadership), data.draw(assignment), data.draw(st.booleans())
        )
        for tp in tps
    }
    live = [(1, EndPoint("PLAINTEXT", "h", 9092)), (-1, EndPoint("PLAINTEXT", "x", 1))]
    got = convert.leader_and_isr_request(
        controller_id=3, controller_epoch=7, broker_epoch=2**40, partitions=states,
        topic_ids=ids_by_topic, live_leaders=live,
    )  # fmt: skip
    expected = broker_pb2.LeaderAndIsrRequest(
        controller_id=3, is_kraft_controller=False, controller_epoch=7, broker_epoch=2**40,
        type=common_pb2.REQUEST_TYPE_UNKNOWN,
        live_leaders=[
            broker_pb2.LeaderAndIsrLiveLeader(broker_id=b, host_name=e.host, port=e.port)
            for b, e in live
        ],
    )  # fmt: skip
    by_topic: dict[str, broker_pb2.LeaderAndIsrTopicState] = {}
    for (topic, partition), (info, ra, is_new) in states.items():
        if topic not in by_topic:
            by_topic[topic] = expected.topic_states.add(
                topic_name=topic, topic_id=ids_by_topic.get(topic) or ""
            )
        lai = info.leader_and_isr
        by_topic[topic].partition_states.add(
            partition_index=partition, controller_epoch=info.controller_epoch, leader=lai.leader,
            leader_epoch=lai.leader_epoch, isr=lai.isr, partition_epoch=lai.partition_epoch,
            replicas=ra.replicas, adding_replicas=ra.adding_replicas,
            removing_replicas=ra.removing_replicas, is_new=is_new,
            leader_recovery_state=int(lai.leader_recovery_state),
        )  # fmt: skip
    assert got == expected
    assert got.SerializeToString() == expected.SerializeToString()


@settings(max_examples=300)
@given(partitions, st.data(), topic_ids)
def test_update_metadata_request_equals_the_protobuf_built_one(
    tps: list[TopicPartition], data: st.DataObject, ids_by_topic: dict[str, str]
) -> None:
    states = {
        tp: UpdateMetadataPartition(data.draw(leadership), data.draw(ids), data.draw(ids))
        for tp in tps
    }
    brokers = [Broker(1, (EndPoint("PLAINTEXT", "h", 9092),), "rack-a")]
    got = convert.update_metadata_request(
        controller_id=3, controller_epoch=7, broker_epoch=0, partitions=states,
        topic_ids=ids_by_topic, live_brokers=brokers,
    )  # fmt: skip
    expected = broker_pb2.UpdateMetadataRequest(
        controller_id=3, is_kraft_controller=False, type=common_pb2.REQUEST_TYPE_UNKNOWN,
        controller_epoch=7, broker_epoch=0,
        live_brokers=[convert.broker_to_wire(b) for b in brokers],
    )  # fmt: skip
    by_topic: dict[str, broker_pb2.UpdateMetadataTopicState] = {}
    for (topic, partition), (info, replicas, offline) in states.items():
        if topic not in by_topic:
            by_topic[topic] = expected.topic_states.add(
                topic_name=topic, topic_id=ids_by_topic.get(topic) or ""
            )
        lai = info.leader_and_isr
        by_topic[topic].partition_states.add(
            partition_index=partition, controller_epoch=info.controller_epoch, leader=lai.leader,
            leader_epoch=lai.leader_epoch, isr=lai.isr, zk_version=lai.partition_epoch,
            replicas=replicas, offline_replicas=offline,
        )  # fmt: skip
    assert got == expected
    assert got.SerializeToString() == expected.SerializeToString()


def test_a_shared_cache_reuses_states_across_requests() -> None:
    info = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 2, (1, 2)), 3)
    ra = ReplicaAssignment((1, 2))
    states = {TopicPartition("t", 0): LeaderAndIsrPartition(info, ra, False)}
    cache = wire.EncodingCache({}.get)
    first = convert.leader_and_isr_request(
        controller_id=1, controller_epoch=3, broker_epoch=1, partitions=states, topic_ids={},
        live_leaders=[], encoded=cache,
    )  # fmt: skip
    second = convert.leader_and_isr_request(
        controller_id=1, controller_epoch=3, broker_epoch=2, partitions=states, topic_ids={},
        live_leaders=[], encoded=cache,
    )  # fmt: skip
    assert len(cache.states) == 1
    assert first.topic_states == second.topic_states
    assert (first.broker_epoch, second.broker_epoch) == (1, 2)
