"""``BrokerServer``: the reference broker, i.e. a gRPC server plus its ZooKeeper registration.

A broker that a zk-controller can control needs three things (docs/broker-protocol.md):

1. a gRPC server implementing ``zkcontroller.v1.BrokerService`` (here ``BrokerServicer`` over
   ``ReplicaState``), with health checking and reflection;
2. an ephemeral ``/brokers/ids/N`` registration whose endpoints include
   ``CONTROLLER://host:port`` = that server's address (``BrokerRegistrar``);
3. to apply every request with the current broker epoch (the registration's czxid).

With ``BrokerConfig.tls`` (``controller.security``) the gRPC server is TLS (mutual TLS when
required), both listeners are registered with security protocol SSL (so the controller dials
them with TLS), and the broker's own calls (AlterPartition and controlled shutdown to the
controller, Fetch to leaders) use TLS with the same files. Without it, all is plaintext.
With mutual TLS, ``BrokerConfig.controller_principals`` limits LeaderAndIsr, UpdateMetadata
and StopReplica to the controllers' certificates, and ``broker_principals`` limits Fetch to the
brokers' (Kafka requires CLUSTER_ACTION for these); any other caller gets PERMISSION_DENIED.

Nothing here is global: a test or benchmark can run many ``BrokerServer`` objects in one
process, each with its own port, state and (optionally shared) ZooKeeper session. Without a
ZooKeeper port the server runs unregistered, with a fixed ``broker_epoch``; that mode exists
for tests of the controller channel and for benchmarks.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent import futures
from dataclasses import dataclass, field
from types import TracebackType

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from controller.admin.controller_client import ControllerClient
from controller.api import MESSAGE_SIZE_OPTIONS
from controller.api.malformed import MalformedRequestInterceptor
from controller.api.v1 import broker_pb2, broker_pb2_grpc
from controller.broker.isr_manager import AlterPartitionManager
from controller.broker.registration import BrokerRegistrar
from controller.broker.replication import (
    DEFAULT_REPLICA_FETCH_INTERVAL_MS,
    DEFAULT_REPLICA_LAG_TIME_MAX_MS,
    Replication,
    ReplicationConfig,
)
from controller.broker.service import BrokerServicer
from controller.broker.shutdown import ControlledShutdownSettings
from controller.broker.shutdown import controlled_shutdown as run_controlled_shutdown
from controller.broker.state import ReplicaState
from controller.core.model import UNKNOWN_BROKER_EPOCH, EndPoint, TopicPartition
from controller.security import authz
from controller.security.tls import PLAINTEXT, TlsSettings, add_port, bind_failure_reason
from controller.zk import paths
from controller.zk.codecs import INT32_MAX, BrokerRegistration, encode_log_dir_event
from controller.zk.errors import ZkError
from controller.zk.port import ZkPort

log = structlog.get_logger("controller.broker")

# How long a leader's AlterPartition keeps looking for the active controller before its
# manager backs off and sends again (it never gives up).
ALTER_PARTITION_TIMEOUT_S = 5.0
# A log-dir failure notification that ZooKeeper refused is sent again after this long.
LOG_DIR_EVENT_RETRY_S = 1.0
BROKER_SERVICE_NAME: str = broker_pb2.DESCRIPTOR.services_by_name["BrokerService"].full_name
# The controller's requests to a broker: Kafka's KafkaApis authorizes them as CLUSTER_ACTION.
CONTROLLER_METHODS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")
_WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::"})


def parse_host_port(value: str) -> tuple[str, int]:
    """``"host:port"`` or ``"[v6]:port"`` -> (host, port); port 0 means "pick a free one"."""
    host, sep, port_text = value.rpartition(":")
    if not sep or not port_text.isdigit():
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    port = int(port_text)
    if port > 65535:
        raise ValueError(f"port out of range in {value!r}")
    return host, port


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    broker_id: int
    # Where the gRPC server binds. Port 0 picks a free port (the registration advertises it).
    listen: str = "127.0.0.1:0"
    # The host written into the registration; default: the listen host, or this machine's
    # FQDN when listening on a wildcard address.
    advertised_host: str | None = None
    rack: str | None = None
    # Listener names. The controller reaches brokers on CONTROLLER; LeaderAndIsr's
    # live_leaders carry the inter-broker (PLAINTEXT) address, here the same server.
    controller_listener: str = "CONTROLLER"
    inter_broker_listener: str = "PLAINTEXT"
    max_workers: int = 4
    # replica.lag.time.max.ms: a follower that has not fetched for this long leaves the
    # ISR (the leader asks the controller through AlterPartition).
    replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS
    # How often a follower fetches from its leader (Kafka's replica.fetch.wait.max.ms).
    replica_fetch_interval_ms: int = DEFAULT_REPLICA_FETCH_INTERVAL_MS
    # controlled.shutdown.enable / .max.retries / .retry.backoff.ms (Kafka's defaults).
    controlled_shutdown: ControlledShutdownSettings = field(
        default_factory=ControlledShutdownSettings
    )
    # TLS files for the server and for the broker's own calls; None: plaintext.
    tls: TlsSettings | None = None
    # The feature levels this broker supports, {name: (min, max)}, advertised in its
    # registration (KIP-584). Kafka's ZooKeeper-mode brokers advertise none.
    supported_features: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Certificate names (CN or SAN; "*" any certificate of the CA) allowed to call the
    # controller's requests (LeaderAndIsr, UpdateMetadata, StopReplica), and Fetch; None: no
    # check. Both need mutual TLS, the only way to tell callers apart.
    controller_principals: frozenset[str] | None = None
    broker_principals: frozenset[str] | None = None

    def __post_init__(self) -> None:
        # Kafka's broker.id is an int32: a larger id would register a znode the controller
        # ignores, and fail every request that carries it.
        if not 0 <= self.broker_id <= INT32_MAX:
            raise ValueError(f"broker id must be in [0, {INT32_MAX}], got {self.broker_id}")
        parse_host_port(self.listen)  # fail early on a malformed address
        for name, listener in (("controller listener", self.controller_listener),
                               ("inter-broker listener", self.inter_broker_listener)):
            if not listener.strip():
                raise ValueError(f"the {name} needs a name")
        # As Kafka's KafkaConfig: one name for both would register two endpoints under one
        # listener, and the controller's connection could not be told from the brokers'.
        if self.controller_listener.upper() == self.inter_broker_listener.upper():
            raise ValueError(
                f"the controller listener and the inter-broker listener must differ "
                f"(both {self.controller_listener!r})"
            )
        mutual = self.tls is not None and self.tls.client_auth_required
        for name, value in (
            ("controller allowed principals", self.controller_principals),
            ("broker allowed principals", self.broker_principals),
        ):
            if value is not None and not mutual:
                raise ValueError(
                    f"{name} need mutual TLS (a certificate, key, CA file and client auth "
                    "required): callers can only be identified by their client certificates"
                )

    def authorization_rules(self) -> dict[str, frozenset[str] | None]:
        """``authz`` rules of the broker's gRPC server (per method of BrokerService)."""
        rules: dict[str, frozenset[str] | None] = {
            f"{BROKER_SERVICE_NAME}/{method}": self.controller_principals
            for method in CONTROLLER_METHODS
        }
        rules[f"{BROKER_SERVICE_NAME}/Fetch"] = self.broker_principals
        return rules


