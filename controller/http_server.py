"""The operations HTTP endpoint: ``/metrics``, ``/healthz`` and ``/readyz``.

A stdlib ``ThreadingHTTPServer`` on a daemon thread. ``/metrics`` is rendered by
prometheus_client's exposition functions from the instance's registry (content negotiation,
gzip, ``name[]`` filtering), never by hand.

* ``/healthz``: 200 ``ok`` while the process serves requests (liveness).
* ``/readyz``: 200 with ``{"zookeeper":"connected","active":...,"controller_id":N,"epoch":E}``
  while connected to ZooKeeper, else 503 with the same shape (readiness). Whether this
  process is the *active* controller is reported, not required: a standby is ready.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import structlog
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted

from controller.config import HostPort

log = structlog.stdlib.get_logger("controller.http")


@dataclass(frozen=True, slots=True)
class Readiness:
    zookeeper_connected: bool
    active: bool
    controller_id: int
    epoch: int | None = None  # this process's controller epoch while active, else None

    def to_json(self) -> dict[str, Any]:
        return {
            "zookeeper": "connected" if self.zookeeper_connected else "disconnected",
            "active": self.active,
            "controller_id": self.controller_id,
            "epoch": self.epoch,
        }


ReadinessSource = Callable[[], Readiness]


MAX_CONNECTIONS = 32  # handler threads at once; more connections are closed at once
REQUEST_DEADLINE_S = 30.0  # for a client to send its whole request


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a stuck client must not keep the process alive
    registry: CollectorRegistry
    readiness: ReadinessSource | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A thread per connection, but not without bound: slow clients holding threads
        # would starve the daemon's own thread starts under a task limit.
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            log.warning("too many HTTP connections; closing one", client=client_address[0],
                        limit=MAX_CONNECTIONS)  # fmt: skip
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()  # no thread was started to release it
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _Server6(_Server):
    address_family = socket.AF_INET6


class _DeadlineReader:
    """The request stream, read line by line against one deadline for the whole request:
    a socket timeout alone bounds each ``recv``, so a client sending a byte at a time could
    hold its thread for ever."""

    def __init__(self, stream: Any, sock: socket.socket, deadline: float) -> None:
        self._stream = stream
        self._sock = sock
        self._deadline = deadline

    def readline(self, limit: int = -1) -> bytes:
        line = bytearray()
        while limit < 0 or len(line) < limit:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the request took too long to arrive")
            self._sock.settimeout(remaining)
            chunk = self._stream.peek(1)  # what is buffered, or one recv
            if not chunk:
                break
            end = chunk.find(b"\n")
            take = len(chunk) if end < 0 else end + 1
            if limit >= 0:
                take = min(take, limit - len(line))
            line += self._stream.read(take)
            if line.endswith(b"\n"):
                break
        return bytes(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = REQUEST_DEADLINE_S  # each recv; the whole request: _DeadlineReader
    server_version = "zk-controller"

    def setup(self) -> None:
        super().setup()
        deadline = time.monotonic() + REQUEST_DEADLINE_S
        self.rfile = _DeadlineReader(self.rfile, self.connection, deadline)  # type: ignore[assignment]

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self.connection.settimeout(self.timeout)  # the answer gets the usual per-send time
        return parsed

    def do_GET(self) -> None:
        self._dispatch(send_body=True)

    def do_HEAD(self) -> None:
        self._dispatch(send_body=False)

    def _dispatch(self, *, send_body: bool) -> None:
        url = urlsplit(self.path)
        if url.path == "/metrics":
            self._metrics(parse_qs(url.query), send_body)
        elif url.path == "/healthz":
            self._send(200, "text/plain; charset=utf-8", b"ok\n", send_body)
        elif url.path == "/readyz":
            self._readyz(send_body)
        else:
            self._send(404, "text/plain; charset=utf-8", b"not found\n", send_body)

    def _metrics(self, params: dict[str, list[str]], send_body: bool) -> None:
        registry = self.server.registry
        names = params.get("name[]")
        if names:
            registry = registry.restricted_registry(names)  # type: ignore[assignment]
        encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
        try:
            body = encoder(registry)
        except Exception:
            log.exception("metrics collection failed")
            self._send(500, "text/plain; charset=utf-8", b"metrics collection failed\n",
                       send_body)  # fmt: skip
            return
        extra = {}
        if gzip_accepted(self.headers.get("Accept-Encoding", "")):
            body = gzip.compress(body)
            extra["Content-Encoding"] = "gzip"
        self._send(200, content_type, body, send_body, extra)

    def _readyz(self, send_body: bool) -> None:
        source = self.server.readiness
        try:
            if source is None:
                status, doc = 503, {"zookeeper": "unknown", "error": "no readiness source"}
            else:
                ready = source()
                status, doc = (200 if ready.zookeeper_connected else 503), ready.to_json()
        except Exception as exc:
            log.exception("readiness check failed")
            status, doc = 503, {"zookeeper": "unknown", "error": str(exc)}
        body = json.dumps(doc).encode() + b"\n"
        self._send(status, "application/json", body, send_body)

    def _send(
        self,
        status: int,
        content_type: str,
        body: bytes,
        send_body: bool,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        # Scrapes every few seconds would flood stderr; keep access lines at debug.
        log.debug("http request", client=self.client_address[0], request=format % args)


class ControllerHttpServer:
    """Serves the endpoints on ``address`` from a daemon thread until ``shutdown()``."""

    def __init__(
        self,
        address: HostPort | tuple[str, int],
        registry: CollectorRegistry,
        readiness: ReadinessSource | None = None,
    ) -> None:
        host, port = address
        server_class = _Server6 if ":" in host else _Server  # IPv6 literals need AF_INET6
        try:
            self._server = server_class((host, port), _Handler)  # binds now
        except OSError as exc:  # say which listener: the bare errno names neither
            where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            raise OSError(
                exc.errno, f"cannot bind the metrics listener to {where}: {exc.strerror or exc}"
            ) from None
        self._server.registry = registry
        self._server.readiness = readiness
        # serve_forever polls for shutdown; 0.1 s keeps shutdown() quick at negligible cost.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.1,), name="http-server", daemon=True
        )
        self._started = False
        self._stopped = False

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        """The bound port (the real one when 0 was asked for)."""
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = self.host
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1" if host != "::" else "::1"
        return f"http://{HostPort(host, self.port)}"

    def set_readiness(self, readiness: ReadinessSource | None) -> None:
        self._server.readiness = readiness

    def start(self) -> ControllerHttpServer:
        if not self._started:
            self._started = True
            self._thread.start()
            log.info("http server listening", address=str(HostPort(self.host, self.port)))
        return self

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop accepting requests and close the socket. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        if self._started:
            self._server.shutdown()  # waits for serve_forever to return
            self._thread.join(timeout)
        self._server.server_close()

    def __enter__(self) -> ControllerHttpServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.shutdown()


def start_http_server(
    address: HostPort | tuple[str, int],
    registry: CollectorRegistry,
    readiness: ReadinessSource | None = None,
) -> ControllerHttpServer:
    """Bind and start serving; raises OSError if the address is unavailable."""
    return ControllerHttpServer(address, registry, readiness).start()
