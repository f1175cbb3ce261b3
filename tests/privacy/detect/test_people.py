"""The people layer: Chinese and English names, dates of birth, pay and home addresses without a unit list — and
the strings agents need beside them (references, organisations, vendors, products, insurers, shopping centres,
event titles, e-mail subjects, product features), which it must leave alone. Real jieba, real given-name list."""

from __future__ import annotations

import pytest

from privacy.detect.en_names import EnglishNames
from privacy.detect.given_names import GivenNames
from privacy.detect.people import PeopleDetector
from privacy.detect.segmenter import JiebaSegmenter
from privacy.detect.zh_names import ChineseNames


@pytest.fixture(scope="module")
def people() -> PeopleDetector:
    return PeopleDetector(ChineseNames(JiebaSegmenter()), EnglishNames(GivenNames()), this_year=2026)


def _found(people: PeopleDetector, text: str, label: str | None = None) -> set[tuple[str, str]]:
    return {(f.type, f.value) for f in people.find(text, label, "")}


def _values(people: PeopleDetector, text: str, label: str | None = None) -> set[str]:
    return {value for _, value in _found(people, text, label)}


@pytest.mark.parametrize(("text", "name"), [
    ("客户：王建国，合同编号 HT-2024-118，供应商京东物流。", "王建国"),
    ("联系人 李娜", "李娜"),
    ("负责人：欧阳磊，报案号 CLM-2021-1317", "欧阳磊"),  # a compound surname, one given character
    ("杨娜经理负责跟进年度客户答谢会。", "杨娜"),
    ("好的，我转给陈伟处理", "陈伟"),
    ("[09:18] 杨建国：CLM-2019-92941 的发票是太古汇开的", "杨建国"),  # a chat line's speaker
    ("claim EXP-2019-4438 assigned to 黄强 (insurer: 万达广场)", "黄强"),
    ("审批人 徐子涵，收款人 诸葛浩然", "诸葛浩然"),
])
def test_chinese_names_in_context(people: PeopleDetector, text: str, name: str) -> None:
    assert ("PERSON", name) in _found(people, text)


def test_a_column_of_chinese_names_without_a_name_header(people: PeopleDetector) -> None:
    text = "申请人,单号,供应商\n王伟,INV-274774,京东物流\n黄娜,EXP-2026-4256,太古汇"
    assert {"王伟", "黄娜"} <= _values(people, text)


@pytest.mark.parametrize("text", [
    "供应商：华为技术有限公司、顺丰速运、中国平安、万达广场、京东物流、太古汇",
    "请把合同交给李经理",  # a surname and a title is no full name
    "高新区 马上 林业局 宋体 谢谢 罗盘 高兴",  # jieba tags some of these nr; none is a name
    "腾讯科技 太平洋保险 银泰城 美团优选 国家电网 招商银行 飞书妙记 智能排班 新品发布会",
    "主题：回复：报销单 EXP-2020-8598 审批，请在钉钉宜搭里提交",
])
def test_chinese_organisations_places_and_products_are_no_names(people: PeopleDetector, text: str) -> None:
    assert not any(t == "PERSON" for t, _ in _found(people, text))


@pytest.mark.parametrize(("text", "name"), [
    ("The assignee is Tomasz Brandt for PO/2022/1446.", "Tomasz Brandt"),
    ("reviewer: maria gonzalez", "maria gonzalez"),  # lower case
    ('ts=2026-03-13T02:14:07Z level=info claimant="DANIEL OKAFOR" vendor="Acme"', "DANIEL OKAFOR"),
    ("2026-03-13 INFO claim CLM-2024-00412 assigned to Priya Patel (insurer: Allianz Partners)", "Priya Patel"),
    ("SOFIA BRANDT asked about Autopilot Lite", "SOFIA BRANDT"),  # capitals read by NER as an organisation
    ("Thanks,\n\nKenji Nakamura\nFlat 3", "Kenji Nakamura"),  # a signature line
    ('ts=2026-12-14T05:14:07Z level=info ref=CLAIM-7161992 handled_by="Felix Abernathy" vendor="Aviva Health"',
     "Felix Abernathy"),  # logfmt writes the role word with an underscore
    ('level=info ref=EXR_2023_812849 submitted_by="amara mbeki"', "amara mbeki"),
    ("reviewed-by: Hugo Ivanova", "Hugo Ivanova"),
])
def test_english_names_in_context(people: PeopleDetector, text: str, name: str) -> None:
    assert ("PERSON", name) in _found(people, text)


