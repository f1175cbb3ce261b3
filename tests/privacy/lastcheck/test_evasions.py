"""Evasions of the last check, through the gateway on every surface (chat, Responses, Messages), cloud-only, against
a recording cloud double: a listed value or an obvious secret either leaves replaced or the step does not leave,
and a unit that did leave raw is reported ``exposed`` (never ``not_sent`` or ``protected``).

Each case is written once as surface-neutral turns and sent in each surface's own wire shape, so a split that one
surface's translation turns into something else (Messages joins system blocks with a blank line, tool_result
blocks with a newline) is covered where it happens."""

from __future__ import annotations

import base64
import binascii
import codecs
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.fakes.model_server import Reply

TICKET = "ZQX-4471-KAPPA"
PASSWORD = "Plover!Gantry#4471"
PERSON = "Theodora Vanterpool"
ACCOUNT = "539487261"
UNITS = {"items": [{"entity_id": "acct-9", "sensitive_fields": [
    {"field": "ticket", "value": TICKET, "dimension": "documents", "weight": 1},
    {"field": "password", "value": PASSWORD, "dimension": "credentials", "weight": 3},
    {"field": "full_name", "value": PERSON, "dimension": "identity", "weight": 2},
    {"field": "account", "value": ACCOUNT, "dimension": "financial", "weight": 2}]}]}


@dataclass
class Turn:
    role: str  # system | user | assistant | tool
    text: str = ""
    texts: list[str] = field(default_factory=list)  # several blocks (system blocks, tool_result blocks)
    reasoning: str | None = None
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (id, name, arguments)
    call_id: str = ""  # a tool turn answers this call

    def blocks(self) -> list[str]:
        return self.texts or [self.text]


@dataclass
class Case:
    turns: list[Turn]
    tells: list[str]  # the case leaked if every one of these reached the cloud
    unit: str | None = None  # the listed unit it carries, whose report must say exposed if it leaked
    tool_schema: dict[str, Any] | None = None


def _user(text: str, *, unit: str | None = None, tells: list[str] | None = None) -> Case:
    return Case([Turn("user", text)], tells or [text], unit)


def _mime(text: str) -> str:
    return base64.encodebytes(text.encode()).decode()  # wrapped at 76 columns


_MIME_NOTE = f"{'Please file this one under the reference code':<50}{TICKET} and close the old one, thanks"
_SECRET_NOTE = f"ticket {TICKET} then the rest of the message that pads this out well past one line"
_KEY_BODY = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
             "QyNTUxOQAAACBvTgX1N1aa8y6kDWB6hCNDOhfmQ1Yd3r5cU7uHc2b1XwAAAJg3Xxxm"]
_PGP_BODY = ["lQOYBGXyb2sBCADJq0Gq4V0Ub9z1kXvH7qS2mKcq8rDfL2mN4pQwErTyUiOpAsDfGh",
             "JkLzXcVbNmQwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUiOpAsDfGhJkLzXcVbNmQw"]
_MIME_TEXT = _mime(_MIME_NOTE)  # the ticket straddles the first line break

