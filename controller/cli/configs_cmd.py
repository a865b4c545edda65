"""``zk-controller configs``: kafka-configs.sh over ZooKeeper, for topic config overrides.

  configs describe [--topic T ...] [--json]        the overrides of T, or of every topic
  configs alter --topic T [--add-config K=V,K2=[A,B]] [--delete-config K3,K4]

Kafka's spelling ``--entity-type topics --entity-name T`` is accepted as well. An alter writes
``/config/topics/T`` and a ``/config/changes`` notification in one multi, so brokers and the
controller pick the change up (turning ``unclean.leader.election.enable`` on elects a leader
for the topic's offline partitions at once). Names and values are checked as Kafka checks them
before anything is written. Any error exits 1 with one line on stderr naming what was wrong,
and nothing is changed in ZooKeeper.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from controller.admin import configs as admin
from controller.admin.assignment import AdminError
from controller.cli.topics_cmd import OneLineErrorParser, add_connection_arguments, fail, run_admin
from controller.zk.port import ZkPort


def register(subparsers: Any) -> None:
    configs = subparsers.add_parser(
        "configs",
        help="describe or alter topic configs (kafka-configs.sh over ZooKeeper)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = configs.add_subparsers(
        dest="configs_action", metavar="ACTION", required=True, parser_class=OneLineErrorParser
    )

    describe = actions.add_parser("describe", help="show topic config overrides")
    _add_entity_arguments(describe, "default: every topic with overrides")
    describe.add_argument("--json", action="store_true", help="print JSON")
    describe.set_defaults(func=describe_command)

    alter = actions.add_parser("alter", help="add or delete a topic's config overrides")
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


def _add_entity_arguments(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument(
        "--entity-type",
        choices=[admin.TOPICS],
        default=admin.TOPICS,
        help="only topics: the controller reads no other entity's configs",
    )
    parser.add_argument(
        "--topic",
        "--entity-name",
        dest="topics",
        action="append",
        default=[],
        metavar="TOPIC",
        help=help_text,
    )


def describe_command(args: argparse.Namespace) -> int:
    def action(port: ZkPort) -> int:
        described = admin.describe_topic_configs(port, args.topics)
        if args.json:
            rows = [{"topic": t.topic, "config": t.config, "error": t.error} for t in described]
            print(json.dumps({"topics": rows}))
        for t in [] if args.json else described:
            if t.error is None:
                configs = ",".join(f"{k}={v}" for k, v in sorted(t.config.items()))
                print(f"Configs for topic '{t.topic}' are {configs}")
        errors = [f"topic {t.topic}: {t.error}" for t in described if t.error]
        for error in errors:
            fail(error)
        return 1 if errors else 0

    return run_admin(args, action)


def alter_command(args: argparse.Namespace) -> int:
    if len(args.topics) != 1:
        return fail("alter needs exactly one --topic (or --entity-name)")
    if not args.add_config and not args.delete_config:
        return fail("alter needs --add-config or --delete-config")
    (topic,) = args.topics
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

    def action(port: ZkPort) -> int:
        admin.alter_topic_config(port, topic, add, delete)
        print(f"Completed updating config for topic {topic}.")
        return 0

    return run_admin(args, action)

