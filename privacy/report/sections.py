"""The period report (``privacy.report.build``) as titled sections of facts and tables of text: what the Markdown,
HTML and PDF renderers lay out, so the three show the same numbers, worded once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from privacy.report.build import FAIL_CLOSED, KEPT


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]


@dataclass
class Section:
    title: str
    facts: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figure: str | None = None  # the figure that belongs here (``privacy.report.figures``), if any


def usd(value: float) -> str:
    return f"{value:.6f}"


def _counts(title: str, name: str, counts: dict[str, int]) -> Table:
    return Table(title, [name, "count"], [[k, str(v)] for k, v in counts.items()])


def _usage(title: str, name: str, rows: list[dict[str, Any]]) -> Table:
    return Table(title, [name, "cloud calls", "raw input tokens", "cache read tokens", "output tokens", "cost (USD)"],
                 [[str(r[name]), str(r["cloud_calls"]), str(r["cloud_raw_input_tokens"]),
                   str(r["cloud_cache_read_tokens"]), str(r["cloud_output_tokens"]), usd(r["cloud_cost_usd"])]
                  for r in rows])


def _trail(trail: dict[str, Any]) -> Section:
    section = Section("Audit trail")
    if not trail["verified"]:
        section.facts.append(f"not verified: {trail['reason']}")
        return section
    section.facts += [f"trail: {'intact' if trail['intact'] else 'BROKEN'}",
                      f"chained records: {trail['entries']}", f"signed checkpoints: {trail['checkpoints']}",
                      f"breaks: {len(trail['breaks'])}", f"head hash: {trail['head_hash']}"]
    if not trail["anchored"]:
        section.facts.append("the period's last records are chained but no checkpoint signs them yet (the next "
                             "one comes within privacy.audit_checkpoint_interval_s, and at shutdown)")
    if trail["breaks"]:
        section.tables.append(Table("Breaks", ["what", "where", "detail"],
                                    [[b["what"], b.get("where", "-"), b["detail"]] for b in trail["breaks"]]))
    section.tables.append(Table("Checkpoints signing the period", ["seq", "signed at", "head seq", "hash", "valid"],
                                [[str(p["seq"]), str(p["signed_at_iso"]), str(p["head_seq"]), p["hash"],
                                  "yes" if p["valid"] else "NO"] for p in trail["period_checkpoints"]]))
    return section


def sections(report: dict[str, Any]) -> list[Section]:
    period, cloud, placed = report["period"], report["cloud_calls"], report["placeholders"]
    raw, kept, inbound, closed = report["left_raw"], report["kept_on_edge"], report["inbound"], report["fail_closed"]
    out = [Section("Owner and period", [
        f"owner: {report['owner']}", f"since: {period['since_iso'] or 'the first record'}",
        f"until: {period['until_iso']}", f"metering: {'on' if report['metering'] else 'off (no cloud figures)'}"])]
    out.append(Section("Cloud calls", [
        f"cloud calls: {cloud['total']}", f"protected bodies in the audit: {cloud['audited']}",
        f"cloud cost (USD): {usd(cloud['cost_usd'])}", f"egress receipts issued: {cloud['receipts']['total']}"],
        [_usage("Cloud calls by target", "target", cloud["by_target"]),
         _usage("Cloud calls by policy", "policy", cloud["by_policy"]),
         _counts("Egress receipts by target", "target", cloud["receipts"]["by_target"])]))
    out.append(Section("Data categories sent as placeholders", [f"placeholders sent: {placed['total']}"],
                       [_counts("Placeholders by type", "type", placed["by_type"]),
                        Table("Placeholders by target", ["target", "type", "count"],
                              [[t, k, str(v)] for t, c in placed["by_target"].items() for k, v in c.items()])],
                       figure="categories"))
    secrets = raw["tool_secrets"]
    out.append(Section("Units that left raw", [
        f"listed units found raw in what left: {raw['units_left_raw']} (distinct units: {raw['distinct_units']})",
        f"let through by the operator's audit action: {raw['by_audit_action']}",
        f"not caught by detection: {raw['missed']}",
        f"values sent as they were by an audit action (privacy.actions): {raw['audit_actions']['total']}",
        "credentials restored into tool-call arguments (privacy.restore_secrets_in_tools: audit): "
        f"{secrets['restored_into_tool']['total']}",
        f"credentials withheld from tool-call arguments (deny): {secrets['withheld_from_tool']['total']}"],
        [Table("Units found raw", ["unit", "calls", "by audit action", "not caught"],
               [[u["unit_id"], str(u["calls"]), str(u["by_audit_action"]), str(u["missed"])] for u in raw["units"]]),
         _counts("Sent as they were by an audit action", "type", raw["audit_actions"]["by_type"]),
         _counts("Credentials restored into tool calls", "type", secrets["restored_into_tool"]["by_type"])],
        figure="exposure"))
    classes = report["classes"]
    out.append(Section("Data classes by tier", [
        "values of each class in the bodies that left, by the tier of the target that got them (egress receipts)",
        f"receipts signed before receipts named classes (not counted by class): {classes['receipts_without_classes']}"],
        [Table("Classes × tiers × action", ["class", "tier", "pseudonymised", "raw", "bodies"],
               [[r["class"], r["tier"], str(r["pseudonymised"]), str(r["raw"]), str(r["receipts"])]
                for r in classes["by_class_tier"]]),
         _counts("Kept on the edge by a data class (x-ecgw-fallback: data-class)", "class",
                 classes["kept_on_edge"])]))
    out.append(Section("Steps kept on the edge", [
        f"steps in the period: {kept['steps_in_period']}", f"steps kept on the edge: {kept['steps']}"],
        [Table("Steps kept on the edge, by reason", ["reason", "steps", "meaning"],
               [[k, str(v), KEPT.get(k, "")] for k, v in kept["by_reason"].items()]),
         Table("Cloud calls not made, by reason (consultations included)", ["reason", "calls", "meaning"],
               [[k, str(v), KEPT.get(k) or FAIL_CLOSED.get(k, "")] for k, v in kept["calls_stopped"].items()])]))
    out.append(Section("Inbound findings (response guard)", [
        f"inbound findings: {inbound['total']}",
        "values cloud answers carried that no request did (privacy.response_guard; off records none)"],
        [_counts("Inbound findings by type", "type", inbound["by_type"]),
         _counts("Inbound findings by action", "action", inbound["by_action"])]))
    out.append(Section("Fail-closed events", [f"fail-closed events: {closed['total']}"],
                       [Table("Fail-closed events by reason", ["reason", "events", "meaning"],
                              [[k, str(v), FAIL_CLOSED.get(k, "")] for k, v in closed["by_reason"].items()])]))
    out.append(_trail(report["trail"]))
    if report["owners"]:
        out.append(Section("Owners", [], [Table("Per owner", ["owner", "cloud calls", "protected bodies",
                                                              "placeholders", "units left raw", "kept on edge"],
                                                [[o["owner"], str(o["cloud_calls"]), str(o["audited_calls"]),
                                                  str(o["placeholders"]), str(o["units_left_raw"]),
                                                  str(o["kept_on_edge"])] for o in report["owners"]])]))
    return out
