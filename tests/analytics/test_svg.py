"""The report's charts keep their axis labels inside the chart."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from controller.analytics import svg

NS = {"s": "http://www.w3.org/2000/svg"}


def _tick_extents(chart: str) -> list[tuple[float, float, str]]:
    """(left, right) of every x-axis tick label, estimated from its anchor and length."""
    root = ET.fromstring(chart)
    out = []
    for text in root.iterfind(".//s:text[@class='tick']", NS):
        if float(text.get("y", 0)) != svg.H - svg.BOTTOM + 16:
            continue  # y-axis ticks and markers
        x, label = float(text.get("x", 0)), text.text or ""
        width = len(label) * svg.CHAR_W
        anchor = text.get("text-anchor")
        left = {"middle": x - width / 2, "end": x - width, "start": x}[anchor]
        out.append((left, left + width, label))
    return out


def test_the_last_date_label_of_a_bar_chart_stays_in_view() -> None:
    days = [f"2026-10-{d:02d}" for d in range(1, 32)]
    chart = svg.bars(days, {"offline": [1.0] * len(days)}, "elections", "elections/day")
    extents = _tick_extents(chart)
    assert extents[-1][2] == "2026-10-31"  # 31 labels, every third: the last one is drawn
    assert all(left >= 0 and right <= svg.W for left, right, _ in extents), extents


def test_short_labels_stay_centred() -> None:
    chart = svg.bars(["b1", "b2", "b3"], {"leaders": [3.0, 1.0, 2.0]}, "leaders", "leaders")
    root = ET.fromstring(chart)
    anchors = {t.get("text-anchor") for t in root.iterfind(".//s:text[@class='tick']", NS)
               if t.text and t.text.startswith("b")}  # fmt: skip
    assert anchors == {"middle"}


def test_time_axis_labels_stay_in_view() -> None:
    t0 = datetime(2026, 10, 1, tzinfo=UTC).timestamp()
    series = {"prod": [(t0 + h * 3600, 99.0 + (h % 2)) for h in range(24 * 30 + 1)]}
    extents = _tick_extents(svg.time_lines(series, "availability", "%"))
    assert extents and all(left >= 0 and right <= svg.W for left, right, _ in extents), extents


T0 = datetime(2026, 10, 1, tzinfo=UTC).timestamp()


def _y_ticks(chart: str) -> list[str]:
    root = ET.fromstring(chart)
    return [t.text or "" for t in root.iterfind(".//s:text[@text-anchor='end']", NS)
            if float(t.get("x", 0)) == svg.LEFT - 6]


def test_availability_ticks_near_100_are_told_apart_and_stay_within_100() -> None:
    # At 4 significant digits every tick of a 99.999-100 axis read "100"; a flat 100 %
    # was drawn on an axis up to 101 %.
    for low in (99.99, 99.999, 99.9999):
        ticks = _y_ticks(svg.time_lines({"c": [(T0, 100.0), (T0 + 3600, low)]}, "a", "%",
                                        y_max=100.0))
        assert len(ticks) == len(set(ticks)) >= 2, ticks
        assert max(float(t.replace(",", "")) for t in ticks) <= 100.0
    flat = _y_ticks(svg.time_lines({"c": [(T0 + h * 3600, 100.0) for h in range(5)]}, "a",
                                   "%", y_max=100.0))
    assert max(float(t) for t in flat) == 100.0 and len(set(flat)) == len(flat)


def test_a_lone_point_is_drawn_and_a_gap_is_not_a_line() -> None:
    root = ET.fromstring(svg.time_lines({"short": [(T0, 94.7)]}, "a", "%", y_max=100.0))
    assert root.findall(".//s:circle", NS) and not root.findall(".//s:polyline", NS)
    gappy = {"c": [(T0, 99.0), (T0 + 3600, 98.0), (T0 + 10 * 3600, 97.0)]}
    root = ET.fromstring(svg.time_lines(gappy, "a", "%", y_max=100.0, max_gap=5400))
    (line,) = root.findall(".//s:polyline", NS)
    assert len(line.get("points", "").split()) == 2
    assert len(root.findall(".//s:circle", NS)) == 1


def test_many_series_keep_their_legend_in_view_and_their_own_look() -> None:
    series = {f"prod-eu-{i:02d}": [(T0, 99.0), (T0 + 3600, 100.0)] for i in range(15)}
    root = ET.fromstring(svg.time_lines(series, "a", "%", y_max=100.0))
    width, height = (float(v) for v in root.get("viewBox", "").split()[2:])
    legend = root.findall(".//s:text[@class='legend']", NS)
    assert len(legend) == 15
    for text in legend:
        right = float(text.get("x", 0)) + len(text.text or "") * 7
        assert right <= width and float(text.get("y", 0)) <= height
    lines = root.findall(".//s:polyline", NS)
    looks = {(p.get("stroke"), p.get("stroke-dasharray")) for p in lines}
    assert len(looks) == 15
