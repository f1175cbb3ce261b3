"""The admin tables in the metering database (``database_url``): virtual keys (keyed hashes, never the secret)
and the audit of admin actions (who, what, when — never a secret), each chained in the audit's trail. Their migrations keep their own version table.
Calls block: async callers run them in a thread."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Connection, Float, Integer, MetaData, String, Table, Text, insert, select, update
from sqlalchemy.engine import Engine

from accounting.database import make_engine
from accounting.migrations import Migration, migrate
from privacy.audit import chain_row, chained, ensure_schema

VERSION_TABLE = "ecgw_admin_schema_version"
_META = MetaData()
VIRTUAL_KEYS = Table(
    "ecgw_virtual_keys", _META,
    Column("id", String(32), primary_key=True),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("tenant", String(64), nullable=False),
    Column("session", String(512)),
    Column("policies", Text),  # JSON list, or null: every policy
    Column("limits", Text),  # JSON object (the budgets' shape), or null
    Column("expires_at", Float),
    Column("created_at", Float, nullable=False),
    Column("created_by", String(128), nullable=False),
    Column("revoked_at", Float),
)
ADMIN_ACTIONS = Table(
    "ecgw_admin_actions", _META,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("who", String(128), nullable=False),
    Column("action", String(64), nullable=False),
    Column("target", String(256)),
    Column("status", Integer, nullable=False),
    Column("detail", Text),
)


def _v1(conn: Connection) -> None:
    _META.create_all(conn, tables=[VIRTUAL_KEYS, ADMIN_ACTIONS])


MIGRATIONS: tuple[Migration, ...] = (Migration(1, "virtual keys and the admin audit", _v1),)


@dataclass(frozen=True)
class VirtualKey:
    id: str
    key_hash: str
    tenant: str
    session: str | None
    policies: tuple[str, ...] | None
    limits: dict[str, Any] | None
    expires_at: float | None
    created_at: float
    created_by: str
    revoked_at: float | None = None

    def listed(self) -> dict[str, Any]:
        """As ``GET /admin/v1/keys`` shows it: never the hash, let alone the key."""
        return {"id": self.id, "tenant": self.tenant, "session": self.session,
                "policies": list(self.policies) if self.policies is not None else None, "limits": self.limits,
                "expires_at": self.expires_at, "created_at": self.created_at, "created_by": self.created_by,
                "revoked_at": self.revoked_at}


def _row(row: Any) -> VirtualKey:
    return VirtualKey(row.id, row.key_hash, row.tenant, row.session,
                      tuple(json.loads(row.policies)) if row.policies is not None else None,
                      json.loads(row.limits) if row.limits is not None else None, row.expires_at, row.created_at,
                      row.created_by, row.revoked_at)


class AdminDatabase:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def from_url(cls, database_url: str) -> AdminDatabase:
        return cls(make_engine(database_url))

    def open(self) -> None:
        migrate(self.engine, MIGRATIONS, version_table=VERSION_TABLE)
        ensure_schema(self.engine)  # admin actions are chained in the audit's trail

    def dispose(self) -> None:
        self.engine.dispose()

    def record(self, *, who: str, action: str, target: str | None, status: int, detail: str | None = None) -> None:
        """One admin action, chained (``privacy.audit``: kind ``admin``) in the same transaction."""
        row: dict[str, Any] = {"at": time.time(), "who": who, "action": action, "target": target, "status": status,
                               "detail": detail}
        with chained(self.engine) as db:
            done = db.execute(insert(ADMIN_ACTIONS).values(**row))
            key = done.inserted_primary_key
            assert key is not None  # an insert of one row: the database numbered it
            row_id = int(key[0])
            chain_row(db, "admin", str(row_id), {"id": row_id, **row}, row["at"])

    def actions(self) -> list[dict[str, Any]]:
        with self.engine.connect() as db:
            return [dict(r._mapping) for r in db.execute(select(ADMIN_ACTIONS).order_by(ADMIN_ACTIONS.c.id))]

    def create(self, *, key_hash: str, tenant: str, session: str | None, policies: Sequence[str] | None,
               limits: dict[str, Any] | None, expires_at: float | None, created_by: str) -> VirtualKey:
        key = VirtualKey("vk_" + uuid.uuid4().hex[:20], key_hash, tenant, session,
                         tuple(policies) if policies is not None else None, limits, expires_at, time.time(), created_by)
        with self.engine.begin() as db:
            db.execute(insert(VIRTUAL_KEYS).values(
                id=key.id, key_hash=key_hash, tenant=tenant, session=session,
                policies=json.dumps(list(policies)) if policies is not None else None,
                limits=json.dumps(limits) if limits is not None else None, expires_at=expires_at,
                created_at=key.created_at, created_by=created_by))
        return key

    def keys(self, *, active_only: bool = False) -> list[VirtualKey]:
        query = select(VIRTUAL_KEYS).order_by(VIRTUAL_KEYS.c.created_at)
        if active_only:
            query = query.where(VIRTUAL_KEYS.c.revoked_at.is_(None))
        with self.engine.connect() as db:
            return [_row(r) for r in db.execute(query)]

    def active_key(self, key_hash: str) -> VirtualKey | None:
        """The active key with this hash, if there is one (one indexed read)."""
        query = select(VIRTUAL_KEYS).where(VIRTUAL_KEYS.c.key_hash == key_hash, VIRTUAL_KEYS.c.revoked_at.is_(None))
        with self.engine.connect() as db:
            row = db.execute(query).first()
        return _row(row) if row is not None else None

    def revoke(self, key_id: str) -> bool:
        with self.engine.begin() as db:
            done = db.execute(update(VIRTUAL_KEYS).where(VIRTUAL_KEYS.c.id == key_id,
                                                         VIRTUAL_KEYS.c.revoked_at.is_(None))
                              .values(revoked_at=time.time()))
        return bool(done.rowcount)
