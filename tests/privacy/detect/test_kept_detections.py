"""Detections kept in the session store (``privacy.kept``): another gateway on the same store — a restart, a
replica — does not scan again a long text a session of the same owner sent; another owner's does; erasure, another
profile, other detectors and a corrupt entry all mean a scan. Real spaCy and presidio's types, real SQLite (and Redis
when ``ECGW_TEST_REDIS_URL`` is set); the assertions read the detectors' counters, never the time."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.state.sessions import SQLiteSessionStore
from privacy.factory import build_detector, build_privacy_protector
from privacy.kept import KEEP_MIN_CHARS
from privacy.protector import PrivacyProtector
from privacy.scrubber import prepare
from privacy.session_store import SessionStore
from privacy.settings import PrivacySettings
from tests.real_parts import redis_url

_PEOPLE = [("Maria Gonzalez", "Berlin"), ("Farid Okafor", "Shanghai"), ("Ines Kowalski", "Austin"),
           ("Grace Nakamura", "Lisbon"), ("Jonas Berg", "Oslo")]
SYSTEM = "You are the account team's assistant. Be brief and polite.\n" + "\n".join(
    f"- Customer {i}: {name} lives in {city}; write to {name.split()[0].lower()}.{i}@acme-mail.example or call "
    f"+1 415-555-{1000 + i:04d}. Renewal is due next quarter and they prefer email." for i in range(40)
    for name, city in [_PEOPLE[i % len(_PEOPLE)]])
assert len(SYSTEM) > KEEP_MIN_CHARS


def _body(user: str = "Summarise the renewals for me.") -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]}


Opener = Callable[[], SessionStore]


@pytest.fixture(params=["sqlite", "redis"])
async def opener(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens the same store again, as another gateway process (a restart, a replica) would."""
    opened: list[SessionStore] = []
    if request.param == "redis":
        from gateway.state.redis_sessions import RedisSessionStore

        url = redis_url()

        def open_store() -> SessionStore:
            opened.append(RedisSessionStore(url))
            return opened[-1]
    else:
        path = str(tmp_path / "sessions.db")

        def open_store() -> SessionStore:
            opened.append(SQLiteSessionStore(path))
            return opened[-1]
    yield open_store
    for store in opened:
        await store.aclose()


def _gateway(store: SessionStore, key: bytes, **settings: Any) -> PrivacyProtector:
    """A gateway's protector with its own detector (its own in-process caches), as a fresh process has."""
    config = PrivacySettings(last_check=False, **settings)
    return build_privacy_protector(config, database_url=None, sessions=store, hash_key=key,
                                   detector=build_detector(config), scope_of=lambda sid: sid.split("/")[0])


def _scanned(protector: PrivacyProtector) -> int:
    return protector._scrubber._detector.scanned


@pytest.fixture
def key() -> bytes:
    return secrets.token_bytes(32)  # the deployment's key: every run its own entries, in a shared Redis too


@pytest.fixture
def alice() -> str:
    return f"alice-{secrets.token_hex(4)}"  # an owner of this run's own: its sessions are new in a shared Redis


async def test_another_gateway_on_the_same_store_does_not_scan_a_prompt_the_owner_sent(opener: Opener, key: bytes, alice: str):
    first = _gateway(opener(), key)
    sent = await first.scrub(_body(), session_id=f"{alice}/s1")
    assert _scanned(first) == 2  # the system prompt and the user's message
    assert "Maria Gonzalez" not in sent.body["messages"][0]["content"]

    restarted = _gateway(opener(), key)
    again = await restarted.scrub(_body(), session_id=f"{alice}/s2")
    assert _scanned(restarted) == 1  # the user's message only: the system prompt's detections were kept
    assert again.body == sent.body and again.values == sent.values  # what a scan gives, placeholders included


async def test_another_owner_scans_the_same_prompt(opener: Opener, key: bytes, alice: str):
    await _gateway(opener(), key).scrub(_body(), session_id=f"{alice}/s1")
    other = _gateway(opener(), key)
    ner = other._scrubber._detector._ner
    assert ner is not None
    read = ner.analysed
    await other.scrub(_body(), session_id=f"bob-{secrets.token_hex(4)}/s1")  # NER's own cache: a new scope
    assert _scanned(other) == 2 and ner.analysed > read  # NER ran over bob's copy: no answer from alice's entry


