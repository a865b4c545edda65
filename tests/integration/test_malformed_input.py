"""Malformed input everywhere the controller reads: each case gives a clear error naming the
path or field, Kafka's handling of the bad input where Kafka has one, a controller that keeps
serving, and nothing else lost. ``docs/reliability.md`` lists every case with its outcome and
the test behind it (cases covered elsewhere are listed there with their own tests).

Most cases run on the in-memory harness (``tests.harness``: the real controller over
``MemoryZooKeeper``), one bad input at a time next to a healthy topic; the last tests put a mix
of bad znodes into a live cluster on a real ZooKeeper with reference brokers.

Every harness case ends with ``still_serving``: the controller is active, the healthy topic's
assignment and leadership are untouched, and a topic created afterwards gets its leader.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from controller.core.model import TopicPartition
from controller.zk import codecs, paths
from tests.harness import ControllerHarness

HEALTHY = TopicPartition("healthy", 0)
CONTROLLER_ID = 5


@pytest.fixture
def h() -> Iterator[ControllerHarness]:
    """Controller 5 active, brokers 1-3 live, topic ``healthy`` {0: [1, 2]} online."""
    harness = ControllerHarness(controller_id=CONTROLLER_ID)
    for b in (1, 2, 3):
        harness.register_broker(b)
    harness.create_topic("healthy", {0: [1, 2]}, in_context=False)
    harness.start()
    assert harness.controller.is_active
    yield harness
    harness.close()


def snapshot(h: ControllerHarness) -> tuple[Any, ...]:
    """What must not change: the healthy topic's znode and state, the live brokers."""
    state = h.zk_state(HEALTHY)
    return (h.read(paths.topic_path("healthy")), state, sorted(h.ctx.live_broker_ids()))


def still_serving(h: ControllerHarness, before: tuple[Any, ...] | None = None) -> None:
    h.drain()
    assert h.controller.is_active
    if before is not None:
        assert snapshot(h) == before
    name = f"after{len(h.ctx.all_topics)}"
    h.create_topic(name, {0: [3, 1]}, in_context=False)
    h.drain()
    state = h.zk_state(TopicPartition(name, 0))
    assert state is not None and state.leader_and_isr.leader == 3


def errors(logs: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    """Logged errors/warnings naming ``path``."""
    return [
        e
        for e in logs
        if e.get("log_level") in ("error", "warning") and path in str(e.get("path", ""))
    ]


def registration(broker_id: int, **changes: Any) -> bytes:
    """A valid v5 registration of ``broker_id`` with some fields changed (None: removed)."""
    doc = json.loads(
        codecs.encode_broker_registration(
            codecs.BrokerRegistration(
                broker_id,
                codecs.decode_broker(broker_id, _valid_registration(broker_id)).endpoints,
            )
        )
    )
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return json.dumps(doc).encode()


def _valid_registration(broker_id: int) -> bytes:
    port = 9900 + broker_id
    return json.dumps(
        {
            "version": 5,
            "host": "localhost",
            "port": port,
            "jmx_port": -1,
            "timestamp": "0",
            "endpoints": [f"PLAINTEXT://localhost:{port}", f"CONTROLLER://localhost:{port + 10000}"],
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "PLAINTEXT"},
            "features": {},
        }
    ).encode()


# -- /brokers/ids/N ------------------------------------------------------------------------

BAD_REGISTRATIONS = {
    "invalid-json": (b'{"version":5,', "invalid JSON"),
    "not-an-object": (b"[1, 2]", "expected a JSON object"),
    "empty": (b"", "no data"),
    "unknown-version": (registration(4, version=9), "'version'"),
    "missing-endpoints": (registration(4, endpoints=None), "'endpoints'"),
    "endpoint-not-a-string": (registration(4, endpoints=[42]), "'endpoints[0]'"),
    "port-out-of-range": (
        registration(4, endpoints=["PLAINTEXT://h:70000"]),
        "'endpoints[0]'",
    ),
    "timestamp-a-number": (registration(4, timestamp=5), "'timestamp'"),
    "jmx-port-a-string": (registration(4, jmx_port="x"), "'jmx_port'"),
    "rack-a-number": (registration(4, rack=7), "'rack'"),
    "unknown-protocol": (
        registration(4, listener_security_protocol_map={"PLAINTEXT": "CARRIER_PIGEON"}),
        "listener_security_protocol_map",
    ),
    "features-wrong-shape": (registration(4, features={"f": 3}), "'features.f'"),
    "oversized": (b'{"version":5,"x":"' + b"a" * (1024 * 1024) + b'"}', "MAX_ZNODE_BYTES"),
}


