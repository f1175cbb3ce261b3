"""The per-session caches are bounded by memory as well as by entries (``privacy.cache_mb``): a few hundred sessions
of a 20 KB system prompt held ~1.4 MB each with nothing but 50,000 entries to stop them. What goes is scrubbed
again, with the session's own placeholders."""

from __future__ import annotations

import asyncio

from benchmarks.workload import trajectory
from gateway.state.sessions import MemorySessionStore
from privacy.factory import build_protector
from privacy.lru import WeighedLRU
from privacy.protector import PrivacyProtector
from privacy.settings import PrivacySettings


def test_the_lru_keeps_both_bounds_and_its_weight():
    lru: WeighedLRU[str, str] = WeighedLRU(3, 10, len)
    for key, value in (("a", "xxxx"), ("b", "xxxx"), ("c", "xx")):
        lru.put(key, value)
    assert list(lru) == ["a", "b", "c"] and lru.weight == 10
    assert lru.get("a") == "xxxx"  # used: now the newest
    lru.put("d", "xxx")  # 13 bytes: the oldest (b) goes
    assert list(lru) == ["c", "a", "d"] and lru.weight == 9
    lru.put("e", "")  # four entries: the oldest (c) goes
    assert list(lru) == ["a", "d", "e"] and lru.weight == 7
    lru.put("big", "x" * 11)  # heavier than the bound on its own: nothing stays
    assert len(lru) == 0 and lru.weight == 0
    lru.put("a", "xx")
    lru.pop("a")
    assert lru.get("a") is None and lru.weight == 0


async def test_sessions_of_a_long_prompt_stay_within_the_budget_and_an_evicted_one_scrubs_the_same():
    body = trajectory(3)[-1]
    sessions = MemorySessionStore()
    protector = build_protector(PrivacySettings(cache_mb=1), database_url="sqlite://", sessions=sessions)
    assert isinstance(protector, PrivacyProtector)
    await protector.start()
    try:
        first = await protector.protect(body, session_id="s0", request_id="r0")
        sent = first.body
        assert "Maria Gonzalez" not in str(sent)  # the step was protected: there is something to cache
        for i in range(1, 8):
            await protector.protect(body, session_id=f"s{i}", request_id=f"r{i}")
            held = protector.cached_bytes()
            assert held["results"] <= 512 * 1024 and held["seen"] <= 512 * 1024, held
        again = await protector.protect(body, session_id="s0", request_id="r-again")  # s0's results went
        assert again.body == sent  # the same placeholders: they live in the session's vault
    finally:
        await asyncio.wait_for(protector.aclose(), 30)
