"""The paper's table (Markdown, HTML) and the Pareto plots (PNG) from per-policy summaries.

Columns: Policy · Completion · Pass^k · Cloud Tok. R/C/O (M) · Cloud Cost ($) · Edge PFLOPs · Privacy Exp.
A policy with runs whose usage or audit could not be read completely has its figures marked ``*`` and a note
with the count: those figures are lower bounds, not measurements. Runs that took several attempts are noted too.
Plots: completion vs cloud cost and completion vs privacy exposure, one point per policy, with a dashed line
from the edge-only point to the cloud-only point: a policy above that line beats interpolating the two.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from eval.metrics import PolicySummary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

EDGE_ONLY = "edge-only"
CLOUD_ONLY = "cloud-only"
DASH = "—"
INCOMPLETE = "*"


def _num(value: float | None, digits: int = 2) -> str:
    """Two decimals, as the paper prints; a small non-zero value keeps two significant digits instead of
    printing as 0.00 (a small suite's cloud tokens are thousands, not millions)."""
    if value is None:
        return DASH
    if value != 0 and abs(value) < 10 ** -digits:
        return f"{value:.1e}"
    return f"{value:.{digits}f}"


def headers(summaries: Sequence[PolicySummary]) -> list[str]:
    runs = {s.runs for s in summaries}
    k = str(runs.pop()) if len(runs) == 1 else "k"
    return ["Policy", "Completion", f"Pass^{k}", "Cloud Tok. R/C/O (M)", "Cloud Cost ($)", "Edge PFLOPs",
            "Privacy Exp."]


def row(summary: PolicySummary) -> list[str]:
    tokens = summary.tokens
    mark = INCOMPLETE if summary.incomplete_runs else ""
    return [
        summary.policy,
        _num(summary.completion),
        _num(summary.pass_k),
        f"{_num(tokens.raw)}/{_num(tokens.cache_read)}/{_num(tokens.output)}{mark}",
        _num(summary.cost_usd) + mark,
        _num(summary.edge_pflops) + mark,
        _num(summary.privacy_exposure) + mark,
    ]


def _notes(summaries: Sequence[PolicySummary]) -> list[str]:
    notes = []
    formulas = sorted({s.flops_formula for s in summaries if s.flops_formula})
    if formulas:
        notes.append("Edge FLOPs formula: " + "; ".join(formulas) + ".")
    judged = [s for s in summaries if s.judge_privacy_exposure is not None]
    if judged:
        notes.append("Privacy exposure by the benchmark's LLM judge: "
                     + ", ".join(f"{s.policy} {s.judge_privacy_exposure:.2f}" for s in judged) + ".")
    incomplete = [s for s in summaries if s.incomplete_runs]
    if incomplete:
        notes.append(f"{INCOMPLETE} Usage or audit could not be read completely for "
                     + ", ".join(f"{s.policy} {s.incomplete_runs} of {s.tasks * s.runs} runs" for s in incomplete)
                     + "; what is missing is not counted, so these figures are lower bounds (see 'incomplete' "
                       "in each run's result.json).")
    shadowed = [s for s in summaries if s.shadow_calls]
    if shadowed:
        notes.append("Shadow calls (the gateway's own labelling calls, the operator's cost; not in the columns "
                     "above), per run: " + ", ".join(
                         f"{s.policy} {s.shadow_calls:g} calls, {_num(s.shadow_tokens.raw)}/"
                         f"{_num(s.shadow_tokens.cache_read)}/{_num(s.shadow_tokens.output)} M tokens R/C/O, "
                         f"${_num(s.shadow_cost_usd)}" for s in shadowed) + ".")
    retried = [s for s in summaries if s.retried_runs]
    if retried:
        notes.append("Runs that took more than one attempt (each attempt metered on its own session; only the "
                     "last counts): " + ", ".join(f"{s.policy} {s.retried_runs} of {s.tasks * s.runs} runs "
                                                  f"({s.attempts} attempts in all)" for s in retried) + ".")
    errored = [s for s in summaries if s.errors]
    if errored:
        notes.append("Runs scored 0 for a crash, timeout or grader error: "
                     + ", ".join(f"{s.policy} {s.errors}" for s in errored) + ".")
    return notes


def markdown_table(summaries: Sequence[PolicySummary]) -> str:
    head = headers(summaries)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    lines += ["| " + " | ".join(row(s)) + " |" for s in summaries]
    notes = _notes(summaries)
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def html_table(summaries: Sequence[PolicySummary], title: str = "ecgw evaluation") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers(summaries))
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row(s)) + "</tr>"
                     for s in summaries)
    notes = "".join(f"<p>{html.escape(n)}</p>" for n in _notes(summaries))
    return (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            "<style>table{border-collapse:collapse}td,th{border:1px solid #999;padding:4px 8px}"
            "td:not(:first-child){text-align:right}</style></head>\n"
            f"<body><h1>{html.escape(title)}</h1>\n<table><thead><tr>{head}</tr></thead><tbody>\n{body}\n"
            f"</tbody></table>{notes}</body></html>\n")


