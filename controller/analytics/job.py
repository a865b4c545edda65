"""The analysis job: read at one edge, write at the other, transforms in between.

The input is parsed once. The timeline (one shuffle and sort of every record by partition
and time) is reduced in the same pass to the facts every output needs (``outputs.facts``);
only those are persisted, and every output is finished from them. Small outputs are
written concurrently: on a cluster each is its own Spark job, and on a 2-core machine running
them side by side keeps both cores busy while one job waits on its last task.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from controller.analytics import jit, outputs, report
from controller.analytics import schema as S
from controller.analytics.errors import NoRecordsError, OutputNotWritableError, java_root_cause
from controller.analytics.ingest import clean, read_logs
from controller.analytics.session import (
    get_session,
    interrupt_deferred,
    interrupt_without_cancel,
)
from controller.analytics.transforms.controller import epoch_summary
from controller.analytics.transforms.timeline import timeline

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class JobConfig:
    inputs: list[str]
    output: str
    master: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    top_n: int = 20
    report: bool = True
    spark_conf: dict[str, str] = field(default_factory=dict)
    writers: int = 4  # concurrent output writes
    session_timeout_s: float = 18.0  # assumed ZooKeeper session timeout (controller crashes)
    # C2 off in the driver's JVM after the pass (``jit.py``): only for a JVM that ends with
    # the job, as the CLI's does.
    hold_back_c2: bool = False
    # The CLI's console: Spark's log one line per message on a local master, and Ctrl-C
    # without PySpark's cancelling through py4j (``session``). Also only for a process that
    # ends with the job.
    quiet_console: bool = False

    def __post_init__(self) -> None:
        # Naive bounds are UTC. PySpark would read a naive datetime literal in the driver's
        # local time zone, and the fact pass as UTC: one bound, two meanings.
        for name in ("start", "end"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is None:
                object.__setattr__(self, name, value.replace(tzinfo=UTC))


@dataclass
class ClusterStats:
    cluster: str
    lines: int
    bad: int
    duplicates: int
    not_ok: int
    records: int  # the ones analysed
    first_ts: datetime | None
    last_ts: datetime | None
    period_start: datetime | None = None
    period_end: datetime | None = None


@dataclass
class JobResult:
    output: str
    clusters: list[ClusterStats]
    timings: dict[str, float]
    summary: str
    report_path: str | None
    facts: dict[str, Any]

    @property
    def bad(self) -> int:
        return sum(c.bad for c in self.clusters)


class _Timer:
    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = round(time.perf_counter() - t0, 2)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _stats(per_epoch: DataFrame) -> list[ClusterStats]:
    """Per-cluster counts, from ``controller.epoch_summary`` (not another timeline scan)."""
    from pyspark.sql import functions as F

    rows = per_epoch.groupBy("cluster").agg(
        *[F.sum(n).alias(n) for n in ("lines", "bad", "duplicates", "not_ok", "records")],
        # As microseconds: collect() gives naive datetimes in the driver's local time zone
        # (wrong in the report, shifted across a DST change, and not comparable with --from).
        F.unix_micros(F.min("first_seen_ts")).alias("first_ts"),
        F.unix_micros(F.max("last_seen_ts")).alias("last_ts"),
    ).collect()
    stats = []
    for r in rows:
        values = r.asDict()
        values["first_ts"], values["last_ts"] = _utc(values["first_ts"]), _utc(values["last_ts"])
        stats.append(ClusterStats(**values))
    return sorted(stats, key=lambda s: s.cluster or "")


def _utc(micros: int | None) -> datetime | None:
    return None if micros is None else _EPOCH + timedelta(microseconds=micros)


def _periods(spark: SparkSession, stats: list[ClusterStats], cfg: JobConfig) -> DataFrame:
    for s in stats:
        s.period_start = cfg.start or s.first_ts
        s.period_end = cfg.end or s.last_ts
    rows = [
        (s.cluster, s.period_start, s.period_end)
        for s in stats
        if s.period_start and s.period_end and s.period_start <= s.period_end
    ]
    return _local_periods(spark, rows)


_NO_PERIODS = (
    "SELECT * FROM VALUES (CAST(NULL AS STRING), CAST(NULL AS TIMESTAMP), CAST(NULL AS TIMESTAMP))"
    " AS periods(cluster, period_start, period_end) WHERE false"
)


def _local_periods(
    spark: SparkSession, rows: list[tuple[str, datetime, datetime]]
) -> DataFrame:
    """The periods as a relation held by the JVM. ``createDataFrame`` of Python rows would be
    a Python RDD: every output that broadcasts it would run a job in Python workers, and
    executors would need Python. Values are bound as parameters, never spliced into SQL."""
    empty = spark.sql(_NO_PERIODS)  # nullable columns, like createDataFrame's
    if not rows:
        return empty
    markers = ", ".join(f"(:c{i}, :s{i}, :e{i})" for i in range(len(rows)))
    args: dict[str, object] = {}
    for i, (cluster, start, end) in enumerate(rows):
        args.update({f"c{i}": cluster, f"s{i}": start, f"e{i}": end})
    values = spark.sql(
        f"SELECT * FROM VALUES {markers} AS periods(cluster, period_start, period_end)",
        args=args,
    )
    return values.unionByName(empty)


def _is_local(spark: SparkSession) -> bool:
    return (spark.sparkContext.master or "").startswith("local")


def _path(spark: SparkSession, uri: str, child: str | None = None) -> Any:
    """A Hadoop ``Path`` for ``uri`` (or for ``child`` under it), so any output URI works."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(uri)
    return path if child is None else jvm.org.apache.hadoop.fs.Path(path, child)


