"""Per-step features through a real gateway into a real SQLite file: numbers and labels only. The test searches the
stored step records — and the whole database file — for the session's values and finds none."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import httpx

from gateway.app import create_app
from router.learning.features import request_features, vector
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer

SECRET_WORDS = ("Quokka", "marmalade-7781", "plan-zephyr.txt", "Permission denied for zorblax")


def _session() -> list[dict[str, object]]:
    return [
        {"role": "system", "content": "You are an agent for Quokka Industries."},
        {"role": "user", "content": "Open plan-zephyr.txt and tell me the marmalade-7781 code."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "read", "arguments": json.dumps({"path": "/srv/plan-zephyr.txt"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: Permission denied for zorblax " + "x" * 400},
    ]


def test_request_features_are_numbers_and_labels() -> None:
    features = request_features({"messages": _session(), "tools": [{}, {}, {}]})
    assert features["step_index"] == 2 and features["tools_offered"] == 3 and features["last_role"] == "tool"
    assert features["last_tool_error"] == 1 and int(features["observation_tokens"]) > 100
    assert 0 < int(features["history_tokens"]) < int(features["prompt_tokens"])
    assert all(isinstance(v, int | float) for k, v in features.items() if k != "last_role")
    ok = request_features({"messages": [*_session()[:3], {"role": "tool", "tool_call_id": "c1", "content": "42"}]})
    assert ok["last_tool_error"] == 0
    assert vector({**features, "entropy_first": 0.5}, ["entropy_first", "last_role_tool", "last_role_user"]) == [
        0.5, 1.0, 0.0]
    assert vector(features, ["entropy_first"]) is None  # no probe, no entropy: not a row a model can read


def test_stored_step_records_hold_no_content(tmp_path: Path, edge: ModelServer, cloud: ModelServer) -> None:
    database = tmp_path / "ecgw.sqlite3"
    settings = settings_for(edge.url, cloud.url, database_url=f"sqlite:///{database}",  # type: ignore[attr-defined]
                            policy={"default": "step-routing", "knobs": {"step-routing": {
                                "tau": 10, "missing_logprobs": "edge"}}},
                            learning={"shadow_rate": 1.0, "seed": 3})
    edge.script(Reply(content=None, tool_calls=[ToolCall("read", json.dumps({"path": "/srv/plan-zephyr.txt"}))]),
                Reply(content="The marmalade-7781 code is in plan-zephyr.txt, Quokka"))
    cloud.script(Reply(content=None, tool_calls=[ToolCall("read", json.dumps({"path": "/srv/plan-zephyr.txt"}))]),
                 Reply(content="Quokka: marmalade-7781"))
    server = ThreadedServer(create_app(settings, services=guarded_services(settings))).start()
    try:
        messages = _session()
        for body in ({"messages": messages[:2]}, {"messages": messages}):
            response = httpx.post(server.url + "/v1/chat/completions", timeout=30,
                                  json={"model": "ecgw", "tools": [{"type": "function", "function": {
                                      "name": "read", "parameters": {"type": "object"}}}], **body},
                                  headers={"X-Session-Id": "features-1"})
            assert response.status_code == 200, response.text
            deadline = time.monotonic() + 20  # the cloud double answers in order: this step's shadow call first
            while len(cloud.requests) < len(body["messages"]) // 2:
                assert time.monotonic() < deadline, "the shadow call never reached the cloud"
                time.sleep(0.02)
    finally:
        server.stop()  # flushes the meter, the shadow calls' records included
    with sqlite3.connect(database) as conn:
        rows = conn.execute("SELECT * FROM ecgw_step_records ORDER BY id").fetchall()
        names = [d[0] for d in conn.execute("SELECT * FROM ecgw_step_records").description]
    assert len(rows) == 2
    stored = [dict(zip(names, row, strict=True)) for row in rows]
    assert [json.loads(r["label"])["kind"] for r in stored] == ["tool", "text"]
    assert json.loads(stored[1]["features"])["last_tool_error"] == 1
    text = json.dumps(rows)
    everything = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("ecgw.sqlite3"))
    for word in SECRET_WORDS:
        assert word.lower() not in text.lower()
        assert word.encode() not in everything, f"{word!r} is in the database file"
