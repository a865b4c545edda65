"""Wiring the transforms into the output datasets (pure: DataFrames in, DataFrames out).

``facts`` is the job's one pass over the timeline: every transform module contributes the
facts it needs (``emit``), and one aggregation computes them all. ``build`` finishes every
output dataset from those facts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from controller.analytics.transforms import availability, churn, controller, imbalance
from controller.analytics.transforms.facts import Fact, aggregate, bounds, repeated

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    df: DataFrame
    by_date: bool  # written partitioned by ``dt``
    description: str


# Name, partitioned by date?, one-line description (also used by the docs and the report).
CATALOGUE: tuple[tuple[str, bool, str], ...] = (
    ("unavailability_windows", True, "every interval a partition had no leader"),
    ("availability_hourly", True, "per cluster and hour: partition-seconds and availability %"),
    ("availability_daily", True, "per topic and day: partition-seconds and availability %"),
    ("availability_summary", False, "per topic and cluster over the period: availability %, "
                                    "windows, MTTR p50/p95/p99"),
    ("elections_hourly", True, "elections per cluster, hour and type"),
    ("unclean_elections", True, "every unclean election"),
    ("partition_churn_daily", True, "per partition and day: elections, leader changes, "
                                    "offline windows, ISR shrinks/expands"),
    ("broker_churn_daily", True, "per broker and day: leaderships gained/lost, ISR "
                                 "removals/additions, replicas offline, down events"),
    ("flapping_partitions", False, "top-N partitions per cluster by flaps over the period"),
    ("controller_tenures", True, "one row per controller epoch: elected, ready, ended"),
    ("controller_gaps", True, "time without a working controller at each failover"),
    ("leader_imbalance_hourly", True, "per broker and hour: leaders, preferred-leader "
                                      "imbalance"),
)

BAD = Fact(9, "bad record", {
    "reason": "label", "raw": "s1", "source_file": "s2", "rows": "n1",
})


def _emit_bad() -> list[Column]:
    from pyspark.sql import functions as F

    c = F.col
    return [BAD.emit(c("bad_reason").isNotNull(), reason=c("bad_reason"), raw=c("raw"),
                     source_file=c("source_file"), rows=1)]


def facts(
    timeline: DataFrame, start: datetime | None = None, end: datetime | None = None
) -> DataFrame:
    """Every fact every output needs, from one pass over the timeline. ``start``/``end``:
    the ``--from``/``--to`` bounds, if any."""
    period = bounds(start, end)
    return aggregate(timeline, [
        *controller.emit(),
        *availability.emit(),
        *churn.emit(period),
        *imbalance.emit(period),
        *_emit_bad(),
    ])


def build(
    facts: DataFrame,
    periods: DataFrame,
    top_n: int = 20,
    keep: Callable[[DataFrame], DataFrame] = lambda df: df,
    session_timeout_s: float = controller.DEFAULT_SESSION_TIMEOUT_S,
    per_epoch: DataFrame | None = None,
) -> dict[str, Dataset]:
    """All output datasets, from ``facts``. ``keep`` marks the intermediates several outputs
    reuse (the job persists them; tests leave them lazy). ``per_epoch``:
    ``controller.epoch_summary`` of the facts, when the caller has it already."""
    summary = controller.epoch_summary(facts) if per_epoch is None else per_epoch
    every_tenure = keep(controller.all_tenures(summary))
    tenure_rows = controller.tenures(every_tenure, periods)
    failovers = keep(controller.failover_gaps(every_tenure, session_timeout_s))
    ivals = keep(availability.intervals(
        facts, controller.failover_epochs(every_tenure, failovers)))
    windows = keep(availability.unavailability_windows(ivals, periods))
    churn_daily = keep(churn.partition_churn_daily(facts))
    frames: dict[str, DataFrame] = {
        "unavailability_windows": windows,
        "availability_hourly": availability.availability_hourly(ivals, periods),
        "availability_daily": availability.availability_daily(ivals, periods),
        "availability_summary": availability.availability_summary(ivals, windows, periods),
        "elections_hourly": churn.elections_hourly(facts),
        "unclean_elections": churn.unclean_elections(facts, windows),
        "partition_churn_daily": churn_daily,
        "broker_churn_daily": churn.broker_churn_daily(facts, periods),
        "flapping_partitions": churn.flapping_partitions(churn_daily, top_n),
        "controller_tenures": tenure_rows,
        "controller_gaps": controller.gaps(failovers, periods),
        "leader_imbalance_hourly": imbalance.leader_imbalance_hourly(facts, periods),
    }
    return {
        name: Dataset(name, frames[name], by_date, text) for name, by_date, text in CATALOGUE
    }


def bad_records(facts: DataFrame) -> DataFrame:
    """Every bad input row: its cluster, file, why it is bad, and its text."""
    return repeated(BAD.view(facts)).select("cluster", "source_file", "reason", "raw")
