"""Recall without a unit list: key/value tables, labels for tax references and pay, chat webhooks and Azure keys,
and national identifiers found by their check digits alone (each with a look-alike that must stay)."""

from __future__ import annotations

import pytest

from privacy.detect import IdentifierDetector, LabelledValueDetector, SecretDetector


def _labelled(text: str) -> set[tuple[str, str]]:
    return {(f.type, f.value) for f in LabelledValueDetector().find(text, None)}


def test_markdown_key_value_table_after_a_sentence() -> None:
    text = ("Found in `utils.py`:\n\n| 字段 | 内容 |\n|---|---|\n| 年薪 | CNY 227,500 |\n| 账户余额 | 8070564.25 |\n"
            "| 员工姓名 | 蒋曦诺 |\n| 项目 | 45873 |")
    found = _labelled(text)
    assert {("AMOUNT", "CNY 227,500"), ("AMOUNT", "8070564.25"), ("PERSON", "蒋曦诺")} <= found
    assert not any(value == "45873" for _, value in found)


def test_two_column_csv_is_read_as_key_and_value() -> None:
    text = ("UTR,4039545479\nClosing Balance,\"€6,056,212.27\"\nsortCode,920518\nproject,Project Nimbus\n\n"
            "Date,Description,Amount\n2026-01-01,coffee,3.50")
    found = _labelled(text)
    assert {("NATIONAL_ID", "4039545479"), ("AMOUNT", "€6,056,212.27"), ("ROUTING_NUMBER", "920518")} <= found
    assert not any(value in ("Project Nimbus", "coffee", "2026-01-01") for _, value in found)


@pytest.mark.parametrize(("label", "kind"), [
    ("UTR", "NATIONAL_ID"), ("TFN", "NATIONAL_ID"), ("tax_reference", "NATIONAL_ID"), ("NRIC", "NATIONAL_ID"),
    ("阿达哈尔号", "NATIONAL_ID"), ("gross_annual", "AMOUNT"), ("Gross Annual", "AMOUNT"),
    ("WECOM_WEBHOOK", "PASSWORD"), ("AZURE_STORAGE_CONNECTION_STRING", "PASSWORD"), ("阿里云SK", "PASSWORD"),
])
def test_labels_that_name_a_value(label: str, kind: str) -> None:
    assert kind in LabelledValueDetector().label_types(label)


@pytest.mark.parametrize("label", ["webhook_url", "gross", "annual", "tax_rate", "connection_timeout"])
def test_labels_that_name_nothing(label: str) -> None:
    assert LabelledValueDetector().label_types(label) == ()


def _secrets(text: str) -> set[tuple[str, str]]:
    return {(f.type, f.value) for f in SecretDetector().find(text)}


def test_azure_account_key_and_chat_webhook_keys() -> None:
    key = "J66xC3eoUnE4bAS5+gXi3STrybXx6Rl1VnDUr5VSh78qKRuF+dXPaTZUl86izyA6pwCErFhaLJDoRoSSPC4duw=="
    assert ("AZURE_KEY", key) in _secrets(f"DefaultEndpointsProtocol=https;AccountName=st;AccountKey={key};"
                                          "EndpointSuffix=core.windows.net")
    assert ("WEBHOOK_KEY", "373f0e9d-5833-4bcd-8ce4-e78c3a32e008") in _secrets(
        "hook：https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=373f0e9d-5833-4bcd-8ce4-e78c3a32e008，next")
    assert ("MAILGUN_KEY", "key-ea9eeea5f1c2d3b4a5968778695a4b3c") in _secrets(
        "MAILGUN_API_KEY,key-ea9eeea5f1c2d3b4a5968778695a4b3c")


def test_webhook_urls_without_a_key_stay() -> None:
    assert _secrets("see https://github.com/org/repo/settings/hooks/12345 and /api/webhooks?key=short") == set()


def _ids(text: str) -> list[str]:
    return [f.value for f in IdentifierDetector().find(text) if f.type == "NATIONAL_ID"]


@pytest.mark.parametrize(("valid", "invalid"), [
    ("4972 7418 4530", "4972 7418 4531"),  # Aadhaar (Verhoeff)
    ("814947097360", "814947097361"),
    ("S1234567D", "S1234567E"),  # Singapore NRIC check letter
    ("Y564666(7)", "Y564666(8)"),  # HKID check digit
    ("H025444(6)", "H025444(5)"),
    ("268-335-031", "268-335-032"),  # Canadian SIN (Luhn)
    ("663 586 599", "663 586 598"),  # Australian TFN (weighted mod 11)
    ("943 476 5919", "943 476 5918"),  # NHS number (mod 11)
])
def test_national_identifiers_by_check_digit(valid: str, invalid: str) -> None:
    assert _ids(f"ref {valid} end") == [valid]
    assert _ids(f"ref {invalid} end") == []


