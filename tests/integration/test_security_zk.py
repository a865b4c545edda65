"""ZooKeeper authentication and ACLs against a real ZooKeeper configured for digest and SASL.

The server (one per module) has a JAAS ``Server`` section for SASL DIGEST-MD5 (user ``kafka``)
and a super digest, so the tests can read every ACL. Each test runs in its own chroot, created
by the first controller as Kafka does, with Kafka's ACL on it too.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.retry import KazooRetry
from kazoo.security import ACL, Id, Permissions, make_digest_acl_credential

from controller.admin import configs as admin_configs
from controller.admin import topics as admin_topics
from controller.admin.client import admin_session
from controller.broker.server import BrokerConfig, BrokerServer
from controller.config import load_config
from controller.daemon import ControllerDaemon
from controller.logs import configure_logging, reset_logging
from controller.security.acls import ZkSecurity, default_acls, zk_security
from controller.zk import errors, paths
from controller.zk.kazoo_port import KazooPort
from controller.zk.server import LocalZooKeeper, free_port
from tests.conftest import _unavailable
from tests.support import running, wait_until

pytestmark = pytest.mark.zookeeper

SESSION_TIMEOUT_MS = 4000
SUPER = ("super", "super-secret")
DIGEST = ("kafka", "digest-secret")
SASL = ("kafka", "sasl-secret")


@pytest.fixture(scope="module")
def secure_zk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalZooKeeper]:
    from controller.zk.server import local_zookeeper_problem

    problem = local_zookeeper_problem()
    if problem is not None:
        _unavailable(problem)
    work = tmp_path_factory.mktemp("secure-zk")
    jaas = work / "jaas.conf"
    jaas.write_text(
        "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f'  user_{SASL[0]}="{SASL[1]}";\n}};\n'
    )
    server = LocalZooKeeper(
        work_dir=work,
        extra_config={
            "authProvider.sasl": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
        },
        jvm_args=[
            f"-Djava.security.auth.login.config={jaas}",
            "-Dzookeeper.DigestAuthenticationProvider.superDigest="
            + make_digest_acl_credential(*SUPER),
        ],
    )
    with running(server):
        yield server


def _client(hosts: str, auth: tuple[str, str] | None = None) -> KazooClient:
    client = KazooClient(
        hosts=hosts,
        auth_data=[("digest", f"{auth[0]}:{auth[1]}")] if auth else None,
        connection_retry=KazooRetry(max_tries=-1, max_delay=1.0),
        command_retry=KazooRetry(max_tries=5, max_delay=1.0),
    )
    client.start(timeout=15)
    return client


@pytest.fixture
def superuser(secure_zk: LocalZooKeeper) -> Iterator[KazooClient]:
    client = _client(secure_zk.hosts, SUPER)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def anonymous(secure_zk: LocalZooKeeper) -> Iterator[KazooClient]:
    client = _client(secure_zk.hosts)
    yield client
    client.stop()
    client.close()


class SecureCluster:
    """Controllers and reference brokers in one chroot, each with its own ZooKeeper security."""

    def __init__(self, hosts: str, work_dir: Path) -> None:
        self.chroot = f"/sec-{uuid.uuid4().hex[:12]}"
        self.connect = f"{hosts}{self.chroot}"
        self.work_dir = work_dir
        self.controllers: list[ControllerDaemon] = []
        self.brokers: list[tuple[BrokerServer, KazooPort]] = []

    def credentials(self, scheme: str, user: str, password: str) -> dict[str, str]:
        path = self.work_dir / f"{scheme}-{user}-{uuid.uuid4().hex[:6]}.creds"
        path.write_text(f"{user}:{password}\n")
        path.chmod(0o600)
        return {"zookeeper.auth.scheme": scheme, "zookeeper.auth.credentials.file": str(path)}

    def start_controller(self, controller_id: int, **settings: str) -> ControllerDaemon:
        flags = {
            "zookeeper.connect": self.connect,
            "controller.id": str(controller_id),
            "metrics.listen": f"127.0.0.1:{free_port()}",
            "grpc.listen": f"127.0.0.1:{free_port()}",
            "log.dir": str(self.work_dir / f"controller-{controller_id}"),
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "request.timeout.ms": "5000",
            **settings,
        }
        daemon = ControllerDaemon(load_config(flags=flags, env={}), configure_logs=False)
        self.controllers.append(daemon)
        daemon.start()
        return daemon

    def stop_controller(self, daemon: ControllerDaemon) -> None:
        self.controllers.remove(daemon)
        daemon.stop(resign_timeout=5)

    def start_broker(self, broker_id: int, security: ZkSecurity) -> BrokerServer:
        port = KazooPort(
            self.connect, session_timeout=SESSION_TIMEOUT_MS / 1000, **security.port_options()
        )
        port.start()
        broker = BrokerServer(BrokerConfig(broker_id, listen="127.0.0.1:0"), port)
        self.brokers.append((broker, port))
        broker.start()
        return broker

    def close(self) -> None:
        for broker, port in self.brokers:
            broker.stop(grace=0)
            port.stop()
        for daemon in self.controllers:
            daemon.stop(resign_timeout=2)


@pytest.fixture
def cluster(secure_zk: LocalZooKeeper, tmp_path: Path, superuser: KazooClient) -> Iterator[Any]:
    c = SecureCluster(secure_zk.hosts, tmp_path)
    yield c
    c.close()
    if superuser.exists(c.chroot):
        superuser.delete(c.chroot, recursive=True)


def _secure(cluster: SecureCluster, scheme: str, user: str, password: str) -> dict[str, str]:
    return {"zookeeper.set.acl": "true", **cluster.credentials(scheme, user, password)}


def _tree(client: KazooClient, root: str) -> list[str]:
    out, todo = [], [root]
    while todo:
        path = todo.pop()
        out.append(path)
        todo += [f"{path.rstrip('/')}/{child}" for child in client.get_children(path)]
    return sorted(out)


def _expected(path: str, identity: Id) -> list[ACL]:
    """Kafka's defaultAcls with the creator's identity as ZooKeeper stores it."""
    return [
        ACL(acl.perms, identity) if acl.id == Id("auth", "") else acl
        for acl in default_acls(path, secure=True)
    ]


def _state(client: KazooClient, chroot: str, topic: str, partition: int) -> dict[str, Any] | None:
    path = chroot + paths.partition_state_path(topic, partition)
    return json.loads(client.get(path)[0]) if client.exists(path) else None


def _create_topic(cluster: SecureCluster, security: ZkSecurity, topic: str) -> None:
    with admin_session(cluster.connect, 10_000, security) as port:
        admin_topics.create_topic(port, topic, replica_assignment={0: [1, 2], 1: [2, 1]})


def test_every_znode_created_carries_kafkas_acls_and_strangers_cannot_write(
    cluster: SecureCluster, superuser: KazooClient, anonymous: KazooClient
) -> None:
    security = zk_security(scheme="digest", credentials=":".join(DIGEST), set_acl=True)
    controller = cluster.start_controller(0, **_secure(cluster, "digest", *DIGEST))
    wait_until(lambda: controller.controller.is_active, what="controller 0 active")
    brokers = [cluster.start_broker(i, security) for i in (1, 2)]
    _create_topic(cluster, security, "secured")
    for partition, leader in ((0, 1), (1, 2)):
        wait_until(
            lambda p=partition, leader=leader: (_state(anonymous, cluster.chroot, "secured", p)
                                                or {}).get("leader") == leader,
            what=f"secured-{partition} led by {leader}",
        )  # fmt: skip
    # LeaderAndIsr reached the brokers over the (plaintext) channel.
    wait_until(lambda: len(brokers[0].describe().partitions) == 2, what="broker 1 hosts both")

    identity = Id("digest", make_digest_acl_credential(*DIGEST))
    tree = _tree(superuser, cluster.chroot)
    relative = {p: p[len(cluster.chroot) :] or "/" for p in tree}
    for must in (
        paths.CONTROLLER,
        paths.CONTROLLER_EPOCH,
        paths.partition_state_path("secured", 0),
        paths.topic_partitions_path("secured"),
        paths.controller_endpoint_path(0),
        paths.broker_path(1),
        paths.CONFIG_USERS,
    ):
        assert must in relative.values(), f"{must} was not created"
    assert len(tree) > 30  # Kafka's persistent paths, topic, partitions, brokers, ...
    wrong = {}
    for path, rel in relative.items():
        acl, _ = superuser.get_acls(path)
        # The chroot is created by the controller like any of its znodes.
        want = _expected("/kafka" if rel == "/" else rel, identity)
        if list(acl) != want:
            wrong[rel] = acl
    assert wrong == {}, f"znodes without Kafka's ACL: {wrong}"

    # Anyone may read (Kafka's READ_ACL_UNSAFE)...
    assert json.loads(anonymous.get(cluster.chroot + paths.CONTROLLER)[0])["brokerid"] == 0
    # ...but not write, create or delete.
    with pytest.raises(NoAuthError):
        anonymous.set(cluster.chroot + paths.CONTROLLER_EPOCH, b"99")
    with pytest.raises(NoAuthError):
        anonymous.create(cluster.chroot + paths.topic_path("intruder"), b"{}")
    with pytest.raises(NoAuthError):
        anonymous.delete(cluster.chroot + paths.partition_state_path("secured", 0))
    with pytest.raises(NoAuthError):
        anonymous.get(cluster.chroot + paths.CONFIG_USERS)  # sensitive: creator only


def test_a_controller_with_the_wrong_digest_writes_nothing(
    cluster: SecureCluster, superuser: KazooClient
) -> None:
    security = zk_security(scheme="digest", credentials=":".join(DIGEST), set_acl=True)
    first = cluster.start_controller(0, **_secure(cluster, "digest", *DIGEST))
    wait_until(lambda: first.controller.is_active, what="controller 0 active")
    cluster.start_broker(1, security)
    cluster.start_broker(2, security)
    _create_topic(cluster, security, "kept")
    wait_until(lambda: _state(superuser, cluster.chroot, "kept", 1), what="kept-1 state")
    cluster.stop_controller(first)  # resigns: /controller is deleted

    def snapshot() -> dict[str, tuple[bytes, int]]:
        watched = [paths.CONTROLLER_EPOCH, *(paths.partition_state_path("kept", p) for p in (0, 1))]
        out = {}
        for rel in watched:
            data, stat = superuser.get(cluster.chroot + rel)
            out[rel] = (data, stat.version)
        return out

    before = snapshot()
    with structlog.testing.capture_logs() as logs:
        impostor = cluster.start_controller(1, **_secure(cluster, "digest", DIGEST[0], "wrong"))

        def refused() -> int:
            return sum(
                e.get("event") == "error while electing or becoming controller"
                and "NOAUTH" in str(e.get("error"))
                for e in list(logs)
            )

        wait_until(lambda: refused() >= 1, what="the election to fail with NOAUTH")
        # At least one more election attempt (2 s backoff) fails the same way.
        wait_until(lambda: refused() >= 2, what="the retried election to fail too")
    assert not impostor.controller.is_active
    assert superuser.exists(cluster.chroot + paths.CONTROLLER) is None
    assert snapshot() == before
    errors_logged = [e for e in logs if e.get("log_level") == "error"]
    assert any("NOAUTH" in str(e.get("error")) for e in errors_logged)
    # One line per attempt naming what to check: no traceback, and no "controller has already
    # moved" (nothing was taken, so there is nothing to move).
    refusals = [e for e in errors_logged
                if e["event"] == "error while electing or becoming controller"]  # fmt: skip
    assert len(refusals) >= 2 and all("zookeeper.auth" in e["hint"] for e in refusals)
    assert not any(e.get("exc_info") for e in refusals)
    assert not any("already moved" in e["event"] for e in logs)
    # The right identity still can: a new controller takes over with the next epoch.
    epoch = int(before[paths.CONTROLLER_EPOCH][0])
    rightful = cluster.start_controller(2, **_secure(cluster, "digest", *DIGEST))
    wait_until(lambda: rightful.controller.is_active, what="controller 2 active")
    assert rightful.controller.context.epoch == epoch + 1
    assert not impostor.controller.is_active


def test_sasl_digest_md5_controller_end_to_end(
    cluster: SecureCluster, superuser: KazooClient, anonymous: KazooClient
) -> None:
    security = zk_security(scheme="sasl", credentials=":".join(SASL), set_acl=True)
    controller = cluster.start_controller(0, **_secure(cluster, "sasl", *SASL))
    wait_until(lambda: controller.controller.is_active, what="controller 0 active")
    cluster.start_broker(1, security)
    cluster.start_broker(2, security)
    _create_topic(cluster, security, "sasl-topic")
    wait_until(
        lambda: (_state(anonymous, cluster.chroot, "sasl-topic", 0) or {}).get("leader") == 1,
        what="sasl-topic-0 led by broker 1",
    )
    identity = Id("sasl", SASL[0])
    for rel in (paths.CONTROLLER, paths.partition_state_path("sasl-topic", 0), "/"):
        acl, _ = superuser.get_acls(cluster.chroot + rel.rstrip("/"))
        assert list(acl) == _expected("/kafka" if rel == "/" else rel, identity)
    with pytest.raises(NoAuthError):
        anonymous.set(cluster.chroot + paths.partition_state_path("sasl-topic", 0), b"{}")


def test_a_wrong_sasl_password_fails_the_session_at_start(secure_zk: LocalZooKeeper) -> None:
    security = zk_security(scheme="sasl", credentials=f"{SASL[0]}:wrong")
    port = KazooPort(secure_zk.hosts, session_timeout=4, **security.port_options())
    with pytest.raises(errors.NoAuthError, match="rejected this client's authentication"):
        port.start(timeout=10)


def test_without_zookeeper_set_acl_znodes_stay_open(
    cluster: SecureCluster, superuser: KazooClient
) -> None:
    controller = cluster.start_controller(0)
    wait_until(lambda: controller.controller.is_active, what="controller 0 active")
    open_acl = [ACL(Permissions.ALL, Id("world", "anyone"))]
    for rel in ("", paths.CONTROLLER, paths.CONTROLLER_EPOCH, paths.controller_endpoint_path(0)):
        acl, _ = superuser.get_acls(cluster.chroot + rel)
        assert list(acl) == open_acl, rel


def test_the_brokers_default_is_sensitive_and_read_by_the_controller(
    cluster: SecureCluster, anonymous: KazooClient
) -> None:
    """``configs alter --entity-type brokers --entity-default`` under ACLs: the znode gets
    Kafka's sensitive ACL (no world read), and the controller, with the same identity, reads
    it and takes the cluster's unclean default from it."""
    security = zk_security(scheme="digest", credentials=":".join(DIGEST), set_acl=True)
    controller = cluster.start_controller(0, **_secure(cluster, "digest", *DIGEST))
    wait_until(lambda: controller.controller.is_active, what="controller 0 active")
    with admin_session(cluster.connect, 10_000, security) as port:
        admin_configs.alter_broker_default_config(port, {"unclean.leader.election.enable": "true"})
    wait_until(
        lambda: controller.controller.unclean_leader_election_default,
        what="the controller to read the brokers' default",
    )
    with pytest.raises(NoAuthError):
        anonymous.get(cluster.chroot + paths.BROKER_DEFAULT_CONFIG)


