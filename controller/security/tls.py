"""TLS for gRPC: server credentials that reload their files, and client channels that follow them.

Files are PEM: a certificate chain, its unencrypted private key, and a CA bundle (the trust
for peers). Both sides reload without a restart, so certificates can be rotated in place:

* Server: ``dynamic_ssl_server_credentials`` asks ``ServerTls.fetch`` for the configuration at
  every new TLS handshake. It re-reads the files only when one changed (mtime, size, inode),
  checks that the new certificate and key belong together, and keeps the previous pair when
  they do not (a rotation caught half-written is retried at the next handshake). Connections
  already open keep their certificate; new ones get the new one.
* Client: ``ReloadingChannel`` is a ``grpc.Channel`` that opens a fresh underlying channel when
  the client's files changed, so a reconnect never presents an expired client certificate.

Peer names are verified against the certificate's SANs (gRPC's default), so broker
certificates must name the host brokers register (e.g. ``IP:127.0.0.1``). Mutual TLS
(``client_auth_required``) makes the server refuse a client without a certificate signed by
the CA bundle during the handshake; what an authenticated client may call is ``authz``'s.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import socket
import ssl
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import structlog

from controller.config.addresses import parse_host_port
from controller.security.cert_validity import (
    ANY_EXTENDED_KEY_USAGE,
    CLIENT_AUTH,
    SERVER_AUTH,
    Validity,
    extended_key_usages_of_der,
    first_certificate_der,
    validity_of_pem,
)

log = structlog.get_logger("controller.security.tls")

ChannelOptions = Sequence[tuple[str, Any]]
_Stamp = tuple[tuple[int, int, int] | None, ...]


class TlsConfigError(ValueError):
    """TLS files missing, unreadable or not a matching certificate and key."""


#: A certificate this close to its end is logged as a warning at every load (start, reload).
EXPIRY_WARNING = datetime.timedelta(days=14)


def _report_validity(what: str, path: Path | None, validity: Validity | None) -> None:
    """Say so when a certificate is, or soon will be, unusable: peers would refuse every
    handshake, and only they would say why."""
    if validity is None:
        return
    now = datetime.datetime.now(datetime.UTC)
    where = {"file": str(path), "not_before": validity.not_before.isoformat(),
             "not_after": validity.not_after.isoformat()}  # fmt: skip
    if validity.expired(now):
        log.error(f"the {what} has expired: peers will refuse its handshakes", **where)
    elif validity.not_yet_valid(now):
        log.warning(f"the {what} is not valid yet (clock skew?)", **where)
    elif validity.not_after - now < EXPIRY_WARNING:
        log.warning(f"the {what} expires soon", days_left=(validity.not_after - now).days,
                    **where)  # fmt: skip


def _stamp(paths: Sequence[Path | None]) -> _Stamp:
    out: list[tuple[int, int, int] | None] = []
    for path in paths:
        if path is None:
            out.append(None)
            continue
        try:
            st = os.stat(path)
        except OSError:
            out.append((-1, -1, -1))
        else:
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(out)


_FILE_KINDS = ("TLS certificate", "TLS key", "TLS CA bundle")


def _read(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TlsConfigError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    if b"-----BEGIN" not in data:
        raise TlsConfigError(f"the {what} {path} is not PEM")
    return data


def _check_ca(path: Path, data: bytes) -> None:
    """Fail unless the CA bundle holds at least one certificate OpenSSL can parse: gRPC would
    take anything PEM-looking and only fail later (the listener not binding, handshakes
    failing), naming neither the file nor the reason."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        # As text: bytes would be read as DER. PEM is ASCII; other bytes (comments) can go.
        context.load_verify_locations(cadata=data.decode("ascii", "ignore"))
    except ssl.SSLError as exc:
        raise TlsConfigError(
            f"the TLS CA bundle {path} holds no usable PEM certificate: {exc.reason or exc}"
        ) from None
    if not context.cert_store_stats().get("x509"):
        raise TlsConfigError(f"the TLS CA bundle {path} holds no PEM certificate")


