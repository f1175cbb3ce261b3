"""Detections are shared across sessions by content; placeholders still come from each session's own vault."""

from __future__ import annotations

from gateway.state.sessions import MemorySessionStore
from privacy.detect import Finding, LayeredDetector, PatternDetector, UnitsDocument
from privacy.factory import build_privacy_protector
from privacy.settings import LayerSettings, PrivacySettings

SYSTEM = "You help Maria. Her phone is 415-555-0132 and her email is maria.gonzalez@acme-mail.com."


class CountingPatterns:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self._inner = PatternDetector()

    def find(self, text: str) -> list[Finding]:
        self.texts.append(text)
        return self._inner.find(text)


def _protector(patterns: CountingPatterns):
    layers = LayerSettings(ner=False)
    detector = LayeredDetector(layers, secrets=PatternDetector(), patterns=patterns, ner=None)
    return build_privacy_protector(PrivacySettings(layers=layers, last_check=False), database_url=None,
                                   sessions=MemorySessionStore(), detector=detector)


def _body(user: str) -> dict:
    return {"model": "m", "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]}


async def test_a_system_prompt_another_session_sent_is_not_scanned_again():
    patterns = CountingPatterns()
    p = _protector(patterns)
    first = await p.scrub(_body("email me"), session_id="a")
    scans = patterns.texts.count(SYSTEM)
    second = await p.scrub(_body("call me"), session_id="b")
    assert scans == 1 and patterns.texts.count(SYSTEM) == 1
    assert first.body["messages"][0]["content"] == second.body["messages"][0]["content"]
    assert "415-555-0132" not in second.body["messages"][0]["content"]


async def test_placeholders_come_from_each_sessions_vault():
    patterns = CountingPatterns()
    p = _protector(patterns)
    a = await p.scrub({"model": "m", "messages": [{"role": "user", "content": "bob@example.org"},
                                                  {"role": "user", "content": SYSTEM}]}, session_id="a")
    b = await p.scrub(_body("hi"), session_id="b")
    # session a numbered bob's email first; session b's first email is Maria's: both [EMAIL_ADDRESS_001]
    assert a.values["[EMAIL_ADDRESS_001]"] == "bob@example.org"
    assert b.values["[EMAIL_ADDRESS_001]"] == "maria.gonzalez@acme-mail.com"


async def test_listed_units_of_one_session_do_not_leak_into_anothers_detections():
    patterns = CountingPatterns()
    p = _protector(patterns)
    await p.register_units("a", UnitsDocument.model_validate({"items": [{"entity_id": "e", "sensitive_fields": [
        {"field": "codename", "value": "Project Bluefin"}]}]}))
    text = "Status of Project Bluefin?"
    a = await p.scrub({"model": "m", "messages": [{"role": "user", "content": text}]}, session_id="a")
    b = await p.scrub({"model": "m", "messages": [{"role": "user", "content": text}]}, session_id="b")
    assert "Project Bluefin" not in a.body["messages"][0]["content"]
    assert b.body["messages"][0]["content"] == text


async def test_a_value_split_across_a_cached_message_and_a_new_one_still_keeps_the_step_home():
    """The last check caches each message's scan by content; the seam to the next message is checked anyway."""
    import pytest

    from privacy.errors import PrivacyBlocked
    from tests.privacy.helpers import protector

    p = protector(database_url=None, layers={"units": False, "secrets": False, "patterns": False, "ner": False})
    first = {"model": "m", "messages": [{"role": "user", "content": "my card is 4929 1034"}]}
    await p.scrub(first, session_id="s")  # alone it is no card: it leaves, and its scan is cached
    second = {"model": "m", "messages": [*first["messages"], {"role": "user", "content": "5532 8817 thanks"}]}
    with pytest.raises(PrivacyBlocked):
        await p.scrub(second, session_id="s")


async def test_the_last_checks_vault_search_is_per_session_though_the_message_scan_is_shared():
    """A value session a found (after a label) is replaced wherever it appears in a's later steps; session b never
    found it, and the cached scan of the same message must not bring a's vault into b's step."""
    import json

    from tests.privacy.helpers import protector

    p = protector(database_url=None, layers={"ner": False})
    labelled = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": "passport no.: E48213377"}]}
    bare = {"model": "m", "messages": [{"role": "user", "content": "check E48213377 against the file"}]}
    await p.scrub(labelled, session_id="a")
    a = await p.scrub(bare, session_id="a")
    b = await p.scrub(bare, session_id="b")
    assert "E48213377" not in json.dumps(a.body) and a.values
    assert b.body["messages"][0]["content"] == "check E48213377 against the file" and not b.values
    # A long message (a system prompt: its searches are remembered by content) is searched per session as well.
    long = {"model": "m", "messages": [{"role": "system", "content": "notes " * 500 + "E48213377 on file"}]}
    for _ in range(2):
        assert "E48213377" not in json.dumps((await p.scrub(long, session_id="a")).body)
        assert "E48213377" in (await p.scrub(long, session_id="b")).body["messages"][0]["content"]
