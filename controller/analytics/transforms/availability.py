"""Partition unavailability: the windows, availability %, and time to recover.

A partition's history becomes a sequence of phase intervals (online, offline, absent, ...),
one per change of phase. An unavailability window is an offline interval: it starts when the
partition lost its leader (OfflinePartition, or leader -1) and ends when a partition record
brought it online again, or when its topic was deleted, or not at all within the data.

A partition whose first record leaves OfflinePartition was offline since before the log
began: that window starts at the period start and its true start is unknown. A partition a
new controller finds offline at its failover lost its leader while no controller was working:
its window starts at the controller gap's start, an estimate. Windows are clipped to the
period for availability; MTTR uses only windows whose recovery was seen, in the period, and
whose start is logged or estimated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.analytics import schema as S
from controller.analytics.transforms.facts import Fact, micros, timestamp
from controller.analytics.transforms.steps import (
    bucket_integrals,
    clip_events,
    seconds_between,
)
from controller.analytics.transforms.timeline import (
    ABSENT,
    DELETING,
    EXISTING,
    OFFLINE,
    ONLINE,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, WindowSpec

KEY = ["cluster", "topic", "partition"]


def election_label(col: Column) -> Column:
    """Election kinds as the outputs name them (offline_unclean is "unclean")."""
    from pyspark.sql import functions as F

    expr = F.when(col.isNull(), F.lit(None).cast("string"))
    for logged, label in S.ELECTION_LABELS.items():
        expr = expr.when(col == logged, F.lit(label))
    return expr.otherwise(col)


EDGE = Fact(5, "phase edge", {
    "topic": "topic", "partition": "k", "ts_us": "t", "seq": "t2", "phase": "x1",
    "controller_epoch": "x2", "controller_id": "x4", "leader": "x3", "election": "label",
    "rows": "n1",
})


def emit() -> list[Column]:
    """The edges of each partition's phase intervals: its phase before its first record
    (no time: since before the log), and every record that changed its phase. Records
    before the period count: they set the phase the period starts with."""
    from pyspark.sql import functions as F

    c = F.col
    part = c("live") & (c("kind") == S.KIND_PARTITION)
    return [
        EDGE.emit(part & c("first") & c("phase_before").isNotNull(),
                  topic=c("topic"), partition=c("partition"), phase=c("phase_before"), rows=1),
        EDGE.emit(part & (c("phase") != c("phase_before")),
                  topic=c("topic"), partition=c("partition"), ts_us=micros(c("ts")),
                  seq=c("seq"), controller_id=c("controller_id"), phase=c("phase"),
                  controller_epoch=c("controller_epoch"), leader=c("leader"),
                  election=c("election"), rows=1),
    ]


def intervals(facts: DataFrame, failovers: DataFrame | None = None) -> DataFrame:
    """Phase intervals: ``KEY, phase, start_ts`` (null: since before the log), ``end_ts``
    (null: still so at the end of the data), and what ended it: ``next_phase``,
    ``end_election``, ``end_leader``, plus ``epoch_at_start``/``epoch_at_end``.

    ``failovers`` (``controller.failover_epochs``): with them, an offline interval that a new
    controller found at its failover, after the partition was online under its predecessor,
    starts at the controller gap's start (``start_estimated``): the predecessor logged
    nothing, so the leader was lost in the gap, not when its successor looked."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    c = F.col
    edges = EDGE.view(facts).select(
        *KEY, timestamp(c("ts_us")).alias("ts"), c("phase").cast("tinyint").alias("phase"),
        "controller_epoch", "election", "leader", "seq", "controller_id",
    )
    # Records of one microsecond in the timeline's order (the phase before the log first).
    w = Window.partitionBy(*KEY).orderBy(
        c("ts").asc_nulls_first(), "controller_epoch", "seq", "controller_id"
    )
    if failovers is None:
        edges = edges.select("*", c("ts").alias("start_ts"), F.lit(False).alias("estimated"))
    else:
        edges = _found_at_failover(edges, failovers, w)
    return edges.select(
        *KEY,
        "phase",
        "start_ts",
        F.lead("start_ts").over(w).alias("end_ts"),
        c("estimated").alias("start_estimated"),
        F.lead("phase").over(w).alias("next_phase"),
        F.lead("election").over(w).alias("end_election"),
        F.lead("leader").over(w).alias("end_leader"),
        c("controller_epoch").alias("epoch_at_start"),
        F.lead("controller_epoch").over(w).alias("epoch_at_end"),
    )