CASES: dict[str, Case] = {
    # a listed unit glued to a letter, digit or underscore
    "glued in a file name": _user(f"see report_{TICKET}.pdf for details", unit="acct-9.ticket",
                                  tells=[f"report_{TICKET}"]),
    "glued to a branch suffix": _user(f"branch {TICKET}_hotfix is red", unit="acct-9.ticket",
                                      tells=[f"{TICKET}_hotfix"]),
    "glued to a word": _user(f"the token{TICKET} expired", unit="acct-9.ticket", tells=[f"token{TICKET}"]),
    "in a tool-call id": Case([Turn("user", "look it up"),
                               Turn("assistant", calls=[(f"call_{TICKET}", "lookup", {"q": "open"})]),
                               Turn("tool", "no results", call_id=f"call_{TICKET}"), Turn("user", "and now?")],
                              [f"call_{TICKET}"], "acct-9.ticket"),
    # invisible characters (Default_Ignorable_Code_Point) and look-alikes (UTS #39 skeletons)
    "bidi marks": _user("ticket ZQX\u200e-4471\u200f-KAPPA", unit="acct-9.ticket",
                        tells=["ZQX\u200e-4471\u200f-KAPPA"]),
    "invisible operators and a grapheme joiner": _user("ZQX\u2062-44\u034f71-KA\u2064PPA", unit="acct-9.ticket",
                                                       tells=["ZQX\u2062-44\u034f71-KA\u2064PPA"]),
    "variation selectors and tags": _user("ZQX-4\ufe0f471-KAP\U000e0041PA", unit="acct-9.ticket",
                                          tells=["ZQX-4\ufe0f471-KAP\U000e0041PA"]),
    "cyrillic look-alikes": _user("Dear \u0422he\u043edora V\u0430nterp\u043eol,", unit="acct-9.full_name",
                                  tells=["\u0422he\u043edora V\u0430nterp\u043eol"]),
    "greek look-alikes": _user("ref \u0396Q\u03a7-4471-\u039a\u0391\u03a1\u03a1\u0391", unit="acct-9.ticket",
                               tells=["\u0396Q\u03a7-4471-\u039a\u0391\u03a1\u03a1\u0391"]),
    # combining marks on every letter, HTML tags inside a value (read as a reader sees them)
    "combining marks": _user("ticket " + "".join(c + "\u0301" for c in TICKET), unit="acct-9.ticket",
                             tells=["".join(c + "\u0301" for c in TICKET)]),
    "HTML tags inside a value": _user("ticket ZQX-<b>4471</b>-KAPPA and <span>Theodora</span> <i>Vanterpool</i>",
                                      unit="acct-9.ticket", tells=["ZQX-<b>4471</b>-KAPPA"]),
    # splits the seam check missed
    "split across non-adjacent messages": Case([Turn("user", "pw Plover!Ga"), Turn("assistant", "noted"),
                                                Turn("user", "ntry#4471")], ["Plover!Ga", "ntry#4471"],
                                               "acct-9.password"),
    "split between reasoning and content": Case([Turn("user", "remember it"),
                                                 Turn("assistant", "ntry#4471", reasoning="it starts Plover!Ga"),
                                                 Turn("user", "ok")], ["Plover!Ga", "ntry#4471"],
                                                "acct-9.password"),
    "split inside reasoning and content": Case([Turn("user", "remember it"),
                                                Turn("assistant", "the rest is ntry#4471, noted",
                                                     reasoning="it starts Plover!Ga and then"),
                                                Turn("user", "ok")], ["Plover!Ga", "ntry#4471"], "acct-9.password"),
    "split across two tool calls": Case([Turn("user", "store it"),
                                         Turn("assistant", calls=[("call_a", "put", {"part": "Plover!Ga"}),
                                                                  ("call_b", "put", {"part": "ntry#4471"})]),
                                         Turn("tool", "ok", call_id="call_a"), Turn("tool", "ok", call_id="call_b"),
                                         Turn("user", "done?")], ["Plover!Ga", "ntry#4471"], "acct-9.password"),
    "split three ways": Case([Turn("user", "pw Plov"), Turn("assistant", "go on"), Turn("user", "er!Gan"),
                              Turn("assistant", "and"), Turn("user", "try#4471")], ["Plov", "er!Gan", "try#4471"],
                             "acct-9.password"),
    "split across system blocks": Case([Turn("system", texts=["pw Plover!Ga", "ntry#4471 keep it"]),
                                        Turn("user", "hi")], ["Plover!Ga", "ntry#4471"], "acct-9.password"),
    "split across tool result blocks": Case([Turn("user", "read it"),
                                             Turn("assistant", calls=[("call_r", "read", {"f": "pw.txt"})]),
                                             Turn("tool", texts=["Plover!Ga", "ntry#4471"], call_id="call_r"),
                                             Turn("user", "thanks")], ["Plover!Ga", "ntry#4471"],
                                            "acct-9.password"),
    "split with spaces inside": _user("it reads Plover! Gantry #4471 now", unit="acct-9.password",
                                      tells=["Plover! Gantry #4471"]),
    "split between a JSON key and its value": _user(json.dumps({"Plover!Ga": "ntry#4471"}), unit="acct-9.password",
                                                    tells=["Plover!Ga", "ntry#4471"]),
    # encodings
    "percent-encoded twice": _user("https://x.example/?q=Plover%2521Gantry%25234471", unit="acct-9.password",
                                   tells=["Plover%2521Gantry%25234471"]),
    "MIME base64 across a line break": _user("attachment:\n" + _MIME_TEXT, unit="acct-9.ticket",
                                             tells=_MIME_TEXT.split()[:2]),
    "base64 of base64": _user("blob " + base64.b64encode(base64.b64encode(_SECRET_NOTE.encode())).decode(),
                              unit="acct-9.ticket",
                              tells=[base64.b64encode(base64.b64encode(_SECRET_NOTE.encode())).decode()[:40]]),
    "hex": _user("hex " + binascii.hexlify(_SECRET_NOTE.encode()).decode(), unit="acct-9.ticket",
                 tells=[binascii.hexlify(_SECRET_NOTE.encode()).decode()[:40]]),
    "base32": _user("b32 " + base64.b32encode(_SECRET_NOTE.encode()).decode(), unit="acct-9.ticket",
                    tells=[base64.b32encode(_SECRET_NOTE.encode()).decode()[:40]]),
    # forms a reader undoes in the head (listed units only)
    "written backwards": _user(f"ticket {TICKET[::-1]} reversed", unit="acct-9.ticket", tells=[TICKET[::-1]]),
    "rot13": _user(f"ticket {codecs.encode(TICKET, 'rot13')}", unit="acct-9.ticket",
                   tells=[codecs.encode(TICKET, "rot13")]),
    "a dot after each letter": _user("signed T.h.e.o.d.o.r.a V.a.n.t.e.r.p.o.o.l.", unit="acct-9.full_name",
                                     tells=["T.h.e.o.d.o.r.a", "V.a.n.t.e.r.p.o.o.l"]),
    "digits spelled out": _user("acct five three nine four eight seven two six one", unit="acct-9.account",
                                tells=["five three nine four eight seven two six one"]),
    "base85": _user("b85 " + base64.b85encode(_SECRET_NOTE.encode()).decode(), unit="acct-9.ticket",
                    tells=[base64.b85encode(_SECRET_NOTE.encode()).decode()[:40]]),
    "ascii85": _user("a85 " + base64.a85encode(_SECRET_NOTE.encode(), adobe=True).decode(), unit="acct-9.ticket",
                     tells=[base64.a85encode(_SECRET_NOTE.encode(), adobe=True).decode()[:40]]),
    # numbers
    "negative JSON number": Case([Turn("user", "pay it")], ["-539487261"], "acct-9.account",
                                 tool_schema={"type": "integer", "default": -539487261}),
    "float JSON number": Case([Turn("user", "pay it")], ["539487261.0"], "acct-9.account",
                              tool_schema={"type": "number", "enum": [539487261.0]}),
    "underscore separators": _user("acct 539_48_7261", unit="acct-9.account", tells=["539_48_7261"]),
    "comma separators": _user("acct 5,3,9,4,8,7,2,6,1", unit="acct-9.account", tells=["5,3,9,4,8,7,2,6,1"]),
    # names in identifier shapes
    "name with an underscore": Case([Turn("user", "from Theodora_Vanterpool: hi")], ["Theodora_Vanterpool"],
                                    "acct-9.full_name"),
    "name with a hyphen": _user("signed Theodora-Vanterpool", unit="acct-9.full_name",
                                tells=["Theodora-Vanterpool"]),
    "name in camel case": _user("user TheodoraVanterpool logged in", unit="acct-9.full_name",
                                tells=["TheodoraVanterpool"]),
    # private keys without their whole armor
    "private key without its END line": _user("my key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
                                              + "\n".join(_KEY_BODY) + "\n", tells=_KEY_BODY),
    "PGP private key block": _user("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(_PGP_BODY)
                                   + "\n=Xq2R\n-----END PGP PRIVATE KEY BLOCK-----", tells=_PGP_BODY),
    # a dashed SSN whose number is not a valid SSN
    "dashed SSN in the 9xx area": _user("SSN on file: 923-45-6789", tells=["923-45-6789"]),
    "dashed SSN in the ITIN range, in a system prompt": Case([Turn("system", "Applicant 912-70-1234 is pending."),
                                                             Turn("user", "status?")], ["912-70-1234"]),
}


