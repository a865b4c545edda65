"""Controller endpoint registrations: ``/zk-controller/controllers/<id>`` (our own znode).

Each controller node writes an ephemeral JSON with its gRPC and metrics addresses, so that
admin tools can turn the id in Kafka's ``/controller`` into an address. The format is
versioned like Kafka's znodes::

    {"version":1,"controller_id":3,"grpc":"10.0.0.5:9095","metrics":"10.0.0.5:9309",
     "grpc_security_protocol":"SSL","grpc_client_auth":"required"}

The two security fields say how the gRPC listener must be spoken to, so that a client whose
TLS settings cannot work is told at once instead of retrying until its deadline (a TLS
listener closes a plaintext connection without a word). They are optional: a registration
without them (an older controller), or with a value this version does not know, leaves the
client to find out by trying.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from controller.zk import paths
from controller.zk.errors import MalformedZnodeError

#: ``grpc_security_protocol``: Kafka's names for a plaintext and a TLS listener.
PLAINTEXT = "PLAINTEXT"
SSL = "SSL"
#: ``grpc_client_auth``: the values of ``grpc.tls.client.auth``.
CLIENT_AUTH_NONE = "none"
CLIENT_AUTH_REQUIRED = "required"


@dataclass(frozen=True, slots=True)
class ControllerEndpoint:
    controller_id: int
    grpc: str
    metrics: str
    #: PLAINTEXT or SSL; None when the registration does not say (or says something unknown).
    grpc_security_protocol: str | None = None
    #: none or required (TLS listeners only); None when unknown.
    grpc_client_auth: str | None = None


def encode_controller_endpoint(endpoint: ControllerEndpoint) -> bytes:
    obj: dict[str, object] = {
        "version": 1,
        "controller_id": endpoint.controller_id,
        "grpc": endpoint.grpc,
        "metrics": endpoint.metrics,
    }
    if endpoint.grpc_security_protocol is not None:
        obj["grpc_security_protocol"] = endpoint.grpc_security_protocol
    if endpoint.grpc_client_auth is not None:
        obj["grpc_client_auth"] = endpoint.grpc_client_auth
    return json.dumps(obj, separators=(",", ":")).encode()


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
    # Unknown values are not an error: a later version may add a protocol.
    protocol = obj.get("grpc_security_protocol")
    client_auth = obj.get("grpc_client_auth")
    return ControllerEndpoint(
        controller_id,
        grpc_address,
        metrics,
        protocol if protocol in (PLAINTEXT, SSL) else None,
        client_auth if client_auth in (CLIENT_AUTH_NONE, CLIENT_AUTH_REQUIRED) else None,
    )
