"""Every znode format read back as written (hypothesis round trips)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.core.model import (
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from controller.zk import codecs, paths
from tests.unit.codec_samples import STATE_PATH

# --------------------------------------------------------------------------------------------
# Round trips (hypothesis)

broker_ids = st.integers(0, 2**31 - 1)
topics = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=20).filter(
    lambda t: t not in (".", "..")
)
tps = st.builds(TopicPartition, topics, st.integers(0, 2**31 - 1))
distinct_ids = st.lists(broker_ids, unique=True, max_size=6).map(tuple)
epochs = st.integers(0, 2**31 - 1)
topic_ids = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    min_size=22,
    max_size=22,
)


@st.composite
def replica_assignments(draw: st.DrawFn) -> ReplicaAssignment:
    replicas = draw(st.lists(broker_ids, unique=True, max_size=8))
    adding = [r for r in replicas if draw(st.booleans())]
    removing = [r for r in replicas if r not in adding and draw(st.booleans())]
    return ReplicaAssignment(tuple(replicas), tuple(adding), tuple(removing))


@st.composite
def endpoint_lists(draw: st.DrawFn) -> tuple[EndPoint, ...]:
    names = draw(
        st.lists(
            st.sampled_from(["PLAINTEXT", "SSL", "INTERNAL", "CONTROLLER", "X_1"]),
            unique=True,
            max_size=4,
        )
    )
    hosts = st.sampled_from(["h1", "broker-1.example.com", "10.0.0.1", "::1", "fe80::1%eth0", ""])
    return tuple(
        EndPoint(
            n,
            draw(hosts),
            draw(st.integers(0, 65535)),
            draw(st.sampled_from(sorted(codecs.SECURITY_PROTOCOLS))),
        )
        for n in names
    )


features = st.dictionaries(
    st.text(min_size=1, max_size=10),
    st.tuples(st.integers(0, 100), st.integers(0, 100)).map(lambda t: (min(t), max(t))),
    max_size=3,
)


class TestRoundTrips:
    @given(broker_ids, st.integers(0, 2**63 - 1), st.sampled_from([1, 2]), st.integers(-1, 99))
    def test_controller(self, broker: int, ts: int, version: int, kraft: int) -> None:
        data = codecs.encode_controller(broker, ts, version=version, kraft_controller_epoch=kraft)
        full = codecs.decode_controller_full(data)
        assert (full.broker_id, full.timestamp_ms, full.version) == (broker, ts, version)
        assert full.kraft_controller_epoch == (kraft if version == 2 else -1)

    @given(epochs)
    def test_controller_epoch(self, epoch: int) -> None:
        assert codecs.decode_controller_epoch(codecs.encode_controller_epoch(epoch)) == epoch

    @given(
        broker_ids,
        endpoint_lists(),
        st.none() | st.text(max_size=10),
        st.integers(-1, 65535),
        st.integers(0, 2**63 - 1),
        features,
    )
    def test_broker_v5(
        self,
        broker: int,
        endpoints: tuple[EndPoint, ...],
        rack: str | None,
        jmx: int,
        ts: int,
        feats: dict[str, tuple[int, int]],
    ) -> None:
        reg = codecs.BrokerRegistration(broker, endpoints, rack, jmx, ts, feats)
        assert (
            codecs.decode_broker_registration(broker, codecs.encode_broker_registration(reg)) == reg
        )

    @given(
        st.one_of(st.none(), topic_ids),
        st.dictionaries(st.integers(0, 2**31 - 1), replica_assignments(), max_size=10),
    )
    def test_topic(self, topic_id: str | None, parts: dict[int, ReplicaAssignment]) -> None:
        assignment = TopicAssignment("t", topic_id, parts)
        assert (
            codecs.decode_topic_assignment("t", codecs.encode_topic_assignment(assignment))
            == assignment
        )

    @given(
        st.one_of(st.none(), topic_ids),
        st.dictionaries(st.integers(0, 2**31 - 1), replica_assignments(), max_size=10),
        st.lists(st.tuples(st.integers(0, 2**31 - 1), replica_assignments()), max_size=10),
    )
    def test_topic_size_follows_the_encoding(
        self,
        topic_id: str | None,
        parts: dict[int, ReplicaAssignment],
        changes: list[tuple[int, ReplicaAssignment]],
    ) -> None:
        # The reassignment's size check for many partitions' changes relies on it being exact.
        def encoded() -> int:
            return len(codecs.encode_topic_assignment(TopicAssignment("t", topic_id, parts)))

        size = codecs.TopicAssignmentSize(TopicAssignment("t", topic_id, dict(parts)))
        assert size.size == encoded()
        for i, (p, ra) in enumerate(changes):
            would_be = size.size_with(p, ra)
            assert size.size == encoded()  # size_with changed nothing
            if i % 2 == 0:
                size.set(p, ra)
                parts[p] = ra
                assert size.size == would_be == encoded()

    @given(
        st.integers(-1, 2**31 - 1),
        epochs,
        distinct_ids,
        st.sampled_from(LeaderRecoveryState),
        epochs,
        st.integers(0, 2**31 - 1),
    )
    def test_partition_state(
        self,
        leader: int,
        leader_epoch: int,
        isr: tuple[int, ...],
        recovery: LeaderRecoveryState,
        controller_epoch: int,
        zk_version: int,
    ) -> None:
        state = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(leader, leader_epoch, isr, recovery, zk_version), controller_epoch
        )
        data = codecs.encode_partition_state(state)
        assert codecs.decode_partition_state(data, zk_version, STATE_PATH) == state

    @given(st.dictionaries(tps, st.lists(broker_ids, unique=True, min_size=1).map(tuple)))
    def test_reassignment(self, reassignment: dict[TopicPartition, tuple[int, ...]]) -> None:
        data = codecs.encode_reassignment(reassignment)
        assert codecs.decode_reassignment(data) == reassignment

    @given(st.sets(tps))
    def test_partition_sets(self, partitions: set[TopicPartition]) -> None:
        data = codecs.encode_preferred_replica_election(partitions)
        assert codecs.decode_preferred_replica_election(data) == partitions
        data = codecs.encode_isr_change_notification(partitions)
        assert codecs.decode_isr_change_notification(data, paths.isr_change_path(1)) == partitions

    @given(broker_ids)
    def test_log_dir_event(self, broker: int) -> None:
        data = codecs.encode_log_dir_event(broker)
        assert codecs.decode_log_dir_event(data, paths.log_dir_event_path(1)) == broker

    @given(st.dictionaries(st.text(), st.text()))
    def test_topic_config(self, config: dict[str, str]) -> None:
        data = codecs.encode_topic_config(config)
        assert codecs.decode_topic_config(data, paths.topic_config_path("t")) == config

    @given(st.sampled_from([1, 2]), st.sampled_from([0, 1]), features)
    def test_feature(self, version: int, status: int, feats: dict[str, tuple[int, int]]) -> None:
        # Finalized levels start at 1; v2 keeps only the max, so it decodes as (max, max).
        feats = {k: (max(lo, 1), max(hi, 1)) for k, (lo, hi) in feats.items()}
        node = codecs.FeatureZNode(version, status, feats)
        decoded = codecs.decode_feature_znode(codecs.encode_feature_znode(node))
        expected = feats if version == 1 else {k: (hi, hi) for k, (_, hi) in feats.items()}
        assert decoded == codecs.FeatureZNode(version, status, expected)

    @given(broker_ids, st.integers(0, 2**62), st.integers(0, 2**62 - 1))  # end <= int64 max
    def test_producer_id_block(self, broker: int, start: int, length: int) -> None:
        block = codecs.ProducerIdBlock(broker, start, start + length)
        assert codecs.decode_producer_id_block(codecs.encode_producer_id_block(block)) == block
