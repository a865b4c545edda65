"""Reaching the active controller over gRPC.

The active controller's id is in Kafka's ``/controller``; its address is in our
``/zk-controller/controllers/<id>``. A call that lands on a node that is no longer active
comes back with NOT_CONTROLLER and (usually) the new controller's id in trailing metadata;
the client follows it, re-reading ZooKeeper when there is no hint, until its deadline.
``controller_once`` makes a single try instead, for a caller that retries on its own terms
(the broker's controlled shutdown).

With TLS (``channel_opener``, ``controller.security``) the channels are TLS and follow
certificate rotations. A refusal by the controller's authorization (PERMISSION_DENIED,
UNAUTHENTICATED) is final: it raises ``ControllerAccessDeniedError`` at once. So is a
connection the listener dropped when the controller's registration says it needs other TLS
settings than this client's (``ControllerTlsMismatchError``): a TLS listener closes a
plaintext connection without a word, which would otherwise look like a controller that is down
until the deadline.

Only what is safe to send again is sent again: a call that never left (no connection could
be made) and the controller's own "not processed, resend it" answers (NOT_CONTROLLER, the
bulkhead's refusal marked ``resend``). Any other failure may come after the controller
applied the request (an answer too large to read, a connection lost mid-call, the deadline):
resending a whole-cluster election or a topic creation is not harmless, so that raises
``ControllerAnswerLostError`` at once, saying the request may have been applied.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from controller.api import MESSAGE_SIZE_OPTIONS
from controller.api.errors import Errors, controller_hint, has_resend_marker
from controller.api.v1 import admin_pb2_grpc, controller_pb2_grpc
from controller.security.tls import PLAINTEXT, ChannelOpener
from controller.zk import codecs, endpoints, paths
from controller.zk.endpoints import ControllerEndpoint, decode_controller_endpoint
from controller.zk.errors import MalformedZnodeError, NoNodeError
from controller.zk.port import ZkPort

R = TypeVar("R")


class NoActiveControllerError(RuntimeError):
    """No controller is active (or none could be reached) before the deadline."""


class ControllerAccessDeniedError(NoActiveControllerError):
    """The controller refused this caller (its certificate principal): retrying cannot help.
    A subclass so that callers reporting an unreachable controller report this too."""


class ControllerAnswerLostError(NoActiveControllerError):
    """The request reached the controller (or may have) but no answer could be read: it may
    have been applied, so it is not resent. A subclass so that callers reporting an
    unreachable controller report this too (its message says what happened)."""


class ControllerTlsMismatchError(NoActiveControllerError):
    """The controller's registration says its gRPC listener cannot be spoken to with this
    client's TLS settings: every try would fail the same way, so none is made."""


class ControllerTlsHandshakeError(NoActiveControllerError):
    """The TLS handshake with the controller failed in a way no retry mends (a certificate
    that does not verify, or a listener that keeps closing the connection on this client's
    certificate): raised at once instead of at the deadline."""


class ControllerRefusedCallError(NoActiveControllerError):
    """The controller (or gRPC) refused the request as it is (malformed, a method it does not
    serve): not applied, and resending the same request cannot help."""


#: How long a client waits, with no controller process registered at all, before it says
#: so instead of waiting out its deadline: a restart (systemd waits 5 s) registers within it.
NONE_RUNNING_GRACE_S = 10.0

_DENIED = (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED)
_REFUSED = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNIMPLEMENTED)
# grpc-core's words for a call failed while picking a connection, before anything was sent.
_NOT_SENT = "failed to connect to all addresses"
# ...and for a port nothing listens on (a controller restarting): no listener was reached.
_REFUSED_CONNECTION = "Connection refused"
# grpc-core's (BoringSSL's) words for a handshake that failed on a certificate (the
# controller's does not verify or does not name the host; an alert naming ours): the same
# files fail the same way next time. Not any "handshake failed": a listener going down
# mid-handshake is one too, and passes.
_HANDSHAKE_FAILED = (
    "CERTIFICATE_VERIFY_FAILED",
    "Hostname Verification",
    "TLSV1_ALERT_UNKNOWN_CA",
    "SSLV3_ALERT_BAD_CERTIFICATE",
    "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
)
# ...and for a listener that closed the connection: a mutual-TLS listener refusing this
# client's certificate says nothing else. A few in a row from one address, not one: a
# listener going down closes connections too.
_SOCKET_CLOSED = "Socket closed"
_CLOSED_IN_A_ROW = 5
SERVER_CERT_HINT = (
    "check that --tls-ca-file is the CA that signed the controller's certificate (its "
    "grpc.tls.cert.file) and that the certificate names the host the controller registers"
)
CLIENT_CERT_HINT = (
    "the controller closes every TLS connection from this client: it may refuse this tool's "
    "certificate; check that --tls-cert-file chains to the controller's grpc.tls.ca.file and, "
    "if it names extended key usages, includes clientAuth"
)


