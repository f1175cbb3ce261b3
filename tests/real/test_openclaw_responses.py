"""The real OpenClaw agent (2026.9.6) with its ``openai-responses`` provider API, pointed at ecgw's
``POST /v1/responses`` over the fake cloud (``cloud-only``): the fake asks for OpenClaw's own ``read`` tool on a
workspace file holding an e-mail address, OpenClaw runs it and sends the result back, and the fake quotes it. The
cloud sees a placeholder only; OpenClaw's answer carries the real address.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from accounting.calls import MemoryMeter
from gateway.app import create_app
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer
from tests.real.helpers import openclaw_paths
from tests.real.test_openclaw import Recorder

pytestmark = pytest.mark.real_agent

EMAIL = "maria.gonzalez@example.org"
MODEL = "ecgw/cloud-only"


def read_then_quote(body: dict[str, Any]) -> Reply:
    results = [m for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return Reply(content=None, tool_calls=[ToolCall("read", json.dumps({"path": "notes.txt"}))])
    content = results[-1]["content"]
    text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
    return Reply(content="The notes say: " + text.strip())


@pytest.fixture()
def served() -> Iterator[tuple[str, ModelServer, Recorder, MemoryMeter]]:
    cloud = ModelServer("cloud", model="gpt-test", responder=read_then_quote)
    with ThreadedServer(cloud.app) as cloud_server:
        settings = settings_for("http://127.0.0.1:9", cloud_server.url)
        meter = MemoryMeter()
        services = guarded_services(settings, meter=meter)
        recorder = Recorder(create_app(settings, services=services))
        with ThreadedServer(recorder) as gateway:
            yield gateway.url, cloud, recorder, meter


def test_openclaw_openai_responses_tool_round_trip(tmp_path: Path, served: Any) -> None:
    launcher, node_bin = openclaw_paths()
    url, cloud, recorder, meter = served
    session_id = "openclaw-responses-" + uuid.uuid4().hex[:8]
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / "notes.txt").write_text(f"Contact Maria at {EMAIL}\n")
    config = {"models": {"providers": {"ecgw": {
        "baseUrl": url + "/v1", "apiKey": "ecgw-local", "api": "openai-responses",
        "headers": {"X-Session-Id": session_id},
        "models": [{"id": MODEL, "name": MODEL, "reasoning": False, "input": ["text"], "contextWindow": 128000,
                    "maxTokens": 4096, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}}
    path = tmp_path / "openclaw.json5"
    path.write_text(json.dumps(config))
    env = {**os.environ, "HOME": str(home), "PATH": node_bin + os.pathsep + os.environ.get("PATH", ""),
           "NO_COLOR": "1", "OPENCLAW_CONFIG_PATH": str(path)}
    done = subprocess.run([launcher, "agent", "exec", "--config", str(path), "--model", f"ecgw/{MODEL}", "--json",
                           "--timeout", "300", "--cwd", str(work), "Read notes.txt and tell me whom to contact."],
                          env=env, cwd=work, capture_output=True, text=True, timeout=420)
    start = done.stdout.find("{")
    assert done.returncode == 0 and start >= 0, done.stderr[-4000:]
    envelope = json.loads(done.stdout[start:])
    assert envelope.get("ok") is True, json.dumps(envelope)[:3000]
    assert f"The notes say: Contact Maria at {EMAIL}" in json.dumps(envelope)  # restored in what OpenClaw shows
    assert envelope["toolSummary"]["tools"] == ["read"]
    posts = [e for e in recorder.exchanges if e.method == "POST"]
    assert [e.path for e in posts] == ["/v1/responses", "/v1/responses"]
    for post in posts:
        assert post.status == 200 and post.headers["x-session-id"] == session_id
        assert bytes(post.response).startswith(b"event: response.created")
        assert b"event: response.completed" in bytes(post.response)
    second = json.loads(posts[1].body)
    assert [i.get("type") for i in second["input"][-2:]] == ["function_call", "function_call_output"]
    assert EMAIL in json.dumps(second["input"][-1])  # OpenClaw's tool read the real file ...
    assert EMAIL not in json.dumps(cloud.requests)  # ... and the cloud never saw it
    assert "[EMAIL_ADDRESS_001]" in json.dumps(cloud.requests[-1]["messages"][-1])
    assert [c.side for c in meter.calls] == ["cloud", "cloud"]
    assert {c.session_id for c in meter.calls} == {session_id}
