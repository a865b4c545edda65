"""Preferred-leader imbalance and leader counts per broker, hour by hour.

Kafka's auto-rebalance looks, per broker, at the partitions whose preferred replica (the first
in the assignment) is that broker and counts those led by someone else. The state-change log
does not carry assignments, so the preferred replica is what the log shows: the leader chosen
by the latest preferred or reassignment election, or at the partition's creation (see
``timeline.pref_after``). Partitions never seen in such a record have no known preferred
replica and are left out of ``preferred_partitions`` (but still count in ``leaders``).

Values are time-weighted averages over each hour, from the step functions of three per-broker
counts (``steps.integrate``), summed per hour in the fact pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.analytics import schema as S
from controller.analytics.transforms.facts import (
    MICROS_PER_HOUR,
    Bounds,
    Fact,
    flag,
    hour_of,
    micros,
)
from controller.analytics.transforms.steps import integrate
from controller.analytics.transforms.timeline import EXISTING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

_MEASURES = ("leaders", "preferred", "not_led")

# Per broker and hour, each count's deltas (``d_``) and the deltas times the microseconds
# from the hour's start to the change (``o_``): what ``steps.integrate`` needs.
LEADER_HOUR = Fact(8, "leader counts per broker-hour", {
    "broker": "k", "bucket": "t",
    "_d_leaders": "n1", "_d_preferred": "n2", "_d_not_led": "n3",
    "_o_leaders": "n4", "_o_preferred": "n5", "_o_not_led": "n6",
})


def emit(bounds: Bounds) -> list[Column]:
    """At every partition record that moved a leader, a preferred leader, or the partition
    in or out of existence, the change in each broker's three counts. Changes before the
    period happen at its start: they set the counts it begins with."""
    from pyspark.sql import functions as F

    c = F.col
    exists_before = ~c("first") & c("phase_before").isin(*EXISTING)
    exists_after = c("phase").isin(*EXISTING)
    lb = F.when(~c("first"), c("lead_before"))
    pb = F.when(exists_before, c("pref_before"))
    pa = F.when(exists_after, c("pref_after"))
    nb = flag(pb != F.coalesce(lb, F.lit(S.NO_LEADER)))
    na = flag(pa != c("lead_after"))
    us = micros(c("ts"))
    rows = (
        c("live") & (c("kind") == S.KIND_PARTITION) & bounds.not_after(us)
        & (
            c("first") | (c("lead_before") != c("lead_after"))
            | ~c("pref_before").eqNullSafe(c("pref_after"))
            | (c("phase_before") != c("phase"))
        )
    )
    at = bounds.clip(us)
    hour = hour_of(at)
    offset = at - hour * MICROS_PER_HOUR

    def delta(broker: Column, leaders: int, preferred: int, not_led: Column | int) -> Column:
        return LEADER_HOUR.emit(
            rows & broker.isNotNull(), broker=broker, bucket=hour,
            _d_leaders=leaders, _d_preferred=preferred, _d_not_led=not_led,
            _o_leaders=offset * leaders, _o_preferred=offset * preferred,
            _o_not_led=offset * not_led,
        )

    return [
        delta(F.when(lb >= 0, lb), -1, 0, 0),
        delta(F.when(c("lead_after") >= 0, c("lead_after")), 1, 0, 0),
        delta(pb, 0, -1, -nb),
        delta(pa, 0, 1, na),
    ]


def leader_imbalance_hourly(facts: DataFrame, periods: DataFrame) -> DataFrame:
    """Per cluster, broker and hour: average leaders held, partitions preferring the broker,
    how many of those another broker leads, and that as a ratio (Kafka's imbalance ratio)."""
    from pyspark.sql import functions as F

    c = F.col
    hourly = integrate(LEADER_HOUR.view(facts), ["cluster", "broker"], _MEASURES, periods)
    return hourly.select(
        "cluster",
        "broker",
        c("bucket").alias("hour"),
        (c("leaders") / c("span_s")).alias("avg_leaders"),
        (c("preferred") / c("span_s")).alias("avg_preferred_partitions"),
        (c("not_led") / c("span_s")).alias("avg_not_preferred_led"),
        F.when(c("preferred") > 0, c("not_led") / c("preferred")).alias("imbalance_ratio"),
        c("span_s"),  # the hour's seconds inside the period: the weight of its averages
        F.to_date("bucket").alias("dt"),
    )
