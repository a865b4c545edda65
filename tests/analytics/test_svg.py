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