def _check_pair(cert: Path, key: Path) -> None:
    """Fail unless ``key`` is the private key of ``cert``'s first certificate."""
    try:
        # A password callback, so that an encrypted key fails at once instead of OpenSSL
        # asking for its passphrase on the terminal (a hang at start or during a handshake).
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(cert, key, password=lambda: b"")
    except (ssl.SSLError, OSError) as exc:
        raise TlsConfigError(
            f"{cert} and {key} are not a matching PEM certificate and unencrypted key: {exc}"
        ) from None


def fingerprint(cert_pem: bytes) -> str:
    """SHA-256 of the first certificate's DER, for logs (``AB:CD:...``, first 8 bytes); "?"
    when there is none. Text before the certificate (``openssl pkcs12``'s "Bag Attributes")
    is skipped, as TLS libraries skip it."""
    der = first_certificate_der(cert_pem)
    if der is None:
        return "?"
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest()[:8])


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """Where one side's PEM files are. Any may be None (a client with no certificate, or one
    trusting the system's roots)."""

    cert_file: Path | None = None
    key_file: Path | None = None
    ca_file: Path | None = None

    def __post_init__(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise TlsConfigError("a TLS certificate needs its key file, and a key its certificate")

    @property
    def paths(self) -> tuple[Path | None, ...]:
        return (self.cert_file, self.key_file, self.ca_file)

    def read_problems(self) -> list[str]:
        """What stops each configured file from being read as PEM, every one of them (a
        check before a deployment should name them all, not the first)."""
        problems: list[str] = []
        for path, what in zip(self.paths, _FILE_KINDS, strict=True):
            if path is not None:
                try:
                    _read(path, what)
                except TlsConfigError as exc:
                    problems.append(str(exc))
        return problems

    def load(self) -> tuple[bytes | None, bytes | None, bytes | None]:
        """(certificate chain, key, CA bundle) as PEM bytes, the pair checked."""
        cert = key = ca = None
        if self.cert_file is not None and self.key_file is not None:
            # Each file read first, so that a missing or unreadable one is named as such.
            cert = _read(self.cert_file, _FILE_KINDS[0])
            key = _read(self.key_file, _FILE_KINDS[1])
            _check_pair(self.cert_file, self.key_file)
        if self.ca_file is not None:
            ca = _read(self.ca_file, _FILE_KINDS[2])
            _check_ca(self.ca_file, ca)
        return cert, key, ca


def check_dual_use(path: Path | None, cert: bytes | None) -> None:
    """Fail unless the certificate may both serve and connect (serverAuth and clientAuth, or
    no extended key usages): the daemons use one certificate for their listener and for the
    calls they make, and a peer refuses a handshake whose usage is missing, naming it only in
    its own log (a broker's "unsupported certificate purpose")."""
    der = None if cert is None else first_certificate_der(cert)
    if der is None:
        return
    try:
        usages = extended_key_usages_of_der(der)
    except ValueError:
        return  # the TLS library's own checks report an unusable certificate
    if usages is None or ANY_EXTENDED_KEY_USAGE in usages:
        return
    missing = [name for oid, name in ((SERVER_AUTH, "serverAuth"), (CLIENT_AUTH, "clientAuth"))
               if oid not in usages]  # fmt: skip
    if missing:
        raise TlsConfigError(
            f"the TLS certificate {path} lacks the {' and '.join(missing)} extended key "
            "usage: it is used both to serve and to connect (mutual TLS), so peers would "
            "refuse it; issue it with both serverAuth and clientAuth, or with neither"
        )


class _Reloader:
    """PEM files read again when they change; the last good contents kept otherwise.
    ``check`` (the file, the certificate) refuses contents the way ``TlsFiles.load`` does."""

    def __init__(
        self,
        files: TlsFiles,
        what: str,
        check: Callable[[Path | None, bytes | None], None] | None = None,
    ) -> None:
        self.files = files
        self._what = what
        self._check = check
        self._lock = threading.Lock()
        self.generation = 0
        for _ in range(3):
            self._stamp = _stamp(files.paths)
            self.contents = self._load()  # raises: a bad configuration fails the start
            if self._stamp_after_check(self._stamp):
                break
        _report_validity(what, files.cert_file, self.validity)

    @property
    def validity(self) -> Validity | None:
        """The current certificate's validity period (None: no certificate)."""
        cert = self.contents[0]
        return None if cert is None else validity_of_pem(cert)

    def _load(self) -> tuple[bytes | None, bytes | None, bytes | None]:
        contents = self.files.load()
        if self._check is not None:
            self._check(self.files.cert_file, contents[0])
        return contents

    def _stamp_after_check(self, before: _Stamp) -> bool:
        # A writer between our stat and our read would leave mixed files: read again later.
        return _stamp(self.files.paths) == before

    def refresh(self) -> bool:
        """Re-read the files if they changed; True when new contents were taken."""
        stamp = _stamp(self.files.paths)
        if stamp == self._stamp:
            return False
        with self._lock:
            if stamp == self._stamp:
                return False
            try:
                contents = self._load()
            except TlsConfigError as exc:
                # Keep serving with the previous files; log once per change of the files.
                log.error(f"cannot reload the {self._what}; keeping the previous one",
                          error=str(exc))  # fmt: skip
                self._stamp = stamp
                return False
            if not self._stamp_after_check(stamp):
                return False  # changed while we read: the next call reads them again
            self._stamp, self.contents = stamp, contents
            self.generation += 1
        cert = contents[0]
        log.info(f"reloaded the {self._what}",
                 cert_sha256=fingerprint(cert) if cert else None)  # fmt: skip
        _report_validity(self._what, self.files.cert_file, self.validity)
        return True


class ServerTls:
    """TLS credentials for a gRPC server, reloaded when the files change."""

    def __init__(self, files: TlsFiles, *, client_auth_required: bool = False) -> None:
        if files.cert_file is None or files.key_file is None:
            raise TlsConfigError("a TLS server needs a certificate and a key file")
        if client_auth_required and files.ca_file is None:
            raise TlsConfigError("client authentication needs a CA file to verify clients with")
        self.files = files
        self.client_auth_required = client_auth_required
        self._reloader = _Reloader(files, "gRPC server TLS certificate", check_dual_use)

    def _configuration(self) -> grpc.ServerCertificateConfiguration:
        cert, key, ca = self._reloader.contents
        assert cert is not None and key is not None
        return grpc.ssl_server_certificate_configuration([(key, cert)], root_certificates=ca)

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """gRPC's per-handshake callback: a new configuration, or None for "unchanged"."""
        try:
            return self._configuration() if self._reloader.refresh() else None
        except Exception:  # never let an exception escape into gRPC's handshake
            log.exception("TLS certificate reload failed")
            return None

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.dynamic_ssl_server_credentials(
            self._configuration(),
            self.fetch,
            require_client_authentication=self.client_auth_required,
        )

    @property
    def generation(self) -> int:
        """How many times new files were taken (for tests and logs)."""
        return self._reloader.generation

    @property
    def validity(self) -> Validity | None:
        """The served certificate's validity period, for the expiry metric."""
        return self._reloader.validity


class ClientTls:
    """TLS credentials for gRPC channels (trust: the CA file, else the system roots; optionally
    a client certificate for mutual TLS), rebuilt when the files change."""

    def __init__(self, files: TlsFiles, *, server_name_override: str | None = None) -> None:
        self.files = files
        self.server_name_override = server_name_override
        self._reloader = _Reloader(files, "gRPC client TLS certificate")
        self._credentials: tuple[int, grpc.ChannelCredentials] | None = None

    def credentials(self) -> tuple[int, grpc.ChannelCredentials]:
        """(generation, credentials): a new generation means the files changed."""
        self._reloader.refresh()
        generation = self._reloader.generation
        cached = self._credentials
        if cached is None or cached[0] != generation:
            cert, key, ca = self._reloader.contents
            cached = (generation, grpc.ssl_channel_credentials(ca, key, cert))
            self._credentials = cached
        return cached

    @property
    def validity(self) -> Validity | None:
        """The client certificate's validity period (None without one)."""
        return self._reloader.validity

    def options(self) -> list[tuple[str, Any]]:
        if self.server_name_override:
            return [("grpc.ssl_target_name_override", self.server_name_override)]
        return []


class _ReloadingMultiCallable:
    """A unary-unary method that goes to the channel's current underlying channel per call."""

    def __init__(self, owner: ReloadingChannel, method: str, kwargs: dict[str, Any]) -> None:
        self._owner = owner
        self._method = method
        self._kwargs = kwargs
        self._cache: tuple[grpc.Channel, Any] | None = None

    def _current(self) -> Any:
        channel = self._owner.current()
        cached = self._cache
        if cached is None or cached[0] is not channel:
            cached = (channel, channel.unary_unary(self._method, **self._kwargs))
            self._cache = cached
        return cached[1]

    def __call__(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return self._current()(request, *args, **kwargs)

    def with_call(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return self._current().with_call(request, *args, **kwargs)

    def future(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return self._current().future(request, *args, **kwargs)


class ReloadingChannel(grpc.Channel):
    """A TLS channel that reopens itself on the new files after a certificate rotation.

    Stubs made on it keep working across rotations (unary-unary methods follow the current
    channel; streaming methods are bound to the channel current when the stub was made).
    A replaced channel is not closed at once (calls may still be running on it) but at the
    next rotation, or with this one: at most one is kept (a channel that lives for months
    kept one open channel per rotation before).
    """

    def __init__(self, target: str, tls: ClientTls, options: ChannelOptions = ()) -> None:
        self.target = target
        self._tls = tls
        self._options = [*options, *tls.options()]
        self._lock = threading.Lock()
        self._retired: list[grpc.Channel] = []
        self._closed = False
        self._generation, channel = self._open()
        self._channel = channel

    def _open(self) -> tuple[int, grpc.Channel]:
        generation, credentials = self._tls.credentials()
        return generation, grpc.secure_channel(self.target, credentials, options=self._options)

    def current(self) -> grpc.Channel:
        generation, _ = self._tls.credentials()
        if generation == self._generation or self._closed:
            return self._channel
        stale: list[grpc.Channel] = []
        with self._lock:
            # Closed: a call racing the close fails on the closed channel; reopening here
            # would send it, after its sender was stopped, on a channel nobody closes.
            if generation != self._generation and not self._closed:
                stale, self._retired = self._retired, [self._channel]
                self._generation, self._channel = self._open()
            current = self._channel
        for channel in stale:  # retired a rotation ago: its calls have long finished
            channel.close()
        return current

    def subscribe(self, callback: Callable[..., Any], try_to_connect: bool = False) -> None:
        self.current().subscribe(callback, try_to_connect)

    def unsubscribe(self, callback: Callable[..., Any]) -> None:
        self._channel.unsubscribe(callback)

    def unary_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if args:  # positional serializers: bind now (not expected from generated stubs)
            return self.current().unary_unary(method, *args, **kwargs)
        return _ReloadingMultiCallable(self, method, kwargs)

    def unary_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.current().unary_stream(method, *args, **kwargs)

    def stream_unary(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.current().stream_unary(method, *args, **kwargs)

    def stream_stream(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.current().stream_stream(method, *args, **kwargs)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            channels, self._retired = [self._channel, *self._retired], []
        for channel in channels:
            channel.close()

    def __enter__(self) -> ReloadingChannel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class ChannelOpener:
    """Opens client channels: plaintext (``tls`` None) or TLS that follows certificate files.

    The one place callers get channels from, so that plaintext mode is exactly
    ``grpc.insecure_channel`` as before.
    """

    def __init__(self, tls: ClientTls | None = None) -> None:
        self.tls = tls

    @property
    def secure(self) -> bool:
        return self.tls is not None

    @property
    def presents_certificate(self) -> bool:
        """Whether TLS channels present a client certificate (what mutual TLS needs)."""
        return self.tls is not None and self.tls.files.cert_file is not None

    def open(self, target: str, options: ChannelOptions = ()) -> grpc.Channel:
        if self.tls is None:
            return grpc.insecure_channel(target, options=list(options))
        return ReloadingChannel(target, self.tls, options)


PLAINTEXT = ChannelOpener()


def server_tls(
    cert_file: Path | str | None,
    key_file: Path | str | None,
    ca_file: Path | str | None = None,
    *,
    client_auth_required: bool = False,
) -> ServerTls | None:
    """``ServerTls`` when a certificate is configured, else None (plaintext)."""
    if cert_file is None and key_file is None:
        if client_auth_required:
            raise TlsConfigError("client authentication needs TLS (a certificate and key file)")
        return None
    files = TlsFiles(as_path(cert_file), as_path(key_file), as_path(ca_file))
    return ServerTls(files, client_auth_required=client_auth_required)


def client_tls(
    ca_file: Path | str | None,
    cert_file: Path | str | None = None,
    key_file: Path | str | None = None,
    *,
    server_name_override: str | None = None,
) -> ClientTls:
    return ClientTls(
        TlsFiles(as_path(cert_file), as_path(key_file), as_path(ca_file)),
        server_name_override=server_name_override,
    )


def as_path(value: Path | str | None) -> Path | None:
    return None if value is None or value == "" else Path(value)


def add_port(server: grpc.Server, address: str, tls: ServerTls | None) -> int:
    """Bind ``address`` (plaintext or TLS); return the port, 0 when it could not bind."""
    if tls is None:
        return server.add_insecure_port(address)
    return server.add_secure_port(address, tls.credentials())


class ListenerBindError(OSError):
    """A gRPC listener could not bind its address (a port in use, an address not on this
    host): a start failure that a restart may mend once the port is free, unlike the
    configuration errors, which are plain ``OSError``s at start."""


def bind_failure_reason(address: str) -> str:
    """Why ``address`` cannot be bound, found by binding a plain socket to it: gRPC's own
    error says only "Failed to bind" and logs the reason on a line of its own."""
    try:
        parsed = parse_host_port(address)
    except ValueError as exc:
        return str(exc)
    host = parsed.host or None  # "" binds every interface
    try:
        infos = socket.getaddrinfo(
            host, parsed.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (socket.gaierror, UnicodeError) as exc:  # UnicodeError: a label over 63 bytes
        reason = exc.strerror if isinstance(exc, socket.gaierror) else str(exc)
        return f"cannot resolve {host!r}: {reason or exc}"
    for family, kind, proto, _, sockaddr in infos:
        try:
            with socket.socket(family, kind, proto) as probe:  # IPv6 may be off on the host
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC's
                probe.bind(sockaddr)
        except OSError as exc:
            return exc.strerror or str(exc)
    return "gRPC refused it (GRPC_VERBOSITY=debug shows why)"


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """One process's TLS files, used both ways (as Kafka's single keystore and truststore):
    its server presents ``cert_file`` and verifies clients against ``ca_file`` when
    ``client_auth_required``; its client channels trust ``ca_file`` and present ``cert_file``."""

    cert_file: Path | None = None
    key_file: Path | None = None
    ca_file: Path | None = None
    client_auth_required: bool = False
    server_name_override: str | None = None

    def server(self) -> ServerTls | None:
        return server_tls(
            self.cert_file,
            self.key_file,
            self.ca_file,
            client_auth_required=self.client_auth_required,
        )

    def client(self) -> ClientTls:
        return client_tls(
            self.ca_file,
            self.cert_file,
            self.key_file,
            server_name_override=self.server_name_override,
        )

    def opener(self) -> ChannelOpener:
        return ChannelOpener(self.client())
