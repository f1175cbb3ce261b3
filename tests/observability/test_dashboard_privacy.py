"""The dashboard's privacy views read the audit through the protector's reporting protocol: a unit that left raw
without any finding (last check off, a value in a JSON key) withholds that call's body, and an unprotected baseline
(``privacy.enabled: false``, audit on) shows what left instead of "privacy off"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.fakes.model_server import ModelServer, Reply
from tests.observability.gateways import running_gateway
from tests.observability.traffic import settings
from tests.privacy.helpers import UNITS

SESSION = "dash-leak-1"
EMAIL = "Maria.Gonzalez@acme-mail.com"


def _leak(client: httpx.Client, cloud: ModelServer, text: str) -> None:
    assert client.put(f"/v1/sessions/{SESSION}/units", json=UNITS).status_code == 200
    cloud.script(Reply(content="ok"))
    sent = client.post("/v1/chat/completions", headers={"X-Session-Id": SESSION}, json={
        "model": "ecgw/cloud-only", "messages": [{"role": "user", "content": text}]})
    assert sent.status_code == 200, sent.text


def _get(client: httpx.Client, path: str) -> Any:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_body_that_carried_a_unit_raw_is_withheld(edge: ModelServer, cloud: ModelServer, tmp_path: Path) -> None:
    overrides = {**settings(tmp_path), "privacy": {"last_check": False, "layers": {"ner": False}}}
    with running_gateway(edge, cloud, **overrides) as (url, _), httpx.Client(base_url=url, timeout=60) as client:
        _leak(client, cloud, '{"by_email": {"' + EMAIL + '": "call later"}}')
        assert EMAIL in str(cloud.requests[-1])  # it did leave raw: no layer reads JSON keys
        (step,) = _get(client, f"/ui/api/sessions/{SESSION}")["steps"]
        (body,) = step["cloud_bodies"]
        assert body["body"] is None and body["raw_left"] == 1
        assert EMAIL not in client.get(f"/ui/api/sessions/{SESSION}").text


def test_an_unprotected_baseline_shows_what_left(edge: ModelServer, cloud: ModelServer, tmp_path: Path) -> None:
    overrides = {**settings(tmp_path), "privacy": {"enabled": False}}
    with running_gateway(edge, cloud, **overrides) as (url, _), httpx.Client(base_url=url, timeout=60) as client:
        _leak(client, cloud, "Call 415-555-0132 about Maria Gonzalez.")
        privacy = _get(client, "/ui/api/privacy")
        assert privacy["enabled"] is True and privacy["units_registered"] == 6
        (row,) = [s for s in privacy["sessions"] if s["session_id"] == SESSION]
        assert (row["cloud_calls"], row["units_exposed"]) == (1, 2)
        session = _get(client, f"/ui/api/sessions/{SESSION}")
        assert session["privacy"]["units_exposed"] == 2
        (body,) = session["steps"][0]["cloud_bodies"]
        assert body["body"] is None and body["raw_left"] == 2
