"""The controller endpoint registration (``/zk-controller/controllers/<id>``): its JSON, and
what a client concludes from the listener's security fields before it dials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.admin.controller_client import tls_mismatch
from controller.security.testing import CertificateAuthority
from controller.security.tls import PLAINTEXT, ChannelOpener, TlsSettings
from controller.zk.endpoints import (
    ControllerEndpoint,
    decode_controller_endpoint,
    encode_controller_endpoint,
)
from controller.zk.errors import MalformedZnodeError

ADDRESS = "10.0.0.5:9095"


def endpoint(protocol: str | None, client_auth: str | None = None) -> ControllerEndpoint:
    return ControllerEndpoint(3, ADDRESS, "10.0.0.5:9309", protocol, client_auth)


def test_the_registration_round_trips_with_its_security_fields() -> None:
    registered = endpoint("SSL", "required")
    data = encode_controller_endpoint(registered)
    assert data == (
        b'{"version":1,"controller_id":3,"grpc":"10.0.0.5:9095","metrics":"10.0.0.5:9309",'
        b'"grpc_security_protocol":"SSL","grpc_client_auth":"required"}'
    )
    assert decode_controller_endpoint(3, data) == registered
    plain = endpoint("PLAINTEXT")
    assert decode_controller_endpoint(3, encode_controller_endpoint(plain)) == plain
    assert b"grpc_client_auth" not in encode_controller_endpoint(plain)


@pytest.mark.parametrize(
    "extra",
    [
        {},  # a controller older than the fields
        {"grpc_security_protocol": "SASL_SSL", "grpc_client_auth": "requested"},  # a later one
        {"grpc_security_protocol": 1, "grpc_client_auth": None},
    ],
)
def test_a_registration_without_known_security_fields_leaves_them_unknown(
    extra: dict[str, object],
) -> None:
    obj = {"version": 1, "controller_id": 3, "grpc": ADDRESS, "metrics": "m:1", **extra}
    decoded = decode_controller_endpoint(3, json.dumps(obj).encode())
    assert (decoded.grpc, decoded.grpc_security_protocol, decoded.grpc_client_auth) == (
        ADDRESS, None, None,
    )  # fmt: skip


def test_a_malformed_registration_is_still_refused() -> None:
    with pytest.raises(MalformedZnodeError, match="grpc and metrics must be strings"):
        decode_controller_endpoint(3, b'{"version":1,"grpc":1,"grpc_security_protocol":"SSL"}')


@pytest.fixture(scope="module")
def openers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ChannelOpener]:
    directory: Path = tmp_path_factory.mktemp("pki")
    ca = CertificateAuthority()
    ca_file = ca.write(directory / "ca.crt")
    cert, key = ca.issue("admin").write(directory / "admin")
    return {
        "plaintext": PLAINTEXT,
        "tls": TlsSettings(ca_file=ca_file).opener(),
        "mutual": TlsSettings(cert, key, ca_file).opener(),
    }


GIVE_ALL = "give it --tls-ca-file, --tls-cert-file and --tls-key-file"
PLAIN_CLIENT = f"controller 3 at {ADDRESS} serves gRPC over TLS, and this client is plaintext: "
TLS_CLIENT = (
    f"controller 3 at {ADDRESS} serves plaintext gRPC, and this client uses TLS: "
    "drop its --tls-* options"
)
NO_CERT = (
    f"controller 3 at {ADDRESS} requires a client certificate (mutual TLS), and this client "
    "has none: give it --tls-cert-file and --tls-key-file"
)


@pytest.mark.parametrize(
    ("protocol", "client_auth", "client", "problem"),
    [
        # Registrations that do not say: the client finds out by trying.
        (None, None, "plaintext", None),
        (None, "required", "plaintext", None),  # the protocol unknown: client auth says nothing
        (None, "required", "tls", None),
        (None, None, "tls", None),
        (None, None, "mutual", None),
        ("PLAINTEXT", None, "plaintext", None),
        ("PLAINTEXT", None, "tls", TLS_CLIENT),
        ("PLAINTEXT", None, "mutual", TLS_CLIENT),
        ("SSL", "none", "plaintext", PLAIN_CLIENT + "give it --tls-ca-file"),
        ("SSL", "none", "tls", None),
        ("SSL", "none", "mutual", None),  # a certificate nobody asks for does no harm
        ("SSL", "required", "plaintext", PLAIN_CLIENT + GIVE_ALL),
        ("SSL", "required", "tls", NO_CERT),
        ("SSL", "required", "mutual", None),
        ("SSL", None, "plaintext", PLAIN_CLIENT + "give it --tls-ca-file"),
        ("SSL", None, "tls", None),
    ],
)
def test_tls_mismatch(
    openers: dict[str, ChannelOpener],
    protocol: str | None,
    client_auth: str | None,
    client: str,
    problem: str | None,
) -> None:
    assert tls_mismatch(endpoint(protocol, client_auth), openers[client]) == problem
