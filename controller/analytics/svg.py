"""Small inline-SVG charts for the HTML report: no JavaScript, no dependency, prints fine.

Each function returns one ``<svg>`` element as a string. Coordinates are computed here; the
page's CSS only sets fonts and colours of text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from html import escape

PALETTE = (
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
    "#ff9da7", "#9c755f", "#bab0ac",
)
W, H = 860, 280
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 44
CHAR_W = 6.2  # an 11px tick label's average character width, for keeping labels in view


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    first = math.ceil(lo / step) * step
    ticks = []
    v = first
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    return ticks


DASHES = ("", "6 3", "2 2", "8 3 2 3")  # beyond the palette, lines differ by dash too
LEGEND_ROW = 16


def _fmt(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if v == int(v):
        return str(int(v))
    return f"{v:.4g}"


def _tick_fmt(ticks: Sequence[float]) -> Callable[[float], str]:
    """Labels with as many decimals as the tick step needs: at 4 significant digits the
    ticks of an axis from 99.9990 to 100 all read "100"."""
    if len(ticks) < 2:
        return _fmt
    step = abs(ticks[1] - ticks[0])
    decimals = next((d for d in range(13) if abs(round(step, d) - step) < step * 1e-6), 12)
    if decimals == 0:
        return _fmt
    return lambda v: f"{v:,.{decimals}f}"


def _style(i: int) -> tuple[str, str]:
    """Series ``i``'s colour and dash pattern: distinct for 40 series."""
    return PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)]


def _frame(body: list[str], title: str, legend: Sequence[tuple[str, ...]] = ()) -> str:
    """The chart's ``<svg>``; ``legend``: (name, colour[, dash pattern]) per series."""
    items = []
    x, row = LEFT, 0
    for name, colour, *dash in legend:
        width = 24 + 7 * len(name)
        if x > LEFT and x + width > W - RIGHT:  # wrap: the chart grows a row
            x, row = LEFT, row + 1
        y = H - 14 + row * LEGEND_ROW
        pattern = f' stroke="{colour}" stroke-dasharray="{dash[0]}"' if dash and dash[0] else ""
        items.append(
            f'<rect x="{x}" y="{y}" width="10" height="10" fill="{colour}"{pattern}/>'
            f'<text x="{x + 14}" y="{y + 9}" class="legend">{escape(name)}</text>'
        )
        x += width
    height = H + row * LEGEND_ROW
    return (
        f'<svg viewBox="0 0 {W} {height}" width="100%" role="img" '
        f'aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
        + "".join(body) + "".join(items) + "</svg>"
    )


def _axes(y_ticks: list[float], y_of: Callable[[float], float]) -> list[str]:
    out = [f'<line x1="{LEFT}" y1="{H - BOTTOM}" x2="{W - RIGHT}" y2="{H - BOTTOM}" '
           f'class="axis"/>']
    label = _tick_fmt(y_ticks)
    for t in y_ticks:
        y = y_of(t)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">'
                   f"{escape(label(t))}</text>")
    return out


def x_label(x: float, y: float, text: str) -> str:
    """A tick label centred on ``x``, shifted to end (or start) at the chart's edge when
    centring would cut it off there."""
    half = len(text) * CHAR_W / 2
    anchor = "middle"
    if x + half > W - 2:
        x, anchor = W - 2, "end"
    elif x - half < 2:
        x, anchor = 2, "start"
    return (f'<text x="{x:.1f}" y="{y}" class="tick" text-anchor="{anchor}">'
            f"{escape(text)}</text>")


def _time_labels(x0: float, x1: float, x_of: Callable[[float], float]) -> list[str]:
    span = max(1.0, x1 - x0)
    step = next(
        (s for s in (3600, 6 * 3600, 86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400)
         if span / s <= 10),
        90 * 86400,
    )
    fmt = "%m-%d %H:%M" if step < 86400 else "%Y-%m-%d"
    out = []
    t = math.ceil(x0 / step) * step
    while t <= x1:
        x = x_of(t)
        label = datetime.fromtimestamp(t, UTC).strftime(fmt)
        out.append(f'<line x1="{x:.1f}" y1="{H - BOTTOM}" x2="{x:.1f}" y2="{H - BOTTOM + 4}" '
                   f'class="axis"/>' + x_label(x, H - BOTTOM + 16, label))
        t += step
    return out


