"""``verify_trail``: walk the chain and its checkpoints and name every break — a record altered, removed, inserted
or reordered, a checkpoint forged or removed.

The links and checkpoints are walked in full (hashes only); ``since`` limits the re-hashing of the records' rows
to entries made at or after it. A record rewritten later (a session's units, a call's token counts) is checked
against its latest entry; earlier entries of the same record stay in the chain as links.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy import Connection, MetaData, Table, inspect, select
from sqlalchemy.engine import Engine

from privacy.audit import chain, receipts
from privacy.audit.tables import (
    PrivacyCall,
    PrivacyCallSet,
    PrivacyChain,
    PrivacyCheckpoint,
    PrivacyEgress,
    PrivacyErasure,
    PrivacyFinding,
    PrivacyFindingSet,
    PrivacyInbound,
    PrivacyReceipt,
    PrivacyUnit,
)


@dataclass(frozen=True)
class Break:
    what: str  # "altered", "removed", "inserted", "reordered", "checkpoint", "receipt"
    where: str  # e.g. "seq 12 (call c-1)"
    detail: str

    def __str__(self) -> str:
        return f"{self.what}: {self.where}: {self.detail}"


@dataclass
class TrailReport:
    entries: int = 0
    checkpoints: int = 0
    receipts: int = 0
    erased: int = 0  # calls whose content an erasure or retention tombstoned (not a break)
    erasures: int = 0
    head_hash: str = chain.GENESIS
    checkpoint_hashes: list[str] = field(default_factory=list)
    breaks: list[Break] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return not self.breaks

    def as_dict(self) -> dict[str, Any]:
        return {"intact": self.intact, "entries": self.entries, "checkpoints": self.checkpoints,
                "receipts": self.receipts, "erased": self.erased, "erasures": self.erasures,
                "head_hash": self.head_hash, "checkpoint_hashes": self.checkpoint_hashes,
                "breaks": [{"what": b.what, "where": b.where, "detail": b.detail} for b in self.breaks]}


def _rows(conn: Connection, table: Any, order: Any, **where: Any) -> list[dict[str, Any]]:
    query = select(table)
    for name, value in where.items():
        query = query.where(table.c[name] == value)
    return [dict(r._mapping) for r in conn.execute(query.order_by(order))]


def _grouped(conn: Connection, table: Any, order: Any, key: str) -> dict[str, list[dict[str, Any]]]:
    """A table's rows, in ``order``, grouped by the value of ``key``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in _rows(conn, table, order):
        out.setdefault(row[key], []).append(row)
    return out


def _walk_links(entries: list[dict[str, Any]], report: TrailReport) -> None:
    by_hash = {e["hash"]: e["seq"] for e in entries}
    prev_hash, prev_seq = chain.GENESIS, 0
    for e in entries:
        where = f"seq {e['seq']} ({e['kind']} {e['ref']})"
        if chain.entry_hash(e["seq"], e["kind"], e["ref"], e["digest"], e["created_at"], e["prev"]) != e["hash"]:
            report.breaks.append(Break("altered", where, "the chain entry itself was changed"))
        if e["prev"] != prev_hash:
            if e["prev"] in by_hash:
                report.breaks.append(Break("reordered", where, f"it follows seq {by_hash[e['prev']]} in the chain, "
                                                               f"not seq {prev_seq}"))
            elif e["seq"] > prev_seq + 1:
                report.breaks.append(Break("removed", where, f"seq {prev_seq + 1}..{e['seq'] - 1} are missing"))
            else:
                report.breaks.append(Break("inserted", where, f"its predecessor is not seq {prev_seq}'s hash"))
        prev_hash, prev_seq = e["hash"], e["seq"]
    report.head_hash = prev_hash


