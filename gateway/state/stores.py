"""The session store a configuration gets: its kind (memory, SQLite, Redis) and the store itself, sealed with the
secrets key when it persists."""

from __future__ import annotations

from gateway.config.settings import Settings
from gateway.state.keys import Keys, load_keys
from gateway.state.sealing import SealedStore
from gateway.state.sessions import MemorySessionStore, SQLiteSessionStore
from privacy.session_store import SessionStore


def session_store_kind(settings: Settings) -> str:
    store = settings.sessions.store
    if store == "auto":
        # `ecgw serve` sets server.workers in every worker it starts; an app built in-process is one worker.
        store = ("redis" if settings.sessions.redis_url else
                 "sqlite" if (settings.server.workers or 1) > 1 else "memory")
    return store


def build_session_store(settings: Settings, keys: Keys | None = None) -> SessionStore:
    """In memory for one worker; a shared SQLite file as soon as several workers may serve one session; Redis
    (shared by every replica) when ``sessions.redis_url`` is set. Every persistent store's values are encrypted
    with the secrets key (``gateway.state.sealing``)."""
    kind = session_store_kind(settings)
    if kind == "memory":
        return MemorySessionStore(ttl_s=settings.sessions.ttl_s)
    keys = keys or load_keys(settings, persistent_sessions=True)
    inner: SessionStore
    if kind == "redis":
        assert settings.sessions.redis_url is not None  # SessionSettings refuses store: redis without a URL
        from gateway.state.redis_sessions import RedisSessionStore  # imports redis: only when it is used

        inner = RedisSessionStore(settings.sessions.redis_url, ttl_s=settings.sessions.ttl_s,
                                  pool_size=settings.sessions.redis_pool_size,
                                  timeout_s=settings.sessions.redis_timeout_s)
    else:
        inner = SQLiteSessionStore(settings.sessions.sqlite_path, ttl_s=settings.sessions.ttl_s)
    return SealedStore(inner, keys.derive("vault"))
