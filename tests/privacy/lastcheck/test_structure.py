"""The last check never rewrites a body's structure (``privacy.structure``). A value the real-text families read in a
sentence (a handle ``@name``, a place, a person) may name a key, a tool or a parameter by chance: it is replaced in
the text and left where it names structure, so the tools' schemas, the calls' names and their arguments' keys reach
the cloud as the agent wrote them. A value known private wherever it stands (a listed unit, a secret, a class the
tier may not receive) in a key or a tool's name keeps the step on the edge instead: it can neither be replaced there
nor leave raw."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from privacy.detect import UnitsDocument
from privacy.errors import PrivacyBlocked
from tests.privacy.helpers import protector

# Handles the balanced profile's real-text families read as usernames: the session's vault then holds "name",
# "type", "file", "description", "properties" and "lookup_order" — a tool's name and its schema's keys.
PROSE = "Please ask @name, @type, @file, @description, @properties and @lookup_order about it."
HEURISTIC = ["name", "type", "file", "description", "properties", "lookup_order"]
TOOLS = [{"type": "function", "function": {
    "name": "lookup_order", "description": "Look up an order by its name and file.",
    "parameters": {"type": "object", "properties": {
        "name": {"type": "string", "description": "the order's name"},
        "file": {"type": "string", "enum": ["file", "name"]},
        "type": {"type": "string"}}, "required": ["name", "file"]}}}]
ARGUMENTS = {"name": "order 7", "file": "a.txt", "type": "pdf"}


def chat_body(arguments: dict[str, Any] = ARGUMENTS) -> dict[str, Any]:
    return {"model": "m", "tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "lookup_order"}},
            "messages": [
                {"role": "system", "content": "You look up orders."},
                {"role": "user", "content": PROSE},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "lookup_order", "arguments": json.dumps(arguments)}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "the file name is a.txt"},
                {"role": "user", "content": "What did @name say about the file?"}]}


def assert_structure_intact(sent: dict[str, Any], tools: list[dict[str, Any]], arguments: dict[str, Any]) -> None:
    assert sent["tools"] == tools
    call = next(m for m in sent["messages"] if m.get("tool_calls"))["tool_calls"][0]
    assert call["function"]["name"] == "lookup_order" and call["type"] == "function"
    assert list(json.loads(call["function"]["arguments"])) == list(arguments)
    assert [m["role"] for m in sent["messages"]][-3:] == ["assistant", "tool", "user"]


def assert_prose_replaced(sent: dict[str, Any], vault: dict[str, str]) -> None:
    asked = next(m["content"] for m in sent["messages"] if m["role"] == "user" and "Please ask" in m["content"])
    for value in HEURISTIC:
        assert f"@{value}" not in asked, asked
    assert vault["[USERNAME_001]"] == "name"
    assert "What did @[USERNAME_001] say" in sent["messages"][-1]["content"]
    assert "file" not in sent["messages"][-1]["content"]  # found in the text of another message, and replaced


async def test_heuristic_vault_values_named_like_keys_leave_the_schema_and_the_calls_intact():
    p = protector(database_url=None)
    body = chat_body()
    scrubbed = await p.scrub(copy.deepcopy(body), session_id="s")
    sent = scrubbed.body
    assert_structure_intact(sent, TOOLS, ARGUMENTS)
    assert sent["tool_choice"] == body["tool_choice"]
    assert_prose_replaced(sent, scrubbed.values)
    # the arguments' values are the call's text: a value named like a key is replaced there, its keys are not
    assert json.loads(sent["messages"][2]["tool_calls"][0]["function"]["arguments"])["name"] == "order 7"
    again = await p.scrub(copy.deepcopy(body), session_id="s")  # the next step: the vault holds them already
    assert again.body == sent


UNITS = {"items": [{"entity_id": "c", "sensitive_fields": [
    {"field": "account", "value": "acct_77Q4", "dimension": "finance", "weight": 2}]}]}


def _listed_in_a_key() -> dict[str, Any]:
    tools = copy.deepcopy(TOOLS)
    tools[0]["function"]["parameters"]["properties"]["acct_77Q4"] = {"type": "string"}
    return {**chat_body(), "tools": tools}


def _listed_in_a_tool_name() -> dict[str, Any]:
    body = chat_body()
    body["messages"][2]["tool_calls"][0]["function"]["name"] = "close_acct_77Q4"
    return body


def _listed_in_an_argument_key() -> dict[str, Any]:
    return chat_body({"acct_77Q4": "close", "file": "a.txt"})


@pytest.mark.parametrize("make", [_listed_in_a_key, _listed_in_a_tool_name, _listed_in_an_argument_key],
                         ids=["schema key", "called tool's name", "arguments' key (replaced)"])
async def test_a_listed_unit_in_the_structure_keeps_the_step_home(make):
    """Every earlier layer off: only the last check sees the unit. In a schema's key or a called tool's name a
    placeholder would break the request and the raw value may not leave: blocked. In the arguments' keys (the
    call's own JSON text, not the wire's structure) it is replaced, as before."""
    p = protector(database_url=None, layers={"units": False, "secrets": False, "patterns": False, "ner": False})
    await p.register_units("s", UnitsDocument.model_validate(UNITS))
    body = make()
    if make is _listed_in_an_argument_key:
        sent = (await p.scrub(body, session_id="s")).body
        assert "acct_77Q4" not in json.dumps(sent)
        return
    with pytest.raises(PrivacyBlocked) as blocked:
        await p.scrub(body, session_id="s")
    message = str(blocked.value)
    assert "cannot be replaced where it stands" in message and "acct_77Q4" not in message, message


async def test_a_secret_the_vault_holds_in_a_tool_name_keeps_the_step_home():
    """A password read after its label in the prose (the vault holds it, a secret), then named as a tool: the last
    check's own detectors do not know it there, the vault does."""
    p = protector(database_url=None)
    body = chat_body()
    body["messages"][1]["content"] = "my password is Tr0ub4dor&3x, use it"
    body["messages"][2]["tool_calls"][0]["function"]["name"] = "login_Tr0ub4dor&3x"
    with pytest.raises(PrivacyBlocked, match="PASSWORD"):
        await p.scrub(body, session_id="s")


