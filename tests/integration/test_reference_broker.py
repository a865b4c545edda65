"""The reference broker over real gRPC: Kafka's broker-side acceptance rules (reference §4.4a),
health, reflection, and (with a real ZooKeeper) its registration and re-registration."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from kazoo.client import KazooClient

from controller.api.errors import Errors
from controller.api.v1 import broker_pb2, broker_pb2_grpc
from controller.broker import BrokerConfig, BrokerIdInUseError, BrokerRegistrar, BrokerServer
from controller.core.model import EndPoint, TopicPartition
from controller.zk import codecs
from controller.zk.kazoo_port import KazooPort

BROKER_EPOCH = 100
ME = 1  # the broker under test


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


@dataclass(frozen=True)
class P:
    """One partition state for a test request."""

    topic: str
    partition: int
    leader: int = ME
    leader_epoch: int = 0
    replicas: Sequence[int] = (ME, 2, 3)
    isr: Sequence[int] = (ME, 2, 3)
    partition_epoch: int = 0
    topic_id: str = ""


class Client:
    """A BrokerService client with request builders, as the controller would send them."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = broker_pb2_grpc.BrokerServiceStub(self.channel)

    def lai(
        self,
        parts: Sequence[P],
        *,
        controller_epoch: int = 1,
        broker_epoch: int = BROKER_EPOCH,
        controller_id: int = 0,
    ) -> broker_pb2.LeaderAndIsrResponse:
        req = broker_pb2.LeaderAndIsrRequest(
            controller_id=controller_id,
            controller_epoch=controller_epoch,
            broker_epoch=broker_epoch,
        )
        topics: dict[str, broker_pb2.LeaderAndIsrTopicState] = {}
        for p in parts:
            if p.topic not in topics:
                topics[p.topic] = req.topic_states.add(topic_name=p.topic, topic_id=p.topic_id)
            topics[p.topic].partition_states.add(
                partition_index=p.partition,
                controller_epoch=controller_epoch,
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                isr=p.isr,
                partition_epoch=p.partition_epoch,
                replicas=p.replicas,
            )
        return self.stub.LeaderAndIsr(req, timeout=5)

    def umr(
        self,
        parts: Sequence[P] = (),
        *,
        live: Sequence[int] = (1, 2, 3),
        controller_epoch: int = 1,
        broker_epoch: int = BROKER_EPOCH,
        controller_id: int = 0,
    ) -> broker_pb2.UpdateMetadataResponse:
        req = broker_pb2.UpdateMetadataRequest(
            controller_id=controller_id,
            controller_epoch=controller_epoch,
            broker_epoch=broker_epoch,
        )
        for b in live:
            req.live_brokers.add(id=b).endpoints.add(
                port=9000 + b, host="127.0.0.1", listener="CONTROLLER"
            )
        topics: dict[str, broker_pb2.UpdateMetadataTopicState] = {}
        for p in parts:
            if p.topic not in topics:
                topics[p.topic] = req.topic_states.add(topic_name=p.topic, topic_id=p.topic_id)
            topics[p.topic].partition_states.add(
                partition_index=p.partition,
                controller_epoch=controller_epoch,
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                isr=p.isr,
                zk_version=p.partition_epoch,
                replicas=p.replicas,
            )
        return self.stub.UpdateMetadata(req, timeout=5)

    def stop_replica(
        self,
        parts: Sequence[tuple[str, int, int, bool]],  # topic, partition, leader epoch, delete
        *,
        controller_epoch: int = 1,
        broker_epoch: int = BROKER_EPOCH,
    ) -> broker_pb2.StopReplicaResponse:
        req = broker_pb2.StopReplicaRequest(
            controller_id=0, controller_epoch=controller_epoch, broker_epoch=broker_epoch
        )
        topics: dict[str, broker_pb2.StopReplicaTopicState] = {}
        for topic, partition, epoch, delete in parts:
            if topic not in topics:
                topics[topic] = req.topic_states.add(topic_name=topic)
            topics[topic].partition_states.add(
                partition_index=partition, leader_epoch=epoch, delete_partition=delete
            )
        return self.stub.StopReplica(req, timeout=5)

    def describe(self) -> broker_pb2.DescribeResponse:
        return self.stub.Describe(broker_pb2.DescribeRequest(), timeout=5)

    def hosted(self, topic: str, partition: int) -> broker_pb2.HostedPartition | None:
        for h in self.describe().partitions:
            if (h.topic_name, h.partition_index) == (topic, partition):
                return h
        return None


