"""TLS files and their reload, and principals from an auth context, without any network."""

from __future__ import annotations

import datetime
import fcntl
import os
import subprocess
import sys
import termios
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
import structlog

from controller.security import authz
from controller.security.cert_validity import Validity, validity_of_der, validity_of_pem
from controller.security.testing import CertificateAuthority
from controller.security.tls import (
    ChannelOpener,
    ClientTls,
    ReloadingChannel,
    ServerTls,
    TlsConfigError,
    TlsFiles,
    client_tls,
    fingerprint,
    server_tls,
)


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority("unit-ca")


def _files(tmp_path: Path, ca: CertificateAuthority, cn: str = "server") -> TlsFiles:
    cert, key = ca.issue(cn, sans=("127.0.0.1",)).write(tmp_path / cn)
    return TlsFiles(cert, key, ca.write(tmp_path / "ca.crt"))


def _bump(*paths: Path) -> None:
    # Make a change visible even on filesystems with coarse timestamps.
    for path in paths:
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_fetch_returns_nothing_until_the_files_change(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    files = _files(tmp_path, ca)
    tls = ServerTls(files, client_auth_required=True)
    assert tls.fetch() is None and tls.fetch() is None
    ca.issue("server", sans=("127.0.0.1",)).write(tmp_path / "server")
    _bump(files.cert_file, files.key_file)  # type: ignore[arg-type]
    assert isinstance(tls.fetch(), grpc.ServerCertificateConfiguration)
    assert tls.generation == 1
    assert tls.fetch() is None


def test_a_mismatched_or_broken_rotation_keeps_the_previous_pair(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    files = _files(tmp_path, ca)
    tls = ServerTls(files)
    other = ca.issue("other")
    assert files.key_file is not None and files.cert_file is not None
    files.key_file.write_bytes(other.key_pem)  # half a rotation: new key, old certificate
    _bump(files.key_file)
    assert tls.fetch() is None and tls.generation == 0
    files.cert_file.write_bytes(other.cert_pem)  # the other half: a matching pair again
    _bump(files.cert_file)
    assert tls.fetch() is not None and tls.generation == 1
    files.cert_file.write_text("garbage")
    _bump(files.cert_file)
    assert tls.fetch() is None and tls.generation == 1


def test_bad_files_fail_at_construction(tmp_path: Path, ca: CertificateAuthority) -> None:
    files = _files(tmp_path, ca)
    other_key = tmp_path / "other.key"
    other_key.write_bytes(ca.issue("x").key_pem)
    with pytest.raises(TlsConfigError, match="not a matching"):
        server_tls(files.cert_file, other_key)
    with pytest.raises(TlsConfigError, match="needs its key"):
        server_tls(files.cert_file, None)
    with pytest.raises(TlsConfigError, match="cannot read"):
        client_tls(tmp_path / "missing-ca.crt")
    with pytest.raises(TlsConfigError, match="needs a CA file"):
        server_tls(files.cert_file, files.key_file, None, client_auth_required=True)
    assert server_tls(None, None) is None


def test_client_credentials_and_channels_follow_the_files(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    files = _files(tmp_path, ca, "client")
    tls = ClientTls(files)
    generation, first = tls.credentials()
    assert tls.credentials() == (generation, first)
    channel = ChannelOpener(tls).open("127.0.0.1:1")
    assert isinstance(channel, ReloadingChannel)
    before = channel.current()
    assert channel.current() is before
    ca.issue("client", sans=("127.0.0.1",)).write(tmp_path / "client")
    _bump(files.cert_file, files.key_file)  # type: ignore[arg-type]
    assert tls.credentials()[0] == generation + 1
    assert channel.current() is not before  # reopened with the new certificate
    channel.close()
    plain = ChannelOpener().open("127.0.0.1:1")
    assert not isinstance(plain, ReloadingChannel)
    plain.close()


class _Context:
    def __init__(self, auth: dict[str, list[bytes]]) -> None:
        self._auth = auth

    def auth_context(self) -> dict[str, list[bytes]]:
        return self._auth

    def peer(self) -> str:
        return "ipv4:127.0.0.1:1"


def _ctx(**auth: Any) -> Any:
    return _Context({k: [v.encode() for v in vs] for k, vs in auth.items()})


def test_principals_from_the_auth_context() -> None:
    ssl = {"transport_security_type": ["ssl"]}
    ctx = _ctx(**ssl, x509_common_name=["alice"], x509_subject=["CN=alice"],
               x509_subject_alternative_name=["alice.example", "127.0.0.1"])  # fmt: skip
    principal = authz.peer_principal(ctx)
    assert principal is not None
    assert principal.names == {"alice", "alice.example", "127.0.0.1"}
    assert "CN=alice" in str(principal)
    assert authz.peer_principal(_ctx(**ssl)) is None  # TLS, but no client certificate
    assert authz.peer_principal(_ctx()) is None  # plaintext
    allowed = frozenset({"alice.example"})
    assert authz.check(allowed, ctx, "svc/M") == principal
    assert authz.check(frozenset({"*"}), ctx, "svc/M") == principal
    with pytest.raises(authz.Denied) as denied:
        authz.check(frozenset({"bob"}), ctx, "svc/M")
    assert denied.value.code is grpc.StatusCode.PERMISSION_DENIED
    assert "CN=alice" in denied.value.message and "svc/M" in denied.value.message
    with pytest.raises(authz.Denied) as denied:
        authz.check(allowed, _ctx(), "svc/M")
    assert denied.value.code is grpc.StatusCode.UNAUTHENTICATED


def test_principal_lists_and_interceptors() -> None:
    assert authz.parse_principals(" alice, bob ,,") == {"alice", "bob"}
    assert authz.parse_principals("") is None and authz.parse_principals(None) is None
    assert authz.interceptors({"a.Svc": None}) == []
    (interceptor,) = authz.interceptors({"a.Svc": frozenset({"x"}), "b.Svc": None})
    assert isinstance(interceptor, authz.AuthorizationInterceptor)
    assert interceptor.rules == {"a.Svc": frozenset({"x"})}


def test_a_rotation_to_a_pem_with_text_before_the_certificate_is_served(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    # openssl pkcs12 -nokeys writes "Bag Attributes" before the certificate; TLS libraries
    # skip it, and so must the reload's log fingerprint (it failed the reload for good).
    files = _files(tmp_path, ca)
    tls = ServerTls(files)
    issued = ca.issue("server", sans=("127.0.0.1",))
    assert files.cert_file is not None and files.key_file is not None
    preamble = b"Bag Attributes\n    localKeyID: 01 00 00 00\nsubject=/CN=server\n"
    files.cert_file.write_bytes(preamble + issued.cert_pem)
    files.key_file.write_bytes(issued.key_pem)
    _bump(files.cert_file, files.key_file)
    assert isinstance(tls.fetch(), grpc.ServerCertificateConfiguration)
    assert tls.generation == 1
    assert fingerprint(preamble + issued.cert_pem) == fingerprint(issued.cert_pem) != "?"
    assert fingerprint(b"no certificate here") == "?"


def test_an_encrypted_key_fails_at_once_even_on_a_terminal(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    # With a controlling terminal, OpenSSL would ask for the passphrase there: a daemon
    # started from a shell hung at start (or in a handshake, on rotation).
    from cryptography.hazmat.primitives import serialization

    issued = ca.issue("server")
    key = serialization.load_pem_private_key(issued.key_pem, password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    cert_path, key_path = tmp_path / "s.crt", tmp_path / "s.key"
    cert_path.write_bytes(issued.cert_pem)
    key_path.write_bytes(encrypted)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from controller.security.tls import ServerTls, TlsConfigError, TlsFiles\n"
        "try:\n"
        f"    ServerTls(TlsFiles(Path({str(cert_path)!r}), Path({str(key_path)!r})))\n"
        "except TlsConfigError:\n"
        "    sys.exit(3)\n"
    )
    primary, secondary = os.openpty()

    def with_terminal() -> None:
        os.setsid()
        fcntl.ioctl(secondary, termios.TIOCSCTTY, 0)

    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            stdin=secondary,
            stdout=secondary,
            stderr=secondary,
            preexec_fn=with_terminal,
            cwd=Path(__file__).resolve().parents[2],
            timeout=30,
        )
    finally:
        os.close(primary)
        os.close(secondary)
    assert done.returncode == 3


def _reloading_channel(
    tmp_path: Path, ca: CertificateAuthority
) -> tuple[ReloadingChannel, Callable[[], None]]:
    """A TLS client channel, and a rotation of its client certificate."""
    files = _files(tmp_path, ca, "client")
    channel = ChannelOpener(ClientTls(files)).open("127.0.0.1:1")
    assert isinstance(channel, ReloadingChannel)

    def rotate() -> None:
        ca.issue("client", sans=("127.0.0.1",)).write(tmp_path / "client")
        _bump(files.cert_file, files.key_file)  # type: ignore[arg-type]

    return channel, rotate


def test_a_long_lived_channel_keeps_at_most_one_replaced_channel(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    # A channel to a healthy broker lives for months: each rotation used to keep the replaced
    # channel (and its socket) open until the channel itself closed.
    channel, rotate = _reloading_channel(tmp_path, ca)
    replaced: list[grpc.Channel] = []
    for _ in range(5):
        replaced.append(channel.current())
        rotate()
        assert channel.current() is not replaced[-1]
    assert channel._retired == [replaced[-1]]
    for old in replaced[:-1]:  # closed: a call on it fails at once
        with pytest.raises(ValueError, match="closed channel"):
            old.unary_unary("/x.Y/Z")(b"", timeout=1)
    channel.close()


def test_a_closed_channel_is_not_reopened_by_a_rotation(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    # A call starting just after its sender's stop, when a rotation is first noticed, used to
    # open a fresh channel (never closed) and send the request after the broker's removal.
    channel, rotate = _reloading_channel(tmp_path, ca)
    before = channel.current()
    channel.close()
    rotate()
    assert channel.current() is before
    with pytest.raises(ValueError, match="closed channel"):
        channel.unary_unary("/x.Y/Z")(b"", timeout=1)
    assert channel._retired == []


def _unusable_cas(tmp_path: Path, ca: CertificateAuthority) -> list[Path]:
    garbage = tmp_path / "garbage-ca.pem"
    garbage.write_text("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
    key = tmp_path / "key-as-ca.pem"
    key.write_bytes(ca.issue("x").key_pem)
    return [garbage, key]


def test_an_unusable_ca_bundle_fails_naming_the_file(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    # Only "-----BEGIN" was checked: gRPC then failed later naming neither file nor reason
    # (a listener that "cannot bind", handshakes failing).
    files = _files(tmp_path, ca)
    for bad in _unusable_cas(tmp_path, ca):
        with pytest.raises(TlsConfigError, match=f"CA bundle {bad} holds no usable PEM"):
            TlsFiles(ca_file=bad).load()
        with pytest.raises(TlsConfigError, match=str(bad)):
            server_tls(files.cert_file, files.key_file, bad, client_auth_required=True)
        with pytest.raises(TlsConfigError, match=str(bad)):
            client_tls(bad)
    # Text around the certificates (comments, "Bag Attributes") is fine, as for OpenSSL.
    assert files.ca_file is not None
    commented = tmp_path / "commented-ca.pem"
    commented.write_bytes(b"# cluster CA\n" + files.ca_file.read_bytes())
    assert TlsFiles(ca_file=commented).load()[2] is not None


def test_a_reload_to_an_unusable_ca_bundle_keeps_the_previous_one(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    files = _files(tmp_path, ca)
    tls = ServerTls(files, client_auth_required=True)
    assert files.ca_file is not None
    good = files.ca_file.read_bytes()
    for bad in _unusable_cas(tmp_path, ca):
        files.ca_file.write_bytes(bad.read_bytes())
        _bump(files.ca_file)
        with structlog.testing.capture_logs() as logs:
            assert tls.fetch() is None
        assert tls.generation == 0
        assert tls._reloader.contents[2] == good  # the previous bundle stays in use
        assert [e["event"] for e in logs] == [
            "cannot reload the gRPC server TLS certificate; keeping the previous one"
        ]
        assert logs[0]["log_level"] == "error" and str(files.ca_file) in logs[0]["error"]
    files.ca_file.write_bytes(good)  # fixed: taken at the next handshake
    _bump(files.ca_file)
    assert tls.fetch() is not None and tls.generation == 1


def _validate_config(monkeypatch: pytest.MonkeyPatch, files: TlsFiles, *more: str) -> int:
    """``run --validate-config`` with ``files``' certificate and key, in a clean environment."""
    from controller.cli.main import main

    for name in list(os.environ):
        if name == "ZK_CONNECT" or name.startswith("ZKC_"):
            monkeypatch.delenv(name)
    return main(["run", "--validate-config", "--controller-id", "0", "--zookeeper", "zk:2181",
                 "--grpc-tls-cert-file", str(files.cert_file), "--grpc-tls-key-file",
                 str(files.key_file), *more])  # fmt: skip


def test_validate_config_refuses_an_unusable_ca_bundle(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    ca: CertificateAuthority,
) -> None:  # fmt: skip
    files = _files(tmp_path, ca)
    bad = _unusable_cas(tmp_path, ca)[0]
    code = _validate_config(monkeypatch, files, "--grpc-tls-ca-file", str(bad))
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("security configuration:") and str(bad) in err


def test_validate_config_names_every_unreadable_tls_file_at_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # It named the first only: an operator needed three runs for three missing files.
    missing = TlsFiles(tmp_path / "no.crt", tmp_path / "no.key", tmp_path / "no-ca.crt")
    (tmp_path / "no.key").write_text("not a key")
    code = _validate_config(monkeypatch, missing, "--grpc-tls-ca-file", str(missing.ca_file))
    assert code == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"security configuration: cannot read the TLS certificate {missing.cert_file}: "
        "No such file or directory",
        f"security configuration: the TLS key {missing.key_file} is not PEM",
        f"security configuration: cannot read the TLS CA bundle {missing.ca_file}: "
        "No such file or directory",
    ]


def test_a_missing_certificate_or_key_file_is_named_as_missing(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    # The pair check ran first and reported "not a matching PEM certificate and unencrypted
    # key: [Errno 2] ..." for a file that does not exist.
    files = _files(tmp_path, ca)
    missing = tmp_path / "absent.pem"
    for cert, key, what in ((missing, files.key_file, "certificate"),
                            (files.cert_file, missing, "key")):  # fmt: skip
        with pytest.raises(TlsConfigError) as exc:
            TlsFiles(cert, key).load()
        assert str(exc.value) == f"cannot read the TLS {what} {missing}: No such file or directory"


# -- certificate validity: logged at every load, exported, refused by --validate-config --------


@pytest.mark.parametrize(
    ("not_before", "not_after"),
    [
        ("2020-01-02T03:04:05", "2049-12-31T23:59:59"),  # UTCTime both (years < 2050)
        ("1999-06-30T12:00:00", "2051-01-01T00:00:00"),  # 19YY UTCTime; GeneralizedTime
    ],
)
def test_the_validity_period_is_read_from_the_certificate(
    ca: CertificateAuthority, not_before: str, not_after: str
) -> None:
    start, end = (datetime.datetime.fromisoformat(t).replace(tzinfo=datetime.UTC)
                  for t in (not_before, not_after))  # fmt: skip
    issued = ca.issue("server", not_before=start, not_after=end)
    assert validity_of_pem(issued.cert_pem) == Validity(start, end)
    # The same as a full crypto library reads it.
    assert issued.certificate.not_valid_after_utc == end


def test_no_validity_for_what_is_not_a_certificate(ca: CertificateAuthority) -> None:
    issued = ca.issue("server")
    assert validity_of_pem(issued.key_pem) is None
    not_der = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
    assert validity_of_pem(not_der) is None
    with pytest.raises(ValueError):
        validity_of_der(b"\x30\x82\xff\xff\x30")  # a length past the end


def _issue_files(
    tmp_path: Path, ca: CertificateAuthority, *, not_before: datetime.datetime,
    not_after: datetime.datetime,
) -> TlsFiles:  # fmt: skip
    cert, key = ca.issue("server", sans=("127.0.0.1",), not_before=not_before,
                         not_after=not_after).write(tmp_path / "server")  # fmt: skip
    return TlsFiles(cert, key, ca.write(tmp_path / "ca.crt"))


def test_an_expired_or_expiring_certificate_is_logged_at_start_and_at_reload(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    now = datetime.datetime.now(datetime.UTC)
    day = datetime.timedelta(days=1)
    files = _issue_files(tmp_path, ca, not_before=now - 30 * day, not_after=now - day)
    with structlog.testing.capture_logs() as logs:
        tls = ServerTls(files)
    expired = [entry for entry in logs if "has expired" in entry["event"]]
    assert len(expired) == 1 and expired[0]["log_level"] == "error"
    assert expired[0]["file"] == str(files.cert_file)
    assert tls.validity is not None and tls.validity.expired(now)
    # Rotated to one that expires in three days: a warning, with the days left.
    _issue_files(tmp_path, ca, not_before=now - day, not_after=now + 3 * day)
    _bump(files.cert_file, files.key_file)  # type: ignore[arg-type]
    with structlog.testing.capture_logs() as logs:
        assert tls.fetch() is not None
    soon = [entry for entry in logs if "expires soon" in entry["event"]]
    assert len(soon) == 1 and soon[0]["log_level"] == "warning" and soon[0]["days_left"] == 2
    # A certificate with a long life left says nothing about its validity.
    with structlog.testing.capture_logs() as logs:
        ServerTls(_files(tmp_path, ca))
    assert not [entry for entry in logs if "expire" in entry["event"]]


def test_validate_config_refuses_an_expired_certificate(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    ca: CertificateAuthority,
) -> None:  # fmt: skip
    now = datetime.datetime.now(datetime.UTC)
    files = _issue_files(tmp_path, ca, not_before=now - datetime.timedelta(days=30),
                         not_after=now - datetime.timedelta(hours=1))  # fmt: skip
    assert _validate_config(monkeypatch, files) == 2
    err = capsys.readouterr().err
    assert err.startswith("security configuration: the TLS certificate")
    assert f"{files.cert_file} (grpc.tls.cert.file) expired on" in err
    assert _validate_config(monkeypatch, _files(tmp_path, ca)) == 0  # a valid one passes


def _usage_files(tmp_path: Path, ca: CertificateAuthority, usages: Any) -> TlsFiles:
    cert, key = ca.issue("server", sans=("127.0.0.1",), usages=usages).write(tmp_path / "server")
    return TlsFiles(cert, key, ca.write(tmp_path / "ca.crt"))


def test_a_certificate_missing_a_usage_the_daemons_need_is_refused(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    """The daemons serve and connect with one certificate; a serverAuth-only one was taken,
    and every request to a broker then failed with "Socket closed" (the broker's log alone
    said "unsupported certificate purpose")."""
    from cryptography.x509.oid import ExtendedKeyUsageOID as Oid

    from controller.security.cert_validity import (
        CLIENT_AUTH,
        SERVER_AUTH,
        extended_key_usages_of_der,
        first_certificate_der,
    )

    for usages in (None, (Oid.SERVER_AUTH, Oid.CLIENT_AUTH), (Oid.ANY_EXTENDED_KEY_USAGE,)):
        ServerTls(_usage_files(tmp_path, ca, usages))  # accepted
    for usages, missing in (((Oid.SERVER_AUTH,), "clientAuth"), ((Oid.CLIENT_AUTH,), "serverAuth"),
                            ((Oid.CODE_SIGNING,), "serverAuth and clientAuth")):  # fmt: skip
        files = _usage_files(tmp_path, ca, usages)
        with pytest.raises(TlsConfigError, match=f"lacks the {missing} extended key usage"):
            ServerTls(files)
    # The DER walk itself, against the library that wrote the certificate.
    both = ca.issue("x", sans=("127.0.0.1",), usages=(Oid.CLIENT_AUTH, Oid.SERVER_AUTH))
    der = first_certificate_der(both.cert_pem)
    assert der is not None and extended_key_usages_of_der(der) == {SERVER_AUTH, CLIENT_AUTH}
    ca_der = first_certificate_der(ca.cert_pem)
    assert ca_der is not None and extended_key_usages_of_der(ca_der) is None
    # A rotation to a serverAuth-only certificate keeps the previous one.
    files = _usage_files(tmp_path, ca, None)
    tls = ServerTls(files)
    _usage_files(tmp_path, ca, (Oid.SERVER_AUTH,))
    _bump(files.cert_file, files.key_file)  # type: ignore[arg-type]
    with structlog.testing.capture_logs() as logs:
        assert tls.fetch() is None and tls.generation == 0
    assert any("lacks the clientAuth" in entry.get("error", "") for entry in logs)


def test_validate_config_refuses_a_certificate_missing_a_usage(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    ca: CertificateAuthority,
) -> None:  # fmt: skip
    from cryptography.x509.oid import ExtendedKeyUsageOID as Oid

    assert _validate_config(monkeypatch, _usage_files(tmp_path, ca, (Oid.SERVER_AUTH,))) == 2
    assert "lacks the clientAuth extended key usage" in capsys.readouterr().err


def test_validate_config_lists_every_file_problem_at_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    ca: CertificateAuthority,
) -> None:  # fmt: skip
    """Credentials, certificate files and the state-change log path: one run names them all
    (it stopped at the first, so a fix-and-rerun loop found them one by one)."""
    files = _files(tmp_path, ca)
    bad_ca = _unusable_cas(tmp_path, ca)[0]
    (tmp_path / "afile").write_text("")
    code = _validate_config(
        monkeypatch, files, "--grpc-tls-ca-file", str(bad_ca),
        "--zookeeper-auth-scheme", "digest",
        "--zookeeper-auth-credentials-file", str(tmp_path / "missing-credentials"),
        "--log-dir", str(tmp_path / "afile" / "logs"),
    )  # fmt: skip
    assert code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3, lines
    assert "missing-credentials" in lines[0] and str(bad_ca) in lines[1]
    assert lines[2].startswith("configuration: cannot open the state-change log")
