"""Preferred-leader imbalance and leader counts per broker, hour by hour.

Kafka's auto-rebalance looks, per broker, at the partitions whose preferred replica (the first
in the assignment) is that broker and counts those led by someone else. The state-change log
does not carry assignments, so the preferred replica is what the log shows: the leader chosen
by the latest preferred or reassignment election, or at the partition's creation (see
``timeline.pref_after``). Partitions never seen in such a record have no known preferred
replica and are left out of ``preferred_partitions`` (but still count in ``leaders``).

Values are time-weighted averages over each hour, from the step functions of three per-broker
counts (``steps.bucket_integrals``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.analytics import schema as S
from controller.analytics.transforms.steps import bucket_integrals, clip_events
from controller.analytics.transforms.timeline import EXISTING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

_MEASURES = ("leaders", "preferred", "not_led")


def _delta(broker: Column, leaders: Column, preferred: Column, not_led: Column) -> Column:
    from pyspark.sql import functions as F

    return F.struct(
        broker.alias("broker"),
        leaders.cast("double").alias("leaders"),
        preferred.cast("double").alias("preferred"),
        not_led.cast("double").alias("not_led"),
    )


def broker_events(timeline: DataFrame) -> DataFrame:
    """``cluster, broker, t`` and the change in each count at every partition record that
    moved a leader, a preferred leader, or the partition in or out of existence."""
    from pyspark.sql import functions as F

    c = F.col
    exists_before = ~c("first") & c("phase_before").isin(*EXISTING)
    exists_after = c("phase").isin(*EXISTING)
    lb = F.when(~c("first"), c("lead_before"))
    pb = F.when(exists_before, c("pref_before"))
    pa = F.when(exists_after, c("pref_after"))
    nb = (pb != F.coalesce(lb, F.lit(S.NO_LEADER))).cast("int")
    na = (pa != c("lead_after")).cast("int")
    one, none = F.lit(1), F.lit(0)
    rows = timeline.where(
        c("live") & (c("kind") == S.KIND_PARTITION)
        & (
            c("first") | (c("lead_before") != c("lead_after"))
            | ~c("pref_before").eqNullSafe(c("pref_after"))
            | (c("phase_before") != c("phase"))
        )
    )
    deltas = F.array(
        _delta(F.when(lb >= 0, lb), -one, none, none),
        _delta(F.when(c("lead_after") >= 0, c("lead_after")), one, none, none),
        _delta(pb, none, -one, -nb),
        _delta(pa, none, one, na),
    )
    return (
        rows.select("cluster", c("ts").alias("t"), F.explode(deltas).alias("d"))
        .where(c("d.broker").isNotNull())
        .select("cluster", "t", "d.*")
    )


def leader_imbalance_hourly(timeline: DataFrame, periods: DataFrame) -> DataFrame:
    """Per cluster, broker and hour: average leaders held, partitions preferring the broker,
    how many of those another broker leads, and that as a ratio (Kafka's imbalance ratio)."""
    from pyspark.sql import functions as F

    c = F.col
    ev = clip_events(broker_events(timeline), periods)
    hourly = bucket_integrals(ev, ["cluster", "broker"], _MEASURES, periods, "hour")
    return hourly.select(
        "cluster",
        "broker",
        c("bucket").alias("hour"),
        (c("leaders") / c("span_s")).alias("avg_leaders"),
        (c("preferred") / c("span_s")).alias("avg_preferred_partitions"),
        (c("not_led") / c("span_s")).alias("avg_not_preferred_led"),
        F.when(c("preferred") > 0, c("not_led") / c("preferred")).alias("imbalance_ratio"),
        F.to_date("bucket").alias("dt"),
    )
