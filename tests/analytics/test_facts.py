"""The fact pass: the mechanism every output is finished from (``transforms/facts.py``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.analytics.conftest import Log
from tests.analytics.pipeline import analyze_lines

pytestmark = pytest.mark.spark


def test_identical_bad_lines_are_all_kept(spark, tmp_path: Path) -> None:
    """Facts with equal keys are aggregated; rows that must stay rows keep their count."""
    from controller.analytics.outputs import bad_records

    log = Log()
    log.create(0, "t", 0, [1])
    lines = [*log.lines, "not json", "not json", "not json", "{torn"]
    a = analyze_lines(spark, tmp_path, lines)
    raws = sorted(r.raw for r in bad_records(a.facts).collect())
    assert raws == ["not json", "not json", "not json", "{torn"]


def test_a_fact_kind_names_its_slots_and_codes_are_unique(spark) -> None:
    from controller.analytics.transforms.facts import Fact

    with pytest.raises(ValueError, match="unknown slots"):
        Fact(90, "test: bad slot", {"broker": "no_such_slot"})
    Fact(91, "test: one", {"broker": "k"})
    with pytest.raises(ValueError, match="fact code 91"):
        Fact(91, "test: another", {"broker": "k"})
    one = Fact(91, "test: one", {"broker": "k"})
    with pytest.raises(ValueError, match="no field"):
        one.emit(spark.range(1)["id"] > 0, topic=1)


def test_bounds_are_utc_microseconds() -> None:
    from controller.analytics.transforms.facts import bounds

    start = datetime(2026, 11, 22, 10, 0, 0, 5, tzinfo=UTC)
    b = bounds(start, start + timedelta(hours=1))
    assert b.start_us == 1_795_341_600_000_005
    assert b.end_us - b.start_us == 3_600_000_000
    # Naive means UTC, as on the command line.
    assert bounds(start.replace(tzinfo=None), None).start_us == b.start_us
    assert bounds(None, None) == type(b)(None, None)


def test_hour_buckets_from_facts_match_events(spark, tmp_path: Path) -> None:
    """The per-hour leader counts the fact pass pre-sums equal the step-function integral
    computed from the raw change events (``steps.bucket_integrals``)."""
    from pyspark.sql import functions as F

    from controller.analytics.transforms.period import periods
    from controller.analytics.transforms.steps import bucket_integrals

    log = Log()
    log.create(0, "t", 0, [1, 2])
    log.online(1800, "t", 0, leader=2, isr=[2], frm="OnlinePartition",
               election="controlled_shutdown", event="ControlledShutdown")
    log.online(5000, "t", 0, leader=1, isr=[1, 2], frm="OnlinePartition",
               election="preferred", event="AutoPreferredReplicaLeaderElection")
    log.online(9000, "t", 0, leader=2, isr=[2, 1], frm="OnlinePartition",
               election="controlled_shutdown", event="ControlledShutdown")
    a = analyze_lines(spark, tmp_path, log.lines)
    fact = a["leader_imbalance_hourly"].select(
        "broker", "hour", (F.col("avg_leaders")).alias("v")
    )
    p = periods(a.timeline)
    c = F.col
    leads = a.timeline.where("live and kind = 'partition'").select(
        "cluster", c("ts").alias("t"), "lead_before", "lead_after"
    )
    events = leads.select("cluster", "t", c("lead_after").alias("broker"),
                          F.lit(1.0).alias("leaders")).unionByName(
        leads.where("lead_before >= 0").select(
            "cluster", "t", c("lead_before").alias("broker"), F.lit(-1.0).alias("leaders"))
    ).where("broker >= 0")
    direct = bucket_integrals(events, ["cluster", "broker"], ["leaders"], p).select(
        "broker", c("bucket").alias("hour"), (c("leaders") / c("span_s")).alias("v")
    )
    got = {(r.broker, r.hour): r.v for r in fact.collect()}
    want = {(r.broker, r.hour): r.v for r in direct.collect()}
    assert got.keys() == want.keys() and len(got) == 6
    for key, v in want.items():
        assert got[key] == pytest.approx(v)
