"""``zk-controller stack``: a whole local cluster in the foreground, for trying things out.

It starts an embedded ZooKeeper (unless ``--zookeeper``/``ZK_CONNECT`` points at one), the
controller (its log on this terminal), reference brokers (their logs under ``var/logs``) and a
demo topic, then prints how to look around. Ctrl-C (or SIGTERM, SIGHUP, or a SIGINT sent to
it alone, also when a script started it in the background) stops everything in order: brokers
one at a time (each with a controlled shutdown while the controller is still there to move its
leaderships), then the controller, then ZooKeeper.

Every child runs in its own process group, so a terminal's Ctrl-C (or ``timeout``, or anything
else that signals the whole group) reaches only this process, which does the ordering: had
every process been signalled at once, the brokers would have asked a controller that was
itself stopping, and waited out their controlled-shutdown retries (~40 s). A second Ctrl-C
during the stop kills what is left.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.cli.broker_cmd import EXIT_BROKER_ID_IN_USE as BROKER_ID_IN_USE
from controller.zk.errors import ZkError
from controller.zk.server import LOOPBACK

CLI = [sys.executable, "-m", "controller"]
# Debian's setpriv (util-linux): the child gets SIGTERM when the stack dies, however it dies.
_SETPRIV = shutil.which("setpriv")
_DEATH_SIGNAL = [_SETPRIV, "--pdeathsig", "TERM"] if _SETPRIV else []
# Per process: the last broker's controlled shutdown can find no replica to hand leaderships
# to and retries (3 attempts, 5 s apart, Kafka's defaults) before it goes anyway.
STOP_TIMEOUT_S = 30.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "stack",
        help="run a local cluster: ZooKeeper, the controller, reference brokers, a demo topic",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--zookeeper",
        default=os.environ.get("ZK_CONNECT"),
        help="use this ZooKeeper instead of an embedded one (or ZK_CONNECT)",
    )
    parser.add_argument(
        "--zookeeper-port",
        type=int,
        default=2181,
        help="port of the embedded ZooKeeper (default 2181)",
    )
    parser.add_argument("--brokers", type=int, default=3, help="reference brokers (default 3)")
    parser.add_argument(
        "--broker-base-port",
        type=int,
        default=9101,
        help="broker N listens on this port + N - 1 (default 9101)",
    )
    parser.add_argument("--topic", default="demo", help="demo topic to create ('' for none)")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--replication-factor", type=int, default=3)
    parser.add_argument("--metrics-listen", default=f"{LOOPBACK}:9309")
    parser.add_argument("--grpc-listen", default=f"{LOOPBACK}:9095")
    parser.add_argument("--var-dir", default="var", help="state and logs (default ./var)")
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        default=6000,
        help="ZooKeeper session timeout of the controller and brokers; a killed "
        "broker is noticed after this long (default 6000)",
    )
    parser.set_defaults(func=run)


class _Stack:
    def __init__(self, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.logs = var_dir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.children: list[tuple[str, subprocess.Popen[bytes]]] = []

    def spawn(
        self, name: str, args: list[str], *, to_terminal: bool = False
    ) -> subprocess.Popen[bytes]:
        # Children die with the stack even when it is killed outright (SIGKILL): orphans
        # would hold the ports and ZooKeeper registrations the next run needs.
        command = [*_DEATH_SIGNAL, *CLI, *args]
        if to_terminal:
            proc = subprocess.Popen(command, process_group=0)
        else:
            out = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, process_group=0)
        for i, (known, _) in enumerate(self.children):
            if known == name:  # a respawn replaces its predecessor
                self.children[i] = (name, proc)
                break
        else:
            self.children.append((name, proc))
        return proc

    def brokers(self) -> list[tuple[str, subprocess.Popen[bytes]]]:
        return self.children[1:]

    def stop_all(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Brokers first, the last started first (each deregisters after its controlled
        shutdown), then the controller (it resigns). A second Ctrl-C kills the rest."""
        try:
            if self.children and self.children[0][1].poll() is not None:
                # No controller to move leaderships: the brokers' controlled shutdowns can
                # only retry and give up, so let them do that all at once.
                for _, proc in self.children[1:]:
                    if proc.poll() is None:
                        proc.send_signal(signal.SIGTERM)
            for index, (name, proc) in reversed(list(enumerate(self.children))):
                if proc.poll() is None:
                    # children[0] is the controller; children[1] the last broker to go
                    note = " (no peer left to lead: ~10 s of retries)" if index == 1 else ""
                    print(f"stack: stopping {name}{note}", file=sys.stderr, flush=True)
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.wait(timeout)
                    except subprocess.TimeoutExpired:
                        print(f"stack: {name} did not stop; killing it", file=sys.stderr)
                        proc.kill()
        except KeyboardInterrupt:
            print("stack: interrupted again; killing what is left", file=sys.stderr)
            self.kill_all()

    def kill_all(self) -> None:
        for _, proc in self.children:
            if proc.poll() is None:
                proc.kill()
        for _, proc in self.children:
            proc.wait()