def _check_records(conn: Connection, entries: list[dict[str, Any]], since: float | None,
                   report: TrailReport) -> None:
    calls_t, findings_t = PrivacyCall.__table__, PrivacyFinding.__table__  # type: ignore[attr-defined]
    egress_t, units_t = PrivacyEgress.__table__, PrivacyUnit.__table__  # type: ignore[attr-defined]
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for e in entries:
        latest[(e["kind"], e["ref"])] = e
    calls = {r["id"]: r for r in _rows(conn, calls_t, calls_t.c.id)}
    inbound_t = PrivacyInbound.__table__  # type: ignore[attr-defined]
    findings = _grouped(conn, findings_t, findings_t.c.id, "call_id")
    sets_t, refs_t = PrivacyFindingSet.__table__, PrivacyCallSet.__table__  # type: ignore[attr-defined]
    sets = _grouped(conn, sets_t, sets_t.c.id, "set_id")
    intact_sets = {ref for ref, rows in sets.items() if chain.set_digest(rows) == ref}
    refs = {call: [r["set_id"] for r in rows] for call, rows in _grouped(conn, refs_t, refs_t.c.position,
                                                                          "call_id").items()}
    egress = _grouped(conn, egress_t, egress_t.c.id, "call_id")
    inbound = _grouped(conn, inbound_t, inbound_t.c.id, "call_id")
    units = _grouped(conn, units_t, units_t.c.unit_id, "session_id")
    receipts_t = PrivacyReceipt.__table__  # type: ignore[attr-defined]
    stored_receipts = {r["id"]: r for r in _rows(conn, receipts_t, receipts_t.c.id)}

    erasures_t = PrivacyErasure.__table__  # type: ignore[attr-defined]
    erasures = {r["id"]: r for r in _rows(conn, erasures_t, erasures_t.c.created_at)}

    def call_found(ref: str) -> str | None:
        call = calls.get(ref)
        if call is None:
            return None
        if call["body_digest"] is None and call["erased_by"] is None:  # chained before schema step 6
            return chain.call_digest(call, findings.get(ref, []))
        if call["erased_by"] is None:
            set_ids = refs.get(ref, [])
            if (chain.content_digest(call["body"]) != call["body_digest"]
                    or chain.findings_digest(chain.rows_digest(findings.get(ref, [])), set_ids)
                    != call["findings_digest"]
                    or not intact_sets.issuperset(set_ids)):
                return "content"  # the body or the findings (its own, its sets') differ from the digests chained
        elif ref in findings or ref in refs:
            return "content"  # findings under a tombstone
        return chain.erasable_call_digest(call)

    admin = _admin_actions(conn)

    def found(kind: str, ref: str) -> str | None:
        if kind == "call":
            return call_found(ref)
        if kind == "admin":
            return chain.rows_digest([admin[ref]]) if ref in admin else None
        if kind == "erasure":
            return chain.rows_digest([erasures[ref]]) if ref in erasures else None
        if kind == "usage":
            call = calls.get(ref)
            return None if call is None else chain.usage_digest(call["prompt_tokens"], call["completion_tokens"],
                                                                call["cached_tokens"])
        if kind == "egress":
            return chain.rows_digest(egress[ref]) if ref in egress else None
        if kind == "inbound":
            return chain.rows_digest(inbound[ref]) if ref in inbound else None
        if kind == "units":
            return chain.rows_digest(units.get(ref, []))
        if kind == "receipt":
            return chain.rows_digest([stored_receipts[ref]]) if ref in stored_receipts else None
        return None

    for (kind, ref), e in latest.items():
        if since is not None and e["created_at"] < since:
            continue
        where = f"seq {e['seq']} ({kind} {ref})"
        digest = found(kind, ref)
        if digest is None:
            report.breaks.append(Break("removed", where, f"the {kind} record's rows are gone"))
        elif digest != e["digest"]:
            report.breaks.append(Break("altered", where, f"the {kind} record's rows differ from what was chained"))
    chained_calls = {ref for kind, ref in latest if kind == "call"}
    for ref, call in calls.items():
        if ref not in chained_calls and (since is None or call["created_at"] >= since):
            report.breaks.append(Break("inserted", f"call {ref}", "a cloud call that is not in the chain"))
    for ref in set(findings) - set(calls):
        report.breaks.append(Break("inserted", f"findings of call {ref}", "findings of a call that does not exist"))
    for ref in set(refs) - set(calls):
        report.breaks.append(Break("inserted", f"finding sets of call {ref}",
                                   "finding sets referenced by a call that does not exist"))
    referenced = {set_id for ids in refs.values() for set_id in ids}
    for ref in set(sets) - referenced:
        report.breaks.append(Break("inserted", f"finding set {ref}", "a finding set no call references"))
    chained_egress = {ref for kind, ref in latest if kind == "egress"}
    for ref in set(egress) - chained_egress:
        report.breaks.append(Break("inserted", f"egress of call {ref}", "egress rows that are not in the chain"))
    chained_inbound = {ref for kind, ref in latest if kind == "inbound"}
    for ref in set(inbound) - chained_inbound:
        report.breaks.append(Break("inserted", f"inbound findings of call {ref}",
                                   "inbound rows that are not in the chain"))
    chained_units = {ref for kind, ref in latest if kind == "units"}
    for ref in set(units) - chained_units:
        report.breaks.append(Break("inserted", f"units of session {ref}", "units that are not in the chain"))
    _check_erasures(calls, erasures, {ref for kind, ref in latest if kind == "erasure"}, report)
    chained_admin = {ref for kind, ref in latest if kind == "admin"}
    for ref in set(admin) - chained_admin:
        if since is None or admin[ref]["at"] >= since:
            report.breaks.append(Break("inserted", f"admin action {ref}", "an admin action that is not in the chain"))
    chained_receipts = {ref for kind, ref in latest if kind == "receipt"}
    for ref in set(stored_receipts) - chained_receipts:
        report.breaks.append(Break("inserted", f"receipt {ref}", "a receipt that is not in the chain"))


ADMIN_ACTIONS = "ecgw_admin_actions"  # the gateway's admin audit (``gateway.admin.database``), chained as "admin"


