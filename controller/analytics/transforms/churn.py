"""Elections, leader churn, ISR churn and flapping, per partition and per broker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.analytics import schema as S
from controller.analytics.transforms.availability import election_label
from controller.analytics.transforms.steps import seconds_between
from controller.analytics.transforms.timeline import OFFLINE

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

KEY = ["cluster", "topic", "partition"]


def _in_period(timeline: DataFrame, periods: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    c = F.col
    return (
        timeline.where(c("live"))
        .join(F.broadcast(periods), "cluster")
        .where((c("ts") >= c("period_start")) & (c("ts") <= c("period_end")))
    )


def elections_hourly(timeline: DataFrame, periods: DataFrame) -> DataFrame:
    """Elections per cluster, hour and type (offline, unclean, preferred, reassign,
    controlled_shutdown)."""
    from pyspark.sql import functions as F

    c = F.col
    rows = _in_period(timeline, periods).where(
        (c("kind") == S.KIND_PARTITION) & c("election").isNotNull()
    )
    return (
        rows.groupBy("cluster", F.date_trunc("hour", c("ts")).alias("hour"),
                     election_label(c("election")).alias("election"))
        .agg(F.count(F.lit(1)).alias("elections"))
        .withColumn("dt", F.to_date("hour"))
    )


def unclean_elections(
    timeline: DataFrame, windows: DataFrame, periods: DataFrame
) -> DataFrame:
    """Every unclean election: who became leader from outside the ISR, after how long."""
    from pyspark.sql import functions as F

    c = F.col
    rows = _in_period(timeline, periods).where(
        (c("kind") == S.KIND_PARTITION) & (c("election") == "offline_unclean")
    )
    ends = windows.where(c("end_reason") == "recovered").select(
        *KEY, c("end_ts").alias("ts"), c("start_ts").alias("offline_since")
    )
    return rows.join(ends, [*KEY, "ts"], "left").select(
        "cluster",
        "ts",
        "topic",
        "partition",
        "leader",
        c("leader_before").alias("previous_leader"),
        "leader_epoch",
        "isr_before",
        c("isr").alias("isr_after"),
        "offline_since",
        seconds_between(c("ts"), c("offline_since")).alias("offline_s"),
        "controller_id",
        "controller_epoch",
        "event",
        F.to_date("ts").alias("dt"),
    )


def _count(cond: Column, name: str) -> Column:
    from pyspark.sql import functions as F

    return F.sum(F.when(cond, 1).otherwise(0)).alias(name)


def partition_churn_daily(timeline: DataFrame, periods: DataFrame) -> DataFrame:
    """Per partition and day: elections, leader changes, times it went leaderless, ISR
    shrinks and expands (from partition and replica records alike)."""
    from pyspark.sql import functions as F

    c = F.col
    is_part = c("kind") == S.KIND_PARTITION
    rows = _in_period(timeline, periods).where(c("topic").isNotNull())
    return rows.groupBy(*KEY, F.to_date("ts").alias("dt")).agg(
        _count(is_part & c("election").isNotNull(), "elections"),
        _count(
            is_part & (c("to_state") == S.ONLINE_PARTITION) & (c("leader") >= 0)
            & c("leader_before").isNotNull() & (c("leader") != c("leader_before")),
            "leader_changes",
        ),
        _count(is_part & (c("phase") == OFFLINE) & (c("phase_before") != OFFLINE),
               "offline_windows"),
        _count(c("isr_removed").isNotNull(), "isr_shrinks"),
        _count(c("isr_added").isNotNull(), "isr_expands"),
    )


def flapping_partitions(churn_daily: DataFrame, top_n: int = 20) -> DataFrame:
    """The ``top_n`` partitions per cluster that changed most often over the period.

    ``flaps`` = leader changes + times leaderless + ISR shrinks: each is the partition
    bouncing; expands are the way back and would double-count.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    c = F.col
    metrics = ["elections", "leader_changes", "offline_windows", "isr_shrinks", "isr_expands"]
    totals = churn_daily.groupBy(*KEY).agg(*[F.sum(m).alias(m) for m in metrics]).withColumn(
        "flaps", c("leader_changes") + c("offline_windows") + c("isr_shrinks")
    )
    w = Window.partitionBy("cluster").orderBy(
        c("flaps").desc(), c("topic"), c("partition")
    )
    return (
        totals.where(c("flaps") > 0)
        .withColumn("rank", F.row_number().over(w))
        .where(c("rank") <= top_n)
        .select("cluster", "rank", "topic", "partition", "flaps", *metrics)
    )


