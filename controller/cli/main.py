"""The ``zk-controller`` command. Each subcommand lives in its own module with a ``register``."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Sequence

from controller.signals import record_early

# gRPC's C core prints lines of its own on stderr (INFO for a failed TLS handshake, ERROR
# for a port in use): not JSON, not in our format, and they repeat what our logs and errors
# say. Set before any command imports grpc; an operator's GRPC_VERBOSITY (error, or debug
# to see why a handshake failed) wins.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

# Subcommand modules, each exposing ``register(subparsers)``. A module that sets
# ``args.func`` handles its command; ``func`` returns the process exit code.
COMMAND_MODULES = (
    "controller.cli.run_cmd",
    "controller.cli.zookeeper_cmd",
    "controller.cli.topics_cmd",
    "controller.cli.configs_cmd",
    "controller.cli.features_cmd",
    "controller.cli.reassign_cmd",
    "controller.cli.elect_cmd",
    "controller.cli.brokers_cmd",
    "controller.cli.broker_cmd",
    "controller.cli.stack_cmd",
    "controller.cli.status_cmd",
    "controller.cli.bench_cmd",
    "controller.cli.analyze_cmd",
    "controller.cli.chaos_cmd",
)


# The long-running commands that stop on SIGTERM/SIGINT through a ``SignalInbox``.
FOREGROUND_COMMANDS = frozenset({"run", "broker", "zookeeper"})

PIPE_CLOSED = 141  # 128 + SIGPIPE: what a shell reports for a tool its reader went away from
INTERRUPTED = 130  # 128 + SIGINT

# The admin tools exit 1 on usage errors too, as Kafka's do (kafka-topics.sh & co.); the
# daemon-like commands keep argparse's 2.
ADMIN_COMMANDS = frozenset({"topics", "configs", "reassign", "elect", "features", "brokers"})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zk-controller",
        description="A ZooKeeper-backed controller for partitioned, replicated logs.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a real import error inside the module
                raise
            continue  # the module has not been written yet
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in FOREGROUND_COMMANDS:
        # A stop asked for while the command imports is kept for its own handler, not lost.
        record_early((signal.SIGTERM, signal.SIGINT))
    if command == "run":
        # SIGHUP means "reload" to the daemon, whose handler exists only once it starts: a
        # logrotate or `systemctl reload` landing while it imports must not kill it (exit
        # 129, which systemd's Restart=on-failure takes for a clean stop).
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        parser = build_parser()
        try:
            args, extras = parser.parse_known_args(argv)
        except SystemExit as exc:
            if command not in ADMIN_COMMANDS:
                raise
            # argparse has printed the help (0) or the usage and the error (2, or 1 from the
            # admin tools' one-line parsers).
            return 0 if exc.code in (0, None) else 1
        if extras:
            message = f"unrecognized arguments: {' '.join(extras)}"
            if command in ADMIN_COMMANDS:
                print(f"zk-controller {command}: error: {message}", file=sys.stderr)
                return 1
            parser.error(message)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
    except KeyboardInterrupt:
        # Ctrl-C while a tool waits (for ZooKeeper, the controller, a reassignment): the user
        # asked for it, so no traceback; the shell's code for SIGINT. (The daemons handle
        # SIGINT themselves and stop cleanly.)
        print(file=sys.stderr)  # end the line the ^C was echoed on
        return INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``... | head``): stop quietly, as Unix tools do. Python's own
        # flush at exit would fail again on the dead pipe, so stdout goes to /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return PIPE_CLOSED
    return code


if __name__ == "__main__":
    sys.exit(main())
