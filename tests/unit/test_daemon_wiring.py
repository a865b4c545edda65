"""The daemon hands its configuration to the parts that use it (nothing is started here)."""

from __future__ import annotations

import gc
import os
import signal
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from controller import daemon as daemon_module
from controller import heap
from controller.config import load_config
from controller.core.events import Resign, ResignPreempted
from controller.daemon import ControllerDaemon
from controller.rpc.calls import RpcStatus
from controller.zk import paths
from tests.harness import ControllerHarness


@pytest.fixture(autouse=True)
def _keep_gc_thresholds() -> Iterator[None]:
    saved = gc.get_threshold()  # the daemon tunes the collector for its process
    yield
    gc.set_threshold(*saved)


def daemon_flags(tmp_path: Path, **settings: str) -> dict[str, str]:
    return {
        "controller.id": "1",
        "zookeeper.connect": "127.0.0.1:1",
        "log.dir": str(tmp_path),
        # Free ports: the listeners are bound when the daemon is built, and never shared.
        "grpc.listen": "127.0.0.1:0",
        "metrics.listen": "127.0.0.1:0",
        **settings,
    }


def daemon_with(tmp_path: Path, **settings: str) -> ControllerDaemon:
    flags = daemon_flags(tmp_path, **settings)
    return ControllerDaemon(load_config(flags=flags, env={}), configure_logs=False)


def test_zookeeper_pipelining_and_channel_timeouts_come_from_the_configuration(
    tmp_path: Path,
) -> None:
    daemon = daemon_with(
        tmp_path,
        **{
            "zookeeper.max.in.flight.requests": "3",
            "controller.socket.timeout.ms": "1500",
            "request.timeout.ms": "7000",
        },
    )
    assert daemon.port.max_in_flight == 3
    assert daemon.channel.connect_timeout_s == 1.5
    assert daemon.channel.request_timeout_s == 7.0


def test_defaults_are_kafkas_and_a_zero_socket_timeout_means_the_request_timeout(
    tmp_path: Path,
) -> None:
    default = daemon_with(tmp_path)
    assert default.port.max_in_flight == 10
    assert default.channel.connect_timeout_s == 30.0

    zero = daemon_with(
        tmp_path, **{"controller.socket.timeout.ms": "0", "request.timeout.ms": "4000"}
    )
    assert zero.channel.connect_timeout_s == 4.0


def test_grpc_max_workers_sizes_the_servers_waiting_slots(tmp_path: Path) -> None:
    # All but the 8 reserved threads (health checks, NOT_CONTROLLER answers) may wait for the
    # event thread.
    assert daemon_with(tmp_path).grpc.waiting.capacity == 56
    daemon = daemon_with(tmp_path, **{"grpc.max.workers": "20"})
    assert daemon.grpc.waiting.capacity == 12
    # A refusal is counted, so an operator sees the bulkhead trip.
    daemon.grpc.waiting.capacity = 0
    with pytest.raises(RpcStatus):
        daemon.grpc.waiting.acquire("AlterPartition")
    refused = daemon.metrics.registry.get_sample_value(
        "kafka_controller_rpc_requests_refused_total", {"rpc": "AlterPartition"}
    )
    assert refused == 1
    daemon.state_change_log.on_write_error()  # type: ignore[misc]
    errors = "kafka_controller_state_change_log_write_errors_total"
    assert daemon.metrics.registry.get_sample_value(errors) == 1


def test_a_grpc_listen_without_a_host_binds_every_interface(tmp_path: Path) -> None:
    # ":PORT" passed validation (an empty host binds every interface, as metrics.listen
    # does) and then failed: "cannot bind the gRPC listener to :0".
    daemon = daemon_with(tmp_path, **{"grpc.listen": ":0"})
    assert daemon.grpc.port > 0
    assert daemon.grpc.address.startswith("0.0.0.0:")


def test_advertised_addresses_bracket_an_ipv6_host() -> None:
    # The metrics address was advertised as "::1:PORT" (the gRPC one, from gRPC's own
    # address, was bracketed): readers splitting at the last colon got the host wrong.
    advertised = daemon_module._advertised_address
    assert advertised("::1", 9309) == "[::1]:9309"
    assert advertised("fd00::7", 9309) == "[fd00::7]:9309"
    assert advertised("127.0.0.1", 9309) == "127.0.0.1:9309"
    assert advertised("::", 9309) == f"{socket.getfqdn()}:9309"  # a wildcard: our name