def _found_at_failover(edges: DataFrame, failovers: DataFrame, w: WindowSpec) -> DataFrame:
    """``edges`` with ``start_ts`` (when its phase began) and ``estimated``: an edge to
    offline logged during a failover (by the controller that ended the gap, or one elected
    inside it) from online under an earlier epoch starts at the gap's start, but not before
    the online phase began."""
    from pyspark.sql import functions as F

    c = F.col
    # One row per epoch that may log the failover's findings: an equi-join, not a range
    # join over every edge.
    during = failovers.select(
        "cluster", "controller_epoch",
        c("gap_start_ts").alias("_gap_start"), c("gap_end_ts").alias("_gap_end"),
    )
    before = edges.select(
        "*",
        F.lag("phase").over(w).alias("_phase_before"),
        F.lag("controller_epoch").over(w).alias("_epoch_before"),
        F.lag("ts").over(w).alias("_ts_before"),
    ).join(F.broadcast(during), ["cluster", "controller_epoch"], "left")
    found = F.coalesce(
        (c("phase") == OFFLINE) & (c("_phase_before") == ONLINE)
        & (c("_epoch_before") < c("controller_epoch"))
        & (c("_gap_start") < c("ts"))
        & (c("_gap_end").isNull() | (c("ts") <= c("_gap_end"))),
        F.lit(False),
    )
    # greatest() skips nulls: an online phase since before the log does not bound it.
    start = F.when(found, F.greatest(c("_gap_start"), c("_ts_before"))).otherwise(c("ts"))
    return before.select(*edges.columns, start.alias("start_ts"), found.alias("estimated"))


def clipped(ivals: DataFrame, periods: DataFrame) -> DataFrame:
    """Intervals that overlap their cluster's period, with ``window_start``/``window_end``
    clipped to it and ``duration_s`` in the period."""
    from pyspark.sql import functions as F

    c = F.col
    start = F.greatest(F.coalesce(c("start_ts"), c("period_start")), c("period_start"))
    end = F.least(F.coalesce(c("end_ts"), c("period_end")), c("period_end"))
    return (
        ivals.join(F.broadcast(periods), "cluster")
        .withColumn("window_start", start)
        .withColumn("window_end", end)
        .where(
            (c("window_start") < c("window_end"))
            | ((c("window_start") == c("window_end")) & c("start_ts").isNotNull()
               & (c("start_ts") >= c("period_start")) & (c("start_ts") <= c("period_end")))
        )
        .withColumn("duration_s", seconds_between(c("window_end"), c("window_start")))
    )


def unavailability_windows(ivals: DataFrame, periods: DataFrame) -> DataFrame:
    """Every offline interval overlapping the period (one row per window)."""
    from pyspark.sql import functions as F

    c = F.col
    reason = (
        F.when(c("end_ts").isNull(), F.lit("ongoing"))
        .when(c("next_phase") == ONLINE, F.lit("recovered"))
        .when(c("next_phase").isin(ABSENT, DELETING), F.lit("deleted"))
        .otherwise(F.lit("other"))
    )
    return clipped(ivals.where(c("phase") == OFFLINE), periods).select(
        *KEY,
        "start_ts",
        "end_ts",
        "window_start",
        "window_end",
        "duration_s",
        F.when(c("start_ts").isNotNull() & c("end_ts").isNotNull(),
               seconds_between(c("end_ts"), c("start_ts"))).alias("outage_s"),
        reason.alias("end_reason"),
        (c("start_ts").isNotNull() & ~c("start_estimated")).alias("start_known"),
        "start_estimated",
        election_label(c("end_election")).alias("recovery_election"),
        F.when(c("next_phase") == ONLINE, c("end_leader")).alias("leader_after"),
        "epoch_at_start",
        "epoch_at_end",
        (c("epoch_at_start") != c("epoch_at_end")).alias("controller_failover"),
        F.to_date("window_start").alias("dt"),
    )


def timed() -> Column:
    """Windows whose start is logged or estimated from a controller gap: those MTTR uses."""
    from pyspark.sql import functions as F

    return F.col("start_known") | F.col("start_estimated")


def _exists_events(ivals: DataFrame, periods: DataFrame) -> DataFrame:
    """+1/-1 events for partitions existing and offline, from the clipped intervals."""
    from pyspark.sql import functions as F

    c = F.col
    iv = clipped(ivals.where(c("phase").isin(*EXISTING)), periods)
    offline = (c("phase") == OFFLINE).cast("double")
    edge = F.explode(F.array(
        F.struct(c("window_start").alias("t"), F.lit(1.0).alias("sign")),
        F.struct(c("window_end").alias("t"), F.lit(-1.0).alias("sign")),
    ))
    return iv.select("cluster", "topic", offline.alias("_off"), edge.alias("e")).select(
        "cluster",
        "topic",
        c("e.t").alias("t"),
        c("e.sign").alias("exists"),
        (c("e.sign") * c("_off")).alias("offline"),
    )


