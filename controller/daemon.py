"""The controller daemon: wires the components into one process and runs it.

Start order: logging, state-change log, metrics + HTTP, ZooKeeper session, broker channel,
controller, gRPC server. Stop order (SIGTERM/SIGINT): resign (deleting our own ``/controller``
so a standby takes over at once), stop the event thread, stop gRPC, close the ZooKeeper session
(which removes any ephemeral left), stop HTTP, close the logs. Signal handlers only set flags;
the main thread does the work. The start runs in a thread of its own, so that the main thread
hears a stop while it runs and can abandon it (``run_forever``).

SIGHUP (``systemctl reload``, logrotate's postrotate): reopen the state-change log, re-read the
configuration from the same sources (file, environment, flags) and apply the settings marked
dynamic (``log.level``, the automatic rebalance settings, ``unclean.leader.election.enable``).
Changed static settings are reported and keep their running values until a restart; an invalid
new configuration is reported and the running one is kept whole.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import gc
import os
import signal
import socket
import threading
import time
import types
from collections.abc import Callable

import structlog

from controller import heap
from controller.channel.manager import ControllerChannelManager
from controller.config import (
    ConfigError,
    ControllerConfig,
    HostPort,
    changed_settings,
)
from controller.core.controller import Controller
from controller.core.events import Resign, ResignPreempted
from controller.http_server import ControllerHttpServer, Readiness, start_http_server
from controller.logs import configure_logging, set_level
from controller.metrics import ControllerMetrics
from controller.rpc.admin_service import AdminServicer
from controller.rpc.server import (
    ADMIN_SERVICE,
    CONTROLLER_SERVICE,
    ControllerGrpcServer,
    follow_active_state,
)
from controller.rpc.service import ControllerServicer
from controller.security import authz
from controller.security.acls import CredentialsError, zk_security_from_config
from controller.security.tls import (
    ClientTls,
    ServerTls,
    TlsConfigError,
    TlsFiles,
    as_path,
    client_tls,
    server_tls,
)
from controller.signals import SignalInbox
from controller.state_change_log import StateChangeLog
from controller.zk import endpoints, limits, paths
from controller.zk.chroot import create_chroot_if_necessary
from controller.zk.endpoints import ControllerEndpoint, encode_controller_endpoint
from controller.zk.errors import NodeExistsError
from controller.zk.kazoo_port import KazooPort
from controller.zk.port import EventType, SessionState, WatchEvent

log = structlog.get_logger("controller.daemon")

#: How long a stop requested while starting waits for the abandoned start to return.
ABANDONED_START_WAIT_S = 3.0


class DaemonStartError(Exception):
    """The daemon could not start (ZooKeeper unreachable, a port in use, ...); what opened
    has been closed again."""


class StartAbandoned(Exception):
    """The start stopped at a step boundary: a stop was requested meanwhile."""


class _StartThread:
    """Runs a start in its own (daemon) thread; ``done`` is set when it returned or raised,
    ``error`` is what it raised."""

    def __init__(self, start: Callable[[], None]) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._start = start
        threading.Thread(target=self._run, name="controller-start", daemon=True).start()

    def _run(self) -> None:
        try:
            self._start()
        except BaseException as exc:  # reported by the main thread
            self.error = exc
        finally:
            self.done.set()


class ControllerDaemon:
    def __init__(
        self,
        config: ControllerConfig,
        *,
        configure_logs: bool = True,
        reload_config: Callable[[], ControllerConfig] | None = None,
    ) -> None:
        self.config = config
        # Re-reads the configuration from its original sources on SIGHUP (None: reopen only).
        self._reload_config = reload_config
        if configure_logs:
            configure_logging(config.log_level, config.log_format)
        for name, config_file in config.file_values_overridden.items():
            log.warning(
                "a setting of the config file is overridden by the environment",
                setting=name,
                config_file=config_file,
                source=config.source(name),
            )
        try:
            self.state_change_log = StateChangeLog(
                config.state_change_log_file,
                config.controller_id,
                max_bytes=config.state_change_log_max_bytes,
                backups=config.state_change_log_backups,
            )
        except OSError as exc:
            # Name the settings: "[Errno 20] Not a directory: '/etc/passwd/logs'" alone
            # does not say which file or which setting.
            raise OSError(
                exc.errno,
                f"cannot open the state-change log {config.state_change_log_file} "
                f"(log.dir {config.log_dir}, state.change.log.file): {exc.strerror or exc}",
            ) from exc
        self.metrics = ControllerMetrics(controller_id=config.controller_id)
        # Security (controller.security): all off by default. Bad credentials or TLS files
        # raise here (CredentialsError / TlsConfigError), before anything starts.
        self.zk_security = zk_security_from_config(config)
        limits.configure(config.zookeeper_jute_maxbuffer)  # znode size bounds, process-wide
        self.port = KazooPort(
            config.zookeeper_connect,
            session_timeout=config.zookeeper_session_timeout_ms / 1000,
            # As Kafka's client: an event never gives up on a session that is still alive.
            retry_until_expired=True,
            max_in_flight=config.zookeeper_max_in_flight_requests,
            observer=self.metrics,
            **self.zk_security.port_options(),
        )
        self.metrics.set_session_state_source(lambda: self.port.state.value)
        self.channel = ControllerChannelManager(
            config.controller_id,
            config.broker_listener_name,
            request_timeout_s=config.request_timeout_ms / 1000,
            # 0 (allowed, as in Kafka) means no separate connect bound: the request timeout.
            connect_timeout_s=config.controller_socket_timeout_ms / 1000 or None,
            metrics_hooks=self.metrics,
            tls=_broker_client_tls(config),
        )
        self.controller = Controller(
            config,
            self.port,
            self.channel,
            state_change_log=self.state_change_log,
            metrics=self.metrics,
        )
        self.metrics.watch_unclean_default(lambda: self.controller.unclean_leader_election_default)
        gc.set_threshold(*heap.GC_THRESHOLDS)
        heap.freeze_heap_after_failover(self.controller, self.channel)
        listen = config.grpc_listen
        server_tls = _grpc_server_tls(config)
        if server_tls is not None:
            self.metrics.watch_tls_certificate(lambda: _not_after(server_tls))
        self.grpc = ControllerGrpcServer(
            # gRPC refuses an empty host; ":PORT" means every interface, as for metrics.listen.
            str(listen) if listen.host else f"0.0.0.0:{listen.port}",
            max_workers=config.grpc_max_workers,
            tls=server_tls,
            interceptors=authz.interceptors(
                {
                    ADMIN_SERVICE: authz.parse_principals(config.admin_allowed_principals),
                    CONTROLLER_SERVICE: authz.parse_principals(config.broker_allowed_principals),
                }
            ),
        )
        self.grpc.waiting.on_refused = self.metrics.inc_rpc_requests_refused
        self.state_change_log.on_write_error = self.metrics.inc_state_change_log_write_errors
        self.grpc.add_controller_service(ControllerServicer(self.controller, self.grpc.waiting))
        self.grpc.add_admin_service(AdminServicer(self.controller, self.grpc.waiting))
        self.http: ControllerHttpServer | None = None
        self._stopped = False
        self._endpoint_lost = False

    def readiness(self) -> Readiness:
        # Read once: a resignation clears "active" before the epoch, and an epoch beside
        # active=false contradicts the contract (null on a standby).
        active = self.controller.serving_active
        return Readiness(
            zookeeper_connected=self.port.state is SessionState.CONNECTED,
            active=active,
            controller_id=self.config.controller_id,
            epoch=(self.controller.context.epoch or None) if active else None,
        )

    def start(self) -> None:
        self.http = start_http_server(
            self.config.metrics_listen, self.metrics.registry, self.readiness
        )
        self._create_chroot_if_necessary()
        self._raise_if_abandoned()
        self.port.start(timeout=self.config.zookeeper_connection_timeout_ms / 1000)
        self._raise_if_abandoned()
        follow_active_state(self.grpc, self.controller)
        self.grpc.start()
        self.port.add_session_listener(self._on_session_state)
        self.port.add_session_listener(self.metrics.on_session_state)
        self._register_endpoint()
        self._raise_if_abandoned()
        self.controller.startup()
        log.info(
            "controller started",
            controller_id=self.config.controller_id,
            zookeeper=self.config.zookeeper_connect,
            metrics_url=f"{self.http.url}/metrics",
            grpc=self.grpc.address,
            grpc_tls=self.grpc.tls is not None,
            **self.zk_security.describe(),
        )

    def _raise_if_abandoned(self) -> None:
        # Set by abort_start from the main thread: a start going on would open what the
        # abort just closed.
        if self._stopped:
            raise StartAbandoned("a stop was requested while starting")

    def _create_chroot_if_necessary(self) -> None:
        create_chroot_if_necessary(
            self.config.zookeeper_connect,
            session_timeout_s=self.config.zookeeper_session_timeout_ms / 1000,
            connection_timeout_s=self.config.zookeeper_connection_timeout_ms / 1000,
            port_options=self.zk_security.port_options(),  # the chroot gets Kafka's ACL too
        )

    def endpoint(self) -> ControllerEndpoint:
        grpc_host, _, _ = self.grpc.address.rpartition(":")
        metrics = self.config.metrics_listen
        tls = self.grpc.tls
        client_auth = None
        if tls is not None:
            client_auth = (
                endpoints.CLIENT_AUTH_REQUIRED if tls.client_auth_required
                else endpoints.CLIENT_AUTH_NONE
            )  # fmt: skip
        return ControllerEndpoint(
            self.config.controller_id,
            f"{_advertised(grpc_host)}:{self.grpc.port}",
            _advertised_address(metrics.host, self.http.port if self.http else metrics.port),
            grpc_security_protocol=endpoints.PLAINTEXT if tls is None else endpoints.SSL,
            grpc_client_auth=client_auth,
        )

    def _register_endpoint(self) -> None:
        """Advertise our addresses for admin tools and brokers (ephemeral), and keep them
        advertised: a watch on the node registers them again when it goes.

        A node held by another live session is never taken over. It is our previous
        process's (its session not expired yet: it goes within a session timeout) or a
        second process started with our id by mistake; taking it over would point brokers
        and admin tools at that duplicate, and its exit would leave no address at all (as
        Kafka refuses a broker id in use, the first holder keeps it)."""
        if self._stopped:
            return
        path = paths.controller_endpoint_path(self.config.controller_id)
        data = encode_controller_endpoint(self.endpoint())
        try:
            self.port.ensure_path(paths.CONTROLLER_ENDPOINTS)
            with contextlib.suppress(NodeExistsError):  # whose it is: read below
                self.port.create(path, data, ephemeral=True)
            stat = self.port.exists(path, watch=self._on_endpoint_event)
            if stat is None:  # gone again meanwhile: the watch saw it go
                return
            owner = stat.ephemeral_owner
            if owner != self.port.session_id:
                log.error(
                    "the controller endpoint znode is held by another ZooKeeper session: "
                    "another controller with this controller.id is running, or our previous "
                    "process's session has not expired yet; not advertising until it goes",
                    path=path,
                    owner=f"0x{owner:x}",
                    controller_id=self.config.controller_id,
                )
        except Exception as exc:
            log.error("could not advertise the controller endpoint", path=path, error=str(exc))

    def _on_endpoint_event(self, event: WatchEvent) -> None:
        # On ZooKeeper's event thread: register off it. A lost session (NONE) is handled by
        # _on_session_state, once the new session is connected.
        if event.type is EventType.DELETED and not self._stopped:
            threading.Thread(target=self._register_endpoint, daemon=True).start()

    def _on_session_state(self, state: SessionState) -> None:
        # A new session after an expiry: our ephemeral endpoint znode is gone. Re-create it off
        # the ZooKeeper client's thread.
        if state is SessionState.LOST:
            self._endpoint_lost = True
        elif state is SessionState.CONNECTED and self._endpoint_lost:
            self._endpoint_lost = False
            threading.Thread(target=self._register_endpoint, daemon=True).start()

    def stop(self, resign_timeout: float = 10.0) -> None:
        """Resign, then stop everything; bounded well inside a 30 s grace period (10 s for
        the resignation, 5 s more for a busy event thread, then the session is closed)."""
        if self._stopped:
            return
        self._stopped = True
        log.info("stopping controller", controller_id=self.config.controller_id)
        self.controller.election.stop_electing()
        resign = Resign()
        # Ahead of any backlog, as Kafka's shutdown clears its queue: the standby takes over
        # at once, and queued requests are answered NOT_CONTROLLER (their callers retry there).
        self.controller.events.clear_and_put(resign)
        try:
            resign.done.result(resign_timeout)
            resigned = True
        except ResignPreempted:
            resigned = False
            log.warning("resignation dropped: the ZooKeeper session expired before it ran")
        except Exception:
            resigned = False
            log.warning("resignation did not finish in time", timeout_s=resign_timeout)
        if not resigned:
            # The event thread is busy (a long failover) or ZooKeeper does not answer, and
            # /controller is still ours: closing the session now frees it for a standby.
            self.controller.mark_stopping()
            self._close_session()
        self.controller.shutdown(event_thread_timeout=30.0 if resigned else 5.0)
        self.grpc.stop()
        self._close_session()
        if self.http is not None:
            self.http.shutdown()
        self.state_change_log.close()
        log.info("controller stopped", controller_id=self.config.controller_id)

    def _close_session(self) -> None:
        try:
            self.port.stop()
        except Exception:
            log.exception("closing the ZooKeeper session failed")

    def abort_start(self) -> None:
        """Undo a ``start`` that failed part-way (nothing was elected): close what opened."""
        self._stopped = True
        self.controller.shutdown(event_thread_timeout=1.0)
        with contextlib.suppress(Exception):
            self.grpc.stop(grace=0)
        self._close_session()
        if self.http is not None:
            self.http.shutdown()
        self.state_change_log.close()

    def _abandon_start(self, starting: _StartThread) -> None:
        """Abort a start still running in ``starting``: closing the session makes its
        ZooKeeper calls fail, and it stops at its next step. Waits a little for it, then
        closes again what it opened meanwhile; one that does not return is left behind
        (its thread does not keep the process alive)."""
        self.abort_start()
        deadline = time.monotonic() + ABANDONED_START_WAIT_S
        while not starting.done.wait(0.2):
            if time.monotonic() >= deadline:
                log.warning(
                    "the abandoned start has not returned; leaving it behind",
                    waited_s=ABANDONED_START_WAIT_S,
                )
                return
            # Again: a session the start opened after the abort had closed the previous one
            # (it was between its check and the connect).
            self._close_session()
        self.abort_start()

    # -- foreground run ------------------------------------------------------------------

    def run_forever(self, *, exiting: bool = False) -> None:
        """Run until SIGTERM/SIGINT; SIGHUP reloads (see the module docstring). ``exiting``:
        the process ends when this returns (the CLI), so the signals stay ignored rather
        than their default handlers put back: a second SIGTERM or a logrotate SIGHUP in the
        interpreter's last moments would end it with 143 or 129 instead of its exit code."""
        inbox = SignalInbox((signal.SIGTERM, signal.SIGINT, signal.SIGHUP))
        # The start runs in a thread of its own while this one keeps reading signals, so a
        # stop requested while starting can abandon it: a ZooKeeper that vanished mid-start
        # (the local stack killed outright) made kazoo retry for ever, and the process
        # outlived everything around it. (An exception raised into the main thread instead,
        # as SIGINT raises KeyboardInterrupt, can land inside a lock's bookkeeping and come
        # out as a RuntimeError that a handler swallows, and the start carries on.)
        starting = _StartThread(self.start)
        stop_signal = inbox.wait_for((signal.SIGTERM, signal.SIGINT), until=starting.done)
        if stop_signal is not None:
            log.info(
                "stop requested while starting; abandoning the start",
                signal=signal.Signals(stop_signal).name,
            )
            self._abandon_start(starting)
            inbox.restore(ignore=exiting)
            return
        if starting.error is not None:
            exc = starting.error
            inbox.restore(ignore=exiting)
            log.error("the controller could not start", error=str(exc) or type(exc).__name__)
            self.abort_start()
            raise DaemonStartError(str(exc) or type(exc).__name__) from exc
        try:
            while inbox.wait() == signal.SIGHUP:
                self._on_reload()
        finally:
            # Signals arriving while stopping are only recorded (the JVM ignores them during
            # its shutdown hooks too): a logrotate SIGHUP or a second SIGTERM must not kill
            # the process before /controller is deleted and the session closed.
            try:
                self.stop()
            finally:
                inbox.restore(ignore=exiting)

    def _on_reload(self) -> None:
        try:
            self.state_change_log.reopen()
            log.info("reopened the state-change log", path=str(self.state_change_log.path))
        except OSError as exc:
            # A missing or read-only log dir after logrotate must not stop the controller:
            # it keeps writing to the file it has open.
            log.error(
                "cannot reopen the state-change log; still writing to the open file",
                path=str(self.state_change_log.path),
                error=str(exc),
            )
        if self._reload_config is not None:
            try:
                new = self._reload_config()
            except ConfigError as exc:
                log.error(
                    "configuration reload failed; keeping the running configuration",
                    problems=[str(p) for p in exc.problems],
                )
            except Exception as exc:
                log.error("configuration reload failed", error=str(exc), exc_info=True)
            else:
                self.apply_config(new)
        set_level(self.config.log_level)

    def apply_config(self, new: ControllerConfig) -> tuple[str, ...]:
        """Apply the dynamic settings of ``new``; return the names of those that changed."""
        from controller.handlers.elections import on_config_change

        old = self.config
        changed = changed_settings(old, new)
        static = [s.name for s in changed if not s.dynamic]
        dynamic = [s for s in changed if s.dynamic]
        if static:
            log.warning(
                "changed settings need a restart; they keep their running values",
                settings=static,
            )
        if not dynamic:
            log.info("configuration reloaded; no dynamic setting changed")
            return ()
        sources = {**old.sources, **{s.name: new.source(s.name) for s in dynamic}}
        merged = dataclasses.replace(
            old,
            **{s.attr: getattr(new, s.attr) for s in dynamic},
            sources=types.MappingProxyType(sources),
        )
        # One reference swap each: the event thread reads either the old or the new config.
        self.config = merged
        self.controller.config = merged
        set_level(merged.log_level)
        on_config_change(self.controller, old, merged)
        log.info(
            "configuration reloaded",
            changed={s.name: getattr(merged, s.attr) for s in dynamic},
        )
        return tuple(s.name for s in dynamic)


