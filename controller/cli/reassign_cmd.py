"""``zk-controller reassign``: kafka-reassign-partitions.sh against the active controller.

    generate  propose a plan moving the partitions of some topics onto a broker list
    execute   start a plan (AlterPartitionReassignments); --wait follows it to the end;
              --throttle B/s limits the replication it causes
    verify    show where each partition of a plan stands; once nothing is moving, clears
              the replication throttles (unless --preserve-throttles)
    cancel    cancel the reassignments of a plan's partitions that are still in progress,
              and clear the throttles (unless --preserve-throttles)
    list      every reassignment in progress

Plans use Kafka's JSON (--reassignment-json-file), and generate prints Kafka's "Current
partition replica assignment" / "Proposed partition reassignment configuration" blocks.
Every action takes --zookeeper HOST:PORT[/CHROOT] (or ZK_CONNECT): the topic and broker
znodes are read there, and the active controller is found there (a standby's NOT_CONTROLLER
answer is followed). ``execute --via-zookeeper`` writes /admin/reassign_partitions instead, as
Kafka's pre-2.4 tool did. Errors exit 1 with one line on stderr; an invalid plan is refused
before anything is submitted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from controller.admin import reassignment as plans
from controller.admin import throttles
from controller.admin.assignment import AdminError
from controller.admin.controller_client import ControllerClient, NoActiveControllerError
from controller.admin.topic_reads import registered_ids
from controller.api.errors import Errors, error_name
from controller.api.v1 import admin_pb2, common_pb2
from controller.cli.admin_common import (
    ANSWER_GRACE_S,
    OneLineErrorParser,
    add_connection_arguments,
    run_admin,
    with_auth_hint,
)
from controller.cli.argtypes import int_in, positive_ms, positive_seconds, seconds
from controller.core.model import ReplicaAssignment, TopicPartition
from controller.security.cli import add_tls_arguments, channel_opener_from_args
from controller.zk import paths
from controller.zk.errors import ZkError
from controller.zk.port import ZkPort

DEFAULT_RPC_TIMEOUT_S = 30.0
DEFAULT_POLL_INTERVAL_S = 0.5


class ControllerCallError(AdminError):
    """The controller refused the whole request, or could not be reached."""


def register(subparsers: Any) -> None:
    reassign = subparsers.add_parser(
        "reassign",
        help="generate, execute, verify, cancel or list partition reassignments "
        "(kafka-reassign-partitions.sh)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = reassign.add_subparsers(
        dest="reassign_action", metavar="ACTION", required=True, parser_class=OneLineErrorParser
    )

    generate = actions.add_parser("generate", help="propose a reassignment plan")
    generate.add_argument(
        "--topics-to-move-json-file", required=True, metavar="FILE",
        help='topics whose partitions move: {"version":1,"topics":[{"topic":"foo"}]}',
    )  # fmt: skip
    generate.add_argument(
        "--broker-list", required=True, metavar="IDS", help='target brokers, e.g. "1,2,3"'
    )
    generate.add_argument(
        "--disable-rack-aware", action="store_true", help="place replicas ignoring racks"
    )
    generate.set_defaults(func=generate_command)

    execute = actions.add_parser("execute", help="start the reassignments of a plan")
    _plan_argument(execute)
    execute.add_argument(
        "--additional", action="store_true",
        help="start even though other reassignments are in progress",
    )  # fmt: skip
    execute.add_argument(
        "--wait", action="store_true",
        help="follow the reassignments until they finish; exit 1 unless all complete",
    )  # fmt: skip
    execute.add_argument(
        "--wait-timeout-s", type=seconds, default=0.0, metavar="S",
        help="with --wait: give up after S seconds (default: no limit)",
    )  # fmt: skip
    execute.add_argument(
        "--throttle", type=int_in(0, 2**63 - 1), metavar="B/S",
        help="replication throttle in bytes/s for the brokers and replicas of the moves "
        "(Kafka's leader/follower.replication.throttled.*); verify clears it",
    )  # fmt: skip
    execute.add_argument(
        "--via-zookeeper", action="store_true",
        help="write /admin/reassign_partitions (Kafka's pre-2.4 path) instead of calling the "
        "controller",
    )  # fmt: skip
    execute.set_defaults(func=execute_command)

    verify = actions.add_parser("verify", help="show the progress of a plan")
    _plan_argument(verify)
    verify.add_argument("--json", action="store_true", help="print JSON")
    verify.set_defaults(func=verify_command)

    cancel = actions.add_parser("cancel", help="cancel the reassignments of a plan")
    _plan_argument(cancel)
    for action in (verify, cancel):
        action.add_argument(
            "--preserve-throttles", action="store_true",
            help="leave the replication throttles in place",
        )  # fmt: skip
    cancel.set_defaults(func=cancel_command)

    listing = actions.add_parser("list", help="list the reassignments in progress")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=list_command)

    for action in (generate, execute, verify, cancel, listing):
        add_connection_arguments(action)
        add_tls_arguments(action)  # the admin API over TLS / mutual TLS (controller.security)
        action.add_argument(
            "--timeout-s", type=positive_seconds, default=DEFAULT_RPC_TIMEOUT_S, metavar="S",
            help="how long to look for the active controller per call (default %(default)s)",
        )  # fmt: skip
        action.add_argument(  # the name elect and features take
            "--timeout-ms", type=_ms_as_seconds, dest="timeout_s", metavar="MS",
            help="--timeout-s in milliseconds",
        )  # fmt: skip


def _ms_as_seconds(text: str) -> float:
    return positive_ms(text) / 1000


def _plan_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--reassignment-json-file", required=True, metavar="FILE",
        help="the plan, in Kafka's reassignment JSON",
    )  # fmt: skip


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise AdminError(f"cannot read the {what} file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:  # Kafka's JSON is UTF-8 (a UTF-16 export, a binary)
        raise AdminError(
            f"the {what} file {path} is not UTF-8 text (byte {exc.start}: {exc.reason})"
        ) from None


def _run(args: argparse.Namespace, action: Callable[[ZkPort], int]) -> int:
    def wrapped(port: ZkPort) -> int:
        try:
            return action(port)
        except NoActiveControllerError as exc:
            raise ControllerCallError(str(exc)) from None

    return run_admin(args, wrapped)


# -- the admin API --------------------------------------------------------------------------


def _client(port: ZkPort, args: argparse.Namespace) -> ControllerClient:
    # Calls carry the same timeout, at which the controller answers REQUEST_TIMED_OUT.
    return ControllerClient(
        port,
        timeout_s=args.timeout_s,
        channel_opener=channel_opener_from_args(args),
        answer_grace_s=ANSWER_GRACE_S,
    )


def list_ongoing(
    client: ControllerClient, partitions: Sequence[TopicPartition] = ()
) -> dict[TopicPartition, ReplicaAssignment]:
    request = admin_pb2.ListPartitionReassignmentsRequest(
        partitions=[
            common_pb2.TopicPartition(topic=tp.topic, partition=tp.partition) for tp in partitions
        ]
    )
    response = client.admin("ListPartitionReassignments", request)
    if response.error_code != Errors.NONE:
        raise ControllerCallError(
            f"ListPartitionReassignments failed: {error_name(response.error_code)}: "
            f"{response.error_message}"
        )
    return {
        TopicPartition(r.topic, r.partition): ReplicaAssignment(
            tuple(r.replicas), tuple(r.adding_replicas), tuple(r.removing_replicas)
        )
        for r in response.reassignments
    }


def alter(
    client: ControllerClient,
    targets: Mapping[TopicPartition, Sequence[int] | None],
    timeout_s: float,
) -> dict[TopicPartition, str]:
    """Submit (None = cancel); returns the per-partition errors as ``"tp: message"``."""
    request = admin_pb2.AlterPartitionReassignmentsRequest(
        partitions=[
            admin_pb2.ReassignablePartition(
                topic=tp.topic,
                partition=tp.partition,
                replicas=list(targets[tp] or ()),
                cancel=targets[tp] is None,
            )
            for tp in sorted(targets, key=plans.tp_key)
        ],
        timeout_ms=int(timeout_s * 1000),
    )
    response = client.admin("AlterPartitionReassignments", request)
    if response.error_code != Errors.NONE:
        raise ControllerCallError(
            f"AlterPartitionReassignments failed: {error_name(response.error_code)}: "
            f"{response.error_message}"
        )
    return {
        TopicPartition(r.topic, r.partition): (
            f"{error_name(r.error_code)}: {r.error_message}"
            if r.error_message and r.error_message != error_name(r.error_code)
            else error_name(r.error_code)
        )
        for r in response.results
        if r.error_code != Errors.NONE
    }


def _partition_list(tps: Sequence[TopicPartition]) -> str:
    return ",".join(str(tp) for tp in sorted(tps, key=plans.tp_key))


# -- actions --------------------------------------------------------------------------------


def generate_command(args: argparse.Namespace) -> int:
    def action(port: ZkPort) -> int:
        topics = plans.parse_topics_to_move(_read(args.topics_to_move_json_file, "topics-to-move"))
        brokers = plans.parse_broker_list(args.broker_list)
        current, proposed = plans.generate_assignment(
            port, topics, brokers, rack_aware=not args.disable_rack_aware
        )
        print("Current partition replica assignment")
        print(plans.format_reassignment_json(current))
        print()
        print("Proposed partition reassignment configuration")
        print(plans.format_reassignment_json(proposed))
        return 0

    return _run(args, action)


def execute_command(args: argparse.Namespace) -> int:
    def action(port: ZkPort) -> int:
        plan = plans.parse_reassignment_json(_read(args.reassignment_json_file, "reassignment"))
        current = plans.validate_plan(port, plan)
        if args.via_zookeeper:
            # Refused before anything is printed or any throttle written (as Kafka's tool).
            plans.refuse_if_reassignment_znode_exists(port)
            print(_current_block(current))
            with _throttles_left_reported(args):
                if args.throttle is not None:
                    # The moves under way, as the topic znodes record them (no controller call).
                    _set_throttle(port, args, plan, current, plans.moving_partitions(port))
                plans.write_reassignment_znode(port, plan)
            print(f"Successfully started partition reassignment{_s(plan)} for "
                  f"{_partition_list(list(plan))}")  # fmt: skip
            return _wait(port, args, plan) if args.wait else 0
        with _client(port, args) as client:
            ongoing = list_ongoing(client)
            if not args.additional and ongoing:
                raise AdminError(plans.EXISTING_REASSIGNMENT_MESSAGE)
            print(_current_block(current))
            with _throttles_left_reported(args):
                _set_throttle(port, args, plan, current, ongoing)
                errors = alter(client, plan, args.timeout_s)
                if errors:
                    detail = "; ".join(
                        f"{tp}: {errors[tp]}" for tp in sorted(errors, key=plans.tp_key)
                    )
                    raise AdminError(f"error reassigning partition(s): {detail}")
            print(f"Successfully started partition reassignment{_s(plan)} for "
                  f"{_partition_list(list(plan))}")  # fmt: skip
            return _wait(port, args, plan, client) if args.wait else 0

    return _run(args, action)


@contextmanager
def _throttles_left_reported(args: argparse.Namespace) -> Iterator[None]:
    """A failure once throttles may have been written says so, and how to clear them: they
    stay, as Kafka's tool leaves them, but the operator is not left to find them."""
    try:
        yield
    except (AdminError, ZkError, NoActiveControllerError) as exc:
        if args.throttle is None:
            raise
        what = f"ZooKeeper request failed: {exc}" if isinstance(exc, ZkError) else str(exc)
        raise AdminError(with_auth_hint(f"{what}; {THROTTLES_STAY}")) from None


