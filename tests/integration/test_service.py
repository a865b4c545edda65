"""Running as a service: SIGHUP reloads the dynamic configuration and reopens the state-change
log (log rotation); SIGTERM stops with exit code 0. A real ``zk-controller run`` process on a
real ZooKeeper."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from controller.zk.server import free_port
from tests.support import CLI, REPO, ControllerProcess, kazoo, wait_until

pytestmark = pytest.mark.zookeeper


def _lines(proc: ControllerProcess) -> list[dict[str, Any]]:
    out = []
    for line in proc.output().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _logged(proc: ControllerProcess, event: str) -> list[dict[str, Any]]:
    return [line for line in _lines(proc) if line.get("event") == event]


def test_sighup_reloads_dynamic_settings_and_reopens_the_state_change_log(
    zk_connect: str, tmp_path: Path
) -> None:
    config = tmp_path / "controller.toml"
    config.write_text('"log.level" = "INFO"\n"unclean.leader.election.enable" = false\n')
    proc = ControllerProcess(zk_connect, 1, tmp_path, extra=["--config", str(config)])
    try:
        proc.wait_serving()
        wait_until(lambda: proc.active() == 1, what="controller 1 active")
        scl = proc.state_change_log
        wait_until(scl.exists, what="state-change log created")

        # logrotate moves the file away, then signals.
        rotated = scl.with_name("state-change.log.1")
        scl.rename(rotated)
        config.write_text(
            '"log.level" = "DEBUG"\n"unclean.leader.election.enable" = true\n'
            '"request.timeout.ms" = 1234\n'  # static: reported, not applied
        )
        proc.signal(signal.SIGHUP)
        reloaded = wait_until(
            lambda: _logged(proc, "configuration reloaded"), what="reload logged"
        )[0]
        assert reloaded["changed"] == {
            "log.level": "DEBUG",
            "unclean.leader.election.enable": True,
        }
        restart = _logged(proc, "changed settings need a restart; they keep their running values")
        assert restart and restart[0]["settings"] == ["request.timeout.ms"]
        assert scl.exists()  # reopened at the original path
        # The cluster-wide unclean setting turning on queues Kafka's UncleanLeaderElectionEnable.
        wait_until(
            lambda: any(
                line.get("controller_event") == "UncleanLeaderElectionEnable"
                for line in _logged(proc, "processed event")
            ),
            what="UncleanLeaderElectionEnable processed",
        )
        # DEBUG is now on: debug lines appear (HTTP access lines of our own scrapes).
        proc.metrics()
        wait_until(
            lambda: any(line.get("level") == "debug" for line in _lines(proc)),
            what="a debug line after the reload",
        )

        # An invalid file is refused whole; the process keeps running with what it had.
        config.write_text('"log.level" = "LOUD"\n')
        proc.signal(signal.SIGHUP)
        failed = wait_until(
            lambda: _logged(proc, "configuration reload failed; keeping the running configuration"),
            what="failed reload logged",
        )[0]
        assert any("log.level" in problem for problem in failed["problems"])
        assert proc.active() == 1
        assert proc.proc.poll() is None
    finally:
        code = proc.terminate()
    assert code == 0
    assert _logged(proc, "controller stopped")


def test_first_controller_creates_a_missing_chroot(zk_connect: str, tmp_path: Path) -> None:
    # Kafka's createChrootIfNecessary: a fresh cluster's chroot does not exist yet.
    connect = f"{zk_connect}/cluster-a"
    proc = ControllerProcess(connect, 1, tmp_path)
    try:
        proc.wait_serving()
        wait_until(lambda: proc.active() == 1, what="controller 1 active under the new chroot")
        client = kazoo(zk_connect)
        try:
            assert client.exists("/cluster-a/controller") is not None
            assert client.exists("/cluster-a/zk-controller/controllers/1") is not None
        finally:
            client.stop()
            client.close()
    finally:
        assert proc.terminate() == 0


def _run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "run", "--controller-id", "0", "--log-dir", str(tmp_path),
         "--grpc-listen", f"127.0.0.1:{free_port()}", *args],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip


def _run_with_port_in_use(
    listen_flag: str, zk_connect: str, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], int]:
    """``run`` told to listen (``listen_flag``) on a port another socket holds."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        busy = holder.getsockname()[1]
        done = _run("--zookeeper", zk_connect, listen_flag, f"127.0.0.1:{busy}",
                    tmp_path=tmp_path)  # fmt: skip
    return done, busy