def test_indian_pan_shape_and_lookalikes() -> None:
    assert _ids("PAN RPPPS7088U on file") == ["RPPPS7088U"]
    assert _ids("build ABCDX1234Y and version 1234-5678-9012 and 2026-01-01") == []


def test_json_entries_that_name_their_value_and_indexes_by_value() -> None:
    import json
    text = json.dumps({
        "entry": [{"identifier": [{"type": {"text": "护照号"}, "value": "141421939"},
                                  {"type": {"text": "客户名称"}, "value": "褚琪"},
                                  {"name": "project", "value": "45873"}]}],
        "by_加拿大社会保险号": {"182586206": {"updated": "2026-01-01"}},
        "by_status": {"active": {"n": 3}}}, ensure_ascii=False)
    found = _labelled(text)
    assert {("PASSPORT", "141421939"), ("PERSON", "褚琪"), ("NATIONAL_ID", "182586206")} <= found
    assert not any(value in ("45873", "active") for _, value in found)


def test_table_after_a_title_line_and_short_amounts() -> None:
    text = ("Exported to /x/main.py\n记录ID\t实发工资\tpatient.name\t创建时间\n"
            "0015g00000IRjCoVal\t19223.77 EUR\t韩曦\t2026-09-25T14:14:07Z\n")
    assert {("AMOUNT", "19223.77 EUR"), ("PERSON", "韩曦")} <= _labelled(text)
    assert ("AMOUNT", "250.75k") in _labelled("年薪：250.75k，其他")
    assert ("AMOUNT", "¥5,809.04") in _labelled("and net_amount: ¥5,809.04. Write it down")


@pytest.mark.parametrize(("text", "found"), [
    ("PPT,C1781HTGM\nproject,Nimbus", ("PASSPORT", "C1781HTGM")),
    ("会员卡号,MZN605484082\nproject,Nimbus", ("ACCOUNT_NUMBER", "MZN605484082")),
    ("member_ident: 876-549311-06", ("ACCOUNT_NUMBER", "876-549311-06")),
])
def test_membership_and_passport_abbreviations(text: str, found: tuple[str, str]) -> None:
    assert found in _labelled(text)


def test_tsv_whose_values_hold_commas() -> None:
    text = ("Exported /x/utils.py\n记录ID\t合同编号\t年薪\t创建时间\n"
            "0015g00000gyPV7AXg\tHT84607932\t$166,500\t2026-05-01\n")
    assert {("ACCOUNT_NUMBER", "HT84607932"), ("AMOUNT", "$166,500")} <= _labelled(text)


def test_percent_encoded_query_labels() -> None:
    found = _labelled("GET /api/items?%E8%B4%A6%E6%88%B7%E5%8F%B7%E7%A0%81=56187419&%E9%A1%B5=2 HTTP/1.1")
    assert found == {("ACCOUNT_NUMBER", "56187419")}


def test_dotted_ssn_under_its_label_but_versions_stay() -> None:
    assert ("NATIONAL_ID", "722.72.1334") in _labelled("Social Security # = 722.72.1334")
    assert _labelled("version: 1.2.3 and ver = 10.4.1 and build id: 2026.01.01") == set()


def test_chinese_taxpayer_label_in_prose() -> None:
    assert ("NATIONAL_ID", "3482718268") in _labelled("帮我查一下这个客户，纳税人识别号：3482718268，谢谢。")


@pytest.mark.parametrize(("text", "found"), [
    ("tax_file_no: 275029869\nnext: x", ("NATIONAL_ID", "275029869")),
    ("sortCode: 08.97.52 and more", ("ROUTING_NUMBER", "08.97.52")),
    ("社会安全号: 319037579\n", ("NATIONAL_ID", "319037579")),
    ("driverLicenseNumber = WDL3RTAMPQT1\n", ("DRIVERS_LICENSE", "WDL3RTAMPQT1")),
])
def test_tax_file_sort_code_ssn_and_licence_forms(text: str, found: tuple[str, str]) -> None:
    assert found in _labelled(text)


def test_software_licences_and_versions_stay() -> None:
    assert _labelled("license: Apache-2.0\nlicense = MIT\nlicense: GPLV3ONLY\nversion: 10.12.13") == set()


def test_currency_code_joined_by_a_dot() -> None:
    assert ("AMOUNT", "USD.8,312.96") in _labelled("net_amount: USD.8,312.96\nnext: x")
