"""The period report, as one JSON-ready object: the source of truth that every format renders
(``privacy.report.sections`` → Markdown, HTML, PDF).

Per owner and period: cloud calls by target and policy (the metering store's figures, exactly ``GET /v1/usage``'s),
the data categories that left as placeholders, the units that left raw (the operator's ``audit`` actions named as
such), the steps and consultations kept on the edge by a privacy block or a budget, the response guard's inbound
findings, the fail-closed events, and the audit trail's verification (``privacy.audit.verify``) with the checkpoint
hashes that sign the period.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy.engine import Engine

from accounting.store import UsageStore
from privacy.audit import verify_trail
from privacy.report import reads
from privacy.report.classes import class_tiers
from privacy.report.period import Scope, bucket_for, iso

VERSION = 1
# Why a step (or a policy's cloud consultation) stayed on the edge: a privacy block, or a budget.
KEPT = {"privacy-blocked": "a privacy block (action block, images, or the last check)",
        "data-class": "a data class no target of the call's tiers may receive (privacy.classes)",
        "budget": "a spent cloud budget (limits.on_exceed: edge)",
        "budget-unavailable": "a cloud budget that could not be read (fail closed)"}
# What fails closed: nothing was sent because protection, the session state or a budget could not be used.
FAIL_CLOSED = {"privacy-unavailable": "protection could not run (503 privacy_unavailable)",
               "privacy-error-edge": "protection could not run; privacy.on_privacy_error: edge kept it local",
               "session-store-unavailable": "the session store was down (503)",
               "budget-unavailable": "a cloud budget could not be read"}
_USAGE_FIELDS = ("cloud_calls", "cloud_raw_input_tokens", "cloud_cache_read_tokens", "cloud_output_tokens",
                 "cloud_cost_usd")


def _usage_rows(rows: Iterable[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [{name: str(r["group"]) if r["group"] is not None else "-", **{k: r[k] for k in _USAGE_FIELDS}}
            for r in rows]


def _stopped(step: dict[str, Any]) -> list[str]:
    """The reasons the cloud door gave for calls it did not make in this step (``cloud_stopped`` in the step's
    signal), else the step's own fallback."""
    noted = step["signal"].get("cloud_stopped")
    if isinstance(noted, str) and noted:
        return noted.split(",")
    return [step["fallback"]] if step["fallback"] else []


def trail(engine: Engine, public: Ed25519PublicKey | Mapping[str, Ed25519PublicKey] | None,
           scope: Scope) -> dict[str, Any]:
    if public is None:
        return {"verified": False, "reason": "no public key to verify the checkpoints with"}
    report = verify_trail(engine, public, since=scope.since)
    with engine.connect() as conn:
        points = reads.checkpoints(conn)
        last = reads.last_entry(conn, scope.until)
    broken = {b.where.split(" (", 1)[0] for b in report.breaks if b.where.startswith("checkpoint ")}
    signing = [p for p in points if scope.holds(float(p["created_at"]))]
    after = next((p for p in points if float(p["created_at"]) >= scope.until), None)
    if after is not None:
        signing.append(after)  # the first checkpoint after the period signs every record in it
    breaks = [{"what": b.what, "where": b.where, "detail": b.detail} for b in report.breaks]
    if scope.prefix is not None:  # a tenant sees that the trail broke and how, not other owners' record names
        breaks = [{"what": b["what"], "detail": b["detail"]} for b in breaks]
    return {
        "verified": True, "intact": report.intact, "entries": report.entries, "checkpoints": report.checkpoints,
        "head_hash": report.head_hash, "breaks": breaks,
        "period_checkpoints": [{"seq": int(p["seq"]), "signed_at": float(p["created_at"]),
                                "signed_at_iso": iso(float(p["created_at"])), "head_seq": int(p["head_seq"]),
                                "hash": str(p["hash"]), "valid": f"checkpoint {p['seq']}" not in broken}
                               for p in signing],
        # every record of the period is under a signed head (none to sign counts as signed)
        "anchored": last is None or any(int(p["head_seq"]) >= last for p in points),
    }


