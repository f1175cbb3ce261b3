"""The detector layers, one by one, and the checksums behind them."""

from __future__ import annotations

import json

import pytest

from privacy.detect import PatternDetector, SecretDetector, UnitMatcher, cn_resident_id_ok, iban_ok, luhn_ok, units_of
from tests.privacy.helpers import units_document


def types(findings):
    return {(f.type, f.value) for f in findings}


@pytest.mark.parametrize("text", [
    "call 415-555-0132", "call (415) 555-0132", "call 415.555.0132", "call +1 415 555 0132",
    "call 4155550132 now", "call 415 555 0132", r"{\"phone\": \"415-555-0132\"}",
])
def test_listed_phone_matches_in_any_separator(text):
    matcher = UnitMatcher(units_of(units_document()))
    found = [f for f in matcher.find(text) if f.unit_id == "cust-7.phone"]
    assert len(found) == 1 and found[0].key == "unit:cust-7.phone"


def test_listed_values_match_case_folded_and_escaped():
    matcher = UnitMatcher(units_of(units_document()))
    text = ("to: maria.gonzalez@ACME-MAIL.com; " + json.dumps({"who": "张伟"}) + " "
            + json.dumps(json.dumps({"name": "Maria  Gonzalez"})))
    ids = sorted(f.unit_id for f in matcher.find(text))
    assert ids == ["cust-7.email", "cust-7.full_name", "emp-2.姓名"]


def test_short_numeric_unit_needs_word_boundaries():
    matcher = UnitMatcher(units_of(units_document()))
    assert [f.unit_id for f in matcher.find("salary 38500 CNY")] == ["emp-2.salary"]
    assert matcher.find("order 1385000 and 385001") == []


@pytest.mark.parametrize(("text", "type_"), [
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "CLOUD_SECRET_KEY"),
    ("token ghp_" + "a1B2" * 9, "GITHUB_TOKEN"),
    ("glpat-abcdefghij1234567890", "GITLAB_TOKEN"),
    ("xoxb-1234567890-abcdefghij", "SLACK_TOKEN"),
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx12", "OPENAI_KEY"),
    ("key sk-ant-api03-abcdefghijklmnopqrstuvwx", "ANTHROPIC_KEY"),
    ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "GOOGLE_API_KEY"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "JWT"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "PRIVATE_KEY"),
    ("DATABASE_URL=postgresql://app:s3cretpw@db.internal:5432/app", "DB_PASSWORD"),
    ('{"db_password": "Tr0ub4dor&3"}', "PASSWORD"),
    ("smtp:\n  password: hunter2hunter", "PASSWORD"),
    ("Authorization: Bearer abcdefghijklmnop1234567890", "BEARER_TOKEN"),
])
def test_secrets(text, type_):
    assert type_ in {f.type for f in SecretDetector().find(text)}


def test_secret_lookalikes_are_left_alone():
    text = "max_tokens: 4096\npassword_file: /etc/app/pw\ntoken_count=12\nsecret: ${VAULT_SECRET}"
    assert SecretDetector().find(text) == []


@pytest.mark.parametrize(("text", "type_", "value"), [
    ("mail Bob.Smith@Example.com today", "EMAIL_ADDRESS", "Bob.Smith@Example.com"),
    ("手机 138-1234-5678", "PHONE_NUMBER", "138-1234-5678"),
    ("手机13812345678。", "PHONE_NUMBER", "13812345678"),
    ("tel +86 138 1234 5678", "PHONE_NUMBER", "+86 138 1234 5678"),
    ("座机 010-62345678", "PHONE_NUMBER", "010-62345678"),
    ("UK mobile +44 7700 900123", "PHONE_NUMBER", "+44 7700 900123"),
    ("card 4111 1111 1111 1111", "CREDIT_CARD", "4111 1111 1111 1111"),
    ("IBAN GB82 WEST 1234 5698 7654 32", "IBAN_CODE", "GB82 WEST 1234 5698 7654 32"),
    ("SSN 123-45-6789", "US_SSN", "123-45-6789"),
    ("身份证号 11010519491231002X", "CN_RESIDENT_ID", "11010519491231002X"),
    ("护照号码: E12345678", "PASSPORT", "E12345678"),
    ("银行卡号：6222 0212 3456 7890 123", "BANK_ACCOUNT", "6222 0212 3456 7890 123"),
    ("client 81.2.69.160 logged in", "IP_ADDRESS", "81.2.69.160"),
    ("姓名：李娜，年龄 32", "PERSON", "李娜"),
    ("地址：上海市浦东新区世纪大道100号", "LOCATION", "上海市浦东新区世纪大道100号"),
])
def test_pii_patterns(text, type_, value):
    assert (type_, value) in types(PatternDetector().find(text))