@pytest.mark.parametrize(
    ("data", "words"), BAD_REGISTRATIONS.values(), ids=list(BAD_REGISTRATIONS)
)
def test_a_new_broker_with_a_malformed_registration_is_left_out(
    h: ControllerHarness, data: bytes, words: str
) -> None:
    """Kafka fails the whole BrokerChange event on an undecodable registration (no broker
    change is processed at all); here only that broker is left out, named in the log."""
    before = snapshot(h)
    session = h.zk.open_session()
    with capture_logs() as logs:
        session.create(paths.broker_path(4), data, ephemeral=True)
        h.register_broker(6)  # a healthy broker joining at the same time
        h.drain()
    assert 4 not in h.ctx.live_broker_ids() and 6 in h.ctx.live_broker_ids()
    (logged,) = errors(logs, paths.broker_path(4))
    assert words in logged["error"]
    still_serving(h, (*before[:2], [1, 2, 3, 6]))


def test_a_repaired_registration_brings_the_broker_in(h: ControllerHarness) -> None:
    session = h.zk.open_session()
    session.create(paths.broker_path(4), b"{oops", ephemeral=True)
    h.drain()
    assert 4 not in h.ctx.live_broker_ids()
    session.set(paths.broker_path(4), _valid_registration(4))
    h.drain()
    assert 4 in h.ctx.live_broker_ids()
    still_serving(h)


@pytest.mark.parametrize("name", ["-1", "007", "+3", "abc", "4294967296", " 4"])
def test_a_registration_under_a_name_that_is_not_a_broker_id_is_ignored(
    h: ControllerHarness, name: str
) -> None:
    """Kafka parses child names with ``toInt``: "-1" becomes a broker -1 (listed as live in
    every UpdateMetadata), "abc" fails the whole event. Here both are logged and skipped."""
    before = snapshot(h)
    session = h.zk.open_session()
    with capture_logs() as logs:
        session.create(f"{paths.BROKERS_IDS}/{name}", _valid_registration(4), ephemeral=True)
        h.register_broker(6)
        h.drain()
    assert h.ctx.live_broker_ids() == {1, 2, 3, 6}
    assert errors(logs, f"{paths.BROKERS_IDS}/{name}")
    still_serving(h, (*before[:2], [1, 2, 3, 6]))


def test_a_live_broker_whose_registration_turns_malformed_stays_live(
    h: ControllerHarness,
) -> None:
    """A registration rewritten with bad data (same session, same epoch) is ignored: the
    broker keeps its last good registration and its partitions, even when another broker's
    change makes the controller re-read every registration."""
    before = snapshot(h)
    session = h.broker_sessions[1]
    with capture_logs() as logs:
        session.set(paths.broker_path(1), b'{"version":5,"endpoints":"nope"}')
        h.drain()  # BrokerModifications(1): logged, ignored
        h.register_broker(6)  # BrokerChange: re-reads every registration
        h.drain()
    assert errors(logs, paths.broker_path(1))
    assert h.ctx.live_broker_ids() == {1, 2, 3, 6}
    still_serving(h, (*before[:2], [1, 2, 3, 6]))


def test_a_registration_unreadable_at_failover_is_watched_for_its_repair() -> None:
    h = ControllerHarness(controller_id=CONTROLLER_ID)
    for b in (1, 2):
        h.register_broker(b)
    session = h.zk.open_session()
    session.ensure_path(paths.BROKERS_IDS)
    session.create(paths.broker_path(3), b'{"version":5}', ephemeral=True)
    with capture_logs() as logs:
        h.start()
    assert h.ctx.live_broker_ids() == {1, 2}
    (logged,) = errors(logs, paths.broker_path(3))
    assert "'endpoints'" in logged["error"] or "'jmx_port'" in logged["error"]
    session.set(paths.broker_path(3), _valid_registration(3))
    h.drain()
    assert h.ctx.live_broker_ids() == {1, 2, 3}
    still_serving(h)
