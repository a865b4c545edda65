"""Controller failovers: one row per controller tenure (epoch), and the gaps between them.

A tenure starts with an ``elected`` record, becomes useful with ``ready``, and ends with
``resigned`` or, when the controller crashed, silently. The gap with no working controller
runs from that end to the next tenure's ``ready``. A crash's moment is not in the log: the
successor is elected once the dead controller's ZooKeeper session expires, so the crash is
taken to be one session timeout before that election, but never before the dead controller's
last record (which may be much earlier on a quiet cluster).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.analytics import schema as S
from controller.analytics.transforms.facts import Fact, flag, micros, timestamp
from controller.analytics.transforms.steps import seconds_between

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


EPOCH = Fact(0, "epoch", {
    "controller_epoch": "k", "lines": "n1", "bad": "n2", "duplicates": "n3", "not_ok": "n4",
    "records": "n5", "controller_id": "lo1", "first_seen_us": "lo2", "last_seen_us": "hi1",
})
_STEPS = (S.CONTROLLER_ELECTED, S.CONTROLLER_READY, S.CONTROLLER_RESIGNED)
LIFECYCLE = Fact(1, "controller lifecycle", {
    "controller_epoch": "k", "to_state": "label", "first_us": "lo2",
})


def emit() -> list[Column]:
    """Per row, its epoch's counts (every row, bad ones included: rows too broken to carry
    an epoch count under a null epoch); per controller record, its lifecycle step."""
    from pyspark.sql import functions as F

    c = F.col
    live = c("live")
    us = micros(c("ts"))

    return [
        EPOCH.emit(
            F.lit(True),
            controller_epoch=c("controller_epoch"),
            lines=1,
            bad=flag(c("bad_reason").isNotNull()),
            duplicates=flag(c("usable") & c("dup")),
            not_ok=flag(c("bad_reason").isNull() & ~c("usable")),
            records=flag(live),
            controller_id=F.when(live, c("controller_id")),
            first_seen_us=F.when(live, us),
            last_seen_us=F.when(live, us),
        ),
        LIFECYCLE.emit(
            live & (c("kind") == S.KIND_CONTROLLER)
            & c("to_state").isin(*_STEPS),
            controller_epoch=c("controller_epoch"),
            to_state=c("to_state"),
            first_us=us,
        ),
    ]


def epoch_summary(facts: DataFrame) -> DataFrame:
    """Per cluster and controller epoch: the counts the job's per-cluster stats need and the
    facts of each tenure (``records`` counts live rows; the tenure columns consider live rows
    only). Rows too broken to carry an epoch form the group with a null epoch."""
    from pyspark.sql import functions as F

    c = F.col
    steps = LIFECYCLE.view(facts).groupBy("cluster", "controller_epoch").agg(*[
        F.min(F.when(c("to_state") == state, c("first_us"))).alias(f"{state}_us")
        for state in _STEPS
    ])
    return (
        EPOCH.view(facts)
        .join(steps, ["cluster", "controller_epoch"], "left")
        .select(
            "cluster", "controller_epoch", "lines", "bad", "duplicates", "not_ok", "records",
            c("controller_id").cast("int").alias("controller_id"),
            *[timestamp(c(f"{state}_us")).alias(f"{state}_ts") for state in _STEPS],
            timestamp(c("first_seen_us")).alias("first_seen_ts"),
            timestamp(c("last_seen_us")).alias("last_seen_ts"),
        )
    )


def tenures(summary: DataFrame, periods: DataFrame) -> DataFrame:
    """Per cluster and controller epoch (``epoch_summary``): who, when elected, when ready,
    when it ended."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    c = F.col
    per_epoch = summary.where(c("records") > 0)
    w = Window.partitionBy("cluster").orderBy("controller_epoch")
    start = F.coalesce(c("elected_ts"), c("first_seen_ts"))
    end_reason = (
        F.when(c("resigned_ts").isNotNull(), F.lit("resigned"))
        .when(F.lead("controller_epoch").over(w).isNotNull(), F.lit("superseded"))
        .otherwise(F.lit("active"))
    )
    return (
        per_epoch.join(F.broadcast(periods), "cluster")
        .where((start <= c("period_end")) & (c("last_seen_ts") >= c("period_start")))
        .select(
            "cluster",
            "controller_epoch",
            "controller_id",
            "elected_ts",
            "ready_ts",
            "resigned_ts",
            "first_seen_ts",
            "last_seen_ts",
            seconds_between(c("ready_ts"), c("elected_ts")).alias("elected_to_ready_s"),
            end_reason.alias("end_reason"),
            "records",
            F.to_date(start).alias("dt"),
        )
    )


DEFAULT_SESSION_TIMEOUT_S = 18.0  # Kafka's zookeeper.session.timeout.ms default


def gaps(tenure_rows: DataFrame, session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S
         ) -> DataFrame:
    """Between consecutive tenures: from the old controller's end (its resignation, else the
    estimated crash) to the new one being ready (else elected, else first seen). Negative
    spans, where the old controller still logged after its successor was ready, count as
    zero."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    c = F.col
    w = Window.partitionBy("cluster").orderBy("controller_epoch")
    prev = tenure_rows.select(
        "*",
        F.lag("controller_epoch").over(w).alias("from_epoch"),
        F.lag("controller_id").over(w).alias("from_controller"),
        F.lag("resigned_ts").over(w).alias("_resigned_ts"),
        F.lag("last_seen_ts").over(w).alias("_last_seen_ts"),
    )
    elected = F.coalesce(c("elected_ts"), c("first_seen_ts"))
    crash = F.greatest(
        c("_last_seen_ts"),
        F.timestamp_micros(F.unix_micros(elected) - int(session_timeout_s * 1_000_000)),
    )
    prev = prev.withColumn("gap_start", F.coalesce(c("_resigned_ts"), crash)).withColumn(
        "resigned", c("_resigned_ts").isNotNull()
    )
    gap_end = F.coalesce(c("ready_ts"), c("elected_ts"), c("first_seen_ts"))
    return prev.where(c("from_epoch").isNotNull()).select(
        "cluster",
        "from_epoch",
        c("controller_epoch").alias("to_epoch"),
        "from_controller",
        c("controller_id").alias("to_controller"),
        "gap_start",
        gap_end.alias("gap_end"),
        F.greatest(seconds_between(gap_end, c("gap_start")), F.lit(0.0)).alias("gap_s"),
        F.when(c("resigned"), F.lit("resigned")).otherwise(F.lit("crashed")).alias("cause"),
        seconds_between(elected, c("_last_seen_ts")).alias("silence_before_election_s"),
        c("ready_ts").isNull().alias("never_ready"),
        F.to_date("gap_start").alias("dt"),
    )