def build_report(engine: Engine, scope: Scope, *, usage: UsageStore | None,
                 public: Ed25519PublicKey | Mapping[str, Ed25519PublicKey] | None,
                 owner_of: Callable[[str], str], clock: Callable[[], float] = time.time) -> dict[str, Any]:
    """``engine``: the audit's database; ``usage``: the metering store (None when metering is off);
    ``owner_of``: the owner of an internal session id (``gateway.state.tenancy.owner_of``)."""
    with engine.connect() as conn:
        calls = reads.audited_calls(conn, scope)
        found = reads.findings(conn, scope)
        let_through = {(r["call_id"], r["unit_id"]) for r in reads.audited_units(conn, scope)}
        raw = reads.egress(conn, scope)
        inbound_rows = reads.inbound(conn, scope)
        receipts = reads.receipts(conn, scope)
        class_receipts = reads.receipt_claims(conn, scope)
    metered = usage is not None and reads.has_table(usage.engine, "ecgw_usage_records")
    with_steps = usage is not None and reads.has_table(usage.engine, "ecgw_step_records")
    by_target = reads.cloud_usage(usage, scope, "deployment") if metered and usage else []
    by_policy = reads.cloud_usage(usage, scope, "policy") if metered and usage else []
    by_session = reads.cloud_usage(usage, scope, "session") if metered and usage else []
    targets: dict[str, set[str]] = {}
    steps: list[dict[str, Any]] = []
    if usage is not None:
        with usage.engine.connect() as uconn:
            targets = reads.targets_by_request(uconn, scope) if metered else {}
            steps = reads.steps(uconn, scope) if with_steps else []

    call_of = {c["id"]: c for c in calls}
    placed: Counter[str] = Counter()
    placed_by_target: dict[str, Counter[str]] = defaultdict(Counter)
    audit_actions: Counter[str] = Counter()
    tools: dict[str, Counter[str]] = {"restored_into_tool": Counter(), "withheld_from_tool": Counter()}
    placed_by_call: Counter[str] = Counter()
    for f in found:
        n, call = int(f["n"]), call_of.get(f["call_id"])
        if call is None:
            continue
        if f["action"] in reads.PLACED:
            placed[f["type"]] += n
            placed_by_call[f["call_id"]] += n
            for target in sorted(targets.get(call["request_id"]) or {"(not metered)"}):
                placed_by_target[target][f["type"]] += n
        elif f["action"] == "audit":
            audit_actions[f["type"]] += n
        elif f["action"] in tools:
            tools[f["action"]][f["type"]] += n

    units: dict[str, dict[str, Any]] = {}
    for g in raw:
        unit = units.setdefault(g["unit_id"], {"unit_id": g["unit_id"], "calls": 0, "by_audit_action": 0,
                                               "missed": 0})
        unit["calls"] += 1
        unit["by_audit_action" if (g["call_id"], g["unit_id"]) in let_through else "missed"] += 1

    kept: Counter[str] = Counter()  # steps answered on the edge instead (the step's fallback)
    stopped: Counter[str] = Counter()  # cloud calls the door did not make, a policy's consultations included
    closed: Counter[str] = Counter()
    for step in steps:
        if step["fallback"]:
            kept[step["fallback"]] += 1
        for reason in _stopped(step):
            stopped[reason] += 1
            if reason in FAIL_CLOSED:
                closed[reason] += 1

    start = scope.since if scope.since is not None else min(
        [float(c["created_at"]) for c in calls] + [float(g["created_at"]) for g in raw] + [scope.until])
    bucket = bucket_for(start, scope.until)
    series: dict[float, dict[str, Any]] = {}

    def point(moment: float) -> dict[str, Any]:
        t = float(int((moment - start) // bucket) * bucket + start)
        return series.setdefault(t, {"t": t, "cloud_calls": 0, "placeholders": 0, "units_left_raw": 0})

    for c in calls:
        p = point(float(c["created_at"]))
        p["cloud_calls"] += 1
        p["placeholders"] += placed_by_call[c["id"]]
    for g in raw:
        point(float(g["created_at"]))["units_left_raw"] += 1

    owners: dict[str, dict[str, Any]] = {}

    def owner(session_id: str) -> dict[str, Any]:
        name = owner_of(session_id) or "(single tenant)"
        return owners.setdefault(name, {"owner": name, "cloud_calls": 0, "audited_calls": 0, "placeholders": 0,
                                        "units_left_raw": 0, "kept_on_edge": 0})

    for row in by_session:
        owner(str(row["group"]))["cloud_calls"] += int(row["cloud_calls"])
    for c in calls:
        o = owner(c["session_id"])
        o["audited_calls"] += 1
        o["placeholders"] += placed_by_call[c["id"]]
    for g in raw:
        owner(g["session_id"])["units_left_raw"] += 1
    for step in steps:
        if step["fallback"]:
            owner(step["session_id"])["kept_on_edge"] += 1

    in_type: Counter[str] = Counter()
    in_action: Counter[str] = Counter()
    for r in inbound_rows:
        in_type[str(r["type"])] += int(r["n"])
        in_action[str(r["action"])] += int(r["n"])

    return {
        "object": "privacy.period_report",
        "version": VERSION,
        "owner": scope.owner,
        "period": {"since": scope.since, "until": scope.until, "since_iso": iso(scope.since),
                   "until_iso": iso(scope.until)},
        "generated_at": clock(),
        "metering": metered,
        "cloud_calls": {
            "total": sum(int(r["cloud_calls"]) for r in by_target),
            "audited": len(calls),
            "cost_usd": round(sum(float(r["cloud_cost_usd"]) for r in by_target), 6),
            "by_target": _usage_rows(by_target, "target"),
            "by_policy": _usage_rows(by_policy, "policy"),
            "receipts": {"total": sum(receipts.values()), "by_target": receipts},
        },
        "placeholders": {
            "total": sum(placed.values()),
            "by_type": dict(sorted(placed.items())),
            "by_target": {t: dict(sorted(c.items())) for t, c in sorted(placed_by_target.items())},
        },
        "left_raw": {
            "units_left_raw": len(raw),
            "distinct_units": len(units),
            "by_audit_action": sum(u["by_audit_action"] for u in units.values()),
            "missed": sum(u["missed"] for u in units.values()),
            "units": sorted(units.values(), key=lambda u: (-u["calls"], u["unit_id"])),
            "audit_actions": {"total": sum(audit_actions.values()), "by_type": dict(sorted(audit_actions.items()))},
            "tool_secrets": {k: {"total": sum(v.values()), "by_type": dict(sorted(v.items()))}
                             for k, v in tools.items()},
        },
        "kept_on_edge": {
            "steps": sum(kept.values()),
            "by_reason": dict(sorted(kept.items())),
            "calls_stopped": dict(sorted(stopped.items())),
            "steps_in_period": len(steps),
        },
        "inbound": {"total": sum(in_type.values()), "by_type": dict(sorted(in_type.items())),
                    "by_action": dict(sorted(in_action.items()))},
        "fail_closed": {"total": sum(closed.values()), "by_reason": dict(sorted(closed.items()))},
        "classes": class_tiers(class_receipts, steps),
        "trail": trail(engine, public, scope),
        "owners": sorted(owners.values(), key=lambda o: o["owner"]) if scope.prefix is None else [],
        "series": {"bucket_s": bucket, "points": [series[t] for t in sorted(series)]},
    }
