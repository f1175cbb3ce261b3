"""The audit: per cloud call, what was found, where, and what was done — with a keyed hash, never the value.

SQLModel tables in the database at ``database_url`` (a SQLite file, ``sqlite://`` in memory, or PostgreSQL).
Writes go through ``privacy.audit.writer.AuditWriter`` (a background thread that never drops a record); the engine
comes from the one factory for every table on ``database_url`` (``accounting.database.make_engine``).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import itertools
import logging
import operator
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
from privacy.audit.sets import SET_COLUMNS, rows_of
from privacy.audit.tables import (
    PrivacyCall,
    PrivacyCallSet,
    PrivacyEgress,
    PrivacyErasure,
    PrivacyFinding,
    PrivacyFindingSet,
    PrivacyInbound,
    PrivacyReceipt,
    PrivacyUnit,
    insert_rows,
    marker,
)
from privacy.detect import Unit
from privacy.seal import SealBroken, Sealer

log = logging.getLogger("ecgw.privacy")


_CALL_COLUMNS = tuple(PrivacyCall.model_fields)
_FINDING_COLUMNS = tuple(name for name in PrivacyFinding.model_fields if name != "id")  # the database numbers them
_FINDING_KEYS = frozenset(_FINDING_COLUMNS)
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
    them), and building an ORM object for each cost ~80 µs on the writer thread, twice. Given every column (as the
    protector gives them), the keywords' own fresh dict is the row."""
    if fields.keys() == _FINDING_KEYS:
        return fields
    return {name: fields.get(name) for name in _FINDING_COLUMNS}


