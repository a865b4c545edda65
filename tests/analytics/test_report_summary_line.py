"""The summary's line and cluster count (stdout and the report's subtitle), and its tables."""

from __future__ import annotations

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
