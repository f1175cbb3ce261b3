"""Session state in Redis, shared by every worker of every replica (``sessions.store: redis``).

A session is one Redis hash, ``ecgw:session:<id>``, a field per key (JSON). Its TTL is Redis' own: every read and
write sets it to ``sessions.ttl_s`` again, so an idle session expires by itself and nothing needs sweeping.
``update`` is optimistic: read the value (one round trip), run ``fn``, and write with a compare-and-set Lua script
that checks the value's SHA-1 is still what ``fn`` saw (a second round trip); on a conflict the script returns the
newer value and ``fn`` runs again on it. A value ``fn`` leaves alone is not written. Redis unreachable or failing
→ ``SessionStoreUnavailable`` naming the server; the pool reconnects by itself on the next call once it is back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.exceptions import RedisError

from gateway.jsonio import dumps, loads
from privacy.session_store import SessionStoreUnavailable

_CAS = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
local digest = ''
if current then digest = redis.sha1hex(current) end
if digest ~= ARGV[2] then return {0, current or ''} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1, ''}
"""

_CONFLICTS = 100  # compare-and-set attempts for one update before it gives up (each retry saw a newer value)


def _raw(value: bytes | str | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def where(url: str) -> str:
    """``redis host:port/db`` for messages: never the password a URL may carry."""
    parts = urlsplit(url)
    db = parts.path.strip("/") or "0"
    return f"redis {parts.hostname or 'localhost'}:{parts.port or 6379}/{db}"


class RedisSessionStore:
    def __init__(self, url: str, *, ttl_s: float = 7 * 86400, pool_size: int = 32, timeout_s: float = 5.0,
                 prefix: str = "ecgw:session:") -> None:
        # Blocking pool: a burst waits up to timeout_s for a free connection instead of opening unbounded ones.
        self._pool = BlockingConnectionPool.from_url(url, max_connections=pool_size, timeout=timeout_s,
                                                     socket_timeout=timeout_s, socket_connect_timeout=timeout_s)
        self._redis = Redis(connection_pool=self._pool)
        self._cas = self._redis.register_script(_CAS)
        self._ttl_ms = max(1, int(ttl_s * 1000))
        self._prefix = prefix
        self.name = where(url)

    def _key(self, session_id: str) -> str:
        return self._prefix + session_id

    def _unavailable(self, exc: Exception) -> SessionStoreUnavailable:
        return SessionStoreUnavailable(self.name, f"{type(exc).__name__}: {exc}")

    async def get(self, session_id: str, key: str) -> Any | None:
        name = self._key(session_id)
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.hget(name, key)
                pipe.pexpire(name, self._ttl_ms)
                raw, _ = await pipe.execute()
        except RedisError as exc:
            raise self._unavailable(exc) from exc
        return None if raw is None else loads(raw)

    async def set(self, session_id: str, key: str, value: Any) -> None:
        name = self._key(session_id)
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hset(name, key, dumps(value))
                pipe.pexpire(name, self._ttl_ms)
                await pipe.execute()
        except RedisError as exc:
            raise self._unavailable(exc) from exc

    async def update(self, session_id: str, key: str, fn: Callable[[Any | None], Any]) -> Any:
        name = self._key(session_id)
        try:
            raw = _raw(await self._redis.hget(name, key))
            for _ in range(_CONFLICTS):
                current = None if raw is None else loads(raw)
                new = fn(current)
                if new == current:
                    return current
                blob = dumps(new)
                seen = "" if raw is None else hashlib.sha1(raw).hexdigest()  # noqa: S324 (a checksum, not a secret)
                written, newer = await self._cas(keys=[name], args=[key, seen, blob, self._ttl_ms])
                if int(written) == 1:
                    return loads(blob)
                raw = _raw(newer or None)
        except RedisError as exc:
            raise self._unavailable(exc) from exc
        raise SessionStoreUnavailable(self.name, f"{_CONFLICTS} conflicting writers on one session key {key!r}")

    async def sessions_under(self, prefix: str) -> list[str]:
        """Every session id starting with ``prefix`` (for ``gateway.owner_migration``; SCAN, never KEYS)."""
        pattern = self._prefix + "".join("\\" + c if c in "*?[]\\" else c for c in prefix) + "*"
        try:
            found = [_text(k)[len(self._prefix):] async for k in self._redis.scan_iter(match=pattern, count=500)]
        except RedisError as exc:
            raise self._unavailable(exc) from exc
        return found

    async def entries(self, session_id: str) -> dict[str, Any]:
        try:
            raw = await self._redis.hgetall(self._key(session_id))
        except RedisError as exc:
            raise self._unavailable(exc) from exc
        return {_text(k): loads(v) for k, v in raw.items()}

    async def move(self, old_id: str, new_id: str, values: Mapping[str, Any]) -> None:
        """In one transaction: ``values`` under ``new_id`` (a key the new session already holds keeps its own)
        and ``old_id`` gone."""
        name = self._key(new_id)
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                for key, value in values.items():
                    pipe.hsetnx(name, key, dumps(value))
                pipe.pexpire(name, self._ttl_ms)
                pipe.delete(self._key(old_id))
                await pipe.execute()
        except RedisError as exc:
            raise self._unavailable(exc) from exc

    async def ping(self) -> bool:
        try:
            return bool(await self._redis.ping())
        except RedisError:
            return False

    async def verify(self) -> None:
        return None  # plain values: nothing sealed to open (``SealedStore`` checks its key)

    async def aclose(self) -> None:
        await self._redis.aclose()
        await self._pool.disconnect()
