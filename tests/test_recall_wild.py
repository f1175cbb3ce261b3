"""The ``wild`` variants of the recall corpus: seeded, two pools with no label in common, every value in its body."""

from __future__ import annotations

import json
import random
import re

import phonenumbers
import pytest

from benchmarks.recall import wild
from benchmarks.recall import wild_values as wv
from benchmarks.recall.score import leaked, normalised_text


def _fingerprint(case: object) -> str:
    return json.dumps([case.body, [v.__dict__ for v in case.values], case.needed],  # type: ignore[attr-defined]
                      ensure_ascii=False, sort_keys=True)


@pytest.mark.parametrize("pool", wild.POOL_NAMES)
def test_a_case_is_the_same_for_the_same_seed(pool: str) -> None:
    assert _fingerprint(wild.make_case(7000, 3, pool)) == _fingerprint(wild.make_case(7000, 3, pool))
    assert _fingerprint(wild.make_case(7000, 3, pool)) != _fingerprint(wild.make_case(7001, 3, pool))


def test_the_pools_share_no_label_even_without_case_and_punctuation() -> None:
    def norm(label: str) -> str:
        return re.sub(r"[^0-9a-z\u4e00-\u9fff]", "", label.lower())

    a, b = wild.pool_labels("a"), wild.pool_labels("b")
    assert a and b
    assert {norm(x) for x in a}.isdisjoint({norm(x) for x in b})


def test_each_case_uses_only_its_own_pools_labels() -> None:
    other = {"a": wild.pool_labels("b"), "b": wild.pool_labels("a")}
    for pool in wild.POOL_NAMES:
        for i in range(10):
            labels = {v.label_en for v in wild.make_case(11, i, pool).values if v.detectable}
            assert labels and labels.isdisjoint(other[pool])


@pytest.mark.parametrize("pool", wild.POOL_NAMES)
def test_every_annotated_value_is_in_its_body_as_the_scorer_reads_it(pool: str) -> None:
    for i in range(3):
        case = wild.make_case(7100, i, pool)
        sent = normalised_text(case.body)
        assert case.values and case.needed
        missing = [v.text for v in case.values if not leaked(v, sent)]
        assert missing == [], case.id
        raw = json.dumps(case.body, ensure_ascii=False)
        assert all(n in raw for n in case.needed)


def test_the_new_generators_keep_real_check_digits() -> None:
    rng = random.Random(5)
    for _ in range(50):
        digits = re.sub(r"\D", "", wv.nhs(rng)[1])
        assert int(digits[9]) == (11 - sum(int(c) * (10 - i) for i, c in enumerate(digits[:9])) % 11) % 11
        digits = re.sub(r"\D", "", wv.tfn(rng)[1])
        assert sum(int(c) * w for c, w in zip(digits, (1, 4, 3, 7, 5, 8, 6, 9, 10), strict=True)) % 11 == 0
        digits = re.sub(r"\D", "", wv.sin_ca(rng)[1])
        luhn = sum(int(c) if i % 2 == 0 else sum(divmod(2 * int(c), 10)) for i, c in enumerate(reversed(digits)))
        assert luhn % 10 == 0
        assert phonenumbers.is_valid_number(phonenumbers.parse(re.sub(r"[^\d+]", "", wv.cn_mobile(rng)[1]), "CN"))
    assert wv.verhoeff_complete("236") == "2363" and wv.verhoeff_complete("75872") == "758722"  # published examples
