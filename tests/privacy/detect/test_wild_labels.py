"""Values whose container, not their shape, says they are private (what leaked on the wild-b tuning seeds): a
Kubernetes Secret's ``data``/``stringData`` values (base64 hides every shape), Helm/Kubernetes ``env`` lists whose
``name`` line labels the ``value`` line, a unit in brackets between a label and its value (``Balance (EUR): …``),
label words exports use (``sort``, ``hosp``, ``hkic``, a country or currency after the label, ``个税``, ``参保``,
``报案``, ``实发``…), and check-digit ids written in lower case — with the strings the agent needs beside them kept."""

from __future__ import annotations

import base64
import json

import pytest

from privacy.detect import IdentifierDetector, LabelledValueDetector, Lexicon
from privacy.detect.manifests import named_value_pairs, secret_manifest_values
from tests.privacy.helpers import protector


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


SECRET_YAML = f"""apiVersion: v1
kind: Secret
metadata:
  name: billing-secrets
  annotations:
    deployed-from: sha256:9f2c1e
type: Opaque
data:
  Pol. No.: {_b64("PLC/6828/451560")}
  持卡人: {_b64("郑桐")}
  "bank_sort": "{_b64("18 86 59")}"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: billing-config
data:
  LOG_LEVEL: info
  REGION: eu-west-2
"""


def _values(text: str, spans: object) -> list[str]:
    return [text[s:e] for s, e in spans]  # type: ignore[attr-defined]


def test_every_value_of_a_secret_manifest_is_secret_and_a_config_map_is_not() -> None:
    assert _values(SECRET_YAML, secret_manifest_values(SECRET_YAML)) == [
        _b64("PLC/6828/451560"), _b64("郑桐"), _b64("18 86 59")]


def test_a_secret_manifest_in_json_too() -> None:
    manifest = json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
                           "stringData": {"tin": "9348085222", "note": "rotated"}, "data": {"k": _b64("x-1")}})
    assert sorted(_values(manifest, secret_manifest_values(manifest))) == sorted(["9348085222", "rotated", _b64("x-1")])
    assert list(secret_manifest_values(json.dumps({"kind": "ConfigMap", "data": {"a": "b"}}))) == []


async def test_a_secret_manifest_leaves_as_placeholders_with_its_names_and_digest() -> None:
    p = protector(database_url=None, layers={"ner": False}, last_check=False)
    body = {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": SECRET_YAML}]}
    sent = (await p.scrub(body, session_id="s")).body["messages"][0]["content"]
    for secret in (_b64("PLC/6828/451560"), _b64("郑桐"), _b64("18 86 59")):
        assert secret not in sent
    for needed in ("billing-secrets", "sha256:9f2c1e", "billing-config", "LOG_LEVEL: info", "eu-west-2"):
        assert needed in sent


HELM = """image:
  digest: sha256:77aa
env:
  - name: Cardholder
    value: Eleanor Srinivasan
  - name: ledger_balance
    value: "€3,398,626.98"
  - name: subscriber_no
    value: w033960207
  - name: LOG_LEVEL
    value: info
  - name: WORKERS
    value: "4"
"""


def test_a_helm_env_list_labels_each_value_by_its_name() -> None:
    assert list(named_value_pairs(HELM)) == [("Cardholder", "Eleanor Srinivasan"), ("ledger_balance", "€3,398,626.98"),
                                             ("subscriber_no", "w033960207"), ("LOG_LEVEL", "info"), ("WORKERS", "4")]
    found = {(f.type, f.value) for f in LabelledValueDetector().find(HELM, None)}
    assert found == {("PERSON", "Eleanor Srinivasan"), ("AMOUNT", "€3,398,626.98"), ("ACCOUNT_NUMBER", "w033960207")}


@pytest.mark.parametrize(("label", "type_"), [
    ("bank sort", "ROUTING_NUMBER"), ("hosp_no", "MEDICAL_RECORD"), ("hkic_number", "NATIONAL_ID"),
    ("ic_no", "NATIONAL_ID"), ("licence_no_uk", "DRIVERS_LICENSE"), ("ssn_us", "NATIONAL_ID"),
    ("balance_eur", "AMOUNT"), ("redis_requirepass", "PASSWORD"), ("take-home", "AMOUNT"),
    ("salary_yr", "AMOUNT"), ("保险单号码", "ACCOUNT_NUMBER"), ("个税号", "NATIONAL_ID"), ("参保号", "ACCOUNT_NUMBER"),
    ("报案编号", "ACCOUNT_NUMBER"), ("协议编号", "ACCOUNT_NUMBER"), ("实发工资", "AMOUNT"), ("税前年薪", "AMOUNT"),
    ("sort_order", None), ("sort_key", None), ("build_yr", None),
])
def test_label_words_exports_use(label: str, type_: str | None) -> None:
    types = Lexicon().types(label)
    assert (types[0] if types else None) == type_, types


@pytest.mark.parametrize(("text", "value"), [
    ("closing Balance (EUR): 4993912.54 and the rest", "4993912.54"),
    ("Salary (USD) = 93,500", "93,500"),
    ("实发金额：rmb23553.97，请核对", "rmb23553.97"),
    ("their emp_name is Björn/Karimi.", "Björn/Karimi"),
])
def test_a_unit_in_brackets_lower_case_currency_and_slashed_names(text: str, value: str) -> None:
    assert value in {f.value for f in LabelledValueDetector().find(text, None)}


def test_check_digit_ids_in_lower_case_and_their_look_alikes() -> None:
    found = {f.value for f in IdentifierDetector().find("hkic a253029(8), nric s1832464d; build a253029(9) s1832464e")}
    assert found == {"a253029(8)", "s1832464d"}  # a wrong check digit is no id, in either case
