"""``zk-controller brokers list``: the broker registrations in ZooKeeper and the controller.

Text output is one tab-separated line per broker (with ``Features: f=1-3`` when the broker
advertises feature ranges), then ``Controller: N`` (``none`` when no controller is elected);
``--json`` prints the same as one JSON object. A registration that
cannot be decoded is listed with its error and makes the exit code 1.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from controller.admin.topics import list_brokers
from controller.cli.admin_common import (
    OneLineErrorParser,
    add_connection_arguments,
    fail,
    run_admin,
)
from controller.zk.port import ZkPort


def register(subparsers: Any) -> None:
    brokers = subparsers.add_parser(
        "brokers",
        help="list the brokers registered in ZooKeeper",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = brokers.add_subparsers(
        dest="brokers_action", metavar="ACTION", required=True, parser_class=OneLineErrorParser
    )
    listing = actions.add_parser("list", help="list registered brokers and the active controller")
    listing.add_argument("--json", action="store_true", help="print JSON")
    add_connection_arguments(listing)
    listing.set_defaults(func=list_command)


def list_command(args: argparse.Namespace) -> int:
    def action(port: ZkPort) -> int:
        cluster = list_brokers(port)
        rows: list[dict[str, Any]] = []
        for info in cluster.brokers:
            b = info.broker
            rows.append(
                {
                    "id": info.id,
                    "epoch": info.epoch,
                    "rack": b.rack if b else None,
                    "endpoints": [e.connection_string() for e in b.endpoints] if b else [],
                    "features": {n: list(r) for n, r in sorted(b.features.items())} if b else {},
                    "error": info.error,
                }
            )
        if args.json:
            print(json.dumps({"controller": cluster.controller_id, "brokers": rows,
                              "controller_error": cluster.controller_error}))  # fmt: skip
        else:
            for row in rows:
                if row["error"]:
                    print(f"Broker: {row['id']}\tEpoch: {row['epoch']}\tError: {row['error']}")
                    continue
                features = ",".join(f"{n}={lo}-{hi}" for n, (lo, hi) in row["features"].items())
                print(
                    f"Broker: {row['id']}\tRack: {row['rack'] or 'none'}\tEpoch: {row['epoch']}"
                    f"\tEndpoints: {','.join(row['endpoints'])}"
                    + (f"\tFeatures: {features}" if features else "")
                )
            controller = cluster.controller_id
            if cluster.controller_error:
                print(f"Controller: unreadable /controller: {cluster.controller_error}")
            else:
                print(f"Controller: {'none' if controller is None else controller}")
        errors = [f"broker {row['id']}: {row['error']}" for row in rows if row["error"]]
        if cluster.controller_error:  # as an unreadable broker: shown, and the exit says so
            errors.append(f"unreadable /controller: {cluster.controller_error}")
        for error in errors:
            fail(error)
        return 1 if errors else 0

    return run_admin(args, action)
