"""``/brokers/ids/N``: broker registrations, versions 1-5 (reference §1.4)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from controller.core.model import Broker, EndPoint
from controller.zk import paths
from controller.zk.codecs._json import (
    INT16_MAX,
    bad,
    dumps,
    fail,
    informational_decimal,
    int_field,
    load,
    typed_field,
)
from controller.zk.codecs.key_order import (
    java_hashmap_order,
    ordered,
    scala_mutable_order,
    scala_presized,
)

SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
# Kafka's endpoint grammar (SocketServerConfigs): LISTENER://host:port, IPv6 hosts in brackets.
_ENDPOINT = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]{1,10})")
_HOST = re.compile(r"[0-9a-zA-Z\-%._:]*")  # as _ENDPOINT


def check_endpoint_host(host: str) -> str:
    """``host`` if an endpoint naming it parses back (the controller ignores a registration
    that does not); else ValueError saying why."""
    if not _HOST.fullmatch(host):
        raise ValueError(
            f"{host!r} is not a valid endpoint host (letters, digits and '-', '.', '_', ':', "
            "'%' only: a host name, an IPv4 or IPv6 address)"
        )
    return host


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """The full content of a broker's registration znode."""

    broker_id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    timestamp_ms: int = 0
    features: dict[str, tuple[int, int]] = field(default_factory=dict, hash=False)
    version: int = 5

    def to_broker(self) -> Broker:
        return Broker(self.broker_id, self.endpoints, self.rack, dict(self.features))


def encode_broker_registration(reg: BrokerRegistration) -> bytes:
    """Kafka's BrokerIdZNode.encode: rack from v3, protocol map from v4, features from v5."""
    if not 1 <= reg.version <= 5:
        raise ValueError(f"unsupported broker registration version {reg.version}")
    for e in reg.endpoints:
        check_endpoint_host(e.host)  # else no controller would take the registration
    # Old clients read the top-level host/port: the first PLAINTEXT endpoint, if any.
    plain = next((e for e in reg.endpoints if e.security_protocol == "PLAINTEXT"), None)
    doc: dict[str, Any] = {
        "version": reg.version,
        "host": plain.host if plain else None,
        "port": plain.port if plain else -1,
        "jmx_port": reg.jmx_port,
        "timestamp": str(reg.timestamp_ms),
        "endpoints": [f"{e.listener}://{e.address}" for e in reg.endpoints],
    }
    if reg.version >= 4:
        doc["listener_security_protocol_map"] = {
            e.listener: e.security_protocol for e in reg.endpoints
        }
    if reg.rack is not None and reg.version >= 3:
        doc["rack"] = reg.rack
    if reg.version >= 5:
        # Features.toMap: a java.util.HashMap of {min_version, max_version} maps.
        doc["features"] = {
            name: {"min_version": reg.features[name][0], "max_version": reg.features[name][1]}
            for name in java_hashmap_order(reg.features)
        }
    # Kafka's BrokerIdZNode.encode: a mutable.Map of six keys, then rack, the protocol map and
    # the features added in this order; the protocol map keeps the endpoints' order.
    return dumps(ordered(doc, scala_mutable_order(_broker_keys(doc), scala_presized(6))))


_BROKER_KEYS = (
    "version",
    "host",
    "port",
    "endpoints",
    "jmx_port",
    "timestamp",
    "rack",
    "listener_security_protocol_map",
    "features",
)


def _broker_keys(doc: dict[str, Any]) -> tuple[str, ...]:
    return tuple(key for key in _BROKER_KEYS if key in doc)


def _endpoints(obj: dict[str, Any], version: int, path: str) -> tuple[EndPoint, ...]:
    if version == 1 or (version == 2 and "endpoints" not in obj):
        host = typed_field(obj, "host", path, str)
        return (EndPoint("PLAINTEXT", host, int_field(obj, "port", path, 0, 65535), "PLAINTEXT"),)
    raw_map = obj.get("listener_security_protocol_map")
    protocols: dict[str, str] | None = None
    if raw_map is not None:
        if type(raw_map) is not dict:
            bad(path, "listener_security_protocol_map", "a JSON object", raw_map)
        protocols = {}
        for name, proto in raw_map.items():
            if type(proto) is not str or proto.upper() not in SECURITY_PROTOCOLS:
                bad(path, f"listener_security_protocol_map.{name}", "a security protocol", proto)
            protocols[name.upper()] = proto.upper()
    out: list[EndPoint] = []
    for i, conn in enumerate(typed_field(obj, "endpoints", path, list)):
        where = f"endpoints[{i}]"
        m = _ENDPOINT.fullmatch(conn) if type(conn) is str else None
        if m is None:
            bad(path, where, "a string LISTENER://host:port", conn)
        listener, host, port = m.group(1).upper(), m.group(2), int(m.group(3))
        if not listener or not 0 <= port <= 65535:
            bad(path, where, "a listener name and a port in [0, 65535]", conn)
        # Without a map, the listener name is the protocol name (pre-v4 registrations).
        proto = protocols.get(listener) if protocols is not None else listener
        if proto not in SECURITY_PROTOCOLS:
            fail(path, where, f"no security protocol known for listener {listener!r}")
        if any(e.listener == listener for e in out):
            fail(path, where, f"duplicate listener {listener!r}")
        out.append(EndPoint(listener, host, port, proto))
    return tuple(out)


def _supported_features(obj: dict[str, Any], path: str) -> dict[str, tuple[int, int]]:
    raw = obj.get("features")
    if raw is None:
        return {}
    if type(raw) is not dict:
        bad(path, "features", "a JSON object", raw)
    out: dict[str, tuple[int, int]] = {}
    for name, rng in raw.items():
        where = f"features.{name}"
        if type(rng) is not dict:
            bad(path, where, 'an object {"min_version":..,"max_version":..}', rng)
        lo = int_field(rng, "min_version", path, 0, INT16_MAX, f"{where}.")
        hi = int_field(rng, "max_version", path, lo, INT16_MAX, f"{where}.")
        out[name] = (lo, hi)
    return out


def decode_broker_registration(
    broker_id: int, data: bytes | None, path: str | None = None
) -> BrokerRegistration:
    """Versions 1-5. v1 (and a v2 without ``endpoints``) yields one PLAINTEXT endpoint.

    As Kafka's BrokerIdZNode.decode: a later version is read as the newest format (Kafka's
    BrokerEndPointTest.testFromJsonFutureVersion parses a v100), and ``timestamp``, which
    Kafka never reads, refuses nothing (0 when missing or not a decimal string).
    """
    path = path or paths.broker_path(broker_id)
    obj = load(data, path)
    version = int_field(obj, "version", path, 1)  # Kafka refuses only a version below 1
    jmx_port = int_field(obj, "jmx_port", path)
    timestamp = informational_decimal(obj, "timestamp")
    endpoints = _endpoints(obj, version, path)
    rack = obj.get("rack")
    if rack is not None and type(rack) is not str:
        bad(path, "rack", "a string or null", rack)
    features = _supported_features(obj, path)
    return BrokerRegistration(broker_id, endpoints, rack, jmx_port, timestamp, features, version)


def decode_broker(broker_id: int, data: bytes | None, path: str | None = None) -> Broker:
    return decode_broker_registration(broker_id, data, path).to_broker()
