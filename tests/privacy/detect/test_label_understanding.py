"""Labels nobody wrote a rule for: what a key, column or field label names is read from its words (en + zh), and a
value under it is replaced when it has the shape of that concept — while the agent's own ids, paths and numbers
under look-alike labels survive."""

from __future__ import annotations

import json

import pytest

from privacy.detect import LabelledValueDetector, Lexicon
from tests.privacy.helpers import protector


async def _sent(content: str) -> str:
    p = protector(database_url=None, layers={"ner": False}, last_check=False)
    body = (await p.scrub({"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": content}]},
                          session_id="s")).body
    return body["messages"][0]["content"]


@pytest.mark.parametrize(("label", "type_"), [
    ("beneficiaryAcctNbr", "ACCOUNT_NUMBER"), ("PolicyRef", "ACCOUNT_NUMBER"), ("mbr-no", "ACCOUNT_NUMBER"),
    ("Claim #", "ACCOUNT_NUMBER"), ("a/c no.", "ACCOUNT_NUMBER"), ("loan_reference", "ACCOUNT_NUMBER"),
    ("driverLicNo", "DRIVERS_LICENSE"), ("pp_no", "PASSPORT"), ("Travel Document Nr", "PASSPORT"),
    ("NI-Number", "NATIONAL_ID"), ("ssn_last_full", None), ("patientChartNo", "MEDICAL_RECORD"),
    ("take_home_pay", "AMOUNT"), ("yearly_earnings", "AMOUNT"), ("acct-bal", "AMOUNT"), ("salary_amt", "AMOUNT"),
    ("login_pwd", "PASSWORD"), ("db_passcode", "ACCESS_CODE"), ("residential_addr", "LOCATION"),
    ("mobileNo", "PHONE_NUMBER"), ("e_mail", "EMAIL_ADDRESS"), ("insured_person", "PERSON"),
    ("联系手机", "PHONE_NUMBER"), ("开户账号", "ACCOUNT_NUMBER"), ("保单编号", "ACCOUNT_NUMBER"),
    ("会员卡号", "CREDIT_CARD"), ("家庭地址", "LOCATION"), ("月收入", "AMOUNT"), ("账户余额", "AMOUNT"),
    ("紧急联系人", "PERSON"), ("病历编号", "MEDICAL_RECORD"), ("驾驶证号码", "DRIVERS_LICENSE"),
    ("card_cvv", "CARD_SECURITY_CODE"), ("greenCardNo", "NATIONAL_ID"), ("claimant", "PERSON"),
    ("pension_no", "ACCOUNT_NUMBER"), ("借款人", "PERSON"), ("公积金账号", "ACCOUNT_NUMBER"), ("年终奖", "AMOUNT"),
])
def test_a_label_is_read_from_its_words(label, type_):
    types = Lexicon().types(label)
    assert (types[0] if types else None) == type_, types


@pytest.mark.parametrize("label", [
    "order_id", "order ref", "build_number", "trace_id", "call_id", "commit", "port", "version", "tool_name",
    "passport_expiry_date", "file_name", "ip_address", "max_tokens", "account_type", "card_last4",
    "balance_currency", "pay_date", "phone_country_code", "password_file", "record_count", "home_dir",
    "护照签发日期", "账户类型",
])
def test_a_label_about_a_value_or_an_unknown_thing_names_nothing(label):
    assert Lexicon().types(label) == ()