async def test_erasing_the_sessions_that_used_an_entry_removes_it(opener: Opener, key: bytes, alice: str):
    first = _gateway(opener(), key)
    await first.scrub(_body(), session_id=f"{alice}/s1")
    second = _gateway(opener(), key)
    await second.scrub(_body(), session_id=f"{alice}/s2")  # read from the store: s2 is named by the entry too
    store = opener()
    listed = await store.get(f"{alice}/s1", "kept-detections")
    assert isinstance(listed, list) and len(listed) == 1
    entry = listed[0]
    assert sorted((await store.get(entry, "found"))["users"]) == [f"{alice}/s1", f"{alice}/s2"]

    await first.erase_session(f"{alice}/s1")
    assert (await store.get(entry, "found"))["users"] == [f"{alice}/s2"]  # s2 still sends that text
    await second.erase_session(f"{alice}/s2")
    assert await store.get(entry, "found") is None
    assert await store.get(f"{alice}/s2", "kept-detections") is None
    third = _gateway(opener(), key)
    await third.scrub(_body(), session_id=f"{alice}/s3")
    assert _scanned(third) == 2


async def test_another_profile_or_other_detectors_miss(opener: Opener, key: bytes, alice: str):
    await _gateway(opener(), key).scrub(_body(), session_id=f"{alice}/s1")
    strict = _gateway(opener(), key)
    await strict.scrub(_body(), session_id=f"{alice}/s2", profile="strict")
    assert _scanned(strict) == 2
    changed = _gateway(opener(), key, ner={"max_segment_chars": 3000})  # another detectors' version
    before = _gateway(opener(), key).kept
    assert changed.kept is not None and before is not None and changed.kept._version != before._version
    await changed.scrub(_body(), session_id=f"{alice}/s3")
    assert _scanned(changed) == 2


@pytest.mark.parametrize("corrupt", [
    lambda entry: {**entry, "targets": [[["PERSON", 0, 10 ** 7, "ner", 0.85, None, None]]]},  # offsets past the text
    lambda entry: {**entry, "targets": [[[row[0], row[1], row[2], row[3], row[4], "0" * 24, row[6]]
                                         for row in entry["targets"][0]]]},  # vault keys that do not check
    lambda entry: {**entry, "targets": "garbage"},
    lambda entry: ["not", "an", "entry"],
])
async def test_a_corrupt_entry_is_scanned_again(opener: Opener, key: bytes, alice: str, corrupt: Callable[[Any], Any]):
    sent = await _gateway(opener(), key).scrub(_body(), session_id=f"{alice}/s1")
    store = opener()
    [entry] = await store.get(f"{alice}/s1", "kept-detections")
    await store.set(entry, "found", corrupt(await store.get(entry, "found")))
    restarted = _gateway(opener(), key)
    again = await restarted.scrub(_body(), session_id=f"{alice}/s2")
    assert _scanned(restarted) == 2
    assert again.body == sent.body


async def test_what_is_kept_holds_no_value(opener: Opener, key: bytes, alice: str):
    sent = await _gateway(opener(), key).scrub(_body(), session_id=f"{alice}/s1")
    store = opener()
    [entry] = await store.get(f"{alice}/s1", "kept-detections")
    stored = repr(await store.get(entry, "found"))
    assert sent.values  # values were found and replaced …
    for value in sent.values.values():  # … and none of them, nor a phone's canonical key, is in the entry
        assert value not in stored and value.replace(" ", "").replace("-", "") not in stored


async def test_an_entry_past_retention_is_scanned_again_and_goes(opener: Opener, key: bytes, alice: str):
    await _gateway(opener(), key, retention_days=1).scrub(_body(), session_id=f"{alice}/s1")
    store = opener()
    [entry] = await store.get(f"{alice}/s1", "kept-detections")
    await store.update(entry, "found", lambda stored: {**stored, "at": stored["at"] - 2 * 86400})  # written 2 days ago
    later = _gateway(opener(), key, retention_days=1)
    assert later.kept is not None
    assert await later.kept.recall(alice, later._scrubber._slot(prepare(SYSTEM, "text"), False, "balanced"),
                                   f"{alice}/s2") is None
    assert await store.get(entry, "found") is None  # gone at its read
    await later.scrub(_body(), session_id=f"{alice}/s2")
    assert _scanned(later) == 2
    assert (await store.get(entry, "found"))["users"] == [f"{alice}/s2"]  # kept again, for the session that sent it now
