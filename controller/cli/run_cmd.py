"""``zk-controller run``: the controller daemon in the foreground.

It needs a ZooKeeper: ``--zookeeper``, ``ZK_CONNECT``/``ZKC_ZOOKEEPER_CONNECT`` or the config
file's ``zookeeper.connect``. ``--embedded-zookeeper`` instead starts a local one first, a
development convenience that must be asked for: a production host whose configuration lost
its ZooKeeper must fail, not become the controller of an empty cluster of its own.
"""

from __future__ import annotations

import argparse
import sys

from controller.config import (
    ConfigError,
    ControllerConfig,
    add_config_arguments,
    flags_from_args,
    load_config,
    render_effective_config,
)

EMBEDDED_ZOOKEEPER_PORT = 2181


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run the controller daemon in the foreground",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--validate-config",
        action="store_true",
        help="print the effective configuration (or every problem) and exit",
    )
    parser.add_argument(
        "--embedded-zookeeper",
        action="store_true",
        help="start a local development ZooKeeper and run against it (zookeeper.connect must "
        "not be set)",
    )
    parser.add_argument(
        "--embedded-zookeeper-port",
        type=int,
        default=EMBEDDED_ZOOKEEPER_PORT,
        help="port of the --embedded-zookeeper (default 2181)",
    )
    add_config_arguments(parser)
    parser.set_defaults(func=run)


def _only_missing_zookeeper(error: ConfigError) -> bool:
    """The one problem is that no zookeeper.connect was given (a malformed one is reported,
    never replaced by the embedded ZooKeeper)."""
    return all(
        p.key == "zookeeper.connect" and p.source == "config" and p.message.startswith("required")
        for p in error.problems
    )


def run(args: argparse.Namespace) -> int:
    flags = flags_from_args(args)
    embedded = None
    config: ControllerConfig | None
    try:
        loaded = load_config(args.config, flags=flags)
    except ConfigError as error:
        if args.validate_config or not args.embedded_zookeeper or not _only_missing_zookeeper(
            error
        ):
            print(error, file=sys.stderr)
            if _only_missing_zookeeper(error) and not args.validate_config:
                print(
                    "(for a local development ZooKeeper, pass --embedded-zookeeper)",
                    file=sys.stderr,
                )
            return 2
        config = None
    else:
        if args.embedded_zookeeper and not args.validate_config:
            print(
                f"--embedded-zookeeper: zookeeper.connect is already set "
                f"({loaded.zookeeper_connect}); drop one of them",
                file=sys.stderr,
            )
            return 2
        config = loaded
    if args.validate_config:
        assert config is not None  # a config error returned above
        from controller.daemon import check_state_change_log_path, security_file_problems

        problems = [f"security configuration: {p}" for p in security_file_problems(config)]
        try:
            check_state_change_log_path(config)
        except OSError as error:
            problems.append(f"configuration: {error}")
        if problems:
            print("\n".join(problems), file=sys.stderr)  # every problem at once
            return 2
        print(render_effective_config(config))
        return 0
    if config is None:
        from controller.zk.server import LocalZooKeeper, local_zookeeper_problem

        problem = local_zookeeper_problem()
        if problem:
            print(f"no ZooKeeper configured and no embedded one possible: {problem}",
                  file=sys.stderr)
            return 2
        probe = load_config(args.config, flags={**flags, "zookeeper.connect": "127.0.0.1:1"})
        data_dir = probe.embedded_zookeeper_data_dir
        embedded = LocalZooKeeper(port=args.embedded_zookeeper_port, data_dir=data_dir)
        if (start_problem := embedded.start_problem()) is not None:
            print(f"cannot start the embedded ZooKeeper: {start_problem}", file=sys.stderr)
            return 1
        print(f"started embedded ZooKeeper at {embedded.hosts} (data in {data_dir})",
              file=sys.stderr)
        config = load_config(args.config, flags={**flags, "zookeeper.connect": embedded.hosts})

    from controller.daemon import ControllerDaemon
    from controller.security.acls import CredentialsError
    from controller.security.tls import ListenerBindError, TlsConfigError

    final_flags = {**flags, "zookeeper.connect": config.zookeeper_connect} if embedded else flags
    try:
        daemon = ControllerDaemon(
            config, reload_config=lambda: load_config(args.config, flags=final_flags)
        )
    except (CredentialsError, TlsConfigError) as error:  # unreadable secrets or certificates
        print(f"security configuration: {error}", file=sys.stderr)
        if embedded is not None:
            embedded.close()
        return 2
    except ListenerBindError as error:  # a port in use: retried (systemd, every 5 s)
        print(f"zk-controller run: cannot start: {error}", file=sys.stderr)
        if embedded is not None:
            embedded.close()
        return 1
    except OSError as error:  # e.g. log.dir unusable: the state-change log cannot be opened
        print(f"zk-controller run: cannot start: {error}", file=sys.stderr)
        if embedded is not None:
            embedded.close()
        return 2  # a configuration error: restarting would not help (systemd does not)
    from controller.daemon import DaemonStartError

    try:
        daemon.run_forever(exiting=True)  # the process only exits after this
    except DaemonStartError as error:
        print(f"zk-controller run: cannot start: {error}", file=sys.stderr)
        return 1
    finally:
        if embedded is not None:
            embedded.close()
    return 0
