"""``privacy.response_guard``: what a cloud answer carries that its call never did, through the gateway on loopback
against the recording cloud double. ``redact`` replaces it in JSON answers, in streams on every surface (chat SSE,
Responses events, Messages events) and in tool-call arguments (still valid JSON) — a value split character by
character across events never reaches the client in part — while a value restored from this call's own placeholder
arrives intact and a value the request itself carried is not inbound. ``audit`` changes nothing the client gets and
records each as an inbound finding: type, layer, where — no value — chained, and counted in the session's report and
the dashboard."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from privacy.audit import ChainSigner, PrivacyInbound, overview, to_markdown, verify_trail
from privacy.factory import last_check_detectors
from privacy.guard import AnswerGuard
from privacy.inbound import Carried, InboundScanner
from privacy.restore import Restorer
from privacy.settings import ResponseGuardSettings
from privacy.stream import RestoringStream
from tests.fakes.model_server import Reply, ToolCall
from tests.streams import sse_events

PERSON = "Theodora Vanterpool"
NAME = "[FULL_NAME_001]"  # the first listed name of a fresh session
SSN = "287-65-4321"
EMAIL = "leak.person@example.org"
UNITS = {"items": [{"entity_id": "c-1", "sensitive_fields": [
    {"field": "full_name", "value": PERSON, "dimension": "identity", "weight": 1}]}]}
ANSWER = f"Dear {NAME}, the SSN on file is {SSN}; write to {EMAIL} today."
SEND = {"type": "function", "function": {"name": "send", "parameters": {"type": "object", "properties": {
    "to": {"type": "string"}, "body": {"type": "string"}}}}}
ARGS = json.dumps({"to": EMAIL, "body": f"for {NAME}: SSN {SSN}"})


@pytest.fixture(scope="module")
def redacting(module_gateway):
    return module_gateway(privacy={"layers": {"ner": False}, "response_guard": {"action": "redact"}})


@pytest.fixture(scope="module")
def auditing(module_gateway):
    return module_gateway(privacy={"layers": {"ner": False}, "response_guard": {"action": "audit"}})


def _session(gw, name: str) -> str:
    assert httpx.put(f"{gw.url}/v1/sessions/{name}/units", json=UNITS).status_code == 200
    return name


def _chat_body(*, stream: bool = False, tools: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "ecgw/cloud-only", "stream": stream,
                            "messages": [{"role": "user", "content": f"Write to {PERSON} about the claim."}]}
    if tools:
        body["tools"] = [SEND]
    return body


def _assert_guarded(text: str, arguments: str | None = None) -> None:
    assert PERSON in text  # restored from the call's own placeholder
    assert "[INBOUND_US_SSN]" in text and "[INBOUND_EMAIL_ADDRESS]" in text, text
    for part in ("287", "4321", "leak.person", "example.org"):
        assert part not in text, text
    if arguments is not None:
        args = json.loads(arguments)  # still valid JSON
        assert args == {"to": "[INBOUND_EMAIL_ADDRESS]", "body": f"for {PERSON}: SSN [INBOUND_US_SSN]"}, args


def test_a_json_answer_is_redacted_and_the_restored_name_arrives_intact(redacting, cloud):
    session = _session(redacting, "rg-json")
    cloud.script(Reply(content=ANSWER, tool_calls=[ToolCall("send", ARGS)]))
    response = httpx.post(f"{redacting.base_url}/chat/completions", json=_chat_body(tools=True), timeout=60,
                          headers={"X-Session-Id": session})
    assert response.status_code == 200, response.text
    assert NAME in json.dumps(cloud.requests[-1])  # the name left as its placeholder
    message = response.json()["choices"][0]["message"]
    _assert_guarded(message["content"], message["tool_calls"][0]["function"]["arguments"])


def test_a_value_the_request_carried_is_not_inbound(redacting, cloud):
    session = _session(redacting, "rg-carried")
    body = _chat_body()
    body["messages"][0]["content"] += f" My SSN is {SSN}."  # sent by the client (it leaves as a placeholder)
    cloud.script(Reply(content=f"Noted: {SSN}, and {EMAIL} is new."))  # the cloud writes the value out raw
    response = httpx.post(f"{redacting.base_url}/chat/completions", json=body, timeout=60,
                          headers={"X-Session-Id": session})
    content = response.json()["choices"][0]["message"]["content"]
    assert content == "Noted: 287-65-4321, and [INBOUND_EMAIL_ADDRESS] is new.", content


def _stream(gw, surface: str, body: dict[str, Any], session: str) -> list[tuple[str | None, Any]]:
    with httpx.stream("POST", f"{gw.base_url}/{surface}", json=body, timeout=60,
                      headers={"X-Session-Id": session}) as response:
        assert response.status_code == 200, response.read()
        return sse_events(response)


def _chat_stream(events: list[tuple[str | None, Any]]) -> tuple[str, str]:
    chunks = [data for _, data in events if isinstance(data, dict)]
    deltas = [ch["delta"] for c in chunks for ch in c.get("choices") or ()]
    text = "".join(d.get("content") or "" for d in deltas)
    args = "".join(call["function"].get("arguments") or "" for d in deltas for call in d.get("tool_calls") or ())
    return text, args


def _responses_stream(events: list[tuple[str | None, Any]]) -> tuple[str, str]:
    text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    args = "".join(d["delta"] for n, d in events if n == "response.function_call_arguments.delta")
    return text, args


def _messages_stream(events: list[tuple[str | None, Any]]) -> tuple[str, str]:
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    text = "".join(d.get("text") or "" for d in deltas if d.get("type") == "text_delta")
    args = "".join(d.get("partial_json") or "" for d in deltas if d.get("type") == "input_json_delta")
    return text, args


STREAMS = {
    "chat/completions": (lambda: _chat_body(stream=True, tools=True), _chat_stream),
    "responses": (lambda: {"model": "ecgw/cloud-only", "stream": True, "store": False,
                           "input": f"Write to {PERSON} about the claim.",
                           "tools": [{"type": "function", **SEND["function"]}]}, _responses_stream),
    "messages": (lambda: {"model": "ecgw/cloud-only", "stream": True, "max_tokens": 256,
                          "messages": [{"role": "user", "content": f"Write to {PERSON} about the claim."}],
                          "tools": [{"name": "send", "input_schema": SEND["function"]["parameters"]}]},
                 _messages_stream),
}


@pytest.mark.parametrize("surface", sorted(STREAMS))
def test_a_value_split_character_by_character_never_reaches_the_client_in_part(redacting, cloud, surface):
    session = _session(redacting, f"rg-stream-{surface.split('/')[0]}")
    build, read = STREAMS[surface]
    cloud.script(Reply(content=ANSWER, tool_calls=[ToolCall("send", ARGS)], char_stream=True))
    text, arguments = read(_stream(redacting, surface, build(), session))
    assert NAME in json.dumps(cloud.requests[-1])
    _assert_guarded(text, arguments)


def test_audit_changes_nothing_and_records_inbound_findings_without_values(auditing, cloud):
    session = _session(auditing, "rg-audit")
    cloud.script(Reply(content=ANSWER, tool_calls=[ToolCall("send", ARGS)]),
                 Reply(content=f"Also {SSN}.", char_stream=True))
    response = httpx.post(f"{auditing.base_url}/chat/completions", json=_chat_body(tools=True), timeout=60,
                          headers={"X-Session-Id": session})
    message = response.json()["choices"][0]["message"]
    assert message["content"] == ANSWER.replace(NAME, PERSON)  # audit leaves the answer as it came (restored)
    text, _ = _chat_stream(_stream(auditing, "chat/completions", _chat_body(stream=True), session))
    assert text == f"Also {SSN}."
    report = httpx.get(f"{auditing.url}/v1/sessions/{session}/privacy").json()
    assert report["inbound"] == {
        "total": 5, "calls": 2, "by_action": {"audit": 5},
        "by_type": {"EMAIL_ADDRESS": 2, "US_SSN": 3},
        "by_location": {"choices[0].content": 3, "choices[0].tool_calls[send].arguments": 2}}, report["inbound"]
    assert "inbound (in cloud answers, never sent): 5 in 2 calls" in to_markdown([report])
    seen = _read_audit(auditing, overview)  # what the dashboard's privacy view and sessions table read
    assert {r["session_id"]: r["inbound"] for r in seen["sessions"]}[session] == 5, seen

    def read(engine, _open_body):
        from sqlmodel import Session, select
        with Session(engine) as db:
            rows = [r.model_dump() for r in db.exec(select(PrivacyInbound)
                                                    .where(PrivacyInbound.session_id == session)).all()]
        return rows, verify_trail(engine, ChainSigner(bytes(32)).public)

    rows, trail = _read_audit(auditing, read)
    assert {r["layer"] for r in rows} == {"patterns"} and {r["owner"] for r in rows} == {""}, rows  # single-tenant: no owner
    assert len({r["request_id"] for r in rows}) == 2
    stored = json.dumps(rows)
    assert SSN not in stored and "4321" not in stored and "leak.person" not in stored
    # chained: no record unaccounted for (signatures are checked with the gateway's key elsewhere)
    assert not [b for b in trail.breaks if b.what in ("inserted", "removed", "altered", "reordered")], trail.breaks
    assert trail.entries > 0


def _read_audit(gw, read):
    import asyncio

    async def run():
        return await gw.services.protector.read_audit(read)

    return asyncio.run(run())


def test_off_leaves_answers_alone(module_gateway, cloud):
    gw = module_gateway(privacy={"layers": {"ner": False}})
    cloud.script(Reply(content=f"SSN {SSN}"))
    response = httpx.post(f"{gw.base_url}/chat/completions", json=_chat_body(), timeout=60)
    assert response.json()["choices"][0]["message"]["content"] == f"SSN {SSN}"


# --- the hold-back itself, every split of a few answers --------------------------------------------------------

_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n" \
       "-----END OPENSSH PRIVATE KEY-----"
HELD = [
    ("call +1 415 555 0199 now, or later", "call [INBOUND_PHONE_NUMBER] now, or later"),
    (f"the key is sk-proj-{'a1B2' * 12} ok", "the key is [INBOUND_OPENAI_KEY] ok"),
    (f"here:\n{_KEY}\nthat was it", "here:\n[INBOUND_PRIVATE_KEY]\nthat was it"),
    (f"password: hunter2horse and {PERSON}", f"password: [INBOUND_PASSWORD] and {PERSON}"),
    ("auth eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c done",
     "auth [INBOUND_JWT] done"),  # found only once whole: held as one word
]


def _guarded_stream(pieces: list[str]) -> tuple[str, list[str]]:
    guard = AnswerGuard(ResponseGuardSettings(action="redact", hold_chars=24),
                        InboundScanner(*last_check_detectors()), None, Carried([{"m": PERSON}], []))
    stream = RestoringStream(Restorer({}), guard=guard)
    out = []
    for piece in pieces:
        for chunk in stream.feed({"id": "x", "choices": [{"index": 0, "delta": {"content": piece}}]}):
            out.append(chunk["choices"][0]["delta"].get("content") or "")
    for chunk in stream.flush():
        out.append(chunk["choices"][0]["delta"].get("content") or "")
    return "".join(out), out


@pytest.mark.parametrize(("answer", "redacted"), HELD)
def test_every_split_releases_the_same_redacted_text_and_never_part_of_a_value(answer, redacted):
    whole, _ = _guarded_stream([answer])
    assert whole == redacted
    by_char, pieces = _guarded_stream(list(answer))
    assert by_char == redacted
    for size in (2, 3, 7, 11):
        assert _guarded_stream([answer[i:i + size] for i in range(0, len(answer), size)])[0] == redacted
    assert "".join(pieces[:len(answer)])  # released before the end: the hold-back is a window, not the answer


def test_audit_still_records_a_stream_the_client_cut_short(auditing, cloud):
    session = _session(auditing, "rg-cut")
    cloud.script(Reply(content=f"SSN {SSN} " + "and more " * 300, chunk_delay_s=0.005))
    body = _chat_body(stream=True)
    with httpx.stream("POST", f"{auditing.base_url}/chat/completions", json=body, timeout=60,
                      headers={"X-Session-Id": session}) as response:
        seen = ""
        for line in response.iter_lines():
            if line.startswith("data: {"):
                seen += "".join((c.get("delta") or {}).get("content") or "" for c in json.loads(line[6:])["choices"])
            if SSN in seen:
                break  # the client goes away mid-answer
    for _ in range(100):  # the gateway notices the disconnect on its next write, then records
        report = httpx.get(f"{auditing.url}/v1/sessions/{session}/privacy").json()
        if report["inbound"]["total"]:
            break
        time.sleep(0.05)
    assert report["inbound"]["by_type"] == {"US_SSN": 1}, report["inbound"]
