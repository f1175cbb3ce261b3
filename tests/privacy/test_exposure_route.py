"""``GET /v1/sessions/{id}/privacy``: per-unit exposure of a session from the audit, over HTTP."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from privacy.detect import UnitMatcher, units_of
from privacy.lastcheck import EgressCheck
from privacy.vault import Vault
from tests.fakes.model_server import Reply
from tests.privacy.helpers import UNITS, protector, units_document

SESSION = "exp/cloud-only/task_1:run0"  # eval's ids carry slashes and colons


def _ask(gw, text, session=SESSION, headers=None):
    client = openai.OpenAI(base_url=gw.base_url, api_key="sk-gw",
                           default_headers={"X-Session-Id": session, **(headers or {})})
    return client.chat.completions.create(model="ecgw/cloud-only", messages=[{"role": "user", "content": text}])


def test_route_reports_raw_vs_protected_units_with_the_benchmark_formula(start_gateway, cloud):
    gw = start_gateway(privacy={"actions": {"contact": "audit"}, "layers": {"ner": False}})
    assert httpx.put(f"{gw.url}/v1/sessions/{SESSION}/units", json=UNITS).status_code == 200
    cloud.script(Reply(content="ok"))
    _ask(gw, "Call 415-555-0132 about Maria Gonzalez.")
    response = httpx.get(f"{gw.url}/v1/sessions/{SESSION}/privacy")
    assert response.status_code == 200, response.text
    report = response.json()
    units = {u["unit_id"]: u for u in report["units"]}
    assert (units["cust-7.phone"]["status"], units["cust-7.phone"]["leak"]) == ("exposed", 1.0)
    assert (units["cust-7.full_name"]["status"], units["cust-7.full_name"]["leak"]) == ("protected", 0.0)
    assert (units["cust-7.email"]["status"], units["cust-7.email"]["leak"]) == ("not_sent", 0.0)
    assert units["cust-7.phone"]["weight"] == 2.0 and len(units) == 6
    assert report["cloud_calls"] == 1 and report["session_id"] == SESSION
    # weights 2+1+3+3+2+1 = 12; only the phone (2) reached the cloud raw
    assert report["privacy"] == pytest.approx(1 - 2 / 12)
    assert report["exposure_pct"] == pytest.approx(100 * 2 / 12)
    assert "Σ w·leak" in report["formula"]
    # a session the gateway never saw: no units, no exposure figure
    empty = httpx.get(f"{gw.url}/v1/sessions/unknown/privacy").json()
    assert (empty["units_known"], empty["privacy"], empty["exposure_pct"]) == (0, None, None)


def test_route_needs_the_api_key_and_says_when_the_audit_is_off(start_gateway):
    gw = start_gateway(server={"api_keys": ["sk-gw"]})
    assert httpx.get(f"{gw.url}/v1/sessions/s/privacy").status_code == 401
    ok = httpx.get(f"{gw.url}/v1/sessions/s/privacy", headers={"Authorization": "Bearer sk-gw"})
    assert ok.status_code == 200
    no_audit = start_gateway(privacy={"audit": False})
    response = httpx.get(f"{no_audit.url}/v1/sessions/s/privacy")
    assert response.status_code == 409 and response.json()["error"]["code"] == "audit_disabled"


async def test_session_exposure_reads_after_queued_writes(tmp_path):
    p = protector(database_url=f"sqlite:///{tmp_path / 'audit.sqlite3'}", layers={"ner": False},
                  actions={"identity": "audit"})
    await p.register_units("s-1", units_document())
    await p.protect({"messages": [{"role": "user", "content": "Maria Gonzalez, 415-555-0132"}]},
                    session_id="s-1", request_id="r-1")
    report = await p.session_exposure("s-1")  # no flush(): the read queues behind the writes
    assert report is not None
    leaks = {u["unit_id"]: u["leak"] for u in report["units"]}
    assert leaks["cust-7.full_name"] == 1.0 and leaks["cust-7.phone"] == 0.0
    assert report["exposure_pct"] == pytest.approx(100 * 3 / 12)
    assert await protector(database_url=None).session_exposure("s-1") is None


def test_a_unit_that_leaves_raw_in_a_json_key_is_reported_exposed(start_gateway, cloud):
    """No layer scans JSON keys and the last check is off: the unit leaves raw, and the report must say so."""
    gw = start_gateway(privacy={"last_check": False, "layers": {"ner": False}})
    assert httpx.put(f"{gw.url}/v1/sessions/{SESSION}/units", json=UNITS).status_code == 200
    cloud.script(Reply(content="ok"))
    _ask(gw, '{"by_email": {"Maria.Gonzalez@acme-mail.com": "call 415-555-0132"}}')
    assert "Maria.Gonzalez@acme-mail.com" in json.dumps(cloud.requests[-1])
    units = {u["unit_id"]: u for u in httpx.get(f"{gw.url}/v1/sessions/{SESSION}/privacy").json()["units"]}
    assert units["cust-7.email"]["status"] == "exposed" and units["cust-7.email"]["leak"] == 1.0
    assert units["cust-7.phone"]["status"] == "protected"


def test_an_unprotected_baseline_reports_what_left(start_gateway, cloud):
    gw = start_gateway(privacy={"enabled": False})
    assert httpx.put(f"{gw.url}/v1/sessions/{SESSION}/units", json=UNITS).status_code == 200
    cloud.script(Reply(content="ok"))
    _ask(gw, "Call 415 555 0132 about MARIA GONZALEZ.")
    report = httpx.get(f"{gw.url}/v1/sessions/{SESSION}/privacy").json()
    units = {u["unit_id"]: u["status"] for u in report["units"]}
    assert units["cust-7.phone"] == units["cust-7.full_name"] == "exposed"
    assert units["cust-7.email"] == "not_sent"
    assert report["cloud_calls"] == 1
    assert report["exposure_pct"] == pytest.approx(100 * (2 + 3) / 12)


def test_the_reported_exposure_is_what_an_independent_scan_of_the_sent_body_finds(start_gateway, cloud):
    """Last check off, so what leaves is what the layers missed; the report must name exactly the units the last
    check's own scan (``privacy.lastcheck`` with the one unit matcher) finds in the body the cloud received."""
    gw = start_gateway(privacy={"last_check": False, "layers": {"ner": False}, "actions": {"contact": "audit"}})
    assert httpx.put(f"{gw.url}/v1/sessions/{SESSION}/units", json=UNITS).status_code == 200
    cloud.script(Reply(content="ok"))
    _ask(gw, 'ring (415)  555  -  0132; login MariaGonzalez; {"Maria.Gonzalez@acme-mail.com": 1}')
    sent = cloud.requests[-1]
    scan = EgressCheck([]).read(sent, UnitMatcher(units_of(units_document())), Vault()).hits
    left = {hit.finding.unit_id for hit in scan if hit.finding.unit_id}
    report = httpx.get(f"{gw.url}/v1/sessions/{SESSION}/privacy").json()
    assert {u["unit_id"] for u in report["units"] if u["status"] == "exposed"} == left
    assert left == {"cust-7.phone", "cust-7.email"}  # MariaGonzalez is a listed name in any shape: replaced
