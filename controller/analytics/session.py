"""Creating the SparkSession: embedded ``local[*]`` by default, any master when asked.

Under ``spark-submit`` the master and resources come from spark-submit itself, so nothing
here overrides what is already configured; the embedded defaults apply only when this process
starts the JVM.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

APP_NAME = "zk-controller-analytics"
LOG_LEVEL_ENV = "ZK_CONTROLLER_SPARK_LOG_LEVEL"
# Only for a local master (on a cluster, Spark's warnings about the driver's address and
# lost tasks matter), only for the CLI, and not when ZK_CONTROLLER_SPARK_LOG_LEVEL asks for
# Spark's own log, traces included. As a URI: Spark splits extraJavaOptions on spaces.
QUIET_LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
_QUIET_LOG_OPTION = f"-Dlog4j2.configurationFile={QUIET_LOG_CONFIG.as_uri()}"


def _local_cores(master: str) -> int:
    inner = master[master.find("[") + 1 : master.find("]")] if "[" in master else "1"
    if inner.startswith("*"):
        return os.cpu_count() or 1
    try:
        return max(1, int(inner.split(",")[0]))
    except ValueError:
        return os.cpu_count() or 1


def _default_driver_memory() -> str:
    """Half the machine, for an embedded run: the driver JVM is the whole local cluster."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "4g"
    return f"{max(1, min(32, total // (2 << 30)))}g"


def get_session(
    master: str | None = None,
    conf: dict[str, str] | None = None,
    quiet_log: bool = False,
) -> SparkSession:
    """The job's SparkSession.

    ``master`` None means: whatever spark-submit set, else ``local[*]``. Local runs get a
    shuffle-partition count sized to the cores (the default 200 is for clusters) and enough
    driver heap for the sort and the persisted facts. ``quiet_log`` (the CLI's): Spark's
    console log through ``log4j2.properties`` for a local JVM this process starts.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(APP_NAME)
    running = SparkContext._active_spark_context
    # spark-submit starts the JVM first and hands this process its gateway port.
    submitted = running is not None or "PYSPARK_GATEWAY_PORT" in os.environ
    effective = master or (None if submitted else "local[*]")
    if effective:
        builder = builder.master(effective)
    settings = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
    }
    if effective and effective.startswith("local") and not submitted:
        cores = _local_cores(effective)
        # Enough shuffle partitions to even out the cores, and no coalescing: AQE would
        # merge them down to one per core and leave a core idle behind the slowest.
        settings["spark.sql.shuffle.partitions"] = str(max(8, cores * 8))
        settings["spark.sql.adaptive.coalescePartitions.enabled"] = "false"
        settings["spark.driver.memory"] = _default_driver_memory()
        # 128 MB input splits leave a 2-core machine idle while one slow split finishes.
        settings["spark.sql.files.maxPartitionBytes"] = str(64 << 20)
        # Measured on the 10M-record benchmark (docs/performance.md): re-planning every
        # stage buys nothing on one machine, and G1's concurrent work competes with the
        # two task threads for the cores; throughput GC is ~5-10% faster end to end.
        settings["spark.sql.adaptive.enabled"] = "false"
        # Huge methods: the fact pass's generated code (one method holding every output's
        # facts) is past the JIT's 8000-byte limit; interpreted, it ran 1.6x slower.
        settings["spark.driver.extraJavaOptions"] = (
            "-XX:+UseParallelGC -XX:-DontCompileHugeMethods"
        )
        if quiet_log and not os.environ.get(LOG_LEVEL_ENV) and QUIET_LOG_CONFIG.is_file():
            settings["spark.driver.extraJavaOptions"] += f" {_QUIET_LOG_OPTION}"
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get(LOG_LEVEL_ENV) or "WARN")
    return spark


@contextmanager
def interrupt_deferred() -> Iterator[None]:
    """SIGINT held back while the session starts, then taken by ``interrupt_without_cancel``.
    A Ctrl-C while the JVM launched left an orphaned launcher JVM behind, and one while the
    session was built met PySpark's handler (below). The JVM inherits the blocked signal,
    which changes nothing: PySpark starts it with SIGINT ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a held Ctrl-C lands


def interrupt_without_cancel() -> None:
    """Ctrl-C as a plain KeyboardInterrupt, for a process that ends with the job (the CLI).

    PySpark's SIGINT handler cancels the jobs through py4j from inside whatever py4j call the
    main thread is waiting in: a reentrant call that fails, and py4j logs both failures with
    their tracebacks (a page of them before the command could exit). The JVM ignores SIGINT
    (PySpark starts it so) and stops when this process exits; the job cancels its concurrent
    writes itself (``job.analyze``). After a Ctrl-C, py4j's complaints about the interrupted
    call are dropped."""
    if threading.current_thread() is not threading.main_thread():
        return

    def interrupted(_signum: int, _frame: object) -> None:
        _interrupted.set()
        # py4j logs on its own loggers and, for some failures, on the root logger.
        logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)
        logging.getLogger().addFilter(_not_from_py4j)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupted)


def was_interrupted() -> bool:
    """Whether Ctrl-C came (``interrupt_without_cancel``). The KeyboardInterrupt can arrive
    as another error: PySpark's wrappers call into the JVM again on the way out, and the JVM,
    interrupted too, is gone by then."""
    return _interrupted.is_set()


_interrupted = threading.Event()


def _not_from_py4j(record: logging.LogRecord) -> bool:
    return f"{os.sep}py4j{os.sep}" not in record.pathname