def lai_errors(resp: broker_pb2.LeaderAndIsrResponse) -> dict[tuple[str, int], int]:
    return {
        (t.topic_name, p.partition_index): p.error_code
        for t in resp.topics
        for p in t.partition_errors
    }


def sr_errors(resp: broker_pb2.StopReplicaResponse) -> dict[tuple[str, int], int]:
    return {(p.topic_name, p.partition_index): p.error_code for p in resp.partition_errors}


@pytest.fixture
def broker() -> Iterator[BrokerServer]:
    server = BrokerServer(BrokerConfig(ME), broker_epoch=BROKER_EPOCH).start()
    yield server
    server.stop(grace=0)


@pytest.fixture
def client(broker: BrokerServer) -> Iterator[Client]:
    c = Client(broker.address)
    yield c
    c.channel.close()


# --- every controller request: the broker epoch ------------------------------------------------


def test_lower_broker_epoch_is_rejected_on_every_request(client: Client) -> None:
    resp = client.lai([P("t", 0), P("t", 1)], broker_epoch=BROKER_EPOCH - 1)
    assert resp.error_code == Errors.STALE_BROKER_EPOCH
    # Kafka's error response repeats the error for every partition.
    assert lai_errors(resp) == {("t", 0): 77, ("t", 1): 77}
    assert client.umr(broker_epoch=BROKER_EPOCH - 1).error_code == Errors.STALE_BROKER_EPOCH
    sr = client.stop_replica([("t", 0, 0, False)], broker_epoch=BROKER_EPOCH - 1)
    assert sr.error_code == Errors.STALE_BROKER_EPOCH
    assert list(sr.partition_errors) == []
    d = client.describe()
    assert list(d.partitions) == [] and list(d.live_brokers) == []
    assert d.controller_epoch == 0  # nothing was accepted
    assert d.requests_received == {"LeaderAndIsr": 1, "UpdateMetadata": 1, "StopReplica": 1}


@pytest.mark.parametrize("epoch", [-1, BROKER_EPOCH, BROKER_EPOCH + 1])
def test_unknown_equal_or_higher_broker_epoch_is_accepted(client: Client, epoch: int) -> None:
    resp = client.lai([P("t", 0)], broker_epoch=epoch)
    assert resp.error_code == Errors.NONE
    assert lai_errors(resp) == {("t", 0): Errors.NONE}
    assert client.umr(broker_epoch=epoch).error_code == Errors.NONE
    assert client.stop_replica([("t", 0, 0, False)], broker_epoch=epoch).error_code == 0


# --- controller epoch -----------------------------------------------------------------------


def test_stale_controller_epoch_leader_and_isr_and_stop_replica(client: Client) -> None:
    assert client.lai([P("t", 0, leader_epoch=0)], controller_epoch=5).error_code == 0
    assert client.describe().controller_epoch == 5

    resp = client.lai([P("t", 0, leader_epoch=9)], controller_epoch=4)
    assert resp.error_code == Errors.STALE_CONTROLLER_EPOCH
    assert lai_errors(resp) == {("t", 0): Errors.STALE_CONTROLLER_EPOCH}
    hosted = client.hosted("t", 0)
    assert hosted is not None and hosted.leader_epoch == 0  # not applied

    sr = client.stop_replica([("t", 0, 0, True)], controller_epoch=4)
    assert sr.error_code == Errors.STALE_CONTROLLER_EPOCH
    assert list(sr.partition_errors) == []
    assert client.hosted("t", 0) is not None  # not deleted

    # The same epoch is fine, and the highest epoch seen is what counts.
    assert client.lai([P("t", 0, leader_epoch=1)], controller_epoch=5).error_code == 0
    assert client.stop_replica([("t", 0, 1, False)], controller_epoch=6).error_code == 0
    assert client.lai([P("t", 0, leader_epoch=2)], controller_epoch=5).error_code == (
        Errors.STALE_CONTROLLER_EPOCH
    )
    assert client.describe().controller_epoch == 6


