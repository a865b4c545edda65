"""Security flags shared by the reference broker and the admin commands.

Each flag falls back to the controller's environment variable of the same setting, so one
environment (or one Kubernetes secret) serves every process of a cluster:

=============================================  ==========================================
flag                                           environment
=============================================  ==========================================
``--zookeeper-auth-scheme none|digest|sasl``   ``ZKC_ZOOKEEPER_AUTH_SCHEME``
``--zookeeper-auth-credentials-file FILE``     ``ZKC_ZOOKEEPER_AUTH_CREDENTIALS_FILE``
(no flag: secrets stay off command lines)      ``ZKC_ZOOKEEPER_AUTH_CREDENTIALS_VALUE``
``--zookeeper-set-acl true|false``             ``ZKC_ZOOKEEPER_SET_ACL`` (admin tools: true
                                               when they authenticate; brokers: false)
``--tls-cert-file FILE``                       ``ZKC_GRPC_TLS_CERT_FILE``
``--tls-key-file FILE``                        ``ZKC_GRPC_TLS_KEY_FILE``
``--tls-ca-file FILE``                         ``ZKC_GRPC_TLS_CA_FILE``
``--tls-client-auth none|required`` (servers)  ``ZKC_GRPC_TLS_CLIENT_AUTH``
``--tls-server-name NAME`` (clients)           (none)
``--controller-allowed-principals NAMES``      ``ZKC_CONTROLLER_ALLOWED_PRINCIPALS``
(broker: who may send LeaderAndIsr & co.)      (read by brokers only)
``--broker-allowed-principals NAMES``          ``ZKC_BROKER_ALLOWED_PRINCIPALS``
(broker: who may Fetch)
=============================================  ==========================================

Clients use TLS when any ``--tls-*`` file is given (a CA file alone: server-authenticated TLS
with no client certificate).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from typing import Any

from controller.security.acls import ZkSecurity, zk_security_from_env
from controller.security.authz import ENV_CONTROLLER_ALLOWED_PRINCIPALS, parse_principals
from controller.security.tls import (
    PLAINTEXT,
    ChannelOpener,
    TlsConfigError,
    TlsSettings,
    as_path,
)

ENV_CERT = "ZKC_GRPC_TLS_CERT_FILE"
ENV_KEY = "ZKC_GRPC_TLS_KEY_FILE"
ENV_CA = "ZKC_GRPC_TLS_CA_FILE"
ENV_CLIENT_AUTH = "ZKC_GRPC_TLS_CLIENT_AUTH"
# The controller's setting naming the brokers' principals (who may call ControllerService);
# on a broker, the callers allowed to Fetch: the same certificates.
ENV_BROKER_ALLOWED_PRINCIPALS = "ZKC_BROKER_ALLOWED_PRINCIPALS"


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def add_zookeeper_security_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("ZooKeeper security (default: the ZKC_ZOOKEEPER_* env)")
    group.add_argument(
        "--zookeeper-auth-scheme", choices=("none", "digest", "sasl"), default=None,
        help="authenticate the ZooKeeper session: digest or SASL DIGEST-MD5",
    )  # fmt: skip
    group.add_argument(
        "--zookeeper-auth-credentials-file", metavar="FILE", default=None,
        help="file whose first line is user:password",
    )  # fmt: skip
    group.add_argument(
        "--zookeeper-set-acl", type=_bool, metavar="true|false", default=None,
        help="create znodes with Kafka's secure ACLs (zookeeper.set.acl; admin tools default "
        "to true when they authenticate, as Kafka's do)",
    )  # fmt: skip


def add_tls_arguments(parser: argparse.ArgumentParser, *, server: bool = False) -> None:
    group = parser.add_argument_group("gRPC TLS (default: the ZKC_GRPC_TLS_* env)")
    group.add_argument("--tls-cert-file", metavar="FILE", default=None,
                       help="PEM certificate chain (presented to peers)")  # fmt: skip
    group.add_argument("--tls-key-file", metavar="FILE", default=None,
                       help="unencrypted PEM key of --tls-cert-file")  # fmt: skip
    group.add_argument("--tls-ca-file", metavar="FILE", default=None,
                       help="PEM CA bundle peers' certificates must chain to")  # fmt: skip
    if server:
        group.add_argument(
            "--tls-client-auth", choices=("none", "required"), default=None,
            help="require client certificates signed by --tls-ca-file (mutual TLS)",
        )  # fmt: skip
    else:
        group.add_argument(
            "--tls-server-name", metavar="NAME", default=None,
            help="expect this name in the server's certificate instead of the dialled host",
        )  # fmt: skip


def add_broker_authorization_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "authorization (mutual TLS; default: the ZKC_*_ALLOWED_PRINCIPALS env)"
    )
    group.add_argument(
        "--controller-allowed-principals", metavar="NAMES", default=None,
        help="comma-separated certificate CNs/SANs allowed to send LeaderAndIsr, "
        "UpdateMetadata and StopReplica (the controllers; * = any certificate of the CA)",
    )  # fmt: skip
    group.add_argument(
        "--broker-allowed-principals", metavar="NAMES", default=None,
        help="comma-separated certificate CNs/SANs allowed to Fetch (the other brokers)",
    )  # fmt: skip


def broker_principals_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> tuple[frozenset[str] | None, frozenset[str] | None]:
    """(controller principals, broker principals) from flags, else the environment."""
    env = os.environ if environ is None else environ

    def pick(attr: str, var: str) -> frozenset[str] | None:
        value = getattr(args, attr, None)
        return parse_principals(value if value is not None else env.get(var))

    return (
        pick("controller_allowed_principals", ENV_CONTROLLER_ALLOWED_PRINCIPALS),
        pick("broker_allowed_principals", ENV_BROKER_ALLOWED_PRINCIPALS),
    )


def zk_security_from_args(
    args: argparse.Namespace,
    environ: Mapping[str, str] | None = None,
    *,
    admin_tool: bool = False,
) -> ZkSecurity:
    """Raises ``CredentialsError`` (a ValueError) with a message fit for the user.

    ``admin_tool``: an authenticated tool writes secure ACLs unless told not to (Kafka's
    tools); the reference broker, like Kafka's brokers, only with ``zookeeper.set.acl``.
    """
    return zk_security_from_env(
        environ,
        scheme=getattr(args, "zookeeper_auth_scheme", None),
        credentials_file=getattr(args, "zookeeper_auth_credentials_file", None),
        set_acl=getattr(args, "zookeeper_set_acl", None),
        secure_acls_when_authenticated=admin_tool,
    )


def tls_settings_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> TlsSettings | None:
    """The TLS files from flags, else the environment; None when none is set (plaintext)."""
    env = os.environ if environ is None else environ

    def pick(attr: str, var: str) -> Any:
        value = getattr(args, attr, None)
        return value if value is not None else env.get(var) or None

    cert, key, ca = (
        pick("tls_cert_file", ENV_CERT),
        pick("tls_key_file", ENV_KEY),
        pick("tls_ca_file", ENV_CA),
    )
    client_auth = (pick("tls_client_auth", ENV_CLIENT_AUTH) or "none").strip().lower()
    if client_auth not in ("none", "required"):
        # As the controller's own setting: a typo must not quietly serve without client auth.
        raise TlsConfigError(
            f"{ENV_CLIENT_AUTH} (or --tls-client-auth): expected none or required, "
            f"got {client_auth!r}"
        )
    if cert is None and key is None and ca is None:
        return None
    return TlsSettings(
        cert_file=as_path(cert),
        key_file=as_path(key),
        ca_file=as_path(ca),
        client_auth_required=client_auth == "required",
        server_name_override=getattr(args, "tls_server_name", None),
    )


def channel_opener_from_args(
    args: argparse.Namespace, environ: Mapping[str, str] | None = None
) -> ChannelOpener:
    """Plaintext without TLS settings; raises ``TlsConfigError`` for unusable files."""
    settings = tls_settings_from_args(args, environ)
    return PLAINTEXT if settings is None else settings.opener()
