"""The summary's line and cluster count (stdout and the report's subtitle), and its tables."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from controller.analytics.job import ClusterStats
from controller.analytics.report import _table, lines_and_clusters


def _stats(cluster: str, lines: int, bad: int, records: int) -> ClusterStats:
    return ClusterStats(cluster, lines, bad, 0, 0, records, None, None)


def test_clusters_with_records_are_counted() -> None:
    stats = [_stats("prod-eu-1", 1_000, 2, 998), _stats("staging-1", 500, 0, 500)]
    assert lines_and_clusters(stats) == "1,500 lines, 2 cluster(s)"


def test_lines_that_name_no_cluster_are_said_apart() -> None:
    stats = [_stats("default", 141, 141, 0), _stats("prod-eu-1", 9_859, 56, 9_803)]
    assert lines_and_clusters(stats) == (
        "10,000 lines, 1 cluster(s) (141 lines with no usable record under 'default')"
    )


def test_nothing_usable() -> None:
    assert lines_and_clusters([_stats("default", 3, 3, 0)]) == (
        "3 lines, 0 cluster(s) (3 lines with no usable record under 'default')"
    )


def test_table_percentages_keep_their_decimals() -> None:
    html = _table([{"topic": "t", "availability_pct": 99.99612, "ratio": 0.123456}],
                  [("topic", "topic"), ("availability_pct", "availability %"),
                   ("ratio", "ratio")])  # fmt: skip
    assert "<td>99.9961</td>" in html  # not rounded up to a perfect 100
    assert "<td>0.1235</td>" in html


def test_table_flags_read_as_words() -> None:
    html = _table([{"never_ready": True}, {"never_ready": False}], [("never_ready", "never ready")])
    assert "<td>yes</td>" in html and "<td>no</td>" in html


def test_report_rows_are_in_utc_whatever_the_drivers_time_zone(
    spark, monkeypatch: pytest.MonkeyPatch
) -> None:
    # collect() gives naive datetimes in the driver's local zone: on a New York laptop the
    # report's tables and summary.json showed 06:23 for an outage at 11:23 UTC.
    from controller.analytics.report import _rows

    df = spark.sql("SELECT timestamp_micros(1795778582000000) AS t, 1 AS n, "
                   "CAST(NULL AS timestamp) AS never")
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        [row] = _rows(df)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert row == {"t": datetime(2026, 11, 27, 11, 23, 2, tzinfo=UTC), "n": 1, "never": None}


def _facts(**over: object) -> dict:
    facts: dict = {"clusters": {"prod": {"mttr_p50_s": 5.0, "mttr_p95_s": 50.0,
                                          "mttr_p99_s": 500.0}},
                   "worst_topics": [], "availability_hourly": {},
                   "mttr_histogram": [0, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0],
                   "elections_daily": {}, "broker_leaders": {}, "flapping": [], "unclean": [],
                   "unclean_total": 0, "longest_outages": [], "gaps": []}
    facts.update(over)
    return facts


def _cluster(name: str, start: datetime, end: datetime) -> ClusterStats:
    return ClusterStats(name, 10, 0, 0, 0, 10, start, end, start, end)


def test_one_named_cluster_gets_its_percentile_markers_beside_unnamed_lines() -> None:
    from controller.analytics.report import render_html

    day = datetime(2026, 10, 1, tzinfo=UTC)
    stats = [ClusterStats("default", 3, 3, 0, 0, 0, None, None), _cluster("prod", day, day)]
    assert render_html(_facts(), stats).count('class="marker"') == 3


def test_the_elections_chart_has_a_slot_for_every_day_of_the_period() -> None:
    from controller.analytics.report import render_html

    stats = [_cluster("prod", datetime(2026, 10, 1, tzinfo=UTC),
                      datetime(2026, 10, 30, 12, tzinfo=UTC))]
    facts = _facts(elections_daily={"2026-10-01": {"offline": 3}, "2026-10-30": {"offline": 4}})
    html = render_html(facts, stats)
    chart = html[html.index("Elections per day by type") - 200:]
    assert chart.count("<title>2026-10-") == 2  # two bars ...
    assert ">2026-10-13<" in chart and ">2026-10-28<" in chart  # ... on 30 days' axis


def test_a_cluster_with_no_records_in_the_period_says_so() -> None:
    from controller.analytics.report import render_text

    s = ClusterStats("old\x1b[31m", 10, 0, 0, 0, 10, datetime(2026, 10, 1, tzinfo=UTC),
                     datetime(2026, 10, 20, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC),
                     datetime(2026, 10, 20, tzinfo=UTC))
    text = render_text(_facts(clusters={}), [s], {})
    assert "no records after 2026-10-20 00:00:00" in text
    assert "\x1b" not in text and "old\\x1b[31m" in text
