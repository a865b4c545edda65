"""The local runs: ``zk-controller stack`` (``make run``) and ``zk-controller run`` with its
embedded ZooKeeper (``make run-controller``), started as a user starts them.

``stack``: a whole local cluster, and its stop.

The stack is run as a user runs it: its own embedded ZooKeeper, the controller, three
reference brokers and the demo topic, then a terminal's Ctrl-C (SIGINT to the foreground
process group). Everything must stop, in order: brokers while the controller can still move
their leaderships, then the controller, then ZooKeeper.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from controller.zk.server_probes import consecutive_free_ports, free_ports
from tests.support import CLI, kazoo, process_alive, wait_until

BROKERS = 3
PARTITIONS = 6


def _all_led(connect: str) -> Callable[[], bool]:
    def check() -> bool:
        client = kazoo(connect)
        try:
            base = "/brokers/topics/demo/partitions"
            states = [
                json.loads(client.get(f"{base}/{p}/state")[0]) for p in client.get_children(base)
            ]
        finally:
            client.stop()
            client.close()
        return len(states) == PARTITIONS and all(s["leader"] >= 0 for s in states)

    return check


@contextlib.contextmanager
def running_stack(
    tmp_path: Path, brokers: int, *extra: str, sigint_ignored: bool = False
) -> Iterator[tuple[subprocess.Popen[bytes], Path, int]]:
    """``zk-controller stack`` in its own foreground group, as in a terminal, once its guide
    is printed: (process, its output file, its ZooKeeper port). Killed if still running.
    ``sigint_ignored``: started as a script's background job is (SIGINT inherited ignored)."""
    zk_port, metrics_port, grpc_port = free_ports(3)
    output = tmp_path / "stack.out"
    env = {k: v for k, v in os.environ.items() if k != "ZK_CONNECT"}
    command = [
        *CLI, "stack", "--zookeeper-port", str(zk_port),
        "--metrics-listen", f"127.0.0.1:{metrics_port}", "--grpc-listen", f"127.0.0.1:{grpc_port}",
        "--broker-base-port", str(consecutive_free_ports(brokers)), "--brokers", str(brokers),
        "--var-dir", str(tmp_path / "var"), *extra,
    ]  # fmt: skip
    with output.open("wb") as out:
        stack = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
            if sigint_ignored else None,
        )  # fmt: skip
    try:
        wait_until(
            lambda: "the cluster is up" in output.read_text(), timeout=120, what="the stack's guide"
        )
        yield stack, output, zk_port
    finally:
        if stack.poll() is None:
            os.killpg(stack.pid, signal.SIGKILL)
            stack.wait()


def test_stack_runs_a_cluster_and_ctrl_c_stops_it_in_order(
    zk_local_install: Path, tmp_path: Path
) -> None:
    var_dir = tmp_path / "var"
    with running_stack(tmp_path, BROKERS, "--partitions", str(PARTITIONS)) as (
        stack, output, zk_port,
    ):  # fmt: skip
        wait_until(_all_led(f"127.0.0.1:{zk_port}"), timeout=60, what="demo topic led")
        broker_pids = [int(p) for p in re.findall(r"broker-\d+ \(pid (\d+)\)", output.read_text())]
        assert len(broker_pids) == BROKERS

        os.killpg(stack.pid, signal.SIGINT)  # Ctrl-C
        returncode = stack.wait(120)

    text = output.read_text()
    assert returncode == 0, text[-3000:]
    assert "did not stop" not in text, text[-3000:]
    order = [m.group(1) for m in re.finditer(r"stack: stopping (\S+)", text)][1:]  # 0: "brokers,"
    assert order == ["broker-3", "broker-2", "broker-1", "controller-0", "ZooKeeper"], order
    assert text.rstrip().endswith("stack: stopped"), text[-2000:]
    # The first two brokers to go had live peers: the controller moved their leaderships.
    for broker_id in (3, 2):
        log = (var_dir / "logs" / f"broker-{broker_id}.log").read_text()
        assert '"controlled shutdown succeeded"' in log, log[-2000:]
    for pid in broker_pids:
        assert not process_alive(pid), f"broker pid {pid} still running"
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", zk_port), timeout=1).close()


