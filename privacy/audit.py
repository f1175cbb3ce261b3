"""The audit: per cloud call, what was found, where, and what was done — with a keyed hash, never the value.

SQLModel tables in the database at ``database_url`` (a SQLite file, ``sqlite://`` in memory, or PostgreSQL).
Writes go through a background thread so the request path only enqueues; ``flush()`` waits for them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.pool import StaticPool
from sqlmodel import Field, Session, SQLModel, create_engine, select

log = logging.getLogger("ecgw.privacy")


class PrivacyCall(SQLModel, table=True):
    __tablename__ = "privacy_call"

    id: str = Field(primary_key=True)
    session_id: str = Field(index=True)
    request_id: str = Field(index=True)
    experiment: str | None = Field(default=None, index=True)
    created_at: float
    body: str  # the JSON body exactly as sent to the cloud (already scrubbed)
    findings: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None


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


class PrivacyKey(SQLModel, table=True):
    __tablename__ = "privacy_key"

    id: int = Field(default=1, primary_key=True)
    key: str


TABLES = [PrivacyCall.__table__, PrivacyFinding.__table__, PrivacyUnit.__table__,  # type: ignore[attr-defined]
          PrivacyKey.__table__]  # type: ignore[attr-defined]


def make_engine(database_url: str) -> Engine:
    url = database_url
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    if url in ("sqlite://", "sqlite:///:memory:"):
        return create_engine(url, connect_args={"check_same_thread": False}, poolclass=StaticPool)
    if url.startswith("sqlite"):
        return create_engine(url, connect_args={"check_same_thread": False})
    return create_engine(url, pool_pre_ping=True)


def normalise_for_hash(value: str) -> str:
    return " ".join(value.split()).casefold()


class Hasher:
    """HMAC-SHA256 of the normalised value; the key is given, or fetched on first use (e.g. from the database)."""

    def __init__(self, key: bytes | Callable[[], bytes]) -> None:
        self._key: bytes | None = key if isinstance(key, bytes) else None
        self._load = None if isinstance(key, bytes) else key

    def __call__(self, value: str) -> str:
        if self._key is None:
            assert self._load is not None
            self._key = self._load()
        return hmac.new(self._key, normalise_for_hash(value).encode(), hashlib.sha256).hexdigest()[:32]


class AuditStore:
    """Connects on first use (the writer thread), never at construction: a database that is down delays the
    audit, not the gateway's start (the metering store reports it)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._ready = False

    def ensure(self) -> None:
        if not self._ready:
            SQLModel.metadata.create_all(self.engine, tables=TABLES)
            self._ready = True

    def hash_key(self, configured: str | None) -> bytes:
        if configured:
            return configured.encode()
        self.ensure()
        with Session(self.engine) as db:
            row = db.get(PrivacyKey, 1)
            if row is None:
                row = PrivacyKey(id=1, key=secrets.token_hex(32))
                db.add(row)
                try:
                    db.commit()
                except Exception:  # another worker created it first
                    db.rollback()
                    row = db.get(PrivacyKey, 1)
            assert row is not None
            return row.key.encode()

    def write_call(self, call: PrivacyCall, findings: list[PrivacyFinding]) -> None:
        self.ensure()
        with Session(self.engine) as db:
            db.add(call)
            db.add_all(findings)
            db.commit()

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

    def write_units(self, session_id: str, units: list[PrivacyUnit]) -> None:
        self.ensure()
        with Session(self.engine) as db:
            for old in db.exec(select(PrivacyUnit).where(PrivacyUnit.session_id == session_id)):
                db.delete(old)
            db.add_all(units)
            db.commit()


class AuditWriter:
    """Runs store writes on one background thread; nothing is dropped: failures are retried, then logged."""

    def __init__(self, store: AuditStore, *, retries: int = 3) -> None:
        self.store = store
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._retries = retries
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ecgw-privacy-audit", daemon=True)
                self._thread.start()
        self._queue.put(job)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is None:
                    return
                for attempt in range(self._retries):
                    try:
                        job()
                        break
                    except Exception:
                        if attempt == self._retries - 1:
                            log.exception("privacy audit write failed %d times; dropped", self._retries)
                        else:
                            time.sleep(0.05 * (attempt + 1))
            finally:
                self._queue.task_done()

    def flush(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self._queue.join()

    def close(self) -> None:
        self.flush()
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                self._queue.put(None)
                self._thread.join(timeout=5)
            self._thread = None


def body_json(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False)