def _wait_for_brokers(
    connect: str,
    stack: _Stack,
    respawn: Callable[[int], None],
    stopping: Callable[[], bool],
    timeout: float = 60.0,
) -> str | None:
    """Wait until each broker the stack started has registered; None, or what went wrong.

    A registration counts only when it was written by this run (its timestamp): one left
    by a previous run's session (a crash, a second Ctrl-C) is still in ZooKeeper until that
    session expires. A broker that finds its id held so exits with code 4; it is started
    again until the stale registration has gone.
    """
    from controller.zk.codecs import decode_broker_registration
    from controller.zk.kazoo_port import KazooPort

    since_ms = int(time.time() * 1000) - 1000
    port = KazooPort(connect, session_timeout=10)
    port.start()
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not stopping():
            fresh: set[int] = set()
            for name, proc in stack.brokers():
                broker_id = int(name.rsplit("-", 1)[1])
                if proc.poll() == BROKER_ID_IN_USE:
                    print(f"stack: {name}'s id is still registered by an earlier session; "
                          "starting it again", file=sys.stderr, flush=True)  # fmt: skip
                    time.sleep(2.0)
                    respawn(broker_id)
                    continue
                if proc.poll() is not None:
                    return f"{name} exited with code {proc.returncode}; see {stack.logs}"
                path = f"/brokers/ids/{broker_id}"
                try:
                    data, _ = port.get(path)
                    if decode_broker_registration(broker_id, data, path).timestamp_ms >= since_ms:
                        fresh.add(broker_id)
                except Exception:  # not registered yet, or unreadable: keep waiting
                    pass
            if len(fresh) == len(stack.brokers()):
                return None
            time.sleep(0.2)
        return None if stopping() else f"brokers did not register; see {stack.logs}"
    finally:
        port.stop()


def _watch(stack: _Stack, embedded: Any, stopping: Callable[[], bool]) -> str | None:
    """Until a stop is asked: None. A broker that exits is reported once (killing one is
    part of the demo); the controller or the embedded ZooKeeper exiting ends the stack."""
    reported: set[str] = set()
    controller = stack.children[0][1]
    while not stopping():
        if controller.poll() is not None:
            return f"controller-0 exited with code {controller.returncode}"
        if embedded is not None and not embedded.running:
            return f"the embedded ZooKeeper exited; see {embedded.log_path}"
        for name, proc in stack.brokers():
            if proc.poll() is not None and name not in reported:
                reported.add(name)
                print(f"stack: {name} exited with code {proc.returncode}; see "
                      f"{stack.logs / (name + '.log')}", file=sys.stderr, flush=True)  # fmt: skip
        time.sleep(0.5)
    return None


def _install_stop_handlers(stop: dict[str, bool]) -> None:
    """SIGTERM, SIGHUP and SIGINT ask for the ordered stop (``stop["now"]``). SIGINT gets an
    explicit handler too: a stack started in the background by a script inherits SIGINT
    ignored, and Python then raises no KeyboardInterrupt, so ``kill -INT`` did nothing. A
    second SIGINT raises KeyboardInterrupt, on which ``stop_all`` kills what is left."""

    def request_stop(signum: int, frame: object) -> None:
        if signum == signal.SIGINT and stop["now"]:
            raise KeyboardInterrupt
        stop["now"] = True

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, request_stop)