def test_kill_int_stops_a_stack_started_in_the_background(
    zk_local_install: Path, tmp_path: Path
) -> None:
    """A script's background job inherits SIGINT ignored (no KeyboardInterrupt then): the
    stack's own SIGINT handler still stops it, in order, as SIGTERM does."""
    with running_stack(tmp_path, 1, "--topic", "", sigint_ignored=True) as (stack, output, _):
        os.kill(stack.pid, signal.SIGINT)  # `kill -INT <pid>`: the stack alone
        returncode = stack.wait(60)
    text = output.read_text()
    assert returncode == 0, text[-3000:]
    order = [m.group(1) for m in re.finditer(r"stack: stopping (\S+)", text)][1:]
    assert order == ["broker-1", "controller-0", "ZooKeeper"], text[-3000:]
    assert text.rstrip().endswith("stack: stopped"), text[-2000:]


def _children(pid: int) -> dict[int, str]:
    """pid -> command line of ``pid``'s child processes (from /proc)."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                cmdline = (entry / "cmdline").read_bytes()
                out[int(entry.name)] = cmdline.replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
    return out


def test_stack_fails_when_its_controller_dies(zk_local_install: Path, tmp_path: Path) -> None:
    """kill -9 of the stack's controller is not a requested stop: the stack says so, stops
    the rest and exits 1 (it used to wait and exit 0)."""
    with running_stack(tmp_path, 1, "--topic", "") as (stack, output, _):
        children = _children(stack.pid)
        (controller,) = [pid for pid, cmd in children.items() if " run " in f"{cmd} "]
        os.kill(controller, signal.SIGKILL)
        returncode = stack.wait(120)
    text = output.read_text()
    assert returncode == 1, text[-3000:]
    assert "stack: controller-0 exited with code -9" in text, text[-3000:]
    assert text.rstrip().endswith("stack: stopped"), text[-2000:]
    for pid in children:
        assert not process_alive(pid), f"pid {pid} still running"


def test_run_without_zookeeper_starts_an_embedded_one_in_a_relative_var_dir(
    zk_local_install: Path, tmp_path: Path
) -> None:
    """``make run-controller`` with no ZK_CONNECT: the default data dir is ``var/zookeeper``,
    relative to where it runs (the JVM once resolved it against its own work dir and exited
    with "var/zookeeper/zoo.cfg file is missing")."""
    zk_port, metrics_port, grpc_port = free_ports(3)
    env = {k: v for k, v in os.environ.items() if k != "ZK_CONNECT"}
    output = tmp_path / "run.out"
    command = [
        *CLI, "run", "--controller-id", "0", "--embedded-zookeeper",
        "--embedded-zookeeper-port", str(zk_port),
        "--metrics-listen", f"127.0.0.1:{metrics_port}", "--grpc-listen", f"127.0.0.1:{grpc_port}",
    ]  # fmt: skip
    with output.open("wb") as out:
        daemon = subprocess.Popen(
            command, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )  # fmt: skip
    try:
        def controller_znode() -> dict[str, object] | None:
            if daemon.poll() is not None:  # pytest.fail is not an Exception: wait_until stops
                pytest.fail(f"zk-controller run exited {daemon.returncode}:\n"
                            + output.read_text()[-3000:])
            client = kazoo(f"127.0.0.1:{zk_port}")
            try:
                data, _ = client.get("/controller")
            finally:
                client.stop()
                client.close()
            return json.loads(data)

        znode = wait_until(controller_znode, timeout=90, what="controller 0 elected")
        assert znode["brokerid"] == 0
        assert (tmp_path / "var" / "zookeeper" / "zoo.cfg").is_file()
        daemon.send_signal(signal.SIGTERM)
        returncode = daemon.wait(60)
    finally:
        if daemon.poll() is None:
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait()
    assert returncode == 0, output.read_text()[-3000:]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", zk_port), timeout=1).close()


def test_a_stack_killed_outright_takes_its_children_with_it(
    zk_local_install: Path, tmp_path: Path
) -> None:
    """kill -9 of the stack itself: its controller and brokers get SIGTERM (a death signal)
    and stop, instead of holding the ports and registrations the next run needs."""
    with running_stack(tmp_path, 1, "--topic", "") as (stack, _, _):
        children = _children(stack.pid)
        assert len(children) >= 2  # the controller and the broker (and ZooKeeper's JVM)
        os.kill(stack.pid, signal.SIGKILL)
        stack.wait(10)
        wait_until(
            lambda: not any(process_alive(pid) for pid in children),
            timeout=90,
            what="the stack's children gone",
        )


def test_the_stack_reports_a_broker_that_dies_and_keeps_running(
    zk_local_install: Path, tmp_path: Path
) -> None:
    with running_stack(tmp_path, 2, "--topic", "") as (stack, output, _):
        pids = [int(p) for p in re.findall(r"broker-\d+ \(pid (\d+)\)", output.read_text())]
        os.kill(pids[0], signal.SIGKILL)
        wait_until(
            lambda: "stack: broker-1 exited with code -9" in output.read_text(),
            what="the broker's death reported",
        )
        assert stack.poll() is None  # killing a broker is part of the demo: the stack stays
        os.killpg(stack.pid, signal.SIGINT)
        assert stack.wait(120) == 0, output.read_text()[-3000:]


def _on_a_taken_port(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run the CLI with ``args`` + a port something already listens on (``{port}`` in
    ``args`` is replaced by it); the result and the port."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k != "ZK_CONNECT"}
        done = subprocess.run(
            [*CLI, *(a.replace("{port}", str(port)) for a in args)],
            capture_output=True, text=True, env=env, cwd=cwd, timeout=60,
        )  # fmt: skip
    return done, port


def _refused_in_one_line(done: subprocess.CompletedProcess[str], prefix: str, port: int) -> None:
    assert done.returncode == 1, done
    assert done.stderr.strip().splitlines() == [
        f"{prefix}cannot start the embedded ZooKeeper: port {port} on 127.0.0.1 is already in "
        "use (another ZooKeeper?); stop it or choose another port"
    ], done.stderr


def test_a_zookeeper_port_in_use_is_one_line(zk_local_install: Path, tmp_path: Path) -> None:
    done, port = _on_a_taken_port(
        "stack", "--zookeeper-port", "{port}", "--var-dir", str(tmp_path / "var"), cwd=tmp_path
    )
    _refused_in_one_line(done, "stack: ", port)


def test_a_registration_left_by_an_earlier_session_is_waited_out(
    zk_connect: str, tmp_path: Path
) -> None:
    """Broker 1's id is still held by a session of an earlier run (a crash): the stack must
    not count that registration as its broker's, and starts broker 1 again once it is gone."""
    from controller.core.model import EndPoint
    from controller.zk import codecs

    holder = kazoo(zk_connect)
    stale = codecs.BrokerRegistration(1, (EndPoint("PLAINTEXT", "gone", 1),), None, 1)
    holder.create("/brokers/ids/1", codecs.encode_broker_registration(stale),
                  ephemeral=True, makepath=True)  # fmt: skip
    release = threading.Timer(4.0, lambda: (holder.stop(), holder.close()))
    release.start()
    try:
        with running_stack(tmp_path, 1, "--topic", "", "--zookeeper", zk_connect) as (
            stack, output, _,
        ):  # fmt: skip
            assert "still registered by an earlier session" in output.read_text()
            client = kazoo(zk_connect)
            try:
                data, _ = client.get("/brokers/ids/1")
            finally:
                client.stop()
                client.close()
            assert codecs.decode_broker_registration(1, data).timestamp_ms > 1
            os.killpg(stack.pid, signal.SIGINT)
            assert stack.wait(120) == 0, output.read_text()[-3000:]
    finally:
        release.cancel()
        with contextlib.suppress(Exception):
            holder.stop()
            holder.close()


def test_run_with_an_embedded_zookeeper_on_a_taken_port_is_one_line(
    zk_local_install: Path, tmp_path: Path
) -> None:
    done, port = _on_a_taken_port(
        "run", "--controller-id", "0", "--embedded-zookeeper",
        "--embedded-zookeeper-port", "{port}", cwd=tmp_path,
    )  # fmt: skip
    _refused_in_one_line(done, "", port)
