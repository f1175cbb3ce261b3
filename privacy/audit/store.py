"""The audit: per cloud call, what was found, where, and what was done — with a keyed hash, never the value.

SQLModel tables in the database at ``database_url`` (a SQLite file, ``sqlite://`` in memory, or PostgreSQL).
Writes go through ``privacy.audit.writer.AuditWriter`` (a background thread that never drops a record); the engine
comes from the one factory for every table on ``database_url`` (``accounting.database.make_engine``).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.engine import Engine
from sqlmodel import select

from accounting.migrations import migrate
from privacy.audit import chain
from privacy.audit.chain import Anchor, ChainSigner, SigningKeys
from privacy.audit.migrations import AUDIT_MIGRATIONS, VERSION_TABLE
from privacy.audit.tables import (
    PrivacyCall,
    PrivacyEgress,
    PrivacyErasure,
    PrivacyFinding,
    PrivacyInbound,
    PrivacyReceipt,
    PrivacyUnit,
)
from privacy.detect import Unit
from privacy.seal import SealBroken, Sealer

log = logging.getLogger("ecgw.privacy")


_CALL_COLUMNS = tuple(PrivacyCall.model_fields)
_FINDING_COLUMNS = tuple(name for name in PrivacyFinding.model_fields if name != "id")  # the database numbers them
_EGRESS_COLUMNS = tuple(name for name in PrivacyEgress.model_fields if name != "id")
_RECEIPT_COLUMNS = tuple(PrivacyReceipt.model_fields)
_INBOUND_COLUMNS = tuple(name for name in PrivacyInbound.model_fields if name != "id")


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


def ensure_schema(engine: Engine) -> None:
    """The audit's tables (the chain's among them) on ``engine``: for writers of chained records beside the audit's
    own (the admin actions)."""
    migrate(engine, AUDIT_MIGRATIONS, version_table=VERSION_TABLE)


@contextmanager
def chained(engine: Engine) -> Iterator[Connection]:
    """One transaction on ``engine`` holding the chain's write lock: a record written in it is chained with
    ``chain_row`` before it commits."""
    with engine.connect().execution_options(sqlite_begin="BEGIN IMMEDIATE") as conn, conn.begin():
        chain.lock(conn)
        yield conn


def chain_row(conn: Connection, kind: str, ref: str, row: dict[str, Any], created_at: float) -> None:
    """Chain one row of another table as a record of ``kind`` (``privacy.audit.verify`` knows where to find it)."""
    chain.append(conn, kind, ref, chain.rows_digest([row]), created_at)


class AuditStore:
    """Connects on first use (the writer thread), never at construction: a database that is down delays the
    audit, not the gateway's start (the metering store reports it). Every write adds its entry to the chain
    (``privacy.audit.chain``) in the same transaction; ``signer`` signs the checkpoints (None: none are written),
    and ``anchor`` (the receipts' view of the key and of the latest checkpoint) follows what it signs."""

    def __init__(self, engine: Engine, *, signer: ChainSigner | None = None, keys: SigningKeys | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        """``keys``: the signing key's generations; the store then signs with the latest one recorded (``signer``
        alone: that key, always)."""
        self.engine = engine
        self.keys = keys
        self.signer = signer or (keys.signer(1) if keys is not None else None)
        self.anchor = Anchor(self.signer) if self.signer is not None else None
        self._clock = clock
        self._ready = False

    def ensure(self) -> None:
        if not self._ready:
            ensure_schema(self.engine)
            self._ready = True

    def reachable(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            return True
        except Exception:
            return False

    @contextmanager
    def _chained(self) -> Iterator[Connection]:
        """One transaction holding the chain's write lock."""
        self.ensure()
        with chained(self.engine) as conn:
            yield conn

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
        elif kind == "receipt":
            self.write_receipt(record["row"])
        elif kind == "inbound":  # what a cloud answer carried that its request did not (privacy.response_guard)
            self.write_inbound(record["rows"])
        elif kind == "checkpoint":
            self.write_checkpoint()
        elif kind == "retention":
            self.erase(reason="retention", before=float(record["before"]))
        else:
            raise ValueError(f"unknown audit record kind {kind!r}")

    def write_call(self, call: dict[str, Any], findings: list[dict[str, Any]]) -> None:
        """One transaction, the findings in one multi-row insert (rows as ``call_row``/``finding_row`` make them)."""
        calls, rows = PrivacyCall.__table__, PrivacyFinding.__table__  # type: ignore[attr-defined]
        with self._chained() as conn:
            if conn.execute(select(calls.c.id).where(calls.c.id == call["id"])).first() is not None:
                return  # a retried record the database took before
            call = {**call, "body_digest": chain.content_digest(call["body"]),
                    "findings_digest": chain.rows_digest(findings), "erased_by": None}
            conn.execute(calls.insert(), [call])
            if findings:
                conn.execute(rows.insert(), findings)
            chain.append(conn, "call", call["id"], chain.erasable_call_digest(call), call["created_at"])

    def write_findings(self, findings: list[dict[str, Any]]) -> None:
        """Findings of a call written before them (what restore did with its answer): the call is chained again
        with them (its latest entry is what it is checked against)."""
        with self._chained() as conn:
            conn.execute(PrivacyFinding.__table__.insert(), findings)  # type: ignore[attr-defined]
            for call_id in dict.fromkeys(str(f["call_id"]) for f in findings):
                self._rechain_call(conn, call_id)

    def _rechain_call(self, conn: Connection, call_id: str) -> None:
        """Chain a call's row as it is now (its findings' digest brought up to date)."""
        calls, rows = PrivacyCall.__table__, PrivacyFinding.__table__  # type: ignore[attr-defined]
        found = conn.execute(select(calls).where(calls.c.id == call_id)).first()
        if found is None:
            return
        call = dict(found._mapping)
        stored = [dict(r._mapping) for r in conn.execute(
            select(rows).where(rows.c.call_id == call_id).order_by(rows.c.id))]
        if call["body_digest"] is None and call["erased_by"] is None:  # a call from before schema step 6
            digest = chain.call_digest(call, stored)
        else:
            if call["erased_by"] is None:
                call["findings_digest"] = chain.rows_digest(stored)
                conn.execute(calls.update().where(calls.c.id == call_id).values(
                    findings_digest=call["findings_digest"]))
            digest = chain.erasable_call_digest(call)
        chain.append(conn, "call", call_id, digest, self._clock())

    def erase(self, *, reason: str, session_id: str | None = None, before: float | None = None) -> int:
        """Tombstone the content of a session's calls (``reason`` "session") or of every call made before
        ``before`` (``reason`` "retention"): the sealed body becomes ``ERASED_BODY``, the findings go, the digests
        the chain covers stay, and the erasure is chained as a record naming the calls it erased. A session's units
        go too (chained as an empty set). How many calls it erased."""
        calls, rows = PrivacyCall.__table__, PrivacyFinding.__table__  # type: ignore[attr-defined]
        erasures, units = PrivacyErasure.__table__, PrivacyUnit.__table__  # type: ignore[attr-defined]
        query = select(calls).where(calls.c.erased_by.is_(None))
        if session_id is not None:
            query = query.where(calls.c.session_id == session_id)
        if before is not None:
            query = query.where(calls.c.created_at < before)
        with self._chained() as conn:
            found = [dict(r._mapping) for r in conn.execute(query)]
            if not found and session_id is None:
                return 0  # a retention sweep with nothing old enough: no record
            for call in found:
                if call["body_digest"] is None:  # from before step 6: chained now by its digests, then erased
                    stored = [dict(r._mapping) for r in conn.execute(
                        select(rows).where(rows.c.call_id == call["id"]).order_by(rows.c.id))]
                    call.update(body_digest=chain.content_digest(call["body"]),
                                findings_digest=chain.rows_digest(stored))
                    conn.execute(calls.update().where(calls.c.id == call["id"]).values(
                        body_digest=call["body_digest"], findings_digest=call["findings_digest"]))
                    chain.append(conn, "call", call["id"], chain.erasable_call_digest(call), self._clock())
            ids = sorted(str(c["id"]) for c in found)
            erasure: dict[str, Any] = {"id": uuid.uuid4().hex, "reason": reason, "session_id": session_id,
                       "created_at": self._clock(), "calls": len(ids), "calls_digest": chain.ids_digest(ids)}
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                conn.execute(calls.update().where(calls.c.id.in_(chunk)).values(body=chain.ERASED_BODY,
                                                                               erased_by=erasure["id"]))
                conn.execute(rows.delete().where(rows.c.call_id.in_(chunk)))
            conn.execute(erasures.insert(), [erasure])
            chain.append(conn, "erasure", erasure["id"], chain.rows_digest([erasure]), erasure["created_at"])
            if session_id is not None:
                conn.execute(units.delete().where(units.c.session_id == session_id))
                chain.append(conn, "units", session_id, chain.rows_digest([]), self._clock())
        return len(ids)

    def write_usage(self, call_id: str, usage: dict[str, Any]) -> None:
        calls = PrivacyCall.__table__  # type: ignore[attr-defined]
        details = usage.get("prompt_tokens_details") or {}
        values = {"prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
                  "cached_tokens": details.get("cached_tokens") if isinstance(details, dict) else None}
        with self._chained() as conn:
            if conn.execute(select(calls.c.id).where(calls.c.id == call_id)).first() is None:
                return
            conn.execute(calls.update().where(calls.c.id == call_id).values(**values))
            chain.append(conn, "usage", call_id, chain.usage_digest(*values.values()), self._clock())

    def write_egress(self, rows: list[dict[str, Any]]) -> None:
        """Egress verdicts (``privacy.audit.exposure``), written through the same durable path as every record."""
        if not rows:
            return
        table = PrivacyEgress.__table__  # type: ignore[attr-defined]
        call_id = rows[0]["call_id"]
        with self._chained() as conn:
            if conn.execute(select(table.c.id).where(table.c.call_id == call_id)).first() is not None:
                return  # a retried record the database took before
            stored = [{name: row.get(name) for name in _EGRESS_COLUMNS} for row in rows]
            conn.execute(table.insert(), stored)
            chain.append(conn, "egress", call_id, chain.rows_digest(stored), float(rows[0]["created_at"]))

    def write_receipt(self, row: dict[str, Any]) -> None:
        """A signed egress receipt (``privacy.audit.receipts``), chained like every record."""
        table = PrivacyReceipt.__table__  # type: ignore[attr-defined]
        stored = {name: row.get(name) for name in _RECEIPT_COLUMNS}
        with self._chained() as conn:
            if conn.execute(select(table.c.id).where(table.c.id == row["id"])).first() is not None:
                return  # a retried record the database took before
            conn.execute(table.insert(), [stored])
            chain.append(conn, "receipt", str(row["id"]), chain.rows_digest([stored]), float(row["created_at"]))

    def write_inbound(self, rows: list[dict[str, Any]]) -> None:
        """A cloud answer's inbound findings (one record per call, ``privacy.inbound``), chained like egress rows."""
        if not rows:
            return
        table = PrivacyInbound.__table__  # type: ignore[attr-defined]
        call_id = rows[0]["call_id"]
        with self._chained() as conn:
            if conn.execute(select(table.c.id).where(table.c.call_id == call_id)).first() is not None:
                return  # a retried record the database took before
            stored = [{name: row.get(name) for name in _INBOUND_COLUMNS} for row in rows]
            conn.execute(table.insert(), stored)
            chain.append(conn, "inbound", call_id, chain.rows_digest(stored), float(rows[0]["created_at"]))

    def write_units(self, session_id: str, units: list[PrivacyUnit]) -> None:
        table = PrivacyUnit.__table__  # type: ignore[attr-defined]
        rows = sorted((u.model_dump() for u in units), key=lambda r: str(r["unit_id"]))
        with self._chained() as conn:
            conn.execute(table.delete().where(table.c.session_id == session_id))
            if rows:
                conn.execute(table.insert(), rows)
            chain.append(conn, "units", session_id, chain.rows_digest(rows), self._clock())

    def rotate_key(self) -> ChainSigner:
        """Record the next generation of the signing key and sign the head with it (``ecgw audit rotate-key``)."""
        if self.keys is None:
            raise ValueError("this audit store has no key generations to rotate (no secrets key)")
        with self._chained() as conn:
            signer = chain.rotate(conn, self.keys, self._clock())
        self.write_checkpoint()
        return signer

    def write_checkpoint(self) -> None:
        """Sign the chain's head (nothing when it is signed already, or without a signer)."""
        if self.signer is None:
            return
        with self._chained() as conn:
            if self.keys is not None:  # a rotation recorded since: sign with the new generation from now on
                self.signer = self.keys.signer(chain.current_generation(conn))
            latest = chain.write_checkpoint(conn, self.signer, self._clock())
        if self.anchor is not None:
            self.anchor.signer = self.signer  # what the next receipts are signed with
            if latest is not None:
                self.anchor.checkpoint = latest  # and the checkpoint they name


def units_record(session_id: str, units: list[Unit], hasher: Hasher) -> dict[str, Any]:
    """The audit record of a session's registered units: ids, fields, weights and keyed hashes, never values."""
    rows = [PrivacyUnit(session_id=session_id, unit_id=u.unit_id, entity_id=u.entity_id, field=u.field,
                        dimension=u.dimension, weight=u.weight, value_hash=hasher(u.value)) for u in units]
    return {"kind": "units", "session_id": session_id, "units": [r.model_dump() for r in rows]}


def seal_body(sealer: Sealer | None, call_id: str, data: bytes) -> str:
    """The stored form of a call's body (its exact bytes, ``receipts.body_bytes``): encrypted when the gateway has a
    key. The body is what left, scrubbed — but whatever detection missed (a session without its units, an ``audit``
    action) would otherwise rest raw."""
    return data.decode("utf-8", "surrogatepass") if sealer is None else sealer.seal(data, call_id.encode())


def body_opener(sealer: Sealer | None) -> Callable[[PrivacyCall], str]:
    """Reads a stored body back (sealed or, from older versions, plain)."""

    def open_body(call: PrivacyCall) -> str:
        if not Sealer.is_sealed(call.body):
            return call.body
        if sealer is None:
            raise SealBroken("the audit's bodies are encrypted; give the gateway's secrets key (--config)")
        return sealer.open(call.body, call.id.encode(), what=f"the body of cloud call {call.id}").decode()

    return open_body
