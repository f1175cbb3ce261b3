"""The edge-model detector layer (``privacy.detect.edge_detector``): verbatim spans only, cached by content, off by default,
fail closed (or skip) when the edge is down, and through a real gateway a value only the edge model finds never
reaches the cloud. SmolLM2 on llama-cpp is the real model; its answers are not deterministic enough to assert a
span, so the gateway test uses a loopback edge double that speaks the chat-completions wire format."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from gateway.state.sessions import MemorySessionStore
from privacy.detect import DetectionError, EdgeEndpoint, EdgeSpanLister, HttpEdgeChat, spans_in
from privacy.factory import build_detector, build_privacy_protector
from privacy.settings import EdgeDetectorSettings, PrivacySettings
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer
from tests.real_parts import llama_url

LOCKER = "Kestrel-4471"  # no pattern, label or NER layer finds it (asserted below)
PROSE = f"Ship the parcel to the locker code {LOCKER} before noon."
TYPES = {"PERSON", "LOCATION", "EMAIL_ADDRESS", "PHONE_NUMBER", "NATIONAL_ID", "PASSPORT", "ACCOUNT_NUMBER",
         "IBAN_CODE", "CREDIT_CARD", "PASSWORD", "DATE_OF_BIRTH", "AMOUNT", "PII"}
SEGMENTS = ["Please email Johanna Lindqvist at the Uppsala office about her contract renewal.",
            "Call Rafael Moreno on 0612 345 678 when the shipment for Calle Mayor 12, Madrid arrives.",
            "Summarise the failing tests in the report and suggest a fix.",
            "The vault password for Priya Raman is Marigold-77 and her account is 40-11-92 31926819."]


def closed_port_url() -> str:
    """A loopback URL where nothing listens: the edge is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class Counting:
    """The real HTTP chat, counted: how many requests actually left for the edge."""

    def __init__(self, chat: HttpEdgeChat) -> None:
        self.chat = chat
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, str]]) -> str:
        with self._lock:
            self.calls += 1
        return self.chat(messages)


def _smollm2(**settings: Any) -> tuple[EdgeSpanLister, Counting]:
    config = EdgeDetectorSettings(enabled=True, timeout_s=120, **settings)
    chat = Counting(HttpEdgeChat(EdgeEndpoint(llama_url(), "smollm2"), config))
    return EdgeSpanLister(chat, config), chat


# --- the answer contract, on answers written out -------------------------------------------------------------

def test_only_verbatim_spans_are_kept_and_typed():
    segment = "Ask Maria Gonzalez to call 415 555 0132."
    answer = ('Sure! {"spans": [{"type": "name", "text": "Maria Gonzalez"}, {"type": "PHONE", "text": "415-555-0132"},'
              ' {"type": "PERSON", "text": "Maria Gonzales"}, {"type": "misc", "text": " 415 555 0132 "},'
              ' {"type": "PERSON", "text": "call"}, "junk", {"text": 7}]}')
    parsed = spans_in(answer, segment)
    assert [(e.type, e.value) for e in parsed.spans] == [("PERSON", "Maria Gonzalez"), ("PII", "415 555 0132")]
    assert parsed.rejected == 5 and not parsed.junk  # a reformatted phone, a misspelt name, a plain word, 2 malformed


def test_an_html_escaped_answer_is_read_unescaped():
    """llama-cpp's chatml-function-calling template escapes the few-shot answers, and SmolLM2 answers in kind."""
    answer = '{&#34;spans&#34;: [{&#34;type&#34;: &#34;PASSWORD&#34;, &#34;text&#34;: &#34;Marigold-77&#34;}]}'
    parsed = spans_in(answer, "The vault password is Marigold-77.")
    assert [(e.type, e.value) for e in parsed.spans] == [("PASSWORD", "Marigold-77")] and not parsed.junk


@pytest.mark.parametrize("answer", ["", "I cannot help with that.", '{"spans": [{"type": "PERSON", "text": ',
                                    '{"names": ["Maria"]}', "[1, 2", "null"])
def test_an_answer_that_is_not_the_json_asked_for_finds_nothing(answer):
    parsed = spans_in(answer, "Ask Maria Gonzalez.")
    assert parsed.spans == [] and parsed.junk


# --- SmolLM2 on llama-cpp ------------------------------------------------------------------------------------

@pytest.mark.real_model
def test_smollm2_spans_are_verbatim_and_typed():
    lister, chat = _smollm2()
    found = lister.entities(SEGMENTS)
    assert chat.calls == len(SEGMENTS) and lister.stats.calls == len(SEGMENTS)
    for segment, entities in zip(SEGMENTS, found, strict=True):
        for entity in entities:
            assert entity.value in segment and entity.type in TYPES
    assert lister.stats.spans == sum(len(e) for e in found)


@pytest.mark.real_model
def test_smollm2_cut_short_is_junk_and_finds_nothing():
    """Four tokens of JSON and no more: the real model's answer is cut mid-object. No crash, nothing found."""
    lister, chat = _smollm2(max_tokens=4)
    assert lister.entities(SEGMENTS[:2]) == [[], []]
    assert chat.calls == 2 and lister.stats.junk == 2


@pytest.mark.real_model
def test_smollm2_answers_are_cached_by_content():
    lister, chat = _smollm2()
    first = lister.entities([SEGMENTS[0], SEGMENTS[1]])
    again = lister.entities([SEGMENTS[1], SEGMENTS[0], SEGMENTS[0]])
    assert chat.calls == 2 and lister.stats.cached == 2  # asked once per distinct segment
    assert again == [first[1], first[0], first[0]]