def test_one_word_given_names_in_a_chat_transcript(people: PeopleDetector) -> None:
    text = ("[09:14] Priya: did Northwind Traders send the invoice for EXP-2024-0113?\n"
            "[09:15] Marcus: yes - forwarding now\n[10:02] Priya: thanks Marcus")
    found = people.find(text, None, "")
    assert {f.value for f in found} == {"Priya", "Marcus"}
    assert sum(f.value == "Marcus" for f in found) == 2


def test_a_column_whose_other_cells_are_names_holds_names_in_any_case(people: PeopleDetector) -> None:
    text = ("who,ref,vendor\nGrace Nakamura,EXP-2024-0695,Blue Harbor Catering\nCarlos Walsh,PO/2025/1633,Contoso Ltd\n"
            "aisha whitfield,CLM-2021-06479,Acme Logistics GmbH")
    assert {"Carlos Walsh", "aisha whitfield"} <= _values(people, text)


@pytest.mark.parametrize("text", [
    "The vendor is Allianz Partners; see Westfield Stratford City and Zurich Insurance.",
    "Marcus asked about Smart Compose and Focus Mode before Q3 All Hands.",
    "Subject: Quarterly vendor review - CT-2024-0042",
    "owner: Harbourview Dental Group",  # a role word before an organisation
    "[10:01] Bot: build EXP-2024-0113 passed",
    "vendor,product\nNorthwind Traders,Jira Service Management\nBrightline Couriers,Live Captions",
])
def test_organisations_products_events_and_subjects_are_no_names(people: PeopleDetector, text: str) -> None:
    assert not any(t == "PERSON" and v != "Marcus" for t, v in _found(people, text))


@pytest.mark.parametrize(("text", "date"), [
    ("Tomasz was born 14 March 1987 and lives in Leeds", "14 March 1987"),
    ("欧阳磊出生于1990年5月3日，家住海淀区", "1990年5月3日"),
    ("dob: 1987-03-14", "1987-03-14"),
    ('{"birthDate": "1990-01-02"}', "1990-01-02"),
    ("出生日期：1958/9/25", "1958/9/25"),
    ("born on March 14, 1987", "March 14, 1987"),
])
def test_dates_under_a_birth_word(people: PeopleDetector, text: str, date: str) -> None:
    assert ("DATE_OF_BIRTH", date) in _found(people, text)


def test_dates_under_a_birth_label_and_in_a_birth_column(people: PeopleDetector) -> None:
    assert ("DATE_OF_BIRTH", "03/14/1987") in _found(people, "03/14/1987", "date_of_birth")
    table = "| Name | dob |\n|---|---|\n| Ann Lee | 17/12/1994 |\n| Bo Chen | 15 February 1973 |"
    assert {"17/12/1994", "15 February 1973"} <= _values(people, table)


def test_dates_long_past_in_a_headerless_export_of_people(people: PeopleDetector) -> None:
    """A CSV of people without its header row: a column whose every cell is a date 14 years back or more, in rows
    that each name a person, holds dates of birth (in any form, quoted or not)."""
    text = ('Zainab Yilmaz,RB-2022-10936,Sterling & Pike LLP,"November 10, 1955",Salesforce Einstein\n'
            "Clara Castillo,EXR_2024_994851,Lighthouse Analytics,17.05.2000,Dark Mode\n"
            "宋梦瑶,CLAIM-1687521,腾讯科技,1995年4月15日,飞书妙记")
    dates = {v for t, v in _found(people, text) if t == "DATE_OF_BIRTH"}
    assert dates == {"November 10, 1955", "17.05.2000", "1995年4月15日"}


@pytest.mark.parametrize("text", [
    "Zainab Yilmaz,RB-2022-10936,2026-03-01\nClara Castillo,EXR_2024_994851,2025-11-07",  # recent: due, seen
    "name,ref,joined\nZainab Yilmaz,RB-2022-10936,1999-03-01\nClara Castillo,EXR_2024_994851,1995-11-07",  # a header
    "Northwind Traders,PO/2025/1633,1998-03-01\nContoso Ltd,EXP-2024-0695,1987-11-07",  # no person in the rows
])
def test_a_column_of_dates_is_no_birth_date_unless_old_unheaded_and_beside_people(people: PeopleDetector,
                                                                                 text: str) -> None:
    assert not any(t == "DATE_OF_BIRTH" for t, _ in _found(people, text))


