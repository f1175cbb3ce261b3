"""Who a request belongs to, and the state kept per session."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from typing import Any

from gateway.jsonio import dumps, loads


def identify_session(
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    api_key: str | None,
    session_keys: Mapping[str, str],
    fingerprint_fallback: bool = True,
) -> tuple[str, str]:
    """``(session_id, source)``, in order: ``X-Session-Id`` header; ``metadata.session_id``; ``user``; a
    virtual key bound to a session; a fingerprint of the first system and user messages (fragile: two
    different runs of the same task share it)."""
    header = headers.get("x-session-id")
    if header:
        return header, "header"
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


class MemorySessionStore:
    """Session state in this process; right for one worker. Values are copied through JSON so that what a
    shared store would return (plain data) is what this one returns too."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], bytes] = {}

    async def get(self, session_id: str, key: str) -> Any | None:
        raw = self._data.get((session_id, key))
        return None if raw is None else loads(raw)

    async def set(self, session_id: str, key: str, value: Any) -> None:
        self._data[(session_id, key)] = dumps(value)


class SQLiteSessionStore:
    """Session state in a SQLite file (WAL), shared by every worker on one machine, so that the next step of
    a session may land on any worker. Queries run on one thread of their own: a write that waits for another
    worker's lock never blocks the event loop."""

    def __init__(self, path: str) -> None:
        import sqlite3
        from concurrent.futures import ThreadPoolExecutor

        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ecgw-sessions")
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=5.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS session_state (session_id TEXT NOT NULL, key TEXT NOT NULL, "
                         "value BLOB NOT NULL, PRIMARY KEY (session_id, key))")

    async def _run(self, sql: str, params: tuple[Any, ...]) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: self._db.execute(sql, params).fetchone())

    async def get(self, session_id: str, key: str) -> Any | None:
        row = await self._run("SELECT value FROM session_state WHERE session_id = ? AND key = ?", (session_id, key))
        return None if row is None else loads(row[0])

    async def set(self, session_id: str, key: str, value: Any) -> None:
        await self._run("INSERT INTO session_state (session_id, key, value) VALUES (?, ?, ?) "
                        "ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value",
                        (session_id, key, dumps(value)))

    async def aclose(self) -> None:
        self._executor.shutdown(wait=True)
        self._db.close()
