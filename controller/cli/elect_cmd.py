"""``zk-controller elect``: preferred or unclean leader elections (kafka-leader-election.sh).

    zk-controller elect --type preferred --all
    zk-controller elect --type preferred --topic orders
    zk-controller elect --type unclean --topic orders --partition 3
    zk-controller elect --election-type PREFERRED --path-to-json-file partitions.json

Kafka's spellings are accepted: ``--election-type`` for ``--type`` (either case),
``--all-topic-partitions`` for ``--all``, and ``--path-to-json-file`` with Kafka's file,
``{"partitions": [{"topic": "orders", "partition": 3}, ...]}``.

The request goes to the active controller's ElectLeaders admin RPC; the controller is found
through ZooKeeper (``/controller`` and its advertised endpoint), and a standby's NOT_CONTROLLER
answer is followed to the active one. ``--all`` asks for every partition; ``--topic`` alone
for every partition of that topic (read from ``/brokers/topics/T``).

Output is kafka-leader-election.sh's: partitions elected, partitions whose leader was already
valid, and one line per failed partition with Kafka's error name. ``--json`` prints one JSON
object instead. Exit status 0 when no partition failed (an election that was not needed is
not a failure), 1 otherwise or on any error, which is one line on stderr.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from controller.admin.assignment import AdminError
from controller.api.errors import Errors, error_name
from controller.api.v1 import admin_pb2, common_pb2
from controller.cli.admin_common import (
    add_admin_timeout_argument,
    add_connection_arguments,
    call_controller_admin,
    fail,
    one_line_usage_errors,
    run_admin,
)
from controller.cli.argtypes import INT32_MAX, partition_number
from controller.security.cli import add_tls_arguments
from controller.zk import codecs, paths
from controller.zk.errors import NoNodeError
from controller.zk.port import ZkPort

ELECTION_TYPES = {
    "preferred": admin_pb2.ELECTION_TYPE_PREFERRED,
    "unclean": admin_pb2.ELECTION_TYPE_UNCLEAN,
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "elect",
        help="elect preferred or unclean leaders (kafka-leader-election.sh)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    one_line_usage_errors(parser)  # its options sit on the subcommand's own parser
    parser.add_argument(
        "--type",
        "--election-type",
        dest="type",
        required=True,
        type=str.lower,
        choices=sorted(ELECTION_TYPES),
        help="preferred: move leadership to the first replica if it is in the ISR; "
        "unclean: elect a leader for partitions without one, from outside the ISR if need be",
    )
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", metavar="TOPIC", help="the topic to elect leaders for")
    scope.add_argument(
        "--all",
        "--all-topic-partitions",
        dest="all",
        action="store_true",
        help="every partition of every topic",
    )
    scope.add_argument(
        "--path-to-json-file",
        metavar="FILE",
        help='the partitions in Kafka\'s JSON: {"partitions": [{"topic": T, "partition": P}]}',
    )
    parser.add_argument(
        "--partition", type=partition_number, metavar="P", help="only this partition of --topic"
    )
    add_admin_timeout_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_connection_arguments(parser)
    add_tls_arguments(parser)  # the admin API over TLS / mutual TLS (controller.security)
    parser.set_defaults(func=elect_command)


def _partitions_of(port: ZkPort, topic: str) -> list[int]:
    try:
        path = paths.topic_path(topic)
    except ValueError as exc:
        raise AdminError(str(exc)) from None
    try:
        data, _ = port.get(path)
    except NoNodeError:
        raise AdminError(f"topic '{topic}' does not exist") from None
    partitions = sorted(codecs.decode_topic_assignment(topic, data, path).partitions)
    if not partitions:
        # Never sent empty: the controller reads an empty list as every partition.
        raise AdminError(f"topic '{topic}' has no partitions")
    return partitions


def partitions_from_json_file(path: str) -> list[tuple[str, int]]:
    """Kafka's ``--path-to-json-file`` content, in file order; AdminError naming what is
    wrong (an unreadable file, a bad entry, a partition listed twice, an empty list)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as exc:
        raise AdminError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise AdminError(f"{path} is not valid JSON: {exc}") from None
    entries = doc.get("partitions") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise AdminError(f'{path}: expected {{"partitions": [...]}} with at least one partition')
    out: list[tuple[str, int]] = []
    for i, entry in enumerate(entries):
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or not topic.strip():
            raise AdminError(f"{path}: partitions[{i}]: 'topic' must be a non-empty string")
        if type(partition) is not int or not 0 <= partition <= INT32_MAX:
            raise AdminError(
                f"{path}: partitions[{i}]: 'partition' must be a non-negative integer "
                f"(at most {INT32_MAX}), "
                f"got {partition!r}"
            )
        if (topic, partition) in out:
            raise AdminError(f"{path}: duplicate partition {topic}-{partition} in the JSON file")
        out.append((topic, partition))
    return out


