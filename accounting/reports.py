"""Usage reports: derived figures per group, in the paper's units, as table / JSON / CSV / Markdown.

Definitions (per group): ``requests`` = distinct client requests; ``cloud_calls``/``edge_calls`` = upstream calls
(probes, plans and advice included); ``cloud_call_rate`` = share of requests that called the cloud at least once;
``cache_hit_rate`` = cloud cache-read tokens / cloud prompt tokens; ``estimated_share`` = share of calls whose
tokens are a tokenizer estimate; ``cloud_unpriced_calls`` = cloud calls with ``cost_usd`` null (unknown model);
``edge_pflops`` = Σ edge FLOPs / 1e15 under ``flops_formula`` ("mixed" when records used several). ``day`` is UTC.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from accounting.errors import EcgwError
from accounting.store import GROUPS, UsageStore

FORMATS = ("table", "json", "csv", "md")
REPORT_FIELDS = (
    "group", "requests", "cloud_calls", "edge_calls", "cloud_raw_input_tokens", "cloud_cache_read_tokens",
    "cloud_cache_write_tokens", "cloud_output_tokens", "cloud_cost_usd", "edge_prompt_tokens", "edge_output_tokens",
    "edge_pflops", "cloud_call_rate", "cache_hit_rate", "estimated_share", "cloud_unpriced_calls", "flops_formula",
    "price_version", "mean_latency_s",
)
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class BadReportRequest(EcgwError, ValueError):
    pass


def parse_since(text: str | None, *, now: float) -> float | None:
    """``7d``, ``24h``, ``30m`` back from ``now``; unix seconds; or an ISO date/time (UTC unless it says otherwise)."""
    if text is None or not text.strip():
        return None
    value = text.strip()
    match = _RELATIVE.match(value.lower())
    if match:
        return now - float(match.group(1)) * _UNIT_S[match.group(2)]
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadReportRequest(f"--since {text!r}: use a duration such as 7d, 24h, 30m, unix seconds, or an ISO date "
                               "such as 2026-05-01 or 2026-05-01T12:00:00Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _ratio(part: float, whole: float) -> float:
    return round(part / whole, 6) if whole else 0.0


def _same(low: Any, high: Any) -> str | None:
    if low is None and high is None:
        return None
    return str(low) if low == high else "mixed"


def derive(raw: dict[str, Any]) -> dict[str, Any]:
    requests = int(raw["requests"])
    calls = int(raw["calls"])
    return {
        "group": raw["group"],
        "requests": requests,
        "cloud_calls": int(raw["cloud_calls"]),
        "edge_calls": int(raw["edge_calls"]),
        "cloud_raw_input_tokens": int(raw["cloud_raw_input_tokens"]),
        "cloud_cache_read_tokens": int(raw["cloud_cache_read_tokens"]),
        "cloud_cache_write_tokens": int(raw["cloud_cache_write_tokens"]),
        "cloud_output_tokens": int(raw["cloud_output_tokens"]),
        "cloud_cost_usd": round(float(raw["cloud_cost_usd"]), 6),
        "edge_prompt_tokens": int(raw["edge_prompt_tokens"]),
        "edge_output_tokens": int(raw["edge_output_tokens"]),
        "edge_pflops": round(float(raw["edge_flops"]) / 1e15, 9),
        "cloud_call_rate": _ratio(int(raw["cloud_requests"]), requests),
        "cache_hit_rate": _ratio(int(raw["cloud_cache_read_tokens"]), int(raw["cloud_prompt_tokens"])),
        "estimated_share": _ratio(int(raw["estimated_calls"]), calls),
        "cloud_unpriced_calls": int(raw["cloud_unpriced_calls"]),
        "flops_formula": _same(raw["flops_formula_min"], raw["flops_formula_max"]),
        "price_version": _same(raw["price_version_min"], raw["price_version_max"]),
        "mean_latency_s": round(float(raw["mean_latency_s"] or 0.0), 6),
    }


def usage_report(store: UsageStore, by: str, *, since: float | None = None, until: float | None = None,
                 session_prefix: str | None = None, session_id: str | None = None) -> list[dict[str, Any]]:
    """``session_id``: only that session's calls (the full stored id, owner prefix included)."""
    if by not in GROUPS:
        raise BadReportRequest(f"unknown grouping {by!r}; valid: {', '.join(GROUPS)}")
    where = {"session_id": session_id} if session_id is not None else None
    return [derive(raw) for raw in store.aggregate(by, since=since, until=until, where=where,
                                                   session_prefix=session_prefix)]


# formatting ----------------------------------------------------------------------------------------------------

_TABLE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    # (header, field, how)
    ("requests", "requests", "int"),
    ("cloud calls", "cloud_calls", "int"),
    ("edge calls", "edge_calls", "int"),
    ("cloud raw (M)", "cloud_raw_input_tokens", "mtok"),
    ("cloud cache read (M)", "cloud_cache_read_tokens", "mtok"),
    ("cloud cache write (M)", "cloud_cache_write_tokens", "mtok"),
    ("cloud output (M)", "cloud_output_tokens", "mtok"),
    ("cloud cost (USD)", "cloud_cost_usd", "usd"),
    ("edge prompt (M)", "edge_prompt_tokens", "mtok"),
    ("edge output (M)", "edge_output_tokens", "mtok"),
    ("edge PFLOPs", "edge_pflops", "pflops"),
    ("cloud call rate", "cloud_call_rate", "pct"),
    ("cache hit rate", "cache_hit_rate", "pct"),
    ("estimated", "estimated_share", "pct"),
)


def _cell(value: Any, how: str) -> str:
    if how == "int":
        return str(value)
    if how == "mtok":
        return f"{value / 1e6:.4f}"
    if how == "usd":
        return f"{value:.4f}"
    if how == "pflops":
        return f"{value:.4f}"
    return f"{value * 100:.1f}%"


def _formulas(rows: Sequence[dict[str, Any]]) -> str:
    names = sorted({str(r["flops_formula"]) for r in rows if r.get("flops_formula")})
    return ", ".join(names) if names else "none (no edge calls with a known model)"


def _prices(rows: Sequence[dict[str, Any]]) -> str:
    names = sorted({str(r["price_version"]) for r in rows if r.get("price_version")})
    return ", ".join(names) if names else "none"


def _grid(by: str, rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    header = [by] + [h for h, _, _ in _TABLE_COLUMNS]
    body = [[str(r["group"]) if r["group"] is not None else "(none)"]
            + [_cell(r[f], how) for _, f, how in _TABLE_COLUMNS] for r in rows]
    return header, body


def render(rows: Sequence[dict[str, Any]], *, by: str, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(list(rows), indent=2)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(REPORT_FIELDS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue()
    header, body = _grid(by, rows)
    note = (f"Usage by {by}. Tokens in millions (M), cost in USD, edge compute in PFLOPs "
            f"(formula: {_formulas(rows)}; prices: {_prices(rows)}).")
    if fmt == "md":
        lines = [note, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines) + "\n"
    if fmt == "table":
        widths = [max(len(header[i]), *(len(row[i]) for row in body)) if body else len(header[i])
                  for i in range(len(header))]
        lines = [note, ""]
        lines.append("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))))
        for row in body:
            lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))
        if not body:
            lines.append("(no records)")
        return "\n".join(lines) + "\n"
    raise BadReportRequest(f"unknown format {fmt!r}; valid: {', '.join(FORMATS)}")
