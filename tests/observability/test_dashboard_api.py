"""The dashboard's JSON and charts after a known mix of traffic: every figure matches what ``/v1/usage`` and the
response headers say; arms' deltas and intervals match the per-session costs; the drill-down shows each step's
decision and signal and the body the cloud saw with placeholders only; the page is admin-only once keys exist."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.model_server import ModelServer
from tests.observability.gateways import running_gateway
from tests.observability.traffic import (
    ARM_SESSIONS,
    AWS_KEY,
    GRADES,
    NAME,
    PHONE,
    PRIVATE_SESSION,
    Traffic,
    drive,
    settings,
)


@pytest.fixture()
def board(edge: ModelServer, cloud: ModelServer, tmp_path: Path) -> Iterator[tuple[httpx.Client, Traffic]]:
    with running_gateway(edge, cloud, **settings(tmp_path)) as (url, _):
        traffic = drive(url, edge, cloud)
        with httpx.Client(base_url=url, timeout=60) as client:
            yield client, traffic


def _get(client: httpx.Client, path: str) -> Any:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return response.json()


def test_route_mix_and_usage_per_policy_match_the_usage_endpoint(board: tuple[httpx.Client, Traffic]) -> None:
    client, traffic = board
    overview = _get(client, "/ui/api/overview?since=1h")
    usage = _get(client, "/v1/usage?by=policy")["data"]
    assert overview["by_policy"] == usage
    mix = {r["policy"]: r for r in overview["route_mix"]}
    assert set(mix) == set(traffic.routes) == {"cloud-only", "step-routing", "edge-only", "advisor"}
    for policy, seen in traffic.routes.items():
        assert {k: mix[policy][k] for k in ("edge", "cloud", "mixed")} == {
            k: seen.get(k, 0) for k in ("edge", "cloud", "mixed")}, policy
    assert mix["cloud-only"]["privacy_blocked"] == 1
    assert sum(r["steps"] for r in overview["rate"]) == sum(sum(c.values()) for c in traffic.routes.values())
    assert sum(r["cloud_cost_usd"] for r in overview["timeline"]) == pytest.approx(
        sum(r["cloud_cost_usd"] for r in usage), abs=1e-5)  # each row is rounded to µ$


def test_arms_show_cost_and_completion_deltas_with_intervals(board: tuple[httpx.Client, Traffic]) -> None:
    client, _ = board
    (experiment,) = _get(client, "/ui/api/experiments")["data"]
    arms = {a["group"]: a for a in experiment["arms"]}
    by_arm = {r["group"]: r for r in _get(client, "/v1/usage?by=arm")["data"]}
    by_session = {r["group"]: r for r in _get(client, "/v1/usage?by=session")["data"]}
    assert experiment["control"] == "cloud" and arms["cloud"]["control"]
    for arm in ("cloud", "step"):
        assert arms[arm]["requests"] == by_arm[arm]["requests"]
        assert arms[arm]["cloud_cost_usd"] == pytest.approx(by_arm[arm]["cloud_cost_usd"], abs=1e-6)  # usage: µ$
    mean = {arm: sum(by_session[s]["cloud_cost_usd"] for s in sessions) / len(sessions)
            for arm, sessions in ARM_SESSIONS.items()}
    cost = arms["step"]["cost_delta"]
    assert cost["delta"] == pytest.approx(mean["step"] - mean["cloud"], abs=2e-6)  # usage rows are rounded to µ$
    assert cost["ci"][0] <= cost["delta"] <= cost["ci"][1] and cost["delta"] < 0  # step-routing is cheaper
    graded = {arm: sum(GRADES[s] for s in sessions) / len(sessions) for arm, sessions in ARM_SESSIONS.items()}
    assert arms["step"]["completion"] == pytest.approx(graded["step"])
    assert arms["step"]["completion_delta"]["delta"] == pytest.approx(graded["step"] - graded["cloud"])
    svg = client.get("/ui/charts/arms-cost.svg?experiment=router-ab")
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert "<circle" in svg.text and ">step<" in svg.text


def test_session_drill_down_shows_decisions_signals_and_placeholders_only(
        board: tuple[httpx.Client, Traffic]) -> None:
    client, traffic = board
    step_session = _get(client, "/ui/api/sessions/ab-step-1")
    first, second = step_session["steps"]
    assert (first["decision"], first["reason"], first["route"]) == ("cloud", "entropy", "mixed")
    assert first["signal"]["entropy"] == pytest.approx(math.log(20), abs=1e-3) and first["signal"]["tau"] == 1.5
    assert (second["decision"], second["route"]) == ("edge", "edge") and second["signal"]["entropy"] < 1.5
    assert [(c["side"], c["purpose"]) for c in first["calls"]] == [("edge", "probe"), ("cloud", "step")]
    advisor = _get(client, "/ui/api/sessions/advisor-1")["steps"]
    assert advisor[0]["signal"]["consultations"] == 1 and advisor[0]["route"] == "mixed"

    private = _get(client, f"/ui/api/sessions/{PRIVATE_SESSION}")
    sent, blocked = private["steps"]
    assert [s["route"] for s in private["steps"]] == traffic.session_routes[PRIVATE_SESSION] == ["cloud", "edge"]
    assert blocked["fallback"] == "privacy-blocked" and blocked["cloud_bodies"] == []
    assert (sent["decision"], blocked["decision"]) == ("cloud", "cloud")  # what cloud-only wanted, both times
    (body,) = sent["cloud_bodies"]
    text = str(body["body"])
    assert "[PERSON_" in text or "[NAME_" in text or "_001]" in text
    whole = str(private)
    for raw in (NAME, PHONE, "Etxeberria", AWS_KEY):
        assert raw not in whole
    session_row = {r["group"]: r for r in _get(client, "/ui/api/sessions?since=1h")["data"]}[PRIVATE_SESSION]
    usage_row = {r["group"]: r for r in _get(client, "/v1/usage?by=session")["data"]}[PRIVATE_SESSION]
    assert session_row["cloud_cost_usd"] == usage_row["cloud_cost_usd"] and session_row["privacy_blocked"] == 1
    assert session_row["units_known"] == 2 and session_row["exposure"] == 0.0

    privacy = _get(client, "/ui/api/privacy")
    assert privacy["units_registered"] == 2 and privacy["privacy_blocked_steps"] == 1
    # a blocked step never reaches the audit (no cloud call): the step records are what count it
    assert "AWS_ACCESS_KEY" not in privacy["findings_by_type"]
    assert {a for acts in privacy["findings_by_type"].values() for a in acts} == {"pseudonymise"}


def test_the_dashboard_is_admin_only_once_keys_are_configured(edge: ModelServer, cloud: ModelServer,
                                                              tmp_path: Path) -> None:
    overrides = {**settings(tmp_path), "server": {"api_keys": ["sk-tenant"], "admin_keys": ["sk-admin"]}}
    with running_gateway(edge, cloud, **overrides) as (url, _), httpx.Client(base_url=url, timeout=30) as client:
        page = client.get("/ui")
        assert page.status_code == 401 and "Admin key" in page.text
        assert client.get("/ui/api/overview").status_code == 401
        assert client.get("/ui/charts/cost.svg").status_code == 401
        # an ordinary tenant's key sees no other tenant's sessions
        assert client.get("/ui/api/overview", headers={"Authorization": "Bearer sk-tenant"}).status_code == 401
        assert client.get("/ui/api/overview", headers={"Authorization": "Bearer sk-admin"}).status_code == 200
        wrong = client.post("/ui/login", data={"key": "sk-guess"})
        assert wrong.status_code == 401 and "ecgw_ui" not in wrong.headers.get("set-cookie", "")
        signed = client.post("/ui/login", data={"key": "sk-admin"})
        assert signed.status_code == 303 and "HttpOnly" in signed.headers["set-cookie"]
        assert client.get("/ui").status_code == 200  # the cookie now rides along
        assert client.get("/ui/api/privacy").status_code == 200


def test_the_dashboard_is_open_in_single_tenant_mode(gateway: Any) -> None:
    page = httpx.get(gateway.url + "/ui", timeout=30)
    assert page.status_code == 200 and "operator dashboard" in page.text
    # conftest's gateway meters into memory only: the data endpoints say so instead of failing
    overview = httpx.get(gateway.url + "/ui/api/overview", timeout=30)
    assert overview.status_code == 503 and "accounting" in overview.json()["error"]["message"]


def test_chart_labels_are_escaped() -> None:
    from gateway.dashboard.charts import intervals, stacked_rows, time_bars

    evil = "<script>alert(1)</script>"
    for svg in (stacked_rows([(evil, {"edge": 1.0})], ["edge"], title=evil),
                intervals([(evil, -1.0, -2.0, 0.5)], title="t", unit=evil),
                time_bars([0.0], {evil: [1.0]}, bucket_s=60, title=evil, unit="u")):
        assert "<script>" not in svg and "&lt;script&gt;" in svg