UNSEEN = [
    ("BENEFICIARY_ACCT_NBR=DE-4471-982201\nLOG_LEVEL=info", "DE-4471-982201"),
    ("member:\n  mbr_no: MB-7781204\n  tier: gold", "MB-7781204"),
    ('{"holderOfRecord": {"policyRef": "PX/2210/77812"}}', "PX/2210/77812"),
    ("policy_ref,status\nHZ-88123041,open", "HZ-88123041"),
    ("2026-03-01T10:00:00Z WARN svc claim #: CL-20994812 pending", "CL-20994812"),
    ("Please look at the loan reference LN7781203 before Friday.", "LN7781203"),
    ("[client]\npatient_chart_no = CH-0091244\n", "CH-0091244"),
    ("TAKE_HOME_PAY=€ 4.210,55", "€ 4.210,55"),
    ('{"yearly_earnings": "GBP 88,400"}', "GBP 88,400"),
    ("login_pwd: Marlin!9921x", "Marlin!9921x"),
    ("RESIDENTIAL_ADDR=77 RUE DE RIVOLI, 75001 PARIS", "77 RUE DE RIVOLI, 75001 PARIS"),
    ("insured person: HANNA SVENSSON-LUND", "HANNA SVENSSON-LUND"),
    ('{"insured_person": "Maximilian\\nKrause"}', "Krause"),
    ('{"beneficiary_name": "Ol\\nivia Brandt"}', "ivia Brandt"),
    ("开户账号：6230 5811 0099 2213 77", "6230 5811 0099 2213 77"),
    ("请核对：保单编号为BD-20931877，谢谢", "BD-20931877"),
    ("家庭地址: 广州市天河区体育西路191号3栋", "广州市天河区体育西路191号3栋"),
    ("月收入是28,600.00元", "28,600.00元"),
    ("紧急联系人: 欧阳明辉", "欧阳明辉"),
    # surface forms: wrapped onto the next line of a log, inside a quoted CSV cell, other separators, encodings
    ("2026-01-02T03:04:05Z INFO w-1 e-mail: paulo.ferr\neira77%40example.org (took 12 ms)\n2026-01-02T03:04:06Z INFO",
     "eira77%40example.org"),
    ("# 2 rows\nrow,policy_ref,status\n1,\"QX-4410\n-887120\",open\n", "-887120"),
    ("billing_contact_email: marta.nowak@firma/example.pl\nlevel: 2", "marta.nowak@firma/example.pl"),
    ("CALL_ME_AT=62718830\nMODE=fast", "62718830"),
    ("work_phone: +33.6/12/48/90/17", "+33.6/12/48/90/17"),
    ("Authorization=9f2c71d0b3a84e55a1c6e0f3d2b7a914", "9f2c71d0b3a84e55a1c6e0f3d2b7a914"),
    ("2026 INFO w-2 machine readable line: L898902C36UTO7408122F1204159ZE184226B<<<<<10 (ok)",
     "L898902C36UTO7408122F1204159ZE184226B<<<<<10"),
    ("alipay_login: qwhzkmsd", "qwhzkmsd"),
    ("beneficiary: Ana%20Lucia%20Prieto", "Ana%20Lucia%20Prieto"),
]


@pytest.mark.parametrize(("text", "value"), UNSEEN)
async def test_a_value_under_an_unseen_label_is_replaced(text, value):
    sent = await _sent(text)
    assert value not in sent and json.dumps(value)[1:-1] not in sent, sent


async def test_a_value_found_after_a_label_is_found_again_in_another_case():
    sent = await _sent("insured person: Hanna Svensson\nsummary: HANNA SVENSSON renewed")
    assert "Svensson" not in sent and "SVENSSON" not in sent, sent


NEEDED_UNDER_LABELS = [
    "order_ref: 56770", "build_no: 85464265", "ref: 16f144d0cdff", "trace id: 3f2a9c1e-7b4d-4e8a-9c0f-1a2b3c4d5e6f",
    "ts=1764578047123", "port: 5432", "version: 3.11.4", "call_id: call_KVXsGEEvJCgc6ftk8EuOyBPD",
    "tool_name: read_file", "name: billing_run", "took 74089 ms", "pay_date: 2026-01-05",
    "home: /home/node/.openclaw/workspace", "record_count: 33601", "case: closed", "license: Apache-2.0",
    "account_type: savings", "passport_expiry: 2031-04-30", "order #56770",
    "ticket SUP-20931", "the balance sheet is in /home/node/reports/q3.csv", "member since 2019",
    "auth: oauth2", "alipay: enabled", "email: see the README",
    "ref: 16f144d0cdff", "trace id: 3f2a9c1e-7b4d-4e8a-9c0f-1a2b3c4d5e6f",
    "self._api_key = os.environ.get", "secrets: SecretsSettings", "token = args.refresh_token",
    '{"type": "function", "function": {"name": "LOCAL_SHELL"}}',
]


async def test_the_agents_strings_under_look_alike_labels_survive():
    text = "\n".join(NEEDED_UNDER_LABELS)
    sent = await _sent(text)
    assert [n for n in NEEDED_UNDER_LABELS if n not in sent] == []


def test_labelled_values_are_found_in_one_pass_over_a_long_text():
    detector = LabelledValueDetector()
    text = ("def handler(event):\n    return {'status': 200, 'count': len(rows)}\n" * 400
            + "acct ref: AC-99812034\n")
    found = {(f.type, f.value) for f in detector.find(text, None)}
    assert found == {("ACCOUNT_NUMBER", "AC-99812034")}