def test_a_start_that_fails_is_one_clear_line_and_exit_1_or_2(
    zk_connect: str, tmp_path: Path
) -> None:
    """ZooKeeper unreachable, or a port in use: one line naming the problem, no traceback,
    exit 1, nothing left running."""
    unreachable = f"127.0.0.1:{free_port()}"
    done = _run(
        "--zookeeper", unreachable, "--zookeeper-connection-timeout-ms", "1000",
        "--metrics-listen", f"127.0.0.1:{free_port()}", tmp_path=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done
    assert "zk-controller run: cannot start:" in done.stderr
    assert unreachable in done.stderr  # which ensemble could not be reached
    assert "Traceback" not in done.stderr
    done, _ = _run_with_port_in_use("--metrics-listen", zk_connect, tmp_path)
    assert done.returncode == 1, done
    assert "zk-controller run: cannot start:" in done.stderr and "Traceback" not in done.stderr
    # The gRPC port in use: exit 1 too (it was 2, which systemd does not restart), one line.
    done, busy = _run_with_port_in_use("--grpc-listen", zk_connect, tmp_path)
    assert done.returncode == 1, done
    assert done.stderr.strip().splitlines() == [
        f"zk-controller run: cannot start: cannot bind the gRPC listener to 127.0.0.1:{busy}: "
        "Address already in use"
    ], done.stderr
    # A log.dir that cannot be a directory (its parent is a file): the state-change log.
    (tmp_path / "afile").write_text("")
    done = subprocess.run(
        [*CLI, "run", "--controller-id", "0", "--log-dir", str(tmp_path / "afile" / "logs"),
         "--zookeeper", zk_connect, "--grpc-listen", f"127.0.0.1:{free_port()}",
         "--metrics-listen", f"127.0.0.1:{free_port()}"],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    # A configuration error, which a restart would not mend: exit 2 (it was 1, which systemd
    # retries every 5 s for ever).
    assert done.returncode == 2, done
    assert "zk-controller run: cannot start:" in done.stderr and "Traceback" not in done.stderr
    assert "afile" in done.stderr
    # ... naming what it is and which settings decide where it goes.
    assert "cannot open the state-change log" in done.stderr and "log.dir" in done.stderr
    # run --validate-config finds it first, creating nothing.
    (tmp_path / "odd" / "state-change.log").mkdir(parents=True)
    for log_dir, problem in ((tmp_path / "afile" / "logs", "is not a directory"),
                             (tmp_path / "odd", "not a regular file")):  # fmt: skip
        checked = subprocess.run(
            [*CLI, "run", "--validate-config", "--controller-id", "0", "--log-dir",
             str(log_dir), "--zookeeper", zk_connect],
            capture_output=True, text=True, cwd=REPO, timeout=60,
        )  # fmt: skip
        assert checked.returncode == 2, checked
        assert checked.stderr.startswith("configuration: cannot open the state-change log")
        assert problem in checked.stderr
    assert not (tmp_path / "afile").is_dir()


def test_a_failed_state_change_log_reopen_does_not_stop_the_controller(
    zk_connect: str, tmp_path: Path
) -> None:
    """SIGHUP after logrotate left the log dir unwritable: logged, the controller runs on."""
    proc = ControllerProcess(zk_connect, 0, tmp_path)
    try:
        wait_until(lambda: proc.active() == 1.0, what="controller active")
        proc.state_change_log.rename(proc.log_dir / "state-change.log.1")
        # A path that cannot be opened for appending (file modes do not stop root).
        (proc.log_dir / "state-change.log").mkdir()
        proc.proc.send_signal(signal.SIGHUP)
        failure = "cannot reopen the state-change log; still writing to the open file"
        wait_until(lambda: _logged(proc, failure), what="the reopen failure logged")
        assert proc.proc.poll() is None and proc.active() == 1.0
    finally:
        proc.close()


def test_stop_with_a_busy_event_thread_frees_controller_without_waiting_for_it(
    zk_connect: str, tmp_path: Path
) -> None:
    """SIGTERM during a long event: the resignation cannot run, so after its timeout the
    session is closed (a standby can take /controller now) instead of holding /controller
    until the event ends; stop() then returns without waiting for it."""
    from controller.config import load_config
    from controller.core.events import Probe
    from controller.daemon import ControllerDaemon

    flags = {
        "controller.id": "0", "zookeeper.connect": zk_connect, "log.dir": str(tmp_path),
        "metrics.listen": "127.0.0.1:0", "grpc.listen": "127.0.0.1:0",
        "zookeeper.session.timeout.ms": "6000",
    }  # fmt: skip
    daemon = ControllerDaemon(load_config(flags=flags, env={}), configure_logs=False)
    daemon.start()
    observer = kazoo(zk_connect)
    release = threading.Event()
    running = threading.Event()
    try:
        wait_until(lambda: daemon.controller.is_active, what="controller active")
        daemon.controller.put(Probe(fn=lambda ctl: (running.set(), release.wait(60))))
        assert running.wait(10)
        stopper = threading.Thread(target=daemon.stop, kwargs={"resign_timeout": 1.0})
        stopper.start()
        wait_until(lambda: observer.exists("/controller") is None, timeout=15,
                   what="/controller freed while the event still runs")  # fmt: skip
        assert not release.is_set()
        stopper.join(30)
        assert not stopper.is_alive()  # stop() did not wait for the 60 s event
    finally:
        release.set()
        observer.stop()
        daemon.stop()


def _advertised(client: KazooClient, controller_id: int) -> tuple[str, int] | None:
    """The gRPC address in a controller's endpoint znode and the session owning it."""
    from controller.zk import paths
    from controller.zk.endpoints import decode_controller_endpoint

    try:
        data, stat = client.get(paths.controller_endpoint_path(controller_id))
    except NoNodeError:
        return None
    return decode_controller_endpoint(controller_id, data).grpc, stat.ephemeralOwner


def test_a_second_controller_with_the_same_id_does_not_take_over_the_endpoint(
    zk_connect: str, tmp_path: Path
) -> None:
    """A second ``run`` with controller 1's id, started by mistake: it used to replace the
    active controller's endpoint znode with its own addresses (brokers and admin tools then
    asked the duplicate, a standby), and its exit deleted it, leaving the cluster with no
    address for its controller. The first holder keeps the node; one deleted by hand comes
    back."""
    from controller.zk import paths

    path = paths.controller_endpoint_path(1)
    client = kazoo(zk_connect)
    first = ControllerProcess(zk_connect, 1, tmp_path / "first")
    second: ControllerProcess | None = None
    try:
        first.wait_serving()
        wait_until(lambda: first.active() == 1, what="controller 1 active")

        def advertised() -> tuple[str, int] | None:
            return _advertised(client, 1)

        wait_until(advertised, what="endpoint advertised")
        ours = advertised()
        assert ours is not None and ours[0].endswith(f":{first.grpc_port}")

        second = ControllerProcess(zk_connect, 1, tmp_path / "second")
        second.wait_serving()
        wait_until(
            lambda: _logged(
                second,
                "the controller endpoint znode is held by another ZooKeeper session: "
                "another controller with this controller.id is running, or our previous "
                "process's session has not expired yet; not advertising until it goes",
            ),
            what="the duplicate reports the endpoint held by another session",
        )
        assert advertised() == ours
        assert second.terminate() == 0
        assert advertised() == ours  # its exit took nothing away
        assert first.active() == 1

        client.delete(path)  # by hand: the active controller advertises itself again
        wait_until(lambda: advertised() is not None, what="endpoint re-created")
        assert advertised() == ours
    finally:
        if second is not None:
            second.close()
        first.terminate()
        first.close()
        client.stop()
        client.close()


def test_a_restarted_controller_advertises_itself_once_its_old_session_expires(
    zk_connect: str, tmp_path: Path
) -> None:
    """kill -9, then a restart within the session timeout: the old session's endpoint node
    stays until ZooKeeper expires it (4 s here); the watch then advertises the new process."""
    client = kazoo(zk_connect)
    old = ControllerProcess(zk_connect, 1, tmp_path / "old")
    new: ControllerProcess | None = None
    try:
        old.wait_serving()
        wait_until(lambda: _advertised(client, 1) is not None, what="endpoint advertised")
        old.kill()
        new = ControllerProcess(zk_connect, 1, tmp_path / "new")
        new.wait_serving()
        port = new.grpc_port
        wait_until(
            lambda: (_advertised(client, 1) or ("", 0))[0].endswith(f":{port}"),
            timeout=30,
            what="the new process advertised",
        )
        wait_until(lambda: new.active() == 1, timeout=30, what="the new process active")
    finally:
        if new is not None:
            new.terminate()
            new.close()
        old.close()
        client.stop()
        client.close()


def test_signals_until_the_very_end_of_a_stop_do_not_change_the_exit_code(
    zk_connect: str, tmp_path: Path
) -> None:
    """SIGTERM, then SIGTERM and SIGHUP again and again until the process is gone (an
    impatient supervisor, a logrotate): the stop ignores them, and so do the last moments
    after it, when the daemon's handlers are gone and the interpreter is exiting (they used
    to end the process with 143 or 129)."""
    import time

    proc = ControllerProcess(zk_connect, 1, tmp_path)
    try:
        proc.wait_serving()
        wait_until(lambda: proc.active() == 1, what="controller 1 active")
        proc.signal(signal.SIGTERM)
        deadline = time.monotonic() + 30
        while proc.proc.poll() is None and time.monotonic() < deadline:
            for sig in (signal.SIGTERM, signal.SIGHUP):
                with contextlib.suppress(ProcessLookupError):
                    proc.signal(sig)
            time.sleep(0.002)
        assert proc.proc.wait(5) == 0, proc.output()[-2000:]
    finally:
        proc.close()