def test_a_metrics_listen_that_cannot_bind_names_the_listener(tmp_path: Path) -> None:
    from prometheus_client import CollectorRegistry

    from controller.http_server import start_http_server

    taken = start_http_server(("127.0.0.1", 0), CollectorRegistry())
    try:
        with pytest.raises(OSError, match=rf"metrics listener to 127.0.0.1:{taken.port}: "):
            start_http_server(("127.0.0.1", taken.port), CollectorRegistry())
    finally:
        taken.shutdown()


def test_state_change_log_rotation_comes_from_the_configuration(tmp_path: Path) -> None:
    daemon = daemon_with(
        tmp_path,
        **{"state.change.log.max.bytes": "1", "state.change.log.backups": "3"},
    )
    scl = daemon.state_change_log
    for _ in range(5):
        scl.controller("elected")
        scl.flush()
    scl.close()
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("state-change"))
    assert names == [f"state-change.log{s}" for s in ("", ".1", ".2", ".3")]


def test_a_re_election_within_one_event_does_not_pin_the_previous_terms_garbage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Resigning and winning again in one event (a Reelect) skips the unfreeze that follows an
    # inactive event: the next freeze must not pin cyclic garbage made in the meantime.
    class Cycle:
        def __init__(self) -> None:
            self.me = self

    class NoQueue:
        def total_queue_size(self) -> int:
            return 0

    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)
    h = ControllerHarness(controller_id=5)
    heap.freeze_heap_after_failover(h.controller, NoQueue())  # type: ignore[arg-type]
    try:
        h.register_broker(1)
        h.start()
        assert gc.get_freeze_count() > 0
        garbage = Cycle()
        alive = weakref.ref(garbage)
        del garbage  # unreachable, but only the cyclic collector can free it
        h.admin.delete(paths.CONTROLLER)  # one Reelect event: resign, then win again
        h.drain()
        assert h.controller.is_active and h.ctx.epoch == 2
        gc.collect()
        assert alive() is None
    finally:
        gc.unfreeze()
        h.close()


def _sigterm_child(script: str, *, once: str) -> tuple[int, str, str]:
    """Run ``script`` in a child Python, SIGTERM it once it printed ``once``; its exit code,
    stdout (after that line) and stderr."""
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        # Byte by byte from the pipe: a buffered readline could swallow what the child
        # prints next, and communicate() would never see it.
        first = b""
        while not first.endswith(b"\n"):
            byte = os.read(child.stdout.fileno(), 1)
            assert byte, f"the child exited before printing {once!r}"
            first += byte
        assert first.decode().strip() == once
        time.sleep(1.0)  # a start that printed ``once`` and returns has returned by then
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    return child.returncode, out, err


def _marked(out: str, marks: tuple[str, ...]) -> list[str]:
    """The lines of a child's stdout that are its stub's step marks (not its log lines)."""
    return [line for line in out.splitlines() if line in marks]


_SIGNALS_DURING_STOP_CHILD = """
import os, signal, time
from controller.daemon import ControllerDaemon
from controller.rpc.calls import RpcStatus

class Stub:
    _on_reload = ControllerDaemon._on_reload

    def start(self):
        print("started", flush=True)

    def stop(self):
        # A logrotate SIGHUP and a second SIGTERM arrive while the resignation runs.
        os.kill(os.getpid(), signal.SIGHUP)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.3)  # the handlers run between bytecodes of this thread
        print("stopped", flush=True)

ControllerDaemon.run_forever(Stub())
print("returned", flush=True)
"""


def test_signals_during_stop_do_not_kill_the_graceful_stop() -> None:
    """The JVM ignores SIGTERM/SIGHUP while its shutdown hooks run: ours keeps recording them
    until stop() is done (the default action used to kill the process mid-stop, leaving
    /controller to the session timeout)."""
    returncode, out, err = _sigterm_child(_SIGNALS_DURING_STOP_CHILD, once="started")
    assert returncode == 0, err
    assert out.split() == ["stopped", "returned"]