def _finding(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` when it is a ``finding_row`` already (as the protector builds them: a call's hundreds are not copied
    again on the writer thread), else the columns of one."""
    return row if row.keys() == _FINDING_KEYS else finding_row(**row)


def _insert_findings(conn: Connection, findings: list[dict[str, Any]],
                     params: list[tuple[Any, ...]] | None = None) -> None:
    """``finding_row`` rows in one executemany of the driver: a call carries hundreds, and SQLAlchemy's insert built
    each row's parameters in Python again (~2 µs a row, on the writer thread that shares the GIL with the request
    path). ``params``: the rows' values in ``_FINDING_COLUMNS`` order, when made already. Another paramstyle than a
    positional one takes SQLAlchemy's insert."""
    if marker(conn) is None:
        conn.execute(PrivacyFinding.__table__.insert(), findings)  # type: ignore[attr-defined]
        return
    if params is None:
        params = [tuple(map(row.get, _FINDING_COLUMNS)) for row in findings]
    _insert_params(conn, "privacy_finding", _FINDING_COLUMNS, params)


def _insert_params(conn: Connection, table: str, columns: tuple[str, ...], params: list[tuple[Any, ...]]) -> None:
    """Rows given as their values in ``columns`` order, as the driver's own statements (a positional paramstyle):
    on SQLite many rows a statement, which binds and steps once (the rows take their ids in order); elsewhere one
    executemany."""
    mark = marker(conn)
    assert mark is not None
    if conn.dialect.name == "sqlite":
        for start in range(0, len(params), _ROWS_A_STATEMENT):
            chunk = params[start:start + _ROWS_A_STATEMENT]
            conn.exec_driver_sql(_rows_insert(table, columns, mark, len(chunk)),
                                 tuple(itertools.chain.from_iterable(chunk)))
        return
    if params:
        conn.exec_driver_sql(_rows_insert(table, columns, mark, 1), params)


_ROWS_A_STATEMENT = 64  # SQLite: one statement for many rows binds and steps once (~20 % of an insert's CPU)


@functools.lru_cache(maxsize=4 * _ROWS_A_STATEMENT)
def _rows_insert(table: str, columns: tuple[str, ...], marker: str, rows: int) -> str:
    row = f"({', '.join([marker] * len(columns))})"
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([row] * rows)}"


_REST = _FINDING_COLUMNS[1:]  # a finding's columns but its call's id (the first)
_BEFORE = tuple(sorted(c for c in _REST if c < "call_id"))  # the columns canonical JSON writes before the call's id
_AFTER = tuple(sorted(c for c in _REST if c > "call_id"))
assert _FINDING_COLUMNS[0] == "call_id" and not set(_REST) & {"call_id", "id"}
_UNSET = object()
_rest_of = operator.itemgetter(*_REST)  # a finding_row has every column


class FindingsCodec:
    """A call's ``finding_row`` rows as the store writes them: ``chain.rows_digest`` of them, byte for byte, and the
    driver's parameters. All of a row but its call's id repeats at every call of a session (the findings of its
    repeated prefix, hundreds a call), so each row's canonical JSON around the call's id is made once and
    remembered by the row's other values — only when every one is a string or None, so that equal values write
    equal JSON (``1 == True``, but no string equals anything else). Keyed hashes and keyless locations only, never a
    value; one per store, on the writer thread."""

    def __init__(self, entries: int = 100_000) -> None:
        self._known: dict[tuple[Any, ...], tuple[str, str]] = {}
        self._entries = entries

    def encode(self, rows: list[dict[str, Any]]) -> tuple[str, list[tuple[Any, ...]]]:
        parts: list[str] = []
        params: list[tuple[Any, ...]] = []
        call_id: Any = _UNSET
        written = ""
        known = self._known
        for row in rows:
            rest = _rest_of(row)
            around = known.get(rest)
            if around is None:
                around = self._around(row)
                if all(v is None or type(v) is str for v in rest):
                    if len(known) >= self._entries:
                        known.clear()
                    known[rest] = around
            if row["call_id"] is not call_id:
                call_id = row["call_id"]
                written = chain.canonical(call_id).decode("utf-8", "surrogatepass")
            parts.append(around[0] + written + around[1])
            params.append((call_id, *rest))
        return chain.sha256(f"[{','.join(parts)}]".encode("utf-8", "surrogatepass")), params

    @staticmethod
    def _around(row: dict[str, Any]) -> tuple[str, str]:
        """The row's canonical JSON before and after its call id's value: ``{"action":…,"call_id":`` and
        ``,"dimension":…}``."""
        before = chain.canonical({c: row[c] for c in _BEFORE}).decode("utf-8", "surrogatepass")
        after = chain.canonical({c: row[c] for c in _AFTER}).decode("utf-8", "surrogatepass")
        return (before[:-1] + ("," if _BEFORE else "") + '"call_id":',
                ("," if _AFTER else "") + after[1:])


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
        self._findings = FindingsCodec()

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
        self.apply_many([record])

    def apply_many(self, records: list[dict[str, Any]]) -> None:
        """Write audit records in order, in one transaction holding the chain's lock: all of them or none (the
        writer thread hands over what queued up meanwhile; a retried batch skips what the database took before)."""
        with self._chained() as conn:
            batch = _Batch(conn, _taken(conn, records))
            batch.sets = _sets_held(conn, records)
            for record in records:
                self._apply(batch, record)
            batch.flush()
        if batch.checkpointed and self.anchor is not None and self.signer is not None:  # committed:
            self.anchor.signer = self.signer  # what the next receipts are signed with
            if batch.checkpoint is not None:
                self.anchor.checkpoint = batch.checkpoint  # and the checkpoint they name

    def _apply(self, batch: _Batch, record: dict[str, Any]) -> None:
        kind = record["kind"]
        if kind == "call":
            self._write_call(batch, call_row(**record["call"]), [_finding(f) for f in record["findings"]],
                             record.get("sets") or [])
        elif kind == "usage":
            self._write_usage(batch, record["call_id"], record["usage"])
        elif kind == "units":
            self._write_units(batch, record["session_id"], [PrivacyUnit(**u) for u in record["units"]])
        elif kind == "tool_restore":  # a credential restored into (or withheld from) a tool call's arguments
            self._write_findings(batch, [_finding(f) for f in record["findings"]])
        elif kind == "egress":
            self._write_rows(batch, "egress", record["rows"])
        elif kind == "receipt":
            self._write_receipt(batch, record["row"])
        elif kind == "inbound":  # what a cloud answer carried that its request did not (privacy.response_guard)
            self._write_rows(batch, "inbound", record["rows"])
        elif kind == "checkpoint":
            self._write_checkpoint(batch)
        elif kind == "retention":
            self._erase(batch, reason="retention", before=float(record["before"]))
        else:
            raise ValueError(f"unknown audit record kind {kind!r}")

    def _write_call(self, batch: _Batch, call: dict[str, Any], findings: list[dict[str, Any]],
                    sets: list[list[Any]]) -> None:
        """The call's row, its own findings in one multi-row insert (rows as ``call_row``/``finding_row`` make
        them), the finding sets it sent (``[set id, the set]``, ``privacy.audit.sets``: the rows written only where
        the database holds no set of that id yet) and its references to them."""
        if not batch.take(("call", str(call["id"]))):
            return  # a retried record the database took before
        own, params = self._findings.encode(findings)
        set_ids = [str(set_id) for set_id, _ in sets]
        call = {**call, "body_digest": chain.content_digest(call["body"]),
                "findings_digest": chain.findings_digest(own, set_ids), "erased_by": None}
        insert_rows(batch.conn, PrivacyCall, [call])
        if findings:
            _insert_findings(batch.conn, findings, params)
        if sets:
            self._write_sets(batch, sets)
            _insert_params(batch.conn, "privacy_call_set", _REF_COLUMNS,
                           [(call["id"], position, set_id) for position, set_id in enumerate(set_ids)])
        batch.links.append("call", call["id"], chain.erasable_call_digest(call), call["created_at"])

    def _write_sets(self, batch: _Batch, sets: list[list[Any]]) -> None:
        """The rows of the sets the database does not hold yet (those it held when the batch began are in
        ``batch.sets``, and so is every set written since)."""
        fresh: list[tuple[Any, ...]] = []
        for set_id, carried in sets:
            if set_id in batch.sets:
                continue
            batch.sets.add(set_id)
            fresh += [(set_id, *map(row.get, SET_COLUMNS)) for row in rows_of(carried)]
        if fresh:
            if marker(batch.conn) is None:
                batch.conn.execute(PrivacyFindingSet.__table__.insert(),  # type: ignore[attr-defined]
                                   [dict(zip(_SET_ROW_COLUMNS, row, strict=True)) for row in fresh])
            else:
                _insert_params(batch.conn, "privacy_finding_set", _SET_ROW_COLUMNS, fresh)

    def _write_findings(self, batch: _Batch, findings: list[dict[str, Any]]) -> None:
        """Findings of a call written before them (what restore did with its answer): the call is chained again
        with them (its latest entry is what it is checked against)."""
        _insert_findings(batch.conn, findings)
        for call_id in dict.fromkeys(str(f["call_id"]) for f in findings):
            self._rechain_call(batch, call_id)

    def _rechain_call(self, batch: _Batch, call_id: str) -> None:
        """Chain a call's row as it is now (its findings' digest brought up to date)."""
        conn = batch.conn
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
                call["findings_digest"] = chain.findings_digest(chain.rows_digest(stored),
                                                                _set_ids(conn, call_id))
                conn.execute(calls.update().where(calls.c.id == call_id).values(
                    findings_digest=call["findings_digest"]))
            digest = chain.erasable_call_digest(call)
        batch.links.append("call", call_id, digest, self._clock())

    def erase(self, *, reason: str, session_id: str | None = None, before: float | None = None) -> int:
        """Tombstone the content of a session's calls (``reason`` "session") or of every call made before
        ``before`` (``reason`` "retention"): the sealed body becomes ``ERASED_BODY``, the findings go, the digests
        the chain covers stay, and the erasure is chained as a record naming the calls it erased. A session's units
        go too (chained as an empty set). How many calls it erased."""
        with self._chained() as conn:
            batch = _Batch(conn, set())
            erased = self._erase(batch, reason=reason, session_id=session_id, before=before)
            batch.flush()
        return erased

    def _erase(self, batch: _Batch, *, reason: str, session_id: str | None = None,
               before: float | None = None) -> int:
        conn, links = batch.conn, batch.links
        calls, rows = PrivacyCall.__table__, PrivacyFinding.__table__  # type: ignore[attr-defined]
        erasures, units = PrivacyErasure.__table__, PrivacyUnit.__table__  # type: ignore[attr-defined]
        refs = PrivacyCallSet.__table__  # type: ignore[attr-defined]
        query = select(calls).where(calls.c.erased_by.is_(None))
        if session_id is not None:
            query = query.where(calls.c.session_id == session_id)
        if before is not None:
            query = query.where(calls.c.created_at < before)
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
                links.append("call", call["id"], chain.erasable_call_digest(call), self._clock())
        ids = sorted(str(c["id"]) for c in found)
        erasure: dict[str, Any] = {"id": uuid.uuid4().hex, "reason": reason, "session_id": session_id,
                                   "created_at": self._clock(), "calls": len(ids), "calls_digest": chain.ids_digest(ids)}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            conn.execute(calls.update().where(calls.c.id.in_(chunk)).values(body=chain.ERASED_BODY,
                                                                           erased_by=erasure["id"]))
            conn.execute(rows.delete().where(rows.c.call_id.in_(chunk)))
            conn.execute(refs.delete().where(refs.c.call_id.in_(chunk)))
        _drop_unreferenced_sets(conn, session_id)
        conn.execute(erasures.insert(), [erasure])
        links.append("erasure", erasure["id"], chain.rows_digest([erasure]), erasure["created_at"])
        if session_id is not None:
            conn.execute(units.delete().where(units.c.session_id == session_id))
            links.append("units", session_id, chain.rows_digest([]), self._clock())
        return len(ids)

    def _write_usage(self, batch: _Batch, call_id: str, usage: dict[str, Any]) -> None:
        if ("call", call_id) not in batch.taken:
            return  # no such call
        calls = PrivacyCall.__table__  # type: ignore[attr-defined]
        details = usage.get("prompt_tokens_details") or {}
        values = {"prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
                  "cached_tokens": details.get("cached_tokens") if isinstance(details, dict) else None}
        batch.conn.execute(calls.update().where(calls.c.id == call_id).values(**values))
        batch.links.append("usage", call_id, chain.usage_digest(*values.values()), self._clock())

    def _write_rows(self, batch: _Batch, kind: str, rows: list[dict[str, Any]]) -> None:
        """A call's egress verdicts (``privacy.audit.exposure``) or a cloud answer's inbound findings (one record
        per call, ``privacy.inbound``), chained as one entry."""
        if not rows or not batch.take((kind, str(rows[0]["call_id"]))):
            return  # nothing, or a retried record the database took before
        table, columns = _ROWS[kind]
        stored = [{name: row.get(name) for name in columns} for row in rows]
        insert_rows(batch.conn, table, stored)
        batch.links.append(kind, rows[0]["call_id"], chain.rows_digest(stored), float(rows[0]["created_at"]))

    def _write_receipt(self, batch: _Batch, row: dict[str, Any]) -> None:
        """A signed egress receipt (``privacy.audit.receipts``), chained like every record; its row goes in with the
        batch's other receipts."""
        if not batch.take(("receipt", str(row["id"]))):
            return  # a retried record the database took before
        stored = {name: row.get(name) for name in _RECEIPT_COLUMNS}
        batch.receipts.append(stored)
        batch.links.append("receipt", str(row["id"]), chain.rows_digest([stored]), float(row["created_at"]))

    def _write_units(self, batch: _Batch, session_id: str, units: list[PrivacyUnit]) -> None:
        table = PrivacyUnit.__table__  # type: ignore[attr-defined]
        rows = sorted((u.model_dump() for u in units), key=lambda r: str(r["unit_id"]))
        batch.conn.execute(table.delete().where(table.c.session_id == session_id))
        if rows:
            batch.conn.execute(table.insert(), rows)
        batch.links.append("units", session_id, chain.rows_digest(rows), self._clock())

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
        self.apply({"kind": "checkpoint"})

    def _write_checkpoint(self, batch: _Batch) -> None:
        if self.signer is None:
            return
        if self.keys is not None:  # a rotation recorded since: sign with the new generation from now on
            self.signer = self.keys.signer(chain.current_generation(batch.conn))
        batch.flush()  # the head it signs includes this batch's records before it
        batch.checkpointed = True
        latest = chain.write_checkpoint(batch.conn, self.signer, self._clock())
        if latest is not None:
            batch.checkpoint = latest


_ROWS = {"egress": (PrivacyEgress, _EGRESS_COLUMNS), "inbound": (PrivacyInbound, _INBOUND_COLUMNS)}
_TAKEN = {"call": (PrivacyCall, "id"), "egress": (PrivacyEgress, "call_id"), "inbound": (PrivacyInbound, "call_id"),
          "receipt": (PrivacyReceipt, "id")}  # what says a record is written: its key in its table


class _Batch:
    """Records written in one locked transaction. The chain's entries go in together (``chain.Links``), so do the
    receipts' rows (``flush``); ``taken`` holds the keys of the records the database has (a retry) or this batch
    wrote, looked up once for the batch; ``checkpoint``: the latest checkpoint's hash once one was signed in it."""

    def __init__(self, conn: Connection, taken: set[tuple[str, str]]) -> None:
        self.conn = conn
        self.links = chain.Links(conn)
        self.taken = taken
        self.receipts: list[dict[str, Any]] = []
        self.checkpointed = False
        self.checkpoint: str | None = None
        self.sets: set[str] = set()  # the finding sets the database holds (those the batch's calls send, at least)

    def take(self, key: tuple[str, str]) -> bool:
        """False when the record of ``key`` is written already."""
        if key in self.taken:
            return False
        self.taken.add(key)
        return True

    def flush(self) -> None:
        if self.receipts:
            insert_rows(self.conn, PrivacyReceipt, self.receipts)
            self.receipts = []
        self.links.flush()


def _key(record: dict[str, Any]) -> tuple[str, str] | None:
    """What says ``record`` is written already (a usage record: that its call is), if anything."""
    kind = record["kind"]
    if kind == "call":
        return "call", str(record["call"]["id"])
    if kind == "usage":
        return "call", str(record["call_id"])
    if kind in ("egress", "inbound"):
        return (kind, str(record["rows"][0]["call_id"])) if record["rows"] else None
    if kind == "receipt":
        return "receipt", str(record["row"]["id"])
    return None


def _taken(conn: Connection, records: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """The keys (``_key``) of ``records`` the database has, one query a table."""
    wanted: dict[str, set[str]] = {}
    for record in records:
        key = _key(record)
        if key is not None:
            wanted.setdefault(key[0], set()).add(key[1])
    taken: set[tuple[str, str]] = set()
    for kind, keys in wanted.items():
        table, name = _TAKEN[kind]
        column = table.__table__.c[name]  # type: ignore[attr-defined]
        ordered = sorted(keys)
        mark = marker(conn)
        for start in range(0, len(ordered), 500):
            chunk = ordered[start:start + 500]
            if mark is None:
                found = conn.execute(select(column).where(column.in_(chunk)).distinct())
            else:  # the driver's own statement: SQLAlchemy built and compiled the select again per batch
                found = conn.exec_driver_sql(f"SELECT DISTINCT {name} FROM {column.table.name} "
                                             f"WHERE {name} IN ({', '.join([mark] * len(chunk))})", tuple(chunk))
            taken.update((kind, str(value)) for (value,) in found)
    return taken


_REF_COLUMNS = ("call_id", "position", "set_id")
_SET_ROW_COLUMNS = ("set_id", *SET_COLUMNS)


def _set_ids(conn: Connection, call_id: str) -> list[str]:
    """The finding sets a call references, in order."""
    refs = PrivacyCallSet.__table__  # type: ignore[attr-defined]
    return [str(set_id) for (set_id,) in conn.execute(
        select(refs.c.set_id).where(refs.c.call_id == call_id).order_by(refs.c.position))]


def _sets_held(conn: Connection, records: list[dict[str, Any]]) -> set[str]:
    """Of the finding sets ``records``' calls send, those the database holds (one query per 500)."""
    wanted = sorted({str(set_id) for record in records if record["kind"] == "call"
                     for set_id, _ in record.get("sets") or ()})
    column = PrivacyFindingSet.__table__.c.set_id  # type: ignore[attr-defined]
    mark = marker(conn)
    held: set[str] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        if mark is None:
            found = conn.execute(select(column).where(column.in_(chunk)).distinct())
        else:  # the driver's own statement: SQLAlchemy built and compiled the select again per batch
            found = conn.exec_driver_sql(f"SELECT DISTINCT set_id FROM privacy_finding_set "
                                         f"WHERE set_id IN ({', '.join([mark] * len(chunk))})", tuple(chunk))
        held.update(str(v) for (v,) in found)
    return held


def _drop_unreferenced_sets(conn: Connection, session_id: str | None) -> None:
    """The finding sets no call references any more (its calls erased): of one session, or of every session."""
    sets, refs = PrivacyFindingSet.__table__, PrivacyCallSet.__table__  # type: ignore[attr-defined]
    query = sets.delete().where(sets.c.set_id.not_in(select(refs.c.set_id)))
    if session_id is not None:
        query = query.where(sets.c.session_id == session_id)
    conn.execute(query)


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
