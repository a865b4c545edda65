"""ZooKeeper authentication and the ACLs of the znodes we create (Kafka's ``zookeeper.set.acl``).

The ACL policy is Kafka's ``ZkData.defaultAcls``: when secure, a znode gets ``CREATOR_ALL``
(the creating session's authenticated identities may do anything) plus world ``READ``, except
under Kafka's sensitive roots (``/config/users``, ``/config/brokers``, ``/delegation_token/
tokens``), which stay creator-only, and the old consumer path ``/consumers``, which stays open
because consumers of any identity write under it. Paths are relative to the chroot, as in
Kafka; the chroot node itself (created by the first controller) gets the non-sensitive ACL.

Authentication is one identity per process, as Kafka's brokers share one ZooKeeper principal:

* ``digest``: the session sends ``addauth digest user:password``; the creator identity is then
  ``digest:user:base64(sha1(user:password))``. ZooKeeper accepts any digest credentials, so a
  wrong password does not fail the session: it fails every write to a znode the right identity
  created, with NOAUTH, which the controller logs and retries (nothing is written).
* ``sasl``: SASL DIGEST-MD5 against the server's JAAS ``Server`` section (kazoo + pure-sasl);
  the creator identity is ``sasl:user``. A wrong password fails the session (AUTH_FAILED).

The controller, the brokers and the admin tools that write (topic creation, deletion and
reassignment requests) must therefore use the same identity: another identity can read the
znodes but not change or delete them, nor create children under them.

Credentials come from a file (``user:password`` on its first line) or, for container secrets
passed in the environment, from ``ZKC_ZOOKEEPER_AUTH_CREDENTIALS_VALUE``. They are never logged:
``ZkSecurity`` shows the user only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.security import ACL, CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

# Kafka's ZkData.SensitiveRootPaths (a string prefix test, as Kafka's ``startsWith``).
SENSITIVE_ROOT_PATHS: tuple[str, ...] = (
    "/config/users",
    "/config/brokers",
    "/delegation_token/tokens",
)
# Kafka's ConsumerPathZNode: kept world-writable even when secure.
CONSUMERS_PATH = "/consumers"

SCHEMES = ("none", "digest", "sasl")
SASL_MECHANISM = "DIGEST-MD5"

AclProvider = Callable[[str], list[ACL]]


def sensitive_path(path: str) -> bool:
    return any(path.startswith(root) for root in SENSITIVE_ROOT_PATHS)


def default_acls(path: str, secure: bool) -> list[ACL]:
    """Kafka's ``ZkData.defaultAcls(isSecure, path)``."""
    if not secure or path == CONSUMERS_PATH:
        return list(OPEN_ACL_UNSAFE)
    acls = list(CREATOR_ALL_ACL)
    if not sensitive_path(path):
        acls += READ_ACL_UNSAFE
    return acls


def secure_acl_provider(path: str) -> list[ACL]:
    return default_acls(path, secure=True)


class CredentialsError(ValueError):
    """Credentials missing, unreadable or malformed (the message never contains the secret)."""


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text.strip() else ""


def credentials_problem(text: str) -> str | None:
    """Why ``text`` is not ``user:password`` (first line), or None; never quotes the secret."""
    line = _first_line(text)
    user, sep, password = line.partition(":")
    if not sep or not user or not password:
        return "expected user:password on the first line"
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        # Bytes that were not UTF-8 in the environment (decoded as surrogates): kazoo's
        # connection thread would die encoding them at authentication.
        return "not UTF-8 text"
    return None


def parse_credentials(text: str, source: str) -> tuple[str, str]:
    """``user:password`` (first line; surrounding whitespace ignored) -> (user, password)."""
    problem = credentials_problem(text)
    if problem is not None:
        raise CredentialsError(f"{source}: {problem}")
    user, _, password = _first_line(text).partition(":")
    return user, password


