from __future__ import annotations

import dataclasses
import gzip
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from controller import http_server
from controller.core.controller_state import TIMED_STATES, ControllerState
from controller.core.event_manager import ControllerEventManager
from controller.core.events import BrokerChange, ControllerEvent
from controller.http_server import ControllerHttpServer, Readiness, start_http_server
from controller.metrics import ControllerMetrics, ControllerMetricsSnapshot
from controller.zk.port import SessionState

P = "kafka_controller_"
GAUGES = [
    "active_controller_count", "controller_state", "controller_epoch", "global_topic_count",
    "global_partition_count", "active_broker_count", "fenced_broker_count",
    "offline_partitions_count", "preferred_replica_imbalance_count", "topics_to_delete_count",
    "replicas_to_delete_count", "topics_ineligible_to_delete_count",
    "replicas_ineligible_to_delete_count", "zk_migration_state", "event_queue_size",
]  # fmt: skip
COUNTERS = [
    "unclean_leader_elections_total", "failovers_total", "zookeeper_session_expirations_total",
    "leader_elections_total", "zookeeper_disconnects_total",
]  # fmt: skip
HISTOGRAMS = ["event_queue_time_seconds", "event_processing_seconds"]
# Series that exist only once something is observed (label values appear on first use).
LAZY_HISTOGRAMS = [
    "zookeeper_request_seconds", "zookeeper_batch_size", "channel_request_queue_time_seconds",
    "channel_request_send_seconds",
]  # fmt: skip
LIVE_GAUGES = ["channel_total_queue_size", "zookeeper_session_state"]

ACTIVE = ControllerMetricsSnapshot(
    active=True, epoch=9, global_topic_count=3, global_partition_count=30,
    active_broker_count=5, offline_partitions_count=2, preferred_replica_imbalance_count=4,
    topics_to_delete_count=1, replicas_to_delete_count=6, topics_ineligible_to_delete_count=7,
    replicas_ineligible_to_delete_count=8,
)  # fmt: skip


class Served:
    def __init__(self, metrics: ControllerMetrics) -> None:
        self.metrics = metrics
        self.ready = Readiness(zookeeper_connected=True, active=True, controller_id=1, epoch=9)
        self.server = start_http_server(("127.0.0.1", 0), metrics.registry, lambda: self.ready)

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict, bytes]:
        req = urllib.request.Request(self.server.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def scrape(self) -> dict[str, float]:
        status, _, body = self.get("/metrics")
        assert status == 200
        return {
            sample.name + _labels(sample.labels): sample.value
            for family in text_string_to_metric_families(body.decode())
            for sample in family.samples
        }


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())) + "}" if labels else ""


@pytest.fixture
def served() -> Iterator[Served]:
    served = Served(ControllerMetrics())
    yield served
    served.server.shutdown()


def test_every_metric_is_exposed_over_http(served: Served) -> None:
    assert served.server.port != 0  # the ephemeral port actually bound
    samples = served.scrape()
    names = {name.partition("{")[0] for name in samples}
    for gauge in GAUGES:
        assert P + gauge in names
    for counter in COUNTERS:
        assert P + counter in names
    for hist in HISTOGRAMS:
        assert {P + hist + "_bucket", P + hist + "_count", P + hist + "_sum"} <= names
    for gauge in LIVE_GAUGES:
        assert P + gauge in names
    assert P + "build_info" in names
    assert all(name.startswith(P) for name in names)
    assert not [n for n in names if n.endswith("_created")]
    assert not [n for n in samples if "topic=" in n or "partition=" in n]
    # One processing series per ControllerState that has a Kafka timer, and only those.
    states = {n.split("state=")[1].rstrip("}") for n in samples
              if n.startswith(P + "event_processing_seconds_count")}  # fmt: skip
    assert states == {s.name for s in TIMED_STATES}
    assert "Idle" not in states and "UpdateMetadataResponseReceived" not in states


def test_gauges_follow_the_published_snapshot(served: Served) -> None:
    m = served.metrics
    before = served.scrape()
    assert before[P + "active_controller_count"] == 0
    assert before[P + "zk_migration_state"] == 4

    m.update(ACTIVE)
    after = served.scrape()
    assert after[P + "active_controller_count"] == 1
    assert after[P + "controller_epoch"] == 9
    for f in dataclasses.fields(ControllerMetricsSnapshot):
        if f.name not in ("active", "epoch"):
            assert after[P + f.name] == getattr(ACTIVE, f.name), f.name
    assert after[P + "fenced_broker_count"] == 0

    # A controller that resigned keeps stale context values; they must read 0.
    m.update(dataclasses.replace(ACTIVE, active=False))
    inactive = served.scrape()
    assert inactive[P + "active_controller_count"] == 0
    for gauge in GAUGES:
        if gauge not in ("active_controller_count", "controller_state", "zk_migration_state",
                         "event_queue_size"):  # fmt: skip
            assert inactive[P + gauge] == 0, gauge
    assert inactive[P + "zk_migration_state"] == 4


