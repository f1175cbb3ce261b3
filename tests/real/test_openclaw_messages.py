"""The real OpenClaw agent with its ``anthropic-messages`` provider API pointed at ecgw's Messages surface, the fake
cloud behind (OpenClaw's ~8k-token prompt does not fit the real small model). The fake asks for OpenClaw's own
``read`` tool on a workspace file naming a registered customer; OpenClaw runs it and sends the result back; the name
never reaches the cloud raw and OpenClaw's answer shows it restored."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from accounting.calls import MemoryMeter
from gateway.app import create_app
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer
from tests.privacy.helpers import UNITS
from tests.real.helpers import openclaw_paths
from tests.real.test_claude_code import Recorder

pytestmark = pytest.mark.real_agent

PROVIDER = "ecgw"
NAME = "Maria Gonzalez"  # a registered unit (tests/privacy/helpers.py)


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[str, Recorder, ModelServer, MemoryMeter, Path]]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "customer.txt").write_text(f"customer: {NAME}\n")

    def cloud_says(body: dict[str, Any]) -> Reply:
        results = [m for m in body["messages"] if m.get("role") == "tool"]
        if results:
            return Reply(content="The customer is " + str(results[-1]["content"]).split("customer:", 1)[-1].strip())
        if any(t["function"]["name"] == "read" for t in body.get("tools") or ()):
            return Reply(content=None, tool_calls=[ToolCall("read", json.dumps({"path": str(work / "customer.txt")}))])
        return Reply(content="OK")

    cloud = ModelServer("cloud", model="gpt-test", responder=cloud_says)
    edge = ModelServer("edge", model="edge-model")
    with ThreadedServer(cloud.app) as cloud_server, ThreadedServer(edge.app) as edge_server:
        settings = settings_for(edge_server.url, cloud_server.url)
        meter = MemoryMeter()
        services = guarded_services(settings, meter=meter)
        recorder = Recorder(create_app(settings, services=services))
        server = ThreadedServer(recorder).start()
        try:
            yield server.url, recorder, cloud, meter, work
        finally:
            server.stop()


def test_openclaw_anthropic_messages_provider_reads_a_file_through_the_gateway(tmp_path, served):
    url, recorder, cloud, meter, work = served
    launcher, node_bin = openclaw_paths()
    session = "openclaw-msg-" + uuid.uuid4().hex[:8]
    assert httpx.put(f"{url}/v1/sessions/{session}/units", json=UNITS).status_code == 200
    model = "ecgw/cloud-only"
    config = tmp_path / "openclaw.json5"
    config.write_text(json.dumps({"models": {"providers": {PROVIDER: {
        "baseUrl": url, "apiKey": "ecgw-local", "api": "anthropic-messages", "headers": {"X-Session-Id": session},
        "models": [{"id": model, "name": model, "reasoning": False, "input": ["text"], "contextWindow": 200000,
                    "maxTokens": 4096, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}}))
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": node_bin + os.pathsep + os.environ.get("PATH", ""),
           "NO_COLOR": "1", "OPENCLAW_CONFIG_PATH": str(config)}
    command = [launcher, "agent", "exec", "--config", str(config), "--model", f"{PROVIDER}/{model}", "--json",
               "--timeout", "300", "--cwd", str(work), "Who is the customer in customer.txt? Use the read tool."]
    try:
        done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, timeout=400)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"OpenClaw did not finish in 400 s; stderr: {exc.stderr!r:.3000}")
    envelope = json.loads(done.stdout[done.stdout.find("{"):] or "{}")
    assert done.returncode == 0 and envelope.get("ok") is True, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    posts = [e for e in recorder.exchanges if e.method == "POST"]
    assert len(posts) >= 2 and all(e.path == "/v1/messages" and e.status == 200 for e in posts)
    for post in posts:
        assert post.json()["stream"] is True and post.headers["x-api-key"] == "ecgw-local"
        assert bytes(post.response).rstrip().endswith(b'event: message_stop\ndata: {"type":"message_stop"}')
    assert b"input_json_delta" in bytes(posts[0].response)
    assert envelope["toolSummary"]["tools"] == ["read"] and envelope["toolSummary"]["failures"] == 0
    sent = json.dumps(cloud.requests, ensure_ascii=False)
    assert NAME not in sent and "[FULL_NAME_001]" in sent
    assert envelope["final"] == f"The customer is {NAME}"
    assert {c.session_id for c in meter.calls} == {session} and all(c.status == 200 for c in meter.calls)