THROTTLES_STAY = (
    "the replication throttles this execute set stay: `reassign verify` with this plan "
    "clears them once nothing is moving"
)


def _set_throttle(
    port: ZkPort,
    args: argparse.Namespace,
    plan: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, ReplicaAssignment],
    ongoing: Mapping[TopicPartition, ReplicaAssignment],
) -> None:
    if args.throttle is None:
        return
    print(throttles.RUN_VERIFY_MESSAGE)
    replicas = {tp: ra.replicas for tp, ra in current.items()}
    throttles.set_throttles(port, throttles.move_map(ongoing, plan, replicas), args.throttle)
    print(f"The inter-broker throttle limit was set to {args.throttle} B/s")


def _clear_throttles(port: ZkPort, plan: Mapping[TopicPartition, Sequence[int]]) -> dict[str, Any]:
    """Kafka's clearAllThrottles, with its two lines on stdout."""
    unreadable: dict[int, str] = {}  # their throttles are cleared too
    brokers = set(plans.registered_brokers(port, unreadable)) | set(unreadable)
    brokers |= {b for r in plan.values() for b in r}
    topics = {tp.topic for tp in plan}
    print(f"Clearing broker-level throttles on broker{_s(brokers)} "
          f"{','.join(str(b) for b in sorted(brokers))}")  # fmt: skip
    print(f"Clearing topic-level throttles on topic{_s(topics)} {','.join(sorted(topics))}")
    changed_brokers, changed_topics = throttles.clear_throttles(port, brokers, topics)
    return {"brokers": changed_brokers, "topics": changed_topics}


