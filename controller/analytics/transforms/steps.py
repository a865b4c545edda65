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

from controller.analytics.transforms.facts import MICROS_PER_DAY, MICROS_PER_HOUR

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

UNITS = {"hour": "INTERVAL 1 HOUR", "day": "INTERVAL 1 DAY"}
MICROS = {"hour": MICROS_PER_HOUR, "day": MICROS_PER_DAY}


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
    return integrate(bucket_sums(events, keys, measures, unit), keys, measures, periods, unit)


def bucket_sums(
    events: DataFrame, keys: Sequence[str], measures: Sequence[str], unit: str = "hour"
) -> DataFrame:
    """Per key and bucket number (``bucket``: whole units since the epoch, UTC), per measure:
    ``_d_<m>``, the sum of its deltas, and ``_o_<m>``, the sum of each delta times the
    microseconds from the bucket's start to its event."""
    from pyspark.sql import functions as F

    size = MICROS[unit]
    us = F.unix_micros(F.col("t"))
    bucket = F.floor(us / size)
    offset = us - bucket * size
    return events.groupBy(*keys, bucket.alias("bucket")).agg(
        *[F.sum(m).alias(f"_d_{m}") for m in measures],
        *[F.sum(F.col(m) * offset).alias(f"_o_{m}") for m in measures],
    )


def integrate(
    sums: DataFrame,
    keys: Sequence[str],
    measures: Sequence[str],
    periods: DataFrame,
    unit: str = "hour",
) -> DataFrame:
    """``bucket_integrals`` from ``bucket_sums`` (computed by the caller, possibly as facts).

    For each bucket: level at its start x its span, plus each delta over the part of the
    bucket after it: ``_d * (bucket_end - bucket_start) - _o``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    c = F.col
    size = MICROS[unit]
    keys = list(keys)
    grid = (
        sums.select(*keys).distinct()
        .join(F.broadcast(periods), "cluster")
        .select(
            *keys, "period_start", "period_end",
            F.explode(
                F.sequence(
                    F.floor(F.unix_micros(c("period_start")) / size),
                    F.floor(F.unix_micros(c("period_end")) / size),
                )
            ).alias("bucket"),
        )
    )
    w = Window.partitionBy(*keys).orderBy("bucket").rowsBetween(Window.unboundedPreceding, -1)
    joined = grid.join(sums, [*keys, "bucket"], "left").na.fill(
        0, [f"_{p}_{m}" for m in measures for p in ("d", "o")]
    ).withColumn("bucket", F.timestamp_micros(c("bucket") * size))
    bucket_end = F.least(c("bucket") + F.expr(UNITS[unit]), c("period_end"))
    span = seconds_between(bucket_end, F.greatest(c("bucket"), c("period_start")))
    full = seconds_between(bucket_end, c("bucket"))
    return joined.where(span > 0).select(
        *keys,
        "bucket",
        span.alias("span_s"),
        *[
            (
                F.coalesce(F.sum(f"_d_{m}").over(w), F.lit(0)) * span
                + c(f"_d_{m}") * full - c(f"_o_{m}") / 1_000_000.0
            ).cast("double").alias(m)
            for m in measures
        ],
    )