def tls_mismatch(endpoint: ControllerEndpoint, opener: ChannelOpener) -> str | None:
    """Why a client with ``opener``'s settings cannot talk to the listener ``endpoint``
    registers, naming the flags that fix it; None when they fit or the registration does not
    say (a controller older than the security fields)."""
    protocol = endpoint.grpc_security_protocol
    if protocol is None:
        return None  # an older controller, or a protocol this version does not know: try
    where = f"controller {endpoint.controller_id} at {endpoint.grpc}"
    mutual = endpoint.grpc_client_auth == endpoints.CLIENT_AUTH_REQUIRED
    if protocol == endpoints.SSL and not opener.secure:
        needed = "--tls-ca-file, --tls-cert-file and --tls-key-file" if mutual else "--tls-ca-file"
        return f"{where} serves gRPC over TLS, and this client is plaintext: give it {needed}"
    if protocol == endpoints.PLAINTEXT and opener.secure:
        return f"{where} serves plaintext gRPC, and this client uses TLS: drop its --tls-* options"
    if mutual and not opener.presents_certificate:
        return (
            f"{where} requires a client certificate (mutual TLS), and this client has none: "
            "give it --tls-cert-file and --tls-key-file"
        )
    return None


def _not_sent(exc: grpc.RpcError) -> bool:
    """Whether ``exc`` certainly left the request unsent or unprocessed (safe to resend)."""
    if has_resend_marker(exc.trailing_metadata()):
        return True
    return exc.code() is grpc.StatusCode.UNAVAILABLE and _NOT_SENT in (exc.details() or "")