def test_state_and_queue_size_are_read_at_scrape_time(served: Served) -> None:
    m = served.metrics
    state, queue = [ControllerState.Idle], [0]
    m.set_state_source(lambda: state[0])
    m.set_queue_size_source(lambda: queue[0])
    state[0], queue[0] = ControllerState.IsrChange, 42
    samples = served.scrape()
    assert samples[P + "controller_state"] == 9
    assert samples[P + "event_queue_size"] == 42

    def broken() -> int:
        raise RuntimeError("boom")

    m.set_queue_size_source(broken)  # a broken source must not break the scrape
    assert served.scrape()[P + "event_queue_size"] == 0


def test_histograms_and_counters_observe(served: Served) -> None:
    m = served.metrics
    m.observe_event_queue_time(0.002)
    m.observe_event_queue_time(0.5)
    m.observe_event_processing(ControllerState.BrokerChange, 1.5)
    m.observe_event_processing(ControllerState.Idle, 3.0)  # untimed in Kafka: ignored
    m.observe_event_processing(ControllerState.UpdateMetadataResponseReceived, 3.0)
    m.inc_unclean_leader_elections(2)
    m.inc_failovers()
    m.inc_zookeeper_session_expirations()
    s = served.scrape()
    assert s[P + "event_queue_time_seconds_count"] == 2
    assert s[P + "event_queue_time_seconds_sum"] == pytest.approx(0.502)
    assert s[P + "event_queue_time_seconds_bucket{le=0.0025}"] == 1
    assert s[P + "event_processing_seconds_count{state=BrokerChange}"] == 1
    assert s[P + "event_processing_seconds_sum{state=BrokerChange}"] == 1.5
    assert sum(v for k, v in s.items() if k.startswith(P + "event_processing_seconds_count")) == 1
    assert s[P + "unclean_leader_elections_total"] == 2
    assert s[P + "failovers_total"] == 1
    assert s[P + "zookeeper_session_expirations_total"] == 1


def test_instances_have_separate_registries() -> None:
    a, b = ControllerMetrics(), ControllerMetrics()  # no duplicate-registration error
    a.inc_failovers()
    assert a.registry.get_sample_value(P + "failovers_total") == 1
    assert b.registry.get_sample_value(P + "failovers_total") == 0
    assert REGISTRY.get_sample_value(P + "failovers_total") is None


def test_event_manager_hooks_feed_the_metrics() -> None:
    metrics = ControllerMetrics()
    processed = threading.Event()

    class Processor:
        def process(self, event: ControllerEvent) -> None:
            processed.set()

        def preempt(self, event: ControllerEvent) -> None:
            pass

    manager = ControllerEventManager(
        Processor(),
        on_queue_time=metrics.observe_event_queue_time,
        on_processed=metrics.observe_event_processing,
    )
    metrics.set_state_source(lambda: manager.state)
    metrics.set_queue_size_source(manager.queue_size)
    manager.start()
    try:
        manager.put(BrokerChange())
        assert processed.wait(5)
    finally:
        manager.close()
    reg = metrics.registry
    assert reg.get_sample_value(P + "event_queue_time_seconds_count") == 1
    assert reg.get_sample_value(
        P + "event_processing_seconds_count", {"state": "BrokerChange"}
    ) == 1
    assert reg.get_sample_value(P + "controller_state") == 0  # idle again


def test_healthz_and_readyz(served: Served) -> None:
    status, headers, body = served.get("/healthz")
    assert (status, body) == (200, b"ok\n")

    status, headers, body = served.get("/readyz")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {
        "zookeeper": "connected", "active": True, "controller_id": 1, "epoch": 9,
    }  # fmt: skip

    served.ready = Readiness(False, False, 1, None)
    status, _, body = served.get("/readyz")
    assert status == 503
    assert json.loads(body) == {
        "zookeeper": "disconnected", "active": False, "controller_id": 1, "epoch": None,
    }  # fmt: skip

    def failing() -> Readiness:
        raise RuntimeError("zk client gone")

    served.server.set_readiness(failing)
    status, _, body = served.get("/readyz")
    assert status == 503 and json.loads(body)["error"] == "zk client gone"
    served.server.set_readiness(None)
    assert served.get("/readyz")[0] == 503
    assert served.get("/healthz")[0] == 200  # liveness does not depend on readiness
    assert served.get("/nope")[0] == 404


