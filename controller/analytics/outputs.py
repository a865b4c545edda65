"""Wiring the transforms into the output datasets (pure: DataFrames in, DataFrames out)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from controller.analytics.transforms import availability, churn, controller, imbalance

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


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


def build(
    timeline: DataFrame,
    periods: DataFrame,
    top_n: int = 20,
    keep: Callable[[DataFrame], DataFrame] = lambda df: df,
    session_timeout_s: float = controller.DEFAULT_SESSION_TIMEOUT_S,
    per_epoch: DataFrame | None = None,
) -> dict[str, Dataset]:
    """All output datasets. ``keep`` marks the intermediates several outputs reuse (the job
    persists them; tests leave them lazy). ``per_epoch``: ``controller.epoch_summary`` of
    the timeline, when the caller has it already."""
    ivals = keep(availability.intervals(timeline))
    windows = keep(availability.unavailability_windows(ivals, periods))
    churn_daily = keep(churn.partition_churn_daily(timeline, periods))
    tenure_rows = keep(controller.tenures(timeline, periods, per_epoch))
    frames: dict[str, DataFrame] = {
        "unavailability_windows": windows,
        "availability_hourly": availability.availability_hourly(ivals, periods),
        "availability_daily": availability.availability_daily(ivals, periods),
        "availability_summary": availability.availability_summary(ivals, windows, periods),
        "elections_hourly": churn.elections_hourly(timeline, periods),
        "unclean_elections": churn.unclean_elections(timeline, windows, periods),
        "partition_churn_daily": churn_daily,
        "broker_churn_daily": churn.broker_churn_daily(timeline, periods),
        "flapping_partitions": churn.flapping_partitions(churn_daily, top_n),
        "controller_tenures": tenure_rows,
        "controller_gaps": controller.gaps(tenure_rows, session_timeout_s),
        "leader_imbalance_hourly": imbalance.leader_imbalance_hourly(timeline, periods),
    }
    return {
        name: Dataset(name, frames[name], by_date, text) for name, by_date, text in CATALOGUE
    }


def bad_records(timeline: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return timeline.where(F.col("bad_reason").isNotNull()).select(
        "cluster", "source_file", F.col("bad_reason").alias("reason"), "raw"
    )
