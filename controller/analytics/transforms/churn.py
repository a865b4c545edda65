"""Elections, leader churn, ISR churn and flapping, per partition and per broker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.analytics import schema as S
from controller.analytics.transforms.availability import election_label
from controller.analytics.transforms.facts import (
    Bounds,
    Fact,
    day_date,
    day_of,
    flag,
    hour_of,
    hour_start,
    micros,
    repeated,
    timestamp,
)
from controller.analytics.transforms.steps import seconds_between
from controller.analytics.transforms.timeline import ABSENT, NEW, OFFLINE

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

KEY = ["cluster", "topic", "partition"]


ELECTIONS = Fact(3, "elections per hour", {"hour": "t", "election": "label", "elections": "n1"})
UNCLEAN = Fact(4, "unclean election", {
    "topic": "topic", "partition": "k", "ts_us": "t", "leader": "x1", "previous_leader": "x2",
    "leader_epoch": "x3", "controller_id": "x4", "controller_epoch": "x5",
    "isr_before": "a1", "isr_after": "a2", "event": "label", "rows": "n1",
})
PARTITION_DAY = Fact(2, "partition churn per day", {
    "topic": "topic", "partition": "k", "day": "t", "elections": "n1", "leader_changes": "n2",
    "offline_windows": "n3", "isr_shrinks": "n4", "isr_expands": "n5",
})
# Broker-level events; ISR removals and additions are keyed by the whole set of brokers
# removed or added (``brokers``) and split per broker when finishing: far fewer facts.
BROKER_DAY = Fact(7, "broker churn per day", {
    "broker": "k", "day": "t", "brokers": "a1", "leaderships_gained": "n1",
    "leaderships_lost": "n2", "isr_removals": "n3", "isr_additions": "n4",
    "replicas_offline": "n5",
})
DOWN_SECOND = Fact(6, "replica transitions per broker-second", {
    "broker": "k", "second": "t", "net_offline": "n1", "offline": "n2",
})


def emit(bounds: Bounds) -> list[Column]:
    """Facts of the records in the period: elections, unclean elections, per-partition and
    per-broker churn, and replica transitions for broker down events."""
    from pyspark.sql import functions as F

    c = F.col
    us = micros(c("ts"))
    rows = c("live") & bounds.within(us)
    part = rows & (c("kind") == S.KIND_PARTITION)
    replica = rows & (c("kind") == S.KIND_REPLICA)
    day = day_of(us)

    # A partition's creation (New -> Online; also after its topic was deleted and made again)
    # is no election and no partition leader change, whatever the record's election field
    # says. For brokers it is a leadership gained (and a deletion one lost), as before.
    created = c("phase_before").isin(NEW, ABSENT)
    part_ch = part & ~created
    elected = part_ch & c("election").isNotNull()
    changed = part & c("lead_before").isNotNull() & (c("lead_after") != c("lead_before"))
    return [
        ELECTIONS.emit(elected, hour=hour_of(us), election=c("election"), elections=1),
        UNCLEAN.emit(
            part & (c("election") == "offline_unclean"),
            topic=c("topic"), partition=c("partition"), ts_us=us, leader=c("leader"),
            previous_leader=c("leader_before"), leader_epoch=c("leader_epoch"),
            controller_id=c("controller_id"), controller_epoch=c("controller_epoch"),
            isr_before=c("isr_before"), isr_after=c("isr"), event=c("event"), rows=1,
        ),
        PARTITION_DAY.emit(
            rows & c("topic").isNotNull(),
            topic=c("topic"), partition=c("partition"), day=day,
            elections=flag(elected),
            leader_changes=flag(
                part_ch & (c("to_state") == S.ONLINE_PARTITION) & (c("leader") >= 0)
                & c("leader_before").isNotNull() & (c("leader") != c("leader_before"))
            ),
            offline_windows=flag(part & (c("phase") == OFFLINE) & (c("phase_before") != OFFLINE)),
            isr_shrinks=flag(c("isr_removed").isNotNull()),
            isr_expands=flag(c("isr_added").isNotNull()),
        ),
        BROKER_DAY.emit(changed & (c("lead_after") >= 0), broker=c("lead_after"), day=day,
                        leaderships_gained=1),
        BROKER_DAY.emit(changed & (c("lead_before") >= 0), broker=c("lead_before"), day=day,
                        leaderships_lost=1),
        BROKER_DAY.emit(replica & c("went_offline"), broker=c("replica"), day=day,
                        replicas_offline=1),
        BROKER_DAY.emit(rows & c("isr_removed").isNotNull(), brokers=c("isr_removed"),
                        day=day, isr_removals=1),
        BROKER_DAY.emit(rows & c("isr_added").isNotNull(), brokers=c("isr_added"), day=day,
                        isr_additions=1),
        DOWN_SECOND.emit(
            # Records before the period too: whether a broker was already down when it
            # started decides if its first down second in the period is a new event.
            c("live") & bounds.not_after(us) & (c("kind") == S.KIND_REPLICA)
            & c("to_state").isin(S.OFFLINE_REPLICA, S.ONLINE_REPLICA)
            # A failover's records count too: a broker that died with the old controller is
            # first seen down there (a broker long down is not counted twice: see below).
            & c("event").isin(S.EV_BROKER_CHANGE, S.EV_CONTROLLED_SHUTDOWN, *S.EV_FAILOVER)
            # A deletion's replica steps (a new controller resuming one, a broker's return
            # letting one go ahead) are the topic going away, not its brokers.
            & ~c("replica_going"),
            broker=c("replica"), second=F.floor(us / 1_000_000),
            net_offline=F.when(c("to_state") == S.OFFLINE_REPLICA, 1).otherwise(-1),
            offline=flag(c("to_state") == S.OFFLINE_REPLICA),
        ),
    ]


def elections_hourly(facts: DataFrame) -> DataFrame:
    """Elections per cluster, hour and type (offline, unclean, preferred, reassign,
    controlled_shutdown)."""
    from pyspark.sql import functions as F

    c = F.col
    return ELECTIONS.view(facts).select(
        "cluster",
        hour_start(c("hour")).alias("hour"),
        election_label(c("election")).alias("election"),
        "elections",
        day_date(F.floor(c("hour") / 24)).alias("dt"),
    )


def unclean_elections(facts: DataFrame, windows: DataFrame) -> DataFrame:
    """Every unclean election: who became leader from outside the ISR, after how long."""
    from pyspark.sql import functions as F

    c = F.col
    rows = repeated(UNCLEAN.view(facts)).withColumn("ts", timestamp(c("ts_us")))
    ends = windows.where(c("end_reason") == "recovered").select(
        *KEY, c("end_ts").alias("ts"), c("start_ts").alias("offline_since")
    )
    return rows.join(ends, [*KEY, "ts"], "left").select(
        "cluster",
        "ts",
        "topic",
        "partition",
        "leader",
        "previous_leader",
        "leader_epoch",
        "isr_before",
        "isr_after",
        "offline_since",
        seconds_between(c("ts"), c("offline_since")).alias("offline_s"),
        "controller_id",
        "controller_epoch",
        "event",
        F.to_date("ts").alias("dt"),
    )


def partition_churn_daily(facts: DataFrame) -> DataFrame:
    """Per partition and day: elections, leader changes, times it went leaderless, ISR
    shrinks and expands (from partition and replica records alike)."""
    from pyspark.sql import functions as F

    return PARTITION_DAY.view(facts).select(
        *KEY, day_date(F.col("day")).alias("dt"), *_PARTITION_METRICS
    )


_PARTITION_METRICS = (
    "elections", "leader_changes", "offline_windows", "isr_shrinks", "isr_expands",
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


def broker_churn_daily(facts: DataFrame, periods: DataFrame) -> DataFrame:
    """Per broker and day: leaderships gained and lost, removals from and additions to ISRs,
    replicas going offline, and down events (the broker's replicas going offline together,
    through a failure or a controlled shutdown) in the period."""
    from pyspark.sql import functions as F

    c = F.col
    churn = BROKER_DAY.view(facts)
    per_broker = churn.where(c("brokers").isNull()).drop("brokers")
    # An ISR change counts once for each broker it removed or added.
    per_set = churn.where(c("brokers").isNotNull()).select(
        "cluster", F.explode("brokers").alias("broker"), "day",
        *[c(m) for m in _BROKER_METRICS],
    )
    daily = (
        per_broker.unionByName(per_set)
        .groupBy("cluster", "broker", day_date(c("day")).alias("dt"))
        .agg(*[F.sum(m).alias(m) for m in _BROKER_METRICS])
    )
    downs = _down_events(facts, periods)
    return (
        daily.join(downs, ["cluster", "broker", "dt"], "full")
        .na.fill(0, [*_BROKER_METRICS, "down_events"])
        .select("cluster", "broker", "dt", *_BROKER_METRICS, "down_events")
    )


_BROKER_METRICS = (
    "leaderships_gained", "leaderships_lost", "isr_removals", "isr_additions",
    "replicas_offline",
)


def _down_events(facts: DataFrame, periods: DataFrame) -> DataFrame:
    """Times a broker went down in the period: its replicas go OfflineReplica in a burst when
    it fails or shuts down, and OnlineReplica in a burst when it returns. A second with more
    offline than online transitions leaves the broker down, one with fewer leaves it up, and
    an even one leaves it as it was. A second with offline transitions while the broker was
    up (or first in the log) is an event: a burst down, or a bounce, whose failure and
    return the controller handles in one BrokerChange, so they net out within the second.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    c = F.col
    per_second = DOWN_SECOND.view(facts)
    before = (
        Window.partitionBy("cluster", "broker").orderBy("second")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    ends_down = F.when(c("net_offline") != 0, c("net_offline") > 0)  # null: unchanged
    return (
        per_second.where((c("net_offline") != 0) | (c("offline") > 0))
        .withColumn("_prev_down", F.last(ends_down, ignorenulls=True).over(before))
        .where((c("offline") > 0) & ~F.coalesce(c("_prev_down"), F.lit(False)))
        .join(F.broadcast(periods), "cluster")
        .where(c("second") >= F.floor(F.unix_micros(c("period_start")) / 1_000_000))
        .groupBy("cluster", "broker",
                 day_date(F.floor(c("second") / 86_400)).alias("dt"))
        .agg(F.count(F.lit(1)).alias("down_events"))
    )