# ---------------------------------------------------------------------------------------------------------------
# plots


@dataclass(frozen=True)
class Axis:
    name: str
    label: str
    value: Callable[[PolicySummary], float | None]


COST = Axis("cost", "Cloud cost (USD)", lambda s: s.cost_usd)
EXPOSURE = Axis("exposure", "Privacy exposure (%)", lambda s: s.privacy_exposure)


def interpolation_endpoints(summaries: Sequence[PolicySummary], axis: Axis, edge: str = EDGE_ONLY,
                            cloud: str = CLOUD_ONLY) -> tuple[tuple[float, float], tuple[float, float]] | None:
    by_name = {s.policy: s for s in summaries}
    points = []
    for name in (edge, cloud):
        summary = by_name.get(name)
        x = axis.value(summary) if summary is not None else None
        if summary is None or x is None:
            return None
        points.append((x, summary.completion))
    return points[0], points[1]


def beats_interpolation(summary: PolicySummary, summaries: Sequence[PolicySummary], axis: Axis,
                        edge: str = EDGE_ONLY, cloud: str = CLOUD_ONLY) -> bool | None:
    """Whether the policy's point lies above the edge-only→cloud-only line (None: not decidable)."""
    ends = interpolation_endpoints(summaries, axis, edge, cloud)
    x = axis.value(summary)
    if ends is None or x is None:
        return None
    (x0, y0), (x1, y1) = ends
    if x1 == x0:
        return summary.completion > max(y0, y1)
    return summary.completion > y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def completion_plot(summaries: Sequence[PolicySummary], axis: Axis, *, edge: str = EDGE_ONLY,
                    cloud: str = CLOUD_ONLY) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # Agg canvas; no pyplot, no global state
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 4.8), dpi=100)
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    for summary in summaries:
        x = axis.value(summary)
        if x is None:
            continue
        ax.scatter([x], [summary.completion], label=summary.policy, zorder=3)
        ax.annotate(summary.policy, (x, summary.completion), textcoords="offset points", xytext=(5, 5),
                    fontsize=8)
    ends = interpolation_endpoints(summaries, axis, edge, cloud)
    if ends is not None:
        (x0, y0), (x1, y1) = ends
        ax.plot([x0, x1], [y0, y1], linestyle="--", color="grey", label=f"{edge} → {cloud} interpolation",
                zorder=2)
    ax.set_xlabel(axis.label)
    ax.set_ylabel("Completion (%)")
    ax.set_title(f"Completion vs {axis.label.split(' (')[0].lower()}")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")
    figure.tight_layout()
    return figure


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    cost_plot: Path
    exposure_plot: Path


def write_report(out_dir: Path, summaries: Sequence[PolicySummary], *, title: str = "ecgw evaluation",
                 edge: str = EDGE_ONLY, cloud: str = CLOUD_ONLY) -> ReportFiles:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = ReportFiles(out_dir / "report.md", out_dir / "report.html", out_dir / "completion_vs_cost.png",
                        out_dir / "completion_vs_exposure.png")
    files.markdown.write_text(f"# {title}\n\n" + markdown_table(summaries), encoding="utf-8")
    files.html.write_text(html_table(summaries, title), encoding="utf-8")
    for axis, path in ((COST, files.cost_plot), (EXPOSURE, files.exposure_plot)):
        completion_plot(summaries, axis, edge=edge, cloud=cloud).savefig(path, format="png")
    return files