def check_state_change_log_path(config: ControllerConfig) -> None:
    """Fail as the daemon's start would when the state-change log cannot be opened where
    configured, without creating anything: ``run --validate-config`` reports it. Raises
    OSError naming the file and the settings."""
    path = config.state_change_log_file
    problem: str | None = None
    if path.exists() and not path.is_file():
        problem = "it exists and is not a regular file"
    else:
        ancestor = path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            problem = f"{ancestor} is not a directory"
        elif not os.access(ancestor, os.W_OK | os.X_OK):
            problem = f"{ancestor} is not writable by this user"
        elif path.exists() and not os.access(path, os.W_OK):
            problem = "it is not writable by this user"
    if problem is not None:
        raise OSError(
            f"cannot open the state-change log {path} (log.dir {config.log_dir}, "
            f"state.change.log.file): {problem}"
        )


def security_file_problems(config: ControllerConfig) -> list[str]:
    """Read every credentials, certificate and key file the daemon would read at start, and
    say what is wrong with each (``run --validate-config`` lists them all at once)."""
    problems: list[str] = []
    try:
        zk_security_from_config(config)
    except CredentialsError as exc:
        problems.append(str(exc))
    try:
        files = TlsFiles(
            as_path(config.grpc_tls_cert_file),
            as_path(config.grpc_tls_key_file),
            as_path(config.grpc_tls_ca_file),
        )
    except TlsConfigError as exc:  # a certificate without its key, or the reverse
        return [*problems, str(exc)]
    if unreadable := files.read_problems():
        return [*problems, *unreadable]  # the checks below would name only the first again
    try:
        server = _grpc_server_tls(config)
    except TlsConfigError as exc:
        problems.append(str(exc))
        return problems  # the client side reads the same certificate and key
    try:
        _broker_client_tls(config)
    except TlsConfigError as exc:
        problems.append(str(exc))
    validity = server.validity if server is not None else None
    if validity is not None and validity.expired(datetime.datetime.now(datetime.UTC)):
        # The daemon would start (and log it); a check before a deployment should fail.
        problems.append(
            f"the TLS certificate {config.grpc_tls_cert_file} (grpc.tls.cert.file) expired "
            f"on {validity.not_after.isoformat()}"
        )
    return problems


