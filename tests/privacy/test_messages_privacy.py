"""Privacy on the Messages surface: the cloud sees placeholders in every slot an Anthropic request has (system
blocks, text, tool_use input, tool_result, thinking passed back); the client gets raw values back in text and in
tool_use input, JSON and streamed."""

from __future__ import annotations

import json

import anthropic
import httpx

from tests.fakes.model_server import Reply, ToolCall
from tests.privacy.helpers import UNITS

SECRET = "ghp_" + "Zx9Q" * 9
RAW = (SECRET, "415-555-0132", "Maria Gonzalez", "maria.gonzalez@acme-mail.com")
SMS = {"name": "send_sms", "description": "send an SMS", "input_schema": {
    "type": "object", "properties": {"phone": {"type": "string"}, "text": {"type": "string"}}}}


def _client(gw):
    response = httpx.put(f"{gw.url}/v1/sessions/s-m/units", json=UNITS)
    assert response.status_code == 200, response.text
    return anthropic.Anthropic(base_url=gw.url, api_key="k", max_retries=0, default_headers={"X-Session-Id": "s-m"})


def _history():
    return [
        {"role": "user", "content": [{"type": "text", "text": "Text Maria Gonzalez at 415-555-0132."}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Maria Gonzalez wants a text.", "signature": "sig"},
            {"type": "tool_use", "id": "toolu_1", "name": "send_sms",
             "input": {"phone": "415-555-0132", "text": "Hi Maria Gonzalez"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": [{"type": "text", "text": "sent; cc maria.gonzalez@acme-mail.com"}]}]},
    ]


def _ask(gw, client, **kwargs):
    return client.messages.create(model="ecgw/cloud-only", max_tokens=64, tools=[SMS],
                                  system=[{"type": "text", "text": f"Deploy with {SECRET}."}], messages=_history(),
                                  **kwargs)


def test_cloud_sees_placeholders_and_client_gets_values_back_json(start_gateway, cloud):
    gw = start_gateway()
    client = _client(gw)
    arguments = json.dumps({"phone": "[PHONE_001]", "text": "Hi [FULL_NAME_001]"})
    cloud.script(Reply(content="Texting [FULL_NAME_001] again.", tool_calls=[ToolCall("send_sms", arguments)]))
    message = _ask(gw, client)
    sent = json.dumps(cloud.requests, ensure_ascii=False)
    for raw in RAW:
        assert raw not in sent
    assert "[PHONE_001]" in sent and "[GITHUB_TOKEN_001]" in sent and "[EMAIL_001]" in sent
    assert "[FULL_NAME_001] wants a text." in sent  # the thinking passed back, scrubbed like the rest
    assert message.content[0].text == "Texting Maria Gonzalez again."  # type: ignore[union-attr]
    assert message.content[1].input == {"phone": "415-555-0132", "text": "Hi Maria Gonzalez"}  # type: ignore[union-attr]


def test_client_gets_values_back_streamed(start_gateway, cloud):
    gw = start_gateway()
    client = _client(gw)
    arguments = json.dumps({"phone": "[PHONE_001]", "text": "Hi [FULL_NAME_001]"})
    cloud.script(Reply(content="Texting [FULL_NAME_001] again.", tool_calls=[ToolCall("send_sms", arguments)]))
    with client.messages.stream(model="ecgw/cloud-only", max_tokens=64, tools=[SMS], messages=_history()) as stream:
        texts = [e.text for e in stream if e.type == "text"]
        final = stream.get_final_message()
    assert "".join(texts) == "Texting Maria Gonzalez again."
    assert final.content[1].input == {"phone": "415-555-0132", "text": "Hi Maria Gonzalez"}  # type: ignore[union-attr]
    assert not any(raw in json.dumps(cloud.requests, ensure_ascii=False) for raw in RAW)
