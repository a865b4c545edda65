"""The report: small facts collected from the outputs, as a self-contained HTML page and as
a short text summary for stdout."""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from html import escape
from typing import TYPE_CHECKING, Any

from controller.analytics import svg
from controller.analytics.transforms import availability

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from controller.analytics.job import ClusterStats
    from controller.analytics.outputs import Dataset

# MTTR histogram bins (upper edges, seconds) and their labels.
MTTR_EDGES = (0.01, 0.1, 1, 10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86400)
MTTR_LABELS = ("<10ms", "10-100ms", "0.1-1s", "1-10s", "10s-1m", "1-5m", "5-15m",
               "15m-1h", "1-4h", "4-12h", "12-24h", ">1d")
TABLE_ROWS = 25


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    """``df`` collected, its timestamps as aware UTC datetimes: PySpark's ``collect()``
    gives naive datetimes in the driver's local time zone, and the report is in UTC."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    stamps = {f.name for f in df.schema.fields if isinstance(f.dataType, TimestampType)}
    if not stamps:
        return [r.asDict() for r in df.collect()]
    micros = df.select(*[
        F.unix_micros(df[name]).alias(name) if name in stamps else df[name]
        for name in df.columns
    ])
    return [
        {k: (_utc(v) if k in stamps else v) for k, v in r.asDict().items()}
        for r in micros.collect()
    ]


def _utc(us: int | None) -> datetime | None:
    return None if us is None else datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)


def gather(datasets: Mapping[str, Dataset], stats: Sequence[ClusterStats]) -> dict[str, Any]:
    """Everything the report shows, as plain (JSON-serialisable) Python data."""
    from pyspark.sql import functions as F

    c = F.col
    d = {name: ds.df for name, ds in datasets.items()}
    windows = d["unavailability_windows"]
    queries: dict[str, Callable[[], Any]] = {
        "summary": lambda: _rows(d["availability_summary"]),
        "hourly": lambda: _rows(
            d["availability_hourly"].select("cluster", "hour", "availability_pct",
                                            "avg_offline_partitions")),
        "mttr": lambda: _rows(
            windows.where(availability.timed() & (c("end_reason") == "recovered"))
            .select(_mttr_bin(c("outage_s")).alias("bin"))
            .groupBy("bin").count()),
        "elections": lambda: _rows(
            d["elections_hourly"].groupBy("cluster", "dt", "election")
            .agg(F.sum("elections").alias("n"))),
        "leaders": lambda: _rows(
            # Weighted by each hour's span: a partial first or last hour counts for less.
            d["leader_imbalance_hourly"].groupBy("cluster", "broker").agg(
                (F.sum(c("avg_leaders") * c("span_s")) / F.sum("span_s")).alias("avg_leaders"),
                F.try_divide(F.sum(c("avg_not_preferred_led") * c("span_s")),
                             F.sum(c("avg_preferred_partitions") * c("span_s")))
                .alias("avg_imbalance"),
                F.max("imbalance_ratio").alias("max_imbalance"))),
        "flapping": lambda: _rows(  # the worst first, across clusters
            d["flapping_partitions"].where(c("rank") <= 10)
            .orderBy(c("flaps").desc(), "cluster", "rank")),
        "unclean": lambda: _rows(
            d["unclean_elections"].orderBy(c("ts")).limit(TABLE_ROWS)
            .select("cluster", "ts", "topic", "partition", "leader", "previous_leader",
                    "isr_before", "offline_s")),
        "unclean_total": lambda: d["unclean_elections"].count(),
        "longest": lambda: _rows(
            windows.orderBy(c("duration_s").desc()).limit(10)
            .select("cluster", "topic", "partition", "window_start", "window_end",
                    "duration_s", "end_reason", "start_known", "controller_failover")),
        "gaps": lambda: _rows(d["controller_gaps"].orderBy(c("gap_s").desc()).limit(10)),
        "tenures": lambda: _rows(
            d["controller_tenures"].groupBy("cluster").agg(
                F.count(F.lit(1)).alias("tenures"),
                F.percentile("elected_to_ready_s", 0.5).alias("ready_p50_s"),
                F.max("elected_to_ready_s").alias("ready_max_s"))),
        "gap_totals": lambda: _rows(
            d["controller_gaps"].groupBy("cluster").agg(
                F.count(F.lit(1)).alias("failovers"), F.sum("gap_s").alias("gap_total_s"),
                F.max("gap_s").alias("gap_max_s"))),
    }
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {k: pool.submit(q) for k, q in queries.items()}
        got = {k: f.result() for k, f in futures.items()}
    return _shape(got, stats)


def _mttr_bin(col: Any) -> Any:
    from pyspark.sql import functions as F

    expr = F.when(col < MTTR_EDGES[0], F.lit(0))
    for i, edge in enumerate(MTTR_EDGES[1:], start=1):
        expr = expr.when(col < edge, F.lit(i))
    return expr.otherwise(F.lit(len(MTTR_EDGES)))


def _shape(got: dict[str, Any], stats: Sequence[ClusterStats]) -> dict[str, Any]:
    clusters: dict[str, dict[str, Any]] = {s.cluster: {} for s in stats}
    topics = []
    for row in got["summary"]:
        if row["topic"] is None:
            clusters.setdefault(row["cluster"], {}).update(row)
        else:
            topics.append(row)
    for key in ("tenures", "gap_totals"):
        for row in got[key]:
            clusters.setdefault(row["cluster"], {}).update(row)
    unclean_by: dict[str, int] = defaultdict(int)
    elections: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    per_day: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in got["elections"]:
        elections[row["cluster"]][row["election"]] += row["n"]
        per_day[str(row["dt"])][row["election"]] += row["n"]
        if row["election"] == "unclean":
            unclean_by[row["cluster"]] += row["n"]
    for name, info in clusters.items():
        info["unclean"] = unclean_by.get(name, 0)
        info["elections"] = dict(elections.get(name, {}))
    hourly: dict[str, list[list[float]]] = defaultdict(list)
    for row in got["hourly"]:
        if row["availability_pct"] is not None:
            hourly[row["cluster"]].append([row["hour"].timestamp(), row["availability_pct"]])
    counts = [0] * len(MTTR_LABELS)
    for row in got["mttr"]:
        counts[row["bin"]] += row["count"]
    leaders: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(got["leaders"], key=lambda r: (r["cluster"], r["broker"])):
        leaders[row["cluster"]].append(row)
    topics.sort(key=lambda r: (r["availability_pct"] if r["availability_pct"] is not None
                               else 100.0, r["cluster"], r["topic"]))
    return {
        "clusters": clusters,
        "worst_topics": topics[:10],
        "availability_hourly": dict(hourly),
        "mttr_histogram": counts,
        "elections_daily": {day: dict(v) for day, v in sorted(per_day.items())},
        "broker_leaders": dict(leaders),
        "flapping": got["flapping"],
        "unclean": got["unclean"],
        "unclean_total": got["unclean_total"],
        "longest_outages": got["longest"],
        "gaps": got["gaps"],
    }


# ---- text ------------------------------------------------------------------------------------

def _dur(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    s = float(seconds)
    if s < 1:
        return f"{s * 1000:.0f}ms"
    if s < 120:
        return f"{s:.1f}s"
    if s < 7200:
        return f"{s / 60:.1f}m"
    if s < 172800:
        return f"{s / 3600:.1f}h"
    return f"{s / 86400:.1f}d"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}%"


def _ts(v: datetime | None) -> str:
    return "-" if v is None else v.strftime("%Y-%m-%d %H:%M:%S")


def _period(s: ClusterStats, arrow: str = " -> ") -> str:
    """The cluster's period; a --from after its last record leaves it none."""
    if s.period_start and s.period_end and s.period_start > s.period_end:
        return f"no records after {_ts(s.period_end)}"
    return f"{_ts(s.period_start)}{arrow}{_ts(s.period_end)}"