def test_stale_controller_epoch_on_update_metadata_is_not_controller(client: Client) -> None:
    assert client.umr([P("t", 0)], live=(1, 2, 3), controller_epoch=3).error_code == 0
    resp = client.umr([P("t", 0, leader=2)], live=(1,), controller_epoch=2)
    assert resp.error_code == Errors.NOT_CONTROLLER
    d = client.describe()
    assert [b.id for b in d.live_brokers] == [1, 2, 3]  # unchanged
    assert d.metadata_partitions[0].state.leader == ME
    # An UMR's epoch also raises the bar for LeaderAndIsr.
    assert client.lai([P("t", 0)], controller_epoch=2).error_code == Errors.STALE_CONTROLLER_EPOCH


# --- LeaderAndIsr, per partition --------------------------------------------------------------


def test_higher_leader_epoch_applies_leader_or_follower(client: Client) -> None:
    resp = client.lai(
        [
            P(
                "t",
                0,
                leader=ME,
                leader_epoch=0,
                partition_epoch=3,
                topic_id="AAAAAAAAAAAAAAAAAAAAAQ",
            ),
            P("t", 1, leader=2, leader_epoch=4, isr=(2, ME)),
        ]
    )
    assert resp.error_code == 0
    assert lai_errors(resp) == {("t", 0): 0, ("t", 1): 0}
    assert resp.topics[0].topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    leader, follower = client.hosted("t", 0), client.hosted("t", 1)
    assert leader is not None and follower is not None
    assert leader.role == broker_pb2.PARTITION_ROLE_LEADER
    assert (leader.leader_epoch, leader.partition_epoch) == (0, 3)
    assert leader.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert follower.role == broker_pb2.PARTITION_ROLE_FOLLOWER
    assert (follower.leader, follower.leader_epoch, list(follower.isr)) == (2, 4, [2, ME])

    # A newer epoch moves leadership.
    assert lai_errors(client.lai([P("t", 0, leader=3, leader_epoch=1)])) == {("t", 0): 0}
    moved = client.hosted("t", 0)
    assert moved is not None
    assert (moved.role, moved.leader) == (broker_pb2.PARTITION_ROLE_FOLLOWER, 3)


def test_lower_or_equal_leader_epoch_is_stale_controller_epoch_and_changes_nothing(
    client: Client,
) -> None:
    client.lai([P("t", 0, leader_epoch=5, isr=(ME, 2, 3))])
    resp = client.lai(
        [P("t", 0, leader_epoch=4, isr=(ME,))], controller_epoch=2
    )  # a newer controller, an older leader epoch
    assert lai_errors(resp) == {("t", 0): Errors.STALE_CONTROLLER_EPOCH}
    assert resp.error_code == Errors.NONE  # a per-partition outcome, not a request failure
    resp = client.lai([P("t", 0, leader=2, leader_epoch=5, isr=(2,))])
    assert lai_errors(resp) == {("t", 0): Errors.STALE_CONTROLLER_EPOCH}
    hosted = client.hosted("t", 0)
    assert hosted is not None
    assert (hosted.leader, hosted.leader_epoch, list(hosted.isr)) == (ME, 5, [ME, 2, 3])