@pytest.mark.parametrize("text", [
    "card 4111 1111 1111 1112",  # Luhn fails
    "id 110105194912310021",  # check digit fails
    "see http://127.0.0.1:8080/api and commit 3f2a9c1d4e5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f",
    "uuid 123e4567-e89b-12d3-a456-426614174000 ticket JIRA-4821 order 20240115",
    "git@github.com:acme/app.git",
])
def test_patterns_leave_lookalikes(text):
    assert PatternDetector().find(text) == []


def test_checksums():
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("GB82WEST12345698765432") and not iban_ok("GB82WEST12345698765433")
    assert cn_resident_id_ok("11010519491231002X") and not cn_resident_id_ok("110105194912310021")


@pytest.mark.parametrize(("text", "phone"), [
    ("Call Dana (phone +1 415-555-0137) today.", "+1 415-555-0137"),
    ("(+49 30 901820)", "+49 30 901820"),
    ("+44 (0)20 7946 0958", "+44 (0)20 7946 0958"),
    ("+1 (415) 555-0137", "+1 (415) 555-0137"),
])
def test_an_international_phone_keeps_only_its_own_parentheses(text: str, phone: str) -> None:
    assert {f.value for f in PatternDetector().find(text) if f.type == "PHONE_NUMBER"} == {phone}


@pytest.mark.parametrize("text", ["bind = 10.20.30.40:8080", "upstream 192.168.1.17 is up", "172.16.4.2 - - [GET /]",
                                  "fd12:3456:789a:0001:0000:0000:0000:0001 is the pod"])
def test_a_private_address_is_not_sensitive(text: str) -> None:
    assert [f for f in PatternDetector().find(text) if f.type == "IP_ADDRESS"] == []


def test_recurrences_are_the_literal_patterns_matches_at_every_position() -> None:
    """The detectors find where many values recur in one pass (``recurrence``) where they compiled
    ``_literal_pattern`` per value: at every position, the longest form whose pattern matches there — the same spans,
    case-sensitive and under IGNORECASE, on texts built to meet every edge (words glued to letters, digits and ``_``,
    runs of mixed whitespace, overlapping repeats, prefixes of one another, case)."""
    import random
    import re

    from privacy.detect.recurrence import recurrences
    from privacy.detect.units import _literal_pattern

    rng = random.Random(5)
    alphabet = ["a", "A", "b", "B", "1", "_", "-", ".", " ", "\t", "\n", "\u2003", "é", "ab", "Ab"]
    for _ in range(800):
        forms = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 3))]
        forms = [form.strip() for form in forms if form.strip()]  # a value is found without its edges' whitespace
        if not forms:
            continue
        text = "".join(rng.choice(alphabet + forms + [f.upper() for f in forms]) for _ in range(rng.randint(0, 14)))
        for flags in (0, re.IGNORECASE):
            patterns = [re.compile(_literal_pattern(form), flags) for form in forms]
            expected = []
            for pos in range(len(text)):
                ends = [m.end() for p in patterns if (m := p.match(text, pos)) is not None]
                if ends:
                    expected.append((pos, max(ends)))
            found = [(s, e) for s, e, _ in recurrences(text, {f: f for f in forms}, ignore_case=bool(flags))]
            assert found == expected, (forms, text, flags)


def test_values_present_in_one_pass_are_those_in_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last check asks which vault values stand in a body's texts in one pass when many values meet long texts
    (``recurrence.present_in``): the same answer as ``value in text`` for each, a value that only begins a longer
    one found there (``Mary`` in ``Mary Jones``) and values with whitespace at their ends included."""
    import random

    from privacy.detect import recurrence

    monkeypatch.setattr(recurrence, "_PER_VALUE", 0)  # always the one pass
    rng = random.Random(3)
    alphabet = ["a", "b", "ab", "c", " ", "Ma", "ry", "\n"]
    for _ in range(2000):
        values = list({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))) for _ in range(6)})
        texts = ["".join(rng.choice(alphabet + values) for _ in range(rng.randint(0, 10))) for _ in range(3)]
        expected = [{v for v in values if v in text} for text in texts]
        assert recurrence.present_in(values, texts) == expected, (values, texts)
        assert recurrence.present(values, texts[1]) == expected[1], (values, texts)