def run(args: argparse.Namespace) -> int:
    var_dir = Path(args.var_dir).resolve()
    embedded = None
    connect = args.zookeeper
    if not connect:
        from controller.zk.server import LocalZooKeeper, local_zookeeper_problem

        problem = local_zookeeper_problem()
        if problem:
            print(f"stack: cannot start an embedded ZooKeeper: {problem}", file=sys.stderr)
            return 2
        embedded = LocalZooKeeper(port=args.zookeeper_port, data_dir=var_dir / "zookeeper")
        if (start_problem := embedded.start_problem()) is not None:
            print(f"stack: cannot start the embedded ZooKeeper: {start_problem}", file=sys.stderr)
            return 1
        connect = embedded.hosts
        print(f"stack: embedded ZooKeeper at {connect} (data in {var_dir / 'zookeeper'})")
    stack = _Stack(var_dir)
    stop = {"now": False}
    _install_stop_handlers(stop)
    try:
        stack.spawn("controller-0", [
            "run", "--zookeeper", connect, "--controller-id", "0",
            "--metrics-listen", args.metrics_listen, "--grpc-listen", args.grpc_listen,
            "--log-dir", str(var_dir / "controller-0"),
            "--zookeeper-session-timeout-ms", str(args.session_timeout_ms),
        ], to_terminal=True)  # fmt: skip

        def spawn_broker(broker_id: int) -> None:
            listen = f"{LOOPBACK}:{args.broker_base_port + broker_id - 1}"
            stack.spawn(f"broker-{broker_id}", [
                "broker", "--zookeeper", connect, "--broker-id", str(broker_id),
                "--listen", listen, "--session-timeout-ms", str(args.session_timeout_ms),
            ])  # fmt: skip

        for broker_id in range(1, args.brokers + 1):
            spawn_broker(broker_id)
        try:
            problem = _wait_for_brokers(
                connect, stack, spawn_broker, lambda: bool(stop["now"]),
                timeout=60.0 + args.session_timeout_ms / 1000,  # a stale session may linger
            )  # fmt: skip
        except ZkError as exc:
            problem = f"cannot read the brokers' registrations from ZooKeeper at {connect}: {exc}"
        if stop["now"]:
            return 0
        if problem is not None:
            print(f"stack: {problem}", file=sys.stderr)
            return 1
        if args.topic:
            created = subprocess.run(
                [*CLI, "topics", "create", args.topic, "--zookeeper", connect,
                 "--partitions", str(args.partitions),
                 "--replication-factor", str(min(args.replication_factor, args.brokers)),
                 "--if-not-exists"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            message = (created.stdout + created.stderr).strip()
            if created.returncode != 0:
                print(f"stack: could not create the demo topic: {message}", file=sys.stderr)
        if stop["now"]:
            return 0
        _print_guide(args, connect, var_dir, stack)
        ended = _watch(stack, embedded, lambda: bool(stop["now"]))
        if ended is not None:
            # Not a requested stop: say what died, and fail.
            print(f"stack: {ended}", file=sys.stderr)
            return 1
    except KeyboardInterrupt:
        pass
    finally:
        print("\nstack: stopping brokers, controller and ZooKeeper", file=sys.stderr)
        stack.stop_all()
        if embedded is not None:
            print("stack: stopping ZooKeeper", file=sys.stderr)
            embedded.close()
        print("stack: stopped", file=sys.stderr)
    return 0


def _print_guide(args: argparse.Namespace, connect: str, var_dir: Path, stack: _Stack) -> None:
    brokers = ", ".join(f"{name} (pid {p.pid})" for name, p in stack.children[1:])
    metrics_host = args.metrics_listen
    print(
        f"""
stack: the cluster is up.
  ZooKeeper        {connect}
  controller       metrics http://{metrics_host}/metrics
                   state changes {var_dir}/controller-0/state-change.log
  brokers          {brokers}   (logs in {stack.logs})

Look around (in another terminal):
  export ZK_CONNECT={connect}
  .venv/bin/zk-controller topics describe {args.topic or ""}
  .venv/bin/zk-controller brokers list
  curl -s http://{metrics_host}/metrics | grep kafka_controller_
Kill a broker and watch leadership move (kill -9 is noticed after the {args.session_timeout_ms} ms
session timeout, as a BrokerChange; a plain kill is a controlled shutdown, at once):
  kill -9 <pid of a broker>; .venv/bin/zk-controller topics describe {args.topic or ""}
  grep -E 'BrokerChange|ControlledShutdown' {var_dir}/controller-0/state-change.log
Fail a broker's log dir (its replicas go offline, leadership moves):
  kill -USR1 <pid of a broker>; .venv/bin/zk-controller topics describe {args.topic or ""}
Ctrl-C here stops everything.
""",
        flush=True,
    )