class BrokerServer:
    def __init__(
        self,
        config: BrokerConfig,
        zk: ZkPort | None = None,
        *,
        broker_epoch: int = UNKNOWN_BROKER_EPOCH,
    ) -> None:
        """``zk``: the ZooKeeper session to register with (not started or stopped here).
        ``broker_epoch``: the fixed epoch of an unregistered broker (``zk`` None)."""
        self.config = config
        self.state = ReplicaState(config.broker_id, broker_epoch)
        self._zk = zk
        self._server: grpc.Server | None = None
        self._health: health.HealthServicer | None = None
        self._registrar: BrokerRegistrar | None = None
        self._port = 0
        # Built now so that unreadable certificates fail the construction, not a later call.
        self._server_tls = config.tls.server() if config.tls else None
        self._channel_opener = config.tls.opener() if config.tls else PLAINTEXT
        # Replication (controller.broker.replication): only a registered broker can
        # find the controller, so only it proposes ISR changes and runs its threads.
        self._controller_client = (
            ControllerClient(
                zk, timeout_s=ALTER_PARTITION_TIMEOUT_S, channel_opener=self._channel_opener
            )
            if zk
            else None
        )
        alter_partition = None
        if self._controller_client is not None:
            client = self._controller_client
            alter_partition = AlterPartitionManager(
                config.broker_id,
                lambda: self.state.broker_epoch,
                lambda request: client.controller("AlterPartition", request),
            )
        self.replication = Replication(
            self.state,
            ReplicationConfig(
                replica_lag_time_max_ms=config.replica_lag_time_max_ms,
                replica_fetch_interval_ms=config.replica_fetch_interval_ms,
                inter_broker_listener=config.inter_broker_listener,
                channel_opener=self._channel_opener,
            ),
            alter_partition,
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> BrokerServer:
        """Serve gRPC, then register in ZooKeeper (if configured). Raises if either fails."""
        if self._server is not None:
            raise RuntimeError(f"broker {self.broker_id} is already started")
        server = grpc.server(
            futures.ThreadPoolExecutor(
                max_workers=self.config.max_workers,
                thread_name_prefix=f"broker-{self.broker_id}-grpc",
            ),
            # Authorization first; then bad bytes end INVALID_ARGUMENT (the parser runs last).
            interceptors=[
                *authz.interceptors(self.config.authorization_rules()),
                MalformedRequestInterceptor(),
            ],
            # no SO_REUSEPORT: two brokers must never silently share a port
            options=[*MESSAGE_SIZE_OPTIONS, ("grpc.so_reuseport", 0)],
        )
        broker_pb2_grpc.add_BrokerServiceServicer_to_server(
            BrokerServicer(self.state, self.replication.handle_fetch), server
        )
        health_servicer = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        reflection.enable_server_reflection(
            (BROKER_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
        )
        try:
            port = add_port(server, self.config.listen, self._server_tls)
        except RuntimeError:  # grpcio raises when it cannot bind; its message says not why
            port = 0
        if not port:
            listen = self.config.listen
            raise OSError(
                f"broker {self.broker_id} cannot listen on {listen}: {bind_failure_reason(listen)}"
            )
        self._server, self._health, self._port = server, health_servicer, port
        if self._zk is not None:
            # Register (and so learn our broker epoch) before serving, as Kafka's broker does:
            # a controller request sent to an earlier incarnation on this port must meet the
            # epoch check, not a broker that accepts every epoch because it knows none yet.
            # The port is bound already; a controller connecting meanwhile is retried.
            registrar = BrokerRegistrar(self._zk, self.registration(), self._on_registered)
            try:
                registrar.start()
            except BaseException:
                self._server = None
                # A server never started keeps its bound port listening; start it to close it.
                server.start()
                server.stop(0).wait()
                raise
            self._registrar = registrar
        server.start()
        for service in (health.OVERALL_HEALTH, BROKER_SERVICE_NAME):
            health_servicer.set(service, health_pb2.HealthCheckResponse.SERVING)
        log.info("broker serving", broker_id=self.broker_id, address=self.address)
        if self._registrar is not None:
            self.replication.start()
        return self

    def stop(self, grace: float | None = 1.0, *, deregister: bool = True) -> None:
        """Deregister (delete our znode), then stop serving after ``grace`` seconds at most.

        ``deregister=False`` leaves the registration to the session (a crashed broker
        whose ZooKeeper session has not expired yet).

        The ZooKeeper session itself belongs to the caller and is left open.
        """
        server, self._server = self._server, None
        if server is None:
            return
        self.replication.stop()
        if self._controller_client is not None:
            self._controller_client.close()
        if self._health is not None:
            self._health.enter_graceful_shutdown()
        if self._registrar is not None:
            self._registrar.stop(deregister=deregister)
            self._registrar = None
        server.stop(grace).wait()
        log.info("broker stopped", broker_id=self.broker_id)

    def controlled_shutdown(
        self,
        *,
        sleep: Callable[[float], None] = time.sleep,
        abandon: Callable[[], str | None] = lambda: None,
    ) -> bool:
        """Run before ``stop`` on SIGTERM: ask the active controller to move this broker's
        leaderships away (``controller.broker.shutdown``, reference §2.9).

        Returns True when the controller reported nothing left to move. False when it is
        disabled, the broker is not registered, every attempt failed or ``abandon`` gave a
        reason to stop trying (``sleep``: the backoff, which may end early for it); the caller
        stops the broker either way, as Kafka's broker does.
        """
        if self._zk is None or self._registrar is None:
            log.info("not registered; skipping controlled shutdown", broker_id=self.broker_id)
            return False
        return run_controlled_shutdown(
            self._zk,
            self.broker_id,
            lambda: self.state.broker_epoch,
            self.config.controlled_shutdown,
            sleep=sleep,
            channel_opener=self._channel_opener,
            abandon=abandon,
        )

    def wait_for_termination(self, timeout: float | None = None) -> bool:
        """Block until the server stops; True if it did within ``timeout``."""
        server = self._server
        return True if server is None else server.wait_for_termination(timeout)

    def __enter__(self) -> BrokerServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop(grace=0)

    # -- registration --------------------------------------------------------------------------

    def registration(self) -> BrokerRegistration:
        """Kafka's v5 registration: CONTROLLER and PLAINTEXT endpoints on the gRPC address."""
        if not self._port:
            raise RuntimeError("the broker's port is known only once it is started")
        host = self.advertised_host
        protocol = "SSL" if self._server_tls is not None else "PLAINTEXT"
        endpoints = tuple(
            EndPoint(listener, host, self._port, protocol)
            for listener in (self.config.inter_broker_listener, self.config.controller_listener)
        )
        return BrokerRegistration(
            broker_id=self.broker_id,
            endpoints=endpoints,
            rack=self.config.rack,
            features=dict(self.config.supported_features),
            version=5,
        )

    def _on_registered(self, epoch: int) -> None:
        self.state.broker_epoch = epoch

    # -- operations ------------------------------------------------------------------------------

    def fail_log_dir(self, partitions: Iterable[TopicPartition], *, notify: bool = True) -> None:
        """Simulate a failed log dir holding ``partitions``: from now on they answer
        KAFKA_STORAGE_ERROR (LeaderAndIsr, StopReplica, Fetch), are neither fetched nor led,
        and, with ``notify``, the controller is told as Kafka's broker tells it
        (``propagateLogDirEvent``): a sequential ``/log_dir_event_notification/log_dir_event_``
        znode, ``{"version":1,"broker":N,"event":1}`` (reference §1.4, §2.11).

        Without ``notify`` (or without a ZooKeeper session, when there is nobody to tell) the
        controller learns only from the next LeaderAndIsr response.
        """
        self.state.fail_log_dir(partitions)
        if notify and self._zk is not None and not self._announce_log_dir_failure():
            # ZooKeeper is unreachable now: keep trying in the background, as Kafka's
            # propagateLogDirEvent retries until connected (never a crash of the broker).
            threading.Thread(
                target=self._announce_log_dir_failure_until_done,
                name=f"log-dir-event-{self.broker_id}",
                daemon=True,
            ).start()

    def _announce_log_dir_failure(self) -> bool:
        assert self._zk is not None
        try:
            path = self._zk.create(
                paths.LOG_DIR_EVENT_CREATE_PATH,
                encode_log_dir_event(self.broker_id),
                sequential=True,
                makepath=True,
            )
        except ZkError as exc:
            log.warning(
                "could not announce the log dir failure; retrying",
                broker_id=self.broker_id,
                error=str(exc),
            )
            return False
        log.warning("log dir failure announced", broker_id=self.broker_id, path=path)
        return True

    def _announce_log_dir_failure_until_done(self) -> None:
        while self._server is not None:
            time.sleep(LOG_DIR_EVENT_RETRY_S)
            if self._server is None or self._announce_log_dir_failure():
                return

    def fail_current_log_dir(self) -> list[TopicPartition]:
        """The log dir holding every partition hosted now fails (``fail_log_dir``); partitions
        created later go to another, healthy dir. Returns the partitions that went offline."""
        partitions = self.state.healthy_partitions()
        self.fail_log_dir(partitions)
        return partitions

    def describe(self) -> broker_pb2.DescribeResponse:
        return self.state.describe()

    # -- properties ----------------------------------------------------------------------------

    @property
    def broker_id(self) -> int:
        return self.config.broker_id

    @property
    def broker_epoch(self) -> int:
        return self.state.broker_epoch

    @property
    def registrar(self) -> BrokerRegistrar | None:
        return self._registrar

    @property
    def port(self) -> int:
        return self._port

    @property
    def advertised_host(self) -> str:
        if self.config.advertised_host:
            return self.config.advertised_host
        host, _ = parse_host_port(self.config.listen)
        return socket.getfqdn() if host in _WILDCARD_HOSTS else host

    @property
    def address(self) -> str:
        """``host:port`` to reach the broker's gRPC server (IPv6 hosts bracketed)."""
        return EndPoint(self.config.controller_listener, self.advertised_host, self._port).address
