"""`zk-controller status` scraping a controller's metrics address: whatever answers there,
status reports it and never dies, and the address is dialled directly, not through a proxy
(in-memory ZooKeeper, a real local HTTP server)."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from controller.status import collect_status
from controller.zk import paths
from controller.zk.endpoints import ControllerEndpoint, encode_controller_endpoint
from controller.zk.memory import MemoryZooKeeper
from controller.zk.port import ZkPort

GOOD = (b"kafka_controller_active_controller_count 1.0\n"
        b'kafka_controller_leader_elections_total{type="offline"} 2.0\n')


class _Answer(BaseHTTPRequestHandler):
    body = GOOD

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def metrics() -> Iterator[HTTPServer]:
    server = HTTPServer(("127.0.0.1", 0), _Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def port(metrics: HTTPServer) -> ZkPort:
    port = MemoryZooKeeper().open_session()
    port.ensure_path(paths.CONTROLLER_ENDPOINTS)
    address = f"127.0.0.1:{metrics.server_address[1]}"
    port.create(paths.controller_endpoint_path(7),
                encode_controller_endpoint(ControllerEndpoint(7, "127.0.0.1:1", address)))
    return port


@pytest.mark.parametrize("body", [
    b'{, =e\\11P= \\0LY{0#E"PT2',  # the Prometheus parser raised IndexError on it
    b"kafka_controller_leader_elections_total 1\n",  # no type label: KeyError
    b"\xff\xfe not text",
])
def test_a_body_that_is_not_a_controllers_metrics_is_reported(
    port: ZkPort, monkeypatch: pytest.MonkeyPatch, body: bytes
) -> None:
    monkeypatch.setattr(_Answer, "body", body)
    (c7,) = collect_status(port).controllers
    if c7.reachable:  # the label-less sample is metrics, just without a type
        assert c7.elections == {"": 1.0}
    else:
        assert c7.error.startswith("metrics unreachable: not Prometheus metrics")


def test_the_metrics_address_is_dialled_directly_not_through_a_proxy(
    port: ZkPort, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An admin host's http_proxy made a healthy controller "metrics unreachable".
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.setattr(urllib.request, "_opener", None)  # urlopen's, built from the env once
    (c7,) = collect_status(port).controllers
    assert c7.reachable, c7.error
    assert c7.metrics["active_controller_count"] == 1.0 and c7.elections == {"offline": 2.0}
