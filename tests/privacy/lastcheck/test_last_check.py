"""The last check on the outgoing body: every channel the walk does not scan, every encoding, values split across
parts and messages. Each case either leaves with the value replaced or does not leave at all (fail closed)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from benchmarks.recall.score import normalised_text, value_pattern
from privacy.detect import UnitsDocument
from privacy.errors import PrivacyBlocked
from tests.privacy.helpers import protector

EMAIL = "maria.gonzalez@acme-mail.com"
CARD = "4929 1034 5532 8817"  # Luhn-valid
UNITS = {"items": [{"entity_id": "c", "sensitive_fields": [
    {"field": "email", "value": EMAIL, "dimension": "contact", "weight": 1},
    {"field": "card", "value": "4929103455328817", "dimension": "financial", "weight": 3},
    {"field": "member", "value": "88213", "dimension": "documents", "weight": 1}]}]}
ALL_LAYERS_OFF = {"layers": {"units": False, "secrets": False, "patterns": False, "ner": False}}


def _user(content: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def _tool_calls(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"model": "m", "messages": [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "done"}]}


CHANNELS: dict[str, dict[str, Any]] = {
    "json key in content": _user(json.dumps({"by_email": {EMAIL: {"orders": 3}}})),
    "json key in a tool result": {"model": "m", "messages": [
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({EMAIL: "active"})}]},
    "tool_calls id": _tool_calls(f"call_{EMAIL}", "lookup", "{}"),
    "tool name": _tool_calls("call_1", f"mail_{EMAIL}", "{}"),
    "parameter name": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [
        {"type": "function", "function": {"name": "send", "parameters": {
            "type": "object", "properties": {EMAIL: {"type": "string"}}}}}]},
    "schema format string": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": {
        "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "format": EMAIL}}}},
    "nested vendor extra": {**_user("hi"), "extra_body": {"vendor": {"deep": [{"id": EMAIL}]}}},
    "dict that merely says type image": {**_user("hi"), "metadata": {"type": "image", "caption": EMAIL}},
    "json number": _tool_calls("call_1", "pay", json.dumps({"card": 4929103455328817})),
    "json number in an extra": {**_user("hi"), "metadata": {"member": 88213}},
    "split across two parts": _user([{"type": "text", "text": "write to maria.gonzalez@"},
                                     {"type": "text", "text": "acme-mail.com please"}]),
    "split across two messages": {"model": "m", "messages": [
        {"role": "user", "content": "my card is 4929 1034"}, {"role": "user", "content": "5532 8817 thanks"}]},
    "base64": _user("blob " + base64.b64encode(f"contact {EMAIL} today".encode()).decode()),
    "percent-encoded": _user("https://crm.local/find?q=maria.gonzalez%40acme-mail.com"),
    "html entity": _user("maria.gonzalez&#64;acme-mail.com"),
    "full-width": _user("ｍａｒｉａ．ｇｏｎｚａｌｅｚ＠ａｃｍｅ－ｍａｉｌ．ｃｏｍ"),
    "zero-width": _user("maria.gon\u200bzalez@acme\u200d-mail.com"),
    "u-escape": _user("maria.gonzalez\\u0040acme-mail.com"),
}
VALUES = [EMAIL, CARD, "88213"]
# Channels where the value only shows decoded or glued: no place to put a placeholder, so the step may not leave
# (a pattern that reads an escaped form literally may still place it). In every other channel the value stands
# literally (full-width forms read one for one) and must be replaced where it stands, not keep the step home.
REVEALED = {"base64", "split across two parts", "split across two messages", "percent-encoded", "html entity",
            "zero-width", "u-escape"}
# Channels where the value stands in the body's structure (a parameter's key, a tool's name, a call's id, a schema's
# format, an ``id``): a placeholder there breaks the request a provider validates, and the value may not leave raw,
# so the step stays home (the last check never rewrites structure: privacy.structure).
STRUCTURE = {"tool_calls id", "tool name", "parameter name", "schema format string", "nested vendor extra"}
LITERAL = sorted(set(CHANNELS) - REVEALED - STRUCTURE)


def _raw_values_in(body: dict[str, Any]) -> list[str]:
    text = normalised_text(body)
    for string in _strings(body):
        try:
            text += "\n" + normalised_text({"_": json.loads(string)})
        except ValueError:
            continue
    glued = []  # what a reader of the messages in order sees
    for message in body.get("messages") or ():
        content = message.get("content")
        parts = content if isinstance(content, list) else [content]
        glued += [p.get("text", "") if isinstance(p, dict) else p or "" for p in parts]
    text += "\n" + "".join(glued) + "\n" + re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    for segment in text.split():
        try:
            text += "\n" + base64.b64decode(segment + "=" * (-len(segment) % 4), validate=True).decode()
        except ValueError:
            continue
    return [v for v in VALUES if value_pattern(v).search(text)]


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


async def _outcome(body: dict[str, Any], **settings: Any) -> str | list[str]:
    p = protector(database_url=None, **settings)
    await p.register_units("s", UnitsDocument.model_validate(UNITS))
    try:
        sent = (await p.scrub(body, session_id="s")).body
    except PrivacyBlocked:
        return "blocked"
    return _raw_values_in(sent)


@pytest.mark.parametrize("channel", sorted(CHANNELS))
async def test_with_every_earlier_layer_off_nothing_listed_leaves_raw(channel):
    assert _raw_values_in(CHANNELS[channel]), "the case must carry a listed value"
    outcome = await _outcome(CHANNELS[channel], **ALL_LAYERS_OFF)
    if channel in REVEALED:
        assert outcome == "blocked" or outcome == [], f"{channel}: {outcome} reached the cloud raw"
    elif channel in STRUCTURE:
        assert outcome == "blocked", f"{channel}: {outcome} (a listed value in the structure keeps the step home)"
    else:
        assert outcome == [], f"{channel}: {outcome} (a literal value is replaced where it stands)"


@pytest.mark.parametrize("channel", sorted(CHANNELS))
async def test_without_a_list_the_default_layers_and_last_check_leave_nothing_raw(channel):
    p = protector(database_url=None, layers={"ner": False})
    try:
        sent = (await p.scrub(CHANNELS[channel], session_id="s")).body
    except PrivacyBlocked:
        assert channel in REVEALED | STRUCTURE, f"{channel}: a literal value keeps the step home instead of being " \
            "replaced"
        return
    assert channel not in STRUCTURE, f"{channel}: the value's structure was rewritten or let through"
    assert _raw_values_in(sent) == [], channel


async def test_a_literal_hit_in_a_key_is_pseudonymised_and_restored_not_blocked():
    p = protector(database_url=None, **ALL_LAYERS_OFF)
    await p.register_units("s", UnitsDocument.model_validate(UNITS))
    protection = await p.protect(CHANNELS["json key in a tool result"], session_id="s", request_id="r")
    content = protection.body["messages"][0]["content"]
    assert EMAIL not in content and "[EMAIL_" in content
    placeholder = json.loads(content).popitem()[0]
    answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": f"Wrote to {placeholder}."}}]}
    assert protection.restore(answer)["choices"][0]["message"]["content"] == f"Wrote to {EMAIL}."
    assert any(a.finding.layer == "egress" for a in protection.findings)


@pytest.mark.parametrize("channel", ["split across two parts", "split across two messages"])
async def test_a_value_only_a_split_reveals_keeps_the_step_off_the_cloud(channel):
    assert await _outcome(CHANNELS[channel], **ALL_LAYERS_OFF) == "blocked"


async def test_a_base64_segment_that_decodes_to_a_listed_value_is_replaced_whole_and_restored():
    """A Kubernetes secret's data: the segment stands literally, so it is replaced as one value instead of keeping
    the step home; the agent gets the very segment back."""
    segment = base64.b64encode(f"contact {EMAIL} today".encode()).decode()
    body = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c",
                                        "content": f"apiVersion: v1\nkind: Secret\ndata:\n  owner: {segment}\n"}]}
    p = protector(database_url=None, **ALL_LAYERS_OFF)
    await p.register_units("s", UnitsDocument.model_validate(UNITS))
    protection = await p.protect(body, session_id="s", request_id="r")
    sent = protection.body["messages"][0]["content"]
    assert segment not in sent and _raw_values_in(protection.body) == []
    placeholder = sent.split("owner: ")[1].strip()
    assert placeholder.startswith("[EMAIL_ADDRESS_"), sent
    answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": f"owner is {placeholder}"}}]}
    assert protection.restore(answer)["choices"][0]["message"]["content"] == f"owner is {segment}"


async def test_a_base64_segment_of_ordinary_text_is_left_alone():
    segment = base64.b64encode(b"replicas: 3, image tag v1.4.2, port 8080").decode()
    assert await _outcome(_user(f"config {segment}"), **ALL_LAYERS_OFF) == []
    p = protector(database_url=None, layers={"ner": False})
    sent = (await p.scrub(_user(f"config {segment}"), session_id="s")).body
    assert segment in sent["messages"][0]["content"]


async def test_a_value_found_once_is_replaced_in_earlier_messages_too():
    """A labelled passport in a later tool result; the same number bare in an earlier message."""
    p = protector(database_url=None, layers={"ner": False})
    body = {"model": "m", "messages": [
        {"role": "user", "content": "check E48213377 against the file"},
        {"role": "tool", "tool_call_id": "c", "content": "passport no.: E48213377"}]}
    sent = (await p.scrub(body, session_id="s")).body
    assert "E48213377" not in json.dumps(sent)


async def test_an_audit_action_is_left_alone_and_metrics_count_hits():
    p = protector(database_url=None, actions={"EMAIL_ADDRESS": "audit"}, layers={"ner": False})
    sent = (await p.scrub(CHANNELS["json key in content"], session_id="s")).body
    assert EMAIL in json.dumps(sent)
    q = protector(database_url=None, layers={"ner": False})
    await q.scrub(CHANNELS["json key in content"], session_id="s")
    assert q.metrics is not None
    assert b'ecgw_privacy_egress_hits_total{how="literal",outcome="pseudonymise",type="EMAIL_ADDRESS"} 1.0' in \
        q.metrics.exposition()


async def test_a_value_both_literal_and_encoded_in_one_text_does_not_leave_encoded():
    body = _user(f"mail {EMAIL} or maria.gonzalez%40acme-mail.com")
    assert await _outcome(body, **ALL_LAYERS_OFF) in ("blocked", [])


async def test_every_surface_form_of_a_listed_value_is_replaced():
    body = _user(f"{EMAIL} and {EMAIL.upper()}")
    outcome = await _outcome(body, **ALL_LAYERS_OFF)
    assert outcome == [], outcome


def test_through_the_gateway_the_cloud_never_sees_a_listed_value_and_metrics_count_the_hit(start_gateway, cloud):
    import httpx
    import openai

    from tests.fakes.model_server import Reply

    gw = start_gateway(privacy=ALL_LAYERS_OFF)
    assert httpx.put(f"{gw.url}/v1/sessions/g/units", json=UNITS).status_code == 200
    cloud.script(Reply(content="ok"))
    client = openai.OpenAI(base_url=gw.base_url, api_key="x", default_headers={"X-Session-Id": "g"})
    client.chat.completions.create(model="ecgw/cloud-only", messages=[
        {"role": "user", "content": json.dumps({"by_email": {EMAIL: {"card": 4929103455328817}}})}])
    sent = json.dumps(cloud.requests[-1], ensure_ascii=False)
    assert EMAIL not in sent and "4929103455328817" not in sent
    metrics = httpx.get(f"{gw.url}/metrics").text
    assert 'ecgw_privacy_egress_hits_total{how="literal",outcome="pseudonymise"' in metrics


async def test_a_listed_value_audited_by_its_dimension_is_not_pseudonymised_by_the_last_check():
    p = protector(database_url=None, actions={"contact": "audit"}, layers={"ner": False})
    await p.register_units("s", UnitsDocument.model_validate(UNITS))
    sent = (await p.scrub(_user(f"write to {EMAIL}"), session_id="s")).body
    assert EMAIL in sent["messages"][0]["content"]


async def test_an_audited_value_lets_through_only_itself_not_a_value_that_contains_it():
    """A short listed name is audited (its dimension's action); an email that contains it, used as a JSON key
    (only the last check sees keys), is another value and is pseudonymised."""
    units = {"items": [{"entity_id": "m", "sensitive_fields": [
        {"field": "first_name", "value": "Maria", "dimension": "identity", "weight": 1}]}]}
    p = protector(database_url=None, actions={"identity": "audit"}, layers={"ner": False})
    await p.register_units("s", UnitsDocument.model_validate(units))
    body = {"model": "m", "messages": [
        {"role": "user", "content": "Maria asked for her account status."},
        {"role": "tool", "tool_call_id": "c", "content": json.dumps({"Maria.Gonzalez@acme-mail.com": "active"})}]}
    sent = json.dumps((await p.scrub(body, session_id="s")).body, ensure_ascii=False)
    assert "Maria asked" in sent
    assert "Maria.Gonzalez@acme-mail.com" not in sent and "[EMAIL_ADDRESS_" in sent


async def test_an_audited_phone_in_parentheses_leaves_as_it_is():
    """The operator audits contact details (sent raw): a phone written inside parentheses is that phone, not a
    longer value with the closing parenthesis that the last check would pseudonymise."""
    units = {"items": [{"entity_id": "d", "sensitive_fields": [
        {"field": "phone", "value": "+1 415-555-0137", "dimension": "contact", "weight": 1}]}]}
    p = protector(database_url=None, actions={"contact": "audit"}, layers={"ner": False})
    await p.register_units("s", UnitsDocument.model_validate(units))
    sent = (await p.scrub(_user("Call them (phone +1 415-555-0137) today."), session_id="s")).body
    assert sent["messages"][0]["content"] == "Call them (phone +1 415-555-0137) today."


async def test_the_vault_is_read_again_only_when_the_last_check_needs_a_new_placeholder():
    """A step whose last check replaces nothing new (the common case: a value it keeps replacing with the same
    placeholder), and with nothing new for the earlier layers, only reads the session's vault; one that needs a new
    placeholder still takes it in the store's atomic update, against the freshest vault."""
    p = protector(**ALL_LAYERS_OFF)
    await p.register_units("s", UnitsDocument.model_validate(UNITS))
    updates: list[str] = []
    update = p._sessions.update

    async def counting(session_id: str, key: str, fn: Any) -> Any:
        updates.append(key)
        return await update(session_id, key, fn)

    p._sessions.update = counting  # type: ignore[method-assign]
    body = _user(f"write to {EMAIL}")  # the earlier layers are off: only the last check finds the e-mail
    first = await p.scrub(body, session_id="s")
    assert EMAIL not in json.dumps(first.body) and len(updates) == 2  # a new placeholder: the atomic update
    updates.clear()
    again = await p.scrub(body, session_id="s")
    assert again.body == first.body and updates == []  # the same placeholder: the vault read, never updated
    assert again.values == first.values


def test_place_walks_only_the_messages_whose_text_holds_a_value() -> None:
    """``place`` leaves a message as it is when the last check's text of it holds no form of any value (the same
    object, not walked), and replaces strings, escaped forms and equal numbers in the others; a key is left as it is
    and reported where it stands."""
    from privacy.lastcheck import EgressCheck, place
    from privacy.vault import Vault

    body = {"model": "m", "messages": [
        {"role": "user", "content": "nothing here"},
        {"role": "tool", "content": '{"who": "Ana \\"Bo\\" Li"}', "Ana \"Bo\" Li": 539487261}]}
    scan = EgressCheck([]).read(body, None, Vault())
    placed = place(body, {'Ana "Bo" Li': "[PERSON_001]", "539487261": "[ID_001]"}, scan.text)
    assert placed.body["messages"][0] is body["messages"][0]
    assert placed.body["messages"][1] == {"role": "tool", "content": '{"who": "[PERSON_001]"}',
                                          'Ana "Bo" Li': "[ID_001]"}
    assert placed.kept == {'Ana "Bo" Li': "a key in messages[1]"} and placed.placed == {'Ana "Bo" Li', "539487261"}
    told = place(body, {"nothing": "[X_001]"}, lambda index: "" if index == 0 else None)
    assert told.body["messages"][0] is body["messages"][0]  # its text (as told) holds no value: not walked


def test_a_top_level_key_named_like_a_message_does_not_hide_that_message_from_place() -> None:
    """``place`` reads each message's text by its index, not by a path a client can also write as a top-level key:
    a body whose key ``messages[0]`` comes after ``messages`` still has the value replaced in its first message."""
    from privacy.lastcheck import EgressCheck, place
    from privacy.vault import Vault

    body = {"messages": [{"role": "user", "content": "call Ana Lindqvist now"}], "messages[0]": "nothing"}
    scan = EgressCheck([]).read(body, None, Vault())
    placed = place(body, {"Ana Lindqvist": "[PERSON_001]"}, scan.text)
    assert placed.body["messages"][0]["content"] == "call [PERSON_001] now"


@pytest.mark.parametrize("line", ['10.0.0.1 - - "GET /call?to=%2B44%207700%20900123 HTTP/1.1" 200',
                                  "<td>&#43;44&#32;7700&#32;900123</td>"], ids=["percent-escaped", "html-references"])
async def test_a_value_only_a_decoding_reveals_is_replaced_where_its_escaped_form_stands(line):
    """A phone number in an access log, %-escaped (or as HTML character references): the last check reads it only
    decoded, and used to keep the step on the edge for it; it now replaces the escaped span, and the step leaves."""
    p = protector(database_url=None, layers={"units": False, "secrets": False, "patterns": False, "ner": False,
                                             "people": False})
    sent = (await p.scrub(_user(f"why so many calls?\n{line}"), session_id="s")).body
    text = sent["messages"][0]["content"]
    assert "7700" not in text and "[PHONE_NUMBER_" in text and text.startswith("why so many calls?")