def test_a_date_is_not_sensitive_by_itself(people: PeopleDetector) -> None:
    text = "deployed 2026-05-03T10:14:07Z; Spring Product Summit on 14 March 2026; due 2026-06-01"
    assert not any(t == "DATE_OF_BIRTH" for t, _ in _found(people, text))
    assert people.find("2026-06-01", "due_date", "") == []


@pytest.mark.parametrize(("text", "amount"), [
    ("The net pay for March is $3,511.50; Contoso Ltd confirmed.", "$3,511.50"),
    ("报销金额8572元，下周前报掉", "8572元"),
    ("年度客户答谢会的房租是¥6,035.25，请审批", "¥6,035.25"),
    ("[10:54] Marcus: the reimbursement is EUR 4,631.25", "EUR 4,631.25"),
])
def test_pay_after_a_pay_word(people: PeopleDetector, text: str, amount: str) -> None:
    assert ("AMOUNT", amount) in _found(people, text)


def test_money_next_to_a_person_but_not_elsewhere(people: PeopleDetector) -> None:
    text = "assigned to Priya Patel: £2,150.00 for the flat\nOrder #4412 came to $89.90 at Bluewater"
    found = _found(people, text)
    assert ("AMOUNT", "£2,150.00") in found
    assert not any(v == "$89.90" for _, v in found)
    assert people.find("18882元", "房租", "") and not people.find("18882元", "price", "")


@pytest.mark.parametrize(("text", "address"), [
    ("家住朝阳区望京西园四区27号楼2单元1095。", "朝阳区望京西园四区27号楼2单元1095"),
    ("Kenji Nakamura\nFlat 3, 181 Meadowbank, Springfield, IL 62704", "Flat 3, 181 Meadowbank, Springfield, IL 62704"),
    ("home: 41 Larchmont\nBristol BS8 1QU", "41 Larchmont\nBristol BS8 1QU"),  # an OCR'd second line
])
def test_home_addresses_without_a_street_word(people: PeopleDetector, text: str, address: str) -> None:
    assert ("LOCATION", address) in _found(people, text)


def test_business_references_under_labels_are_kept_and_personal_numbers_are_not() -> None:
    from privacy.detect import LabelledValueDetector

    labels = LabelledValueDetector()
    kept = ("ref,vendor\nEXP-2024-0113,Northwind Traders\nPO/2025/1633,Contoso Ltd\n\n合同编号 HT-2024-118，"
            "报案号 CLM-2023-88412\ninvoice: INV-981907")
    assert labels.find(kept, None) == []
    found = {f.value for f in labels.find("policy number: POL-2024-123456\nclaim #: CL-20994812", None)}
    assert {"POL-2024-123456", "CL-20994812"} <= found


def test_ner_drops_organisations_products_and_businesses() -> None:
    from privacy.detect.ner import Entity, _plausible

    for value in ("Focus Mode", "Allianz Partners", "Westfield Stratford City", "Brightline Couriers"):
        assert not _plausible(Entity("PERSON", value, 0.85))
    assert _plausible(Entity("PERSON", "Rafael Moreno", 0.85))


def test_the_layer_is_switched_by_privacy_layers_people() -> None:
    from privacy.detect import Target
    from privacy.factory import build_detector
    from privacy.settings import LayerSettings, PrivacySettings

    text = "联系人：王建国，出生于1990年5月3日"
    on = build_detector(PrivacySettings(layers=LayerSettings(ner=False)))
    off = build_detector(PrivacySettings(layers=LayerSettings(ner=False, people=False)))
    assert {f.value for f in on.detect([Target(text)], None, scope="", profile="balanced")[0]} >= {"王建国", "1990年5月3日"}
    assert not any(f.layer == "people" for f in off.detect([Target(text)], None, scope="", profile="balanced")[0])


def test_the_layer_is_built_once_per_process() -> None:
    from privacy.detect import shared_people
    from privacy.factory import build_detector
    from privacy.settings import PrivacySettings

    assert shared_people() is shared_people()
    assert build_detector(PrivacySettings())._people is shared_people()
