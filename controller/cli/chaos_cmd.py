"""``zk-controller chaos``: the chaos suite against real processes (``controller.chaos``).

Starts a 3-node ZooKeeper ensemble, 3 controllers and 5 reference brokers on 127.0.0.1, runs
a steady stream of admin operations, injects faults drawn from ``--seed`` (kill -9, session
expiry and freezing of the active controller; broker kills, restarts and bounces; ZooKeeper
follower and leader stops and a freeze of the whole ensemble) until ``--failovers`` controller
failovers happened (or ``--duration`` passed), and checks the invariants of
``controller.invariants`` throughout, then over ZooKeeper's transaction logs. ``--short``
injects each kind of fault once instead.

Exit codes: 0 when no invariant was violated and the cluster recovered from every fault,
1 otherwise, 2 for bad arguments. The report goes to stdout (``--json``: as JSON); progress
and logs go to stderr and to ``--work-dir``, which is kept (a temporary one is removed after
a passing run unless ``--keep``).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from controller.logs import configure_logging, log_level_arg


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {number}")
    return number


def _duration(value: str) -> float:
    """Seconds, or with a unit: 90s, 20m, 1h."""
    units = {"s": 1, "m": 60, "h": 3600}
    text = value.strip().lower()
    scale = units.get(text[-1:])
    try:
        number = float(text[:-1] if scale else text) * (scale or 1)
    except ValueError:
        message = f"expected a duration like 90s or 20m, got {value!r}"
        raise argparse.ArgumentTypeError(message) from None
    if number <= 0:
        raise argparse.ArgumentTypeError("the duration must be positive")
    return number


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "chaos",
        help="run the chaos suite (real ZooKeeper ensemble, controllers and brokers, faults)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seed", type=int, default=1, help="fault and workload seed (default 1)")
    parser.add_argument(
        "--failovers", type=_positive, default=100,
        help="stop after this many controller failovers (default 100)",
    )  # fmt: skip
    parser.add_argument(
        "--duration", type=_duration, default=None,
        help="stop injecting after this long even if fewer failovers happened (e.g. 45m)",
    )  # fmt: skip
    parser.add_argument(
        "--short", action="store_true", help="inject each kind of fault once (the CI run)"
    )
    parser.add_argument(
        "--session-timeout-ms", type=_positive, default=6000,
        help="ZooKeeper session timeout of controllers and brokers (default 6000)",
    )  # fmt: skip
    parser.add_argument("--work-dir", help="logs and ZooKeeper data (default: a temporary dir)")
    parser.add_argument("--keep", action="store_true", help="keep a temporary work dir")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--log-level", default="INFO", type=log_level_arg, help="driver log level (default INFO)"
    )
    parser.set_defaults(func=chaos_command)


def chaos_command(args: argparse.Namespace) -> int:
    from controller.chaos.runner import ChaosRun, ChaosSettings

    configure_logging(args.log_level, "console", stream=sys.stderr)
    # The driver's own ZooKeeper clients reconnect through every ZooKeeper fault on purpose.
    logging.getLogger("kazoo").setLevel(logging.WARNING)
    temporary = args.work_dir is None
    if not temporary and Path(args.work_dir).exists() and any(Path(args.work_dir).iterdir()):
        # A previous run's ZooKeeper data would be picked up by the new ensemble.
        print(f"zk-controller chaos: --work-dir {args.work_dir} is not empty", file=sys.stderr)
        return 2
    work_dir = Path(args.work_dir or tempfile.mkdtemp(prefix="zkc-chaos-"))
    settings = ChaosSettings(
        seed=args.seed,
        work_dir=work_dir,
        short=args.short,
        failovers=args.failovers,
        max_duration_s=args.duration,
        session_timeout_ms=args.session_timeout_ms,
    )
    report = ChaosRun(settings).run()
    (work_dir / "report.json").write_text(report.dumps() + "\n")
    print(report.dumps() if args.json else report.render())
    if temporary and report.passed and not args.keep:
        shutil.rmtree(work_dir, ignore_errors=True)
    return 0 if report.passed else 1