def broker_churn_daily(timeline: DataFrame, periods: DataFrame) -> DataFrame:
    """Per broker and day: leaderships gained and lost, removals from and additions to ISRs,
    replicas going offline, and down events (the broker's replicas going offline together,
    through a failure or a controlled shutdown)."""
    from pyspark.sql import functions as F

    c = F.col
    rows = _in_period(timeline, periods)
    is_part = c("kind") == S.KIND_PARTITION
    changed = is_part & c("lead_before").isNotNull() & (c("lead_after") != c("lead_before"))
    zero = F.lit(0)

    def metric(broker: Column, name: str) -> Column:
        values = {m: zero for m in _BROKER_METRICS}
        values[name] = F.lit(1)
        return F.struct(broker.alias("broker"), *[v.alias(m) for m, v in values.items()])

    none = F.array().cast("array<int>")
    # One struct per broker-level event; conditional ones carry a null broker when they
    # don't apply and are filtered out after the explode.
    events = F.concat(
        F.array(
            metric(F.when(changed & (c("lead_after") >= 0), c("lead_after")),
                   "leaderships_gained"),
            metric(F.when(changed & (c("lead_before") >= 0), c("lead_before")),
                   "leaderships_lost"),
            metric(F.when((c("kind") == S.KIND_REPLICA) & (c("to_state") == S.OFFLINE_REPLICA),
                          c("replica")), "replicas_offline"),
        ),
        F.transform(F.coalesce(c("isr_removed"), none), lambda b: metric(b, "isr_removals")),
        F.transform(F.coalesce(c("isr_added"), none), lambda b: metric(b, "isr_additions")),
    )
    interesting = (
        changed | c("isr_removed").isNotNull() | c("isr_added").isNotNull()
        | ((c("kind") == S.KIND_REPLICA) & (c("to_state") == S.OFFLINE_REPLICA))
    )
    exploded = rows.where(interesting).select(
        "cluster", F.to_date("ts").alias("dt"), F.explode(events).alias("e")
    ).where(c("e.broker").isNotNull()).select("cluster", "dt", "e.*")
    daily = exploded.groupBy("cluster", "broker", "dt").agg(
        *[F.sum(m).alias(m) for m in _BROKER_METRICS]
    )
    downs = _down_events(rows)
    return (
        daily.join(downs, ["cluster", "broker", "dt"], "full")
        .na.fill(0, [*_BROKER_METRICS, "down_events"])
        .select("cluster", "broker", "dt", *_BROKER_METRICS, "down_events")
    )


_BROKER_METRICS = (
    "leaderships_gained", "leaderships_lost", "isr_removals", "isr_additions",
    "replicas_offline",
)


def _down_events(rows: DataFrame) -> DataFrame:
    """Times a broker went down: its replicas go OfflineReplica in a burst when it fails or
    shuts down, and OnlineReplica in a burst when it returns. Seconds with more offline than
    online transitions are "down"; a down second after an up one (or the first) is an event.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    c = F.col
    rr = rows.where(
        (c("kind") == S.KIND_REPLICA)
        & c("to_state").isin(S.OFFLINE_REPLICA, S.ONLINE_REPLICA)
        & c("event").isin(S.EV_BROKER_CHANGE, S.EV_CONTROLLED_SHUTDOWN)
    )
    per_second = rr.groupBy(
        "cluster", c("replica").alias("broker"), F.date_trunc("second", c("ts")).alias("sec")
    ).agg(F.sum(F.when(c("to_state") == S.OFFLINE_REPLICA, 1).otherwise(-1)).alias("net"))
    w = Window.partitionBy("cluster", "broker").orderBy("sec")
    down = (c("net") > 0)
    return (
        per_second.where(c("net") != 0)
        .withColumn("_prev_down", F.lag(down).over(w))
        .where(down & ~F.coalesce(c("_prev_down"), F.lit(False)))
        .groupBy("cluster", "broker", F.to_date("sec").alias("dt"))
        .agg(F.count(F.lit(1)).alias("down_events"))
    )