_STOP_DURING_START_CHILD = """
import threading, time
from controller.daemon import ControllerDaemon
from controller.rpc.calls import RpcStatus

class Stub:
    _abandon_start = ControllerDaemon._abandon_start

    def start(self):
        print("starting", flush=True)
        never = threading.Event()
        try:
            while True:  # a start blocked for ever, deaf to the abort
                never.wait(0.1)
        except Exception:  # as start's own handlers around optional steps do
            print("swallowed", flush=True)
        print("started", flush=True)

    def abort_start(self):
        print("aborted", flush=True)

    def _close_session(self):
        print("closed again", flush=True)

    def stop(self):
        print("stop called", flush=True)

ControllerDaemon.run_forever(Stub())
print("returned", flush=True)
"""


def test_a_stop_signal_during_a_blocked_start_abandons_it() -> None:
    """SIGTERM while start() blocks for ever (the local stack killed outright took its
    ZooKeeper with it mid-start): the start is abandoned and the process exits, instead of
    outliving everything around it. Nothing is raised into the start: an exception raised into
    the main thread (the previous design) could come out of a lock's bookkeeping as a
    RuntimeError that start's ``except Exception`` swallowed, and the start carried on."""
    returncode, out, err = _sigterm_child(_STOP_DURING_START_CHILD, once="starting")
    assert returncode == 0, err
    steps = _marked(out, ("swallowed", "started", "aborted", "stop called", "returned"))
    assert steps == ["aborted", "returned"]
    assert out.count("closed again") >= 5  # the session closed again while waiting
    assert "stop requested while starting" in out
    assert "the abandoned start has not returned" in out


_STOP_DURING_START_ABORTABLE_CHILD = """
import threading
from controller.daemon import ControllerDaemon, StartAbandoned

closed = threading.Event()

class Stub:
    _abandon_start = ControllerDaemon._abandon_start

    def start(self):
        print("starting", flush=True)
        closed.wait()  # a ZooKeeper call, until the abort closes the session
        print("start sees the session closed", flush=True)
        raise StartAbandoned("session closed")

    def abort_start(self):
        print("aborted", flush=True)
        closed.set()

    def _close_session(self):
        pass  # the start may take a moment to see the first close

    def stop(self):
        print("stop called", flush=True)

ControllerDaemon.run_forever(Stub())
print("returned", flush=True)
"""


def test_an_abandoned_start_that_returns_is_cleaned_up_after_it() -> None:
    """The usual case: the abort closes the session, the start's blocked call fails and it
    returns; what it opened meanwhile is closed by a second abort, and stop() (a resignation
    of what never started) is not called."""
    returncode, out, err = _sigterm_child(_STOP_DURING_START_ABORTABLE_CHILD, once="starting")
    assert returncode == 0, err
    steps = _marked(out, ("aborted", "start sees the session closed", "stop called", "returned"))
    assert steps == ["aborted", "start sees the session closed", "aborted", "returned"]
    assert "the abandoned start has not returned" not in out


_RELOAD_DURING_START_CHILD = """
import os, signal
from controller.daemon import ControllerDaemon

class Stub:
    def start(self):
        os.kill(os.getpid(), signal.SIGHUP)  # a logrotate while starting
        print("started", flush=True)

    def _on_reload(self):
        print("reloaded", flush=True)

    def stop(self):
        print("stop called", flush=True)

ControllerDaemon.run_forever(Stub())
print("returned", flush=True)
"""


def test_a_reload_signal_during_the_start_is_kept_for_after_it() -> None:
    """Waiting for a stop while starting must not eat a SIGHUP: it is handled once started."""
    returncode, out, err = _sigterm_child(_RELOAD_DURING_START_CHILD, once="started")
    assert returncode == 0, err
    assert out.splitlines() == ["reloaded", "stop called", "returned"]


def test_a_resign_dropped_by_a_session_expiry_is_not_taken_as_done() -> None:
    """The session expires while stop()'s Resign waits behind a long event: the expiry's
    clear_and_put drops it unprocessed, and stop() must not read that as resigned (it would
    skip closing the session and give the busy event thread 30 s instead of 5)."""
    h = ControllerHarness(controller_id=1)
    h.register_broker(1)
    h.start()
    resign = Resign()
    h.controller.events.clear_and_put(resign)
    h.zk.expire(h.port.inner, reconnect=True)
    with pytest.raises(ResignPreempted):
        resign.done.result(0)


