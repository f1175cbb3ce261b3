"""The tenancy leftovers (issue 22 §2), tried as tenant B holding a valid key: grades and request settlement are
the caller's own, like units and usage rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from gateway.app import create_app
from tests.conftest import RunningGateway, settings_for
from tests.door import guarded_cloud, guarded_services
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer

A, B, ADMIN = "sk-tenant-a", "sk-tenant-b", "sk-admin"
EXPERIMENTS = {"active": "ab", "definitions": {"ab": {"arms": {"a": {"policy": "edge-only"},
                                                                "b": {"policy": "edge-only"}}}}}


@pytest.fixture()
def gw(tmp_path, edge: ModelServer, cloud: ModelServer) -> Iterator[RunningGateway]:
    settings = settings_for(edge.url, cloud.url,  # type: ignore[attr-defined]
                            server={"api_keys": [A, B], "admin_keys": [ADMIN]}, experiments=EXPERIMENTS,
                            database_url=f"sqlite:///{tmp_path / 'gw.sqlite3'}",
                            privacy={"layers": {"ner": False}, "audit_spill_path": None},
                            accounting={"spill_path": None})
    guard = guarded_cloud(settings)
    services = guarded_services(settings, cloud=guard)
    server = ThreadedServer(create_app(settings, services=services)).start()
    try:
        yield RunningGateway(url=server.url, settings=settings, services=services, meter=None,  # type: ignore[arg-type]
                             guard=guard)
    finally:
        server.stop()


def _call(gw: RunningGateway, method: str, key: str, path: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, gw.url + path, headers={"Authorization": f"Bearer {key}", **kwargs.pop("headers", {})},
                         timeout=30, **kwargs)


def _step(gw: RunningGateway, key: str, session: str, arm: str | None = None) -> httpx.Response:
    headers = {"X-Session-Id": session, **({"X-ECGW-Arm": arm} if arm else {})}
    r = _call(gw, "POST", key, "/v1/chat/completions", headers=headers,
              json={"messages": [{"role": "user", "content": "hello"}]})
    assert r.status_code == 200, r.text
    return r


def test_a_grade_belongs_to_the_callers_session(gw):
    _step(gw, A, "s1", arm="a")
    _step(gw, B, "s1", arm="b")
    assert _call(gw, "PUT", A, "/v1/sessions/s1/grade", json={"score": 1.0}).status_code == 200
    # B names the same id: its own s1 gets the grade, A's keeps its own
    assert _call(gw, "PUT", B, "/v1/sessions/s1/grade", json={"score": 0.0}).status_code == 200
    # each tenant's grade matches its usage rows (A's are arm a's, B's arm b's), and B's PUT left A's alone
    (experiment,) = _call(gw, "GET", ADMIN, "/ui/api/experiments").json()["data"]
    arms = {arm["group"]: arm for arm in experiment["arms"]}
    assert arms["a"]["graded_sessions"] == 1 and arms["a"]["completion"] == 1.0
    assert arms["b"]["graded_sessions"] == 1 and arms["b"]["completion"] == 0.0


def _settlement(gw: RunningGateway, key: str, request_id: str) -> dict[str, Any]:
    r = _call(gw, "POST", key, "/v1/usage/requests", json={"request_ids": [request_id]})
    assert r.status_code == 200, r.text
    report: dict[str, Any] = r.json()
    for pending in report["pending"]:
        pending["request_id"] = "?"
    return report


def test_settlement_answers_only_for_the_callers_requests(gw):
    rid = _step(gw, A, "s1").headers["x-ecgw-request-id"]
    mine = _settlement(gw, A, rid)
    assert mine["settled"] is True and mine["usage"]["requests"] == 1
    assert _settlement(gw, ADMIN, rid) == mine  # admins read across owners
    # B asking about A's request learns what a wrong id tells: nothing recorded, never settled
    assert _settlement(gw, B, rid) == _settlement(gw, B, "req-never-made")
    assert _settlement(gw, B, rid)["settled"] is False
    # B's own request refused before its session was known still settles, for B
    refused = _call(gw, "POST", B, "/v1/chat/completions", json={"messages": []})
    assert refused.status_code == 400
    assert _settlement(gw, B, refused.headers["x-ecgw-request-id"])["settled"] is True