# --- the cases in each surface's wire shape --------------------------------------------------------------------


def _tools_chat(case: Case) -> list[dict[str, Any]]:
    if case.tool_schema is None:
        return []
    return [{"type": "function", "function": {"name": "pay", "parameters": {
        "type": "object", "properties": {"amount": case.tool_schema}}}}]


def chat_body(case: Case) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for turn in case.turns:
        if turn.role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
            if turn.reasoning:
                message["reasoning_content"] = turn.reasoning
            if turn.calls:
                message["tool_calls"] = [{"id": i, "type": "function", "function": {
                    "name": n, "arguments": json.dumps(a)}} for i, n, a in turn.calls]
            messages.append(message)
        elif turn.role == "tool":
            messages.append({"role": "tool", "tool_call_id": turn.call_id, "content": [
                {"type": "text", "text": t} for t in turn.blocks()]})
        else:
            messages.append({"role": turn.role, "content": [{"type": "text", "text": t} for t in turn.blocks()]})
    body: dict[str, Any] = {"model": "ecgw/cloud-only", "messages": messages}
    if tools := _tools_chat(case):
        body["tools"] = tools
    return body


def responses_body(case: Case) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for turn in case.turns:
        if turn.role == "assistant":
            if turn.reasoning:
                items.append({"type": "reasoning", "summary": [{"type": "summary_text", "text": turn.reasoning}]})
            if turn.text:
                items.append({"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": turn.text}]})
            items += [{"type": "function_call", "call_id": i, "name": n, "arguments": json.dumps(a)}
                      for i, n, a in turn.calls]
        elif turn.role == "tool":
            items.append({"type": "function_call_output", "call_id": turn.call_id,
                          "output": [{"type": "input_text", "text": t} for t in turn.blocks()]})
        else:
            items.append({"type": "message", "role": turn.role,
                          "content": [{"type": "input_text", "text": t} for t in turn.blocks()]})
    body: dict[str, Any] = {"model": "ecgw/cloud-only", "input": items, "store": False}
    if case.tool_schema is not None:
        body["tools"] = [{"type": "function", "name": "pay", "parameters": {
            "type": "object", "properties": {"amount": case.tool_schema}}}]
    return body