def time_lines(
    series: dict[str, list[tuple[float, float]]],
    title: str,
    y_label: str,
    y_min: float | None = None,
    y_max: float | None = None,
    max_gap: float | None = None,
) -> str:
    """Lines over time; x values are epoch seconds. Points further apart than ``max_gap``
    are not joined (missing data is not drawn as a straight line); a point joined to none
    is a dot."""
    points = [p for pts in series.values() for p in pts]
    if not points:
        return _frame(['<text x="20" y="40">no data</text>'], title)
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    lo = min(p[1] for p in points) if y_min is None else y_min
    hi = max(p[1] for p in points) if y_max is None else y_max
    if hi - lo < 1e-9:  # flat: widen away from a given bound, never past it
        if y_max is not None:
            lo = hi - 1
        elif y_min is not None:
            hi = lo + 1
        else:
            lo, hi = lo - 1, hi + 1
    ticks = _nice_ticks(lo, hi)
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])

    def xo(x: float) -> float:
        return LEFT + (x - x0) / max(1e-9, x1 - x0) * (W - LEFT - RIGHT)

    def yo(y: float) -> float:
        return TOP + (hi - y) / (hi - lo) * (H - TOP - BOTTOM)

    body = _axes(ticks, yo) + _time_labels(x0, x1, xo)
    body.append(f'<text x="12" y="12" class="tick">{escape(y_label)}</text>')
    legend = []
    for i, (name, pts) in enumerate(sorted(series.items())):
        colour, dash = _style(i)
        for segment in _segments(sorted(pts), max_gap):
            if len(segment) == 1:
                (x, y), = segment
                body.append(f'<circle cx="{xo(x):.1f}" cy="{yo(y):.1f}" r="2.5" '
                            f'fill="{colour}"/>')
                continue
            path = " ".join(f"{xo(x):.1f},{yo(y):.1f}" for x, y in segment)
            dashed = f' stroke-dasharray="{dash}"' if dash else ""
            body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                        f'stroke-width="1.5"{dashed}/>')
        legend.append((name, colour, dash))
    return _frame(body, title, legend)


def _segments(
    pts: list[tuple[float, float]], max_gap: float | None
) -> list[list[tuple[float, float]]]:
    segments: list[list[tuple[float, float]]] = []
    for p in pts:
        if segments and (max_gap is None or p[0] - segments[-1][-1][0] <= max_gap):
            segments[-1].append(p)
        else:
            segments.append([p])
    return segments


def bars(
    labels: Sequence[str],
    stacks: dict[str, Sequence[float]],
    title: str,
    y_label: str,
    label_every: int | None = None,
    markers: Sequence[tuple[float, str]] = (),
) -> str:
    """Vertical bars, stacked when ``stacks`` has several series. ``markers`` are vertical
    lines at fractional bar positions (e.g. percentiles on a histogram)."""
    n = len(labels)
    if n == 0:
        return _frame(['<text x="20" y="40">no data</text>'], title)
    totals = [sum(s[i] for s in stacks.values()) for i in range(n)]
    ticks = _nice_ticks(0, max(totals) or 1)
    hi = max(ticks[-1], max(totals) or 1)
    slot = (W - LEFT - RIGHT) / n

    def yo(y: float) -> float:
        return TOP + (hi - y) / hi * (H - TOP - BOTTOM)

    body = _axes(ticks, yo)
    body.append(f'<text x="12" y="12" class="tick">{escape(y_label)}</text>')
    every = label_every or max(1, math.ceil(n / 12))
    base = [0.0] * n
    legend = []
    for k, (name, values) in enumerate(stacks.items()):
        colour = PALETTE[k % len(PALETTE)]  # a handful of stacks at most: election types
        legend.append((name, colour))
        for i, v in enumerate(values):
            if v <= 0:
                continue
            x = LEFT + i * slot + slot * 0.1
            y_top, y_bot = yo(base[i] + v), yo(base[i])
            body.append(
                f'<rect x="{x:.1f}" y="{y_top:.1f}" width="{max(1.0, slot * 0.8):.1f}" '
                f'height="{max(0.5, y_bot - y_top):.1f}" fill="{colour}">'
                f"<title>{escape(labels[i])} {escape(name)}: {_fmt(v)}</title></rect>"
            )
            base[i] += v
    for i, label in enumerate(labels):
        if i % every == 0:
            body.append(x_label(LEFT + (i + 0.5) * slot, H - BOTTOM + 16, label))
    for pos, text in markers:
        x = LEFT + pos * slot
        body.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{H - BOTTOM}" '
                    f'class="marker"/><text x="{x + 3:.1f}" y="{TOP + 12}" '
                    f'class="tick">{escape(text)}</text>')
    return _frame(body, title, legend if len(stacks) > 1 else ())