def test_credentials_never_reach_the_log_even_at_debug(secure_zk: LocalZooKeeper) -> None:
    # kazoo logs each request it sends at DEBUG, the Auth (user:password) and the Connect
    # (the session's password) included; log.level=DEBUG or an admin tool's --verbose
    # must not write them.
    buffer = io.StringIO()
    configure_logging("DEBUG", "json", buffer)
    try:
        security = zk_security(scheme="digest", credentials=f"{DIGEST[0]}:{DIGEST[1]}")
        port = KazooPort(secure_zk.hosts, session_timeout=6.0, **security.port_options())
        port.start(timeout=10)
        password = port.client_id[1] if port.client_id else b""
        port.stop()
    finally:
        reset_logging()
    out = buffer.getvalue()
    assert "Auth(<redacted>)" in out and "Connect(<redacted>)" in out  # logged, emptied
    assert DIGEST[1] not in out
    assert password and password.hex() not in out and repr(password) not in out


@pytest.mark.parametrize("scheme", ["digest", "sasl"])
def test_an_authenticated_admin_tool_writes_kafkas_acls_without_the_flag(
    cluster: SecureCluster,
    superuser: KazooClient,
    anonymous: KazooClient,
    capsys: pytest.CaptureFixture[str],
    scheme: str,
) -> None:
    """Kafka's TopicCommand and ConfigCommand write secure ACLs whenever they authenticate
    (``isSecure = isZkSaslEnabled || ...``); ours did only with --zookeeper-set-acl true and
    left world-writable znodes, /config/brokers/<default> included. An explicit false opts out.
    """
    from controller.cli.main import main

    credentials = SASL if scheme == "sasl" else DIGEST
    settings = _secure(cluster, scheme, *credentials)
    controller = cluster.start_controller(0, **settings)
    wait_until(lambda: controller.controller.is_active, what="controller 0 active")
    cluster.start_broker(1, zk_security(scheme=scheme, credentials=":".join(credentials),
                                        set_acl=True))  # fmt: skip
    auth = [
        "--zookeeper", cluster.connect,
        "--zookeeper-auth-scheme", scheme,
        "--zookeeper-auth-credentials-file", settings["zookeeper.auth.credentials.file"],
    ]  # fmt: skip
    try:
        assert main(["topics", "create", *auth, "--topic", "tooled",
                     "--replica-assignment", "1"]) == 0  # fmt: skip
        assert main(["configs", "alter", *auth, "--entity-type", "brokers", "--entity-default",
                     "--add-config", "unclean.leader.election.enable=false"]) == 0  # fmt: skip
        # The opt-out stays: an explicit false creates open znodes, as before.
        assert main(["topics", "create", *auth, "--zookeeper-set-acl", "false",
                     "--topic", "opened", "--replica-assignment", "1"]) == 0  # fmt: skip
    finally:
        reset_logging()
    capsys.readouterr()

    identity = Id(scheme, make_digest_acl_credential(*DIGEST) if scheme == "digest" else SASL[0])
    changes = superuser.get_children(cluster.chroot + paths.CONFIG_CHANGES)
    assert changes, "configs alter wrote no change notification"
    wrong = {}
    for rel in (
        paths.topic_path("tooled"),
        paths.topic_config_path("tooled"),
        paths.BROKER_DEFAULT_CONFIG,
        *(f"{paths.CONFIG_CHANGES}/{child}" for child in changes),
    ):
        acl, _ = superuser.get_acls(cluster.chroot + rel)
        if list(acl) != _expected(rel, identity):
            wrong[rel] = acl
    assert wrong == {}, f"znodes the tool created without Kafka's ACL: {wrong}"
    assert _expected(paths.BROKER_DEFAULT_CONFIG, identity) == [ACL(Permissions.ALL, identity)]
    with pytest.raises(NoAuthError):
        anonymous.set(cluster.chroot + paths.BROKER_DEFAULT_CONFIG, b"{}")
    with pytest.raises(NoAuthError):
        anonymous.set(cluster.chroot + paths.topic_path("tooled"), b"{}")
    open_acl = [ACL(Permissions.ALL, Id("world", "anyone"))]
    acl, _ = superuser.get_acls(cluster.chroot + paths.topic_path("opened"))
    assert list(acl) == open_acl

    # Without the credentials: each refusal says what to give, and none says "run it again"
    # (topics alter used to) or answers as if nothing were wrong (describe's min-ISR filters
    # used to, with the sensitive default unreadable).
    topic_before = superuser.get(cluster.chroot + paths.topic_path("tooled"))[0]
    try:
        for args in (
            ["topics", "alter", "--topic", "tooled", "--partitions", "2"],
            ["topics", "delete", "--topic", "tooled"],
            ["topics", "describe", "--under-min-isr-partitions"],
        ):
            assert main([*args, "--zookeeper", cluster.connect]) == 1, args
            refused = capsys.readouterr().err.splitlines()
            assert len(refused) == 1, refused
            assert "NOAUTH" in refused[0] and "--zookeeper-auth-credentials-file" in refused[0]
            assert "run the command again" not in refused[0]
    finally:
        reset_logging()
    assert "min.insync.replicas is unknown" in refused[0]
    assert superuser.get(cluster.chroot + paths.topic_path("tooled"))[0] == topic_before
    assert superuser.exists(cluster.chroot + paths.delete_topic_path("tooled")) is None
