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
    "controller_epoch": "k", "to_state": "label", "first_us": "lo2", "last_us": "hi1",
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
            last_us=us,
        ),
    ]


def epoch_summary(facts: DataFrame) -> DataFrame:
    """Per cluster and controller epoch: the counts the job's per-cluster stats need and the
    facts of each tenure (``records`` counts live rows; the tenure columns consider live rows
    only). Rows too broken to carry an epoch form the group with a null epoch."""
    from pyspark.sql import functions as F

    c = F.col
    resigned, active = S.CONTROLLER_RESIGNED, (S.CONTROLLER_ELECTED, S.CONTROLLER_READY)
    steps = (
        LIFECYCLE.view(facts)
        .groupBy("cluster", "controller_epoch")
        .agg(
            *[
                F.min(F.when(c("to_state") == state, c("first_us"))).alias(f"{state}_us")
                for state in active
            ],
            F.max(F.when(c("to_state") == resigned, c("last_us"))).alias("last_resigned_us"),
            F.max(F.when(c("to_state").isin(*active), c("last_us"))).alias("last_active_us"),
        )
        # The epoch ended at its last resignation, unless it went on after it: a failover
        # taken up again under the same epoch (the resume path) resigns, then is elected
        # and ready again.
        .withColumn(
            f"{resigned}_us",
            F.when(
                c("last_active_us").isNull() | (c("last_resigned_us") >= c("last_active_us")),
                c("last_resigned_us"),
            ),
        )
    )
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


def all_tenures(summary: DataFrame) -> DataFrame:
    """Per cluster and controller epoch (``epoch_summary``), over the whole log: who, when
    elected, when ready, when it ended."""
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
    # A quiet controller is in charge after its last line, until it resigns or the next one
    # is elected.
    ended = F.coalesce(c("resigned_ts"), F.lead(start).over(w))
    return per_epoch.select(
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
        ended.alias("ended_ts"),
        "records",
        F.to_date(start).alias("dt"),
    )


def tenures(tenure_rows: DataFrame, periods: DataFrame) -> DataFrame:
    """The tenures of ``tenure_rows`` (``all_tenures``) that overlap the period: from the
    election to ``ended_ts`` (the newest one, not resigned, to the end of the data), not
    only while it logged."""
    from pyspark.sql import functions as F

    c = F.col
    start = F.coalesce(c("elected_ts"), c("first_seen_ts"))
    return (
        tenure_rows.join(F.broadcast(periods), "cluster")
        .where(
            (start <= c("period_end"))
            & (F.coalesce(c("ended_ts"), c("period_end")) >= c("period_start"))
        )
        .drop("period_start", "period_end")
    )


DEFAULT_SESSION_TIMEOUT_S = 18.0  # Kafka's zookeeper.session.timeout.ms default


