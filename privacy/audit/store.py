"""The audit: per cloud call, what was found, where, and what was done — with a keyed hash, never the value.

SQLModel tables in the database at ``database_url`` (a SQLite file, ``sqlite://`` in memory, or PostgreSQL).
Writes go through ``privacy.audit.writer.AuditWriter`` (a background thread that never drops a record); the engine
comes from the one factory for every table on ``database_url`` (``accounting.database.make_engine``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from accounting.migrations import migrate
from privacy.audit.migrations import AUDIT_MIGRATIONS, VERSION_TABLE
from privacy.audit.tables import PrivacyCall, PrivacyEgress, PrivacyFinding, PrivacyUnit
from privacy.detect import Unit
from privacy.seal import SealBroken, Sealer

log = logging.getLogger("ecgw.privacy")


_CALL_COLUMNS = tuple(PrivacyCall.model_fields)
_FINDING_COLUMNS = tuple(name for name in PrivacyFinding.model_fields if name != "id")  # the database numbers them


def normalise_for_hash(value: str) -> str:
    return " ".join(value.split()).casefold()


class Hasher:
    """HMAC-SHA256 of the normalised value, with a key kept outside the database (``secrets`` or
    ``privacy.hash_key``): with the key beside the hashes, short values (phones, PINs) could be brute-forced."""

    def __init__(self, key: bytes, *, memo_entries: int = 50_000) -> None:
        self._key = key
        self._memo: dict[str, str] = {}  # an agent re-sends its system prompt every step: the same values again
        self._memo_entries = memo_entries

    def __call__(self, value: str) -> str:
        digest = self._memo.get(value)
        if digest is None:
            digest = hmac.new(self._key, normalise_for_hash(value).encode(), hashlib.sha256).hexdigest()[:32]
            if len(self._memo) >= self._memo_entries:
                self._memo.clear()
            self._memo[value] = digest
        return digest


def finding_row(**fields: Any) -> dict[str, Any]:
    """One ``privacy_finding`` row as a plain dict: a call carries hundreds (its system prompt's findings among
    them), and building an ORM object for each cost ~80 µs on the writer thread, twice."""
    return {name: fields.get(name) for name in _FINDING_COLUMNS}


def call_row(**fields: Any) -> dict[str, Any]:
    return {name: fields.get(name, 0 if name == "findings" else None) for name in _CALL_COLUMNS}


class AuditStore:
    """Connects on first use (the writer thread), never at construction: a database that is down delays the
    audit, not the gateway's start (the metering store reports it)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._ready = False

    def ensure(self) -> None:
        if not self._ready:
            migrate(self.engine, AUDIT_MIGRATIONS, version_table=VERSION_TABLE)
            self._ready = True

    def reachable(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            return True
        except Exception:
            return False

    def apply(self, record: dict[str, Any]) -> None:
        """Write one audit record (as built by the protector, or read back from a spill file)."""
        kind = record["kind"]
        if kind == "call":
            self.write_call(call_row(**record["call"]), [finding_row(**f) for f in record["findings"]])
        elif kind == "usage":
            self.write_usage(record["call_id"], record["usage"])
        elif kind == "units":
            self.write_units(record["session_id"], [PrivacyUnit(**u) for u in record["units"]])
        elif kind == "tool_restore":  # a credential restored into (or withheld from) a tool call's arguments
            self.write_findings([finding_row(**f) for f in record["findings"]])
        elif kind == "egress":
            self.write_egress(record["rows"])
        else:
            raise ValueError(f"unknown audit record kind {kind!r}")

    def write_call(self, call: dict[str, Any], findings: list[dict[str, Any]]) -> None:
        """One transaction, the findings in one multi-row insert (rows as ``call_row``/``finding_row`` make them)."""
        self.ensure()
        calls, rows = PrivacyCall.__table__, PrivacyFinding.__table__  # type: ignore[attr-defined]
        with self.engine.begin() as conn:
            if conn.execute(select(calls.c.id).where(calls.c.id == call["id"])).first() is not None:
                return  # a retried record the database took before
            conn.execute(calls.insert(), [call])
            if findings:
                conn.execute(rows.insert(), findings)

    def write_findings(self, findings: list[dict[str, Any]]) -> None:
        """Findings of a call written before them (what restore did with its answer)."""
        self.ensure()
        with self.engine.begin() as conn:
            conn.execute(PrivacyFinding.__table__.insert(), findings)  # type: ignore[attr-defined]

    def write_usage(self, call_id: str, usage: dict[str, Any]) -> None:
        self.ensure()
        with Session(self.engine) as db:
            row = db.get(PrivacyCall, call_id)
            if row is None:
                return
            row.prompt_tokens = usage.get("prompt_tokens")
            row.completion_tokens = usage.get("completion_tokens")
            details = usage.get("prompt_tokens_details") or {}
            row.cached_tokens = details.get("cached_tokens") if isinstance(details, dict) else None
            db.add(row)
            db.commit()

    def write_egress(self, rows: list[dict[str, Any]]) -> None:
        """Egress verdicts (``privacy.audit.exposure``), written through the same durable path as every record."""
        self.ensure()
        with Session(self.engine) as db:
            if rows and db.exec(select(PrivacyEgress.id).where(PrivacyEgress.call_id == rows[0]["call_id"])).first():
                return  # a retried record the database took before
            db.add_all([PrivacyEgress(**row) for row in rows])
            db.commit()

    def write_units(self, session_id: str, units: list[PrivacyUnit]) -> None:
        self.ensure()
        with Session(self.engine) as db:
            for old in db.exec(select(PrivacyUnit).where(PrivacyUnit.session_id == session_id)):
                db.delete(old)
            db.add_all(units)
            db.commit()


def units_record(session_id: str, units: list[Unit], hasher: Hasher) -> dict[str, Any]:
    """The audit record of a session's registered units: ids, fields, weights and keyed hashes, never values."""
    rows = [PrivacyUnit(session_id=session_id, unit_id=u.unit_id, entity_id=u.entity_id, field=u.field,
                        dimension=u.dimension, weight=u.weight, value_hash=hasher(u.value)) for u in units]
    return {"kind": "units", "session_id": session_id, "units": [r.model_dump() for r in rows]}


def body_json(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False)


def seal_body(sealer: Sealer | None, call_id: str, body: dict[str, Any]) -> str:
    """The stored form of a call's body: encrypted when the gateway has a key. The body is what left, scrubbed —
    but whatever detection missed (a session without its units, an ``audit`` action) would otherwise rest raw."""
    text = body_json(body)
    return text if sealer is None else sealer.seal(text.encode("utf-8", "surrogatepass"), call_id.encode())


def body_opener(sealer: Sealer | None) -> Callable[[PrivacyCall], str]:
    """Reads a stored body back (sealed or, from older versions, plain)."""

    def open_body(call: PrivacyCall) -> str:
        if not Sealer.is_sealed(call.body):
            return call.body
        if sealer is None:
            raise SealBroken("the audit's bodies are encrypted; give the gateway's secrets key (--config)")
        return sealer.open(call.body, call.id.encode(), what=f"the body of cloud call {call.id}").decode()

    return open_body
