"""Privacy reports from the audit tables: units known, exposed raw, protected, by dimension, exposure.

Exposure is computed like the benchmark: 1 − Σ w·(1 − leak) / Σ w is *protection*; exposure = Σ w·leak / Σ w over the
units known, with leak = 1 when the unit's raw value reached the cloud: found in a body that actually left by the
egress scan (``privacy.audit.exposure``) — not what the detectors reported.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from privacy.audit.exposure import exposed_unit_ids
from privacy.audit.inbound import inbound_counts
from privacy.audit.sets import all_findings
from privacy.audit.tables import PrivacyCall, PrivacyUnit

_PROTECTING = {"pseudonymise", "mask"}


def sessions_of(engine: Engine, experiment: str) -> list[str]:
    with Session(engine) as db:
        rows = db.exec(select(PrivacyCall.session_id).where(PrivacyCall.experiment == experiment)).all()
    return sorted(set(rows))


def session_report(engine: Engine, session_id: str) -> dict[str, Any]:
    with Session(engine) as db:
        units = db.exec(select(PrivacyUnit).where(col(PrivacyUnit.session_id).in_([session_id, "*"]))).all()
        found = all_findings()
        findings = db.exec(select(found.c.unit_id, found.c.action, found.c.type)
                           .where(found.c.session_id == session_id)).all()
        calls = db.exec(select(PrivacyCall).where(PrivacyCall.session_id == session_id)).all()
    left_raw = exposed_unit_ids(engine, session_id)  # what the bodies that actually left carried
    actions: dict[str, set[str]] = defaultdict(set)
    by_type: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for unit_id, action, type_ in findings:
        if unit_id:
            actions[unit_id].add(action)
        by_type[type_][action] += 1
    rows = []
    dims: dict[str, dict[str, float]] = defaultdict(lambda: {"units": 0, "weight": 0.0, "exposed_weight": 0.0,
                                                             "exposed": 0, "protected": 0})
    total_w = exposed_w = 0.0
    seen: set[str] = set()
    for u in units:
        if u.unit_id in seen:
            continue
        seen.add(u.unit_id)
        acts = actions.get(u.unit_id, set())
        status = "exposed" if u.unit_id in left_raw else "protected" if acts & _PROTECTING else "not_sent"
        rows.append({"unit_id": u.unit_id, "entity_id": u.entity_id, "field": u.field, "dimension": u.dimension,
                     "weight": u.weight, "status": status})
        d = dims[u.dimension or "-"]
        d["units"] += 1
        d["weight"] += u.weight
        total_w += u.weight
        if status == "exposed":
            d["exposed"] += 1
            d["exposed_weight"] += u.weight
            exposed_w += u.weight
        elif status == "protected":
            d["protected"] += 1
    for d in dims.values():
        d["exposure"] = d["exposed_weight"] / d["weight"] if d["weight"] else 0.0
    return {
        "session_id": session_id,
        "cloud_calls": len(calls),
        "units_known": len(rows),
        "units_exposed": sum(1 for r in rows if r["status"] == "exposed"),
        "units_protected": sum(1 for r in rows if r["status"] == "protected"),
        "exposure": exposed_w / total_w if total_w else 0.0,
        "by_dimension": {k: dict(v) for k, v in sorted(dims.items())},
        "findings_by_type": {k: dict(v) for k, v in sorted(by_type.items())},
        "inbound": inbound_counts(engine, session_id),  # what answers carried that no request did
        "units": rows,
    }


EXPOSURE_FORMULA = ("exposure = 100 − privacy × 100; privacy = 1 − Σ w·leak / Σ w over the session's listed units; "
                    "leak = 1 when the unit's raw value reached the cloud")


def session_exposure(engine: Engine, session_id: str) -> dict[str, Any]:
    """``session_report`` plus what a benchmark harness needs per unit: ``leak`` (1.0 when the raw value reached the
    cloud, else 0.0), and the session's ``privacy`` (1 − Σ w·leak / Σ w) and ``exposure_pct`` (100 − privacy × 100);
    both None when the session has no listed units."""
    report = session_report(engine, session_id)
    for unit in report["units"]:
        unit["leak"] = 1.0 if unit["status"] == "exposed" else 0.0
    known = report["units_known"] > 0
    report["privacy"] = 1 - report["exposure"] if known else None
    report["exposure_pct"] = 100 * report["exposure"] if known else None
    report["formula"] = EXPOSURE_FORMULA
    return report


def benchmark_export(engine: Engine, session_ids: list[str],
                     open_body: Callable[[PrivacyCall], str] | None = None) -> list[dict[str, Any]]:
    """Lines in the benchmark's ``cloud_assistant_audit.jsonl`` schema: what each cloud call carried.
    ``open_body`` decrypts a body the gateway sealed at rest (``privacy.audit.store.body_opener``)."""
    with Session(engine) as db:
        calls = db.exec(select(PrivacyCall).where(col(PrivacyCall.session_id).in_(session_ids))
                        .order_by(col(PrivacyCall.created_at))).all()
    out = []
    for call in calls:
        body = json.loads(open_body(call) if open_body is not None else call.body)
        out.append({"session_id": call.session_id, "request_id": call.request_id, "timestamp": call.created_at,
                    "model": body.get("model"), "input": body.get("messages") or [],
                    "prompt_tokens": call.prompt_tokens, "completion_tokens": call.completion_tokens,
                    "cached_tokens": call.cached_tokens})
    return out


def to_markdown(reports: list[dict[str, Any]]) -> str:
    lines = ["# Privacy report", ""]
    for r in reports:
        lines += [f"## Session `{r['session_id']}`", "",
                  f"- cloud calls: {r['cloud_calls']}", f"- units known: {r['units_known']}",
                  f"- exposed raw: {r['units_exposed']}", f"- protected: {r['units_protected']}",
                  f"- exposure (weighted): {r['exposure']:.1%}",
                  f"- inbound (in cloud answers, never sent): {r['inbound']['total']} in "
                  f"{r['inbound']['calls']} calls", "",
                  "| dimension | units | exposed | protected | exposure |", "|---|---|---|---|---|"]
        for name, d in r["by_dimension"].items():
            lines.append(f"| {name} | {int(d['units'])} | {int(d['exposed'])} | {int(d['protected'])} | "
                         f"{d['exposure']:.1%} |")
        lines += ["", "| finding type | actions |", "|---|---|"]
        for name, acts in r["findings_by_type"].items():
            lines.append(f"| {name} | " + ", ".join(f"{a}: {n}" for a, n in sorted(acts.items())) + " |")
        if r["inbound"]["total"]:
            lines += ["", "| inbound type | found |", "|---|---|"]
            lines += [f"| {name} | {n} |" for name, n in r["inbound"]["by_type"].items()]
        lines.append("")
    return "\n".join(lines)


def to_html(reports: list[dict[str, Any]]) -> str:
    body = "".join(f"<pre>{html.escape(to_markdown([r]))}</pre>" for r in reports)
    return f"<!doctype html><html><head><meta charset='utf-8'><title>Privacy report</title></head><body>{body}</body></html>"
