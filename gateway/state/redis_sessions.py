"""Session state in Redis, shared by every worker of every replica (``sessions.store: redis``).

A session is one Redis hash, ``ecgw:session:<id>``, a field per key (JSON). Its TTL is Redis' own: every read and
write sets it to ``sessions.ttl_s`` again, so an idle session expires by itself and nothing needs sweeping.
``update`` is optimistic: run ``fn`` on the value this process last read or wrote for that key (``_LastSeen``, small
values only; else read it, one round trip) and write with a compare-and-set Lua script that checks the stored
value's SHA-1 is still what ``fn`` saw (one round trip); on a conflict — another worker wrote since — the script
returns the newer value and ``fn`` runs again on it. So an update from the worker that wrote last (a budget counter,
a session's state between its steps) costs one round trip, and a stale memory only costs the retry it would have
cost anyway. A value ``fn`` leaves alone is not written, and is read from Redis before it is returned. Redis unreachable or failing
→ ``SessionStoreUnavailable`` naming the server; the pool reconnects by itself on the next call once it is back (a
command that meets a connection the restarted server closed is sent again on a new one, so no step is refused
once Redis answers again).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError, RedisError

from gateway.http.jsonio import dumps, loads
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
_SEEN_ENTRIES = 4096  # values remembered for the next update's first compare-and-set
_SEEN_BYTES = 4096  # larger values (a long vault) are read again rather than remembered


class _LastSeen:
    """The raw value this process last read or wrote per (hash, field), bounded (least recently used goes first).
    Only ever a guess: the compare-and-set checks it against Redis before anything is written."""

    def __init__(self) -> None:
        self._values: OrderedDict[tuple[str, str], bytes] = OrderedDict()

    def get(self, name: str, key: str) -> bytes | None:
        raw = self._values.get((name, key))
        if raw is not None:
            self._values.move_to_end((name, key))
        return raw

    def put(self, name: str, key: str, raw: bytes | None) -> None:
        if raw is None or len(raw) > _SEEN_BYTES:
            self._values.pop((name, key), None)
            return
        self._values[(name, key)] = raw
        self._values.move_to_end((name, key))
        if len(self._values) > _SEEN_ENTRIES:
            self._values.popitem(last=False)

    def forget(self, name: str, key: str) -> None:
        self._values.pop((name, key), None)


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
        # A pooled connection a restarted Redis closed fails its next command with ConnectionError: that command is
        # sent once more on a fresh connection (one retry, no wait), so the first steps after a restart are not
        # refused. A timeout is not retried (a hung Redis would cost twice timeout_s).
        self._pool = BlockingConnectionPool.from_url(url, max_connections=pool_size, timeout=timeout_s,
                                                     socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
                                                     retry=Retry(NoBackoff(), 1), retry_on_error=[ConnectionError])
        self._redis = Redis(connection_pool=self._pool)
        self._cas = self._redis.register_script(_CAS)
        self._ttl_ms = max(1, int(ttl_s * 1000))
        self._prefix = prefix
        self._seen = _LastSeen()
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
        self._seen.put(name, key, _raw(raw))
        return None if raw is None else loads(raw)

    async def set(self, session_id: str, key: str, value: Any) -> None:
        name = self._key(session_id)
        blob = dumps(value)
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hset(name, key, blob)
                pipe.pexpire(name, self._ttl_ms)
                await pipe.execute()
        except RedisError as exc:
            self._seen.forget(name, key)
            raise self._unavailable(exc) from exc
        self._seen.put(name, key, blob)

    async def update(self, session_id: str, key: str, fn: Callable[[Any | None], Any]) -> Any:
        name = self._key(session_id)
        try:
            raw, confirmed = self._seen.get(name, key), False
            if raw is None:
                raw, confirmed = _raw(await self._redis.hget(name, key)), True
            for _ in range(_CONFLICTS):
                current = None if raw is None else loads(raw)
                new = fn(current)
                if new == current:
                    if not confirmed:  # a guess from memory is never answered as the stored value: read it
                        raw, confirmed = _raw(await self._redis.hget(name, key)), True
                        continue
                    self._seen.put(name, key, raw)
                    return current
                blob = dumps(new)
                seen = "" if raw is None else hashlib.sha1(raw).hexdigest()  # noqa: S324 (a checksum, not a secret)
                written, newer = await self._cas(keys=[name], args=[key, seen, blob, self._ttl_ms])
                if int(written) == 1:
                    self._seen.put(name, key, blob)
                    return loads(blob)
                raw, confirmed = _raw(newer or None), True
        except RedisError as exc:
            self._seen.forget(name, key)
            raise self._unavailable(exc) from exc
        raise SessionStoreUnavailable(self.name, f"{_CONFLICTS} conflicting writers on one session key {key!r}")

    async def sessions_under(self, prefix: str) -> list[str]:
        """Every session id starting with ``prefix`` (for ``gateway.state.owner_migration``; SCAN, never KEYS)."""
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