class ControllerClient:
    def __init__(
        self,
        port: ZkPort,
        *,
        timeout_s: float = 30.0,
        channel_opener: ChannelOpener = PLAINTEXT,
        answer_grace_s: float = 0.0,
    ) -> None:
        """``timeout_s`` bounds finding and reaching the active controller; a call that
        reached it may take ``answer_grace_s`` longer, for a request that carries its own
        timeout (the controller answers REQUEST_TIMED_OUT at it) to bring that answer back."""
        self._port = port
        self.timeout_s = timeout_s
        self.answer_grace_s = answer_grace_s
        self._opener = channel_opener
        self._channels: dict[str, grpc.Channel] = {}

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()

    def __enter__(self) -> ControllerClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- discovery -----------------------------------------------------------------------

    def active_controller_id(self) -> int | None:
        try:
            data, _ = self._port.get(paths.CONTROLLER)
        except NoNodeError:
            return None
        return codecs.decode_controller(data, paths.CONTROLLER)

    def _not_advertised(self, controller_id: int) -> str:
        """Why ``controller_id``, named by ``/controller``, has no address to call."""
        try:
            data, _ = self._port.get(paths.CONTROLLER)
            registration = codecs.decode_controller_full(data, paths.CONTROLLER)
        except (NoNodeError, MalformedZnodeError):
            registration = None
        if (
            registration is not None
            and registration.broker_id == controller_id
            and registration.kraft_controller_epoch >= 0
        ):
            return (
                f"controller {controller_id} (in /controller) is a KRaft controller (a "
                "ZooKeeper-to-KRaft migration, kraftControllerEpoch "
                f"{registration.kraft_controller_epoch}): no zk-controller can be elected while "
                "it holds /controller (zk-controller status shows it)"
            )
        return (
            f"controller {controller_id} (in /controller) has not advertised an address: it is "
            "not a zk-controller (a Kafka broker acting as controller?), or it has only just "
            "started"
        )

    def _controllers_running(self) -> bool:
        """Whether any controller process has advertised itself (active or standby)."""
        try:
            return bool(self._port.get_children(paths.CONTROLLER_ENDPOINTS))
        except NoNodeError:
            return False

    def endpoint_of(self, controller_id: int) -> ControllerEndpoint | None:
        try:
            data, _ = self._port.get(paths.controller_endpoint_path(controller_id))
        except NoNodeError:
            return None
        return decode_controller_endpoint(controller_id, data)

    def _channel(self, address: str) -> grpc.Channel:
        channel = self._channels.get(address)
        if channel is None:
            # Answers (an election of every partition) can exceed gRPC's 4 MiB default.
            channel = self._opener.open(address, options=MESSAGE_SIZE_OPTIONS)
            self._channels[address] = channel
        return channel

    # -- calls ---------------------------------------------------------------------------

    def admin(self, method: str, request: Any) -> Any:
        return self._call(
            method, lambda ch: getattr(admin_pb2_grpc.AdminServiceStub(ch), method), request
        )

    def controller(self, method: str, request: Any) -> Any:
        return self._call(
            method,
            lambda ch: getattr(controller_pb2_grpc.ControllerServiceStub(ch), method),
            request,
        )

    def controller_once(self, method: str, request: Any) -> Any:
        """One try of ``controller``, for a caller with its own retry loop (the broker's
        controlled shutdown, as Kafka's): no controller, no advertised address or a transport
        failure (refused connection, ...) raises ``NoActiveControllerError`` at once; a
        NOT_CONTROLLER hint is followed once, otherwise that response is returned. Only a
        controller that accepts the call and does not answer makes it last ``timeout_s``."""
        return self._call(
            method,
            lambda ch: getattr(controller_pb2_grpc.ControllerServiceStub(ch), method),
            request,
            once=True,
        )

    def _check_handshake(
        self, target: int, address: str, details: str, closed: tuple[str, int] | None
    ) -> tuple[str, int] | None:
        """Raise ``ControllerTlsHandshakeError`` for a handshake failure that cannot mend;
        otherwise return the count of connections ``address`` closed in a row."""
        if not self._opener.secure:
            return None
        where = f"controller {target} at {address}"
        if any(marker.lower() in details.lower() for marker in _HANDSHAKE_FAILED):
            raise ControllerTlsHandshakeError(
                f"the TLS handshake with {where} failed ({details}): {SERVER_CERT_HINT}"
            )
        if _SOCKET_CLOSED not in details or not self._opener.presents_certificate:
            return None
        count = closed[1] + 1 if closed is not None and closed[0] == address else 1
        if count >= _CLOSED_IN_A_ROW:
            raise ControllerTlsHandshakeError(
                f"{where} closed {count} TLS connections in a row ({details}): {CLIENT_CERT_HINT}"
            )
        return (address, count)

    def _call(
        self,
        method: str,
        stub_method: Callable[[grpc.Channel], Any],
        request: Any,
        *,
        once: bool = False,
    ) -> Any:
        deadline = time.monotonic() + self.timeout_s
        target: int | None = None
        followed_hint = False
        last_problem = "no controller is registered in /controller"
        none_running_since: float | None = None
        closed: tuple[str, int] | None = None  # (address, connections closed in a row)
        while time.monotonic() < deadline:
            target = target if target is not None else self.active_controller_id()
            endpoint = self.endpoint_of(target) if target is not None else None
            if target is None or endpoint is None:
                if target is not None:
                    last_problem = self._not_advertised(target)
                if once:
                    break
                # A failover or a restart leaves a moment with no controller; no controller
                # process at all is not going to end within the deadline.
                now = time.monotonic()
                if self._controllers_running():
                    none_running_since = None
                elif none_running_since is None:
                    none_running_since = now
                elif now - none_running_since >= NONE_RUNNING_GRACE_S:
                    raise NoActiveControllerError(
                        f"could not reach the active controller: {last_problem}, and no "
                        f"zk-controller is running against this ZooKeeper (none is registered "
                        f"under {paths.CONTROLLER_ENDPOINTS}): start one, or check the connect "
                        "string's chroot"
                    )
                target = None
                time.sleep(0.2)
                continue
            none_running_since = None  # a controller is registered now
            address = endpoint.grpc
            remaining = max(deadline - time.monotonic(), 0.1) + self.answer_grace_s
            try:
                response, call = stub_method(self._channel(address)).with_call(
                    request, timeout=remaining
                )
            except grpc.RpcError as exc:
                if exc.code() in _DENIED:
                    raise ControllerAccessDeniedError(
                        f"controller {target} at {address} refused the call: "
                        f"{exc.code().name}: {exc.details()}"
                    ) from None
                if exc.code() in _REFUSED:
                    raise ControllerRefusedCallError(
                        f"controller {target} at {address} refused {method}: "
                        f"{exc.code().name}: {exc.details()}"
                    ) from None
                if not _not_sent(exc):
                    raise ControllerAnswerLostError(
                        f"{method} reached controller {target} at {address} (or may have) but "
                        f"no answer could be read ({exc.code().name}: {exc.details()}): it may "
                        "have been applied; check before resending it"
                    ) from None
                mismatch = tls_mismatch(endpoint, self._opener)
                if mismatch is not None and _REFUSED_CONNECTION not in (exc.details() or ""):
                    # The listener was reached and dropped us, as a handshake that cannot work
                    # does: the registration says why. Only now, not before trying: one left by
                    # a previous process (restarted with other TLS settings, its old session
                    # not yet expired) would be stale.
                    raise ControllerTlsMismatchError(mismatch) from None
                closed = self._check_handshake(target, address, exc.details() or "", closed)
                last_problem = f"controller {target} at {address}: {exc.code().name}"
                if exc.details():
                    last_problem += f" ({exc.details()})"
                if once:
                    break
                target = None
                time.sleep(0.2)
                continue
            if getattr(response, "error_code", Errors.NONE) != Errors.NOT_CONTROLLER:
                return response
            hint = controller_hint(call.trailing_metadata())
            last_problem = f"controller {target} is no longer active"
            target = hint if hint is not None and hint != target else None
            if once:
                if target is None or followed_hint:
                    return response  # the caller's next try re-reads /controller
                followed_hint = True
                continue
            if target is None:
                time.sleep(0.2)
        if once:
            raise NoActiveControllerError(f"could not reach the active controller: {last_problem}")
        if "UNAVAILABLE" in last_problem and not self._opener.secure:
            # A TLS listener closes a plaintext connection without a word ("Socket closed").
            last_problem += (
                "; if the controller's gRPC listener is TLS, give this tool --tls-ca-file "
                "(and --tls-cert-file and --tls-key-file for mutual TLS)"
            )
        raise NoActiveControllerError(
            f"could not reach the active controller within {self.timeout_s:.0f}s: {last_problem}"
        )