def read_credentials_file(path: str | os.PathLike[str]) -> tuple[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CredentialsError(f"cannot read {os.fspath(path)}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CredentialsError(f"{os.fspath(path)}: not UTF-8 (byte {exc.start})") from None
    return parse_credentials(text, os.fspath(path))


def _sasl_available() -> bool:
    from kazoo.protocol import connection

    return bool(getattr(connection, "PURESASL_AVAILABLE", True))


@dataclass(frozen=True, slots=True)
class ZkSecurity:
    """How one process authenticates to ZooKeeper and which ACLs its creates carry."""

    scheme: str = "none"
    user: str | None = None
    password: str | None = field(default=None, repr=False)  # never in reprs or logs
    set_acl: bool = False

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise CredentialsError(f"unknown ZooKeeper auth scheme {self.scheme!r}")
        if self.scheme != "none" and not (self.user and self.password):
            raise CredentialsError(f"ZooKeeper auth scheme {self.scheme} needs user:password")
        if self.set_acl and self.scheme == "none":
            # Kafka refuses zookeeper.set.acl=true without a ZooKeeper login, too: CREATOR_ALL
            # with no authenticated identity is an invalid ACL (ZooKeeper answers INVALIDACL).
            raise CredentialsError("zookeeper.set.acl=true needs ZooKeeper authentication")
        if self.scheme == "sasl" and not _sasl_available():
            # kazoo's connection thread would die at the first connect, and the start fail
            # later as a lost session, naming nothing.
            raise CredentialsError(
                "zookeeper.auth.scheme=sasl needs the pure-sasl package "
                "(pip install 'zk-controller[sasl]')"
            )

    @property
    def authenticated(self) -> bool:
        return self.scheme != "none"

    @property
    def identity(self) -> str | None:
        """The ACL id ZooKeeper gives this process (``digest:user:hash`` or ``sasl:user``)."""
        if self.scheme == "digest":
            assert self.user is not None and self.password is not None
            from kazoo.security import make_digest_acl_credential

            return f"digest:{make_digest_acl_credential(self.user, self.password)}"
        if self.scheme == "sasl":
            return f"sasl:{self.user}"
        return None

    def port_options(self) -> dict[str, Any]:
        """Keyword arguments for ``KazooPort`` (empty in the default, unauthenticated mode)."""
        options: dict[str, Any] = {}
        if self.scheme == "digest":
            options["auth_data"] = [("digest", f"{self.user}:{self.password}")]
        elif self.scheme == "sasl":
            options["sasl_options"] = {
                "mechanism": SASL_MECHANISM,
                "username": self.user,
                "password": self.password,
            }
        if self.set_acl:
            options["acl_provider"] = secure_acl_provider
        return options

    def describe(self) -> dict[str, object]:
        """For logs: the scheme, user and ACL mode, never the password."""
        return {"zookeeper_auth": self.scheme, "zookeeper_user": self.user, "set_acl": self.set_acl}


NO_ZK_SECURITY = ZkSecurity()


def zk_security(
    *,
    scheme: str = "none",
    credentials: str | None = None,
    credentials_file: str | os.PathLike[str] | None = None,
    set_acl: bool = False,
) -> ZkSecurity:
    """Build a ``ZkSecurity`` from settings; raises ``CredentialsError`` naming the problem."""
    if scheme == "none":
        if credentials or credentials_file:
            raise CredentialsError(
                "ZooKeeper credentials are set but zookeeper.auth.scheme is none"
            )
        return ZkSecurity(set_acl=set_acl)
    if credentials and credentials_file:
        raise CredentialsError(
            "set either zookeeper.auth.credentials.value or zookeeper.auth.credentials.file, "
            "not both"
        )
    if credentials_file:
        user, password = read_credentials_file(credentials_file)
    elif credentials:
        user, password = parse_credentials(credentials, "zookeeper.auth.credentials.value")
    else:
        raise CredentialsError(
            f"zookeeper.auth.scheme={scheme} needs zookeeper.auth.credentials.file "
            "(or zookeeper.auth.credentials.value)"
        )
    return ZkSecurity(scheme=scheme, user=user, password=password, set_acl=set_acl)


def zk_security_from_config(config: Any) -> ZkSecurity:
    """From a ``ControllerConfig`` (duck-typed: its ``zookeeper_*`` security attributes)."""
    return zk_security(
        scheme=getattr(config, "zookeeper_auth_scheme", "none"),
        credentials=getattr(config, "zookeeper_auth_credentials_value", None),
        credentials_file=getattr(config, "zookeeper_auth_credentials_file", None),
        set_acl=getattr(config, "zookeeper_set_acl", False),
    )


# Environment variables the admin tools and the reference broker read when no flag is given
# (the controller's setting names, so one environment serves every process).
ENV_SCHEME = "ZKC_ZOOKEEPER_AUTH_SCHEME"
ENV_CREDENTIALS = "ZKC_ZOOKEEPER_AUTH_CREDENTIALS_VALUE"
ENV_CREDENTIALS_FILE = "ZKC_ZOOKEEPER_AUTH_CREDENTIALS_FILE"
ENV_SET_ACL = "ZKC_ZOOKEEPER_SET_ACL"
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off", "")


def zk_security_from_env(
    environ: Mapping[str, str] | None = None,
    *,
    scheme: str | None = None,
    credentials_file: str | None = None,
    set_acl: bool | None = None,
    secure_acls_when_authenticated: bool = False,
) -> ZkSecurity:
    """For tools: explicit values (flags) first, then the ``ZKC_ZOOKEEPER_*`` environment.

    ``secure_acls_when_authenticated`` is the admin tools' default when neither the flag nor
    ``ZKC_ZOOKEEPER_SET_ACL`` is given: Kafka's ConfigCommand, TopicCommand and AclCommand open
    their ZooKeeper client with ``isSecure = isZkSaslEnabled || zkTlsClientAuthEnabled``, so a
    tool that authenticates always writes secure ACLs (an explicit false still opts out).
    Brokers keep ``zookeeper.set.acl``'s default, false, as Kafka's do.
    """
    env = os.environ if environ is None else environ
    resolved_scheme = (scheme or env.get(ENV_SCHEME) or "none").strip().lower()
    if set_acl is None:
        default = "false"
        if secure_acls_when_authenticated and resolved_scheme != "none":
            default = "true"
        text = env.get(ENV_SET_ACL, default).strip().lower()
        if text not in _TRUE + _FALSE:
            # As the controller's own setting: a typo must not quietly create open znodes.
            raise CredentialsError(f"{ENV_SET_ACL}: expected true or false, got {text!r}")
        set_acl = text in _TRUE
    return zk_security(
        scheme=resolved_scheme,
        credentials=None if credentials_file else env.get(ENV_CREDENTIALS) or None,
        credentials_file=credentials_file or env.get(ENV_CREDENTIALS_FILE) or None,
        set_acl=set_acl,
    )
