"""ZooKeeper security without a server: Kafka's ACL policy, credentials, settings and flags."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from kazoo.security import ACL, Id, Permissions

from controller.config import ConfigError, load_config, render_effective_config
from controller.security import acls
from controller.security.cli import (
    add_broker_authorization_arguments,
    add_tls_arguments,
    add_zookeeper_security_arguments,
    broker_principals_from_args,
    tls_settings_from_args,
    zk_security_from_args,
)
from controller.security.tls import TlsConfigError

CREATOR_ALL = ACL(Permissions.ALL, Id("auth", ""))
WORLD_READ = ACL(Permissions.READ, Id("world", "anyone"))
WORLD_ALL = ACL(Permissions.ALL, Id("world", "anyone"))
REQUIRED = {"zookeeper.connect": "127.0.0.1:2181", "controller.id": "1"}


@pytest.mark.parametrize(
    "path",
    ["/controller", "/controller_epoch", "/brokers/topics/t/partitions/0/state", "/config",
     "/config/topics/t", "/admin/delete_topics/t", "/zk-controller/controllers/1", "/kafka",
     "/isr_change_notification/isr_change_"],
)  # fmt: skip
def test_secure_paths_are_creator_all_and_world_readable(path: str) -> None:
    assert acls.default_acls(path, secure=True) == [CREATOR_ALL, WORLD_READ]


@pytest.mark.parametrize(
    "path",
    ["/config/users", "/config/users/alice", "/config/brokers/1", "/delegation_token/tokens"],
)
def test_sensitive_paths_are_creator_only(path: str) -> None:
    assert acls.default_acls(path, secure=True) == [CREATOR_ALL]


def test_consumers_path_stays_open_and_insecure_mode_is_open() -> None:
    assert acls.default_acls("/consumers", secure=True) == [WORLD_ALL]
    assert acls.default_acls("/controller", secure=False) == [WORLD_ALL]
    # Kafka's test is a string prefix: /config/usersX is sensitive too.
    assert acls.sensitive_path("/config/usersX")
    assert not acls.sensitive_path("/config/topics/users")


def test_digest_security_options_and_identity(tmp_path: Path) -> None:
    creds = tmp_path / "zk.creds"
    creds.write_text("kafka:s3cret\n")
    sec = acls.zk_security(scheme="digest", credentials_file=creds, set_acl=True)
    options = sec.port_options()
    assert options["auth_data"] == [("digest", "kafka:s3cret")]
    assert options["acl_provider"]("/controller") == [CREATOR_ALL, WORLD_READ]
    # ZooKeeper's DigestAuthenticationProvider: base64(sha1("user:password")).
    assert sec.identity == "digest:kafka:Kni0/R+7cI5e7qcoxEsluOB+9xw="
    assert "s3cret" not in repr(sec) and "s3cret" not in str(sec.describe())


def test_sasl_security_options() -> None:
    sec = acls.zk_security(scheme="sasl", credentials="kafka:pw")
    assert sec.port_options() == {
        "sasl_options": {"mechanism": "DIGEST-MD5", "username": "kafka", "password": "pw"}
    }
    assert sec.identity == "sasl:kafka"


def test_plain_mode_gives_no_port_options() -> None:
    assert acls.zk_security().port_options() == {}
    assert acls.NO_ZK_SECURITY.identity is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scheme": "digest"}, "needs zookeeper.auth.credentials.file"),
        ({"scheme": "none", "credentials": "a:b"}, "scheme is none"),
        ({"set_acl": True}, "needs ZooKeeper authentication"),
        ({"scheme": "digest", "credentials": "nocolon"}, "expected user:password"),
        ({"scheme": "digest", "credentials": "a:"}, "expected user:password"),
        ({"scheme": "digest", "credentials_file": "/nonexistent/zk.creds"}, "cannot read"),
        ({"scheme": "kerberos", "credentials": "a:b"}, "unknown ZooKeeper auth scheme"),
    ],
)
def test_bad_security_settings_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(acls.CredentialsError, match=message):
        acls.zk_security(**kwargs)


def test_credentials_never_appear_in_errors(tmp_path: Path) -> None:
    creds = tmp_path / "bad"
    creds.write_text("justapassword-no-user\n")
    with pytest.raises(acls.CredentialsError) as exc:
        acls.zk_security(scheme="digest", credentials_file=creds)
    assert "justapassword" not in str(exc.value)


def test_credentials_that_are_not_utf8_are_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    # A Latin-1 file raised a raw UnicodeDecodeError; a non-UTF-8 byte in the environment
    # (decoded as a surrogate) killed kazoo's connection thread at authentication.
    latin1 = tmp_path / "zk.creds"
    latin1.write_bytes("kafka:pässword\n".encode("latin-1"))
    with pytest.raises(acls.CredentialsError, match="not UTF-8"):
        acls.zk_security(scheme="digest", credentials_file=latin1)
    env = {
        "ZKC_ZOOKEEPER_AUTH_SCHEME": "digest",
        "ZKC_ZOOKEEPER_AUTH_CREDENTIALS_VALUE": "kafka:p\udce4ssword",
    }
    with pytest.raises(ConfigError) as exc:
        load_config(env=env, flags=REQUIRED)
    (only,) = exc.value.problems
    assert only.key == "zookeeper.auth.credentials.value" and "not UTF-8" in only.message
    assert "ssword" not in str(exc.value)  # the secret is never in an error


def test_config_security_settings_and_cross_checks(tmp_path: Path) -> None:
    creds = tmp_path / "zk.creds"
    creds.write_text("kafka:pw\n")
    cfg = load_config(env={}, flags={
        **REQUIRED, "zookeeper.set.acl": "true", "zookeeper.auth.scheme": "digest",
        "zookeeper.auth.credentials.file": str(creds),
    })  # fmt: skip
    assert cfg.zookeeper_set_acl and cfg.zookeeper_auth_scheme == "digest"
    assert acls.zk_security_from_config(cfg).port_options()["auth_data"] == [("digest", "kafka:pw")]
    bad = {
        "zookeeper.set.acl": "true",  # without authentication
        "grpc.tls.cert.file": "/x.crt",  # without its key
        "grpc.tls.client.auth": "required",  # without a CA file
    }
    with pytest.raises(ConfigError) as exc:
        load_config(env={}, flags={**REQUIRED, **bad})
    keys = {p.key for p in exc.value.problems}
    assert keys == {"zookeeper.set.acl", "grpc.tls.key.file", "grpc.tls.client.auth"}
    # Principals cannot be told apart without client certificates.
    with pytest.raises(ConfigError) as exc:
        load_config(env={}, flags={**REQUIRED, "admin.allowed.principals": "alice"})
    assert {p.key for p in exc.value.problems} == {"admin.allowed.principals"}


def test_inline_credentials_from_the_environment_are_masked() -> None:
    env = {
        "ZKC_ZOOKEEPER_AUTH_SCHEME": "digest",
        "ZKC_ZOOKEEPER_AUTH_CREDENTIALS_VALUE": "kafka:hunter2",
    }
    cfg = load_config(env=env, flags=REQUIRED)
    assert acls.zk_security_from_config(cfg).user == "kafka"
    rendered = render_effective_config(cfg)
    assert "hunter2" not in rendered and "********" in rendered
    assert "hunter2" not in repr(cfg)


def test_tool_flags_fall_back_to_the_environment(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_zookeeper_security_arguments(parser)
    add_tls_arguments(parser, server=True)
    creds = tmp_path / "zk.creds"
    creds.write_text("kafka:pw\n")
    env = {
        "ZKC_ZOOKEEPER_AUTH_SCHEME": "digest",
        "ZKC_ZOOKEEPER_AUTH_CREDENTIALS_FILE": str(creds),
        "ZKC_ZOOKEEPER_SET_ACL": "true",
        "ZKC_GRPC_TLS_CA_FILE": "/ca.crt",
        "ZKC_GRPC_TLS_CLIENT_AUTH": "required",
    }
    args = parser.parse_args(["--tls-cert-file", "/b.crt", "--tls-key-file", "/b.key"])
    sec = zk_security_from_args(args, env)
    assert (sec.scheme, sec.user, sec.set_acl) == ("digest", "kafka", True)
    tls = tls_settings_from_args(args, env)
    assert tls is not None
    assert (str(tls.cert_file), str(tls.ca_file), tls.client_auth_required) == (
        "/b.crt",
        "/ca.crt",
        True,
    )
    # Flags win over the environment; nothing set means plaintext and no authentication.
    args = parser.parse_args(["--zookeeper-auth-scheme", "none", "--zookeeper-set-acl", "false"])
    assert zk_security_from_args(args, {}).port_options() == {}
    assert tls_settings_from_args(parser.parse_args([]), {}) is None


def test_tools_refuse_security_environment_values_the_controller_refuses(tmp_path: Path) -> None:
    # A typo must fail, not quietly run a broker without client authentication or create
    # open znodes (the controller refuses the same values in its own settings).
    parser = argparse.ArgumentParser()
    add_zookeeper_security_arguments(parser)
    add_tls_arguments(parser, server=True)
    args = parser.parse_args(["--tls-cert-file", "/b.crt", "--tls-key-file", "/b.key"])
    with pytest.raises(TlsConfigError, match="expected none or required, got 'require'"):
        tls_settings_from_args(args, {"ZKC_GRPC_TLS_CLIENT_AUTH": "require"})
    with pytest.raises(acls.CredentialsError, match="expected true or false, got 'enabled'"):
        zk_security_from_args(parser.parse_args([]), {"ZKC_ZOOKEEPER_SET_ACL": "enabled"})
    tls = tls_settings_from_args(args, {"ZKC_GRPC_TLS_CLIENT_AUTH": " Required "})
    assert tls is not None and tls.client_auth_required


def test_sasl_without_its_package_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from kazoo.protocol import connection

    monkeypatch.setattr(connection, "PURESASL_AVAILABLE", False)
    with pytest.raises(acls.CredentialsError, match="needs the pure-sasl package"):
        acls.zk_security(scheme="sasl", credentials="kafka:pw")
    acls.zk_security(scheme="digest", credentials="kafka:pw")  # digest needs nothing more


def test_an_authenticated_admin_tool_defaults_to_secure_acls(tmp_path: Path) -> None:
    # Kafka's tools: isSecure = isZkSaslEnabled || ...; the broker keeps zookeeper.set.acl's
    # default (false); an explicit false, flag or environment, still opts a tool out.
    parser = argparse.ArgumentParser()
    add_zookeeper_security_arguments(parser)
    creds = tmp_path / "zk.creds"
    creds.write_text("kafka:pw\n")
    env = {"ZKC_ZOOKEEPER_AUTH_SCHEME": "digest", "ZKC_ZOOKEEPER_AUTH_CREDENTIALS_FILE": str(creds)}
    none = parser.parse_args([])
    assert zk_security_from_args(none, env, admin_tool=True).set_acl
    assert not zk_security_from_args(none, env).set_acl  # the reference broker
    assert not zk_security_from_args(none, {}, admin_tool=True).set_acl  # no auth: open
    opt_out = parser.parse_args(["--zookeeper-set-acl", "false"])
    assert not zk_security_from_args(opt_out, env, admin_tool=True).set_acl
    env_opt_out = {**env, "ZKC_ZOOKEEPER_SET_ACL": "false"}
    assert not zk_security_from_args(none, env_opt_out, admin_tool=True).set_acl


def test_broker_allowed_principals_from_flags_or_the_shared_environment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser()
    add_broker_authorization_arguments(parser)
    env = {
        "ZKC_CONTROLLER_ALLOWED_PRINCIPALS": "controller-0, controller-1",
        "ZKC_BROKER_ALLOWED_PRINCIPALS": "broker-1,broker-2",
    }
    assert broker_principals_from_args(parser.parse_args([]), env) == (
        frozenset({"controller-0", "controller-1"}),
        frozenset({"broker-1", "broker-2"}),
    )
    args = parser.parse_args(["--controller-allowed-principals", "ctl"])
    assert broker_principals_from_args(args, env)[0] == frozenset({"ctl"})
    assert broker_principals_from_args(parser.parse_args([]), {}) == (None, None)
    # One environment serves every process: the controller does not take the brokers'
    # variable for a typo of its own settings.
    cfg = load_config(env={"ZKC_CONTROLLER_ALLOWED_PRINCIPALS": "controller-0"}, flags=REQUIRED)
    assert cfg.controller_id == 1
    # The broker refuses the option without mutual TLS, before it touches ZooKeeper.
    from controller.cli.main import main
    from controller.logs import reset_logging

    try:
        code = main(["broker", "--zookeeper", "127.0.0.1:1", "--broker-id", "1",
                     "--controller-allowed-principals", "controller-0"])  # fmt: skip
    finally:
        reset_logging()
    assert code == 2
    assert "need mutual TLS" in capsys.readouterr().err
