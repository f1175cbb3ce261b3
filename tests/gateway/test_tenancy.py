"""Sessions belong to the key that uses them: two tenants (and an admin) against one gateway.

Tried as an attacker holding a valid key B: every way of reaching tenant A's session by naming its id (restore
oracle, units overwrite, report read, usage listing), a virtual key naming another session, and fingerprint
sessions shared by identical first messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from accounting.writer import StoreMeter
from gateway.app import create_app
from tests.conftest import RunningGateway, settings_for
from tests.door import guarded_cloud, guarded_services
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer

A, B, ADMIN, BOUND = "sk-tenant-a", "sk-tenant-b", "sk-admin", "sk-bound-run-9"
NAME, PHONE, PASSWORD = "Zhang Wei", "13812345678", "Tr0ub4dor&3"
RAW = (NAME, PHONE, PASSWORD)
UNITS = {"items": [{"entity_id": "alice", "name": "customer", "sensitive_fields": [
    {"field": "full_name", "value": NAME, "dimension": "identity", "weight": 2},
    {"field": "phone", "value": PHONE, "dimension": "contact", "weight": 1},
    {"field": "password", "value": PASSWORD, "dimension": "credential", "weight": 3}]}]}
PLACEHOLDER = re.compile(r"\[[A-Z][A-Z0-9_]*_\d+\]")


@pytest.fixture()
def tenants(tmp_path, edge: ModelServer, cloud: ModelServer) -> Iterator[RunningGateway]:
    """Keys A and B, an admin key, a virtual key bound to run-9; real metering and audit in one SQLite file."""
    settings = settings_for(edge.url, cloud.url,  # type: ignore[attr-defined]
                            server={"api_keys": [A, B], "admin_keys": [ADMIN], "session_keys": {BOUND: "run-9"}},
                            database_url=f"sqlite:///{tmp_path / 'gw.sqlite3'}",
                            privacy={"layers": {"ner": False}, "audit_spill_path": None},
                            accounting={"spill_path": None})
    guard = guarded_cloud(settings)
    services = guarded_services(settings, cloud=guard)
    assert isinstance(services.meter, StoreMeter)
    server = ThreadedServer(create_app(settings, services=services)).start()
    try:
        yield RunningGateway(url=server.url, settings=settings, services=services, meter=None,  # type: ignore[arg-type]
                             guard=guard)
    finally:
        server.stop()


def _chat(gw: RunningGateway, key: str, text: str, *, session: str | None = "s1", model: str | None = None,
          **body: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"}
    if session is not None:
        headers["X-Session-Id"] = session
    payload: dict[str, Any] = {"messages": body.pop("messages", [{"role": "user", "content": text}]), **body}
    if model:
        payload["model"] = model
    return httpx.post(gw.base_url + "/chat/completions", headers=headers, json=payload, timeout=30)


def _units(gw: RunningGateway, key: str, session: str, document: dict[str, Any]) -> httpx.Response:
    return httpx.put(f"{gw.base_url}/sessions/{session}/units", json=document,
                     headers={"Authorization": f"Bearer {key}"})


def _get(gw: RunningGateway, key: str, path: str) -> httpx.Response:
    return httpx.get(gw.base_url + path, headers={"Authorization": f"Bearer {key}"})


def _a_protected_step(gw: RunningGateway, cloud: ModelServer) -> set[str]:
    """A registers its units in s1 and takes a cloud step; the placeholders the cloud saw."""
    assert _units(gw, A, "s1", UNITS).status_code == 200
    cloud.script(Reply(content="noted"))
    r = _chat(gw, A, f"Customer {NAME}, phone {PHONE}, password {PASSWORD}.", model="ecgw/cloud-only")
    assert r.status_code == 200, r.text
    sent = json.dumps(cloud.requests[-1])
    assert not any(raw in sent for raw in RAW)
    placeholders = set(PLACEHOLDER.findall(sent))
    assert len(placeholders) == 3
    return placeholders


def test_another_key_naming_a_session_gets_its_own_not_the_owners(tenants, cloud):
    placeholders = _a_protected_step(tenants, cloud)
    # B's "s1" is a session of its own: A's sticky choice (cloud-only) is not B's, nor is A's vault.
    first = _chat(tenants, B, "hello")
    assert first.headers["x-ecgw-session"] == "s1" and first.headers["x-ecgw-policy"] == "edge-only"
    # The restore oracle: B names A's session and makes the cloud echo A's placeholders.
    cloud.script(Reply(content=" | ".join(sorted(placeholders))))
    stolen = _chat(tenants, B, "Repeat: " + " | ".join(sorted(placeholders)), model="ecgw/cloud-only")
    assert stolen.status_code == 200
    answer = stolen.json()["choices"][0]["message"]["content"]
    assert not any(raw in answer for raw in RAW), answer
    # A's session kept its own state through all this
    cloud.script(Reply(content=" | ".join(sorted(placeholders))))
    mine = _chat(tenants, A, f"Repeat for {NAME}, {PHONE}, {PASSWORD}")
    assert mine.headers["x-ecgw-policy"] == "cloud-only"
    assert all(raw in mine.json()["choices"][0]["message"]["content"] for raw in RAW)


def test_a_session_first_used_by_another_key_is_not_shared(tenants, cloud):
    cloud.script(Reply(content="ok"))
    assert _chat(tenants, B, "hi", session="shared-name", model="ecgw/cloud-only").status_code == 200
    # A names the same id later: it does not inherit B's sticky cloud-only choice
    assert _chat(tenants, A, "hi", session="shared-name").headers["x-ecgw-policy"] == "edge-only"


def test_another_key_cannot_switch_off_protection_by_replacing_units(tenants, cloud):
    _a_protected_step(tenants, cloud)
    assert _units(tenants, B, "s1", {"items": []}).status_code == 200  # B's own s1: empty, harmless
    cloud.script(Reply(content="ok"))
    assert _chat(tenants, A, f"Again: {NAME} {PHONE} {PASSWORD}").status_code == 200
    sent = json.dumps(cloud.requests[-1])
    assert not any(raw in sent for raw in RAW), sent
    report = _get(tenants, A, "/sessions/s1/privacy").json()
    assert report["units_known"] == 3 and report["units_exposed"] == 0 and report["units_protected"] == 3


def test_privacy_reports_are_the_owners_and_an_admins(tenants, cloud):
    _a_protected_step(tenants, cloud)
    mine = _get(tenants, A, "/sessions/s1/privacy").json()
    assert mine["units_known"] == 3 and mine["cloud_calls"] == 1 and mine["session_id"] == "s1"
    theirs = _get(tenants, B, "/sessions/s1/privacy")
    never_used = _get(tenants, B, "/sessions/never-used/privacy")
    assert theirs.status_code == never_used.status_code == 200
    # indistinguishable from a session that does not exist: no unit ids, no finding types, no calls
    assert {**theirs.json(), "session_id": None} == {**never_used.json(), "session_id": None}
    assert theirs.json()["units_known"] == 0 and theirs.json()["findings_by_type"] == {}
    assert "alice" not in theirs.text
    # the admin names A's session by its internal id, as its usage listing shows it
    listed = [row["group"] for row in _get(tenants, ADMIN, "/usage?by=session").json()["data"]]
    a_s1 = [group for group in listed if group.endswith("/s1")]
    assert len(a_s1) == 1
    admin_view = _get(tenants, ADMIN, f"/sessions/{a_s1[0]}/privacy").json()
    assert admin_view["units_known"] == 3 and admin_view["cloud_calls"] == 1


def test_usage_lists_only_the_callers_sessions(tenants, cloud):
    _a_protected_step(tenants, cloud)
    cloud.script(Reply(content="ok"))
    assert _chat(tenants, A, "hi", session=None, user="alice@example.com", model="ecgw/cloud-only").status_code == 200
    assert _chat(tenants, B, "hi", session="b-run").status_code == 200
    b_rows = _get(tenants, B, "/usage?by=session").json()["data"]
    assert [row["group"] for row in b_rows] == ["b-run"]
    b_policy = _get(tenants, B, "/usage?by=policy").json()["data"]
    assert sum(row["requests"] for row in b_policy) == 1  # A's three requests are not B's to count
    a_groups = sorted(row["group"] for row in _get(tenants, A, "/usage?by=session").json()["data"])
    assert "s1" in a_groups and len(a_groups) == 2
    # the session id taken from `user` is a keyed hash wherever it shows, never the e-mail address
    everyone = _get(tenants, ADMIN, "/usage?by=session")
    assert len(everyone.json()["data"]) == 3 and "alice@example.com" not in everyone.text
    assert "alice@example.com" not in _get(tenants, A, "/usage?by=session").text


def test_a_bound_virtual_key_works_only_in_its_session(tenants, cloud):
    _a_protected_step(tenants, cloud)
    for extra in ({}, {"metadata": {"session_id": "s1"}}, {"user": "s1"}):
        r = _chat(tenants, BOUND, "hi", **extra)  # names A's s1 in the header, and in the body too
        assert r.status_code == 200 and r.headers["x-ecgw-session"] == "run-9"
        assert r.headers["x-ecgw-policy"] == "edge-only"  # not A's sticky cloud-only
    placeholders = sorted(_a_protected_step_placeholders(cloud))
    cloud.script(Reply(content=" ".join(placeholders)))
    r = _chat(tenants, BOUND, "echo", model="ecgw/cloud-only")
    assert not any(raw in r.text for raw in RAW)
    refused = _get(tenants, BOUND, "/sessions/s1/privacy")  # a bound key names no other session
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "session_not_allowed"
    assert _get(tenants, BOUND, "/sessions/run-9/privacy").status_code == 200


def _a_protected_step_placeholders(cloud: ModelServer) -> set[str]:
    return {p for request in cloud.requests for p in PLACEHOLDER.findall(json.dumps(request))}


def test_fingerprint_sessions_are_per_key(tenants, cloud):
    first = [{"role": "system", "content": "You are a support agent."}, {"role": "user", "content": "Call the customer."}]
    cloud.script(Reply(content="ok"))
    r = _chat(tenants, A, "", session=None, model="ecgw/cloud-only",
              messages=first + [{"role": "assistant", "content": "Which number?"},
                                {"role": "user", "content": f"My phone is {PHONE}, my password is {PASSWORD}"}])
    assert r.status_code == 200 and r.headers["x-ecgw-session"].startswith("fp-")
    given = set(PLACEHOLDER.findall(json.dumps(cloud.requests[-1])))
    assert given
    # B sends the same first messages: a fingerprint session of its own (A's sticky choice is not B's) ...
    b = _chat(tenants, B, "", session=None, messages=first)
    assert b.headers["x-ecgw-policy"] == "edge-only"
    # ... and the cloud echoing A's placeholders gives B nothing of A's
    cloud.script(Reply(content=" ".join(sorted(given))))
    b = _chat(tenants, B, "", session=None, model="ecgw/cloud-only",
              messages=first + [{"role": "assistant", "content": "Which number?"}, {"role": "user", "content": "hi"}])
    assert b.status_code == 200 and PHONE not in b.text and PASSWORD not in b.text


def test_keys_are_checked_and_failures_are_openai_shaped(tenants):
    for headers in ({}, {"Authorization": "Bearer sk-wrong"}):
        r = httpx.get(tenants.base_url + "/usage", headers=headers)
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
        r = httpx.put(tenants.base_url + "/sessions/s1/units", json=UNITS, headers=headers)
        assert r.status_code == 401



def test_naming_another_owners_internal_id_reaches_nothing(tenants, cloud):
    _a_protected_step(tenants, cloud)
    internal = next(row["group"] for row in _get(tenants, ADMIN, "/usage?by=session").json()["data"]
                    if row["group"].endswith("/s1"))
    # B forges A's internal id, in the header and in the report path: it stays inside B's own namespace
    cloud.script(Reply(content="ok"))
    assert _chat(tenants, B, "hi", session=internal).headers["x-ecgw-policy"] == "edge-only"
    assert _get(tenants, B, f"/sessions/{internal}/privacy").json()["units_known"] == 0
    assert _units(tenants, B, internal, {"items": []}).status_code == 200
    assert _get(tenants, A, "/sessions/s1/privacy").json()["units_known"] == 3


def test_the_every_session_marker_is_not_a_session_id(tenants):
    r = _units(tenants, A, "*", UNITS)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_session_id"
