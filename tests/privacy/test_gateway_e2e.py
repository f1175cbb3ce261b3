"""End to end through a real gateway: the fake cloud never sees raw values; the client gets them back."""

from __future__ import annotations

import json

import httpx
import openai

from tests.fakes.model_server import Reply, ToolCall
from tests.privacy.helpers import UNITS

TOOLS = [{"type": "function", "function": {"name": "send_sms", "description": "send an SMS",
                                           "parameters": {"type": "object", "properties": {
                                               "phone": {"type": "string"}, "text": {"type": "string"}}}}}]
SECRET = "ghp_" + "Zx9Q" * 9


def client(gw, session="s-1"):
    return openai.OpenAI(base_url=gw.base_url, api_key="k", default_headers={"X-Session-Id": session})


def _register(gw, session="s-1"):
    response = httpx.put(f"{gw.url}/v1/sessions/{session}/units", json=UNITS)
    assert response.status_code == 200, response.text
    assert response.json()["units"] == 6


def _messages():
    return [{"role": "system", "content": f"Deploy with token {SECRET}. Customer: Maria Gonzalez."},
            {"role": "user", "content": "Text the customer at 415 555 0132 and cc maria.gonzalez@acme-mail.com"}]


def _sent(cloud):
    return json.dumps(cloud.requests, ensure_ascii=False)


def test_cloud_never_sees_raw_values_and_client_gets_them_back(start_gateway, cloud):
    gw = start_gateway()
    _register(gw)
    cloud.script(Reply(content="I will text [PHONE_001] and mail [EMAIL_001] for [FULL_NAME_001]."))
    response = client(gw).chat.completions.create(model="ecgw/cloud-only", messages=_messages())
    sent = _sent(cloud)
    for raw in (SECRET, "415 555 0132", "maria.gonzalez@acme-mail.com", "Maria Gonzalez"):
        assert raw not in sent
    assert "[PHONE_001]" in sent and "[GITHUB_TOKEN_001]" in sent
    assert response.choices[0].message.content == (
        "I will text 415-555-0132 and mail Maria.Gonzalez@acme-mail.com for Maria Gonzalez.")


def test_tool_calls_round_trip_json_and_stream(start_gateway, cloud):
    gw = start_gateway()
    _register(gw)
    arguments = json.dumps({"phone": "[PHONE_001]", "text": "Hi [FULL_NAME_001]"})
    cloud.script(Reply(content=None, tool_calls=[ToolCall("send_sms", arguments, id="call_1")]),
                 Reply(content="Sent to [PHONE_001].", tool_calls=[ToolCall("send_sms", arguments, id="call_2")]))
    plain = client(gw).chat.completions.create(model="ecgw/cloud-only", messages=_messages(), tools=TOOLS)
    call = plain.choices[0].message.tool_calls[0]
    assert call.function.name == "send_sms"
    assert json.loads(call.function.arguments) == {"phone": "415-555-0132", "text": "Hi Maria Gonzalez"}
    stream = client(gw).chat.completions.create(model="ecgw/cloud-only", messages=_messages(), tools=TOOLS,
                                                stream=True)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    deltas = [d for c in chunks for ch in c.choices for d in ch.delta.tool_calls or ()]
    assert text == "Sent to 415-555-0132."
    assert deltas[0].id == "call_2" and deltas[0].function.name == "send_sms"
    assert json.loads("".join(d.function.arguments or "" for d in deltas)) == {
        "phone": "415-555-0132", "text": "Hi Maria Gonzalez"}


def test_next_step_prefix_is_byte_identical(start_gateway, cloud):
    gw = start_gateway()
    _register(gw)
    history = _messages()
    cloud.script(Reply(content="Texting [PHONE_001] now."), Reply(content="Done."))
    first = client(gw).chat.completions.create(model="ecgw/cloud-only", messages=history)
    history += [{"role": "assistant", "content": first.choices[0].message.content},
                {"role": "user", "content": "Also email anna.berg@example.org"}]
    client(gw).chat.completions.create(model="ecgw/cloud-only", messages=history)
    step1, step2 = cloud.requests
    assert step2["messages"][:2] == step1["messages"]
    prefix = json.dumps(step1["messages"])[:-1]
    assert json.dumps(step2["messages"]).startswith(prefix)
    assert step2["messages"][2]["content"] == "Texting [PHONE_001] now."  # the restored echo scrubs back the same
    assert "anna.berg@example.org" not in _sent(cloud)


def test_broken_detector_answers_503_and_nothing_reaches_the_cloud(start_gateway, cloud):
    gw = start_gateway()

    class Broken:
        def find(self, text):
            raise RuntimeError("pattern engine down")

    gw.services.protector._scrubber._detector._patterns = Broken()
    response = httpx.post(f"{gw.base_url}/chat/completions", json={
        "model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "hello"}]})
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "privacy_unavailable"
    assert "pattern engine down" in response.json()["error"]["message"]
    assert cloud.requests == []


def test_units_route_rejects_bad_bodies_and_needs_the_api_key(start_gateway):
    gw = start_gateway(server={"api_keys": ["sk-gw"]})
    url = f"{gw.url}/v1/sessions/s-9/units"
    assert httpx.put(url, json=UNITS).status_code == 401
    bad = httpx.put(url, content=b"not json", headers={"Authorization": "Bearer sk-gw"})
    assert bad.status_code == 400 and "sensitive_items.json" in bad.json()["error"]["message"]
    assert httpx.put(url, json=UNITS, headers={"Authorization": "Bearer sk-gw"}).status_code == 200


def test_disabled_privacy_passes_through(start_gateway, cloud):
    gw = start_gateway(privacy={"enabled": False})
    client(gw).chat.completions.create(model="ecgw/cloud-only", messages=_messages())
    assert SECRET in _sent(cloud)