async def test_a_heuristic_value_of_a_class_the_tier_keeps_off_in_a_key_keeps_the_step_home():
    """``privacy.classes`` keeps online values (handles) off standard targets: a handle standing in a schema key,
    where it is not replaced, would leave raw."""
    p = protector(database_url=None, classes={"online": {"standard": "block"}})
    with pytest.raises(PrivacyBlocked):
        await p.scrub(chat_body(), session_id="s", tier="standard")


# --- through the gateway: each surface's own shape, the cloud double speaking OpenAI's wire format -----------------

SCHEMA = TOOLS[0]["function"]["parameters"]
DOCS = TOOLS[0]["function"]["description"]


def _messages_body() -> dict[str, Any]:
    return {"model": "ecgw/cloud-only", "max_tokens": 64,
            "tools": [{"name": "lookup_order", "description": DOCS, "input_schema": SCHEMA}],
            "messages": [
                {"role": "user", "content": PROSE},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "lookup_order", "input": ARGUMENTS}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "the file name is a.txt"},
                    {"type": "text", "text": "What did @name say about the file?"}]}]}


def _responses_body() -> dict[str, Any]:
    return {"model": "ecgw/cloud-only",
            "tools": [{"type": "function", "name": "lookup_order", "description": DOCS, "parameters": SCHEMA}],
            "input": [
                {"role": "user", "content": PROSE},
                {"type": "function_call", "call_id": "call_1", "name": "lookup_order",
                 "arguments": json.dumps(ARGUMENTS)},
                {"type": "function_call_output", "call_id": "call_1", "output": "the file name is a.txt"},
                {"role": "user", "content": "What did @name say about the file?"}]}


SURFACES = {"chat": ("/v1/chat/completions", lambda: {**chat_body(), "model": "ecgw/cloud-only"}),
            "messages": ("/v1/messages", _messages_body), "responses": ("/v1/responses", _responses_body)}


def _post(gw: Any, surface: str, body: dict[str, Any], session: str) -> Any:
    import httpx

    return httpx.post(gw.url + SURFACES[surface][0], json=body, timeout=60,
                      headers={"authorization": "Bearer k", "x-api-key": "k", "x-session-id": session})


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_through_each_surface_the_cloud_gets_the_schema_intact_and_the_prose_replaced(start_gateway, cloud, surface):
    from tests.fakes.model_server import Reply

    gw = start_gateway()
    cloud.script(Reply(content="ok"))
    response = _post(gw, surface, SURFACES[surface][1](), "g")
    assert response.status_code == 200, response.text
    sent = cloud.requests[-1]
    tool = sent["tools"][0]["function"]
    assert (tool["name"], tool["parameters"], tool["description"]) == ("lookup_order", SCHEMA, DOCS)
    call = next(m for m in sent["messages"] if m.get("tool_calls"))["tool_calls"][0]
    assert call["function"]["name"] == "lookup_order"
    assert json.loads(call["function"]["arguments"]).keys() == ARGUMENTS.keys()
    text = json.dumps([m.get("content") for m in sent["messages"]], ensure_ascii=False)
    assert "@name" not in text and "@lookup_order" not in text and "[USERNAME_" in text


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_through_each_surface_a_listed_unit_in_a_tool_name_keeps_the_step_on_the_edge(start_gateway, edge, cloud,
                                                                                      surface):
    import httpx

    from tests.fakes.model_server import Reply

    gw = start_gateway(privacy={"layers": {"units": False, "secrets": False, "patterns": False, "ner": False}})
    assert httpx.put(f"{gw.url}/v1/sessions/u/units", json=UNITS).status_code == 200
    edge.script(Reply(content="edge answer"))
    body = json.loads(json.dumps(SURFACES[surface][1]()).replace("lookup_order", "close_acct_77Q4"))
    response = _post(gw, surface, body, "u")
    assert response.status_code == 200, response.text
    assert response.headers["x-ecgw-fallback"] == "privacy-blocked" and response.headers["x-ecgw-route"] == "edge"
    assert "edge answer" in response.text
    assert cloud.requests == []


async def test_a_person_named_as_a_key_of_a_tool_results_json_is_replaced_there_too():
    """A heuristic value is left in a JSON key only where the key reads as a program's identifier: a name the user
    wrote in a sentence that a tool result then uses as a key (an org chart, a salary table) is data, and leaves as
    its placeholder, as it did before the structure rule."""
    p = protector(database_url=None)
    body = chat_body()
    body["messages"][1]["content"] = PROSE + " Also ask Jane Doe about the raise."
    body["messages"][3]["content"] = json.dumps({"Jane Doe": {"team": "payroll"}, "name": "payroll"})
    scrubbed = await p.scrub(copy.deepcopy(body), session_id="s")
    assert "Jane Doe" in scrubbed.values.values()  # read in the sentence: a heuristic (NER) value
    result = json.loads(scrubbed.body["messages"][3]["content"])
    assert "Jane Doe" not in json.dumps(scrubbed.body) and "name" in result, result
    assert_structure_intact(scrubbed.body, TOOLS, ARGUMENTS)
