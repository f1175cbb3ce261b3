"""What "left raw" means is decided once: the exposure recorded for a cloud call is exactly the set of listed units
the last check's own scan (``privacy.lastcheck``, with the one ``UnitMatcher``) finds in the body that was sent."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from privacy.audit import units_left_raw
from privacy.detect import UnitMatcher, units_of
from privacy.lastcheck import EgressCheck
from privacy.vault import Vault
from tests.privacy.helpers import units_document

MATCHER = UnitMatcher(units_of(units_document()))


def _user(*texts: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": text} for text in texts]}


BODIES = {
    "plain": _user("Call 415-555-0132 about Maria Gonzalez."),
    "wide separators": _user("call (415)  555  -  0132 today"),
    "glued name": _user("login: MariaGonzalez, underscore: Maria_Gonzalez"),
    "case and spacing": _user("MARIA\n  gonzalez signed"),
    "json key": _user(json.dumps({"by_email": {"Maria.Gonzalez@acme-mail.com": "x"}})),
    "escaped": _user(json.dumps({"name": "张伟"}, ensure_ascii=True)),
    "base64": _user("blob " + base64.b64encode(b"salary 38500 for id 11010519491231002X").decode()),
    "number": {"model": "m", "messages": [{"role": "user", "content": "x"}], "metadata": {"salary": 38500}},
    "split across messages": _user("her name is Maria ", "Gonzalez and more"),
    "split across parts": {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "phone 415-555-"}, {"type": "text", "text": "0132"}]}]},
    "nothing": _user("Call [PHONE_001] about [FULL_NAME_001]."),
}


def _last_check_finds(body: dict[str, Any]) -> list[str]:
    hits = EgressCheck([]).read(body, MATCHER, Vault()).hits
    return sorted({hit.finding.unit_id for hit in hits if hit.finding.unit_id})


@pytest.mark.parametrize("name", list(BODIES))
def test_exposure_is_what_the_last_check_finds_in_the_sent_body(name: str) -> None:
    assert units_left_raw(BODIES[name], MATCHER) == _last_check_finds(BODIES[name])


def test_the_forms_a_reader_sees_count_and_others_do_not() -> None:
    assert units_left_raw(BODIES["wide separators"], MATCHER) == ["cust-7.phone"]
    assert units_left_raw(BODIES["glued name"], MATCHER) == ["cust-7.full_name"]  # an identifier's shape of it
    assert units_left_raw(BODIES["case and spacing"], MATCHER) == ["cust-7.full_name"]
    assert units_left_raw(BODIES["split across messages"], MATCHER) == ["cust-7.full_name"]
    assert units_left_raw(BODIES["number"], MATCHER) == ["emp-2.salary"]
    assert units_left_raw(BODIES["nothing"], MATCHER) == []
    assert units_left_raw(BODIES["plain"], None) == []
