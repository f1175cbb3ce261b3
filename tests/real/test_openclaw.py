"""The real OpenClaw agent (2026.9.6, headless ``openclaw agent exec``) pointed at ecgw, with the real vLLM behind it.

SmolLM2-135M's answer is nonsense and that is fine: these tests assert what the gateway saw and did. OpenClaw's
requests arrived (``GET /v1/models``, then a streaming ``POST /v1/chat/completions`` with its ~20 KB system prompt
and its tools), its session header mapped to one session, the policy ran, usage was metered and handed back to
OpenClaw, and OpenClaw exited with ``ok: true``. With ``advisor``, the tool the gateway injects for the edge never
reaches OpenClaw. A turn takes about a minute (prefill of ~5.6k tokens on 2 cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from accounting.calls import MemoryMeter
from gateway.app import create_app
from gateway.egress.transports.openai_http import OpenAIHTTPUpstream
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer
from tests.real.helpers import VLLM_MODEL, openclaw_paths, vllm_url

pytestmark = [pytest.mark.real_agent, pytest.mark.real_vllm]

SESSION_HEADER = "X-Session-Id"
TASK = "Reply with one short sentence: what is the capital of France?"


@dataclass
class Exchange:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""
    status: int = 0
    response: bytearray = field(default_factory=bytearray)


class Recorder:
    """ASGI middleware: every HTTP exchange with the gateway, as the client sent and received it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = Exchange(scope["method"], scope["path"],
                            {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]})
        with self._lock:
            self.exchanges.append(exchange)

        async def recording_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                exchange.body += message.get("body", b"")
            return message

        async def recording_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
            elif message["type"] == "http.response.body":
                exchange.response.extend(message.get("body", b""))
            await send(message)

        await self.app(scope, recording_receive, recording_send)


class RecordingEdge:
    """The real edge transport, keeping the bodies the gateway sent to vLLM."""

    def __init__(self, inner: OpenAIHTTPUpstream) -> None:
        self._inner = inner
        self.side, self.provider, self.model = inner.side, inner.provider, inner.model
        self.bodies: list[dict[str, Any]] = []

    async def ready(self) -> tuple[bool, str]:
        return await self._inner.ready()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        return await self._inner.complete(body)

    def stream(self, body: dict[str, Any]) -> Any:
        self.bodies.append(body)
        return self._inner.stream(body)


@dataclass
class Gateway:
    url: str
    meter: MemoryMeter
    recorder: Recorder
    edge: RecordingEdge


@pytest.fixture()
def gateway_on_vllm(cloud: ModelServer) -> Iterator[Gateway]:
    settings = settings_for("http://unused", cloud.url,  # type: ignore[attr-defined]
                            edge={"base_url": vllm_url(), "model": VLLM_MODEL, "read_timeout_s": 300})
    meter = MemoryMeter()
    edge = RecordingEdge(OpenAIHTTPUpstream(settings.edge))
    services = guarded_services(settings, meter=meter, edge=edge)
    recorder = Recorder(create_app(settings, services=services))
    server = ThreadedServer(recorder).start()
    try:
        yield Gateway(server.url, meter, recorder, edge)
    finally:
        server.stop()


PROVIDER = "vllm"  # OpenClaw's bundled vLLM provider: it discovers models with GET /v1/models, and ecgw speaks vLLM


def pinned_config(base_url: str, session_id: str, models: list[str]) -> dict[str, Any]:
    """One provider, the gateway; what docs/real-parts.md tells a user to write."""
    return {"agents": {"defaults": {"models": {f"{PROVIDER}/*": {}}}},  # also list what GET /v1/models offers
            "models": {"providers": {PROVIDER: {
        "baseUrl": base_url, "apiKey": "ecgw-local", "api": "openai-completions",
        "headers": {SESSION_HEADER: session_id},
        "models": [{"id": model, "name": model, "reasoning": False, "input": ["text"],
                    # SmolLM2 serves 8k tokens; OpenClaw's estimate of its own prompt is high, so claim more
                    # context and keep the answer short (vLLM: --max-model-len 8192).
                    "contextWindow": 32768, "maxTokens": 48,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                    # vLLM takes list-typed content, so no requiresStringContent: OpenClaw sends a content list
                    "compat": {"supportsUsageInStreaming": True}}
                   for model in models]}}}}