def messages_body(case: Case) -> dict[str, Any]:
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += blocks
        else:
            messages.append({"role": role, "content": blocks})

    for turn in case.turns:
        if turn.role == "system":
            system += [{"type": "text", "text": t} for t in turn.blocks()]
        elif turn.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if turn.reasoning:
                blocks.append({"type": "thinking", "thinking": turn.reasoning, "signature": "sig"})
            if turn.text:
                blocks.append({"type": "text", "text": turn.text})
            blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in turn.calls]
            add("assistant", blocks)
        elif turn.role == "tool":
            add("user", [{"type": "tool_result", "tool_use_id": turn.call_id,
                          "content": [{"type": "text", "text": t} for t in turn.blocks()]}])
        else:
            add("user", [{"type": "text", "text": t} for t in turn.blocks()])
    body: dict[str, Any] = {"model": "ecgw/cloud-only", "max_tokens": 64, "messages": messages}
    if system:
        body["system"] = system
    if case.tool_schema is not None:
        body["tools"] = [{"name": "pay", "input_schema": {"type": "object",
                                                          "properties": {"amount": case.tool_schema}}}]
    return body


SURFACES = {"chat/completions": chat_body, "responses": responses_body, "messages": messages_body}


@pytest.fixture(scope="module")
def gw(module_gateway, tmp_path_factory):
    """One gateway for every case, its units from a file (every session has them; each case and surface has a
    session of its own): a gateway and a units upload per case cost ~2 min."""
    units = tmp_path_factory.mktemp("evasions") / "sensitive_items.json"
    units.write_text(json.dumps(UNITS))
    return module_gateway(privacy={"layers": {"ner": False}, "units_files": [str(units)]})


def _sent_text(body: dict[str, Any]) -> str:
    """What the cloud received, as a reader of it sees it: the JSON, JSON strings inside strings decoded too."""
    out = [json.dumps(body, ensure_ascii=False)]

    def strings(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                strings(item)
        elif isinstance(value, list):
            for item in value:
                strings(item)
        elif isinstance(value, str):
            out.append(value)

    strings(body)
    return "\n".join(out)


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_evasion_leaves_replaced_or_not_at_all_and_exposure_says_so(gw, cloud, name):
    case = CASES[name]
    for surface, build in SURFACES.items():
        session = f"ev-{surface.split('/')[0]}-{name.replace(' ', '-')}"
        cloud.reset()
        cloud.script(Reply(content="ok"))
        response = httpx.post(f"{gw.base_url}/{surface}", json=build(case), timeout=60,
                              headers={"X-Session-Id": session})
        assert response.status_code == 200, (surface, response.text)
        sent = "\n".join(_sent_text(body) for body in cloud.requests)
        leaked = all(tell in sent for tell in case.tells)
        if case.unit is not None and leaked:  # what it reports for a unit that left raw
            report = httpx.get(f"{gw.url}/v1/sessions/{session}/privacy").json()
            status = {u["unit_id"]: u["status"] for u in report["units"]}[case.unit]
            assert status == "exposed", (surface, status)
        assert not leaked, f"{surface}: the cloud received {case.tells} raw"