def _every_day(per_day: Mapping[str, Any], stats: Sequence[ClusterStats]) -> list[str]:
    """Every date of the period (days without elections too, so a quiet week shows as
    one), from the days with elections when the period is unknown."""
    starts = [s.period_start for s in stats if s.records and s.period_start is not None]
    ends = [s.period_end for s in stats if s.records and s.period_end is not None]
    if not starts or not ends or min(starts) > max(ends):
        return sorted(per_day)
    first, last = min(starts).date(), max(ends).date()
    days = [str(first + timedelta(days=n)) for n in range((last - first).days + 1)]
    return sorted({*days, *per_day})


def _printable(text: str) -> str:
    """A name from the log, safe for a terminal: control characters escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def lines_and_clusters(stats: Sequence[ClusterStats]) -> str:
    """"N lines, K cluster(s)", counting only clusters with a usable record: lines too broken
    to name their cluster (grouped as "default") are said apart, not counted as a cluster."""
    lines = sum(s.lines for s in stats)
    named = [s for s in stats if s.records]
    text = f"{lines:,} lines, {len(named)} cluster(s)"
    empty = [s for s in stats if not s.records]
    if empty:
        where = ", ".join(repr(s.cluster) for s in empty)
        text += f" ({sum(s.lines for s in empty):,} lines with no usable record under {where})"
    return text


def render_text(
    facts: Mapping[str, Any], stats: Sequence[ClusterStats], timings: Mapping[str, float]
) -> str:
    bad = sum(s.bad for s in stats)
    out = [
        f"zk-controller analyze: {lines_and_clusters(stats)}",
        f"  bad records: {bad:,}   duplicates dropped: {sum(s.duplicates for s in stats):,}"
        f"   not-ok records ignored: {sum(s.not_ok for s in stats):,}",
        f"  {'cluster':<14} {'period (UTC)':<41} {'availability':>12} {'windows':>8} "
        f"{'MTTR p50/p95/p99':>22} {'unclean':>7} {'failovers':>9} {'max gap':>8}",
    ]
    for s in stats:
        if not s.records:  # e.g. "default": lines too broken to name their cluster
            continue
        info = facts["clusters"].get(s.cluster, {})
        mttr = "/".join(_dur(info.get(k)) for k in ("mttr_p50_s", "mttr_p95_s", "mttr_p99_s"))
        period = _period(s)
        out.append(
            f"  {_printable(s.cluster):<14} {period:<41} {_pct(info.get('availability_pct')):>12} "
            f"{info.get('windows', 0):>8,} {mttr:>22} {info.get('unclean', 0):>7,} "
            f"{info.get('failovers', 0):>9,} {_dur(info.get('gap_max_s')):>8}"
        )
    for row in facts["flapping"][:3]:
        out.append(f"  flapping: {_printable(row['cluster'])} {row['topic']}-{row['partition']} "
                   f"({row['flaps']} flaps)")
    out.append("  time: " + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()))
    return "\n".join(out)


# ---- HTML ------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;
max-width:920px;color:#222;padding:0 12px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid
#ddd;padding-bottom:4px}.sub{color:#666}
.cards{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px solid #ddd;border-radius:6px;
padding:10px 14px;min-width:250px;flex:1}.card h3{margin:0 0 6px;font-size:15px}
.big{font-size:24px;font-weight:600}.bad{color:#c0392b}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{padding:3px 6px;
border-bottom:1px solid #eee;text-align:left}td.n,th.n{text-align:right}
svg text{font-size:11px;fill:#444}svg .axis{stroke:#888}svg .grid{stroke:#eee}
svg .marker{stroke:#c0392b;stroke-dasharray:3 3}
"""


