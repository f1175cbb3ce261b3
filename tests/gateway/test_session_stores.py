"""The session stores' atomic update, against real SQLite files and a real Redis, from several OS processes."""

from __future__ import annotations

import asyncio
import multiprocessing
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

from gateway.state.sessions import MemorySessionStore, SQLiteSessionStore
from privacy.session_store import SessionStoreUnavailable
from privacy.vault import VAULT_KEY, Vault, allocate
from tests.real_parts import redis_url

PROCESSES = 4
EACH = 20


def _store(kind: str, where: str) -> Any:
    if kind == "sqlite":
        return SQLiteSessionStore(where)
    from gateway.state.redis_sessions import RedisSessionStore

    return RedisSessionStore(where)


def _count(kind: str, where: str, session: str) -> None:
    """One process: EACH increments of one counter, all at once, through its own store (a worker's)."""

    async def run() -> None:
        store = _store(kind, where)

        def add(current: Any | None) -> int:
            return int(current or 0) + 1

        await asyncio.gather(*(store.update(session, "n", add) for _ in range(EACH)))
        await store.aclose()

    asyncio.run(run())


def _mail(kind: str, where: str, session: str, worker: int) -> None:
    """One process: EACH new e-mails of one session, each allocated its placeholder at once."""

    async def run() -> None:
        store = _store(kind, where)

        async def one(i: int) -> None:
            value = f"user{worker}-{i}@example.com"
            await allocate(store, session, lambda vault: vault.placeholder("EMAIL_ADDRESS", value, value))

        await asyncio.gather(*(one(i) for i in range(EACH)))
        await store.aclose()

    asyncio.run(run())


def _in_processes(target: Callable[..., None], *args: Any, per_worker: bool = False) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=target, args=(*args, w) if per_worker else args) for w in range(PROCESSES)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
        assert w.exitcode == 0


def _where(kind: str, tmp_path: Any) -> str:
    return str(tmp_path / "sessions.sqlite3") if kind == "sqlite" else redis_url()


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_concurrent_updates_from_several_processes_lose_nothing(kind, tmp_path):
    where, session = _where(kind, tmp_path), f"count-{time.time_ns()}"
    _in_processes(_count, kind, where, session)

    async def read() -> Any:
        store = _store(kind, where)
        try:
            return await store.get(session, "n")
        finally:
            await store.aclose()

    assert asyncio.run(read()) == PROCESSES * EACH


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_concurrent_vault_allocations_give_every_value_its_own_placeholder(kind, tmp_path):
    where, session = _where(kind, tmp_path), f"vault-{time.time_ns()}"
    _in_processes(_mail, kind, where, session, per_worker=True)

    async def read() -> Any:
        store = _store(kind, where)
        try:
            return await store.get(session, VAULT_KEY)
        finally:
            await store.aclose()

    vault = Vault(asyncio.run(read()))
    mails = {f"user{w}-{i}@example.com" for w in range(PROCESSES) for i in range(EACH)}
    assert set(vault.by_key) == mails  # no allocation lost
    assert len(set(vault.by_key.values())) == len(mails)  # no placeholder given twice
    assert {vault.values[p] for p in vault.by_key.values()} == mails  # each placeholder restores its own value


async def test_memory_update_is_atomic_and_returns_what_was_written():
    store = MemorySessionStore()

    def slow_increment(n: Any) -> int:  # gives up the GIL between read and write, as real work would
        time.sleep(0.001)
        return int(n or 0) + 1

    await asyncio.gather(*(asyncio.to_thread(asyncio.run, store.update("s", "n", slow_increment))
                           for _ in range(50)))
    assert await store.get("s", "n") == 50
    kept = await store.update("s", "route", lambda current: current if current is not None else {"side": "edge"})
    assert kept == {"side": "edge"}
    again = await store.update("s", "route", lambda current: current if current is not None else {"side": "cloud"})
    assert again == {"side": "edge"}


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_update_keeps_the_first_value_and_returns_the_stored_one(kind, tmp_path):
    store, session = _store(kind, _where(kind, tmp_path)), f"first-{time.time_ns()}"
    try:
        assert await store.update(session, "k", lambda c: c if c is not None else {"plan": "a"}) == {"plan": "a"}
        assert await store.update(session, "k", lambda c: c if c is not None else {"plan": "b"}) == {"plan": "a"}
        assert await store.get(session, "k") == {"plan": "a"}
    finally:
        await store.aclose()


