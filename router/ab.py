"""Compare the arms of a policy experiment from per-call metering rows.

A row is one upstream call as the metering store keeps it (``accounting.store.UsageStore.rows``): at least
``request_id``, ``session_id``, ``side``, ``purpose`` and the grouping column (``arm`` or ``policy``); token
columns ``raw_input_tokens``, ``cache_read_tokens``, ``cache_write_tokens``, ``output_tokens``; ``cost_usd``
and ``edge_flops`` when accounting priced them. Exposure (per session, from the privacy audit) and completion
(per session, from eval grades) are joined by session id. Pure functions: no I/O here.

Reading from the metering store, pass ``totals`` — accounting's SQL sums per group (``UsageStore.aggregate``) —
and the counts, tokens, USD and FLOPs are those, the very figures ``ecgw usage`` shows; the rows then only say
which sessions and purposes each group has. Without ``totals`` (rows from a file) they are summed here.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from accounting.calls import UpstreamCall
from accounting.usage import MalformedUsage, normalise


@dataclass
class GroupReport:
    group: str
    sessions: int = 0
    requests: int = 0
    cloud_requests: int = 0  # requests with at least one cloud call
    cloud_calls: int = 0
    edge_calls: int = 0
    cloud_raw_input_tokens: int = 0
    cloud_cache_read_tokens: int = 0
    cloud_cache_write_tokens: int = 0
    cloud_output_tokens: int = 0
    cloud_cost_usd: float = 0.0
    unpriced_cloud_calls: int = 0
    edge_flops: float = 0.0
    exposure: float | None = None  # mean per-session exposure
    completion: float | None = None  # mean per-session grade
    completion_ci: tuple[float, float] | None = None
    graded_sessions: int = 0
    purposes: Counter[str] = field(default_factory=Counter)  # "side:purpose" → calls

    @property
    def cloud_call_rate(self) -> float:
        """Share of client requests (agent steps) that called the cloud at least once."""
        return self.cloud_requests / self.requests if self.requests else 0.0

    @property
    def edge_pflops(self) -> float:
        return self.edge_flops / 1e15


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


def row_from_call(call: UpstreamCall) -> dict[str, Any]:
    """A metering row from a channel's ``UpstreamCall`` (tokens only: no price, no FLOPs)."""
    try:
        tokens = normalise(call.usage)
    except MalformedUsage:
        tokens = None
    return {
        "request_id": call.request_id, "session_id": call.session_id, "policy": call.policy,
        "experiment": call.experiment, "arm": call.arm, "purpose": call.purpose, "side": call.side,
        "status": call.status,
        "raw_input_tokens": tokens.raw_input if tokens else 0,
        "cache_read_tokens": tokens.cache_read if tokens else 0,
        "cache_write_tokens": tokens.cache_write if tokens else 0,
        "output_tokens": tokens.output if tokens else 0,
        "cost_usd": None, "edge_flops": None,
    }


