"""The report's figures, drawn with matplotlib's object API (no pyplot, no global state; the Agg canvas): what
left over time, and the categories sent as placeholders per cloud target. Imported only by the HTML and PDF
renderers, when they run: the gateway never loads matplotlib."""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SIZE = (8.27, 5.2)  # inches: an A4 page's width (a PDF page is A4: ``privacy.report.pdf``)


def _figure(size: tuple[float, float]) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _empty(fig: Figure, title: str, message: str) -> Figure:
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="#555")
    ax.set_axis_off()
    return fig


def exposure_over_time(report: dict[str, Any], size: tuple[float, float] = SIZE) -> Figure:
    """Per time bucket: protected cloud calls, placeholders sent, listed units that left raw."""
    fig = _figure(size)
    points = report["series"]["points"]
    title = f"What left for the cloud over time ({report['owner']})"
    if not points:
        return _empty(fig, title, "no cloud calls in this period")
    width_days = report["series"]["bucket_s"] / 86400 * 0.8
    when = [datetime.fromtimestamp(p["t"], UTC) for p in points]
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.bar(when, [p["cloud_calls"] for p in points], width=width_days, align="edge", color="#4c72b0")
    top.set_ylabel("protected cloud calls")
    top.set_title(title)
    bottom.bar(when, [p["placeholders"] for p in points], width=width_days, align="edge", color="#55a868",
               label="placeholders sent")
    bottom.bar(when, [p["units_left_raw"] for p in points], width=width_days * 0.5, align="edge", color="#c44e52",
               label="listed units left raw")
    bottom.set_ylabel("count")
    bottom.set_xlabel(f"UTC, {report['series']['bucket_s']} s buckets")
    bottom.legend(loc="upper left")
    for label in bottom.get_xticklabels():
        label.set_rotation(30)
    return fig


def categories_per_target(report: dict[str, Any], size: tuple[float, float] = SIZE) -> Figure:
    """Per cloud target, the placeholders sent, stacked by data category."""
    fig = _figure(size)
    by_target: dict[str, dict[str, int]] = report["placeholders"]["by_target"]
    title = "Data categories sent as placeholders, per cloud target"
    if not by_target:
        return _empty(fig, title, "no placeholders sent in this period")
    targets = list(by_target)
    types = sorted({t for counts in by_target.values() for t in counts})
    ax = fig.add_subplot()
    left = [0] * len(targets)
    for kind in types:
        values = [by_target[t].get(kind, 0) for t in targets]
        ax.barh(targets, values, left=left, label=kind)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.set_title(title)
    ax.set_xlabel("placeholders")
    ax.legend(loc="lower right", fontsize="small")
    return fig


FIGURES: dict[str, Callable[[dict[str, Any], tuple[float, float]], Figure]] = {
    "exposure": exposure_over_time, "categories": categories_per_target}


def svg(fig: Figure) -> str:
    out = io.StringIO()
    fig.savefig(out, format="svg")
    text = out.getvalue()
    return text[text.find("<svg"):]  # inline: without the XML declaration and doctype
