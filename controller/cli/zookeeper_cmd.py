"""``zk-controller zookeeper start``: the embedded local ZooKeeper, in the foreground.

Prints the connect string on stdout (first line, for scripts) and details on stderr; SIGINT or
SIGTERM stops the server cleanly. Exit code 0 on a requested stop, 1 when ZooKeeper dies or
cannot start, 3 when Java / the ZooKeeper jars are missing.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from controller.signals import SignalInbox
from controller.zk.server import (
    DEFAULT_HEAP,
    LocalZooKeeper,
    ZooKeeperStartError,
    ZooKeeperUnavailable,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("zookeeper", help="run a local ZooKeeper for development")
    actions = parser.add_subparsers(dest="zookeeper_action", metavar="ACTION", required=True)
    start = actions.add_parser(
        "start", help="run a ZooKeeper server on 127.0.0.1 in the foreground"
    )
    start.add_argument("--port", type=int, default=None, help="client port (default: a free one)")
    start.add_argument(
        "--data-dir",
        default=None,
        help="data directory, kept after exit (default: a temporary one, removed on exit)",
    )
    start.add_argument("--heap", default=DEFAULT_HEAP, help="JVM -Xmx (default %(default)s)")
    start.set_defaults(func=start_command)


def start_command(args: argparse.Namespace) -> int:
    inbox = SignalInbox((signal.SIGINT, signal.SIGTERM))
    server = LocalZooKeeper(args.port, args.data_dir, heap=args.heap)
    try:
        try:
            server.start()
        except ZooKeeperUnavailable as exc:
            print(f"zk-controller: {exc}", file=sys.stderr)
            return 3
        except ZooKeeperStartError as exc:
            print(f"zk-controller: {exc}", file=sys.stderr)
            return 1
        print(server.hosts, flush=True)
        print(
            f"ZooKeeper serving on {server.hosts} (pid {server.pid}, started in "
            f"{server.startup_seconds:.2f}s); data {server.data_dir}, log {server.log_path}. "
            "Ctrl-C or SIGTERM stops it.",
            file=sys.stderr,
            flush=True,
        )
        while inbox.wait(0.5) is None:
            if not server.running:
                print(
                    f"zk-controller: ZooKeeper exited unexpectedly; log {server.log_path}:\n"
                    f"{server.log_tail(30)}",
                    file=sys.stderr,
                )
                return 1
        print("stopping ZooKeeper", file=sys.stderr, flush=True)
        return 0
    finally:
        server.close()
        inbox.restore()
