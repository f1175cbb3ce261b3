"""Codes after their labels, with no unit list (issue 37): a PIN, an OTP, a one-time, verification or access code is
an ``ACCESS_CODE`` (data class ``secrets``), a card's CVV/CVC a ``CARD_SECURITY_CODE`` — in English and Chinese; a
status, postal, area or exit code is none of them."""

from __future__ import annotations

import pytest

from privacy.detect import Target
from privacy.factory import build_detector
from privacy.settings import PrivacySettings
from tests.privacy.helpers import protector

FOUND = [
    ("PIN: 4921", "ACCESS_CODE", "4921"), ("my PIN is 4921", "ACCESS_CODE", "4921"),
    ("PIN 4921", "ACCESS_CODE", "4921"), ("pin code: 4921", "ACCESS_CODE", "4921"),
    ("one-time code 582913", "ACCESS_CODE", "582913"), ("one time passcode: 582913", "ACCESS_CODE", "582913"),
    ("OTP: 582913", "ACCESS_CODE", "582913"), ("your OTP is 582913", "ACCESS_CODE", "582913"),
    ("Your verification code is 582913.", "ACCESS_CODE", "582913"), ("auth code: 58-29-13", "ACCESS_CODE", "58-29-13"),
    ("passcode: 9921", "ACCESS_CODE", "9921"), ("security code: 482913", "ACCESS_CODE", "482913"),
    ("security code: 1234", "CARD_SECURITY_CODE", "1234"), ("CVV: 123", "CARD_SECURITY_CODE", "123"),
    ("CVC 123", "CARD_SECURITY_CODE", "123"), ("card CVV 123", "CARD_SECURITY_CODE", "123"),
    ("验证码：582913", "ACCESS_CODE", "582913"), ("短信验证码是 582913", "ACCESS_CODE", "582913"),
    ("您的验证码为582913，5分钟内有效", "ACCESS_CODE", "582913"), ("动态码 582913", "ACCESS_CODE", "582913"),
    ("PIN码：4921", "ACCESS_CODE", "4921"), ("取件码：8-2-1-3", "ACCESS_CODE", "8-2-1-3"),
    ("安全码 123", "CARD_SECURITY_CODE", "123"), ("CVV码：123", "CARD_SECURITY_CODE", "123"),
]
KEPT = ["error code: 404", "HTTP status code 500", "zip code 94103", "area code 415", "the code is in main.py",
        "exit code 1", "ISO country code 826", "verification code length: 6", "PIN diagram 4", "room 4921",
        "at one time: the pipeline ran", "状态码：200", "邮政编码 100080"]


@pytest.fixture(scope="module")
def detect():
    detector = build_detector(PrivacySettings.model_validate({"layers": {"ner": False}}))
    return lambda text: [(f.type, f.value) for f in
                         detector.detect_shared([Target(text)], scope="codes", profile="balanced")[0]]


@pytest.mark.parametrize(("text", "type_", "value"), FOUND)
def test_a_code_after_its_label_is_found(detect, text, type_, value):
    assert (type_, value) in detect(text)


@pytest.mark.parametrize("text", KEPT)
def test_other_codes_stay(detect, text):
    assert not [found for found in detect(text) if found[0] in ("ACCESS_CODE", "CARD_SECURITY_CODE")]


async def test_a_pin_and_a_one_time_code_do_not_leave_raw():
    p = protector(database_url=None, layers={"ner": False})
    body = {"messages": [{"role": "user", "content": "PIN: 4921, and the one-time code 582913 came by SMS."}]}
    sent = (await p.scrub(body, session_id="s")).body["messages"][0]["content"]
    assert "4921" not in sent and "582913" not in sent and "[ACCESS_CODE_" in sent
