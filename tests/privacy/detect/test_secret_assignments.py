"""The password-assignment pattern tried only at the runs that hold a key word finds exactly what trying it at every
position finds (``privacy.detect.secrets.assignments``)."""

from __future__ import annotations

import json

import pytest

from benchmarks.recall.real.corpus import load
from privacy.detect.secrets import _ASSIGNMENT, assignments
from tests.privacy.corpus.cases import CASES

CRAFTED = [
    "password=hunter2x", "db.password: 's3cr3t!!'", "x.api_key=abcd1234 and token: zzzz9999", "用户密码：abc12345",
    "密码密码=abcd1234", "口令: Qwerty!23", "my_secret_token = \"tok-9f8e7d6c\"", "passwordpassword=abcdefgh",
    "AUTH_TOKEN=eyJabc.def.ghi token=1", "{\\\"apiKey\\\": \\\"k-1234567890\\\"}", "pwd=1234 pwd=123456",
    "SECRET_KEY_FILE=/etc/x secret=abcd", "-password-=abcd", "a.b-c_d.credentials => 'x9y8z7w6'",
    "refresh_token：ZZZZ1111 access-token=YYYY2222", "secretsecretsecret" * 50 + "=abcd1234", "Password\t:\tHunter22",
]


def _texts() -> list[str]:
    texts = list(CRAFTED)
    texts += [json.dumps(case["messages"], ensure_ascii=False) for case in CASES]
    for split in ("dev", "heldout"):
        texts += [prompt.text for prompt in load(split)]
    return texts


@pytest.mark.parametrize("text", _texts())
def test_the_same_matches_as_trying_every_position(text: str):
    expected = [(m.span(1), m.span(2)) for m in _ASSIGNMENT.finditer(text)]
    assert [(m.span(1), m.span(2)) for m in assignments(text)] == expected
