"""A key bound to a session is confined to that session on every route a key can reach: it reads, erases, grades
and registers units for its own session only, and its reads across sessions (usage, settlement, receipts, stored
responses, budgets) see nothing of its tenant's other sessions — over real HTTP, against a gateway with a SQLite
metering database and audit."""

from __future__ import annotations

from typing import Any

import httpx

from tests.fakes.model_server import Reply
from tests.gateway import test_reload
from tests.gateway.admin.test_virtual_keys import _admin
from tests.gateway.test_reload import _chat, _config, _write

gateway = test_reload.gateway  # the same fixture: a gateway read from a config file

OTHER = "alpha-payroll-run"
UNITS = {"items": [{"entity_id": "e1", "name": "payroll", "sensitive_fields": [
    {"field": "iban", "value": "DE89370400440532013000", "dimension": "financial", "weight": 1.0}]}]}


def _call(method: str, url: str, path: str, key: str, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}", **kwargs.pop("headers", {})}
    return httpx.request(method, url + path, headers=headers, timeout=30, **kwargs)


def test_a_bound_key_reaches_no_other_session_of_its_tenant(tmp_path, edge, cloud, gateway):
    config = _config(tmp_path, edge, cloud, limits={"sessions": {"cloud_calls": {"amount": 50, "window": "1d"}}})
    url = gateway(_write(tmp_path / "config.yaml", config))
    tenant = _admin("POST", url, "/admin/v1/keys", json={"tenant": "alpha"}).json()["key"]
    bound = _admin("POST", url, "/admin/v1/keys", json={"tenant": "alpha", "session": "run-19"}).json()["key"]

    # the tenant's other session: units, a cloud call (a receipt, usage rows, a session budget), a stored response
    assert _call("PUT", url, f"/v1/sessions/{OTHER}/units", tenant, json=UNITS).status_code == 200
    cloud.script(Reply(content="paid"), Reply(content="own"))
    theirs = _chat(url, tenant, session=OTHER, model="ecgw/cloud-only",
                   messages=[{"role": "user", "content": "IBAN DE89370400440532013000 please"}])
    assert theirs.status_code == 200, theirs.text
    their_request = theirs.headers["x-ecgw-request-id"]
    stored = _call("POST", url, "/v1/responses", tenant, headers={"X-Session-Id": OTHER},
                   json={"input": "the payroll figures are 4,2 M", "model": "ecgw/edge-only"})
    assert stored.status_code == 200, stored.text
    assert _call("GET", url, f"/v1/sessions/{OTHER}/privacy", tenant).json()["units_known"] == 1
    assert _call("GET", url, f"/v1/receipts/{their_request}", tenant).status_code == 200

    # the bound key's own session works
    mine = _chat(url, bound, session=OTHER, model="ecgw/cloud-only")
    assert mine.status_code == 200 and mine.headers["x-ecgw-session"] == "run-19"
    my_request = mine.headers["x-ecgw-request-id"]
    assert _call("GET", url, "/v1/sessions/run-19/privacy", bound).status_code == 200
    assert _call("GET", url, f"/v1/receipts/{my_request}", bound).status_code == 200

    # every route that names a session refuses another one
    for method, path, body in (("GET", f"/v1/sessions/{OTHER}/privacy", None),
                               ("DELETE", f"/v1/sessions/{OTHER}", None),
                               ("PUT", f"/v1/sessions/{OTHER}/units", UNITS),
                               ("PUT", f"/v1/sessions/{OTHER}/grade", {"score": 0.0}),
                               ("GET", f"/v1/usage?by=policy&session={OTHER}", None)):
        refused = _call(method, url, path, bound, json=body)
        assert refused.status_code == 403, (method, path, refused.text)
        assert refused.json()["error"]["code"] == "session_not_allowed", (method, path, refused.text)
        assert refused.headers["x-ecgw-request-id"].startswith("req-")
    assert _call("GET", url, f"/v1/sessions/{OTHER}/privacy", tenant).json()["units_known"] == 1  # not erased

    # reads across sessions see the bound session alone
    assert _call("GET", url, f"/v1/receipts/{their_request}", bound).status_code == 404
    sessions = _call("GET", url, "/v1/usage?by=session", bound).json()["data"]
    assert [row["group"] for row in sessions] == ["run-19"], sessions
    whole = _call("GET", url, "/v1/usage?by=policy", bound).json()["data"]
    assert sum(row["requests"] for row in whole) == 1, whole
    settled = _call("POST", url, "/v1/usage/requests", bound, json={"request_ids": [their_request]}).json()
    assert settled["pending"] == [{"request_id": their_request, "expected_calls": None, "recorded_calls": 0}]
    assert settled["usage"]["cloud_output_tokens"] == 0, settled
    budget = _call("GET", url, "/v1/budget", bound, headers={"X-Session-Id": OTHER}).json()["limits"]
    assert [(r["kind"], r["spent"]) for r in budget] == [("cloud_calls", 1)]  # run-19's one call, not payroll's
    continued = _call("POST", url, "/v1/responses", bound,
                      json={"input": "and again?", "previous_response_id": stored.json()["id"]})
    assert continued.status_code == 404, continued.text
    assert continued.json()["error"]["code"] == "previous_response_not_found"

    # what needs another kind of key stays closed to it
    assert _call("GET", url, "/ui/api/sessions", bound).status_code == 401
    assert _call("GET", url, "/admin/v1/keys", bound).status_code == 403
