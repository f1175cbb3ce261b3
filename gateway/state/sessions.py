"""Who a request belongs to, and the state kept per session."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from accounting.database import create_private
from gateway.http.jsonio import dumps, loads
from privacy.session_store import SessionStoreUnavailable


def identify_session(
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    fingerprint_fallback: bool = True,
    hint: str | None = None,
) -> tuple[str, str]:
    """``(session_id, source)``, in order: ``X-Session-Id`` header; the surface's own session header
    (``hint``: Claude Code's, Codex's); ``metadata.session_id``; ``user``; a fingerprint of the first system and
    user messages (fragile: two different runs of the same task share it). A key bound to a session never gets
    here: tenancy gives its session before asking (``Tenancy.session``)."""
    header = headers.get("x-session-id")
    if header:
        return header, "header"
    if hint:
        return hint, "surface"
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("session_id"), str) and metadata["session_id"]:
        return metadata["session_id"], "metadata"
    user = body.get("user")
    if isinstance(user, str) and user:
        return user, "user"
    return fingerprint(body) if fingerprint_fallback else "anonymous", "fingerprint"


def fingerprint(body: Mapping[str, Any]) -> str:
    first: dict[str, Any] = {}
    for message in body.get("messages") or ():
        role = message.get("role")
        if role in ("system", "developer", "user") and role not in first:
            first[role] = message.get("content")
        if "user" in first:
            break
    digest = hashlib.sha256(dumps(first)).hexdigest()[:16]
    return f"fp-{digest}"


_SWEEP_EVERY = 1000  # writes between two sweeps for expired sessions

Updater = Callable[[Any | None], Any]


class MemorySessionStore:
    """Session state in this process; right for one worker. Values are copied through JSON so that what a
    shared store would return (plain data) is what this one returns too. A session untouched for ``ttl_s``
    is forgotten (vault, sticky route, arm), so a long-running gateway does not grow without bound."""

    def __init__(self, *, ttl_s: float = 7 * 86400, clock: Callable[[], float] = time.time) -> None:
        self._data: dict[str, dict[str, bytes]] = {}
        self._touched: dict[str, float] = {}
        self._ttl = ttl_s
        self._clock = clock
        self._writes = 0
        self._lock = threading.Lock()  # also holds for callers on other threads, not only this event loop

    async def get(self, session_id: str, key: str) -> Any | None:
        values = self._data.get(session_id)
        if values is None or key not in values:
            return None
        self._touched[session_id] = self._clock()
        return loads(values[key])

    async def set(self, session_id: str, key: str, value: Any) -> None:
        with self._lock:
            self._write(session_id, key, dumps(value))

    async def update(self, session_id: str, key: str, fn: Updater) -> Any:
        """``fn(current)`` written atomically (``fn`` runs under the lock, once); returns what was written."""
        with self._lock:
            raw = self._data.get(session_id, {}).get(key)
            current = None if raw is None else loads(raw)
            new = fn(current)
            if new == current:
                return current
            blob = dumps(new)
            self._write(session_id, key, blob)
            return loads(blob)

    def _write(self, session_id: str, key: str, blob: bytes) -> None:
        now = self._clock()
        self._data.setdefault(session_id, {})[key] = blob
        self._touched[session_id] = now
        self._writes += 1
        if self._writes % _SWEEP_EVERY == 0:
            self.sweep(now)

    def sweep(self, now: float) -> int:
        """Forget sessions idle for longer than the TTL; returns how many."""
        stale = [sid for sid, touched in self._touched.items() if now - touched > self._ttl]
        for sid in stale:
            del self._touched[sid]
            self._data.pop(sid, None)
        return len(stale)

    async def verify(self) -> None:
        return None  # nothing persists, so nothing sealed to open

    async def aclose(self) -> None:
        return None


_BUSY_RETRIES = 5  # BEGIN IMMEDIATE attempts (each waits up to the 5 s busy timeout) before a 503

class SQLiteSessionStore:
    """Session state in a SQLite file (WAL), shared by every worker on one machine, so that the next step of
    a session may land on any worker. Queries run on one thread of their own: a write that waits for another
    worker's lock never blocks the event loop. ``update`` reads first and, only when ``fn`` changes the value,
    runs ``fn`` again inside ``BEGIN IMMEDIATE`` (the file's write lock, retried while busy) and writes."""

    def __init__(self, path: str, *, ttl_s: float = 7 * 86400, clock: Callable[[], float] = time.time) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ecgw-sessions")
        self._path = path
        self._ttl = ttl_s
        self._clock = clock
        self._writes = 0
        create_private(path)  # 0600: sealed values, but session ids and timestamps too
        self._conn: sqlite3.Connection | None = None
        self._conn_pid = 0
        self._inherited: list[sqlite3.Connection] = []
        with contextlib.closing(self._connect()) as db:  # the schema now; each process its own connection later
            columns = {row[1] for row in db.execute("PRAGMA table_info(session_state)")}
            if columns and "touched" not in columns:
                # A file from before sessions expired — and before state was encrypted at rest: its values are
                # plain text the sealed store would never use, so they are removed rather than migrated.
                db.execute("DROP TABLE session_state")
            db.execute("CREATE TABLE IF NOT EXISTS session_state (session_id TEXT NOT NULL, key TEXT NOT NULL, "
                       "value BLOB NOT NULL, touched REAL NOT NULL DEFAULT 0, PRIMARY KEY (session_id, key))")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None, timeout=5.0)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA secure_delete=ON")  # what is deleted (expired or obsolete state) is overwritten
        return db

    @property
    def _db(self) -> sqlite3.Connection:
        """This process's connection, opened at its first query. SQLite must not be used across a fork (a
        connection's lock bookkeeping is copied without the locks): a worker forked from the parent that built this
        store (``ecgw serve --workers N``) opens its own, and leaves the parent's unused and open (closing it here
        could checkpoint or unlock on the parent's behalf)."""
        if self._conn is None or self._conn_pid != os.getpid():
            if self._conn is not None:
                self._inherited.append(self._conn)
            self._conn = self._connect()
            self._conn_pid = os.getpid()
        return self._conn

    async def _call(self, work: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, work)
        except sqlite3.Error as exc:
            raise SessionStoreUnavailable(f"sqlite {self._path}", str(exc)) from exc

    async def _run(self, sql: str, params: tuple[Any, ...]) -> Any:
        return await self._call(lambda: self._db.execute(sql, params).fetchone())

    async def get(self, session_id: str, key: str) -> Any | None:
        row = await self._run(_SELECT, (session_id, key))
        return None if row is None else loads(row[0])

    async def set(self, session_id: str, key: str, value: Any) -> None:
        now = self._clock()
        await self._run(_UPSERT, (session_id, key, dumps(value), now))
        await self._wrote(now)

    async def update(self, session_id: str, key: str, fn: Updater) -> Any:
        now = self._clock()
        new, wrote = await self._call(lambda: self._update(session_id, key, fn, now))
        if wrote:
            await self._wrote(now)
        return new

    def _update(self, session_id: str, key: str, fn: Updater, now: float) -> tuple[Any, bool]:
        row = self._db.execute(_SELECT, (session_id, key)).fetchone()
        current = None if row is None else loads(row[0])
        if fn(current) == current:  # nothing to write: no lock taken
            return current, False
        for attempt in range(_BUSY_RETRIES):
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                time.sleep(0.01 * (attempt + 1))
                continue
            try:
                row = self._db.execute(_SELECT, (session_id, key)).fetchone()
                current = None if row is None else loads(row[0])
                new = fn(current)
                if new != current:
                    blob = dumps(new)
                    self._db.execute(_UPSERT, (session_id, key, blob, now))
                    new = loads(blob)
                self._db.execute("COMMIT")
                return new, new != current
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        raise sqlite3.OperationalError(f"still locked after {_BUSY_RETRIES} attempts")

    async def _wrote(self, now: float) -> None:
        self._writes += 1
        if self._writes % _SWEEP_EVERY == 0:
            await self.sweep(now)

    async def sweep(self, now: float) -> None:
        """Forget sessions whose every key is older than the TTL (a session's keys are written together)."""
        await self._run("DELETE FROM session_state WHERE session_id IN (SELECT session_id FROM session_state "
                        "GROUP BY session_id HAVING MAX(touched) < ?)", (now - self._ttl,))

    async def sessions_under(self, prefix: str) -> list[str]:
        """Every session id starting with ``prefix`` (for ``gateway.state.owner_migration``)."""
        rows = await self._call(lambda: self._db.execute(
            "SELECT DISTINCT session_id FROM session_state WHERE substr(session_id, 1, ?) = ?",
            (len(prefix), prefix)).fetchall())
        return [row[0] for row in rows]

    async def entries(self, session_id: str) -> dict[str, Any]:
        rows = await self._call(lambda: self._db.execute(
            "SELECT key, value FROM session_state WHERE session_id = ?", (session_id,)).fetchall())
        return {key: loads(value) for key, value in rows}

    async def move(self, old_id: str, new_id: str, values: Mapping[str, Any]) -> None:
        """In one transaction: ``values`` under ``new_id`` (a key the new session already holds keeps its own)
        and ``old_id`` gone."""
        now = self._clock()

        def work() -> None:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT INTO session_state (session_id, key, value, touched) VALUES "
                                     "(?, ?, ?, ?) ON CONFLICT (session_id, key) DO NOTHING",
                                     [(new_id, key, dumps(value), now) for key, value in values.items()])
                self._db.execute("DELETE FROM session_state WHERE session_id = ?", (old_id,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

        await self._call(work)

    async def verify(self) -> None:
        return None  # plain values: nothing sealed to open (``SealedStore`` checks its key)

    async def aclose(self) -> None:
        self._executor.shutdown(wait=True)
        if self._conn is not None and self._conn_pid == os.getpid():
            self._conn.close()


_SELECT = "SELECT value FROM session_state WHERE session_id = ? AND key = ?"
_UPSERT = ("INSERT INTO session_state (session_id, key, value, touched) VALUES (?, ?, ?, ?) "
           "ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, touched = excluded.touched")
