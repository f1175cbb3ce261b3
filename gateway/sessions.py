"""Who a request belongs to, and the state kept per session."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Mapping
from typing import Any

from gateway.jsonio import dumps, loads


def identify_session(
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    api_key: str | None,
    session_keys: Mapping[str, str],
    fingerprint_fallback: bool = True,
    hint: str | None = None,
) -> tuple[str, str]:
    """``(session_id, source)``, in order: ``X-Session-Id`` header; the surface's own session header
    (``hint``: Claude Code's, Codex's); ``metadata.session_id``; ``user``; a virtual key bound to a session;
    a fingerprint of the first system and user messages (fragile: two different runs of the same task share
    it)."""
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
    if api_key and api_key in session_keys:
        return session_keys[api_key], "key"
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

    async def get(self, session_id: str, key: str) -> Any | None:
        values = self._data.get(session_id)
        if values is None or key not in values:
            return None
        self._touched[session_id] = self._clock()
        return loads(values[key])

    async def set(self, session_id: str, key: str, value: Any) -> None:
        now = self._clock()
        self._data.setdefault(session_id, {})[key] = dumps(value)
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


class SQLiteSessionStore:
    """Session state in a SQLite file (WAL), shared by every worker on one machine, so that the next step of
    a session may land on any worker. Queries run on one thread of their own: a write that waits for another
    worker's lock never blocks the event loop."""

    def __init__(self, path: str, *, ttl_s: float = 7 * 86400, clock: Callable[[], float] = time.time) -> None:
        import sqlite3
        from concurrent.futures import ThreadPoolExecutor

        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ecgw-sessions")
        self._ttl = ttl_s
        self._clock = clock
        self._writes = 0
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=5.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS session_state (session_id TEXT NOT NULL, key TEXT NOT NULL, "
                         "value BLOB NOT NULL, touched REAL NOT NULL DEFAULT 0, PRIMARY KEY (session_id, key))")
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(session_state)")}
        if "touched" not in columns:  # a file from before expiry existed
            self._db.execute("ALTER TABLE session_state ADD COLUMN touched REAL NOT NULL DEFAULT 0")

    async def _run(self, sql: str, params: tuple[Any, ...]) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: self._db.execute(sql, params).fetchone())

    async def get(self, session_id: str, key: str) -> Any | None:
        row = await self._run("SELECT value FROM session_state WHERE session_id = ? AND key = ?", (session_id, key))
        return None if row is None else loads(row[0])

    async def set(self, session_id: str, key: str, value: Any) -> None:
        now = self._clock()
        await self._run("INSERT INTO session_state (session_id, key, value, touched) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, touched = excluded.touched",
                        (session_id, key, dumps(value), now))
        self._writes += 1
        if self._writes % _SWEEP_EVERY == 0:
            await self.sweep(now)

    async def sweep(self, now: float) -> None:
        """Forget sessions whose every key is older than the TTL (a session's keys are written together)."""
        await self._run("DELETE FROM session_state WHERE session_id IN (SELECT session_id FROM session_state "
                        "GROUP BY session_id HAVING MAX(touched) < ?)", (now - self._ttl,))

    async def aclose(self) -> None:
        self._executor.shutdown(wait=True)
        self._db.close()
