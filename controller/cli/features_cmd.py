"""``zk-controller features``: cluster feature versions (kafka-features.sh).

  features describe [--json]
  features upgrade --feature NAME=LEVEL [--feature ...] [--dry-run]
  features downgrade --feature NAME=LEVEL [...] [--unsafe] [--dry-run]
  features disable --feature NAME [...] [--unsafe] [--dry-run]

``describe`` reads ZooKeeper: the levels the registered brokers support (the range every broker
advertising the feature supports) and the finalized level and epoch in ``/feature``; brokers
that cannot run a finalized level are named (the controller keeps them out of the cluster).

``upgrade``, ``downgrade`` and ``disable`` go to the active controller's UpdateFeatures RPC,
which checks each change against every live broker and writes the valid ones to ``/feature``
together. The output is kafka-features.sh's: one line per feature ("f was upgraded to 2." or
"Could not upgrade f to 2. <why>"; with ``--dry-run``, "can be" / "Can not"). Exit status 0 when
every change was accepted, 1 otherwise, or on any error (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from controller.admin.features import ClusterFeatures, describe_features
from controller.api.errors import Errors, error_name
from controller.api.v1 import admin_pb2
from controller.cli.admin_common import (
    OneLineErrorParser,
    add_admin_timeout_argument,
    add_connection_arguments,
    call_controller_admin,
    fail,
    run_admin,
)
from controller.core.features import MAX_FEATURE_LEVEL
from controller.security.cli import add_tls_arguments
from controller.zk.port import ZkPort


class UsageError(Exception):
    pass


def register(subparsers: Any) -> None:
    features = subparsers.add_parser(
        "features",
        help="describe, upgrade, downgrade or disable cluster features (kafka-features.sh)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = features.add_subparsers(
        dest="features_action", metavar="ACTION", required=True, parser_class=OneLineErrorParser
    )
    describe = actions.add_parser("describe", help="supported and finalized feature levels")
    describe.add_argument("--json", action="store_true", help="print JSON")
    add_connection_arguments(describe)
    describe.set_defaults(func=describe_command)

    for op, text in (
        ("upgrade", "raise finalized levels (or finalize new features)"),
        ("downgrade", "lower finalized levels"),
        ("disable", "remove finalized features"),
    ):
        parser = actions.add_parser(op, help=text)
        parser.add_argument(
            "--feature",
            action="append",
            default=[],
            metavar="NAME" if op == "disable" else "NAME=LEVEL",
            help="a feature to " + op + "; repeat for several",
        )
        if op != "upgrade":
            # Kafka's ZooKeeper-mode controller takes UNSAFE_DOWNGRADE only to delete a
            # feature; only KRaft downgrades a level unsafely.
            parser.add_argument(
                "--unsafe",
                action="store_true",
                help="send Kafka's UNSAFE_DOWNGRADE: "
                + (
                    "refused for a level downgrade by a ZooKeeper-mode controller (this "
                    "one, as Kafka's); downgrade without it"
                    if op == "downgrade"
                    else "accepted, as a plain disable is"
                ),
            )
        parser.add_argument("--dry-run", action="store_true", help="validate only; change nothing")
        add_admin_timeout_argument(parser)
        add_connection_arguments(parser)
        add_tls_arguments(parser)
        parser.set_defaults(func=update_command, op=op)


# -- describe ----------------------------------------------------------------------------------


def describe_command(args: argparse.Namespace) -> int:
    def action(port: ZkPort) -> int:
        view = describe_features(port)
        print(json.dumps(_as_json(view), indent=2) if args.json else _as_text(view))
        return 0

    return run_admin(args, action)


def _as_text(view: ClusterFeatures) -> str:
    epoch = "-" if view.epoch is None else str(view.epoch)
    lines = []
    for f in view.features:
        lo, hi = ("-", "-") if f.supported is None else map(str, f.supported)
        line = (
            f"Feature: {f.name}\tSupportedMinVersion: {lo}\tSupportedMaxVersion: {hi}\t"
            f"FinalizedVersionLevel: {0 if f.finalized is None else f.finalized}\tEpoch: {epoch}"
        )
        if f.unsupported_by:
            line += "\tUnsupportedBy: " + ",".join(map(str, f.unsupported_by))
        lines.append(line)
    if not lines:
        lines.append(f"No features are supported or finalized (epoch {epoch}).")
    if not view.enabled and view.epoch is not None:
        lines.append("Feature versioning is disabled in /feature (a controller enables it).")
    for broker_id, problem in sorted(view.unreadable_brokers.items()):
        lines.append(f"Broker {broker_id}'s registration is unreadable: {problem}")
    return "\n".join(lines)


def _as_json(view: ClusterFeatures) -> dict[str, Any]:
    return {
        "epoch": view.epoch,
        "enabled": view.enabled,
        "brokers": list(view.brokers),
        "features": [
            {
                "name": f.name,
                "supported_min_version": None if f.supported is None else f.supported[0],
                "supported_max_version": None if f.supported is None else f.supported[1],
                "finalized_version_level": f.finalized,
                "unsupported_by": list(f.unsupported_by),
            }
            for f in view.features
        ],
        "unreadable_brokers": {str(b): p for b, p in sorted(view.unreadable_brokers.items())},
    }


# -- upgrade / downgrade / disable -------------------------------------------------------------


def parse_updates(op: str, specs: list[str], unsafe: bool) -> list[admin_pb2.FeatureUpdate]:
    """The requested changes; ``UsageError`` names the first bad argument."""
    if not specs:
        raise UsageError(f"You must specify at least one feature to {op} (--feature)")
    if op == "upgrade":
        kind = admin_pb2.FEATURE_UPGRADE_TYPE_UPGRADE
    elif unsafe:
        kind = admin_pb2.FEATURE_UPGRADE_TYPE_UNSAFE_DOWNGRADE
    else:
        kind = admin_pb2.FEATURE_UPGRADE_TYPE_SAFE_DOWNGRADE
    updates: dict[str, admin_pb2.FeatureUpdate] = {}
    for spec in specs:
        if op == "disable":
            name, level = spec.strip(), 0
            if "=" in name:
                raise UsageError(
                    f"--feature {spec!r}: disable takes a feature name, not NAME=LEVEL"
                )
        else:
            name, sep, text = spec.partition("=")
            name = name.strip()
            if not sep:
                raise UsageError(f"--feature {spec!r}: expected NAME=LEVEL")
            try:
                level = int(text.strip())
            except ValueError:
                raise UsageError(f"--feature {spec!r}: the level must be an integer") from None
            if not 1 <= level <= MAX_FEATURE_LEVEL:
                raise UsageError(f"--feature {spec!r}: the level must be 1..{MAX_FEATURE_LEVEL}")
        if not name:
            raise UsageError(f"--feature {spec!r}: the feature name is empty")
        if name in updates:
            raise UsageError(f"Feature {name} was specified more than once.")
        updates[name] = admin_pb2.FeatureUpdate(
            feature=name, max_version_level=level, upgrade_type=kind
        )
    return list(updates.values())


def update_command(args: argparse.Namespace) -> int:
    op: str = args.op
    try:
        updates = parse_updates(op, args.feature, getattr(args, "unsafe", False))
    except UsageError as exc:
        return fail(str(exc))
    request = admin_pb2.UpdateFeaturesRequest(
        feature_updates=updates, timeout_ms=args.timeout_ms, validate_only=args.dry_run
    )

    def action(port: ZkPort) -> int:
        response = call_controller_admin(port, args, "UpdateFeatures", request, f"feature {op}")
        return _report(op, updates, response, args.dry_run)

    return run_admin(args, action)


def _report(
    op: str,
    updates: list[admin_pb2.FeatureUpdate],
    response: admin_pb2.UpdateFeaturesResponse,
    dry_run: bool,
) -> int:
    levels = {u.feature: u.max_version_level for u in updates}
    failures = 0
    for r in sorted(response.results, key=lambda r: r.feature):
        level = levels.get(r.feature, 0)
        if r.error_code != Errors.NONE:
            failures += 1
            helper = "Can not " if dry_run else "Could not "
            suffix = f"disable {r.feature}" if op == "disable" else f"{op} {r.feature} to {level}"
            why = r.error_message or error_name(r.error_code)
            print(f"{helper}{suffix}. {why}")
        else:
            verb = " can be " if dry_run else " was "
            obj = "disabled." if op == "disable" else f"{op}d to {level}."
            print(f"{r.feature}{verb}{obj}")
    if failures:
        return fail(f"{failures} out of {len(updates)} operation(s) failed.")
    return 0
