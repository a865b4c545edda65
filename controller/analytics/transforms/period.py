"""The analysis period of each cluster.

``--from``/``--to`` set it for every cluster; otherwise a cluster's period is the span of its
own log. Records before the period still count: they establish the state (offline partitions,
leaders, preferred replicas) the period starts with.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def periods(
    timeline: DataFrame,
    start: datetime | None = None,
    end: datetime | None = None,
) -> DataFrame:
    """``cluster, period_start, period_end`` for every cluster with usable records."""
    from pyspark.sql import functions as F

    spans = timeline.where(F.col("live")).groupBy("cluster").agg(
        F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts")
    )
    ps = F.lit(start).cast("timestamp") if start else F.col("first_ts")
    pe = F.lit(end).cast("timestamp") if end else F.col("last_ts")
    return spans.select("cluster", ps.alias("period_start"), pe.alias("period_end"))

