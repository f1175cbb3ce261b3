"""Egress receipts over real HTTP: every response whose step made a cloud call carries ``x-ecgw-egress-receipt``,
signed by the audit's key, covering the exact body the audit recorded and the cloud double received; a call made
after the headers left is listed by ``GET /v1/receipts/{request_id}``, for its owner or an admin only."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from accounting.database import make_engine
from gateway.state.keys import Keys
from privacy.audit import ChainSigner, verify_receipt_token, verify_trail
from privacy.seal import Sealer
from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.privacy.helpers import UNITS

KEYS = {"api_keys": [{"name": "alice", "key": "sk-alice"}, {"name": "bob", "key": "sk-bob"}],
        "admin_keys": [{"name": "root", "key": "sk-root"}]}


def _gateway(start: Callable[..., RunningGateway], tmp_path: Path, **overrides: Any) -> tuple[RunningGateway, Keys]:
    master = secrets.token_bytes(32)
    (tmp_path / "ecgw.key").write_text(master.hex() + "\n")
    (tmp_path / "ecgw.key").chmod(0o600)
    gw = start(database_url=f"sqlite:///{tmp_path / 'gw.sqlite3'}", secrets={"key_file": str(tmp_path / "ecgw.key")},
               server=KEYS, **overrides)
    return gw, Keys(master, "test")


def _chat(gw: RunningGateway, key: str, content: str, *, policy: str = "cloud-only",
          stream: bool = False) -> httpx.Response:
    body = {"model": f"ecgw/{policy}", "messages": [{"role": "user", "content": content}], "stream": stream}
    headers = {"Authorization": f"Bearer {key}", "X-Session-Id": "s1"}
    if not stream:
        return httpx.post(f"{gw.base_url}/chat/completions", json=body, headers=headers, timeout=30)
    with httpx.stream("POST", f"{gw.base_url}/chat/completions", json=body, headers=headers, timeout=30) as response:
        response.read()
        return response


def _claims(token: str, keys: Keys) -> dict[str, Any]:
    signer = ChainSigner(keys.derive("audit-sign"))
    return verify_receipt_token(token, {signer.key_id: signer.public})


def test_a_cloud_step_carries_a_receipt_of_the_exact_body_that_left(start_gateway: Callable[..., RunningGateway],
                                                                    cloud: ModelServer, tmp_path: Path) -> None:
    gw, keys = _gateway(start_gateway, tmp_path, privacy={"layers": {"ner": False}})
    cloud.script(Reply("noted"), Reply("streamed"))
    answer = _chat(gw, "sk-alice", "Write to maria.gonzalez@acme-mail.com and ann.lee@example.org today.")
    assert answer.status_code == 200, answer.text
    claims = _claims(answer.headers["x-ecgw-egress-receipt"], keys)
    request_id = answer.headers["x-ecgw-request-id"]
    assert claims["rid"] == request_id and claims["target"] == answer.headers["x-ecgw-cloud-target"]
    assert claims["placeholders"] == {"EMAIL_ADDRESS": 2} and claims["raw_units"] == []
    assert claims["verdict"] == "clean"  # the earlier layers replaced both addresses; the last check found nothing
    gw.services.protector.flush()  # type: ignore[attr-defined]

    engine = make_engine(f"sqlite:///{tmp_path / 'gw.sqlite3'}")
    with engine.connect() as conn:
        call_id, sealed = conn.execute(text("SELECT id, body FROM privacy_call")).one()
    recorded = Sealer(keys.derive("audit-body")).open(sealed, call_id.encode())
    assert claims["call"] == call_id and hashlib.sha256(recorded).hexdigest() == claims["body_sha256"]
    assert json.loads(recorded)["messages"] == cloud.requests[-1]["messages"]  # what the provider got
    assert "maria" not in answer.headers["x-ecgw-egress-receipt"].lower()

    streamed = _chat(gw, "sk-alice", "And again to maria.gonzalez@acme-mail.com.", stream=True)
    assert streamed.status_code == 200 and "streamed" in streamed.text
    stream_claims = _claims(streamed.headers["x-ecgw-egress-receipt"], keys)
    assert stream_claims["rid"] == streamed.headers["x-ecgw-request-id"]
    assert stream_claims["placeholders"] == {"EMAIL_ADDRESS": 1}

    listed = httpx.get(f"{gw.url}/v1/receipts/{request_id}", headers={"Authorization": "Bearer sk-alice"})
    assert listed.status_code == 200, listed.text
    assert [r["receipt"] for r in listed.json()["data"]] == [answer.headers["x-ecgw-egress-receipt"]]
    admin = httpx.get(f"{gw.url}/v1/receipts/{request_id}", headers={"Authorization": "Bearer sk-root"})
    assert admin.status_code == 200 and len(admin.json()["data"]) == 1
    other = httpx.get(f"{gw.url}/v1/receipts/{request_id}", headers={"Authorization": "Bearer sk-bob"})
    assert other.status_code == 404 and other.json()["error"]["code"] == "receipts_not_found"
    assert other.headers["x-ecgw-request-id"]
    gw.services.protector.flush()  # type: ignore[attr-defined]
    report = verify_trail(engine, ChainSigner(keys.derive("audit-sign")).public)
    assert report.intact and report.receipts == 2, report.breaks


def test_a_unit_let_through_on_purpose_is_named_raw(start_gateway: Callable[..., RunningGateway],
                                                   cloud: ModelServer, tmp_path: Path) -> None:
    gw, keys = _gateway(start_gateway, tmp_path, privacy={"actions": {"contact": "audit"}, "layers": {"ner": False}})
    put = httpx.put(f"{gw.url}/v1/sessions/s1/units", json=UNITS, headers={"Authorization": "Bearer sk-alice"})
    assert put.status_code == 200, put.text
    cloud.script(Reply("ok"))
    answer = _chat(gw, "sk-alice", "Call 415-555-0132 about Maria Gonzalez.")
    claims = _claims(answer.headers["x-ecgw-egress-receipt"], keys)
    assert "415-555-0132" in json.dumps(cloud.requests[-1])
    assert (claims["verdict"], claims["raw_units"]) == ("raw", ["cust-7.phone"])
    assert claims["placeholders"] == {"FULL_NAME": 1}  # the listed name, replaced


def test_a_call_made_after_the_headers_left_is_listed_by_request(start_gateway: Callable[..., RunningGateway],
                                                                edge: ModelServer, cloud: ModelServer,
                                                                tmp_path: Path) -> None:
    gw, keys = _gateway(start_gateway, tmp_path, policy={"default": "advisor"}, privacy={"layers": {"ner": False}})
    edge.script(Reply(None, tool_calls=[ToolCall("ask_cloud_advisor", '{"question": "which file first?"}')]),
                Reply("I will read b first"))
    cloud.script(Reply("Read b.txt before a.txt"))
    streamed = _chat(gw, "sk-alice", "fix the bug", policy="advisor", stream=True)
    assert streamed.status_code == 200 and len(cloud.requests) == 1  # the advice, asked mid-stream
    assert "x-ecgw-egress-receipt" not in streamed.headers  # they left with the first chunk, before the advice
    request_id = streamed.headers["x-ecgw-request-id"]
    listed = httpx.get(f"{gw.url}/v1/receipts/{request_id}", headers={"Authorization": "Bearer sk-alice"})
    assert listed.status_code == 200, listed.text
    [receipt] = listed.json()["data"]
    assert _claims(receipt["receipt"], keys) == receipt["claims"] and receipt["claims"]["rid"] == request_id


def test_the_body_leaves_before_its_receipt_is_journaled_and_the_response_waits_for_it(
        start_gateway: Callable[..., RunningGateway], cloud: ModelServer, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor, wait

    gw, _ = _gateway(start_gateway, tmp_path, privacy={"layers": {"ner": False},
                                                       "audit_spill_path": str(tmp_path / "audit-spill.jsonl")})
    writer = gw.services.protector._audit  # type: ignore[attr-defined]
    cloud.script(Reply("noted"))
    with ThreadPoolExecutor(1) as pool:
        with writer._stage_lock:  # nothing can be journaled now: not by the writer thread, not for a receipt
            answer = pool.submit(_chat, gw, "sk-alice", "Write to maria.gonzalez@acme-mail.com today.")
            for _ in range(3000):  # up to 30 s for the call to reach the cloud
                if cloud.requests or wait([answer], timeout=0.01).done:
                    break
            assert cloud.requests  # the call left (and was answered) while its receipt's record was unjournaled
            assert not wait([answer], timeout=1.0).done  # the response waits for the journal
        response = answer.result(timeout=30)
    assert response.status_code == 200, response.text
    token = response.headers["x-ecgw-egress-receipt"]
    gw.services.protector.flush()  # type: ignore[attr-defined]
    with make_engine(f"sqlite:///{tmp_path / 'gw.sqlite3'}").connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM privacy_receipt WHERE token = :t"), {"t": token}).scalar() == 1
