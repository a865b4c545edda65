"""Who may call which gRPC service: principals from client certificates (mutual TLS).

A caller's principal is its verified certificate: the subject's common name and every subject
alternative name (DNS names, IP addresses, URIs, e-mail addresses). A rule lists the names
allowed to call a service; a caller is allowed when any of its names is listed (``*`` allows
every authenticated caller). Services without a rule (gRPC health, reflection) are open to
whoever completes the TLS handshake.

Denials are explicit: ``UNAUTHENTICATED`` when the caller presented no verified certificate
(plaintext, or TLS without client authentication), ``PERMISSION_DENIED`` naming the principal
and the method otherwise. Both are logged at warning level, once a minute per caller host,
status and method (with the count of the refusals not logged since): a refused controller
resends every 100 ms, which must not flood the log.

gRPC Python server interceptors do not see the caller (``HandlerCallDetails`` has no auth
context), so the interceptor wraps the method handler and checks ``context.auth_context()``
when the call runs, before the servicer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
import structlog

log = structlog.get_logger("controller.security.authz")

ANY_PRINCIPAL = "*"
# The reference broker's option naming the controllers' principals (``zk-controller broker
# --controller-allowed-principals``): here so that the controller's settings loader, which
# refuses unknown ZKC_* variables, knows it belongs to a broker sharing the environment.
ENV_CONTROLLER_ALLOWED_PRINCIPALS = "ZKC_CONTROLLER_ALLOWED_PRINCIPALS"


@dataclass(frozen=True, slots=True)
class Principal:
    """A caller authenticated by its certificate."""

    common_name: str | None
    alt_names: tuple[str, ...] = ()
    subject: str | None = None

    @property
    def names(self) -> frozenset[str]:
        names = set(self.alt_names)
        if self.common_name:
            names.add(self.common_name)
        return frozenset(names)

    def __str__(self) -> str:
        subject = self.subject or (f"CN={self.common_name}" if self.common_name else "(no subject)")
        return f"{subject} [SAN {', '.join(self.alt_names)}]" if self.alt_names else subject


def _decoded(values: Iterable[bytes]) -> list[str]:
    return [v.decode("utf-8", "replace") for v in values]


def peer_principal(context: grpc.ServicerContext) -> Principal | None:
    """The caller's verified certificate identity, or None without one."""
    auth = context.auth_context() or {}
    if b"ssl" not in auth.get("transport_security_type", []):
        return None
    cn = _decoded(auth.get("x509_common_name", []))
    sans = _decoded(auth.get("x509_subject_alternative_name", []))
    subject = _decoded(auth.get("x509_subject", []))
    if not cn and not sans:
        return None  # TLS without a client certificate
    return Principal(cn[0] if cn else None, tuple(sans), subject[0] if subject else None)


def parse_principals(text: str | None) -> frozenset[str] | None:
    """``"admin, ops-1"`` -> ``{"admin", "ops-1"}``; None or blank -> None (no rule)."""
    if text is None or not text.strip():
        return None
    return frozenset(p.strip() for p in text.split(",") if p.strip())


class Denied(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check(allowed: frozenset[str], context: grpc.ServicerContext, method: str) -> Principal:
    """Return the caller's principal if ``allowed`` lets it call ``method``; raise ``Denied``."""
    principal = peer_principal(context)
    if principal is None:
        raise Denied(
            grpc.StatusCode.UNAUTHENTICATED,
            f"{method} needs an authenticated caller: connect with TLS and a client "
            "certificate signed by the controller's CA",
        )
    if ANY_PRINCIPAL in allowed or principal.names & allowed:
        return principal
    raise Denied(
        grpc.StatusCode.PERMISSION_DENIED,
        f"principal {principal} is not allowed to call {method}",
    )


class RefusalLogLimiter:
    """Which refusals to log: the first of each (caller host, status, method), then one a
    ``interval_s``, each saying how many were not logged since."""

    MAX_KEYS = 4096  # forgotten all at once past this: a bound, not an LRU

    def __init__(
        self, interval_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, ...], tuple[float, int]] = {}  # key -> (logged at, since)

    def admit(self, key: tuple[str, ...]) -> int | None:
        """The number of refusals suppressed since the last one logged, if this one is to be
        logged; None if it is not."""
        now = self._clock()
        with self._lock:
            last = self._seen.get(key)
            if last is not None and now - last[0] < self._interval_s:
                self._seen[key] = (last[0], last[1] + 1)
                return None
            if last is None and len(self._seen) >= self.MAX_KEYS:
                self._seen.clear()
            self._seen[key] = (now, 0)
            return last[1] if last is not None else 0


def peer_host(peer: str) -> str:
    """``ipv4:10.0.0.5:51234`` -> ``ipv4:10.0.0.5``: a caller's connections differ by port."""
    host, sep, port = peer.rpartition(":")
    return host if sep and port.isdigit() else peer


def _wrap(
    behavior: Callable[..., Any],
    allowed: frozenset[str],
    method: str,
    limiter: RefusalLogLimiter,
) -> Callable:
    def guarded(request_or_iterator: Any, context: grpc.ServicerContext) -> Any:
        try:
            check(allowed, context, method)
        except Denied as denied:
            peer = context.peer()
            suppressed = limiter.admit((peer_host(peer), denied.code.name, method))
            if suppressed is not None:
                extra = {"not_logged_since": suppressed} if suppressed else {}
                log.warning(
                    "gRPC call refused", method=method, code=denied.code.name, peer=peer,
                    reason=denied.message, **extra,
                )  # fmt: skip
            context.abort(denied.code, denied.message)
        return behavior(request_or_iterator, context)

    return guarded


_BEHAVIORS = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")


class AuthorizationInterceptor(grpc.ServerInterceptor):
    """Enforce ``rules``: full service name (``zkcontroller.v1.AdminService``) or method
    (``zkcontroller.v1.BrokerService/StopReplica``) -> the principal names allowed to call
    it. A method's rule wins over its service's; calls matching no rule are not checked."""

    def __init__(
        self, rules: Mapping[str, frozenset[str]], limiter: RefusalLogLimiter | None = None
    ) -> None:
        self.rules = dict(rules)
        self.refusal_log = limiter or RefusalLogLimiter()

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        method = handler_call_details.method  # "/package.Service/Method"
        service = method.lstrip("/").split("/", 1)[0]
        allowed = self.rules.get(method.lstrip("/"), self.rules.get(service))
        if handler is None or allowed is None:
            return handler
        for name in _BEHAVIORS:
            behavior = getattr(handler, name, None)
            if behavior is not None:
                # RpcMethodHandler is a namedtuple in grpcio: replace just the behaviour.
                wrapped = _wrap(behavior, allowed, method.lstrip("/"), self.refusal_log)
                return handler._replace(**{name: wrapped})
        return handler


def interceptors(rules: Mapping[str, frozenset[str] | None]) -> list[grpc.ServerInterceptor]:
    """The interceptor list for ``grpc.server``: empty when no rule is set (plain mode)."""
    active = {service: names for service, names in rules.items() if names is not None}
    return [AuthorizationInterceptor(active)] if active else []