def _admin_actions(conn: Connection) -> dict[str, dict[str, Any]]:
    """The admin actions by id, as chained (absent where the gateway's admin tables were never created)."""
    if not inspect(conn).has_table(ADMIN_ACTIONS):
        return {}
    table = Table(ADMIN_ACTIONS, MetaData(), autoload_with=conn)
    return {str(r["id"]): r for r in (dict(row._mapping) for row in conn.execute(select(table)))}


def _check_erasures(calls: dict[str, dict[str, Any]], erasures: dict[str, dict[str, Any]], chained: set[str],
                    report: TrailReport) -> None:
    """An erased call is not a break, but its tombstone must be one a chained erasure made: each erasure's digest of
    the calls it erased still matches, and no call is tombstoned by an erasure that does not exist."""
    erased: dict[str, list[str]] = {}
    for ref, call in calls.items():
        if call["erased_by"] is not None:
            erased.setdefault(str(call["erased_by"]), []).append(ref)
    report.erased = sum(len(ids) for ids in erased.values())
    report.erasures = len(erasures)
    for ref in set(erasures) - chained:
        report.breaks.append(Break("inserted", f"erasure {ref}", "an erasure that is not in the chain"))
    for ref, row in erasures.items():
        if chain.ids_digest(erased.get(ref, [])) != row["calls_digest"]:
            report.breaks.append(Break("altered", f"erasure {ref} ({row['reason']})",
                                       "the calls it tombstoned are not the ones it recorded"))
    for ref in set(erased) - set(erasures):
        report.breaks.append(Break("altered", f"calls {', '.join(sorted(erased[ref])[:3])}",
                                   f"tombstoned by erasure {ref}, which does not exist"))


def _check_receipts(conn: Connection, keys: dict[str, Ed25519PublicKey], since: float | None,
                    report: TrailReport) -> None:
    """Every stored receipt's signature: a receipt forged in the database (its row chained anew) is named."""
    table = PrivacyReceipt.__table__  # type: ignore[attr-defined]
    for row in _rows(conn, table, table.c.created_at):
        if since is not None and row["created_at"] < since:
            continue
        report.receipts += 1
        try:
            receipts.verify(row["token"], keys)
        except receipts.ReceiptInvalid as exc:
            report.breaks.append(Break("receipt", f"receipt {row['id']} (call {row['call_id']})", str(exc)))


def _check_checkpoints(conn: Connection, entries: list[dict[str, Any]], keys: dict[str, Ed25519PublicKey],
                       report: TrailReport) -> None:
    points_t = PrivacyCheckpoint.__table__  # type: ignore[attr-defined]
    by_seq = {e["seq"]: e for e in entries}
    prev_hash, prev_seq = chain.GENESIS, 0
    for p in _rows(conn, points_t, points_t.c.seq):
        report.checkpoints += 1
        where = f"checkpoint {p['seq']} (head seq {p['head_seq']})"
        message = chain.checkpoint_message(p["seq"], p["head_seq"], p["head_hash"], p["created_at"], p["prev"])
        if p["prev"] != prev_hash:
            report.breaks.append(Break("checkpoint", where, f"it does not follow checkpoint {prev_seq} (one was "
                                                            "removed, inserted or reordered)"))
        public = keys.get(p["key_id"])
        if public is None:
            report.breaks.append(Break("checkpoint", where, f"signed by key {p['key_id']}, not "
                                                            f"{' or '.join(sorted(keys))}"))
        elif chain.sha256(message) != p["hash"] or not chain.signature_valid(public, p["signature"], message):
            report.breaks.append(Break("checkpoint", where, "the signature does not verify (forged or altered)"))
        head = by_seq.get(p["head_seq"])
        if head is None:
            report.breaks.append(Break("removed", where, f"the signed head, seq {p['head_seq']}, is not in the "
                                                         "chain"))
        elif head["hash"] != p["head_hash"]:
            report.breaks.append(Break("altered", where, "the chain up to the signed head was rewritten"))
        report.checkpoint_hashes.append(p["hash"])
        prev_hash, prev_seq = p["hash"], p["seq"]


def verify_trail(engine: Engine, public: Ed25519PublicKey | Mapping[str, Ed25519PublicKey], *,
                 since: float | None = None) -> TrailReport:
    """``public``: the key, or every trusted key by id (each generation of a rotated key)."""
    keys = dict(public) if isinstance(public, Mapping) else {chain.key_id(public): public}
    report = TrailReport()
    chain_t = PrivacyChain.__table__  # type: ignore[attr-defined]
    with engine.connect() as conn:
        entries = _rows(conn, chain_t, chain_t.c.seq)
        report.entries = len(entries)
        _walk_links(entries, report)
        _check_records(conn, entries, since, report)
        _check_checkpoints(conn, entries, keys, report)
        _check_receipts(conn, keys, since, report)
    return report