def test_partition_without_this_broker_in_replicas_is_unknown(client: Client) -> None:
    resp = client.lai([P("t", 0, leader=2, replicas=(2, 3), isr=(2, 3)), P("t", 1)])
    assert lai_errors(resp) == {("t", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION, ("t", 1): 0}
    assert client.hosted("t", 0) is None


def test_equal_epoch_topic_id_bookkeeping(client: Client) -> None:
    client.lai([P("t", 0, leader_epoch=2)])  # no topic id yet
    # Same epoch, now with an id: Kafka assigns it and answers NONE.
    resp = client.lai([P("t", 0, leader_epoch=2, topic_id="AAAAAAAAAAAAAAAAAAAAAg")])
    assert lai_errors(resp) == {("t", 0): Errors.NONE}
    hosted = client.hosted("t", 0)
    assert hosted is not None and hosted.topic_id == "AAAAAAAAAAAAAAAAAAAAAg"
    # A different id for the same partition is refused, whatever the epoch.
    resp = client.lai([P("t", 0, leader_epoch=3, topic_id="AAAAAAAAAAAAAAAAAAAAAw")])
    assert lai_errors(resp) == {("t", 0): Errors.INCONSISTENT_TOPIC_ID}
    # Same id, same epoch: the plain "nothing new" answer.
    resp = client.lai([P("t", 0, leader_epoch=2, topic_id="AAAAAAAAAAAAAAAAAAAAAg")])
    assert lai_errors(resp) == {("t", 0): Errors.STALE_CONTROLLER_EPOCH}
    # Same epoch without the id we hold: NONE only as a follower (Kafka's topic-id downgrade
    # case); as the leader it is the plain "nothing new" answer.
    resp = client.lai([P("t", 0, leader_epoch=2)])
    assert lai_errors(resp) == {("t", 0): Errors.STALE_CONTROLLER_EPOCH}
    resp = client.lai([P("t", 0, leader=2, leader_epoch=3, topic_id="AAAAAAAAAAAAAAAAAAAAAg")])
    assert lai_errors(resp) == {("t", 0): Errors.NONE}  # now a follower of broker 2
    resp = client.lai([P("t", 0, leader=2, leader_epoch=3)])
    assert lai_errors(resp) == {("t", 0): Errors.NONE}


def test_failed_log_dir_answers_kafka_storage_error(broker: BrokerServer, client: Client) -> None:
    client.lai([P("t", 0), P("t", 1)])
    broker.fail_log_dir([TopicPartition("t", 1), TopicPartition("u", 0)])
    resp = client.lai([P("t", 0, leader_epoch=1), P("t", 1, leader_epoch=1), P("u", 0)])
    assert lai_errors(resp) == {
        ("t", 0): Errors.NONE,
        ("t", 1): Errors.KAFKA_STORAGE_ERROR,
        ("u", 0): Errors.KAFKA_STORAGE_ERROR,
    }
    sr = client.stop_replica([("t", 1, -2, True)])
    assert sr_errors(sr) == {("t", 1): Errors.KAFKA_STORAGE_ERROR}
    offline = {(tp.topic, tp.partition) for tp in client.describe().offline_partitions}
    assert offline == {("t", 1), ("u", 0)}


# --- StopReplica ------------------------------------------------------------------------------


@pytest.mark.parametrize("epoch", [-2, -1, 5, 6])
def test_stop_replica_accepts_sentinels_and_current_or_newer_epochs(
    client: Client, epoch: int
) -> None:
    client.lai([P("t", 0, leader_epoch=5), P("t", 1, leader_epoch=5)])
    sr = client.stop_replica([("t", 0, epoch, False), ("t", 1, epoch, True)])
    assert sr.error_code == Errors.NONE
    assert sr_errors(sr) == {("t", 0): Errors.NONE, ("t", 1): Errors.NONE}
    stopped = client.hosted("t", 0)
    assert stopped is not None and stopped.role == broker_pb2.PARTITION_ROLE_STOPPED
    assert client.hosted("t", 1) is None  # delete_partition removes it


def test_stop_replica_with_an_older_leader_epoch_is_fenced(client: Client) -> None:
    client.lai([P("t", 0, leader_epoch=5)])
    sr = client.stop_replica([("t", 0, 4, True), ("gone", 0, 0, True)])
    assert sr_errors(sr) == {("t", 0): Errors.FENCED_LEADER_EPOCH, ("gone", 0): Errors.NONE}
    hosted = client.hosted("t", 0)
    assert hosted is not None and hosted.role == broker_pb2.PARTITION_ROLE_LEADER


def test_stopped_partition_keeps_its_epoch(client: Client) -> None:
    client.lai([P("t", 0, leader_epoch=5)])
    client.stop_replica([("t", 0, 5, False)])
    assert lai_errors(client.lai([P("t", 0, leader_epoch=5)])) == {("t", 0): 11}
    assert lai_errors(client.lai([P("t", 0, leader=2, leader_epoch=6)])) == {("t", 0): 0}
    hosted = client.hosted("t", 0)
    assert hosted is not None and hosted.role == broker_pb2.PARTITION_ROLE_FOLLOWER


# --- UpdateMetadata ---------------------------------------------------------------------------


def test_update_metadata_replaces_live_brokers_and_upserts_partitions(client: Client) -> None:
    assert (
        client.umr([P("t", 0), P("t", 1, leader=2)], live=(1, 2, 3), controller_id=7).error_code
        == 0
    )
    assert client.umr([P("t", 1, leader=3, leader_epoch=1)], live=(3, 1)).error_code == 0
    d = client.describe()
    assert [b.id for b in d.live_brokers] == [1, 3]  # replaced, not merged
    assert d.live_brokers[0].endpoints[0].port == 9001
    states = {(m.topic_name, m.state.partition_index): m.state for m in d.metadata_partitions}
    assert states[("t", 0)].leader == ME
    assert (states[("t", 1)].leader, states[("t", 1)].leader_epoch) == (3, 1)
    assert d.metadata_controller_id == 0  # from the latest UMR
    # UpdateMetadata never touches the partition table.
    assert list(d.partitions) == []


def test_update_metadata_leader_minus_two_removes_the_partition(client: Client) -> None:
    client.umr([P("t", 0), P("t", 1), P("u", 0)])
    client.umr([P("t", 0, leader=-2), P("t", 1, leader=-2)])
    d = client.describe()
    assert [(m.topic_name, m.state.partition_index) for m in d.metadata_partitions] == [("u", 0)]


# --- the gRPC server --------------------------------------------------------------------------


def test_health_and_reflection(broker: BrokerServer) -> None:
    channel = grpc.insecure_channel(broker.address)
    try:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "zkcontroller.v1.BrokerService"):
            status = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status
            assert status == health_pb2.HealthCheckResponse.SERVING
        refl = reflection_pb2_grpc.ServerReflectionStub(channel)
        answers = refl.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5
        )
        names = {s.name for a in answers for s in a.list_services_response.service}
        assert {"zkcontroller.v1.BrokerService", "grpc.health.v1.Health"} <= names
    finally:
        channel.close()