def _filesystem(spark: SparkSession, path: Any, raw: bool = False) -> Any:
    """The Hadoop ``FileSystem`` of ``path``. ``raw``: the filesystem under a checksummed one
    (the local default), so that report.html and the output check's probe get no .crc file
    beside them; others as they are (also a local filesystem configured raw with
    ``spark.hadoop.fs.file.impl``)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if raw and jvm.org.apache.hadoop.fs.ChecksumFileSystem._java_lang_class.isInstance(fs):
        return fs.getRawFileSystem()
    return fs


def write_text(spark: SparkSession, uri: str, text: str) -> None:
    """Write a small text file through Hadoop's FileSystem, so any output URI works."""
    path = _path(spark, uri)
    stream = _filesystem(spark, path, raw=True).create(path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def delete_file(spark: SparkSession, uri: str) -> None:
    """Remove a file or an empty directory through Hadoop's FileSystem (nothing to do when it
    is not there)."""
    path = _path(spark, uri)
    _filesystem(spark, path).delete(path, False)


def check_output(spark: SparkSession, uri: str) -> bool:
    """Create the output directory and write and remove a probe file in it, before the input
    is read: an output that cannot be written (no permission, a file in the path, a missing
    bucket) is found in seconds, not after the whole parse. True if it created the
    directory."""
    path = _path(spark, uri)
    created = False
    try:
        fs = _filesystem(spark, path, raw=True)
        created = not fs.exists(path)
        if not fs.mkdirs(path) or not fs.getFileStatus(path).isDirectory():
            raise OutputNotWritableError(f"cannot write the output {uri}: not a directory")
        # Named with a leading "_", which Spark's readers skip should it ever be left behind.
        probe = _path(spark, uri, "_zk_controller_write_check")
        fs.create(probe, True).close()
        fs.delete(probe, False)
        return created
    except BaseException as exc:
        if created:  # the probe failed, or Ctrl-C: the directory just made (at most the probe)
            with suppress(Exception):
                fs.delete(path, True)
        if isinstance(exc, Exception) and hasattr(exc, "java_exception"):
            # py4j's Java error: permissions, a file in the path, ...
            raise OutputNotWritableError(
                f"cannot write the output {uri}: {java_root_cause(exc)}"
            ) from None
        raise


def _has_parquet_files(spark: SparkSession, uri: str) -> bool:
    path = _path(spark, uri)
    files = _filesystem(spark, path).listFiles(path, True)
    while files.hasNext():
        if files.next().getPath().getName().endswith(".parquet"):
            return True
    return False


def _write(ds: outputs.Dataset, base: str) -> None:
    from pyspark.sql import functions as F

    # Names the jobs in the Spark UI and event log (per thread: writes run concurrently).
    ds.df.sparkSession.sparkContext.setJobDescription(f"write {ds.name}")
    if ds.by_date:
        # one file per date, not one per task and date
        uri = f"{base}/{ds.name}"
        ds.df.repartition(F.col("dt")).write.mode("overwrite").partitionBy("dt").parquet(uri)
        if not _has_parquet_files(ds.df.sparkSession, uri):
            # No rows (no unclean election in the period, the common case): a partitioned
            # write leaves no file, and a reader could not tell the schema. One empty file
            # carries it.
            ds.df.limit(0).coalesce(1).write.mode("append").parquet(uri)
    else:
        ds.df.coalesce(1).write.mode("overwrite").parquet(f"{base}/{ds.name}")


def _reread(
    spark: SparkSession, datasets: dict[str, outputs.Dataset], base: str
) -> dict[str, outputs.Dataset]:
    return {
        # The plan's schema: an empty dataset has no files to infer one from.
        name: outputs.Dataset(name, spark.read.schema(ds.df.schema).parquet(f"{base}/{name}"),
                              ds.by_date, ds.description)
        for name, ds in datasets.items()
    }


def _fact_pass(
    spark: SparkSession, cfg: JobConfig, keep: Callable[[DataFrame], DataFrame]
) -> tuple[DataFrame, DataFrame, list[ClusterStats]]:
    """The one pass: parse, order each partition's history, reduce it to facts (persisted
    through ``keep``), and the per-cluster counts."""
    from pyspark.sql import functions as F

    records = clean(read_logs(spark, cfg.inputs))
    if cfg.end is not None:
        # Later partition records can't matter (earlier ones set the state). Later controller
        # records can: a gap with no controller that is open at --to ends with an election
        # after it, and without that election the gap was lost. Bad lines are all kept, as
        # before --from: every one is reported and counted, wherever its (bad) time.
        records = records.where(
            F.col("ts").isNull()
            | (F.col("ts") <= F.lit(cfg.end))
            | (F.col("kind") == S.KIND_CONTROLLER)
            | F.col("bad_reason").isNotNull()
        )
    facts = keep(outputs.facts(timeline(records), cfg.start, cfg.end))
    per_epoch = keep(epoch_summary(facts))
    stats = _stats(per_epoch)
    if not stats:
        raise NoRecordsError(f"no lines in the input ({', '.join(cfg.inputs)})")
    return facts, per_epoch, stats


def analyze(spark: SparkSession, cfg: JobConfig) -> JobResult:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    timer = _Timer()
    base = cfg.output.rstrip("/")
    kept: list[DataFrame] = []

    def keep(df: DataFrame) -> DataFrame:
        kept.append(df.persist(StorageLevel.MEMORY_AND_DISK))
        return df

    created = check_output(spark, base)
    try:
        with timer.step("parse_and_facts"):
            facts, per_epoch, stats = _fact_pass(spark, cfg, keep)
    except BaseException:
        if created:  # a failed run leaves no empty output directory (Ctrl-C: if py4j answers)
            with suppress(Exception):  # a JVM that is gone: the first error is the one to tell
                delete_file(spark, base)
        raise
    # What is left is short jobs over small data: C2 costs more than it saves (jit.py).
    with jit.c2_held_back(spark) if cfg.hold_back_c2 else nullcontext():
        periods = F.broadcast(_periods(spark, stats, cfg))
        if _is_local(spark):
            # The facts are small: a handful of tasks per output stage, not one per core x 8.
            cores = spark.sparkContext.defaultParallelism
            spark.conf.set("spark.sql.shuffle.partitions", str(cores))
        datasets = outputs.build(
            facts, periods, cfg.top_n, keep, cfg.session_timeout_s, per_epoch=per_epoch
        )
        with timer.step("outputs"):
            # summary.json is written last, as the mark of a finished run: an earlier run's
            # (and its report) must not sit beside datasets this run is replacing.
            for stale in ("summary.json", "report.html"):
                delete_file(spark, f"{base}/{stale}")
            bad = outputs.Dataset("bad_records", outputs.bad_records(facts), False, "")
            todo = [bad, *datasets.values()]
            with ThreadPoolExecutor(max_workers=max(1, cfg.writers)) as pool:
                futures = [pool.submit(_write, ds, base) for ds in todo]
                try:
                    for future in futures:
                        future.result()
                except BaseException:
                    # A failed write or Ctrl-C: the other writes are not waited for (this
                    # thread is in no py4j call here, so cancelling through it is safe).
                    pool.shutdown(wait=False, cancel_futures=True)
                    with suppress(Exception):
                        spark.sparkContext.cancelAllJobs()
                    raise
        report_path = None
        with timer.step("report"):
            # From what was written, not the lazy plans: re-running them would recompute every
            # output from the timeline a second time.
            report_facts = report.gather(_reread(spark, datasets, base), stats)
            if cfg.report:
                report_path = f"{base}/report.html"
                write_text(spark, report_path, report.render_html(report_facts, stats))
        summary = report.render_text(report_facts, stats, timer.timings)
        write_text(spark, f"{base}/summary.json", json.dumps(
            {"clusters": [vars(s) for s in stats], "timings": timer.timings, "facts": report_facts},
            default=str, indent=2,
        ))
        for df in kept:
            df.unpersist()
    return JobResult(base, stats, timer.timings, summary, report_path, report_facts)


def run(cfg: JobConfig) -> JobResult:
    """Start (or join) a Spark session and analyze."""
    t0 = time.perf_counter()
    with interrupt_deferred() if cfg.quiet_console else nullcontext():
        spark = get_session(cfg.master, cfg.spark_conf, quiet_log=cfg.quiet_console)
        if cfg.quiet_console:
            interrupt_without_cancel()
    started = round(time.perf_counter() - t0, 2)
    result = analyze(spark, cfg)
    result.timings = {"spark_start": started, **result.timings}
    return result
