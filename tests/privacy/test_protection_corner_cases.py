"""Defects a review found in the privacy layer, each pinned by a test that fails without its fix."""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.state.sessions import MemorySessionStore
from privacy.errors import PrivacyBlocked
from privacy.factory import build_protector
from privacy.restore import Restorer
from privacy.settings import PrivacySettings
from privacy.stream import RestoringStream


def _protector(**settings: Any) -> Any:
    base: dict[str, Any] = {"layers": {"ner": False}}
    base.update(settings)
    return build_protector(PrivacySettings(**base), database_url="sqlite://", sessions=MemorySessionStore())


def _user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def test_a_blocked_step_does_not_leave_unsaved_placeholders_in_the_cache():
    protector = _protector(actions={"AWS_ACCESS_KEY": "block"})
    blocked = {"messages": [{"role": "user", "content": "mail alice@example.com"},
                            {"role": "user", "content": "key AKIAIOSFODNN7EXAMPLE"}]}
    try:
        await protector.scrub(blocked, session_id="s")
    except PrivacyBlocked:
        pass
    later = await protector.scrub({"messages": [{"role": "user", "content": "mail bob@example.org"},
                                                {"role": "user", "content": "mail alice@example.com"}]},
                                  session_id="s")
    first, second = (m["content"] for m in later.body["messages"])
    assert first.split()[-1] != second.split()[-1]  # two values, two placeholders
    assert set(later.values.values()) == {"alice@example.com", "bob@example.org"}


async def test_concurrent_steps_of_one_session_get_distinct_placeholders():
    protector = _protector()
    pad = " filler" * 600  # over the inline limit: detection runs on a thread, so the two interleave
    a, b = await asyncio.gather(protector.scrub(_user("alice@example.com" + pad), session_id="s"),
                                protector.scrub(_user("bob@example.org" + pad), session_id="s"))
    placeholders = {a.body["messages"][0]["content"].split()[0], b.body["messages"][0]["content"].split()[0]}
    assert len(placeholders) == 2
    assert set(b.values.values()) | set(a.values.values()) == {"alice@example.com", "bob@example.org"}


async def test_short_listed_numbers_are_protected_inside_json():
    protector = _protector()
    await protector.units.register("s", _units("salary", "38500"))
    scrubbed = await protector.scrub({"messages": [{"role": "tool", "tool_call_id": "c",
                                                    "content": '{"salary": 38500, "year": 2026}'}]},
                                     session_id="s")
    content = scrubbed.body["messages"][0]["content"]
    assert "38500" not in content and "2026" in content


def _units(field: str, value: str) -> Any:
    from privacy.detect import UnitsDocument

    return UnitsDocument.model_validate({"items": [{"entity_id": "e1", "name": "employee", "sensitive_fields": [
        {"field": field, "value": value, "dimension": "financial", "weight": 1.0}]}]})


def test_the_last_chunk_with_text_and_finish_reason_keeps_the_order():
    stream = RestoringStream(Restorer({"[EMAIL_ADDRESS_001]": "alice@example.com"}))

    def chunk(text: str, finish: str | None = None) -> dict[str, Any]:
        return {"id": "x", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}

    def text_of(chunks: list[dict[str, Any]]) -> str:
        return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))

    out = stream.feed(chunk("Write to [EMAIL_ADD")) + stream.feed(chunk("RESS_001] today", "stop")) + stream.flush()
    assert text_of(out) == "Write to alice@example.com today"
    # cut off by max_tokens in the middle of a placeholder: the held tail still comes last
    cut = RestoringStream(Restorer({"[EMAIL_ADDRESS_001]": "alice@example.com"}))
    out = cut.feed(chunk("Write to ")) + cut.feed(chunk("the user at [EMAIL_ADDR", "length")) + cut.flush()
    assert text_of(out) == "Write to the user at [EMAIL_ADDR"


async def test_a_refusal_part_in_history_is_text_not_an_image():
    protector = _protector()
    body = {"messages": [{"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't do that."}]},
                         {"role": "user", "content": "ok"}]}
    scrubbed = await protector.scrub(body, session_id="s")
    assert scrubbed.body["messages"][0]["content"][0]["refusal"] == "I can't do that."


async def test_json_nested_deeper_than_the_parser_goes_is_scanned_as_text():
    """A message or tool arguments holding JSON nested thousands deep (valid or cut off) failed the step with 503
    ``RecursionError`` in every layer that reads JSON; it is read as text, and what stands in it is still found."""
    p = _protector()
    for text in ('{"a":' * 3000 + ' "PIN: 4921"', "[" * 5000 + '"PIN: 4921"' + "]" * 5000):
        scrubbed = await p.scrub(_user(text), session_id="deep")
        assert "4921" not in str(scrubbed.body)
        call = {"messages": [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": text}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}
        scrubbed = await p.scrub(call, session_id="deep-args")
        assert "4921" not in str(scrubbed.body)