@pytest.mark.real_model
def test_smollm2_through_the_protector_only_replaces_verbatim_text():
    settings = PrivacySettings(edge_detector={"enabled": True, "timeout_s": 120}, last_check=False)
    lister, _ = _smollm2()
    protector = build_privacy_protector(settings, database_url=None, sessions=MemorySessionStore(),
                                        detector=build_detector(settings, lister=lister))
    body = {"messages": [{"role": "user", "content": s} for s in SEGMENTS]}
    result = asyncio.run(protector.scrub(body, session_id="s"))
    scrubbed = result.body
    assert lister.stats.calls >= 1
    for finding in (a.finding for a in result.applied if a.finding.layer == "edge"):
        assert finding.value in json.dumps(body, ensure_ascii=False) and finding.type in TYPES
        assert finding.value not in json.dumps(scrubbed, ensure_ascii=False)


# --- off by default, and the edge down --------------------------------------------------------------------------

def _scrub(protector: Any, text: str) -> str:
    body = {"messages": [{"role": "user", "content": text}]}
    return str(asyncio.run(protector.scrub(body, session_id="s")).body["messages"][0]["content"])


def test_off_by_default():
    assert PrivacySettings().edge_detector.enabled is False


def test_edge_down_fails_closed_by_default():
    settings = PrivacySettings(edge_detector={"enabled": True, "timeout_s": 5}, last_check=False)
    protector = build_privacy_protector(settings, database_url=None, sessions=MemorySessionStore(),
                                        edge=EdgeEndpoint(closed_port_url(), "smollm2"))
    with pytest.raises(DetectionError, match="edge model"):
        _scrub(protector, PROSE)


def test_edge_down_with_skip_finds_nothing_there_and_asks_again_next_time():
    settings = PrivacySettings(edge_detector={"enabled": True, "timeout_s": 5, "on_error": "skip"},
                               last_check=False, cache_entries=1)
    config = settings.edge_detector
    chat = Counting(HttpEdgeChat(EdgeEndpoint(closed_port_url(), "smollm2"), config))
    lister = EdgeSpanLister(chat, config)
    protector = build_privacy_protector(settings, database_url=None, sessions=MemorySessionStore(),
                                        detector=build_detector(settings, lister=lister))
    assert _scrub(protector, PROSE) == PROSE  # the other layers ran; this one found nothing
    assert _scrub(protector, "Another request to Olivia Brandt, so the shared cache forgets the first.")
    assert _scrub(protector, PROSE) == PROSE
    assert chat.calls == 3 and lister.stats.failed == 3  # a failure is not cached as "nothing found"


def test_enabled_without_any_edge_is_a_configuration_error():
    with pytest.raises(ValueError, match="edge_detector"):
        build_detector(PrivacySettings(edge_detector={"enabled": True}))


# --- through a real gateway, with a deterministic edge double ---------------------------------------------------

def _lists_the_locker(body: dict[str, Any]) -> Reply:
    """Finds the locker code, plus a span that is not in the text (which must be ignored)."""
    segment = body["messages"][-1]["content"]
    spans = [{"type": "PASSWORD", "text": LOCKER}, {"type": "PERSON", "text": "Kestrel Jones"}] \
        if LOCKER in segment else []
    return Reply(content=json.dumps({"spans": spans}))


@pytest.fixture()
def edge_double() -> Iterator[ModelServer]:
    fake = ModelServer("edge", model="edge-model", responder=_lists_the_locker)
    with ThreadedServer(fake.app) as server:
        fake.url = server.url  # type: ignore[attr-defined]
        yield fake


def _ask(gw: Any, session: str) -> None:
    client = openai.OpenAI(base_url=gw.base_url, api_key="k", default_headers={"X-Session-Id": session},
                           max_retries=0)
    client.chat.completions.create(model="ecgw/cloud-only", messages=[{"role": "user", "content": PROSE}])


def test_a_value_only_the_edge_model_finds_never_reaches_the_cloud(start_gateway, cloud, edge_double):
    edge = {"base_url": edge_double.url + "/v1"}  # type: ignore[attr-defined]
    off = start_gateway(edge=edge)
    _ask(off, "off")
    assert LOCKER in json.dumps(cloud.requests)  # no other layer finds it: the layer below is what protects it
    assert edge_double.requests == []  # off by default: the edge model is not asked at all
    cloud.reset()
    on = start_gateway(edge=edge, privacy={"edge_detector": {"enabled": True}})
    _ask(on, "on")
    sent = json.dumps(cloud.requests)
    assert LOCKER not in sent and "[PASSWORD_001]" in sent
    asked = [r["messages"][-1]["content"] for r in edge_double.requests]
    assert asked == [PROSE] and edge_double.requests[0]["model"] == "edge-model"
    assert edge_double.requests[0]["temperature"] == 0


def test_through_the_gateway_the_edge_down_means_no_cloud_call(start_gateway, cloud):
    gw = start_gateway(edge={"base_url": closed_port_url()}, privacy={"edge_detector": {"enabled": True}})
    response = httpx.post(gw.base_url + "/chat/completions", timeout=30, json={
        "model": "ecgw/cloud-only", "messages": [{"role": "user", "content": PROSE}]})
    assert response.status_code == 503 and response.json()["error"]["type"] == "privacy_unavailable"
    assert cloud.requests == []