def test_a_stopping_controller_whose_resign_was_dropped_does_not_win_again() -> None:
    """stop() has begun, and a session expiry drops its Resign: the new session's re-election
    must not make the stopping controller active again (a needless extra failover when its
    session is closed a moment later)."""
    h = ControllerHarness(controller_id=1)
    h.register_broker(1)
    h.start()
    assert h.controller.is_active
    h.controller.election.stop_electing()  # what stop() does first
    resign = Resign()
    h.controller.events.clear_and_put(resign)
    h.zk.expire(h.port.inner, reconnect=True)  # drops the Resign; a new session
    h.drain()
    assert resign.done.done() and not h.controller.is_active
    assert h.zk.snapshot().get("/controller") is None  # a standby may take it


class _PreemptingControllerStub:
    """stop()'s view of the controller when a session expiry drops its Resign."""

    def __init__(self) -> None:
        self.calls: list[object] = []
        self.events = self
        self.election = self

    def stop_electing(self) -> None:
        self.calls.append("stop_electing")

    def clear_and_put(self, event: Resign) -> None:
        event.preempt()

    def mark_stopping(self) -> None:
        self.calls.append("mark_stopping")

    def shutdown(self, event_thread_timeout: float) -> None:
        self.calls.append(("shutdown", event_thread_timeout))


def test_stop_treats_a_dropped_resign_as_not_resigned(tmp_path: Path) -> None:
    daemon = daemon_with(tmp_path)
    stub = _PreemptingControllerStub()
    closed: list[str] = []
    daemon.controller = stub  # type: ignore[assignment]
    daemon._close_session = lambda: closed.append("closed")  # type: ignore[method-assign]
    daemon.stop(resign_timeout=5.0)
    assert stub.calls == ["stop_electing", "mark_stopping", ("shutdown", 5.0)]
    assert closed == ["closed", "closed"]  # at once for the standby, and again at the end


def test_a_file_value_the_environment_overrides_is_logged_as_a_warning(tmp_path: Path) -> None:
    config_file = tmp_path / "controller.toml"
    config_file.write_text('"zookeeper.connect" = "file-zk:2181/kafka"\n')
    flags = daemon_flags(tmp_path)
    del flags["zookeeper.connect"]  # a flag would outrank both the file and the environment
    config = load_config(config_file, flags=flags, env={"ZK_CONNECT": "127.0.0.1:1"})
    with capture_logs() as logs:
        daemon = ControllerDaemon(config, configure_logs=False)
    daemon.stop()
    warned = [e for e in logs if e["event"].startswith("a setting of the config file")]
    assert warned == [
        {
            "event": "a setting of the config file is overridden by the environment",
            "log_level": "warning",
            "setting": "zookeeper.connect",
            "config_file": str(config_file),
            "source": "env ZK_CONNECT",
        }
    ]


def test_the_server_certificate_expiry_is_exported_and_follows_rotations(tmp_path: Path) -> None:
    import datetime
    import os

    from controller.security.testing import CertificateAuthority

    gauge = "kafka_controller_tls_certificate_expiry_timestamp_seconds"
    assert daemon_with(tmp_path).metrics.registry.get_sample_value(gauge) is None  # no TLS
    ca = CertificateAuthority("wiring-ca")
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    first = now + datetime.timedelta(days=40)
    cert, key = ca.issue("c", sans=("127.0.0.1",), not_after=first).write(tmp_path / "c")
    daemon = daemon_with(
        tmp_path, **{"grpc.tls.cert.file": str(cert), "grpc.tls.key.file": str(key)}
    )
    assert daemon.metrics.registry.get_sample_value(gauge) == first.timestamp()
    second = now + datetime.timedelta(days=90)
    ca.issue("c", sans=("127.0.0.1",), not_after=second).write(tmp_path / "c")
    for path in (cert, key):  # a visible change even with coarse timestamps
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert daemon.grpc.tls is not None and daemon.grpc.tls.fetch() is not None  # a handshake
    assert daemon.metrics.registry.get_sample_value(gauge) == second.timestamp()


def test_readiness_reports_an_epoch_only_while_active(tmp_path: Path) -> None:
    # A resignation clears the active id before it resets the context's epoch: /readyz read
    # the two separately and reported active=false beside an epoch (null on a standby).
    daemon = daemon_with(tmp_path)
    ctl = daemon.controller
    ctl.context.epoch = 5
    ctl.active_controller_id = 7  # another controller
    ready = daemon.readiness()
    assert (ready.active, ready.epoch) == (False, None)
    ctl.active_controller_id = ctl.controller_id
    ready = daemon.readiness()
    assert (ready.active, ready.epoch) == (True, 5)