def _not_after(tls: ServerTls) -> float | None:
    validity = tls.validity
    return None if validity is None else validity.not_after.timestamp()


def _grpc_server_tls(config: ControllerConfig) -> ServerTls | None:
    return server_tls(
        config.grpc_tls_cert_file,
        config.grpc_tls_key_file,
        config.grpc_tls_ca_file,
        client_auth_required=config.grpc_tls_client_auth == "required",
    )


def _broker_client_tls(config: ControllerConfig) -> ClientTls | None:
    """The controller's side of TLS to brokers: trust the CA file, present our certificate
    (Kafka's controller uses its one keystore both ways). None: nothing configured."""
    if config.grpc_tls_ca_file is None and config.grpc_tls_cert_file is None:
        return None
    return client_tls(config.grpc_tls_ca_file, config.grpc_tls_cert_file, config.grpc_tls_key_file)


def _advertised(host: str) -> str:
    """A host clients can dial: wildcard binds advertise this machine's name."""
    return socket.getfqdn() if host in ("", "0.0.0.0", "::", "[::]") else host


def _advertised_address(host: str, port: int) -> str:
    """``host:port`` clients can dial, an IPv6 host in brackets (as gRPC's own address is:
    readers split host from port at the last colon)."""
    return str(HostPort(_advertised(host), port))
