"""The widened pattern and context layers: labelled values (en + zh, every format an agent's tools print), identifiers
by check digits, national phones, vendor tokens — and the strings the agent needs, which must survive."""

from __future__ import annotations

import json

import pytest

from tests.privacy.helpers import protector


async def _sent(content: str) -> str:
    p = protector(database_url=None, layers={"ner": False}, last_check=False)
    body = (await p.scrub({"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": content}]},
                          session_id="s")).body
    return body["messages"][0]["content"]


LABELLED = [
    ("PASSPORT_NO=K5707355\nAPP_PORT=8080", "K5707355"),
    ("customer:\n  passport: C01X00T47\n  city: Paris", "C01X00T47"),
    ("2026-01-05T22:14:07Z INFO worker-3 driver's license: D123-456-78-901-0", "D123-456-78-901-0"),
    ("The routing number is 021000021; thanks.", "021000021"),
    ("sort code: 20-00-00", "20-00-00"),
    ("National Insurance number: QQ 12 34 56 C", "QQ 12 34 56 C"),
    ("A-Number: A123456789", "A123456789"),
    ("MRN 0042117 admitted", "0042117"),
    ("annual salary: 196,300.00 (gross)", "196,300.00"),
    ("请帮我核对客户资料：护照号码是E82667993；谢谢", "E82667993"),
    ("工资: 45,850.00", "45,850.00"),
    ("密码是Orion_31x。然后继续", "Orion_31x"),
    ("保单号: POL-9492-477082", "POL-9492-477082"),
    ('{"records": [{"membership_id": "M68243127", "status": "active"}]}', "M68243127"),
    ('{"dd_api_key": "930eb45fd6beb32ff515dd68561d9f69"}', "930eb45fd6beb32ff515dd68561d9f69"),
    ("the password is Harbor#1234", "Harbor#1234"),
    ('row,full_name,护照号码\n1,"Chloé van der Berg",E11763134', "E11763134"),
    ('row,full_name,note\n1,"Chloé van der Berg",ok', "Chloé van der Berg"),
    ("NAME=王静丽\nDEBUG=1", "王静丽"),
    ("地址是北京市朝阳区建国路88号17栋1351室。", "北京市朝阳区建国路88号17栋1351室"),
    ("ADDRESS=391 Keizersgracht, 1015 CJ Amsterdam\nX=1", "391 Keizersgracht, 1015 CJ Amsterdam"),
]


@pytest.mark.parametrize(("text", "value"), LABELLED)
async def test_a_labelled_value_is_replaced_in_every_format(text, value):
    sent = await _sent(text)
    assert value not in sent and json.dumps(value)[1:-1] not in sent, sent


SHAPED = [
    "de89-3704-0044-0532-0130-00",  # IBAN, lower case, hyphens
    "FR76 3000 6000 0112 3456 7890 189",
    "gb82 west 1234 5698 7654 32",
    "CH9300762011623852957",
    "4929.1034.5532.8817",  # Luhn, dots
    "6212 3456 7890 1232",  # UnionPay grouping
    "E034664148GBR7506198M3311248<<<<<<<<<<<<<<08",  # MRZ line with valid check digits
    "AB123456C",  # UK NI
    "MORGA753116SM9IJ",  # DVLA
    "020 7946 0958", "+49 30 901820", "01 42 68 53 00", "03-3224-9999", "020 624 1111", "+91 98765 43210",
    "+65 6123 4567", "0151 23456789", "０９０-１２３４-５６７８",
    "maria.g12%40gmail.com", "bob&#64;example.org",
    "npm_BLZz2nXvjRBEofHxNtOLTmcic6hvai6V8BjT", "whsec_CgVf75MP8fuWPipjVVZzQZyuYySuDvnh",
    "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",
    "pat-na1-0acea73e-de7b-8bb7-b6f2-8e3e6e4c50c0", "LTAI5tQm3xW7yZ9aBcDeFgHi",
    "https://hooks.slack.com/services/TABCDEFGH/BABCDEFGH/abcdefghijklmnopqrstuvwx",
]


@pytest.mark.parametrize("value", SHAPED)
async def test_an_unlabelled_identifier_with_its_shape_or_check_digits_is_replaced(value):
    sent = await _sent(f"see {value} in the export")
    assert value not in sent, sent


@pytest.mark.parametrize("text", [
    "smtp://app:02axrGPvqHnjaa@10.2.3.4:25/main",
    "ftp://reporting:BPU06uoV2SOgnz9xQP@files.local/x",
])
async def test_connection_strings_of_any_scheme_lose_their_password(text):
    sent = await _sent(text)
    assert text.split(":")[2].split("@")[0] not in sent


async def test_a_broken_check_digit_is_left_alone():
    sent = await _sent("see DE89370400440532013001 and E034664148GBR7506198M3311248<<<<<<<<<<<<<<09 here")
    assert "DE89370400440532013001" in sent and "<<<<09" in sent


NEEDED = [
    "/home/node/.openclaw/workspace/billing/main.py", "def billing_run(rows, limit=44):", "7723704 bytes",
    "took 74089 ms", "v3.7.8", "16f144d0cdff", "port 5432", "2026-09-03T01:14:07Z", "order #56770", "33601 rows",
    "ts=1764578047123", "3f2a9c1e-7b4d-4e8a-9c0f-1a2b3c4d5e6f", "build 85464265", "+27 lines",
    "call_KVXsGEEvJCgc6ftk8EuOyBPD", "license: Apache-2.0", "the account is 12 days overdue", "case: closed",
    "version: 3.11.4", "id: 1234567", "Sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
]


async def test_strings_the_agent_needs_survive():
    text = "\n".join(NEEDED)
    sent = await _sent(text)
    assert [n for n in NEEDED if n not in sent] == []
