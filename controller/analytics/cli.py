"""Command-line front end of the analytics: ``run``, ``generate`` and ``package``.

It lives in the analytics package (not ``controller.cli``) so that the zip shipped to
spark-submit carries it: ``python -m controller.analytics run ...`` and the spark-submit entry
script both end up here. Nothing here imports pyspark at module level.
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
import os
import signal
import socket
import sys
import threading
import zipfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from controller.analytics.errors import (
    NoRecordsError,
    OutputNotWritableError,
    java_root_cause,
    unreadable_file,
)

ENTRY_SCRIPT = '''"""spark-submit entry point for the zk-controller analytics job."""
import sys

from controller.analytics.cli import main

sys.exit(main(["run", *sys.argv[1:]]))
'''


def timestamp(text: str) -> datetime:
    """ISO-8601 (``2026-11-22``, ``2026-11-22T10:15:30Z``, ...); naive means UTC."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 timestamp: {text!r}") from exc
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _conf(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", "-i", nargs="+", action="extend", required=True, metavar="PATH",
                   help="state-change log files, directories or globs; any Hadoop URI "
                        "(file://, hdfs://, s3a:// with its connector)")
    p.add_argument("--output", "-o", required=True, metavar="DIR",
                   help="output directory (Parquet datasets, report.html, summary.json)")
    p.add_argument("--master", metavar="URL",
                   help="Spark master; default: spark-submit's, else local[*]")
    p.add_argument("--from", dest="start", type=timestamp, metavar="TS",
                   help="period start (earlier records only establish state)")
    p.add_argument("--to", dest="end", type=timestamp, metavar="TS",
                   help="period end (later records are ignored)")
    p.add_argument("--top", type=int, default=20, metavar="N",
                   help="flapping partitions listed per cluster (default 20)")
    p.add_argument("--zk-session-timeout", type=float, default=18.0, metavar="SECONDS",
                   help="ZooKeeper session timeout assumed when dating a controller crash "
                        "(default 18, Kafka's)")
    p.add_argument("--no-report", action="store_true", help="skip report.html")
    p.add_argument("--conf", type=_conf, action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark configuration (repeatable)")


def missing_local_inputs(paths: Iterable[str]) -> list[str]:
    """The local inputs (plain paths or ``file:`` URIs) that name nothing: no such file or
    directory, or a glob that matches nothing. Other filesystems, and Hadoop's ``{a,b}``
    globs, are left to Spark."""
    missing = []
    for path in paths:
        if not path.strip():  # an unset shell variable: not the current directory
            missing.append(repr(path))
            continue
        local = _local(path)
        if local is None or "{" in local:
            continue
        found = glob.glob(local) if glob.has_magic(local) else Path(local).exists()
        if not found:
            missing.append(path)
    return missing


def hidden_local_files(paths: Iterable[str]) -> list[str]:
    """Local input files named explicitly whose names Spark's file listing skips (a leading
    ``_`` or ``.``, as for ``_SUCCESS`` and checksum files): they would read as empty."""
    hidden = []
    for path in paths:
        local = _local(path)
        if local is None or glob.has_magic(local) or "{" in local:
            continue
        if Path(local).name.startswith(("_", ".")) and Path(local).is_file():
            hidden.append(path)
    return hidden


def _local(path: str) -> str | None:
    """A plain path or ``file:`` URI as an absolute local path; None for other schemes."""
    if path.startswith("file:"):
        path = "/" + path.removeprefix("file:").lstrip("/")
    elif "://" in path:
        return None
    return os.path.abspath(path)


def output_inside_input(inputs: Iterable[str], output: str) -> str | None:
    """The input whose files ``output`` is among or under (a directory is read with all it
    holds, so a second run would read the first one's outputs as logs); None if none. A glob
    matches component by component; other filesystems compare as URIs."""
    out_local = _local(output)
    for given in inputs:
        local = _local(given)
        if (local is None) != (out_local is None):
            continue
        base, out = (local, out_local) if local is not None else (given, output)
        assert base is not None and out is not None
        pattern = [p for p in base.split("/") if p]
        target = [p for p in out.split("/") if p]
        if len(target) >= len(pattern) and all(
            "{" in p or fnmatch.fnmatchcase(t, p) for p, t in zip(pattern, target, strict=False)
        ):
            return given
    return None


def unreachable_spark_master(master: str | None, timeout_s: float = 5.0) -> str | None:
    """Why no master of a standalone URL (``spark://host:port[,host:port...]``) accepts a
    connection, one reason per master; None when one does, and for every other kind of
    master. Spark itself retries for a minute and then reports only a stopped SparkContext."""
    if not master or not master.startswith("spark://"):
        return None
    reasons = []
    for address in master.removeprefix("spark://").split(","):
        host, sep, port = address.rpartition(":")
        if not sep or host.endswith(":"):  # no port given (an IPv6 address has brackets)
            host, port = address, "7077"
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return None
        except ValueError:
            reasons.append(f"{address}: not host:port")
        except OSError as exc:
            reasons.append(f"{address}: {exc.strerror or exc}")
    return "; ".join(reasons)


def run_from_args(args: argparse.Namespace) -> int:
    try:
        from controller.analytics.job import JobConfig, run
        from controller.analytics.session import was_interrupted
    except ImportError as exc:  # installed without the [spark] extra
        print(f"error: {exc}: analyze needs PySpark (pip install 'zk-controller[spark]')",
              file=sys.stderr)  # fmt: skip
        return 2

    if args.start and args.end and args.start > args.end:
        print("error: --from is after --to", file=sys.stderr)
        return 2
    # Before Spark starts: a typo should cost no JVM start, and no page of Java stack trace.
    missing = missing_local_inputs(args.input)
    if missing:
        print(f"error: no such input: {', '.join(missing)}", file=sys.stderr)
        return 2
    hidden = hidden_local_files(args.input)
    if hidden:
        print(f"error: Spark skips files whose names start with '_' or '.', so these would read "
              f"as empty: {', '.join(hidden)}; rename or copy them", file=sys.stderr)
        return 2
    inside = output_inside_input(args.input, args.output)
    if inside is not None:
        print(f"error: --output {args.output} is inside the input {inside}: the next run would "
              "read this run's outputs as logs; write it elsewhere", file=sys.stderr)
        return 2
    unreachable = unreachable_spark_master(args.master)
    if unreachable:
        print(f"error: no Spark master reachable at {args.master} ({unreachable})",
              file=sys.stderr)  # fmt: skip
        return 1
    cfg = JobConfig(
        inputs=list(args.input),
        output=args.output,
        master=args.master,
        start=args.start,
        end=args.end,
        top_n=args.top,
        report=not args.no_report,
        spark_conf=dict(args.conf),
        session_timeout_s=args.zk_session_timeout,
        hold_back_c2=True,  # this process, and its JVM, end with the job
        quiet_console=True,
    )
    try:
        result = run(cfg)
    except Exception as exc:
        if was_interrupted():  # Ctrl-C: not whatever the dying JVM made of the call in flight
            raise KeyboardInterrupt from None
        return _report_failure(exc)
    print(result.summary)
    print(f"bad records: {result.bad:,} (in {result.output}/bad_records)")
    if result.report_path:
        print(f"report: {result.report_path}")
    return 0


def _report_failure(exc: Exception) -> int:
    """The job's failure in a line or two and its exit status; unknown errors go on up."""
    if isinstance(exc, NoRecordsError):
        print(f"error: {exc}: nothing analysed, nothing written", file=sys.stderr)
        return 2
    if isinstance(exc, OutputNotWritableError):
        print(f"error: {exc}: nothing analysed", file=sys.stderr)
        return 1
    if type(exc).__name__ == "PySparkRuntimeError":  # e.g. the JVM could not start
        print(f"error: Spark could not start: {' '.join(str(exc).split())}", file=sys.stderr)
        print("hint: Spark needs Java 17 or later: check JAVA_HOME or the java on PATH",
              file=sys.stderr)  # fmt: skip
        return 1
    if type(exc).__name__ == "AnalysisException":  # a missing path, among others
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if type(exc).__name__ == "Py4JJavaError":
        # One line, the JVM's root cause, not a Python and a Java traceback.
        cause = java_root_cause(exc)
        unreadable = unreadable_file(exc)
        if unreadable:
            print(f"error: cannot read {unreadable}: {cause}", file=sys.stderr)
            print(_CORRUPT_FILE_HINT, file=sys.stderr)
            return 1
        print(f"error: {cause}", file=sys.stderr)
        if "stopped SparkContext" in cause:
            print(_STOPPED_HINT, file=sys.stderr)
            return 1
        if "FileSystem" in cause or "ClassNotFoundException" in cause:
            print(_CONNECTOR_HINT, file=sys.stderr)
            return 2
        return 1
    raise exc


_CONNECTOR_HINT = (
    "hint: an input URI's scheme needs its Hadoop connector on Spark's classpath, e.g. "
    "--conf spark.jars.packages=org.apache.hadoop:hadoop-aws:<Spark's Hadoop version> for "
    "s3a:// (docs/analytics.md)"
)


_STOPPED_HINT = (
    "hint: Spark stopped the application before the job finished: the cluster manager gave "
    "up on it (e.g. 'All masters are unresponsive') or killed it; Spark's log above says why"
)


_CORRUPT_FILE_HINT = (
    "hint: a truncated or corrupt file (a .gz cut short, or still being written) stops the "
    "job; --conf spark.sql.files.ignoreCorruptFiles=true analyses what can be read of it and "
    "skips the rest (Spark logs a warning naming each such file)"
)


def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--records", "-n", type=int, required=True, metavar="N",
                   help="lines to write")
    p.add_argument("--out", "-o", required=True, metavar="PATH",
                   help="a file, or a directory (existing, or ending in /) for one file per "
                        "cluster")
    p.add_argument("--clusters", type=int, default=3, metavar="K")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--start", type=timestamp, default=None, metavar="TS",
                   help="first record's time (default 2026-10-01T00:00:00Z)")
    p.add_argument("--days", type=float, default=30.0,
                   help="roughly how long the log spans (default 30)")
    p.add_argument("--clean", action="store_true",
                   help="no duplicate, late or malformed lines")
    p.add_argument("--no-cluster-field", action="store_true",
                   help="omit \"cluster\" (as the controller's own log may)")


