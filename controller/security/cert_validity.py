"""A certificate's validity period, read from its DER without a crypto library.

The standard library verifies certificates but does not say when one expires; the daemon
needs that to warn before a rotation is missed and to export the expiry as a metric. Only
the fixed path ``Certificate → TBSCertificate → Validity`` of X.509 is walked.
"""

from __future__ import annotations

import datetime
import ssl
from dataclasses import dataclass

_SEQUENCE, _EXPLICIT_VERSION, _UTC_TIME, _GENERALIZED_TIME = 0x30, 0xA0, 0x17, 0x18


@dataclass(frozen=True, slots=True)
class Validity:
    not_before: datetime.datetime  # UTC
    not_after: datetime.datetime  # UTC

    def expired(self, now: datetime.datetime) -> bool:
        return now > self.not_after

    def not_yet_valid(self, now: datetime.datetime) -> bool:
        return now < self.not_before


def _tlv(der: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of the value, end of the value) of the DER element at ``pos``."""
    tag, first = der[pos], der[pos + 1]
    pos += 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if not 1 <= count <= 4:
            raise ValueError("unsupported DER length")
        length = int.from_bytes(der[pos : pos + count], "big")
        pos += count
    if pos + length > len(der):
        raise ValueError("truncated DER")
    return tag, pos, pos + length


def _time(der: bytes, pos: int) -> tuple[datetime.datetime, int]:
    tag, start, end = _tlv(der, pos)
    text = der[start:end].decode("ascii")
    if tag == _UTC_TIME:  # YYMMDDHHMMSSZ; RFC 5280: YY < 50 is 20YY
        year = int(text[:2])
        text = f"{2000 + year if year < 50 else 1900 + year}{text[2:]}"
    elif tag != _GENERALIZED_TIME:
        raise ValueError(f"unexpected time tag 0x{tag:02x}")
    if not text.endswith("Z") or len(text) != 15:
        raise ValueError(f"unsupported time {text!r}")
    parsed = datetime.datetime.strptime(text, "%Y%m%d%H%M%SZ")
    return parsed.replace(tzinfo=datetime.UTC), end


def validity_of_der(der: bytes) -> Validity:
    """Raises ValueError when ``der`` is not an X.509 certificate this walk understands."""
    try:
        tag, start, _ = _tlv(der, 0)  # Certificate
        if tag != _SEQUENCE:
            raise ValueError("not a certificate")
        tag, pos, _ = _tlv(der, start)  # TBSCertificate
        if tag != _SEQUENCE:
            raise ValueError("not a certificate")
        if der[pos] == _EXPLICIT_VERSION:
            pos = _tlv(der, pos)[2]
        for _ in range(3):  # serialNumber, signature, issuer
            pos = _tlv(der, pos)[2]
        tag, pos, _ = _tlv(der, pos)  # Validity
        if tag != _SEQUENCE:
            raise ValueError("no validity")
        not_before, pos = _time(der, pos)
        not_after, _ = _time(der, pos)
    except (IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed certificate: {exc}") from None
    return Validity(not_before, not_after)


def first_certificate_der(pem: bytes) -> bytes | None:
    """The DER of the first certificate in a PEM chain, None when there is none. Text before
    it (``openssl pkcs12``'s "Bag Attributes") is skipped, as TLS libraries skip it."""
    text = pem.decode("ascii", "replace")
    begin = text.find("-----BEGIN CERTIFICATE-----")
    end = text.find("-----END CERTIFICATE-----", max(begin, 0))
    if begin < 0 or end < 0:
        return None
    try:
        return ssl.PEM_cert_to_DER_cert(text[begin : end + len("-----END CERTIFICATE-----")])
    except ValueError:
        return None


def validity_of_pem(pem: bytes) -> Validity | None:
    """The first certificate's validity in a PEM chain; None when there is none to read
    (the TLS library's own checks report unusable files)."""
    der = first_certificate_der(pem)
    if der is None:
        return None
    try:
        return validity_of_der(der)
    except ValueError:
        return None
