"""Nothing in a request leaves unscanned: the gateway passes unknown fields through, so the walk covers them."""

from __future__ import annotations

import json

import httpx

SECRET = "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a"
EMAIL = "maria.gonzalez@acme-corp.example"


def test_fields_outside_the_known_list_are_protected(gateway, cloud):
    body = {
        "model": "ecgw/cloud-only",
        "messages": [
            {"role": "user", "content": "Summarise my account."},
            {"role": "assistant", "content": None, "reasoning": f"The key is {SECRET} for {EMAIL}",
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "send_mail", "arguments": {"to": EMAIL, "retries": 2}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sent"},
        ],
        "prediction": {"type": "content", "content": f"Dear {EMAIL}"},
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "summary", "schema": {"type": "object", "description": f"summary for {EMAIL}",
                                          "properties": {"text": {"type": "string"}}}}},
        "stop": [EMAIL],
        "vendor_extra": {"notes": [f"api key {SECRET}"]},
        "tools": [{"type": "function", "function": {"name": "send_mail", "parameters": {"type": "object"}}}],
        "tool_choice": "auto",
    }
    response = httpx.post(gateway.base_url + "/chat/completions", json=body, timeout=30)
    assert response.status_code == 200, response.text
    sent = json.dumps(cloud.requests[-1])
    assert SECRET not in sent and EMAIL not in sent
    received = cloud.requests[-1]
    # structure the provider needs is untouched; the object-valued arguments stay an object
    assert received["tool_choice"] == "auto" and received["tools"][0]["function"]["name"] == "send_mail"
    arguments = received["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert isinstance(arguments, dict) and arguments["retries"] == 2 and arguments["to"].startswith("[")
    assert received["messages"][1]["role"] == "assistant"
