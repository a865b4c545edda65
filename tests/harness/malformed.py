"""Shared by the malformed-input tests (``test_malformed_input``, ``test_malformed_rpcs``).

Every harness case starts from ``healthy_cluster`` and ends with ``still_serving``: the
controller is active, the healthy topic's assignment and leadership are untouched, and a topic
created afterwards gets its leader.
"""

from __future__ import annotations

import json
from typing import Any

from controller.core.model import TopicPartition
from controller.zk import codecs, paths
from tests.harness import ControllerHarness

HEALTHY = TopicPartition("healthy", 0)
CONTROLLER_ID = 5


def healthy_cluster() -> ControllerHarness:
    """Controller 5 active, brokers 1-3 live, topic ``healthy`` {0: [1, 2]} online."""
    harness = ControllerHarness(controller_id=CONTROLLER_ID)
    for b in (1, 2, 3):
        harness.register_broker(b)
    harness.create_topic("healthy", {0: [1, 2]}, in_context=False)
    harness.start()
    assert harness.controller.is_active
    return harness


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
                codecs.decode_broker(broker_id, valid_registration(broker_id)).endpoints,
            )
        )
    )
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return json.dumps(doc).encode()


def valid_registration(broker_id: int) -> bytes:
    port = 9900 + broker_id
    return json.dumps(
        {
            "version": 5,
            "host": "localhost",
            "port": port,
            "jmx_port": -1,
            "timestamp": "0",
            "endpoints": [
                f"PLAINTEXT://localhost:{port}",
                f"CONTROLLER://localhost:{port + 10000}",
            ],
            "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "PLAINTEXT"},
            "features": {},
        }
    ).encode()


def still_serving_without(h: ControllerHarness, dead: set[int]) -> None:
    """``still_serving`` for a cluster that lost brokers: a new topic on broker 2 comes up."""
    h.drain()
    assert h.controller.is_active
    name = f"after{len(h.ctx.all_topics)}"
    h.create_topic(name, {0: [2]}, in_context=False)
    h.drain()
    state = h.zk_state(TopicPartition(name, 0))
    assert state is not None and state.leader_and_isr.leader == 2
    assert not dead & h.ctx.live_broker_ids()
