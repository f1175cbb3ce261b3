"""Moving a key's history to its tenant. Before tenants, the owner of every session (the ``<owner>/`` prefix of
its internal id, in the session store, the metering rows and the audit rows) was a keyed hash of the key
(``o.<hash>``, ``gateway.state.tenancy.bare_owner``); a named key's owner is now its tenant (``t.<tenant>``). When a bare
key becomes an entry — ``- sk-abc`` becomes ``{name: ci, key: sk-abc, tenant: acme}`` — ``ecgw serve`` moves what
the old owner had to the tenant once, before it serves (``preflight``):

- every row of every table in the metering/audit database that has a ``session_id`` column (found by inspection,
  so tables added later are covered too); where a table's primary key would collide with a row the tenant already
  has, the tenant's row is kept and the old one left in place (and counted);
- every session in a persistent session store (SQLite, Redis), re-sealed, since a sealed value is bound to its
  session id. The memory store keeps nothing across a restart.

It is idempotent: once moved, nothing starts with the old owner any more, and a start without entries moves
nothing. Responses stored for ``previous_response_id`` keep the owner they were created under (they expire with
the session store's TTL); a follow-up with the rotated key starts a new chain.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import Engine

from gateway.config.settings import Settings
from gateway.state.keys import Keys
from gateway.state.sealing import SealedStore
from gateway.state.tenancy import owner_moves
from privacy.session_store import SessionStore

log = logging.getLogger("ecgw")


class MovableStore(SessionStore, Protocol):
    """What a persistent session store offers the migration."""

    async def sessions_under(self, prefix: str) -> list[str]: ...

    async def entries(self, session_id: str) -> dict[str, Any]: ...

    async def move(self, old_id: str, new_id: str, values: Mapping[str, Any]) -> None: ...

    async def aclose(self) -> None: ...


@dataclass
class Moved:
    rows: int = 0
    kept: int = 0  # rows left under the old owner: the tenant already had one with the same primary key
    sessions: int = 0


def move_rows(engine: Engine, moves: Mapping[str, str]) -> Moved:
    moved = Moved()
    inspector = inspect(engine)
    tables = [t for t in inspector.get_table_names()
              if any(c["name"] == "session_id" for c in inspector.get_columns(t))]
    with engine.begin() as db:
        for table in tables:
            primary = inspector.get_pk_constraint(table).get("constrained_columns") or []
            others = [c for c in primary if c != "session_id"]
            for old, new in moves.items():
                old_prefix, new_prefix = old + "/", new + "/"
                renamed = "(:new || substr(session_id, :cut))"
                clash = ""
                if "session_id" in primary:  # skip rows whose new key the tenant already holds
                    same = " AND ".join([f"o.session_id = {renamed}"] + [f"o.{c} = {table}.{c}" for c in others])
                    clash = f" AND NOT EXISTS (SELECT 1 FROM {table} AS o WHERE {same})"
                params = {"new": new_prefix, "cut": len(old_prefix) + 1, "n": len(old_prefix), "old": old_prefix}
                result = db.execute(text(f"UPDATE {table} SET session_id = {renamed} "  # noqa: S608 (names from
                                         f"WHERE substr(session_id, 1, :n) = :old{clash}"), params)  # inspection)
                moved.rows += result.rowcount or 0
                if clash:
                    left = db.execute(text(f"SELECT count(*) FROM {table} "  # noqa: S608
                                           "WHERE substr(session_id, 1, :n) = :old"), params).scalar_one()
                    moved.kept += int(left)
    return moved


async def move_sessions(store: MovableStore, sealed: SealedStore, moves: Mapping[str, str]) -> int:
    count = 0
    for old, new in moves.items():
        old_prefix, new_prefix = old + "/", new + "/"
        for session_id in await store.sessions_under(old_prefix):
            target = new_prefix + session_id[len(old_prefix):]
            values = {key: sealed.seal(target, key, sealed.open(session_id, key, stored))
                      for key, stored in (await store.entries(session_id)).items()}
            await store.move(session_id, target, values)
            count += 1
    return count


def _movable_store(settings: Settings, kind: str) -> MovableStore | None:
    if kind == "redis" and settings.sessions.redis_url:
        from gateway.state.redis_sessions import RedisSessionStore  # imports redis: only when it is used

        return RedisSessionStore(settings.sessions.redis_url, ttl_s=settings.sessions.ttl_s, pool_size=2,
                                 timeout_s=settings.sessions.redis_timeout_s)
    if kind == "sqlite":
        from gateway.state.sessions import SQLiteSessionStore

        return SQLiteSessionStore(settings.sessions.sqlite_path, ttl_s=settings.sessions.ttl_s)
    return None


def migrate_owners(settings: Settings, keys: Keys, *, store_kind: str) -> Moved:
    """Moves every named key's history from its old owner to its tenant (see the module's docstring)."""
    moves = owner_moves(settings.server, keys.derive("owner"))
    moved = Moved()
    if not moves:
        return moved
    if settings.accounting.enabled or settings.privacy.enabled:
        engine = create_engine(settings.database_url)
        try:
            moved = move_rows(engine, moves)
        finally:
            engine.dispose()
    store = _movable_store(settings, store_kind)
    if store is not None:
        sealed = SealedStore(store, keys.derive("vault"))

        async def run() -> int:
            try:
                return await move_sessions(store, sealed, moves)
            finally:
                await store.aclose()

        moved.sessions = asyncio.run(run())
    if moved.rows or moved.sessions:
        log.info("moved %d rows and %d sessions of keys now named in server.api_keys to their tenants",
                 moved.rows, moved.sessions)
    if moved.kept:
        log.warning("%d rows stayed under a key's old owner: its tenant already had rows with the same session "
                    "id (grades, units)", moved.kept)
    return moved
