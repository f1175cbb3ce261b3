"""Exposure reads the evasions exactly as the last check does: every case of ``test_evasions`` that carries a listed
unit, as the body would leave if nothing replaced it, is found by the last check's scan and reported by
``units_left_raw`` as that same unit — left raw means exposed, never not_sent."""

from __future__ import annotations

from typing import Any

import pytest

from privacy.audit.exposure import units_left_raw
from privacy.detect import UnitMatcher, UnitsDocument, units_of
from privacy.lastcheck import EgressCheck
from privacy.vault import Vault
from tests.privacy.lastcheck.test_evasions import CASES, UNITS, chat_body, messages_body

MATCHER = UnitMatcher(units_of(UnitsDocument.model_validate(UNITS)))
LISTED = sorted(name for name, case in CASES.items() if case.unit is not None)


def _chat_shape(name: str) -> dict[str, Any]:
    """The case as the cloud would get it (Messages' joins included, for the cases a join creates)."""
    case = CASES[name]
    if "blocks" not in name:
        return chat_body(case)
    from gateway.surfaces.messages_request import to_chat  # what the Messages surface hands the pipeline

    return to_chat(messages_body(case), native=False)[0]


@pytest.mark.parametrize("name", LISTED)
def test_a_unit_left_raw_is_exposed_and_the_last_check_finds_the_same(name: str) -> None:
    body = _chat_shape(name)
    found = sorted({h.finding.unit_id for h in EgressCheck([]).read(body, MATCHER, Vault()).hits if h.finding.unit_id})
    assert units_left_raw(body, MATCHER) == found
    assert CASES[name].unit in found