def elect_command(args: argparse.Namespace) -> int:
    if args.partition is not None and args.topic is None:
        return fail("--partition needs --topic")
    if args.topic is not None and not args.topic.strip():
        return fail("--topic must not be empty")
    type_name = args.type.upper()
    listed: list[tuple[str, int]] | None = None
    if args.path_to_json_file is not None:
        try:
            listed = partitions_from_json_file(args.path_to_json_file)
        except AdminError as exc:
            return fail(str(exc))

    def action(port: ZkPort) -> int:
        if args.all:
            wanted: list[common_pb2.TopicPartition] = []
        elif listed is not None:
            wanted = [common_pb2.TopicPartition(topic=t, partition=p) for t, p in listed]
        else:
            numbers = (
                [args.partition] if args.partition is not None else _partitions_of(port, args.topic)
            )
            wanted = [common_pb2.TopicPartition(topic=args.topic, partition=p) for p in numbers]
        request = admin_pb2.ElectLeadersRequest(
            election_type=ELECTION_TYPES[args.type], partitions=wanted, timeout_ms=args.timeout_ms
        )
        response = call_controller_admin(
            port, args, "ElectLeaders", request, f"leader election ({type_name})"
        )
        return _report(type_name, response, args.json)

    return run_admin(args, action)


def _report(type_name: str, response: admin_pb2.ElectLeadersResponse, as_json: bool) -> int:
    elected: list[str] = []
    not_needed: list[str] = []
    failed: list[tuple[str, str, str]] = []
    for r in response.results:
        name = f"{r.topic}-{r.partition}"
        if r.error_code == Errors.NONE:
            elected.append(name)
        elif r.error_code == Errors.ELECTION_NOT_NEEDED:
            not_needed.append(name)
        else:
            failed.append((name, error_name(r.error_code), r.error_message))
    if as_json:
        print(
            json.dumps(
                {
                    "election_type": type_name,
                    "results": [
                        {
                            "topic": r.topic,
                            "partition": r.partition,
                            "leader": r.leader if r.error_code == Errors.NONE else None,
                            "error": None
                            if r.error_code == Errors.NONE
                            else error_name(r.error_code),
                            "message": r.error_message or None,
                        }
                        for r in response.results
                    ],
                },
                indent=2,
            )
        )
    else:
        # kafka-leader-election.sh's lines.
        if elected:
            print(
                f"Successfully completed leader election ({type_name}) for partitions "
                + ", ".join(elected)
            )
        if not_needed:
            print("Valid replica already elected for partitions " + ", ".join(not_needed))
        for name, error, message in failed:
            detail = f": {message}" if message and message != error else ""
            print(f"Error completing leader election ({type_name}) for partition: {name}: "
                  f"{error}{detail}")  # fmt: skip
        if not response.results:
            print(f"No partitions to elect ({type_name})")
    if failed:
        return fail(f"{len(failed)} replica(s) could not be elected")
    return 0
