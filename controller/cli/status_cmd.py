"""``zk-controller status``: a live view of the cluster, refreshed in place.

Active controller and epoch, every controller (from its endpoint znode and its /metrics),
brokers, partitions by state with the offline and under-replicated ones, reassignments and
topic deletions in progress, and leader elections (the active controller's counters by type,
plus the leader changes seen while the view runs). ``--once`` prints it once; ``--json`` prints
the same data as one JSON document (once, or one line per refresh with ``--interval``).
Ctrl-C ends the live view.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from controller.cli.admin_common import add_connection_arguments, run_admin
from controller.cli.argtypes import int_in
from controller.status import ElectionTracker, collect_status, render
from controller.zk.port import ZkPort

CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear screen: redraw in place


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "status",
        help="live view of the cluster (controllers, brokers, partitions, elections)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--once", action="store_true", help="print the view once and exit")
    parser.add_argument(
        "--json", action="store_true", help="print JSON (once, unless --interval is given)"
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help="refresh period of the live view (default 2; with --json: a line per refresh)",
    )
    parser.add_argument(
        "--count",
        type=int_in(1),
        default=None,
        metavar="N",
        help="stop after N refreshes (default: until Ctrl-C)",
    )
    add_connection_arguments(parser)
    parser.set_defaults(func=status_command)


def status_command(args: argparse.Namespace) -> int:
    once = args.once or (args.json and args.interval is None)
    interval = 2.0 if args.interval is None else max(args.interval, 0.1)
    count = 1 if once else args.count
    source = args.zookeeper or ""

    def action(port: ZkPort) -> int:
        tracker = ElectionTracker()
        shown = 0
        try:
            while True:
                status = tracker.update(collect_status(port))
                if args.json:
                    print(json.dumps(status.to_json(), sort_keys=True), flush=True)
                else:
                    text = render(status, source=source)
                    live = not once and sys.stdout.isatty()
                    sys.stdout.write((CLEAR if live else "") + text)
                    if not once and not live:
                        sys.stdout.write("\n")  # separate the views when not redrawing
                    sys.stdout.flush()
                shown += 1
                if count is not None and shown >= count:
                    return 0
                time.sleep(interval)
        except KeyboardInterrupt:
            return 0

    return run_admin(args, action)