def availability_hourly(ivals: DataFrame, periods: DataFrame) -> DataFrame:
    """Per cluster and hour: partition-seconds existing and offline, availability %."""
    from pyspark.sql import functions as F

    c = F.col
    ev = clip_events(_exists_events(ivals, periods), periods)
    hourly = bucket_integrals(ev, ["cluster"], ["exists", "offline"], periods, "hour")
    return hourly.select(
        "cluster",
        c("bucket").alias("hour"),
        c("exists").alias("exists_partition_s"),
        c("offline").alias("offline_partition_s"),
        (c("exists") / c("span_s")).alias("avg_partitions"),
        (c("offline") / c("span_s")).alias("avg_offline_partitions"),
        _pct(c("offline"), c("exists")).alias("availability_pct"),
        F.to_date("bucket").alias("dt"),
    )


def availability_daily(ivals: DataFrame, periods: DataFrame) -> DataFrame:
    """Per cluster, topic and day: partition-seconds existing and offline, availability %."""
    from pyspark.sql import functions as F

    c = F.col
    ev = clip_events(_exists_events(ivals, periods), periods)
    daily = bucket_integrals(ev, ["cluster", "topic"], ["exists", "offline"], periods, "day")
    return daily.where(c("exists") > 0).select(
        "cluster",
        "topic",
        F.to_date("bucket").alias("dt"),
        c("exists").alias("exists_partition_s"),
        c("offline").alias("offline_partition_s"),
        _pct(c("offline"), c("exists")).alias("availability_pct"),
    )


def _pct(offline: Column, exists: Column) -> Column:
    from pyspark.sql import functions as F

    return F.when(exists > 0, (1.0 - offline / exists) * 100.0)


def availability_summary(
    ivals: DataFrame, windows: DataFrame, periods: DataFrame
) -> DataFrame:
    """Over the whole period, per topic (``topic`` set) and per cluster (``topic`` null):
    availability %, window counts, and MTTR p50/p95/p99 over recovered windows."""
    from pyspark.sql import functions as F

    c = F.col
    iv = clipped(ivals.where(c("phase").isin(*EXISTING)), periods)
    offline_s = F.when(c("phase") == OFFLINE, c("duration_s")).otherwise(0.0)
    recovered = c("end_reason") == "recovered"
    mttr = (
        timed() & recovered & (c("end_ts") >= c("period_start"))
        & (c("end_ts") <= c("period_end"))
    )
    win = windows.join(F.broadcast(periods), "cluster").select(
        "cluster", "topic", "duration_s", F.when(mttr, c("outage_s")).alias("_ttr"),
        recovered.alias("_rec"), (c("end_reason") == "deleted").alias("_del"),
        (c("end_reason") == "ongoing").alias("_ong"),
    )
    win_aggs = [
        F.count(F.lit(1)).alias("windows"),
        F.sum(c("_rec").cast("int")).alias("recovered_windows"),
        F.sum(c("_del").cast("int")).alias("deleted_while_offline"),
        F.sum(c("_ong").cast("int")).alias("ongoing_windows"),
        F.percentile("_ttr", 0.5).alias("mttr_p50_s"),
        F.percentile("_ttr", 0.95).alias("mttr_p95_s"),
        F.percentile("_ttr", 0.99).alias("mttr_p99_s"),
        F.max("_ttr").alias("mttr_max_s"),
        F.avg("_ttr").alias("mttr_mean_s"),
    ]
    iv_aggs = [
        F.countDistinct("partition").alias("partitions"),
        F.sum("duration_s").alias("exists_partition_s"),
        F.sum(offline_s).alias("offline_partition_s"),
    ]
    levels = []
    for keys in (["cluster", "topic"], ["cluster"]):
        exist = iv.groupBy(*keys).agg(*iv_aggs) if len(keys) == 2 else (
            iv.groupBy("cluster", "topic", "partition").agg(
                F.sum("duration_s").alias("d"), F.sum(offline_s).alias("o")
            ).groupBy("cluster").agg(
                F.count(F.lit(1)).alias("partitions"),
                F.sum("d").alias("exists_partition_s"),
                F.sum("o").alias("offline_partition_s"),
            )
        )
        level = exist.join(win.groupBy(*keys).agg(*win_aggs), keys, "left")
        if len(keys) == 1:
            level = level.withColumn("topic", F.lit(None).cast("string"))
        levels.append(level)
    both = levels[0].unionByName(levels[1])
    return both.join(F.broadcast(periods), "cluster").select(
        "cluster",
        "topic",
        "period_start",
        "period_end",
        "partitions",
        "exists_partition_s",
        "offline_partition_s",
        _pct(c("offline_partition_s"), c("exists_partition_s")).alias("availability_pct"),
        *[F.coalesce(c(n), F.lit(0)).alias(n) for n in (
            "windows", "recovered_windows", "deleted_while_offline", "ongoing_windows")],
        "mttr_p50_s",
        "mttr_p95_s",
        "mttr_p99_s",
        "mttr_mean_s",
        "mttr_max_s",
    )