def test_many_brokers_in_one_process_keep_separate_state() -> None:
    servers = [BrokerServer(BrokerConfig(b), broker_epoch=b * 10).start() for b in range(1, 6)]
    try:
        assert len({s.port for s in servers}) == 5
        c3 = Client(servers[2].address)
        p = P("t", 0, leader=3, replicas=(3,), isr=(3,))
        assert lai_errors(c3.lai([p], broker_epoch=30)) == {("t", 0): 0}
        for s in servers:
            d = s.describe()
            assert d.broker_id == s.broker_id and d.broker_epoch == s.broker_id * 10
            assert len(d.partitions) == (1 if s.broker_id == 3 else 0)
        c3.channel.close()
    finally:
        for s in servers:
            s.stop(grace=0)


def test_listen_address_in_use_fails_to_start(broker: BrokerServer) -> None:
    other = BrokerServer(BrokerConfig(2, listen=f"127.0.0.1:{broker.port}"))
    with pytest.raises(OSError, match="cannot listen"):
        other.start()


# --- ZooKeeper registration (needs a real ZooKeeper) ------------------------------------------


@pytest.fixture
def zk_port(zk_connect: str) -> Iterator[KazooPort]:
    port = KazooPort(zk_connect, session_timeout=6.0)
    port.start()
    yield port
    port.stop()


def kazoo(zk_connect: str) -> KazooClient:
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=10)
    return client


def expire_session(zk_connect: str, client_id: tuple[int, bytes]) -> None:
    """A real server-side expiry: take the session over with a second client, then close it."""
    hosts = zk_connect.split("/", 1)[0]
    thief = KazooClient(hosts=hosts, client_id=client_id)
    thief.start(timeout=10)
    thief.stop()
    thief.close()