def _s(items: Mapping[Any, Any] | Sequence[Any] | set[Any]) -> str:
    return "" if len(items) == 1 else "s"


def _current_block(current: Mapping[TopicPartition, ReplicaAssignment]) -> str:
    assignment = {tp: ra.replicas for tp, ra in current.items()}
    return (
        "Current partition replica assignment\n\n"
        f"{plans.format_reassignment_json(assignment)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )


def _wait(
    port: ZkPort,
    args: argparse.Namespace,
    plan: Mapping[TopicPartition, Sequence[int]],
    client: ControllerClient | None = None,
) -> int:
    """Follow the plan until no partition of it is in progress; print each completion."""
    owned = client is None
    client = client or _client(port, args)
    deadline = time.monotonic() + args.wait_timeout_s if args.wait_timeout_s > 0 else None
    reported: set[TopicPartition] = set()
    absent: set[int] = set()  # the plan's brokers last said to be unregistered
    try:
        print(f"Waiting for {len(plan)} partition reassignment{_s(plan)} to finish...")
        while True:
            # A ZooKeeper submission is not in the controller's list until it is picked up.
            submitted, _ = plans.read_reassignment_znode(port)
            progress = plans.partition_progress(port, plan, list_ongoing(client, list(plan)))
            for tp, p in progress.items():
                if p.done and tp not in reported and not (tp in submitted and not p.completed):
                    reported.add(tp)
                    print(f"[{len(reported)}/{len(plan)}] {p.status_line()}", flush=True)
            if len(reported) == len(plan):
                break
            absent = _report_absent_targets(port, plan, absent)
            if deadline is not None and time.monotonic() > deadline:
                print(plans.format_progress(progress))
                print(f"Gave up waiting after {args.wait_timeout_s:g}s: "
                      f"{len(plan) - len(reported)} still in progress.")  # fmt: skip
                if args.throttle is not None:  # the end of the wait would have cleared them
                    print(f"The reassignment goes on; {THROTTLES_STAY}", file=sys.stderr)
                return 1
            time.sleep(DEFAULT_POLL_INTERVAL_S)
        print(plans.format_progress(progress))
        if args.throttle is not None:
            # What verify would do now: the throttle goes once nothing moves anywhere.
            if list_ongoing(client) or plans.read_reassignment_znode(port)[0]:
                print("Other reassignments are in progress: the throttle stays until verify "
                      "finds none.")  # fmt: skip
            else:
                _clear_throttles(port, plan)
    except KeyboardInterrupt:
        if args.throttle is not None:  # the end of the wait would have cleared them
            print(f"Interrupted: {THROTTLES_STAY}", file=sys.stderr)
        raise
    finally:
        if owned:
            client.close()
    return 0 if all(p.completed for p in progress.values()) else 1


def _report_absent_targets(
    port: ZkPort, plan: Mapping[TopicPartition, Sequence[int]], said: set[int]
) -> set[int]:
    """Say which brokers of the plan are not registered, when that set changes: a move onto
    a dead broker waits for it (with no limit by default), and the wait would otherwise look
    like a slow copy."""
    targets = {b for replicas in plan.values() for b in replicas}
    absent = targets - registered_ids(port)  # the ids only: this runs every poll
    if absent != said:
        if len(absent) == 1:
            print(f"Broker {next(iter(absent))} of the plan is not registered (down?): a move "
                  "onto it finishes once it is back", flush=True)  # fmt: skip
        elif absent:
            print(f"Brokers {','.join(str(b) for b in sorted(absent))} of the plan are not "
                  "registered (down?): a move onto them finishes once they are back",
                  flush=True)  # fmt: skip
        else:
            print("Every broker of the plan is registered again", flush=True)
    return absent


def verify_command(args: argparse.Namespace) -> int:
    def action(port: ZkPort) -> int:
        text = _read(args.reassignment_json_file, "reassignment")
        plan = plans.parse_reassignment_json(text, for_execute=False)
        with _client(port, args) as client:
            everywhere = list_ongoing(client)
        ongoing = {tp: ra for tp, ra in everywhere.items() if tp in plan}
        progress = plans.partition_progress(port, plan, ongoing)
        pending, problem = plans.read_reassignment_znode(port)
        # Kafka's rule: throttles go only when no reassignment is in progress anywhere (it
        # cannot tell which brokers earlier plans throttled).
        clear = not args.preserve_throttles and not everywhere and not pending
        if args.json:
            cleared = _quietly(_clear_throttles, port, plan) if clear else None
            print(json.dumps({
                "partitions": [progress[tp].to_json() for tp in sorted(progress, key=plans.tp_key)],
                "completed": sum(p.completed for p in progress.values()),
                "in_progress": sum(not p.done for p in progress.values()),
                "zookeeper_request_problem": problem,
                "throttles_cleared": cleared,
            }))  # fmt: skip
        else:
            # stdout is Kafka's (scripts grep its status lines); the rest goes to stderr.
            print(plans.format_progress(progress, details=False))
            for tp in sorted(progress, key=plans.tp_key):
                if detail := progress[tp].detail_line():
                    print(f"{tp}: {detail.strip()}", file=sys.stderr)
            done = sum(p.completed for p in progress.values())
            print(f"{done} of {len(progress)} partition reassignment{_s(progress)} completed.",
                  file=sys.stderr)  # fmt: skip
            if clear:
                _clear_throttles(port, plan)
        # A ZooKeeper request stays in the znode until it completes: only what the controller
        # does not report as moving has not started.
        waiting = sorted((set(pending) & set(plan)) - set(everywhere), key=plans.tp_key)
        if waiting and not args.json:
            print(f"Submitted through ZooKeeper, not started yet: {_partition_list(waiting)}",
                  file=sys.stderr)  # fmt: skip
        if problem is not None:
            print(f"WARNING: the controller ignores the pending ZooKeeper request: {problem}",
                  file=sys.stderr)  # fmt: skip
        return 0

    return _run(args, action)


def _quietly(fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """``fn``'s result, its stdout lines dropped (for --json, whose stdout is one document)."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args)


def cancel_command(args: argparse.Namespace) -> int:
    def action(port: ZkPort) -> int:
        text = _read(args.reassignment_json_file, "reassignment")
        plan = plans.parse_reassignment_json(text, for_execute=False)
        with _client(port, args) as client:
            active = sorted(list_ongoing(client, list(plan)), key=plans.tp_key)
            errors = alter(client, dict.fromkeys(active), args.timeout_s) if active else {}
        if errors:
            detail = "; ".join(f"{tp}: {errors[tp]}" for tp in sorted(errors, key=plans.tp_key))
            raise AdminError(f"error cancelling partition reassignment(s): {detail}")
        if active:
            print(f"Successfully cancelled partition reassignment{_s(active)} for: "
                  f"{_partition_list(active)}")  # fmt: skip
        else:
            print("None of the specified partition reassignments are active.")
        # Kafka's next line reports log-dir moves; there are none through this controller.
        print("None of the specified partition moves are active.")
        if not args.preserve_throttles:
            _clear_throttles(port, plan)
        return 0

    return _run(args, action)


def list_command(args: argparse.Namespace) -> int:
    def action(port: ZkPort) -> int:
        with _client(port, args) as client:
            ongoing = list_ongoing(client)
        if args.json:
            print(json.dumps({"reassignments": [
                {"topic": tp.topic, "partition": tp.partition, "replicas": list(ra.replicas),
                 "adding_replicas": list(ra.adding_replicas),
                 "removing_replicas": list(ra.removing_replicas)}
                for tp, ra in sorted(ongoing.items(), key=lambda kv: plans.tp_key(kv[0]))
            ]}))  # fmt: skip
        else:
            print(plans.format_ongoing(ongoing))
        _, problem = plans.read_reassignment_znode(port)
        if problem is not None:  # listed by nobody, yet it blocks --via-zookeeper submissions
            print(f"WARNING: the controller ignores the pending ZooKeeper request: {problem}; "
                  f"delete {paths.REASSIGN_PARTITIONS} (nothing of it runs)",
                  file=sys.stderr)  # fmt: skip
        return 0

    return _run(args, action)