def run_openclaw(tmp_path: Path, gateway: Gateway, model: str, session_id: str) -> dict[str, Any]:
    launcher, node_bin = openclaw_paths()
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    config = tmp_path / "openclaw.json5"
    config.write_text(json.dumps(pinned_config(gateway.url + "/v1", session_id, [model]), indent=2))
    env = {**os.environ, "HOME": str(home), "PATH": node_bin + os.pathsep + os.environ.get("PATH", ""),
           "NO_COLOR": "1", "OPENCLAW_CONFIG_PATH": str(config)}
    # What a user does first: see which models the provider offers (OpenClaw asks GET /v1/models) ...
    listed = subprocess.run([launcher, "models", "list", "--provider", PROVIDER, "--refresh", "--json"], env=env,
                            cwd=work, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr[-3000:]
    keys = {m["key"] for m in json.loads(listed.stdout[listed.stdout.find("{"):])["models"]}
    assert {f"{PROVIDER}/ecgw/edge-only", f"{PROVIDER}/ecgw/advisor", f"{PROVIDER}/{model}"} <= keys, keys
    # ... then one headless turn
    command = [launcher, "agent", "exec", "--config", str(config), "--model", f"{PROVIDER}/{model}", "--json",
               "--timeout", "400", "--cwd", str(work), TASK]
    try:
        done = subprocess.run(command, env=env, cwd=work, capture_output=True, text=True, timeout=480)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"OpenClaw did not finish in 480 s; stderr: {exc.stderr!r:.3000}")
    start = done.stdout.find("{")
    assert start >= 0, f"no JSON envelope from OpenClaw (exit {done.returncode}); stderr:\n{done.stderr[-4000:]}"
    envelope: dict[str, Any] = json.loads(done.stdout[start:])
    assert done.returncode == 0 and envelope.get("ok") is True, (
        f"OpenClaw failed (exit {done.returncode}): {json.dumps(envelope)[:3000]}\nstderr:\n{done.stderr[-4000:]}")
    return envelope


def check_the_gateway_served_openclaw(gateway: Gateway, envelope: dict[str, Any], policy: str,
                                      session_id: str) -> list[Exchange]:
    exchanges = list(gateway.recorder.exchanges)
    paths = [(e.method, e.path) for e in exchanges]
    assert ("GET", "/v1/models") in paths, paths
    posts = [e for e in exchanges if (e.method, e.path) == ("POST", "/v1/chat/completions")]
    assert posts and paths.index(("GET", "/v1/models")) < paths.index(("POST", "/v1/chat/completions")), paths
    for post in posts:
        assert post.status == 200, bytes(post.response)[:2000]
        assert post.headers.get(SESSION_HEADER.lower()) == session_id
        body = json.loads(post.body)
        assert body["stream"] is True and body["model"] == f"ecgw/{policy}"
        assert body["tools"] and body.get("tool_choice") == "auto"
        assert all(isinstance(m.get("content"), str | list) for m in body["messages"])
        assert post.headers["content-type"].startswith("application/json")
        assert post.response.startswith(b"data: ") and post.response.rstrip().endswith(b"data: [DONE]")
    first = json.loads(posts[0].body)
    assert first["messages"][0]["role"] == "system" and len(first["messages"][0]["content"]) > 5000
    assert any(isinstance(m["content"], list) for m in first["messages"])  # passed to vLLM as it came
    assert (first.get("stream_options") or {}).get("include_usage") is True  # supportsUsageInStreaming
    # one session, the header's; the policy the model alias named; every upstream call metered with usage
    calls = gateway.meter.calls
    assert calls and {c.session_id for c in calls} == {session_id}
    assert {c.policy for c in calls} == {policy}
    edge_calls = [c for c in calls if c.side == "edge"]
    assert len(edge_calls) >= len(posts) and all(c.status == 200 and c.usage is not None for c in edge_calls)
    # OpenClaw got the usage chunk, and it is what vLLM reported
    usage = envelope["usage"]
    prompt = usage["input"] + usage.get("cacheRead", 0)  # OpenClaw counts cache reads apart from input
    assert prompt > 3000 and usage["output"] >= 1, usage
    reported = sum(c.usage["prompt_tokens"] for c in edge_calls if c.usage)  # type: ignore[index]
    if policy == "edge-only":
        assert prompt == reported, (usage, [c.usage for c in edge_calls])
        cached = sum((c.usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0  # type: ignore[union-attr]
                     for c in edge_calls)
        assert usage.get("cacheRead", 0) == cached
    else:
        assert prompt <= reported
    return posts


def test_openclaw_turn_through_the_gateway_edge_only(tmp_path, gateway_on_vllm, cloud):
    session_id = "openclaw-" + uuid.uuid4().hex[:8]
    envelope = run_openclaw(tmp_path, gateway_on_vllm, "ecgw/edge-only", session_id)
    check_the_gateway_served_openclaw(gateway_on_vllm, envelope, "edge-only", session_id)
    assert {c.side for c in gateway_on_vllm.meter.calls} == {"edge"} and not cloud.requests
    assert envelope["provider"] == PROVIDER and envelope["model"] == "ecgw/edge-only"


def test_openclaw_turn_through_the_gateway_advisor_hides_the_injected_tool(tmp_path, gateway_on_vllm):
    session_id = "openclaw-" + uuid.uuid4().hex[:8]
    envelope = run_openclaw(tmp_path, gateway_on_vllm, "ecgw/advisor", session_id)
    posts = check_the_gateway_served_openclaw(gateway_on_vllm, envelope, "advisor", session_id)
    # the policy ran: vLLM was offered the advisor tool next to OpenClaw's own ...
    offered = [{t["function"]["name"] for t in body.get("tools") or ()} for body in gateway_on_vllm.edge.bodies]
    assert offered and all("ask_cloud_advisor" in names for names in offered)
    sent = {t["function"]["name"] for t in json.loads(posts[0].body)["tools"]}
    assert "ask_cloud_advisor" not in sent and sent <= offered[0]
    # ... and nothing OpenClaw received names it, whether or not SmolLM2 chose to call it
    for post in posts:
        assert b"ask_cloud_advisor" not in post.response
    assert "ask_cloud_advisor" not in json.dumps(envelope)
