"""The recall scorer finds every annotated value that would leave, in any surface form, and nothing that is not there.

Its leak figures are only honest if an unprotected body (every value sent raw) scores 100 % and a body whose values
were replaced by placeholders scores 0 % for those values.
"""

from __future__ import annotations

import base64
import json
import random
import urllib.parse
from typing import Any

import pytest

from benchmarks.recall import corpus, values, wild
from benchmarks.recall.__main__ import unprotected
from benchmarks.recall.corpus import Case
from benchmarks.recall.score import Figures, leaked, normalised_text
from benchmarks.recall.values import Value

MRZ = "G142261138IND8403238F2905202<<<<<<<<<<<<<<04"
PEM_CORE = "UdN5gS/ieSsViJVuDvXGNdjAswW/ZdnUyTb8y7F8DmcRjvYF0rTq0x5fGk2hWm1aQe8LpZc3Vb7NnYt4RsXuJoKd"


def _found(value: Value, body: dict[str, Any]) -> bool:
    return leaked(value, normalised_text(body))


def _tool(content: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "tool", "tool_call_id": "call_1", "content": content}]}


def test_an_mrz_line_is_found_by_its_document_number_not_its_filler() -> None:
    mrz = Value(MRZ, "identity", "mrz", "MRZ", "机读码")
    assert _found(mrz, _tool(f"mrz: {MRZ}"))
    assert _found(mrz, _tool(f"mrz: {MRZ[:22]}\n{MRZ[22:]}"))  # wrapped, as the hard corpus writes it
    assert _found(mrz, _tool("passport G14226113 on file"))  # the number alone identifies the holder
    assert not _found(mrz, _tool(f"mrz: <PASSPORT_1>{MRZ[9:]}"))  # birth date and filler alone do not


def test_a_name_line_of_an_mrz_is_found_by_the_name() -> None:
    line = "P<GBRWHITFIELD<<JAMES<OLIVER" + "<" * 16
    value = Value(line, "identity", "mrz", "MRZ", "机读码")
    assert _found(value, _tool(f"holder {line}")) and _found(value, _tool("Whitfield, James Oliver"))
    assert not _found(value, _tool("P<GBR<PERSON_1><<<<<<<<<<<<<<<<"))


def test_a_value_inside_json_held_in_a_string_is_found_at_any_depth() -> None:
    pem = f"-----BEGIN PRIVATE KEY-----\nAAAA\n{PEM_CORE}\nBBBB\n-----END PRIVATE KEY-----"
    key = Value(pem, "credentials", "private_key", "private_key", "私钥", core=PEM_CORE)
    wrapped = Value("Noah Wh\nitfield", "identity", "full_name", "name", "姓名")
    once = json.dumps({"deploy_key": pem, "person": wrapped.text})
    twice = json.dumps({"result": once})
    for content in (once, twice, json.dumps({"result": twice})):
        assert _found(key, _tool(content)) and _found(wrapped, _tool(content)), content[:60]


def test_percent_escaped_full_width_digits_are_found() -> None:
    phone = Value("０３０ １２３４５６７８", "contact", "phone", "phone", "电话")
    escaped = urllib.parse.quote(phone.text)
    assert "%EF%BC%90" in escaped
    assert _found(phone, _tool(f"GET /find?tel={escaped}"))
    assert _found(phone, _tool(f"GET /find?tel={urllib.parse.quote(escaped)}"))  # escaped twice


def test_every_other_surface_form_is_found() -> None:
    address = Value("12 Hauptstraße, 10115 Berlin", "contact", "address", "address", "地址")
    email = Value("maria.gonzalez@acme-mail.com", "contact", "email", "email", "邮箱")
    card = Value("4929 1034 5532 8817", "financial", "card_number", "card number", "银行卡号")
    assert _found(address, _tool("ADDRESS: 12 HAUPTSTRASSE, 10115 BERLIN"))  # case folding, not only lower()
    assert _found(email, _tool("maria.gonzalez&#64;acme-mail.com"))
    assert _found(email, _tool("maria.gon\u200bzalez@acme\u2060-mail.com"))
    assert _found(email, _tool("maria.gonzalez\\u0040acme-mail.com"))
    assert _found(email, _tool("ｍａｒｉａ．ｇｏｎｚａｌｅｚ＠ａｃｍｅ－ｍａｉｌ．ｃｏｍ"))
    assert _found(card, _tool("card = 4929 1034\n        5532 8817"))  # an ini continuation line
    assert _found(email, _tool("blob " + base64.b64encode(f"contact {email.text} today".encode()).decode()))
    token = base64.b64encode(b"deploy:Xk2pQ9vLm3RtZw").decode()
    basic = Value(f"Basic {token}", "credentials", "basic_auth", "Authorization", "认证头", core=token)
    assert _found(basic, _tool("curl -u deploy:Xk2pQ9vLm3RtZw https://ci.local"))  # what the token decodes to