def test_metrics_content_negotiation(served: Served) -> None:
    status, headers, body = served.get("/metrics", {"Accept-Encoding": "gzip"})
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert b"kafka_controller_active_controller_count" in gzip.decompress(body)

    status, headers, body = served.get(
        "/metrics", {"Accept": "application/openmetrics-text; version=1.0.0"}
    )
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert body.rstrip().endswith(b"# EOF")
    assert b"_created" not in body

    _, _, body = served.get("/metrics?name[]=kafka_controller_failovers_total")
    text = body.decode()
    assert "kafka_controller_failovers_total 0.0" in text
    assert "active_controller_count" not in text and "_created" not in text


def test_every_series_can_be_scraped_by_name() -> None:
    # name[] filtering maps names to collectors through describe(): a family missing there
    # (controller_id was) is dropped from every filtered scrape.
    served = Served(ControllerMetrics(controller_id=7))
    try:
        names = {key.split("{")[0] for key in served.scrape()}
        assert P + "controller_id" in names
        for name in sorted(names):
            _, _, body = served.get(f"/metrics?name[]={name}")
            samples = {
                sample.name
                for family in text_string_to_metric_families(body.decode())
                for sample in family.samples
            }
            assert samples == {name}, name
    finally:
        served.server.shutdown()


def _closed_by_server(sock: socket.socket, within_s: float) -> bool:
    """True when the server closes ``sock`` (EOF or reset) within ``within_s``."""
    sock.settimeout(within_s)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_client_trickling_its_request_is_cut_off_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The 30 s socket timeout bounded each recv only: a byte every few seconds held a
    # handler thread for ever.
    monkeypatch.setattr(http_server, "REQUEST_DEADLINE_S", 1.0)
    server = start_http_server(("127.0.0.1", 0), ControllerMetrics().registry)
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            sock.sendall(b"GET /hea")
            closed = False
            for byte in b"lthz HTTP/1.0\r\n":  # one byte every 0.25 s: ~4 s in all
                time.sleep(0.25)
                try:
                    sock.sendall(bytes([byte]))
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
            assert closed or _closed_by_server(sock, 5.0)
        # A client that sends its request in time is answered.
        with urllib.request.urlopen(server.url + "/healthz", timeout=5) as resp:
            assert resp.status == 200
    finally:
        server.shutdown()


def test_connections_beyond_the_limit_are_closed_not_given_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http_server, "MAX_CONNECTIONS", 2)
    server = start_http_server(("127.0.0.1", 0), ControllerMetrics().registry)
    idle = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(2)]
    try:
        time.sleep(0.3)  # both accepted and holding their handler threads
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as third:
            third.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
            assert _closed_by_server(third, 5.0)
        for sock in idle:
            sock.close()
        time.sleep(0.3)  # their threads end and give the slots back
        with urllib.request.urlopen(server.url + "/healthz", timeout=5) as resp:
            assert resp.status == 200
    finally:
        for sock in idle:
            sock.close()
        server.shutdown()


def test_shutdown_releases_the_port() -> None:
    server = start_http_server(("127.0.0.1", 0), ControllerMetrics().registry)
    url = server.url
    with urllib.request.urlopen(url + "/healthz", timeout=5) as resp:
        assert resp.status == 200
    server.shutdown()
    server.shutdown()  # idempotent
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/healthz", timeout=2)
    # The same port can be bound again at once.
    again = ControllerHttpServer(("127.0.0.1", server.port), ControllerMetrics().registry)
    again.shutdown()


