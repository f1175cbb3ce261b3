"""The audit's tables, all in one place: per cloud call (``privacy_call``), what was found in it
(``privacy_finding``, and the sets of a session's repeated findings, ``privacy_finding_set``, each written once and
referenced by the calls that sent them, ``privacy_call_set``), the units known per session (``privacy_unit``) and the listed units that left raw
(``privacy_egress``), the signed egress receipts (``privacy_receipt``), erasures (``privacy_erasure``), the signing keys' generations (``privacy_signing_key``), what cloud
answers carried that their request never did (``privacy_inbound``), and the tamper-evident trail over them
(``privacy_chain``, ``privacy_checkpoint``). Their schema is created and changed only by ``privacy.audit.migrations``; a test holds the
two equal. ``insert_rows`` writes rows as the driver's own statement (the writer thread's hot path).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection
from sqlmodel import Field, SQLModel

_MARKERS = {"qmark": "?", "format": "%s", "pyformat": "%s"}  # a positional parameter, by the driver's paramstyle


def marker(conn: Connection) -> str | None:
    """The driver's positional parameter marker; None for a paramstyle without one (then SQLAlchemy's statements)."""
    return _MARKERS.get(conn.dialect.paramstyle)


def insert_rows(conn: Connection, model: Any, rows: list[dict[str, Any]]) -> None:
    """``rows`` (each naming the first one's columns, as SQLAlchemy's insert of a list wants) into ``model``'s table
    as the driver's own statement: SQLAlchemy built, cache-keyed and compiled an insert again for every write on
    the audit's writer thread (~60 µs each, a few a call). Plain values only (the audit's columns are text and
    numbers)."""
    if not rows:
        return
    table = model.__table__
    mark = marker(conn)
    if mark is None:
        conn.execute(table.insert(), rows)
        return
    columns = tuple(rows[0])
    sql = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})"
    values = [tuple(row[c] for c in columns) for row in rows]
    conn.exec_driver_sql(sql, values if len(values) > 1 else values[0])


class PrivacyCall(SQLModel, table=True):
    __tablename__ = "privacy_call"

    id: str = Field(primary_key=True)
    session_id: str = Field(index=True)
    request_id: str = Field(index=True)
    experiment: str | None = Field(default=None, index=True)
    created_at: float
    body: str  # the JSON body exactly as sent to the cloud (scrubbed), sealed at rest (``seal_body``)
    findings: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    body_digest: str | None = None  # SHA-256 of ``body`` as stored: what the chain covers (None: before step 6)
    findings_digest: str | None = None  # of its findings' rows, likewise
    erased_by: str | None = None  # the erasure (``privacy_erasure``) that tombstoned its body and findings


class PrivacyFinding(SQLModel, table=True):
    __tablename__ = "privacy_finding"

    id: int | None = Field(default=None, primary_key=True)
    call_id: str = Field(index=True)
    session_id: str = Field(index=True)
    type: str
    layer: str
    action: str
    location: str
    value_hash: str
    unit_id: str | None = None
    field: str | None = None
    dimension: str | None = None


class PrivacyFindingSet(SQLModel, table=True):
    """One finding of a finding set: the findings of one slot of a session's bodies (a system prompt, a tool result:
    its full location, its findings), written once for the session and referenced by every call that sent the slot
    (``privacy_call_set``) instead of written again at each. ``set_id`` is the digest of the set's rows
    (``chain.set_digest``): a set altered in place no longer matches it."""

    __tablename__ = "privacy_finding_set"

    id: int | None = Field(default=None, primary_key=True)
    set_id: str = Field(index=True)
    session_id: str = Field(index=True)
    type: str
    layer: str
    action: str
    location: str
    value_hash: str
    unit_id: str | None = None
    field: str | None = None
    dimension: str | None = None


class PrivacyCallSet(SQLModel, table=True):
    """A call's reference to a finding set it sent: its findings are the call's own rows (``privacy_finding``) and
    those of the sets it references, in ``position`` order."""

    __tablename__ = "privacy_call_set"

    call_id: str = Field(primary_key=True)
    position: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    set_id: str = Field(index=True)


class PrivacyUnit(SQLModel, table=True):
    """Listed units known per session (``*``: from config files, every session) — hashes only."""

    __tablename__ = "privacy_unit"

    session_id: str = Field(primary_key=True)
    unit_id: str = Field(primary_key=True)
    entity_id: str
    field: str
    dimension: str | None = None
    weight: float = 1.0
    value_hash: str


class PrivacyEgress(SQLModel, table=True):
    """One row per listed unit whose raw value was in a body that left for the cloud."""

    __tablename__ = "privacy_egress"

    id: int | None = Field(default=None, primary_key=True)
    call_id: str = Field(index=True)
    session_id: str = Field(index=True)
    unit_id: str
    created_at: float


class PrivacyReceipt(SQLModel, table=True):
    """One signed egress receipt per body handed to a cloud target (``privacy.audit.receipts``): the token the client
    got, which holds hashes and counts, never content."""

    __tablename__ = "privacy_receipt"

    id: str = Field(primary_key=True)
    call_id: str = Field(index=True)
    request_id: str = Field(index=True)
    session_id: str = Field(index=True)
    created_at: float
    target: str
    token: str


class PrivacyErasure(SQLModel, table=True):
    """An erasure (``DELETE /v1/sessions/{id}``) or a retention sweep: which calls' content it dropped, as a digest
    of their ids, so a tombstone no erasure made is named by the verifier."""

    __tablename__ = "privacy_erasure"

    id: str = Field(primary_key=True)
    reason: str  # "session" | "retention"
    session_id: str | None = None
    created_at: float
    calls: int
    calls_digest: str


class PrivacyInbound(SQLModel, table=True):
    """One row per sensitive value a cloud answer carried that neither the call's placeholders nor its request did
    (``privacy.response_guard``): type, layer and where in the answer — never the value, nor a hash of it (a
    short value's hash could be brute-forced)."""

    __tablename__ = "privacy_inbound"

    id: int | None = Field(default=None, primary_key=True)
    call_id: str = Field(index=True)
    session_id: str = Field(index=True)
    request_id: str
    owner: str = Field(index=True)
    type: str
    layer: str
    location: str  # where in the answer: content, reasoning_content, tool_calls[<name>].arguments, …
    action: str  # audit | redact
    created_at: float


class PrivacySigningKey(SQLModel, table=True):
    """The generations of the signing key (``ecgw audit rotate-key``): public keys only, the private ones are
    derived from the secrets key. Verification trusts the keys it derives or is given, never this table."""

    __tablename__ = "privacy_signing_key"

    generation: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    key_id: str
    public_pem: str
    created_at: float


class PrivacyChain(SQLModel, table=True):
    """The trail: one entry per audit record, in one chain per database (``privacy.audit.chain``). ``digest`` is
    the SHA-256 of the record's rows as stored, ``hash`` covers the entry and its predecessor's ``hash``."""

    __tablename__ = "privacy_chain"

    seq: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    kind: str
    ref: str = Field(index=True)
    digest: str
    created_at: float
    prev: str
    hash: str


class PrivacyCheckpoint(SQLModel, table=True):
    """A signed statement of the chain's head (Ed25519), chained to the checkpoint before it."""

    __tablename__ = "privacy_checkpoint"

    seq: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    head_seq: int
    head_hash: str
    created_at: float
    prev: str
    key_id: str
    signature: str
    hash: str


TABLES = [PrivacyCall.__table__, PrivacyFinding.__table__, PrivacyUnit.__table__,  # type: ignore[attr-defined]
          PrivacyFindingSet.__table__, PrivacyCallSet.__table__,  # type: ignore[attr-defined]
          PrivacyEgress.__table__, PrivacyReceipt.__table__, PrivacyErasure.__table__,  # type: ignore[attr-defined]
          PrivacyInbound.__table__, PrivacySigningKey.__table__, PrivacyChain.__table__,  # type: ignore[attr-defined]
          PrivacyCheckpoint.__table__]  # type: ignore[attr-defined]
