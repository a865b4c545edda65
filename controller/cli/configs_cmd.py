"""``zk-controller configs``: kafka-configs.sh over ZooKeeper, for the configs a controller reads.

  configs describe [--topic T ...] [--json]        the overrides of T, or of every topic
  configs alter --topic T [--add-config K=V,K2=[A,B]] [--delete-config K3,K4]
  configs describe --entity-type brokers --entity-default
  configs describe --entity-type brokers [--entity-name ID ...]   per-broker (throttles)
  configs alter --entity-type brokers --entity-default
                --add-config unclean.leader.election.enable=true

Kafka's spelling ``--entity-type topics --entity-name T`` is accepted as well. An alter writes
the config znode (``/config/topics/T``, or ``/config/brokers/<default>`` for the whole cluster's
dynamic broker configs) and a ``/config/changes`` notification in one multi, so brokers and the
controller pick the change up: turning ``unclean.leader.election.enable`` on elects a leader
for offline partitions at once (the topic's, or the cluster's). For the brokers' default only
that config is set here; per-broker configs configure brokers and are left to Kafka's tool.
Names and values are checked as Kafka checks them before anything is written. Any error exits
1 with one line on stderr naming what was wrong, and nothing is changed in ZooKeeper.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from controller.admin import configs as admin
from controller.admin.assignment import AdminError
from controller.admin.client import resolve_connect
from controller.cli.admin_common import (
    OneLineErrorParser,
    add_connection_arguments,
    fail,
    run_admin,
)
from controller.config import parse_zookeeper_connect
from controller.zk.port import ZkPort


class UsageError(Exception):
    pass


def register(subparsers: Any) -> None:
    configs = subparsers.add_parser(
        "configs",
        help="describe or alter topic configs and the brokers' cluster default "
        "(kafka-configs.sh over ZooKeeper)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = configs.add_subparsers(
        dest="configs_action", metavar="ACTION", required=True, parser_class=OneLineErrorParser
    )

    describe = actions.add_parser("describe", help="show config overrides")
    _add_entity_arguments(describe, "default: every topic with overrides")
    describe.add_argument("--json", action="store_true", help="print JSON")
    describe.set_defaults(func=describe_command)

    alter = actions.add_parser("alter", help="add or delete config overrides")
    _add_entity_arguments(alter, "the topic to alter")
    alter.add_argument(
        "--add-config",
        action="append",
        default=[],
        metavar="K=V,...",
        help="configs to set, separated by commas; a list value in brackets: K=[V1,V2]",
    )
    alter.add_argument(
        "--delete-config",
        action="append",
        default=[],
        metavar="K,...",
        help="configs to remove, separated by commas",
    )
    alter.set_defaults(func=alter_command)

    for action in (describe, alter):
        add_connection_arguments(action)


def _add_entity_arguments(parser: argparse.ArgumentParser, topic_help: str) -> None:
    parser.add_argument(
        "--entity-type",
        choices=[admin.TOPICS, admin.BROKERS],
        default=admin.TOPICS,
        help="topics (default), or brokers with --entity-default",
    )
    parser.add_argument(
        "--topic", dest="topics", action="append", default=[], metavar="TOPIC", help=topic_help
    )
    parser.add_argument(
        "--entity-name", dest="names", action="append", default=[], metavar="NAME",
        help="a topic (Kafka's spelling), or with --entity-type brokers a broker id "
        "(describe only)",
    )  # fmt: skip
    parser.add_argument(
        "--entity-default",
        action="store_true",
        help="with --entity-type brokers: the dynamic broker configs of the whole cluster",
    )


def _entity(args: argparse.Namespace, describe: bool = False) -> list[str]:
    """The topics (or, to describe, broker ids) named, or [] for the brokers' default;
    UsageError for a combination that names nothing this tool handles."""
    if args.entity_type == admin.TOPICS:
        if args.entity_default:
            raise UsageError("topics have no default entity: --entity-default goes with "
                             "--entity-type brokers")  # fmt: skip
        return [*args.topics, *args.names]
    if args.topics:
        raise UsageError("--topic goes with --entity-type topics")
    if describe:
        if args.names and args.entity_default:
            raise UsageError("give --entity-name or --entity-default, not both")
        return list(args.names)
    if args.names:
        raise UsageError(
            "per-broker configs (/config/brokers/N) configure that broker, not the controller: "
            "set them with kafka-configs.sh; this tool sets the brokers' --entity-default"
        )
    if not args.entity_default:
        raise UsageError("--entity-type brokers needs --entity-default")
    return []


def describe_command(args: argparse.Namespace) -> int:
    try:
        topics = _entity(args, describe=True)
    except UsageError as exc:
        return fail(str(exc))

    def action(port: ZkPort) -> int:
        if args.entity_type == admin.BROKERS:
            described = (
                [admin.describe_broker_default_config(port)]
                if args.entity_default
                else admin.describe_broker_configs(port, topics)
            )
            kind = "broker"
        else:
            described = admin.describe_topic_configs(port, topics)
            kind = "topic"
        if args.json:
            rows = [{kind: c.entity, "config": c.config, "error": c.error} for c in described]
            print(json.dumps({args.entity_type: rows}))
        for c in [] if args.json else described:
            if c.error is None:
                configs = ",".join(f"{k}={v}" for k, v in sorted(c.config.items()))
                print(f"Configs for {kind} '{c.entity}' are {configs}")
        errors = [f"{kind} {c.entity}: {c.error}" for c in described if c.error]
        for error in errors:
            fail(error)
        return 1 if errors else 0

    return run_admin(args, action)


def alter_command(args: argparse.Namespace) -> int:
    try:
        topics = _entity(args)
    except UsageError as exc:
        return fail(str(exc))
    if args.entity_type == admin.TOPICS and len(topics) != 1:
        return fail("alter needs exactly one --topic (or --entity-name)")
    if not args.add_config and not args.delete_config:
        return fail("alter needs --add-config or --delete-config")
    # Syntax errors are reported before connecting.
    add: dict[str, str] = {}
    try:
        for text in args.add_config:
            for key, value in admin.parse_config_list(text).items():
                if key in add:
                    return fail(f"config {key!r} is given twice in --add-config")
                add[key] = value
        delete = [name for text in args.delete_config for name in admin.parse_config_names(text)]
    except AdminError as exc:
        return fail(str(exc))
    add = admin.properties_order(add)  # as ConfigCommand's Properties adds them

    def action(port: ZkPort) -> int:
        if args.entity_type == admin.BROKERS:
            # Only a connect string without a chroot can have missed the cluster's: a chroot
            # given (made by hand before the cluster's first start, say) is taken as meant.
            _, chroot = parse_zookeeper_connect(resolve_connect(args.zookeeper))
            admin.alter_broker_default_config(port, add, delete, require_cluster=chroot is None)
            print(f"Completed updating config for broker {admin.DEFAULT}.")
        else:
            admin.alter_topic_config(port, topics[0], add, delete)
            print(f"Completed updating config for topic {topics[0]}.")
        return 0

    return run_admin(args, action)
