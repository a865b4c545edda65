"""The controller's gRPC server.

Serves ``zkcontroller.v1.ControllerService`` (the broker-to-controller RPCs), gRPC health
checking (the overall status "" is SERVING while the process is up; the ControllerService
status is SERVING only on the active controller, so clients and load balancers find it) and
server reflection (so ``grpcurl`` works).

Servicers are thin: they turn a request into a controller event, wait for the event thread to
answer within the RPC's deadline, and map "not the controller" to NOT_CONTROLLER with the
active controller's id in trailing metadata.

Threads (a bulkhead): a waiting RPC holds one of the server's ``max_workers`` threads, so at
most ``max_workers - RESERVED_WORKERS`` may wait at once (``waiting``, a ``WaitingSlots``
the servicers are given); one more is answered RESOURCE_EXHAUSTED at once. The reserve
serves health checks, reflection and NOT_CONTROLLER answers, which never wait, however busy
the event thread is.

Security (``controller.security``): with ``tls`` the listener is TLS (mutual TLS when the
``ServerTls`` requires client certificates; the certificate is reloaded when its files
change), and ``interceptors`` (``authz``) decide which certificate principals may call
AdminService and ControllerService. Without them the listener is plaintext, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent import futures
from typing import TYPE_CHECKING

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from controller.api import MESSAGE_SIZE_OPTIONS
from controller.api.malformed import MalformedRequestInterceptor
from controller.api.v1 import admin_pb2, admin_pb2_grpc, controller_pb2, controller_pb2_grpc
from controller.rpc.calls import WaitingSlots
from controller.security.tls import ListenerBindError, ServerTls, add_port, bind_failure_reason
from controller.zk.port import SessionState

if TYPE_CHECKING:
    from controller.core.controller import Controller

CONTROLLER_SERVICE = controller_pb2.DESCRIPTOR.services_by_name["ControllerService"].full_name
ADMIN_SERVICE = admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name

DEFAULT_MAX_WORKERS = 64  # the grpc.max.workers setting's default
# Worker threads no RPC waiting for the event thread may take (health, NOT_CONTROLLER, ...).
RESERVED_WORKERS = 8


class ControllerGrpcServer:
    def __init__(
        self,
        address: str,
        *,
        max_workers: int = DEFAULT_MAX_WORKERS,
        tls: ServerTls | None = None,
        interceptors: Sequence[grpc.ServerInterceptor] = (),
    ) -> None:
        if max_workers <= RESERVED_WORKERS:
            raise ValueError(
                f"max_workers must exceed the {RESERVED_WORKERS} reserved threads, "
                f"got {max_workers}"
            )
        self.waiting = WaitingSlots(max_workers - RESERVED_WORKERS)
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers),
            # Last: authorization runs before a request is parsed.
            interceptors=[*interceptors, MalformedRequestInterceptor()],
            # gRPC shares a port with SO_REUSEPORT by default: a second controller given the
            # same grpc.listen would start, advertise the same address, and brokers and admin
            # tools would land on the standby at random. Large AlterPartition requests and
            # reassignment listings need more than gRPC's 4 MiB.
            options=[*MESSAGE_SIZE_OPTIONS, ("grpc.so_reuseport", 0)],
        )
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        self.tls = tls
        try:
            self.port = add_port(self._server, address, tls)
        except RuntimeError:  # grpcio raises when it cannot bind; its message says not why
            self.port = 0
        if self.port == 0:
            raise ListenerBindError(
                f"cannot bind the gRPC listener to {address}: {bind_failure_reason(address)}"
            )
        host = address.rsplit(":", 1)[0]
        self.address = f"{host}:{self.port}"
        self._services = [
            CONTROLLER_SERVICE,
            ADMIN_SERVICE,
            health.SERVICE_NAME,
            reflection.SERVICE_NAME,
        ]

    def add_controller_service(
        self, servicer: controller_pb2_grpc.ControllerServiceServicer
    ) -> None:
        controller_pb2_grpc.add_ControllerServiceServicer_to_server(servicer, self._server)

    def add_admin_service(self, servicer: admin_pb2_grpc.AdminServiceServicer) -> None:
        admin_pb2_grpc.add_AdminServiceServicer_to_server(servicer, self._server)

    def start(self) -> None:
        reflection.enable_server_reflection(self._services, self._server)
        self.health.set("", health_pb2.HealthCheckResponse.SERVING)
        self.set_active(False)
        self._server.start()

    def set_active(self, active: bool) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if active
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        self.health.set(CONTROLLER_SERVICE, status)
        self.health.set(ADMIN_SERVICE, status)

    def stop(self, grace: float = 2.0) -> None:
        self.health.enter_graceful_shutdown()
        self._server.stop(grace).wait(grace + 1)


def follow_active_state(server: ControllerGrpcServer, controller: Controller) -> None:
    """Keep the controller services' health SERVING exactly while this node is active to the
    outside (``Controller.serving_active``) and connected to ZooKeeper.

    Cut off from ZooKeeper (SUSPENDED) the controller stays active, as Kafka's does, until
    its session expires; another one may be elected meanwhile, and a load balancer routing
    by health must not keep sending calls to the one that cannot act on them. The session
    is followed through the controller's own hooks, so that health reads its state after
    the controller has taken the change into account.
    """
    lock = threading.Lock()
    last: list[bool | None] = [None]
    connected = [True]

    def update() -> None:
        with lock:
            serving = controller.serving_active and connected[0]
            if serving != last[0]:
                last[0] = serving
                server.set_active(serving)

    def on_session_state(state: SessionState) -> None:
        connected[0] = state is SessionState.CONNECTED
        update()

    controller.after_event_hooks.append(lambda ctl: update())
    controller.session_hooks.append(on_session_state)