def test_a_value_that_is_not_there_is_not_found() -> None:
    card = Value("4929 1034 5532 8817", "financial", "card_number", "card number", "银行卡号")
    for text in ("4929 1034 5532 88170", "card <CARD_1>", "14929 1034 5532 8817", "4929 1034 ---- 5532 8817"):
        assert not _found(card, _tool(text)), text


CORPORA = [("default", 1000), ("default", 2000), ("hard", 1000), ("hard", 3000),
           ("wild-a", 7000), ("wild-b", 7000), ("wild-a", 2000), ("wild-b", 1000)]
CASES = 6


def _corpus(kind: str, seed: int) -> list[Case]:
    if kind.startswith("wild-"):
        return wild.corpus(seed, CASES, kind.removeprefix("wild-"))
    return corpus.corpus(seed, CASES, hard=kind == "hard")


@pytest.mark.parametrize(("kind", "seed"), CORPORA)
def test_an_unprotected_body_leaks_every_value_in_it(kind: str, seed: int) -> None:
    variant = kind if kind.startswith("wild-") else None
    figures = unprotected([seed], CASES, hard=kind == "hard", variant=variant)
    assert figures.missed == []
    assert figures.leak() == 1.0 and figures.leaked_all == figures.weight_all > 0
    for case_id, field_, _ in figures.absent:  # only values a JSON record overwrote (two under one key)
        case = next(c for c in _corpus(kind, seed) if c.id == case_id)
        assert sum(v.field == field_ for v in case.values) >= 2


def _forms(text: str) -> list[str]:
    forms = {text, json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1],
             urllib.parse.quote_plus(text), urllib.parse.quote(text, safe=""), text.replace("\n", "\n    ")}
    return sorted(forms, key=len, reverse=True)


def _replace(body: Any, gone: list[Value]) -> Any:
    """The body as a protector that replaced ``gone`` (every form they were written in) would send it."""
    if isinstance(body, dict):
        return {_replace(k, gone): _replace(v, gone) for k, v in body.items()}
    if isinstance(body, list):
        return [_replace(v, gone) for v in body]
    if isinstance(body, str):
        for n, value in enumerate(gone):
            for form in _forms(value.text) + _forms(value.secret):
                body = body.replace(form, f"<PRIVATE_{n}>")
        return body
    return body


@pytest.mark.parametrize(("kind", "seed"), CORPORA)
def test_replaced_values_do_not_leak_and_the_others_still_do(kind: str, seed: int) -> None:
    for case in _corpus(kind, seed)[:3]:
        original = normalised_text(case.body)
        scored = [v for v in case.values if leaked(v, original)]
        gone, kept = scored[::2], scored[1::2]
        sent = normalised_text(_replace(case.body, gone))
        assert [v.text for v in gone if leaked(v, sent)] == [], case.id
        kept = [v for v in kept if all(g.secret not in v.text and v.secret not in g.text for g in gone)]
        assert [v.text for v in kept if not leaked(v, sent)] == [], case.id


def test_figures_count_a_value_missing_from_the_body_apart() -> None:
    card = values.card_value(random.Random(3))
    name = Value("Maria Rossi", "identity", "full_name", "name", "姓名")
    case = Case("c", False, _tool(f"card {card.text}"), values=[card, name])
    figures = Figures()
    figures.add(case, _tool("card <CARD_1>"))
    assert figures.leak() == 0.0 and [a[1] for a in figures.absent] == ["full_name"]
    assert figures.weight["financial"] == card.weight and figures.weight["identity"] == 0