def test_registration_is_kafkas_v5_json_and_the_epoch_is_the_czxid(
    zk_connect: str, zk_port: KazooPort
) -> None:
    server = BrokerServer(BrokerConfig(4, rack="rack-a"), zk_port).start()
    observer = kazoo(zk_connect)
    try:
        data, stat = observer.get("/brokers/ids/4")
        doc = json.loads(data)
        address = f"127.0.0.1:{server.port}"
        assert doc == {
            "version": 5,
            "host": "127.0.0.1",
            "port": server.port,
            "jmx_port": -1,
            "timestamp": doc["timestamp"],
            "endpoints": [f"PLAINTEXT://{address}", f"CONTROLLER://{address}"],
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "PLAINTEXT"},
            "rack": "rack-a",
            "features": {},
        }
        assert isinstance(doc["timestamp"], str) and doc["timestamp"].isdigit()
        # Kafka's create-then-setData multi leaves version 1; the node is ephemeral and ours.
        assert stat.version == 1
        assert stat.ephemeralOwner == zk_port.session_id
        assert server.broker_epoch == stat.czxid
        assert Client(server.address).describe().broker_epoch == stat.czxid
        # The controller's own decoder reads it, and finds the CONTROLLER endpoint.
        decoded = codecs.decode_broker(4, data)
        endpoint = decoded.endpoint("CONTROLLER")
        assert endpoint is not None and endpoint.address == server.address
        assert decoded.rack == "rack-a"
        # Kafka's persistent top-level paths exist.
        for path in ("/brokers/topics", "/admin/delete_topics", "/isr_change_notification"):
            assert observer.exists(path) is not None

        server.stop(grace=0)
        assert observer.exists("/brokers/ids/4") is None  # deregistered on stop
    finally:
        server.stop(grace=0)
        observer.stop()


def test_the_broker_serves_only_once_it_knows_its_broker_epoch(zk_port: KazooPort) -> None:
    """Kafka's broker registers before it processes requests: until then it cannot tell a
    request meant for an earlier incarnation on the same port (a stale broker epoch)."""

    class Probing(BrokerServer):
        serving_at_registration: list[bool] = []

        def _on_registered(self, epoch: int) -> None:
            super()._on_registered(epoch)
            if not self.serving_at_registration:
                with grpc.insecure_channel(self.address) as channel:
                    try:
                        health_pb2_grpc.HealthStub(channel).Check(
                            health_pb2.HealthCheckRequest(), timeout=0.5
                        )
                        self.serving_at_registration.append(True)
                    except grpc.RpcError:
                        self.serving_at_registration.append(False)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        fixed = s.getsockname()[1]
    first = BrokerServer(BrokerConfig(4, listen=f"127.0.0.1:{fixed}"), zk_port).start()
    old_epoch = first.broker_epoch
    first.stop(grace=0)
    server = Probing(BrokerConfig(4, listen=f"127.0.0.1:{fixed}"), zk_port).start()
    try:
        assert server.serving_at_registration == [False]
        assert server.broker_epoch > old_epoch
        # The earlier incarnation's request is refused from the first request served.
        resp = Client(server.address).lai(
            [P("t", 0, leader=4, replicas=(4,), isr=(4,))], broker_epoch=old_epoch
        )
        assert resp.error_code == Errors.STALE_BROKER_EPOCH
    finally:
        server.stop(grace=0)


def test_session_expiry_re_registers_with_a_new_epoch(zk_connect: str, zk_port: KazooPort) -> None:
    server = BrokerServer(BrokerConfig(ME), zk_port).start()
    client = Client(server.address)
    observer = kazoo(zk_connect)
    try:
        old_epoch = server.broker_epoch
        old_session = zk_port.session_id
        assert client.lai([P("t", 0)], broker_epoch=old_epoch).error_code == 0
        client_id = zk_port.client_id
        assert client_id is not None
        expire_session(zk_connect, client_id)

        assert wait_until(lambda: server.broker_epoch != old_epoch), "no re-registration"
        _, stat = observer.get("/brokers/ids/1")
        assert stat.czxid == server.broker_epoch > old_epoch
        assert stat.ephemeralOwner == zk_port.session_id != old_session
        assert stat.version == 1
        # Requests carrying the old epoch are now stale; the new one works.
        resp = client.lai([P("t", 0, leader_epoch=1)], broker_epoch=old_epoch)
        assert resp.error_code == Errors.STALE_BROKER_EPOCH
        resp = client.lai([P("t", 0, leader_epoch=1)], broker_epoch=server.broker_epoch)
        assert resp.error_code == Errors.NONE
    finally:
        client.channel.close()
        server.stop(grace=0)
        observer.stop()


