"""``zk-controller topics``: kafka-topics.sh over ZooKeeper (create, list, describe, alter, delete).

Every action takes ``--zookeeper HOST:PORT[,...][/CHROOT]`` (or ``ZK_CONNECT``) and
``--session-timeout-ms``. Results go to stdout in kafka-topics.sh's formats (``--json`` where
offered, for scripts); warnings go to stderr. Any error exits 1 with one line on stderr naming
what was wrong, and nothing is changed in ZooKeeper. Usage errors of an action also exit 1.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from controller.admin import configs as configs_admin
from controller.admin import topics as admin
from controller.admin.assignment import (
    AdminError,
    InvalidReplicaAssignmentError,
    RackAwareMode,
    parse_replica_assignment,
)
from controller.cli import admin_common
from controller.cli.admin_common import (
    OneLineErrorParser,
    add_connection_arguments,
    fail,
    join,
    with_auth_hint,
)
from controller.zk.port import ZkPort

KEYED_WARNING = (
    "WARNING: If partitions are increased for a topic that has a key, the partition logic or "
    "ordering of the messages will be affected"
)


def run_admin(args: argparse.Namespace, action: Callable[[ZkPort], int]) -> int:
    """``admin_common.run_admin``, once the one topic name of create/alter/delete is known."""
    if getattr(args, "needs_topic_name", False) and (problem := resolve_topic_name(args)):
        return fail(problem)
    return admin_common.run_admin(args, action)


def register(subparsers: Any) -> None:
    topics = subparsers.add_parser(
        "topics",
        help="create, list, describe, alter or delete topics (kafka-topics.sh over ZooKeeper)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = topics.add_subparsers(
        dest="topics_action", metavar="ACTION", required=True, parser_class=OneLineErrorParser
    )

    create = actions.add_parser("create", help="create a topic")
    _add_topic_name(create)
    create.add_argument("--partitions", type=int, metavar="P")
    create.add_argument("--replication-factor", type=int, metavar="R")
    create.add_argument(
        "--replica-assignment",
        metavar="ASSIGNMENT",
        help="manual assignment instead of --partitions/--replication-factor: partitions "
        "separated by ',', replicas by ':' (0:1,1:2 = partition 0 on brokers 0,1; "
        "partition 1 on brokers 1,2)",
    )
    create.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="a topic config"
    )
    create.add_argument(
        "--disable-rack-aware", action="store_true", help="assign replicas ignoring racks"
    )
    create.add_argument(
        "--if-not-exists", action="store_true", help="succeed quietly if the topic exists"
    )
    create.set_defaults(func=create_command)

    listing = actions.add_parser("list", help="list topics")
    listing.add_argument(
        "--topic", metavar="REGEX", help="only topics whose whole name matches (Kafka's --topic)"
    )
    listing.add_argument("--json", action="store_true", help="print JSON")
    _add_exclude_internal(listing)
    listing.set_defaults(func=list_command)

    describe = actions.add_parser("describe", help="describe topics and their partitions")
    describe.add_argument("names", nargs="*", metavar="NAME", help="default: every topic")
    describe.add_argument(
        "--topic",
        metavar="REGEX",
        help="topics whose whole name matches (Kafka's --topic; with NAMEs, both are described)",
    )
    only = describe.add_mutually_exclusive_group()
    only.add_argument(
        "--under-replicated-partitions",
        action="store_true",
        help="only partitions whose ISR is smaller than the replication factor",
    )
    only.add_argument(
        "--unavailable-partitions",
        action="store_true",
        help="only partitions without a leader, or whose leader is not registered",
    )
    only.add_argument(
        "--under-min-isr-partitions",
        action="store_true",
        help="only partitions whose ISR is smaller than min.insync.replicas, or without a "
        "leader (the topic's override, else /config/brokers/<default>'s, else 1: a value set "
        "only in brokers' server.properties cannot be seen from ZooKeeper)",
    )
    only.add_argument(
        "--at-min-isr-partitions",
        action="store_true",
        help="only partitions whose ISR size equals min.insync.replicas (as above)",
    )
    only.add_argument(
        "--topics-with-overrides",
        action="store_true",
        help="only the topic lines of topics with config overrides",
    )
    describe.add_argument(
        "--if-exists",
        action="store_true",
        help="describe only the topics that exist; none: print nothing and succeed",
    )
    _add_exclude_internal(describe)
    describe.add_argument("--json", action="store_true", help="print JSON")
    describe.set_defaults(func=describe_command)

    alter = actions.add_parser("alter", help="add partitions to a topic")
    _add_topic_name(alter, regex=True)
    alter.add_argument("--partitions", type=int, required=True, metavar="P", help="new total")
    alter.add_argument(
        "--replica-assignment",
        metavar="ASSIGNMENT",
        help="assignment of every partition (Kafka's form; existing entries must match) or "
        "of the new partitions only",
    )
    alter.add_argument(
        "--disable-rack-aware", action="store_true", help="assign replicas ignoring racks"
    )
    alter.add_argument("--if-exists", action="store_true", help="do nothing if the topic is absent")
    alter.set_defaults(func=alter_command)

    delete = actions.add_parser("delete", help="mark topics for deletion")
    _add_topic_name(delete, regex=True)
    delete.add_argument(
        "--if-exists", action="store_true", help="do nothing if the topic is absent"
    )
    delete.set_defaults(func=delete_command)

    for action in (create, listing, describe, alter, delete):
        add_connection_arguments(action)


def _add_exclude_internal(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--exclude-internal",
        action="store_true",
        help=f"leave out Kafka's internal topics ({', '.join(sorted(admin.INTERNAL_TOPICS))})",
    )


def _add_topic_name(parser: argparse.ArgumentParser, *, regex: bool = False) -> None:
    """The topic as a positional NAME or as kafka-topics.sh's ``--topic``: for alter and
    delete (``regex``), as in Kafka, a regular expression every topic whose whole name it
    matches is altered or deleted by (NAME stays one literal name)."""
    parser.add_argument("name", nargs="?", metavar="NAME")
    if regex:
        parser.add_argument(
            "--topic", dest="topic_option", metavar="REGEX",
            help="every topic whose whole name matches (Kafka's --topic: 'a.b' matches "
            "'a_b' too; ',' means '|')",
        )  # fmt: skip
    else:
        parser.add_argument("--topic", dest="topic_option", metavar="NAME", help="the same as NAME")
    parser.set_defaults(needs_topic_name=True, topic_regex=regex, pattern=None)


def resolve_topic_name(args: argparse.Namespace) -> str | None:
    """The one topic name of create/alter/delete; an error message when it is missing or
    given twice differently."""
    given = {n for n in (args.name, args.topic_option) if n is not None}
    if len(given) != 1:
        return (
            "a topic is required: NAME or --topic NAME"
            if not given
            else f"two topic names given: {args.name!r} and --topic {args.topic_option!r}"
        )
    if args.topic_regex and args.name is None:
        args.pattern = args.topic_option  # matched once connected: _topics_named
        return None
    args.name = given.pop()
    return None


def _topics_named(port: ZkPort, args: argparse.Namespace) -> list[str]:
    """The topics alter/delete act on: NAME, or every topic --topic matches (Kafka's
    ``getTopics`` and ``ensureTopicExists``: none is an error unless --if-exists)."""
    if args.pattern is None:
        return [args.name]
    pattern = topic_pattern(args.pattern)
    matched = sorted(t.name for t in admin.list_topics(port) if pattern.fullmatch(t.name))
    if not matched and not args.if_exists:
        raise AdminError(f"Topic '{args.pattern}' does not exist as expected")
    return matched


def topic_pattern(regex: str) -> re.Pattern[str]:
    """Kafka's --topic for list/describe: a regular expression matched against whole names
    (a plain name matches itself). Normalised as Kafka's ``TopicFilter.IncludeList`` does:
    "," means "|", spaces are removed, and surrounding quotes are stripped."""
    normalised = regex.strip().replace(",", "|").replace(" ", "")
    normalised = re.sub(r"""^["']+|["']+$""", "", normalised)
    try:
        return re.compile(normalised)
    except re.error as exc:
        raise AdminError(f"--topic {regex!r} is not a valid regular expression: {exc}") from None


def _rack_mode(args: argparse.Namespace) -> RackAwareMode:
    return RackAwareMode.DISABLED if args.disable_rack_aware else RackAwareMode.ENFORCED


def _configs(pairs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        split = configs_admin.split_config_pair(pair)
        if split is None:
            raise admin.InvalidConfigError(
                f"invalid --config {pair!r}: expected KEY=VALUE, with one '=' and a value"
            )
        out[split[0]] = split[1]
    return out


def create_command(args: argparse.Namespace) -> int:
    manual = args.replica_assignment is not None
    if manual and (args.partitions is not None or args.replication_factor is not None):
        return fail("--replica-assignment cannot be combined with --partitions or "
                    "--replication-factor")  # fmt: skip
    if not manual and (args.partitions is None or args.replication_factor is None):
        return fail("--partitions and --replication-factor are required "
                    "(unless --replica-assignment is given)")  # fmt: skip

    def action(port: ZkPort) -> int:
        assignment = parse_replica_assignment(args.replica_assignment) if manual else None
        try:
            result = admin.create_topic(
                port, args.name, args.partitions, args.replication_factor,
                replica_assignment=assignment, configs=_configs(args.config),
                rack_aware_mode=_rack_mode(args),
            )  # fmt: skip
        except (admin.TopicExistsError, admin.TopicMarkedForDeletionError):
            # A topic still being deleted exists too, for Kafka's --if-not-exists.
            if args.if_not_exists:
                return 0
            raise
        for warning in result.warnings:
            print(f"WARNING: {warning}", file=sys.stderr)
        print(f"Created topic {result.name}.")
        return 0

    return run_admin(args, action)


def list_command(args: argparse.Namespace) -> int:
    def action(port: ZkPort) -> int:
        listing = admin.list_topics(port)
        if args.exclude_internal:
            listing = [t for t in listing if t.name not in admin.INTERNAL_TOPICS]
        if args.topic is not None:
            pattern = topic_pattern(args.topic)
            listing = [t for t in listing if pattern.fullmatch(t.name)]
        if args.json:
            rows = [{"name": t.name, "marked_for_deletion": t.marked_for_deletion} for t in listing]
            print(json.dumps({"topics": rows}))
        for t in [] if args.json else listing:
            print(f"{t.name} - marked for deletion" if t.marked_for_deletion else t.name)
        return 0

    return run_admin(args, action)


def _wanted(args: argparse.Namespace, p: admin.PartitionDescription, min_isr: int) -> bool:
    """Whether a partition line is printed (Kafka's DescribeOptions): ``min_isr`` is its
    topic's min.insync.replicas."""
    if args.topics_with_overrides:
        return False
    if args.under_replicated_partitions:
        return p.under_replicated
    if args.unavailable_partitions:
        return p.unavailable
    if args.under_min_isr_partitions:
        return p.unavailable or len(p.isr) < min_isr
    if args.at_min_isr_partitions:
        return len(p.isr) == min_isr
    return True


def _min_isr(configs: dict[str, str], default: int) -> int:
    value = configs.get("min.insync.replicas", "")
    return int(value) if value.isdigit() else default


def _cluster_min_isr(port: ZkPort) -> tuple[int, str | None]:
    """min.insync.replicas of /config/brokers/<default>, else Kafka's default (1); and why
    that znode could not be read (its ACL refuses this session, say), when it could not."""
    default = configs_admin.describe_broker_default_config(port)
    return _min_isr(default.config, 1), default.error


def _names_to_describe(port: ZkPort, args: argparse.Namespace) -> list[str] | None:
    """The topics ``describe`` asks for: NAMEs and --topic's matches, or None for every
    topic; an empty list when --if-exists or --exclude-internal left none of them."""
    names = list(args.names)
    if args.topic is None and not args.exclude_internal and not args.if_exists:
        return names or None
    listed = [t.name for t in admin.list_topics(port)]
    if args.exclude_internal:
        listed = [n for n in listed if n not in admin.INTERNAL_TOPICS]
        names = [n for n in names if n not in admin.INTERNAL_TOPICS]
    if args.if_exists:
        names = [n for n in names if n in listed]
    if args.topic is not None:
        pattern = topic_pattern(args.topic)
        matched = [n for n in listed if pattern.fullmatch(n)]
        if not matched and not args.if_exists:
            raise AdminError(f"Topic '{args.topic}' does not exist as expected")
        names += [n for n in matched if n not in names]
    if names or args.names or args.topic is not None:
        return names
    return listed if args.exclude_internal else None


def describe_command(args: argparse.Namespace) -> int:
    filtering = (
        args.under_replicated_partitions
        or args.unavailable_partitions
        or args.under_min_isr_partitions
        or args.at_min_isr_partitions
    )

    def action(port: ZkPort) -> int:
        names = _names_to_describe(port, args)
        if names == []:
            return 0  # --if-exists / --exclude-internal left nothing of what was asked for
        descriptions = admin.describe_topics(port, names)
        by_min_isr = args.under_min_isr_partitions or args.at_min_isr_partitions
        default_min_isr, default_error = _cluster_min_isr(port) if by_min_isr else (1, None)
        min_isr = {t.name: _min_isr(t.configs, default_min_isr) for t in descriptions}
        errors = [f"topic {t.name}: {t.error}" for t in descriptions if t.error]
        if default_error:  # the filter then used Kafka's default, which may be wrong
            errors.append(
                f"the cluster's default min.insync.replicas is unknown ({default_error}); "
                f"{default_min_isr} was used for the topics that do not set it"
            )
        errors += [
            f"topic {t.name}: configs unreadable: {t.config_error}"
            for t in descriptions
            if t.config_error
        ]
        errors += [
            f"topic {t.name} partition {p.partition}: {p.state_error}"
            for t in descriptions
            for p in t.partitions
            if p.state_error
        ]
        if args.topics_with_overrides:
            descriptions = [t for t in descriptions if t.configs or t.error or t.config_error]
        if args.json:
            print(
                json.dumps(
                    {"topics": [_topic_json(t, args, min_isr[t.name]) for t in descriptions]}
                )
            )
        else:
            for t in descriptions:
                if not filtering and not t.error:
                    print(_topic_line(t))
                for p in t.partitions:
                    if _wanted(args, p, min_isr[t.name]):
                        print(_partition_line(t, p))
        for error in errors:
            fail(with_auth_hint(error))
        return 1 if errors else 0

    return run_admin(args, action)


def _topic_line(t: admin.TopicDescription) -> str:
    configs = ",".join(f"{k}={v}" for k, v in sorted(t.configs.items()))
    line = f"Topic: {t.name}"
    if t.topic_id:
        line += f"\tTopicId: {t.topic_id}"
    line += f"\tPartitionCount: {len(t.partitions)}\tReplicationFactor: {t.replication_factor}"
    line += f"\tConfigs: {configs}"
    return line + ("\tMarkedForDeletion: true" if t.marked_for_deletion else "")


def _partition_line(t: admin.TopicDescription, p: admin.PartitionDescription) -> str:
    leader = "none" if p.offline else str(p.leader)
    line = f"\tTopic: {t.name}\tPartition: {p.partition}\tLeader: {leader}"
    line += f"\tReplicas: {join(p.replicas)}\tIsr: {join(p.isr)}"
    if p.adding_replicas or p.removing_replicas:
        line += f"\tAdding Replicas: {join(p.adding_replicas)}"
        line += f"\tRemoving Replicas: {join(p.removing_replicas)}"
    epoch = "none" if p.leader_epoch is None else str(p.leader_epoch)
    line += f"\tLeaderEpoch: {epoch}\tOffline: {join(p.offline_replicas)}"
    return line + ("\tMarkedForDeletion: true" if t.marked_for_deletion else "")


def _topic_json(
    t: admin.TopicDescription, args: argparse.Namespace, min_isr: int
) -> dict[str, Any]:
    partitions = [
        {
            "partition": p.partition,
            "leader": p.leader,
            "leader_epoch": p.leader_epoch,
            "isr": list(p.isr),
            "replicas": list(p.replicas),
            "adding_replicas": list(p.adding_replicas),
            "removing_replicas": list(p.removing_replicas),
            "offline_replicas": list(p.offline_replicas),
            "controller_epoch": p.controller_epoch,
            "partition_epoch": p.partition_epoch,
            "leader_recovering": p.leader_recovering,
            "under_replicated": p.under_replicated,
            "unavailable": p.unavailable,
            "offline": p.offline,
            "state_error": p.state_error,
        }
        for p in t.partitions
        if _wanted(args, p, min_isr)
    ]
    return {
        "name": t.name,
        "topic_id": t.topic_id,
        "partition_count": len(t.partitions),
        "replication_factor": t.replication_factor,
        "configs": t.configs,
        "marked_for_deletion": t.marked_for_deletion,
        "error": t.error,
        "config_error": t.config_error,
        "partitions": partitions,
    }


def alter_command(args: argparse.Namespace) -> int:
    def action(port: ZkPort) -> int:
        for name in _topics_named(port, args):
            try:
                (current,) = admin.describe_topics(port, [name])
            except admin.UnknownTopicError:
                if args.if_exists or args.pattern is not None:  # matched, then deleted
                    continue
                raise
            new_only = None
            if args.replica_assignment is not None:
                new_only = _new_partitions(
                    parse_replica_assignment(args.replica_assignment), current, args.partitions
                )
            result = admin.add_partitions(
                port, name, args.partitions, new_only, rack_aware_mode=_rack_mode(args)
            )
            for warning in result.warnings:
                print(f"WARNING: {warning}", file=sys.stderr)
            print(KEYED_WARNING, file=sys.stderr)
            print("Adding partitions succeeded!")  # Kafka's line, once per topic
        return 0

    return run_admin(args, action)


def _new_partitions(
    given: dict[int, tuple[int, ...]], current: admin.TopicDescription, total: int
) -> dict[int, tuple[int, ...]]:
    """The entries for new partitions, from a list of every partition (Kafka) or new ones."""
    existing = len(current.partitions)
    if total <= existing:
        return {}  # add_partitions reports the partition count, which is the real problem
    if len(given) == total:
        for p in current.partitions:
            if given[p.partition] != p.replicas:
                raise InvalidReplicaAssignmentError(
                    f"--replica-assignment gives partition {p.partition} replicas "
                    f"{join(given[p.partition])} but it has {join(p.replicas)}; changing "
                    "existing replicas is a reassignment, not an alter"
                )
        return {p: r for p, r in given.items() if p >= existing}
    if len(given) == total - existing:
        return {existing + i: r for i, r in given.items()}
    raise InvalidReplicaAssignmentError(
        f"--replica-assignment lists {len(given)} partitions: expected {total} (every "
        f"partition) or {total - existing} (the new ones; the topic has {existing})"
    )


def delete_command(args: argparse.Namespace) -> int:
    def action(port: ZkPort) -> int:
        names = _topics_named(port, args)
        internal = [n for n in names if n in admin.INTERNAL_TOPICS]
        if args.pattern is not None and internal:
            # Refused before any deletion (Kafka's tool fails at the first one it reaches).
            raise AdminError(
                f"--topic {args.pattern!r} matches Kafka internal topic(s) "
                f"{', '.join(internal)}, which are not allowed to be marked for deletion; "
                "nothing was deleted"
            )
        for name in names:
            try:
                admin.delete_topic(port, name)
            except admin.UnknownTopicError:
                if args.if_exists or args.pattern is not None:  # matched, then deleted
                    continue
                raise
            except admin.TopicMarkedForDeletionError:
                # Kafka's tool reports this and succeeds: the request is already pending.
                print(f"Topic {name} is already marked for deletion.")
                continue
            print(f"Topic {name} is marked for deletion.")
            print("Note: This will have no impact if delete.topic.enable is not set to true.")
        return 0

    return run_admin(args, action)