async def test_redis_sessions_expire_natively_after_the_ttl():
    from gateway.state.redis_sessions import RedisSessionStore

    store, session = RedisSessionStore(redis_url(), ttl_s=1), f"ttl-{time.time_ns()}"
    try:
        await store.set(session, "vault", {"a": "[EMAIL_ADDRESS_001]"})
        assert await store.get(session, "vault") == {"a": "[EMAIL_ADDRESS_001]"}
        await asyncio.sleep(1.5)
        assert await store.get(session, "vault") is None
    finally:
        await store.aclose()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_unreachable_redis_raises_an_error_naming_it():
    from gateway.state.redis_sessions import RedisSessionStore

    port = _closed_port()
    store = RedisSessionStore(f"redis://:secret@127.0.0.1:{port}/0", timeout_s=0.5)
    try:
        for call in (store.get("s", "k"), store.update("s", "k", lambda c: 1), store.set("s", "k", 1)):
            with pytest.raises(SessionStoreUnavailable) as caught:
                await call
            assert f"redis 127.0.0.1:{port}/0" in str(caught.value) and "secret" not in str(caught.value)
    finally:
        await store.aclose()


def test_store_choice_redis_when_a_url_is_set(tmp_path):
    from gateway.config.settings import ConfigError, load_settings
    from gateway.state.redis_sessions import RedisSessionStore
    from gateway.state.sealing import SealedStore
    from gateway.state.stores import build_session_store

    store = build_session_store(load_settings(None, sessions={"redis_url": "redis://127.0.0.1:1/0"},
                                              secrets={"key_file": str(tmp_path / "ecgw.key")}))
    assert isinstance(store, SealedStore) and isinstance(store.inner, RedisSessionStore)  # sealed like SQLite
    with pytest.raises(ConfigError, match="redis_url"):
        load_settings(None, sessions={"store": "redis"})


def test_simultaneous_random_matched_steps_each_draw_their_own_coin(start_gateway, tmp_path, edge, cloud):
    """The coin sequence is one atomic counter: 24 simultaneous steps of one session (SQLite store, whose reads
    really yield) use indexes 0..23, so the stored count and the cloud calls agree with the seeded coins."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from router.policies.random_matched import RandomMatched

    gw = start_gateway(sessions={"store": "sqlite", "sqlite_path": str(tmp_path / "s.sqlite3")},
                       policy={"knobs": {"random-matched": {"p": 0.5}}})

    def step(k: int) -> int:
        return httpx.post(gw.base_url + "/chat/completions", headers={"X-Session-Id": "coins"}, timeout=30,
                          json={"model": "ecgw/random-matched", "messages": [{"role": "user", "content": f"{k}"}]}
                          ).status_code

    with ThreadPoolExecutor(24) as pool:
        assert set(pool.map(step, range(24))) == {200}
    expected = sum(RandomMatched.coin("", "coins", i) < 0.5 for i in range(24))
    state = asyncio.run(gw.services.sessions.get("coins", "random_matched"))
    assert state == {"steps": 24, "cloud_steps": expected}
    assert len(cloud.requests) == expected and len(edge.requests) == 24 - expected


async def test_redis_updates_from_a_stale_memory_lose_nothing_and_the_last_writer_needs_one_round_trip():
    """Each store remembers the value it last saw, to compare-and-set from it without reading first: another
    replica's write in between makes that memory stale, and the compare-and-set then retries on the real value."""
    from gateway.state.redis_sessions import RedisSessionStore

    a, b, session = RedisSessionStore(redis_url()), RedisSessionStore(redis_url()), f"stale-{time.time_ns()}"
    sent: list[tuple[Any, ...]] = []
    execute = a._redis.execute_command  # noqa: SLF001 - counting what store a sends, one command a round trip

    async def counted(*args: Any, **options: Any) -> Any:
        sent.append(args)
        return await execute(*args, **options)

    a._redis.execute_command = counted  # type: ignore[method-assign]  # noqa: SLF001

    def add(current: Any | None) -> int:
        return int(current or 0) + 1

    try:
        for _ in range(5):  # alternating replicas: each update of a starts from a value b has since replaced
            await a.update(session, "n", add)
            await b.update(session, "n", add)
        assert await a.get(session, "n") == 10
        assert await a.update(session, "n", lambda current: current) == 10  # unchanged: read, never the guess
        await b.update(session, "n", add)
        assert await a.update(session, "n", lambda current: current) == 11
        sent.clear()
        for _ in range(3):  # a is the last writer: one compare-and-set each, no read before it
            await a.update(session, "n", add)
        assert len(sent) == 3 and await b.get(session, "n") == 14
    finally:
        await a.aclose()
        await b.aclose()