def test_broker_id_registered_by_another_session_is_refused(
    zk_connect: str, zk_port: KazooPort
) -> None:
    first = BrokerServer(BrokerConfig(5), zk_port).start()
    other_port = KazooPort(zk_connect, session_timeout=6.0)
    other_port.start()
    try:
        second = BrokerServer(BrokerConfig(5), other_port)
        with pytest.raises(BrokerIdInUseError, match="broker id 5 is already registered"):
            second.start()
        with pytest.raises(ConnectionRefusedError):  # it stopped serving when it failed
            socket.create_connection(("127.0.0.1", second.port), timeout=2).close()
        _, stat = other_port.get("/brokers/ids/5")
        assert stat.czxid == first.broker_epoch  # the first registration is untouched
    finally:
        first.stop(grace=0)
        other_port.stop()


def test_persistent_broker_node_is_reported_as_one_to_delete_by_hand(
    zk_port: KazooPort,
) -> None:
    # Not a live broker's registration: owner 0 never expires, waiting cannot help.
    zk_port.ensure_path("/brokers/ids")
    zk_port.create("/brokers/ids/5", b"{}")
    _, before = zk_port.get("/brokers/ids/5")
    assert before.ephemeral_owner == 0
    server = BrokerServer(BrokerConfig(5), zk_port)
    with pytest.raises(BrokerIdInUseError) as raised:
        server.start()
    message = str(raised.value)
    assert "/brokers/ids/5" in message
    assert "persistent (non-ephemeral) znode" in message
    assert "delete it by hand" in message
    assert "session 0x0" not in message and "another broker" not in message
    _, after = zk_port.get("/brokers/ids/5")
    assert after.czxid == before.czxid  # left alone: deleting it is the operator's call


def test_leftover_node_of_a_previous_session_is_replaced(
    zk_connect: str, zk_port: KazooPort
) -> None:
    # Models a broker whose old session's ephemeral is still visible after it got a new
    # session: the registrar knows that session was its own, so it deletes and re-creates.
    old = BrokerRegistrar(zk_port, _registration(6))
    old_epoch = old.register()
    new_port = KazooPort(zk_connect, session_timeout=6.0)
    new_port.start()
    try:
        epochs: list[int] = []
        new = BrokerRegistrar(
            new_port, _registration(6), epochs.append, previous_sessions=set(old.sessions)
        )
        epoch = new.register()
        _, stat = new_port.get("/brokers/ids/6")
        assert epoch == stat.czxid == epochs[0] > old_epoch
        assert stat.ephemeral_owner == new_port.session_id
    finally:
        new_port.stop()


def test_node_already_created_by_this_session_is_adopted(
    zk_port: KazooPort, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ZOOKEEPER-2985: a create whose reply was lost and that was resent finds its own node,
    # with its own bytes (the multi applied create and data together).
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.0)  # the registration's timestamp
    zk_port.ensure_path("/brokers/ids")
    registration = dataclasses.replace(_registration(8), timestamp_ms=1_700_000_000_000)
    zk_port.create("/brokers/ids/8", codecs.encode_broker_registration(registration),
                   ephemeral=True)  # fmt: skip
    _, before = zk_port.get("/brokers/ids/8")
    epoch = BrokerRegistrar(zk_port, _registration(8)).register()
    assert epoch == before.czxid