def _table(rows: Sequence[Mapping[str, Any]], cols: Sequence[tuple[str, str]]) -> str:
    if not rows:
        return "<p class='sub'>None.</p>"
    head = "".join(f"<th>{escape(label)}</th>" for _, label in cols)
    body = []
    for row in rows:
        cells = []
        for key, _ in cols:
            v = row.get(key)
            if isinstance(v, bool):
                text = "yes" if v else "no"
            elif isinstance(v, float) and key.endswith("_s"):
                text = _dur(v)
            elif isinstance(v, float) and key.endswith("_pct"):
                text = f"{v:.4f}"  # 4 significant digits would round 99.996 to 100
            elif isinstance(v, float):
                text = f"{v:.4g}"
            elif isinstance(v, datetime):
                text = _ts(v)
            elif isinstance(v, list):
                text = "[" + ",".join(map(str, v)) + "]"
            else:
                text = "-" if v is None else str(v)
            cells.append(f"<td>{escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _percentile_marker(value: float | None, label: str) -> list[tuple[float, str]]:
    if value is None or value <= 0:
        return []
    i = bisect.bisect_right(MTTR_EDGES, value)
    lo = MTTR_EDGES[i - 1] if i > 0 else MTTR_EDGES[0] / 10
    hi = MTTR_EDGES[i] if i < len(MTTR_EDGES) else MTTR_EDGES[-1] * 10
    frac = (math.log10(value) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    return [(i + min(1.0, max(0.0, frac)), label)]


def render_html(facts: Mapping[str, Any], stats: Sequence[ClusterStats]) -> str:
    clusters = facts["clusters"]
    cards = []
    for s in stats:
        if not s.records:
            continue
        info = clusters.get(s.cluster, {})
        cards.append(
            f"<div class='card'><h3>{escape(s.cluster)}</h3>"
            f"<div class='big'>{_pct(info.get('availability_pct'))}</div>"
            f"<div class='sub'>{escape(_period(s, ' → '))} UTC</div>"
            f"<div>{info.get('partitions', 0):,} partitions · {info.get('windows', 0):,} "
            f"unavailability windows ({info.get('ongoing_windows', 0):,} ongoing)</div>"
            f"<div>MTTR p50 {_dur(info.get('mttr_p50_s'))} · p95 "
            f"{_dur(info.get('mttr_p95_s'))} · p99 {_dur(info.get('mttr_p99_s'))}</div>"
            f"<div class='{'bad' if info.get('unclean') else ''}'>{info.get('unclean', 0):,} "
            f"unclean elections</div>"
            f"<div>{info.get('failovers', 0):,} controller failovers · longest gap "
            f"{_dur(info.get('gap_max_s'))} · elected→ready p50 "
            f"{_dur(info.get('ready_p50_s'))}</div>"
            f"<div class='sub'>{s.records:,} records · {s.bad:,} bad · {s.duplicates:,} "
            f"duplicates</div></div>"
        )
    hist = facts["mttr_histogram"]
    markers: list[tuple[float, str]] = []
    named = [s for s in stats if s.records]  # as lines_and_clusters counts them
    if len(named) == 1:
        info = clusters.get(named[0].cluster, {})
        for key, label in (("mttr_p50_s", "p50"), ("mttr_p95_s", "p95"), ("mttr_p99_s", "p99")):
            markers += _percentile_marker(info.get(key), label)
    days = _every_day(facts["elections_daily"], stats)
    types = ("offline", "unclean", "preferred", "reassign", "controlled_shutdown")
    election_chart = svg.bars(
        days, {t: [facts["elections_daily"].get(d, {}).get(t, 0) for d in days] for t in types},
        "Elections per day by type", "elections/day",
    )
    leader_charts = []
    for cluster, rows in facts["broker_leaders"].items():
        leader_charts.append(
            f"<h3>{escape(cluster)}</h3>" + svg.bars(
                [f"b{r['broker']}" for r in rows],
                {"avg leaders": [r["avg_leaders"] or 0.0 for r in rows]},
                f"Average leaders per broker, {cluster}", "leaders",
            ) + _table(rows, [("broker", "broker"), ("avg_leaders", "avg leaders"),
                              ("avg_imbalance", "avg imbalance ratio"),
                              ("max_imbalance", "max imbalance ratio")])
        )
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<title>Partition availability report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>Partition availability</h1>",
        f"<p class='sub'>{escape(lines_and_clusters(stats))}; "
        f"{sum(s.bad for s in stats):,} bad records set aside.</p>",
        f"<div class='cards'>{''.join(cards)}</div>",
        "<h2>Availability over time</h2>",
        "<p class='sub'>Share of partition-time with a leader, per hour.</p>",
        svg.time_lines(
            {k: [(x, y) for x, y in v] for k, v in facts["availability_hourly"].items()},
            "Availability per hour", "availability %", y_max=100.0,
            max_gap=1.5 * 3600,  # an hour without partitions is a gap, not a line
        ),
        "<h2>Time to recover</h2>",
        "<p class='sub'>Unavailability windows by duration, from losing the leader to "
        "having one again (windows that recovered, with a start in the log or estimated "
        "from a controller gap).</p>",
        svg.bars(list(MTTR_LABELS), {"windows": hist}, "MTTR distribution", "windows",
                 label_every=1, markers=markers),
        "<h3>Longest unavailability in the period</h3>",
        _table(facts["longest_outages"], [
            ("cluster", "cluster"), ("topic", "topic"), ("partition", "partition"),
            ("window_start", "from"), ("window_end", "to"), ("duration_s", "duration"),
            ("end_reason", "ended"), ("controller_failover", "failover during")]),
        "<h3>Least available topics</h3>",
        _table(facts["worst_topics"], [
            ("cluster", "cluster"), ("topic", "topic"), ("availability_pct", "availability %"),
            ("windows", "windows"), ("mttr_p50_s", "MTTR p50"), ("mttr_p99_s", "MTTR p99")]),
        "<h2>Elections</h2>",
        election_chart,
        f"<h3>Unclean elections ({facts['unclean_total']:,})</h3>",
        "<p class='sub'>A replica outside the ISR became leader: acknowledged writes may be "
        "lost.</p>",
        _table(facts["unclean"], [
            ("cluster", "cluster"), ("ts", "time"), ("topic", "topic"),
            ("partition", "partition"), ("leader", "new leader"),
            ("previous_leader", "previous leader"), ("isr_before", "ISR before"),
            ("offline_s", "offline for")]),
        "<h2>Leaders per broker</h2>",
        "<p class='sub'>Time-weighted average leaders; imbalance ratio is the share of "
        "partitions preferring the broker that another broker leads.</p>",
        *leader_charts,
        "<h2>Flapping partitions</h2>",
        _table(facts["flapping"], [
            ("cluster", "cluster"), ("rank", "#"), ("topic", "topic"),
            ("partition", "partition"), ("flaps", "flaps"),
            ("leader_changes", "leader changes"), ("offline_windows", "offline"),
            ("isr_shrinks", "ISR shrinks"), ("isr_expands", "ISR expands")]),
        "<h2>Controller failovers</h2>",
        "<p class='sub'>Longest times without a working controller (from the old "
        "controller's resignation or last record to the new one being ready).</p>",
        _table(facts["gaps"], [
            ("cluster", "cluster"), ("from_controller", "from"), ("to_controller", "to"),
            ("to_epoch", "epoch"), ("gap_start", "start"), ("gap_s", "gap"),
            ("cause", "cause"), ("never_ready", "never ready")]),
        "</body></html>",
    ]
    return "\n".join(parts)
