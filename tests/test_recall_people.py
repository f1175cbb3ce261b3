"""The ``people`` variants of the recall corpus: seeded, two pools with nothing in common (names, role words,
labels, needed strings), every value in its body, every needed string there as written."""

from __future__ import annotations

import dataclasses
import json

import pytest

from benchmarks.recall import people
from benchmarks.recall.score import leaked, normalised_text


def _fingerprint(case: people.Case) -> str:
    return json.dumps([case.body, [dataclasses.asdict(v) for v in case.values], case.needed], ensure_ascii=False)


@pytest.mark.parametrize("pool", people.POOL_NAMES)
def test_a_case_is_the_same_for_the_same_seed(pool: str) -> None:
    assert _fingerprint(people.make_case(8100, 3, pool)) == _fingerprint(people.make_case(8100, 3, pool))
    assert _fingerprint(people.make_case(8100, 3, pool)) != _fingerprint(people.make_case(8101, 3, pool))


def test_the_pools_share_nothing_a_rule_could_be_tuned_on() -> None:
    a, b = people.POOLS["a"], people.POOLS["b"]
    for name in ("en_first", "en_last", "zh_given", "roles_en", "roles_zh", "dob_en", "dob_zh", "pay_en", "pay_zh",
                 "addr_en", "addr_zh", "places", "towns", "zh_compounds", "orgs", "orgs_zh", "products", "events",
                 "subjects"):
        assert set(getattr(a, name)).isdisjoint(getattr(b, name)), name
    assert set(a.zh_surnames).isdisjoint(b.zh_surnames)


@pytest.mark.parametrize("pool", people.POOL_NAMES)
def test_every_value_is_in_its_body_and_every_needed_string_as_written(pool: str) -> None:
    families = set()
    for i in range(7):  # every container once
        case = people.make_case(8200, i, pool)
        sent = normalised_text(case.body)
        assert [v.text for v in case.values if not leaked(v, sent)] == [], case.id
        raw = json.dumps(case.body, ensure_ascii=False)
        assert case.needed and all(n in raw for n in case.needed)
        families |= {v.field for v in case.values}
    assert {"person_zh", "person_en", "given_name", "dob", "pay", "home_address"} <= families