def test_channel_hooks_per_broker_series_and_removal() -> None:
    m = ControllerMetrics()
    served = Served(m)
    try:
        sizes = {1: 3, 2: 0}
        m.broker_added(1, lambda: sizes[1])
        m.broker_added(2, lambda: sizes[2])
        m.request_dequeued(1, 0.004)
        m.request_dequeued(2, 0.2)
        m.request_sent(1, "LeaderAndIsr", 0.01)
        m.request_sent(1, "UpdateMetadata", 0.02)
        s = served.scrape()
        assert s[P + "channel_queue_size{broker_id=1}"] == 3
        assert s[P + "channel_queue_size{broker_id=2}"] == 0
        assert s[P + "channel_total_queue_size"] == 3
        assert s[P + "channel_request_queue_time_seconds_count{broker_id=1}"] == 1
        assert s[P + "channel_request_queue_time_seconds_bucket{broker_id=1,le=0.005}"] == 1
        assert s[P + "channel_request_queue_time_seconds_sum{broker_id=2}"] == 0.2
        assert s[P + "channel_request_send_seconds_count{broker_id=1,request=LeaderAndIsr}"] == 1
        assert s[P + "channel_request_send_seconds_sum{broker_id=1,request=UpdateMetadata}"] == 0.02

        sizes[1] = 7  # read at scrape time
        assert served.scrape()[P + "channel_total_queue_size"] == 7

        m.broker_removed(1)  # every series of broker 1 goes, as Kafka removes its metrics
        m.broker_removed(9)  # never added: harmless
        s = served.scrape()
        assert not [k for k in s if "broker_id=1" in k]
        assert s[P + "channel_queue_size{broker_id=2}"] == 0
        assert s[P + "channel_total_queue_size"] == 0

        def broken() -> int:
            raise RuntimeError("sender gone")

        m.broker_added(3, broken)  # a failing source drops its series, not the scrape
        s = served.scrape()
        assert P + "channel_queue_size{broker_id=3}" not in s
        assert P + "channel_queue_size{broker_id=2}" in s
    finally:
        served.server.shutdown()


def test_zookeeper_observer_session_state_and_elections() -> None:
    state = ["CONNECTED"]
    m = ControllerMetrics(controller_id=7, session_state_source=lambda: state[0])
    served = Served(m)
    try:
        s = served.scrape()
        assert s[P + "controller_id"] == 7
        assert s[P + "zookeeper_session_state{state=connected}"] == 1
        assert s[P + "zookeeper_session_state{state=suspended}"] == 0
        assert s[P + "zookeeper_session_state{state=lost}"] == 0
        assert {k for k in s if k.startswith(P + "leader_elections_total")} == {
            P + f"leader_elections_total{{type={t}}}"
            for t in ("offline", "offline_unclean", "reassign", "preferred", "controlled_shutdown")
        }
        state[0] = "SUSPENDED"
        m.on_session_state(SessionState.SUSPENDED)
        m.on_session_state(SessionState.CONNECTED)
        m.zookeeper_request("get", 0.0003)
        m.zookeeper_request("multi", 0.002)
        m.zookeeper_batch("multi", 40)
        m.zookeeper_batch("get_many", 5000)
        m.inc_leader_elections("preferred", 3)
        m.inc_leader_elections("offline")
        s = served.scrape()
        assert s[P + "zookeeper_session_state{state=connected}"] == 0
        assert s[P + "zookeeper_session_state{state=suspended}"] == 1
        assert s[P + "zookeeper_disconnects_total"] == 1
        assert s[P + "zookeeper_request_seconds_count{operation=get}"] == 1
        assert s[P + "zookeeper_request_seconds_bucket{le=0.0005,operation=get}"] == 1
        assert s[P + "zookeeper_request_seconds_sum{operation=multi}"] == 0.002
        assert s[P + "zookeeper_batch_size_bucket{le=50.0,operation=multi}"] == 1
        assert s[P + "zookeeper_batch_size_bucket{le=2500.0,operation=get_many}"] == 0
        assert s[P + "zookeeper_batch_size_sum{operation=get_many}"] == 5000
        assert s[P + "leader_elections_total{type=preferred}"] == 3
        assert s[P + "leader_elections_total{type=offline}"] == 1

        def broken() -> str:
            raise RuntimeError("no client")

        m.set_session_state_source(broken)  # every state reads 0, the scrape still works
        s = served.scrape()
        assert sum(v for k, v in s.items() if k.startswith(P + "zookeeper_session_state")) == 0
    finally:
        served.server.shutdown()


def test_every_event_has_an_error_series_from_the_start() -> None:
    """So that Prometheus' increase() (the ZkControllerEventErrors alert) sees the first
    failure of any kind of event, not only the second."""
    from controller.core.events import event_names

    m = ControllerMetrics()
    names = event_names()
    assert {"BrokerChange", "TopicChange", "AlterPartitionReceived", "Startup"} <= set(names)
    for name in names:
        value = m.registry.get_sample_value(P + "event_errors_total", {"event": name})
        assert value == 0, name