def generate_from_args(args: argparse.Namespace) -> int:
    from controller.analytics.generate import DEFAULT_START, Noise, generate

    if args.records <= 0 or args.clusters <= 0 or not args.days > 0:
        print("error: --records, --clusters and --days must be positive", file=sys.stderr)
        return 2
    # SIGTERM as Ctrl-C: unwinding stops the worker processes and removes the partial files
    # (killed outright, the workers went on writing).
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        result = generate(
            args.records,
            args.out,
            clusters=args.clusters,
            seed=args.seed,
            start=args.start or DEFAULT_START,
            days=args.days,
            noise=Noise.none() if args.clean else Noise(),
            write_cluster=not args.no_cluster_field,
        )
    except BrokenPipeError:
        raise  # the reader of --out /dev/stdout went away: main's quiet 141
    except OSError as exc:
        print(f"error: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    size = sum(p.stat().st_size for p in result.paths)
    print(f"wrote {result.lines:,} lines ({size / 1e9:.2f} GB) for clusters "
          f"{', '.join(result.clusters)} to {', '.join(map(str, result.paths))}")
    return 0


def package(out_dir: str | Path) -> tuple[Path, Path]:
    """Build the spark-submit artefacts: the job's code as a zip for ``--py-files`` and the
    entry script to submit."""
    import controller

    root = Path(controller.__file__).resolve().parent
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    archive = out / "zk_controller_analytics.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(root / "__init__.py", "controller/__init__.py")
        for path in sorted((root / "analytics").rglob("*.py")):
            zf.write(path, f"controller/{path.relative_to(root).as_posix()}")
    entry = out / "analyze_main.py"
    entry.write_text(ENTRY_SCRIPT, encoding="utf-8")
    return archive, entry


def package_from_args(args: argparse.Namespace) -> int:
    try:
        archive, entry = package(args.out)
    except OSError as exc:
        print(f"error: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"spark-submit --py-files {archive} {entry} --input ... --output ...")
    return 0


def build_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    sub = parser.add_subparsers(dest="analyze_command", metavar="SUBCOMMAND")
    run_p = sub.add_parser("run", help="analyze state-change logs on Spark")
    add_run_arguments(run_p)
    run_p.set_defaults(func=run_from_args)
    gen_p = sub.add_parser("generate", help="write a synthetic state-change log")
    add_generate_arguments(gen_p)
    gen_p.set_defaults(func=generate_from_args)
    pkg_p = sub.add_parser("package", help="build the zip and entry script for spark-submit")
    pkg_p.add_argument("--out", default="dist", metavar="DIR")
    pkg_p.set_defaults(func=package_from_args)

    def no_subcommand(_args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=no_subcommand)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(argparse.ArgumentParser(
        prog="zk-controller analyze",
        description="Availability analytics over controller state-change logs (PySpark).",
    ))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)
