"""Kafka's znode examples from the reference (§1.4), verbatim, shared by the codec tests."""

from __future__ import annotations

import json

from controller.core.model import EndPoint
from controller.zk import codecs, paths

# The reference's examples, verbatim (§1.4).
REF_CONTROLLER_V1 = b'{"version":1,"brokerid":3,"timestamp":"1700000000000"}'
REF_CONTROLLER_V2 = (
    b'{"version":2,"brokerid":3,"timestamp":"1700000000000","kraftControllerEpoch":-1}'
)
REF_BROKER = b"""{"version":5,"host":"h1","port":9092,"jmx_port":-1,"timestamp":"1700000000000",
 "endpoints":["PLAINTEXT://h1:9092","CONTROLLER://h1:9093"],
 "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","CONTROLLER":"PLAINTEXT"},
 "rack":"rack-a",
 "features":{"some.feature":{"min_version":1,"max_version":3}}}"""
REF_TOPIC = b"""{"version":3,
 "topic_id":"pL9sH1X2QfGkT4a1b2c3dA",
 "partitions":{"0":[1,2,3],"1":[2,3,1]},
 "adding_replicas":{"0":[4]},
 "removing_replicas":{"0":[1]}}"""
REF_STATE = b'{"controller_epoch":7,"leader":1,"version":1,"leader_epoch":4,"isr":[1,3,2]}'
REF_REASSIGN = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6]}]}'
REF_PREFERRED = b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
REF_ISR_CHANGE = (
    b'{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}'
)
REF_LOG_DIR = b'{"version":1,"broker":3,"event":1}'
REF_TOPIC_CONFIG = b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}'
REF_FEATURE = b'{"version":2,"status":1,"features":{"feature.x":{"max_version_level":3}}}'
REF_PID_BLOCK = b'{"version":1,"broker":2,"block_start":"5000","block_end":"5999"}'

TOPIC_ID = "pL9sH1X2QfGkT4a1b2c3dA"
STATE_PATH = paths.partition_state_path("t", 0)


def assert_same_json(encoded: bytes, expected: bytes) -> None:
    """Same document, and written with Jackson's compact separators."""
    assert json.loads(encoded) == json.loads(expected)
    assert encoded == json.dumps(json.loads(encoded), separators=(",", ":")).encode()


def ref_broker_registration() -> codecs.BrokerRegistration:
    return codecs.BrokerRegistration(
        broker_id=1,
        endpoints=(
            EndPoint("PLAINTEXT", "h1", 9092, "PLAINTEXT"),
            EndPoint("CONTROLLER", "h1", 9093, "PLAINTEXT"),
        ),
        rack="rack-a",
        jmx_port=-1,
        timestamp_ms=1700000000000,
        features={"some.feature": (1, 3)},
    )


def state_json(**overrides: object) -> bytes:
    doc: dict[str, object] = {
        "controller_epoch": 7,
        "leader": 1,
        "version": 1,
        "leader_epoch": 4,
        "isr": [1, 3, 2],
    }
    doc.update(overrides)
    return json.dumps({k: v for k, v in doc.items() if v is not ...}).encode()


def broker_json(**overrides: object) -> bytes:
    doc = json.loads(REF_BROKER)
    doc.update(overrides)
    return json.dumps({k: v for k, v in doc.items() if v is not ...}).encode()
