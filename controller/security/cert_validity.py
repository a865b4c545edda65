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


#: Extended key usages (RFC 5280 4.2.1.12), as the DER content of their OIDs.
_EXTENDED_KEY_USAGE = bytes.fromhex("551d25")  # 2.5.29.37
SERVER_AUTH = bytes.fromhex("2b06010505070301")  # 1.3.6.1.5.5.7.3.1
CLIENT_AUTH = bytes.fromhex("2b06010505070302")  # 1.3.6.1.5.5.7.3.2
ANY_EXTENDED_KEY_USAGE = bytes.fromhex("551d2500")  # 2.5.29.37.0
_OCTET_STRING, _EXTENSIONS, _BOOLEAN = 0x04, 0xA3, 0x01


def extended_key_usages_of_der(der: bytes) -> frozenset[bytes] | None:
    """The certificate's extended key usages (the DER content of each OID), or None when it
    has no such extension (any use). Raises ValueError when ``der`` cannot be walked."""
    try:
        _, start, _ = _tlv(der, 0)  # Certificate
        _, pos, end = _tlv(der, start)  # TBSCertificate
        if der[pos] == _EXPLICIT_VERSION:
            pos = _tlv(der, pos)[2]
        # serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
        for _ in range(6):
            pos = _tlv(der, pos)[2]
        while pos < end:  # issuerUniqueID [1], subjectUniqueID [2], extensions [3]
            tag, value, after = _tlv(der, pos)
            if tag == _EXTENSIONS:
                _, item, items_end = _tlv(der, value)  # SEQUENCE OF Extension
                while item < items_end:
                    _, field, item_end = _tlv(der, item)
                    _, oid, oid_end = _tlv(der, field)  # extnID
                    tag, inner, inner_end = _tlv(der, oid_end)
                    if tag == _BOOLEAN:  # critical
                        tag, inner, inner_end = _tlv(der, inner_end)
                    if der[oid:oid_end] == _EXTENDED_KEY_USAGE and tag == _OCTET_STRING:
                        _, usage, usages_end = _tlv(der, inner)  # SEQUENCE OF KeyPurposeId
                        usages = set()
                        while usage < usages_end:
                            _, value_start, value_end = _tlv(der, usage)
                            usages.add(der[value_start:value_end])
                            usage = value_end
                        return frozenset(usages)
                    item = item_end
                return None
            pos = after
    except IndexError as exc:
        raise ValueError(f"malformed certificate: {exc}") from None
    return None