def bootstrap_ci(values: Sequence[float], *, resamples: int = 2000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean (sessions resampled with replacement)."""
    if not values:
        raise ValueError("no values to bootstrap")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(rng.choice(values) for _ in range(n)) / n for _ in range(resamples))
    low = means[int((1 - level) / 2 * (resamples - 1))]
    high = means[int((1 + level) / 2 * (resamples - 1))]
    return low, high


def _apply_totals(report: GroupReport, total: Mapping[str, Any]) -> None:
    report.requests, report.cloud_requests = int(total["requests"]), int(total["cloud_requests"])
    report.cloud_calls, report.edge_calls = int(total["cloud_calls"]), int(total["edge_calls"])
    report.cloud_raw_input_tokens = int(total["cloud_raw_input_tokens"])
    report.cloud_cache_read_tokens = int(total["cloud_cache_read_tokens"])
    report.cloud_cache_write_tokens = int(total["cloud_cache_write_tokens"])
    report.cloud_output_tokens = int(total["cloud_output_tokens"])
    report.cloud_cost_usd = float(total["cloud_cost_usd"])
    report.unpriced_cloud_calls = int(total["cloud_unpriced_calls"])
    report.edge_flops = float(total["edge_flops"])


def compare(rows: Iterable[Mapping[str, Any]], *, by: str = "arm", exposures: Mapping[str, float] | None = None,
            grades: Mapping[str, float] | None = None, resamples: int = 2000, seed: int = 0,
            totals: Mapping[str, Mapping[str, Any]] | None = None) -> list[GroupReport]:
    """One report per group (arm or policy), in name order; ``totals``: accounting's sums per group."""
    reports: dict[str, GroupReport] = {}
    sessions: dict[str, set[str]] = defaultdict(set)
    requests: dict[str, set[str]] = defaultdict(set)
    cloud_requests: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        group = str(row.get(by) or "-")
        report = reports.setdefault(group, GroupReport(group))
        session = str(row.get("session_id") or "")
        request = str(row.get("request_id") or "")
        sessions[group].add(session)
        requests[group].add(request)
        report.purposes[f"{row.get('side')}:{row.get('purpose')}"] += 1
        if totals is not None:
            continue
        if row.get("side") == "cloud":
            cloud_requests[group].add(request)
            report.cloud_calls += 1
            report.cloud_raw_input_tokens += _int(row.get("raw_input_tokens"))
            report.cloud_cache_read_tokens += _int(row.get("cache_read_tokens"))
            report.cloud_cache_write_tokens += _int(row.get("cache_write_tokens"))
            report.cloud_output_tokens += _int(row.get("output_tokens"))
            cost = row.get("cost_usd")
            if isinstance(cost, int | float):
                report.cloud_cost_usd += float(cost)
            else:
                report.unpriced_cloud_calls += 1
        else:
            report.edge_calls += 1
            flops = row.get("edge_flops")
            if isinstance(flops, int | float):
                report.edge_flops += float(flops)
    for group, report in reports.items():
        report.sessions = len(sessions[group])
        report.requests = len(requests[group])
        report.cloud_requests = len(cloud_requests[group])
        if totals is not None and group in totals:
            _apply_totals(report, totals[group])
        members = sorted(sessions[group])
        if exposures is not None:
            seen = [exposures[s] for s in members if s in exposures]
            report.exposure = sum(seen) / len(seen) if seen else None
        if grades is not None:
            graded = [float(grades[s]) for s in members if s in grades]
            report.graded_sessions = len(graded)
            if graded:
                report.completion = sum(graded) / len(graded)
                report.completion_ci = bootstrap_ci(graded, resamples=resamples, seed=seed)
    return [reports[g] for g in sorted(reports)]


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def render_markdown(reports: Sequence[GroupReport], *, by: str = "arm") -> str:
    header = [by, "sessions", "requests", "cloud-call rate", "cloud calls", "cloud raw in", "cloud cache read",
              "cloud output", "cloud USD", "edge PFLOPs", "exposure", "completion (95% CI)", "calls by purpose"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in reports:
        cost = f"{r.cloud_cost_usd:.4f}" + (f" (+{r.unpriced_cloud_calls} unpriced)" if r.unpriced_cloud_calls else "")
        completion = "n/a"
        if r.completion is not None and r.completion_ci is not None:
            completion = f"{r.completion:.3f} [{r.completion_ci[0]:.3f}, {r.completion_ci[1]:.3f}] n={r.graded_sessions}"
        purposes = ", ".join(f"{k}={v}" for k, v in sorted(r.purposes.items()))
        cells = [r.group, str(r.sessions), str(r.requests), f"{r.cloud_call_rate:.3f}", str(r.cloud_calls),
                 str(r.cloud_raw_input_tokens), str(r.cloud_cache_read_tokens), str(r.cloud_output_tokens), cost,
                 f"{r.edge_pflops:.6f}", _fmt(r.exposure), completion, purposes]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def as_json(reports: Sequence[GroupReport]) -> list[dict[str, Any]]:
    out = []
    for r in reports:
        out.append({
            "group": r.group, "sessions": r.sessions, "requests": r.requests, "cloud_requests": r.cloud_requests,
            "cloud_call_rate": r.cloud_call_rate, "cloud_calls": r.cloud_calls, "edge_calls": r.edge_calls,
            "cloud_raw_input_tokens": r.cloud_raw_input_tokens, "cloud_cache_read_tokens": r.cloud_cache_read_tokens,
            "cloud_cache_write_tokens": r.cloud_cache_write_tokens, "cloud_output_tokens": r.cloud_output_tokens,
            "cloud_cost_usd": r.cloud_cost_usd, "unpriced_cloud_calls": r.unpriced_cloud_calls,
            "edge_pflops": r.edge_pflops, "exposure": r.exposure, "completion": r.completion,
            "completion_ci": list(r.completion_ci) if r.completion_ci else None,
            "graded_sessions": r.graded_sessions, "purposes": dict(r.purposes),
        })
    return out
