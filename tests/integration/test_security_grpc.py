"""gRPC security with certificates made at test time: a TLS/mTLS cluster end to end, who may
call the admin and controller services, handshake refusals, and certificate rotation."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from kazoo.exceptions import NoNodeError
from structlog.testing import capture_logs

from controller.admin.controller_client import (
    ControllerAccessDeniedError,
    ControllerClient,
    ControllerTlsHandshakeError,
    ControllerTlsMismatchError,
    NoActiveControllerError,
)
from controller.api.v1 import (
    admin_pb2,
    admin_pb2_grpc,
    broker_pb2,
    broker_pb2_grpc,
    controller_pb2,
    controller_pb2_grpc,
)
from controller.broker.server import BrokerConfig, BrokerServer
from controller.channel.manager import ControllerChannelManager
from controller.channel.sender import OutboundRequest
from controller.core.model import Broker, EndPoint, TopicPartition
from controller.rpc.server import ADMIN_SERVICE, ControllerGrpcServer
from controller.security import authz
from controller.security.testing import CertificateAuthority, certificate_serial
from controller.security.tls import PLAINTEXT, ChannelOpener, TlsSettings, client_tls
from controller.zk import paths
from tests.cluster import Cluster
from tests.support import CLI, REPO, kazoo, wait_until

LOOPBACK_SANS = ("127.0.0.1", "localhost")


@dataclass
class Pki:
    ca: CertificateAuthority
    ca_file: Path
    files: dict[str, tuple[Path, Path]]  # name -> (cert, key)
    serials: dict[str, int]
    dir: Path

    def settings(self, name: str, *, mutual: bool = True) -> TlsSettings:
        cert, key = self.files[name]
        return TlsSettings(cert, key, self.ca_file, client_auth_required=mutual)

    def opener(self, name: str | None) -> ChannelOpener:
        if name is None:  # trusts the CA, presents no certificate
            return TlsSettings(ca_file=self.ca_file).opener()
        return self.settings(name).opener()

    def issue(self, name: str, cn: str | None = None, sans: tuple[str, ...] = ()) -> None:
        issued = self.ca.issue(cn or name, sans)
        self.files[name] = issued.write(self.dir / name)
        self.serials[name] = issued.serial


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    ca = CertificateAuthority("zk-controller test CA")
    pki = Pki(ca, ca.write(tmp_path / "ca.crt"), {}, {}, tmp_path)
    pki.issue("controller-0", sans=LOOPBACK_SANS)
    for broker in ("broker-1", "broker-2"):
        pki.issue(broker, sans=LOOPBACK_SANS)
    pki.issue("admin-alice")
    pki.issue("admin-mallory")
    # Same name as an allowed admin, signed by a CA nobody trusts.
    evil = CertificateAuthority("evil CA")
    pki.files["evil-alice"] = evil.issue("admin-alice").write(tmp_path / "evil-alice")
    return pki


def _controller_settings(pki: Pki) -> dict[str, str]:
    cert, key = pki.files["controller-0"]
    return {
        "grpc.tls.cert.file": str(cert),
        "grpc.tls.key.file": str(key),
        "grpc.tls.ca.file": str(pki.ca_file),
        "grpc.tls.client.auth": "required",
        "admin.allowed.principals": "admin-alice",
        "broker.allowed.principals": "broker-1,broker-2",
    }


@pytest.fixture
def cluster(zk_connect: str, tmp_path: Path, pki: Pki) -> Iterator[Cluster]:
    c = Cluster(zk_connect, tmp_path)
    c.start_controller(0, **_controller_settings(pki))
    c.active_controller()
    for broker_id in (1, 2):
        c.start_broker(broker_id, tls=pki.settings(f"broker-{broker_id}"))
    yield c
    c.close()


def _admin(cluster: Cluster, pki: Pki, who: str | None, timeout_s: float = 10) -> ControllerClient:
    port = cluster.broker_port(1)  # any session on the cluster's chroot finds the controller
    return ControllerClient(port, timeout_s=timeout_s, channel_opener=pki.opener(who))


def _list_reassignments(client: ControllerClient) -> admin_pb2.ListPartitionReassignmentsResponse:
    try:
        return client.admin(
            "ListPartitionReassignments", admin_pb2.ListPartitionReassignmentsRequest()
        )
    finally:
        client.close()


def test_a_tls_cluster_works_end_to_end(cluster: Cluster, pki: Pki) -> None:
    # Brokers advertise SSL listeners, so the controller dials them with TLS.
    registration = cluster.broker_registration(1)
    assert {e.security_protocol for e in registration.endpoints} == {"SSL"}
    cluster.create_topic("tls", {0: [1, 2], 1: [2, 1]})
    cluster.wait_state("tls", 0, leader=1, isr=[1, 2])
    cluster.wait_state("tls", 1, leader=2, isr=[2, 1])
    # LeaderAndIsr and UpdateMetadata were delivered over mutual TLS.
    wait_until(lambda: len(cluster.hosted(1)) == 2 and len(cluster.hosted(2)) == 2,
               what="both brokers host both partitions")  # fmt: skip
    wait_until(lambda: len(cluster.metadata(2)) == 2, what="metadata on broker 2")
    # Followers fetch from their leaders over mutual TLS as well.
    follower = cluster.brokers[2].replication.fetcher
    wait_until(lambda: follower.last_results.get(TopicPartition("tls", 0)) == "NONE",
               what="broker 2 fetching tls-0 from broker 1")  # fmt: skip
    # Brokers call ControllerService over mutual TLS too (an allowed broker principal):
    # controlled shutdown moves broker 1's leadership away.
    assert cluster.brokers[1].controlled_shutdown()
    cluster.wait_state("tls", 0, leader=2)


def test_admin_api_accepts_allowed_principals_and_refuses_others(
    cluster: Cluster, pki: Pki
) -> None:
    assert _list_reassignments(_admin(cluster, pki, "admin-alice")).error_code == 0
    with capture_logs() as logs:
        for _ in range(3):  # a caller retrying: logged once a minute, not per call
            with pytest.raises(ControllerAccessDeniedError) as denied:
                _list_reassignments(_admin(cluster, pki, "admin-mallory"))
    assert "PERMISSION_DENIED" in str(denied.value)
    assert "CN=admin-mallory" in str(denied.value)
    refused = [e for e in logs if e["event"] == "gRPC call refused"]
    assert len(refused) == 1 and "admin-mallory" in refused[0]["reason"], refused
    # A broker's certificate is not an admin's...
    with pytest.raises(ControllerAccessDeniedError, match="PERMISSION_DENIED"):
        _list_reassignments(_admin(cluster, pki, "broker-1"))
    # ...and an admin's is not a broker's.
    client = _admin(cluster, pki, "admin-alice")
    try:
        with pytest.raises(ControllerAccessDeniedError, match="ControllerService/AlterPartition"):
            client.controller("AlterPartition", controller_pb2.AlterPartitionRequest(broker_id=1))
    finally:
        client.close()


def test_mutual_tls_refuses_clients_without_a_trusted_certificate(
    cluster: Cluster, pki: Pki
) -> None:
    address = cluster.active_controller().grpc.address
    request = health_pb2.HealthCheckRequest()
    for who in (None, "evil-alice"):  # no certificate; a certificate from another CA
        channel = pki.opener(who).open(address)
        with channel, pytest.raises(grpc.RpcError) as refused:
            health_pb2_grpc.HealthStub(channel).Check(request, timeout=5)
        assert refused.value.code() is grpc.StatusCode.UNAVAILABLE, who
        with pytest.raises(NoActiveControllerError) as unreachable:
            _list_reassignments(_admin(cluster, pki, who, timeout_s=2))
        assert not isinstance(unreachable.value, ControllerAccessDeniedError)
        # Only the missing certificate shows in the registration; a foreign CA does not.
        assert isinstance(unreachable.value, ControllerTlsMismatchError) == (who is None), who
    with grpc.insecure_channel(address) as plaintext, pytest.raises(grpc.RpcError) as refused:
        health_pb2_grpc.HealthStub(plaintext).Check(request, timeout=5)
    assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
    # Any certificate from the CA may use health checking (no rule on it).
    with pki.opener("admin-mallory").open(address) as channel:
        assert health_pb2_grpc.HealthStub(channel).Check(request, timeout=5).status == 1


def test_clients_whose_tls_settings_cannot_work_are_told_at_once(
    cluster: Cluster, pki: Pki
) -> None:
    """A TLS listener closes a plaintext connection without a word, and a mutual-TLS one a
    client without a certificate: the client used to retry that until its deadline (35 s for
    the admin commands) and then guess. The registration says what the listener needs."""
    daemon = cluster.active_controller()
    registered = wait_until(lambda: _registration(cluster, 0), what="the endpoint registered")
    assert registered["grpc_security_protocol"] == "SSL"
    assert registered["grpc_client_auth"] == "required"
    where = f"controller 0 at {daemon.endpoint().grpc}"
    cases = (
        (PLAINTEXT, "serves gRPC over TLS, and this client is plaintext: give it "
                    "--tls-ca-file, --tls-cert-file and --tls-key-file"),
        (pki.opener(None), "requires a client certificate (mutual TLS), and this client has "
                           "none: give it --tls-cert-file and --tls-key-file"),
    )  # fmt: skip
    for opener, problem in cases:
        client = ControllerClient(cluster.broker_port(1), timeout_s=30, channel_opener=opener)
        started = time.monotonic()
        with pytest.raises(ControllerTlsMismatchError) as mismatch:
            _list_reassignments(client)
        assert time.monotonic() - started < 5  # not the deadline
        assert str(mismatch.value) == f"{where} {problem}"
    # The admin commands say it in one line, and soon.
    started = time.monotonic()
    plain = subprocess.run(
        [*CLI, "elect", "--type", "preferred", "--all", "--zookeeper", cluster.connect],
        capture_output=True, text=True, cwd=REPO, timeout=60, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert plain.returncode == 1
    assert "serves gRPC over TLS, and this client is plaintext" in plain.stderr, plain.stderr
    assert time.monotonic() - started < 20  # the CLI's deadline is 35 s
    # `status` shows what the listener needs.
    shown = subprocess.run(
        [*CLI, "status", "--once", "--zookeeper", cluster.connect],
        capture_output=True, text=True, cwd=REPO, timeout=60, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    line = next(ln for ln in shown.stdout.splitlines() if "controller 0 " in ln)
    assert "gRPC TLS, client certificates required" in line, shown.stdout


def test_clients_whose_certificates_cannot_work_are_told_at_once(
    cluster: Cluster, pki: Pki, tmp_path: Path
) -> None:
    """Settings that fit the listener, certificates that do not: the client used to retry
    the failed handshake until its deadline (35 s for the admin commands)."""
    address = cluster.active_controller().endpoint().grpc
    other_ca = CertificateAuthority("another CA").write(tmp_path / "other-ca.crt")
    cert, key = pki.files["admin-alice"]
    cases = (
        # The controller's certificate does not chain to the client's CA: said at once.
        (TlsSettings(cert, key, other_ca).opener(),
         f"the TLS handshake with controller 0 at {address} failed", "CERTIFICATE_VERIFY_FAILED",
         "check that --tls-ca-file is the CA that signed the controller's certificate"),
        # The controller refuses the client's certificate (another CA): it only closes the
        # connection, so a few closes in a row.
        (TlsSettings(*pki.files["evil-alice"], pki.ca_file).opener(),
         f"controller 0 at {address} closed 5 TLS connections in a row", "Socket closed",
         "it may refuse this tool's certificate"),
    )  # fmt: skip
    for opener, *fragments in cases:
        client = ControllerClient(cluster.broker_port(1), timeout_s=30, channel_opener=opener)
        started = time.monotonic()
        with pytest.raises(ControllerTlsHandshakeError) as failed:
            _list_reassignments(client)
        assert time.monotonic() - started < 10  # not the deadline
        for fragment in fragments:
            assert fragment in str(failed.value)
    # The admin commands say it in one line, and soon.
    started = time.monotonic()
    wrong_ca = subprocess.run(
        [*CLI, "elect", "--type", "preferred", "--all", "--zookeeper", cluster.connect,
         "--tls-cert-file", str(cert), "--tls-key-file", str(key), "--tls-ca-file", str(other_ca)],
        capture_output=True, text=True, cwd=REPO, timeout=60, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert wrong_ca.returncode == 1
    assert "CERTIFICATE_VERIFY_FAILED" in wrong_ca.stderr, wrong_ca.stderr
    # One line: gRPC's C core does not add its own handshake line (GRPC_VERBOSITY=NONE).
    assert len(wrong_ca.stderr.strip().splitlines()) == 1, wrong_ca.stderr
    assert time.monotonic() - started < 20  # the CLI's deadline is 35 s


def test_a_tls_client_of_a_plaintext_controller_is_told_at_once(
    zk_connect: str, tmp_path: Path, pki: Pki
) -> None:
    plain = Cluster(zk_connect, tmp_path)
    try:
        daemon = plain.start_controller(0)
        plain.active_controller()
        plain.start_broker(1)
        wait_until(lambda: _registration(plain, 0), what="the endpoint registered")
        assert _registration(plain, 0) == {
            "version": 1, "controller_id": 0, "grpc": daemon.endpoint().grpc,
            "metrics": daemon.endpoint().metrics, "grpc_security_protocol": "PLAINTEXT",
        }  # fmt: skip
        opener = pki.opener("admin-alice")
        client = ControllerClient(plain.broker_port(1), timeout_s=30, channel_opener=opener)
        with pytest.raises(ControllerTlsMismatchError) as mismatch:
            _list_reassignments(client)
        assert str(mismatch.value) == (
            f"controller 0 at {daemon.endpoint().grpc} serves plaintext gRPC, and this client "
            "uses TLS: drop its --tls-* options"
        )
        # A plaintext client still gets through.
        client = ControllerClient(plain.broker_port(1), timeout_s=30)
        assert _list_reassignments(client).error_code == 0
    finally:
        plain.close()


def _registration(cluster: Cluster, controller_id: int) -> dict[str, object] | None:
    zk = kazoo(cluster.connect)
    try:
        data, _ = zk.get(paths.controller_endpoint_path(controller_id))
    except NoNodeError:
        return None
    finally:
        zk.stop()
        zk.close()
    return json.loads(data)


def _peer_serial(address: str, pki: Pki) -> int:
    """The serial of the certificate a new TLS connection to ``address`` is shown."""
    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(pki.ca_file))
    context.load_cert_chain(*pki.files["admin-alice"])
    context.set_alpn_protocols(["h2"])
    with (
        socket.create_connection((host, int(port)), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=host) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return certificate_serial(der)


def test_certificates_rotate_without_a_restart(cluster: Cluster, pki: Pki) -> None:
    controller = cluster.active_controller()
    address = controller.grpc.address
    assert _peer_serial(address, pki) == pki.serials["controller-0"]
    alice = _admin(cluster, pki, "admin-alice")
    assert _list_reassignments(alice).error_code == 0

    old = pki.serials["controller-0"]
    pki.issue("controller-0", sans=LOOPBACK_SANS)  # same files, new certificate, same CA
    assert pki.serials["controller-0"] != old
    wait_until(lambda: _peer_serial(address, pki) == pki.serials["controller-0"],
               timeout=10, what="new connections to see the new certificate")  # fmt: skip
    assert controller.grpc.tls is not None and controller.grpc.tls.generation >= 1
    # The cluster keeps working: the controller still reaches brokers, brokers reach it.
    cluster.create_topic("after-rotation", {0: [2, 1]})
    cluster.wait_state("after-rotation", 0, leader=2, isr=[2, 1])
    assert _list_reassignments(_admin(cluster, pki, "admin-alice")).error_code == 0

    # Client side: a client whose files now hold another identity presents that one on its
    # next call (its channel is reopened with the new files), without being recreated.
    client = _admin(cluster, pki, "admin-alice")
    assert _list_reassignments(client).error_code == 0
    pki.issue("admin-alice", cn="admin-mallory")
    with pytest.raises(ControllerAccessDeniedError, match="CN=admin-mallory"):
        _list_reassignments(client)


def test_authorization_without_client_certificates_is_unauthenticated() -> None:
    """A rule on a listener that cannot identify callers (plaintext): UNAUTHENTICATED."""
    server = ControllerGrpcServer(
        "127.0.0.1:0", interceptors=authz.interceptors({ADMIN_SERVICE: frozenset({"alice"})})
    )

    class Admin(admin_pb2_grpc.AdminServiceServicer):
        pass

    server.add_admin_service(Admin())
    server.start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = admin_pb2_grpc.AdminServiceStub(channel)
            with pytest.raises(grpc.RpcError) as refused:
                stub.ListPartitionReassignments(
                    admin_pb2.ListPartitionReassignmentsRequest(), timeout=5
                )
            assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
            # Services without a rule are not affected.
            health = health_pb2_grpc.HealthStub(channel)
            assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == 1
            controller = controller_pb2_grpc.ControllerServiceStub(channel)
            with pytest.raises(grpc.RpcError) as unimplemented:
                controller.AlterPartition(controller_pb2.AlterPartitionRequest(), timeout=5)
            assert unimplemented.value.code() is grpc.StatusCode.UNIMPLEMENTED
    finally:
        server.stop(grace=0)


def _elect_cli(cluster: Cluster, pki: Pki, who: str) -> subprocess.CompletedProcess[str]:
    cert, key = pki.files[who]
    return subprocess.run(
        [*CLI, "elect", "--type", "preferred", "--all", "--zookeeper", cluster.connect,
         "--timeout-ms", "5000", "--tls-cert-file", str(cert), "--tls-key-file", str(key),
         "--tls-ca-file", str(pki.ca_file)],
        capture_output=True, text=True, cwd=REPO, timeout=60, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def test_admin_cli_flags(cluster: Cluster, pki: Pki) -> None:
    cluster.create_topic("cli", {0: [1, 2]})
    cluster.wait_state("cli", 0, leader=1)
    allowed = _elect_cli(cluster, pki, "admin-alice")
    assert allowed.returncode == 0, allowed.stderr
    refused = _elect_cli(cluster, pki, "admin-mallory")
    assert refused.returncode == 1
    assert "PERMISSION_DENIED" in refused.stderr and "admin-mallory" in refused.stderr
    # The controller's own view is unchanged by the refused call.
    zk = kazoo(cluster.connect)
    try:
        assert zk.exists(paths.PREFERRED_REPLICA_ELECTION) is None
    finally:
        zk.stop()
        zk.close()


def _intruder_stop_replica(cluster: Cluster, epoch: int) -> broker_pb2.StopReplicaRequest:
    partitions = [broker_pb2.StopReplicaPartitionState(partition_index=0, leader_epoch=99,
                                                       delete_partition=True)]  # fmt: skip
    return broker_pb2.StopReplicaRequest(
        controller_id=0, controller_epoch=epoch + 5, broker_epoch=-1,
        topic_states=[broker_pb2.StopReplicaTopicState(topic_name="guarded",
                                                       partition_states=partitions)],
    )  # fmt: skip


def test_brokers_take_controller_requests_only_from_the_controllers_certificates(
    zk_connect: str, tmp_path: Path, pki: Pki
) -> None:
    """Kafka authorizes LeaderAndIsr, UpdateMetadata and StopReplica as CLUSTER_ACTION. Any
    certificate of the CA could send them: a StopReplica with delete and a higher controller
    epoch removed partitions and then made the broker refuse the real controller for good."""
    pki.issue("intruder", sans=LOOPBACK_SANS)
    c = Cluster(zk_connect, tmp_path)
    try:
        c.start_controller(0, **_controller_settings(pki))
        c.active_controller()
        for broker_id in (1, 2):
            c.start_broker(broker_id, tls=pki.settings(f"broker-{broker_id}"),
                           controller_principals=frozenset({"controller-0"}),
                           broker_principals=frozenset({"broker-1", "broker-2"}))  # fmt: skip
        # The controller's certificate is accepted (LeaderAndIsr, UpdateMetadata), and so are
        # the brokers' for Fetch.
        c.create_topic("guarded", {0: [1, 2]})
        c.wait_state("guarded", 0, leader=1, isr=[1, 2])
        wait_until(lambda: len(c.hosted(1)) == 1 and len(c.metadata(2)) == 1,
                   what="LeaderAndIsr and UpdateMetadata delivered")  # fmt: skip
        follower = c.brokers[2].replication.fetcher
        wait_until(lambda: follower.last_results.get(TopicPartition("guarded", 0)) == "NONE",
                   what="broker 2 fetching guarded-0 from broker 1")  # fmt: skip

        epoch = c.active_controller().controller.context.epoch
        address = c.brokers[1].address
        for who, method in (("intruder", "StopReplica"), ("broker-2", "StopReplica"),
                            ("intruder", "LeaderAndIsr"), ("intruder", "UpdateMetadata"),
                            ("intruder", "Fetch"), ("controller-0", "Fetch")):  # fmt: skip
            request = {
                "StopReplica": _intruder_stop_replica(c, epoch),
                "LeaderAndIsr": broker_pb2.LeaderAndIsrRequest(controller_epoch=epoch + 5),
                "UpdateMetadata": broker_pb2.UpdateMetadataRequest(controller_epoch=epoch + 5),
                "Fetch": broker_pb2.FetchRequest(replica_id=2),
            }[method]
            with pki.opener(who).open(address) as channel, pytest.raises(grpc.RpcError) as no:
                getattr(broker_pb2_grpc.BrokerServiceStub(channel), method)(request, timeout=5)
            assert no.value.code() is grpc.StatusCode.PERMISSION_DENIED, (who, method)
            assert f"CN={who}" in str(no.value.details())
            assert f"zkcontroller.v1.BrokerService/{method}" in str(no.value.details())
        # Nothing was applied: the partition is still hosted, and the real controller is
        # still obeyed (its next request is not refused as from a stale epoch).
        assert TopicPartition("guarded", 0) in c.hosted(1)
        c.create_topic("after", {0: [1, 2]})
        c.wait_state("after", 0, leader=1, isr=[1, 2])
        wait_until(lambda: TopicPartition("after", 0) in c.hosted(1), what="after-0 on broker 1")
        # Describe has no rule: any certificate of the CA may read it.
        with pki.opener("intruder").open(address) as channel:
            stub = broker_pb2_grpc.BrokerServiceStub(channel)
            assert len(stub.Describe(broker_pb2.DescribeRequest(), timeout=5).partitions) == 2
    finally:
        c.close()


def test_broker_allowed_principals_need_mutual_tls(pki: Pki) -> None:
    cert, key = pki.files["broker-1"]
    for tls in (None, TlsSettings(cert, key, pki.ca_file, client_auth_required=False)):
        for field in ("controller_principals", "broker_principals"):
            with pytest.raises(ValueError, match="need mutual TLS"):
                BrokerConfig(1, tls=tls, **{field: frozenset({"controller-0"})})


def _first_failed_send(
    pki: Pki, broker_files: tuple[Path, Path], controller_files: tuple[Path, Path],
    *, client_auth_required: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """A TLS broker with ``broker_files`` and a channel manager presenting
    ``controller_files`` (both trusting the PKI's CA): the log entry of the first failed send."""
    cert, key = broker_files
    tls = TlsSettings(cert, key, pki.ca_file, client_auth_required=client_auth_required)
    broker = BrokerServer(BrokerConfig(1, tls=tls), broker_epoch=1).start()
    cert, key = controller_files
    manager = ControllerChannelManager(
        0, request_timeout_s=5.0, tls=client_tls(pki.ca_file, cert, key)
    )
    try:
        host, port = broker.address.rsplit(":", 1)
        manager.add_broker(Broker(1, (EndPoint("CONTROLLER", host, int(port), "SSL"),)), 1)
        with capture_logs() as logs:
            request = OutboundRequest.update_metadata(broker_pb2.UpdateMetadataRequest())
            manager.send(1, request, lambda _: None)
            wait_until(lambda: any(e["event"].startswith("request to broker failed")
                                   for e in list(logs)), what="a failed send")  # fmt: skip
        return next(e for e in logs if e["event"].startswith("request to broker failed"))
    finally:
        manager.shutdown()
        broker.stop(grace=0)


def test_a_broker_certificate_from_another_ca_is_logged_with_the_handshake_error(
    pki: Pki,
) -> None:
    """The channel's log said only "could not connect to HOST:PORT (TRANSIENT_FAILURE)"; the
    cause (CERTIFICATE_VERIFY_FAILED) was on gRPC's stderr alone."""
    foreign = CertificateAuthority("another CA")
    pki.files["foreign-broker"] = foreign.issue("broker-1", LOOPBACK_SANS).write(
        pki.dir / "foreign-broker"
    )
    failed = _first_failed_send(pki, pki.files["foreign-broker"], pki.files["controller-0"])
    assert failed["code"] == "UNAVAILABLE"
    assert "CERTIFICATE_VERIFY_FAILED" in failed["details"]
    assert "check that its certificate chains to grpc.tls.ca.file" in failed["details"]


@pytest.mark.parametrize("case", ["broker-names-another-host", "controller-cert-untrusted"])
def test_the_other_handshake_failures_carry_the_tls_hint_too(pki: Pki, case: str) -> None:
    """A broker certificate naming another host ("Hostname Verification Check failed"), and
    a broker refusing the controller's certificate (TLS 1.3: just "Socket closed" on our
    side), were logged without any pointer to the certificates."""
    if case == "broker-names-another-host":
        pki.issue("elsewhere-broker", "broker-1", ("broker-1.example.com",))
        broker_files, controller_files = pki.files["elsewhere-broker"], pki.files["controller-0"]
        expected = ("Hostname Verification", "check that its certificate chains")
    else:
        foreign = CertificateAuthority("another CA")
        controller_files = foreign.issue("controller-0", LOOPBACK_SANS).write(
            pki.dir / "foreign-controller"
        )
        broker_files = pki.files["broker-1"]
        expected = ("Socket closed", "it may refuse our grpc.tls.cert.file")
    failed = _first_failed_send(pki, broker_files, controller_files, client_auth_required=True)
    assert failed["code"] == "UNAVAILABLE"
    for text in expected:
        assert text in failed["details"], failed["details"]
