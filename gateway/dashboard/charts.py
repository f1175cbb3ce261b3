"""Small server-side SVG charts (no JavaScript library, nothing fetched): stacked bars over time, stacked
horizontal bars per label, and intervals around zero. Every label is escaped; values are numbers."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from html import escape

PALETTE = {
    "edge": "#2a9d8f", "cloud": "#e76f51", "mixed": "#e9c46a", "none": "#b0b0b0",
    "raw input": "#264653", "cache read": "#8ab17d", "output": "#e76f51", "cost": "#e76f51",
    "edge PFLOPs": "#2a9d8f", "exposed": "#d62828", "protected": "#2a9d8f", "not sent": "#b0b0b0",
}
_EXTRA = ("#457b9d", "#f4a261", "#9d4edd", "#6a994e", "#bc4749", "#1d3557", "#ffb703", "#118ab2")
MAX_SLOTS = 500  # bars per time chart, at most
FONT = "font-family='system-ui,sans-serif' font-size='11'"


def color(name: str, index: int) -> str:
    return PALETTE.get(name, _EXTRA[index % len(_EXTRA)])


def nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exponent = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exponent:
            return float(step * exponent)
    return float(10 * exponent)


def number(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e6:
        return f"{value / 1e6:.3g}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.3g}k"
    if abs(value) >= 0.01:
        return f"{value:.3g}"
    return f"{value:.2g}"


def _frame(width: int, height: int, title: str, body: list[str]) -> str:
    return (f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}' width='{width}' "
            f"height='{height}' role='img' aria-label='{escape(title)}'><title>{escape(title)}</title>"
            + "".join(body) + "</svg>")


def _legend(names: Sequence[str], x: float, y: float) -> list[str]:
    out = []
    for i, name in enumerate(names):
        out.append(f"<rect x='{x:.1f}' y='{y - 8:.1f}' width='9' height='9' fill='{color(name, i)}'/>"
                   f"<text x='{x + 12:.1f}' y='{y:.1f}' {FONT}>{escape(name)}</text>")
        x += 18 + 6.5 * len(name)
    return out


def _clock(ts: float, bucket_s: float) -> str:
    return time.strftime("%m-%d %H:%M" if bucket_s >= 3600 else "%H:%M", time.gmtime(ts)) + ("" if bucket_s >= 3600 else "Z")


def time_bars(times: Sequence[float], series: Mapping[str, Sequence[float]], *, bucket_s: float, title: str,
              unit: str, start: float | None = None, end: float | None = None, width: int = 560,
              height: int = 190) -> str:
    """Stacked bars per time bucket across the window [start, end] (default: the first to the last bucket with
    data), empty buckets included, so a burst looks like a burst."""
    left, right, top, bottom = 58, 10, 22, 34
    if not times:
        return _frame(width, height, title, [f"<text x='{width / 2}' y='{height / 2}' text-anchor='middle' "
                                             f"fill='#888' {FONT}>no data in this window</text>"])
    first = min(times) if start is None else min(min(times), start // bucket_s * bucket_s)
    last = max(times) if end is None else max(max(times), end // bucket_s * bucket_s)
    if (last - first) / bucket_s >= MAX_SLOTS:  # records far apart ("all"): wider bars, never a huge allocation
        bucket_s *= math.ceil((last - first) / bucket_s / (MAX_SLOTS - 1))
        first = first // bucket_s * bucket_s
    slots = int(round((last - first) / bucket_s)) + 1
    totals = [0.0] * slots
    for i, t in enumerate(times):
        totals[int(round((t - first) / bucket_s))] += sum(float(v[i]) for v in series.values())
    top_value = nice_max(max(totals))
    plot_w, plot_h = width - left - right, height - top - bottom
    bar_w = plot_w / slots
    body = _legend(list(series), left, 12)
    for k in range(5):
        y = top + plot_h - plot_h * k / 4
        body.append(f"<line x1='{left}' x2='{width - right}' y1='{y:.1f}' y2='{y:.1f}' stroke='#e5e5e5'/>"
                    f"<text x='{left - 4}' y='{y + 4:.1f}' text-anchor='end' fill='#555' {FONT}>"
                    f"{number(top_value * k / 4)}</text>")
    heights = [0.0] * slots
    for j, (name, values) in enumerate(series.items()):
        for i, t in enumerate(times):
            slot = int(round((t - first) / bucket_s))
            h = plot_h * float(values[i]) / top_value
            if h <= 0:
                continue
            y = top + plot_h - heights[slot] - h
            heights[slot] += h
            body.append(f"<rect x='{left + slot * bar_w + bar_w * 0.1:.1f}' y='{y:.1f}' width='{bar_w * 0.8:.1f}' "
                        f"height='{h:.1f}' fill='{color(name, j)}'><title>{escape(name)} "
                        f"{_clock(t, bucket_s)}: {number(float(values[i]))} {escape(unit)}</title></rect>")
    body.append(f"<text x='{left}' y='{height - 8}' fill='#555' {FONT}>{_clock(first, bucket_s)}</text>"
                f"<text x='{width - right}' y='{height - 8}' text-anchor='end' fill='#555' {FONT}>"
                f"{_clock(last, bucket_s)} · {escape(unit)} per {number(bucket_s)} s</text>")
    return _frame(width, height, title, body)


def stacked_rows(rows: Sequence[tuple[str, Mapping[str, float]]], segments: Sequence[str], *, title: str,
                 unit: str = "", share: bool = True, width: int = 560) -> str:
    """One horizontal bar per label, split into ``segments``; ``share`` scales each bar to 100 %."""
    left, right, row_h = 130, 60, 22
    height = 30 + row_h * max(len(rows), 1)
    body = _legend(segments, left, 12)
    if not rows:
        body.append(f"<text x='{width / 2}' y='40' text-anchor='middle' fill='#888' {FONT}>no data</text>")
    widest = max((sum(v.values()) for _, v in rows), default=0.0) or 1.0
    plot_w = width - left - right
    for i, (label, values) in enumerate(rows):
        y = 24 + i * row_h
        total = sum(values.values())
        scale = plot_w / (total if share and total else widest)
        x = float(left)
        body.append(f"<text x='{left - 6}' y='{y + 13}' text-anchor='end' {FONT}>{escape(label[:22])}</text>")
        for j, name in enumerate(segments):
            value = float(values.get(name, 0.0))
            if value <= 0:
                continue
            w = value * scale
            body.append(f"<rect x='{x:.1f}' y='{y}' width='{w:.1f}' height='{row_h - 6}' fill='{color(name, j)}'>"
                        f"<title>{escape(label)} {escape(name)}: {number(value)} {escape(unit)}</title></rect>")
            if w > 28:
                body.append(f"<text x='{x + w / 2:.1f}' y='{y + 12}' text-anchor='middle' fill='#fff' {FONT}>"
                            f"{number(value)}</text>")
            x += w
        body.append(f"<text x='{x + 4:.1f}' y='{y + 13}' fill='#555' {FONT}>{number(total)} {escape(unit)}</text>")
    return _frame(width, height, title, body)


def intervals(rows: Sequence[tuple[str, float, float, float]], *, title: str, unit: str, width: int = 560) -> str:
    """Each arm's difference from the control with its confidence interval, around a zero line."""
    left, right, row_h = 130, 20, 24
    height = 40 + row_h * max(len(rows), 1)
    span = max((max(abs(lo), abs(hi), abs(mid)) for _, mid, lo, hi in rows), default=1.0) or 1.0
    span = nice_max(span)
    plot_w = width - left - right
    zero = left + plot_w / 2

    def x_of(v: float) -> float:
        return zero + v / span * plot_w / 2

    body = [f"<line x1='{zero:.1f}' x2='{zero:.1f}' y1='14' y2='{height - 18}' stroke='#888'/>",
            f"<text x='{left}' y='{height - 4}' fill='#555' {FONT}>{number(-span)}</text>",
            f"<text x='{zero:.1f}' y='{height - 4}' text-anchor='middle' fill='#555' {FONT}>0 {escape(unit)}</text>",
            f"<text x='{width - right}' y='{height - 4}' text-anchor='end' fill='#555' {FONT}>+{number(span)}</text>"]
    if not rows:
        body.append(f"<text x='{zero}' y='34' text-anchor='middle' fill='#888' {FONT}>needs two sessions per arm"
                    "</text>")
    for i, (label, mid, lo, hi) in enumerate(rows):
        y = 26 + i * row_h
        shade = "#2a9d8f" if hi < 0 else "#e76f51" if lo > 0 else "#457b9d"
        body.append(f"<text x='{left - 6}' y='{y + 4}' text-anchor='end' {FONT}>{escape(label[:22])}</text>"
                    f"<line x1='{x_of(lo):.1f}' x2='{x_of(hi):.1f}' y1='{y}' y2='{y}' stroke='{shade}' "
                    f"stroke-width='3'/><circle cx='{x_of(mid):.1f}' cy='{y}' r='4.5' fill='{shade}'>"
                    f"<title>{escape(label)}: {number(mid)} [{number(lo)}, {number(hi)}] {escape(unit)}</title>"
                    "</circle>")
    return _frame(width, height, title, body)
