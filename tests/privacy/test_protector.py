"""The protector on its own: the walk, placeholders, actions, cache, fail closed, audit rows."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select as sa_select
from sqlmodel import Session, select

from privacy.audit import PrivacyCall, PrivacyFinding, PrivacyFindingSet, all_findings
from privacy.errors import PrivacyBlocked, PrivacyUnavailable
from tests.privacy.helpers import protector, strings_of, units_document

AGENT_BODY = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "You assist Maria Gonzalez. Workspace /home/agent/ws; API at http://127.0.0.1:8801"},
        {"role": "user", "content": [{"type": "text", "text": "Send the invoice to maria.gonzalez@acme-mail.com"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "crm_lookup", "arguments": json.dumps({"phone": "(415) 555-0132", "ticket": "JIRA-4821"})}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "crm_lookup", "content": json.dumps(
            {"customer": {"full_name": "Maria Gonzalez", "id_card": "11010519491231002X",
                          "notes": "AWS key AKIAIOSFODNN7EXAMPLE"}, "phone": 4155550132})},
    ],
    "tools": [{"type": "function", "function": {"name": "crm_lookup", "description": "Look up Maria Gonzalez",
                                                "parameters": {"type": "object", "properties": {}}}}],
}
RAW = ["Maria Gonzalez", "maria.gonzalez@acme-mail.com", "555-0132", "4155550132", "11010519491231002X",
       "AKIAIOSFODNN7EXAMPLE"]


async def test_walk_scrubs_every_part_and_keeps_what_the_agent_needs():
    p = protector()
    await p.register_units("s", units_document())
    result = await p.scrub(AGENT_BODY, session_id="s")
    sent = strings_of(result.body)
    for raw in RAW:
        assert raw not in sent
    for kept in ("/home/agent/ws", "http://127.0.0.1:8801", "JIRA-4821", "crm_lookup"):
        assert kept in sent
    args = json.loads(result.body["messages"][2]["tool_calls"][0]["function"]["arguments"])
    assert set(args) == {"phone", "ticket"} and args["phone"] == "[PHONE_001]"
    locations = {a.finding.location for a in result.applied}
    assert "messages[2].tool_calls[0].arguments.phone" in locations
    assert "messages[3].content.customer.id_card" in locations
    assert "messages[3].content.phone" in locations  # a number in JSON
    assert "tools[0].description" in locations
    assert AGENT_BODY["messages"][0]["content"].startswith("You assist Maria")  # the caller's body is untouched


async def test_placeholders_are_stable_per_session_and_distinct_across_sessions():
    p = protector()
    first = await p.scrub({"messages": [{"role": "user", "content": "mail ann@x.org and bob@y.org"}]},
                          session_id="a")
    again = await p.scrub({"messages": [{"role": "user", "content": "now bob@y.org, then ann@x.org"}]},
                          session_id="a")
    assert first.body["messages"][0]["content"] == "mail [EMAIL_ADDRESS_001] and [EMAIL_ADDRESS_002]"
    assert again.body["messages"][0]["content"] == "now [EMAIL_ADDRESS_002], then [EMAIL_ADDRESS_001]"
    other = await p.scrub({"messages": [{"role": "user", "content": "bob@y.org"}]}, session_id="b")
    assert other.body["messages"][0]["content"] == "[EMAIL_ADDRESS_001]"


async def test_same_phone_three_ways_gets_one_placeholder():
    p = protector(layers={"ner": False})
    text = "call +1 415 555 0132, (415) 555-0132 or 415.555.0132"
    result = await p.scrub({"messages": [{"role": "user", "content": text}]}, session_id="s")
    assert result.body["messages"][0]["content"] == "call [PHONE_NUMBER_001], [PHONE_NUMBER_001] or [PHONE_NUMBER_001]"


async def test_actions_mask_audit_block():
    body = {"messages": [{"role": "user", "content": "mail ann@x.org from 81.2.69.160, SSN 123-45-6789"}]}
    p = protector(layers={"ner": False}, actions={"EMAIL_ADDRESS": "mask", "IP_ADDRESS": "audit"})
    result = await p.scrub(body, session_id="s")
    assert result.body["messages"][0]["content"] == "mail [EMAIL_ADDRESS] from 81.2.69.160, SSN [US_SSN_001]"
    assert {(a.finding.type, a.action) for a in result.applied} == {
        ("EMAIL_ADDRESS", "mask"), ("IP_ADDRESS", "audit"), ("US_SSN", "pseudonymise")}
    with pytest.raises(PrivacyBlocked):
        await protector(layers={"ner": False}, actions={"US_SSN": "block"}).scrub(body, session_id="s")


async def test_image_parts_block_by_default_and_pass_when_configured():
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "what is this"},
                                                      {"type": "image_url", "image_url": {"url": "data:x"}}]}]}
    with pytest.raises(PrivacyBlocked, match="image_url"):
        await protector().scrub(body, session_id="s")
    result = await protector(images="pass", layers={"ner": False}).scrub(body, session_id="s")
    assert result.body["messages"][0]["content"][1]["image_url"]["url"] == "data:x"


async def test_detection_runs_once_per_content(monkeypatch):
    p = protector(layers={"ner": False})
    calls = []
    real = p._scrubber.detect

    def counting(prepared, matcher, *, scope, profile, meter):
        calls.append(len(prepared))
        return real(prepared, matcher, scope=scope, profile=profile, meter=meter)

    monkeypatch.setattr(p._scrubber, "detect", counting)
    history = [{"role": "user", "content": f"step {i}: mail user{i}@x.org"} for i in range(3)]
    await p.scrub({"messages": history[:2]}, session_id="s")
    await p.scrub({"messages": history}, session_id="s")
    assert calls == [2, 1]  # the second step scanned only the new message


async def test_registering_units_rescans():
    p = protector(layers={"ner": False})
    body = {"messages": [{"role": "user", "content": "salary 38500"}]}
    assert (await p.scrub(body, session_id="s")).body == body
    await p.register_units("s", units_document())
    assert (await p.scrub(body, session_id="s")).body["messages"][0]["content"] == "salary [SALARY_001]"


class Broken:
    def find(self, text):
        raise RuntimeError("detector crashed")


async def test_a_broken_detector_fails_closed():
    p = protector(layers={"ner": False})
    p._scrubber._detector._patterns = Broken()
    with pytest.raises(PrivacyUnavailable, match="detector crashed"):
        await p.protect({"messages": [{"role": "user", "content": "hi"}]}, session_id="s", request_id="r")


async def test_on_privacy_error_edge_keeps_the_step_local():
    p = protector(layers={"ner": False}, on_privacy_error="edge")
    p._scrubber._detector._secrets = Broken()
    with pytest.raises(PrivacyBlocked, match="detector crashed"):
        await p.protect({"messages": [{"role": "user", "content": "hi"}]}, session_id="s", request_id="r")


async def test_audit_rows_hold_hashes_never_values():
    p = protector()
    await p.register_units("s", units_document())
    protection = await p.protect(AGENT_BODY, session_id="s", request_id="req-1")
    protection.restore({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2}})
    p.flush()
    engine = p._audit.store.engine
    with Session(engine) as db:
        call = db.exec(select(PrivacyCall)).one()
        findings = db.connection().execute(sa_select(all_findings())).all()  # a call's own rows and its sets'
    assert call.request_id == "req-1" and call.prompt_tokens == 10 and call.findings == len(findings)
    # the JSON key inside the arguments is hashed: object keys may themselves be private (an e-mail as a key)
    phone = [f for f in findings if f.location.startswith("messages[2].tool_calls[0].arguments.#")
             and f.unit_id == "cust-7.phone"]
    assert phone[0].unit_id == "cust-7.phone" and phone[0].dimension == "contact" and len(phone[0].value_hash) == 32
    dump = " ".join(str(f._mapping) for f in findings) + call.body
    for raw in RAW:
        assert raw not in dump


async def test_a_repeated_prefix_keeps_its_audit_rows_and_hashes_its_values_once():
    """Each call still records every finding of its body, the repeated prefix's as well, with the same rows a fresh
    build gives; but the prefix's values are hashed (and its locations made safe) once per session, not per call,
    and its rows are written once (a finding set each call references), not at every call."""
    p = protector()
    hashed: list[str] = []
    hasher = p._hasher

    def counting(value: str) -> str:
        hashed.append(value)
        return hasher(value)

    p._hasher = counting
    first = {"messages": [{"role": "system", "content": "You assist Maria Gonzalez (maria.gonzalez@acme-mail.com)."},
                          {"role": "user", "content": "Mail bob@y.org"}]}
    second = {"messages": [*first["messages"], {"role": "user", "content": "and ann@x.org"}]}
    await p.protect(first, session_id="s", request_id="r1")
    p.flush()
    before = len(hashed)
    await p.protect(second, session_id="s", request_id="r2")
    p.flush()
    assert sorted(hashed[before:]) == ["ann@x.org"]  # only the new message's finding
    with Session(p._audit.store.engine) as db:
        calls = {c.request_id: c for c in db.exec(select(PrivacyCall))}
        rows = db.connection().execute(sa_select(all_findings())).all()
        written = len(db.exec(select(PrivacyFinding)).all()) + len(db.exec(select(PrivacyFindingSet)).all())

    def of(request_id: str) -> list[tuple[object, ...]]:
        return sorted((f.location, f.type, f.layer, f.action, f.value_hash, f.session_id)
                      for f in rows if f.call_id == calls[request_id].id)

    assert len(of("r2")) == len(of("r1")) + 1 == calls["r2"].findings
    assert set(of("r1")) < set(of("r2"))  # the prefix's rows, equal to the first call's
    assert ("messages[2].content", "EMAIL_ADDRESS", "patterns", "pseudonymise", hasher("ann@x.org"), "s") in of("r2")
    assert written == len(of("r2"))  # every finding once: the first call's sets are the second's too
