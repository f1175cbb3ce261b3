"""Bad input gets a 4xx in the route's own envelope, with a request id, everywhere (issue 22 §3): every route reads
its body through the one bounded reader (``gateway.http.body``), so a lone surrogate, a 50,000-deep array or a body
nested just under the JSON parser's own limit is a 400, never a 500 or a RecursionError."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.model_server import ModelServer
from tests.observability.gateways import running_gateway

KEY = "sk-tenant"
SURROGATE = b'{"messages": [{"role": "user", "content": "\\ud800"}], "items": [], "score": "\\udfff", "x": "\\ud83d"}'


# otherwise a valid body for every route (chat, Responses, Messages, units, grade, settlement), plus a deep field
VALID = (b'"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}], "input": "hi", '
         b'"items": [], "score": 1, "request_ids": ["req-0"]')


def _nested(depth: int) -> bytes:
    return b'{' + VALID + b', "extra": ' + b"[" * depth + b"]" * depth + b"}"


BODIES = {"lone surrogate": SURROGATE, "50,000 deep": _nested(50_000), "100,000 deep": _nested(100_000),
          "300 deep": _nested(300), "900 deep": _nested(900)}
# (path, method, envelope) — every route that reads a JSON body
ROUTES = [("/v1/chat/completions", "POST", "openai"), ("/chat/completions", "POST", "openai"),
          ("/v1/responses", "POST", "openai"), ("/v1/messages", "POST", "anthropic"),
          ("/v1/messages/count_tokens", "POST", "anthropic"), ("/v1/sessions/s1/units", "PUT", "openai"),
          ("/v1/sessions/s1/grade", "PUT", "openai"), ("/v1/usage/requests", "POST", "openai")]


@pytest.fixture()
def gw(tmp_path, edge: ModelServer, cloud: ModelServer) -> Iterator[str]:
    with running_gateway(edge, cloud, server={"api_keys": [KEY]}, database_url=f"sqlite:///{tmp_path / 'gw.db'}",
                         privacy={"layers": {"ner": False}, "audit_spill_path": None},
                         accounting={"spill_path": None}) as (url, _):
        yield url


def _send(url: str, method: str, path: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.request(method, url + path, content=body, timeout=30,
                         headers={"Authorization": f"Bearer {KEY}", "content-type": "application/json", **headers})


def _envelope(response: httpx.Response, kind: str) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    if kind == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error", body
    else:
        assert body["error"]["type"] == "invalid_request_error" and "message" in body["error"], body
    error: dict[str, Any] = body["error"]
    return error


@pytest.mark.parametrize("name", list(BODIES))
def test_every_route_refuses_a_bad_body_with_a_400_in_its_envelope(gw, name):
    for path, method, kind in ROUTES:
        r = _send(gw, method, path, BODIES[name])
        assert r.status_code == 400, (path, r.status_code, r.text[:300])
        assert r.headers["x-ecgw-request-id"].startswith("req-"), path
        _envelope(r, kind)


BAD_FIELDS = {
    "response_format": ("json", "response_format"),
    "response_format type": ({"type": "yaml"}, "response_format"),
    "json_schema without a name": ({"type": "json_schema", "json_schema": {"schema": {}}},
                                   "response_format.json_schema"),
}
BAD_PARTS = {"a number": (42, "messages[0].content[0]"), "no type": ({"text": "hi"}, "messages[0].content[0]"),
             "text without text": ({"type": "text"}, "messages[0].content[0].text"),
             "image without url": ({"type": "image_url", "image_url": {}}, "messages[0].content[0].image_url")}


def test_a_bad_response_format_or_content_part_is_a_400_before_any_upstream(gw, cloud):
    cases = [({"response_format": value}, param) for value, param in BAD_FIELDS.values()]
    cases += [({"messages": [{"role": "user", "content": [part]}]}, param) for part, param in BAD_PARTS.values()]
    for fields, param in cases:
        body = {"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "hi"}], **fields}
        r = httpx.post(gw + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"})
        assert r.status_code == 400, (fields, r.status_code, r.text[:300])
        assert _envelope(r, "openai")["param"] == param and r.headers["x-ecgw-request-id"]
    assert cloud.requests == []


ADMIN = "sk-admin"


@pytest.fixture()
def admin_gw(tmp_path, edge: ModelServer, cloud: ModelServer) -> Iterator[str]:
    with running_gateway(edge, cloud, server={"api_keys": [KEY], "admin_keys": [ADMIN]},
                         database_url=f"sqlite:///{tmp_path / 'gw.db'}", privacy={"layers": {"ner": False}},
                         accounting={"spill_path": None}) as (url, _):
        yield url


def test_dashboard_windows_are_checked_and_bounded(admin_gw):
    auth = {"Authorization": f"Bearer {ADMIN}"}
    step = httpx.post(admin_gw + "/v1/chat/completions", headers={"Authorization": f"Bearer {KEY}"},
                      json={"messages": [{"role": "user", "content": "hi"}]})
    assert step.status_code == 200
    pages = ["/ui/api/overview", "/ui/api/sessions", "/ui/charts/rate.svg", "/ui/charts/cost.svg"]
    for since in ("xyz", "-1h", "0", "0h", "99999999999d", "1e9d"):
        for page in pages:
            r = httpx.get(admin_gw + page, params={"since": since}, headers=auth)
            assert r.status_code == 400, (page, since, r.status_code, r.text[:200])
            assert r.json()["error"]["param"] == "since" and r.headers["x-ecgw-request-id"]
    for since in ("90d", "400d", "all"):  # wide windows draw a bounded number of bars
        r = httpx.get(admin_gw + "/ui/charts/rate.svg", params={"since": since}, headers=auth)
        assert r.status_code == 200 and r.text.count("<rect") <= 500


def test_session_ids_are_bounded_and_echoed_once_encoded(gw, edge):
    from urllib.parse import quote

    auth = {"Authorization": f"Bearer {KEY}"}
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    long_id = "s" * 513
    r = httpx.post(gw + "/v1/chat/completions", json=chat, headers={**auth, "X-Session-Id": long_id})
    assert r.status_code == 400 and r.json()["error"]["param"] == "session_id" and r.headers["x-ecgw-request-id"]
    assert "x-ecgw-session" not in r.headers
    r = httpx.post(gw + "/v1/messages", json={**chat, "max_tokens": 5}, headers={**auth, "X-Session-Id": long_id})
    assert r.status_code == 400 and r.json()["type"] == "error"
    r = httpx.post(gw + "/v1/messages", json={**chat, "max_tokens": 5},
                   headers={**auth, "X-Claude-Code-Session-Id": long_id})
    assert r.status_code == 400
    for path in (f"/v1/sessions/{long_id}/units", f"/v1/sessions/{long_id}/grade"):
        r = httpx.put(gw + path, json={"items": [], "score": 1}, headers=auth)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_session_id", (path, r.text)
    assert httpx.get(gw + f"/v1/sessions/{long_id}/privacy", headers=auth).status_code == 400
    assert httpx.post(gw + "/v1/chat/completions", json=chat,
                      headers={**auth, "X-Session-Id": "s" * 512}).status_code == 200
    # a UTF-8 id in the header comes back percent-encoded once (not its Latin-1 reading encoded again)
    session = "café-Ω-会话"
    r = httpx.post(gw + "/v1/chat/completions", json=chat,
                   headers=[("Authorization", f"Bearer {KEY}"), ("X-Session-Id", session.encode())])
    assert r.status_code == 200 and r.headers["x-ecgw-session"] == quote(session, safe="")


def test_sqlite_files_are_created_readable_by_their_owner_only(tmp_path, edge, cloud):
    import os
    import stat

    old = os.umask(0o022)  # the usual default, under which SQLite itself creates 0644 files
    try:
        with running_gateway(edge, cloud, database_url=f"sqlite:///{tmp_path / 'metering.db'}",
                             privacy={"layers": {"ner": False}},  # the audit: in the metering file
                             sessions={"store": "sqlite", "sqlite_path": str(tmp_path / "sessions.db")},
                             secrets={"key_file": str(tmp_path / "ecgw.key")}) as (url, _):
            units = {"items": [{"entity_id": "c", "name": "c", "sensitive_fields": [
                {"field": "phone", "value": "13812345678", "dimension": "contact", "weight": 1}]}]}
            assert httpx.put(url + "/v1/sessions/s1/units", json=units).status_code == 200
            r = httpx.post(url + "/v1/chat/completions", headers={"X-Session-Id": "s1"}, timeout=30,
                           json={"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "13812345678"}]})
            assert r.status_code == 200, r.text
            assert httpx.get(url + "/v1/usage").status_code == 200
    finally:
        os.umask(old)
    created = sorted(p.name for p in tmp_path.iterdir() if ".db" in p.name)
    assert {"metering.db", "sessions.db"} <= set(created), created
    modes = {name: stat.S_IMODE((tmp_path / name).stat().st_mode) for name in created}
    assert all(mode == 0o600 for mode in modes.values()), {k: oct(v) for k, v in modes.items()}