def test_brokers_sharing_a_session_cannot_take_each_others_id(zk_port: KazooPort) -> None:
    # Brokers in one process may share a session: the node's owner alone said "ours", so a
    # second broker with the id took the first one's epoch (and its stop deleted the first
    # one's registration); a broker stopped without deregistering and started again kept
    # advertising its old port.
    first = BrokerServer(BrokerConfig(8), zk_port).start()
    second = BrokerServer(BrokerConfig(8), zk_port)
    with pytest.raises(BrokerIdInUseError):
        second.start()
    second.stop(grace=0)
    data, stat = zk_port.get("/brokers/ids/8")
    assert stat.czxid == first.broker_epoch  # untouched by the refused one, and its stop
    assert f':{first.port}"' in data.decode()
    first.stop(grace=0, deregister=False)  # crashed; the session (shared) lives on
    again = BrokerServer(BrokerConfig(8), zk_port).start()
    try:
        data, stat = zk_port.get("/brokers/ids/8")
        assert stat.czxid == again.broker_epoch > first.broker_epoch  # a new incarnation
        assert f':{again.port}"' in data.decode() and f':{first.port}"' not in data.decode()
    finally:
        again.stop(grace=0)


def test_cli_runs_registers_and_stops_cleanly_on_sigterm(zk_connect: str) -> None:
    # A chroot nobody created yet: the broker creates it, as Kafka's does (a broker may well
    # start before any controller on a new cluster).
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller",
            "broker",
            "--zookeeper",
            f"{zk_connect}/fresh",
            "--broker-id",
            "11",
            "--session-timeout-ms",
            "6000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ZK_CONNECT": ""},
        text=True,
    )
    observer = kazoo(zk_connect)
    try:
        assert wait_until(lambda: observer.exists("/fresh/brokers/ids/11") is not None, 20), (
            proc.stdout.read() if proc.poll() is not None and proc.stdout else "not registered"
        )
        data, _ = observer.get("/fresh/brokers/ids/11")
        endpoint = codecs.decode_broker(11, data).endpoint("CONTROLLER")
        assert endpoint is not None
        described = Client(endpoint.address).describe()
        assert described.broker_id == 11
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        assert observer.exists("/fresh/brokers/ids/11") is None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        observer.stop()


def test_cli_sigusr1_fails_the_log_dir_of_the_hosted_partitions(zk_connect: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller", "broker", "--zookeeper", zk_connect,
         "--broker-id", "12", "--session-timeout-ms", "6000",
         "--controlled-shutdown-enable", "false"],  # no controller here to ask
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "ZK_CONNECT": ""},
        text=True,
    )  # fmt: skip
    observer = kazoo(zk_connect)
    try:
        assert wait_until(lambda: observer.exists("/brokers/ids/12") is not None, 20)
        data, stat = observer.get("/brokers/ids/12")
        endpoint = codecs.decode_broker(12, data).endpoint("CONTROLLER")
        assert endpoint is not None
        client = Client(endpoint.address)
        before = P("t", 0, leader=12, replicas=(12,), isr=(12,))
        assert lai_errors(client.lai([before], broker_epoch=stat.czxid)) == {("t", 0): 0}

        proc.send_signal(signal.SIGUSR1)
        assert wait_until(
            lambda: (
                [(p.topic, p.partition) for p in client.describe().offline_partitions] == [("t", 0)]
            )
        )
        # The controller is told, as Kafka's broker tells it.
        assert wait_until(lambda: bool(observer.get_children("/log_dir_event_notification")))
        [name] = observer.get_children("/log_dir_event_notification")
        event, _ = observer.get(f"/log_dir_event_notification/{name}")
        assert codecs.decode_log_dir_event(event, name) == 12
        # A partition created afterwards lands on a healthy dir; the failed one stays failed.
        after = P("t", 1, leader=12, replicas=(12,), isr=(12,))
        errors = lai_errors(client.lai([before, after], broker_epoch=stat.czxid))
        assert errors == {("t", 0): Errors.KAFKA_STORAGE_ERROR, ("t", 1): 0}
        assert proc.poll() is None  # still serving
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        observer.stop()


def _registration(broker_id: int) -> codecs.BrokerRegistration:
    return codecs.BrokerRegistration(
        broker_id, (EndPoint("CONTROLLER", "127.0.0.1", 9000 + broker_id),)
    )
