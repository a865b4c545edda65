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


def _fmt(v: float) -> str:
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if v == int(v):
        return str(int(v))
    return f"{v:.4g}"


def _frame(body: list[str], title: str, legend: Sequence[tuple[str, str]] = ()) -> str:
    items = []
    x = LEFT
    for name, colour in legend:
        items.append(
            f'<rect x="{x}" y="{H - 14}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{x + 14}" y="{H - 5}" class="legend">{escape(name)}</text>'
        )
        x += 24 + 7 * len(name)
    return (
        f'<svg viewBox="0 0 {W} {H}" width="100%" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
        + "".join(body) + "".join(items) + "</svg>"
    )


def _axes(
    y_ticks: list[float],
    y_of: Callable[[float], float],
    y_fmt: Callable[[float], str] = _fmt,
) -> list[str]:
    out = [f'<line x1="{LEFT}" y1="{H - BOTTOM}" x2="{W - RIGHT}" y2="{H - BOTTOM}" '
           f'class="axis"/>']
    for t in y_ticks:
        y = y_of(t)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">'
                   f"{escape(y_fmt(t))}</text>")
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
) -> str:
    """Lines over time; x values are epoch seconds."""
    points = [p for pts in series.values() for p in pts]
    if not points:
        return _frame(['<text x="20" y="40">no data</text>'], title)
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    lo = min(p[1] for p in points) if y_min is None else y_min
    hi = max(p[1] for p in points) if y_max is None else y_max
    if hi - lo < 1e-9:
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
        colour = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{xo(x):.1f},{yo(y):.1f}" for x, y in sorted(pts))
        body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                    f'stroke-width="1.5"/>')
        legend.append((name, colour))
    return _frame(body, title, legend)


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
        colour = PALETTE[k % len(PALETTE)]
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
