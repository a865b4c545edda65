"""Certificates made on the spot, for tests and local experiments (needs ``cryptography``, which
is in the ``test`` extra, not a runtime dependency).

    ca = CertificateAuthority("test-ca")
    server = ca.issue("controller-0", sans=("127.0.0.1", "localhost"))
    files = server.write(tmp_path / "controller")   # .crt/.key next to each other
    ca.write(tmp_path / "ca.crt")

Keys are EC P-256 (fast to generate). Leaf certificates carry both serverAuth and clientAuth
extended key usages, so one file pair serves a process both ways, as ``TlsSettings`` uses it.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=30)  # past the daemon's 14-day expiry warning
_BACKDATE = datetime.timedelta(minutes=5)  # tolerate small clock differences


_CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _alt_name(value: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(value))
    except ValueError:
        pass
    if "://" in value:
        return x509.UniformResourceIdentifier(value)
    return x509.DNSName(value)


def _write(path: Path, data: bytes, private: bool = False) -> None:
    """Replace ``path`` atomically (a reader never sees half a file), 0600 for keys."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    if private:
        os.chmod(tmp, 0o600)
    os.replace(tmp, path)


@dataclass(frozen=True)
class IssuedCertificate:
    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    @property
    def serial(self) -> int:
        return self.certificate.serial_number

    def write(self, stem: Path) -> tuple[Path, Path]:
        """Write ``<stem>.crt`` and ``<stem>.key`` (each replaced atomically); return them.
        The key is written first, so a rotation is never seen as a new cert with an old key
        for longer than between the two replaces."""
        cert, key = stem.with_suffix(".crt"), stem.with_suffix(".key")
        _write(key, self.key_pem, private=True)
        _write(cert, self.cert_pem)
        return cert, key


class CertificateAuthority:
    """A self-signed CA that issues leaf certificates."""

    def __init__(self, common_name: str = "zk-controller test CA") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(_name(common_name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _BACKDATE)
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_CA_KEY_USAGE, critical=True)
            .sign(self.key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def write(self, path: Path) -> Path:
        _write(path, self.cert_pem)
        return path

    def issue(
        self,
        common_name: str,
        sans: Sequence[str] = (),
        *,
        not_before: datetime.datetime | None = None,
        not_after: datetime.datetime | None = None,
        usages: Sequence[x509.ObjectIdentifier] | None = (
            ExtendedKeyUsageOID.SERVER_AUTH,
            ExtendedKeyUsageOID.CLIENT_AUTH,
        ),
    ) -> IssuedCertificate:
        """A leaf certificate for ``common_name`` with subject alternative names ``sans``
        (IP addresses, DNS names, or URIs when they contain ``://``), valid from a while
        ago for a long while unless ``not_before``/``not_after`` say otherwise, with the
        extended key ``usages`` (None: no such extension)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _BACKDATE if not_before is None else not_before)
            .not_valid_after(now + _VALIDITY if not_after is None else not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        )
        if usages is not None:
            builder = builder.add_extension(x509.ExtendedKeyUsage(list(usages)), critical=False)
        if sans:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_alt_name(s) for s in sans]), critical=False
            )
        return IssuedCertificate(builder.sign(self.key, hashes.SHA256()), key)


def certificate_serial(pem_or_der: bytes) -> int:
    """The serial number of a PEM or DER certificate (e.g. a peer's, read off a socket)."""
    if pem_or_der.lstrip().startswith(b"-----BEGIN"):
        return x509.load_pem_x509_certificate(pem_or_der).serial_number
    return x509.load_der_x509_certificate(pem_or_der).serial_number
