"""Controller endpoint registrations: ``/zk-controller/controllers/<id>`` (our own znode).

Each controller node writes an ephemeral JSON with its gRPC and metrics addresses, so that
admin tools can turn the id in Kafka's ``/controller`` into an address. The format is
versioned like Kafka's znodes::

    {"version":1,"controller_id":3,"grpc":"10.0.0.5:9095","metrics":"10.0.0.5:9309"}
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from controller.zk import paths
from controller.zk.errors import MalformedZnodeError


@dataclass(frozen=True, slots=True)
class ControllerEndpoint:
    controller_id: int
    grpc: str
    metrics: str


def encode_controller_endpoint(endpoint: ControllerEndpoint) -> bytes:
    return json.dumps(
        {
            "version": 1,
            "controller_id": endpoint.controller_id,
            "grpc": endpoint.grpc,
            "metrics": endpoint.metrics,
        },
        separators=(",", ":"),
    ).encode()


def decode_controller_endpoint(controller_id: int, data: bytes | None) -> ControllerEndpoint:
    path = paths.controller_endpoint_path(controller_id)
    try:
        obj = json.loads(data or b"")
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedZnodeError(path, f"invalid JSON: {exc}") from exc
    if not isinstance(obj, dict) or obj.get("version") != 1:
        raise MalformedZnodeError(path, "expected a JSON object with version 1")
    grpc_address, metrics = obj.get("grpc"), obj.get("metrics")
    if not isinstance(grpc_address, str) or not isinstance(metrics, str):
        raise MalformedZnodeError(path, "fields grpc and metrics must be strings")
    return ControllerEndpoint(controller_id, grpc_address, metrics)
