"""Time-weighted sums of step functions over hour or day buckets.

Many answers are integrals of a count that changes only at events: partitions offline,
partitions that exist, leaders a broker holds. Splitting every interval into buckets would
multiply rows by the number of buckets a long interval spans (a partition online for a month
is 720 hourly rows). Instead each change is one event (+1 or -1 at time t); per bucket we
need only the level at the bucket's start (the running sum of earlier buckets' deltas) and the
part of the bucket each event covers:

    integral(bucket) = level_at_start * span + sum(delta * (bucket_end - t))

so the work is proportional to events plus buckets, never their product.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

UNITS = {"hour": "INTERVAL 1 HOUR", "day": "INTERVAL 1 DAY"}


def seconds_between(later: Column, earlier: Column) -> Column:
    from pyspark.sql import functions as F

    return (F.unix_micros(later) - F.unix_micros(earlier)) / 1_000_000.0


def clip_events(events: DataFrame, periods: DataFrame, t: str = "t") -> DataFrame:
    """Events moved into their cluster's period: earlier ones happen at its start (they set
    the level the period begins with), later ones are dropped."""
    from pyspark.sql import functions as F

    return (
        events.join(F.broadcast(periods), "cluster")
        .where(F.col(t) <= F.col("period_end"))
        .withColumn(t, F.greatest(F.col(t), F.col("period_start")))
        .drop("period_start", "period_end")
    )


def bucket_integrals(
    events: DataFrame,
    keys: Sequence[str],
    measures: Sequence[str],
    periods: DataFrame,
    unit: str = "hour",
) -> DataFrame:
    """Per key and bucket: ``span_s`` (the bucket's part of the period) and, per measure, the
    integral over the bucket of the step function its deltas describe (unit x seconds).

    ``events`` has ``cluster`` (in ``keys``), the other ``keys``, a timestamp ``t`` already
    within the period (see ``clip_events``) and one delta column per measure. Every bucket of
    the period is returned for every key that has an event, including buckets where nothing
    happened but the level carried on.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    step = F.expr(UNITS[unit])
    keys = list(keys)
    ev = events.join(F.broadcast(periods), "cluster").withColumn(
        "bucket", F.date_trunc(unit, F.col("t"))
    )
    bucket_end = F.least(F.col("bucket") + step, F.col("period_end"))
    sums = ev.groupBy(*keys, "bucket").agg(
        *[F.sum(m).alias(f"_d_{m}") for m in measures],
        *[F.sum(F.col(m) * seconds_between(bucket_end, F.col("t"))).alias(f"_w_{m}")
          for m in measures],
    )
    grid = (
        events.select(*keys).distinct()
        .join(F.broadcast(periods), "cluster")
        .select(
            *keys, "period_start", "period_end",
            F.explode(
                F.sequence(
                    F.date_trunc(unit, F.col("period_start")),
                    F.date_trunc(unit, F.col("period_end")),
                    step,
                )
            ).alias("bucket"),
        )
    )
    w = Window.partitionBy(*keys).orderBy("bucket").rowsBetween(Window.unboundedPreceding, -1)
    joined = grid.join(sums, [*keys, "bucket"], "left").na.fill(
        0, [f"_{p}_{m}" for m in measures for p in ("d", "w")]
    )
    span = seconds_between(
        F.least(F.col("bucket") + step, F.col("period_end")),
        F.greatest(F.col("bucket"), F.col("period_start")),
    )
    return joined.where(span > 0).select(
        *keys,
        "bucket",
        span.alias("span_s"),
        *[
            (F.coalesce(F.sum(f"_d_{m}").over(w), F.lit(0)) * span + F.col(f"_w_{m}"))
            .cast("double").alias(m)
            for m in measures
        ],
    )