def failover_gaps(
    tenure_rows: DataFrame, session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S
) -> DataFrame:
    """The stretches with no working controller over the whole log, one per failover: from
    the end of one controller that became ready (``start_ts``) to the next one being ready
    (``end_ts``, null while it is not).

    ``tenure_rows`` is ``all_tenures`` (the whole log, so a failover across the period's
    start is still seen). Tenures that never became ready (elected, then gone) are inside a
    gap, not ends of one: ``elections`` counts the elections the gap took. The old
    controller's end is its resignation, if it came before its successor's election; a
    crash (no resignation, nothing logged after that election) is taken to be one session
    timeout before the election, but never before its last record; a controller that went on
    logging, or resigned, after its successor was elected had lost its session unnoticed
    (``session_lost``): one session timeout before the election, but not before it was ready.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    c = F.col
    w = Window.partitionBy("cluster").orderBy("controller_epoch")
    elected = F.coalesce(c("elected_ts"), c("first_seen_ts"))
    t = tenure_rows.select(
        "*",
        elected.alias("_elected"),
        F.lead(elected).over(w).alias("_next_elected"),
        F.lead("controller_epoch").over(w).isNull().alias("_newest"),
    )
    # The chain of working controllers: those that became ready, one already in charge when
    # the log starts (its election is not in it: rotated away), and the newest one, which
    # may be getting ready.
    chain = t.where(c("ready_ts").isNotNull() | c("elected_ts").isNull() | c("_newest"))
    prev = chain.select(
        "*",
        F.lag("controller_epoch").over(w).alias("from_epoch"),
        F.lag("controller_id").over(w).alias("from_controller"),
        F.lag("resigned_ts").over(w).alias("_resigned_ts"),
        F.lag("last_seen_ts").over(w).alias("_last_seen_ts"),
        F.lag("_next_elected").over(w).alias("_succ_elected"),
        F.lag(F.coalesce("ready_ts", "_elected")).over(w).alias("_from_working"),
    ).where(c("from_epoch").isNotNull())
    succ = F.coalesce(c("_succ_elected"), c("_elected"))  # the first election after it
    before_succ = F.timestamp_micros(F.unix_micros(succ) - int(session_timeout_s * 1_000_000))
    resigned_first = c("_resigned_ts").isNotNull() & (c("_resigned_ts") <= succ)
    crashed = ~resigned_first & (c("_last_seen_ts") <= succ)
    # A lost session is dated one timeout before the election, but never before the old
    # controller was working (ready): a controller whose session was ended at once (not timed
    # out) is elected-after within milliseconds, and one timeout back may be before its own
    # election, overlapping the previous gap.
    gap_start = (
        F.when(resigned_first, c("_resigned_ts"))
        .when(crashed, F.greatest(c("_last_seen_ts"), before_succ))
        .otherwise(F.greatest(before_succ, F.least(c("_from_working"), succ)))
    )
    cause = (
        F.when(resigned_first, F.lit("resigned"))
        .when(crashed, F.lit("crashed"))
        .otherwise(F.lit("session_lost"))
    )
    # The newest controller not ready by the end of the data: the gap lasts to the end of the
    # data (null here; ``gaps`` ends it at the period's end).
    gap_end = (
        F.when(c("ready_ts").isNotNull(), c("ready_ts"))
        .when(c("_newest"), F.lit(None).cast("timestamp"))
        .otherwise(F.coalesce(c("elected_ts"), c("first_seen_ts")))
    )
    return prev.select(
        "cluster",
        "from_epoch",
        c("controller_epoch").alias("to_epoch"),
        "from_controller",
        c("controller_id").alias("to_controller"),
        gap_start.alias("start_ts"),
        gap_end.alias("end_ts"),
        cause.alias("cause"),
        (c("controller_epoch") - c("from_epoch")).cast("int").alias("elections"),
        seconds_between(succ, c("_last_seen_ts")).alias("silence_before_election_s"),
        c("ready_ts").isNull().alias("never_ready"),
    )


def failover_epochs(tenure_rows: DataFrame, failovers: DataFrame) -> DataFrame:
    """Per controller epoch that may log a failover's findings (one elected inside the gap,
    or the one that ends it): ``cluster, controller_epoch`` and the gap's ``gap_start_ts``/
    ``gap_end_ts``. From the epochs in the log, not the ranges between gaps' epochs: one
    stray epoch number (2e9) would otherwise mean two billion rows."""
    from pyspark.sql import functions as F

    c = F.col
    epochs = tenure_rows.select("cluster", "controller_epoch")
    spans = failovers.select(
        c("cluster").alias("_cluster"), "from_epoch", "to_epoch",
        c("start_ts").alias("gap_start_ts"), c("end_ts").alias("gap_end_ts"),
    )
    inside = (
        (c("cluster") == c("_cluster"))
        & (c("controller_epoch") > c("from_epoch")) & (c("controller_epoch") <= c("to_epoch"))
    )
    return epochs.join(spans, inside).select(
        "cluster", "controller_epoch", "gap_start_ts", "gap_end_ts"
    )


def gaps(failovers: DataFrame, periods: DataFrame) -> DataFrame:
    """The gaps of ``failovers`` (``failover_gaps``) that overlap the period, clipped to it."""
    from pyspark.sql import functions as F

    c = F.col
    clipped_start = F.greatest(c("start_ts"), c("period_start"))
    clipped_end = F.least(F.coalesce(c("end_ts"), c("period_end")), c("period_end"))
    return (
        failovers.join(F.broadcast(periods), "cluster")
        .where((clipped_end >= c("period_start")) & (c("start_ts") <= c("period_end")))
        .select(
            "cluster",
            "from_epoch",
            "to_epoch",
            "from_controller",
            "to_controller",
            clipped_start.alias("gap_start"),
            clipped_end.alias("gap_end"),
            F.greatest(seconds_between(clipped_end, clipped_start), F.lit(0.0)).alias("gap_s"),
            "cause",
            "elections",
            "silence_before_election_s",
            # Not ready within the period: a successor ready only after --to counts too.
            (c("never_ready") | (c("end_ts") > c("period_end"))).alias("never_ready"),
            (c("start_ts") < c("period_start")).alias("started_before_period"),
            F.to_date(clipped_start).alias("dt"),
        )
    )
