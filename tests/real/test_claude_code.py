"""The real Claude Code CLI (scripts/claude-code.sh, headless ``claude -p``) pointed at ecgw's Messages surface.

The fake cloud (and, under ``step-routing``, the fake edge: Claude Code's ~10k-token prompt does not fit the real
small model) speaks OpenAI's chat wire format and asks for Claude Code's own ``Read`` tool on a workspace file
holding a GitHub token; Claude Code runs the tool and sends the result back. These tests assert what Claude Code
sent (``/v1/messages?beta=true``, streaming, its session header), that every answer was a complete Anthropic
event stream (Claude Code silently retries with ``stream: false`` when a stream is unusable, so a finished task
proves nothing about streaming), that the token never reached the cloud raw, and that Claude Code printed it
restored. Claude Code must not reach the internet: the environment switches off its non-essential traffic.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from accounting.calls import MemoryMeter
from gateway.app import build_services, create_app
from tests.conftest import settings_for
from tests.door import GuardedCloud
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer
from tests.real_parts import require_env

pytestmark = pytest.mark.real_agent

TOKEN = "ghp_" + "Zx9Q" * 9  # a GitHub token: the secret detectors know its pattern
TASK = "What does secret.txt in the current directory say? Use the Read tool, then quote it."
# Claude Code stays offline: no telemetry, error reports, update checks or other non-essential traffic.
OFFLINE = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
           "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1", "CLAUDE_CODE_ENABLE_TELEMETRY": "0"}


@dataclass
class Exchange:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytearray = field(default_factory=bytearray)
    status: int = 0
    response: bytearray = field(default_factory=bytearray)

    def json(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.body)
        return value


class Recorder:
    """ASGI middleware keeping every exchange with the gateway as Claude Code sent and received it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = Exchange(scope["method"], scope["path"], scope["query_string"].decode(),
                            {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]})
        with self._lock:
            self.exchanges.append(exchange)

        async def recording_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                exchange.body.extend(message.get("body", b""))
            return message

        async def recording_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
            elif message["type"] == "http.response.body":
                exchange.response.extend(message.get("body", b""))
            await send(message)

        await self.app(scope, recording_receive, recording_send)


@dataclass
class Bed:
    url: str
    meter: MemoryMeter
    recorder: Recorder
    edge: ModelServer
    cloud: ModelServer
    work: Path


def _tool_text(body: dict[str, Any]) -> str | None:
    results = [m for m in body["messages"] if m.get("role") == "tool"]
    return str(results[-1]["content"]) if results else None


def _read_call(work: Path) -> ToolCall:
    return ToolCall("Read", json.dumps({"file_path": str(work / "secret.txt")}))


@pytest.fixture()
def bed(tmp_path: Path) -> Iterator[Bed]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "secret.txt").write_text(f"deploy token: {TOKEN}\n")

    def cloud_says(body: dict[str, Any]) -> Reply:
        """The cloud model: asks for Claude Code's Read tool, then quotes the file it got back."""
        result = _tool_text(body)
        if result is not None:
            return Reply(content="The file says: " + result.split("deploy token:", 1)[-1].split()[0])
        if any(t["function"]["name"] == "Read" for t in body.get("tools") or ()):
            return Reply(content=None, tool_calls=[_read_call(work)])
        return Reply(content="OK")

    def edge_says(body: dict[str, Any]) -> Reply:
        """The edge model under step-routing: sure of itself for the tool call (low entropy, it stays on the
        edge), unsure once the file is in the context (high entropy, the step goes to the cloud)."""
        if _tool_text(body) is not None:
            return Reply(content="Hmm.", first_token_top={f"t{i}": 1.0 for i in range(20)})
        if any(t["function"]["name"] == "Read" for t in body.get("tools") or ()):
            return Reply(content="Reading.", tool_calls=[_read_call(work)], first_token_top={"Reading.": 0.99,
                                                                                            "x": 0.01})
        return Reply(content="OK", first_token_top={"OK": 0.99, "x": 0.01})

    cloud = ModelServer("cloud", model="gpt-test", responder=cloud_says)
    edge = ModelServer("edge", model="edge-model", responder=edge_says)
    with ThreadedServer(cloud.app) as cloud_server, ThreadedServer(edge.app) as edge_server:
        settings = settings_for(edge_server.url, cloud_server.url)
        from gateway.egress.transports.cloud import LiteLLMUpstream

        meter = MemoryMeter()
        services = build_services(settings, meter=meter, cloud=GuardedCloud(LiteLLMUpstream(settings.cloud)))
        recorder = Recorder(create_app(settings, services=services))
        server = ThreadedServer(recorder).start()
        try:
            yield Bed(server.url, meter, recorder, edge, cloud, work)
        finally:
            server.stop()


def claude_paths() -> tuple[str, str]:
    launcher = require_env("ECGW_TEST_CLAUDE", "Claude Code (scripts/claude-code.sh)")
    node_bin = require_env("ECGW_TEST_NODE_BIN", "Node for Claude Code (scripts/claude-code.sh)")
    if not os.access(launcher, os.X_OK):
        pytest.fail(f"{launcher} is not executable; run scripts/claude-code.sh install")
    return launcher, node_bin


def run_claude(bed: Bed, tmp_path: Path, model: str) -> dict[str, Any]:
    launcher, node_bin = claude_paths()
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": node_bin + os.pathsep + os.environ.get("PATH", ""), "HOME": str(home), "NO_COLOR": "1",
           "ANTHROPIC_BASE_URL": bed.url, "ANTHROPIC_API_KEY": "ecgw-local", **OFFLINE}
    command = [launcher, "-p", TASK, "--model", model, "--allowedTools", "Read", "--output-format", "json"]
    try:
        done = subprocess.run(command, env=env, cwd=bed.work, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"Claude Code did not finish in 300 s; stderr: {exc.stderr!r:.3000}")
    assert done.returncode == 0, f"Claude Code failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n" \
                                 f"{done.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(done.stdout[done.stdout.find("{"):])
    return result


def check_claude_code_was_served(bed: Bed, result: dict[str, Any], policy: str) -> list[Exchange]:
    posts = [e for e in bed.recorder.exchanges if e.method == "POST"]
    assert posts and all((e.path, e.query) == ("/v1/messages", "beta=true") for e in posts), \
        [(e.method, e.path, e.query) for e in bed.recorder.exchanges]
    session = posts[0].headers["x-claude-code-session-id"]
    for post in posts:
        body = post.json()
        # streaming every time: no silent fallback to stream:false
        assert post.status == 200 and body["stream"] is True and body["model"] == f"ecgw/{policy}"
        assert post.headers["x-api-key"] == "ecgw-local" and post.headers["anthropic-version"] == "2023-06-01"
        assert post.headers["x-claude-code-session-id"] == session
        text = bytes(post.response)
        assert text.startswith(b"event: message_start\n") and text.rstrip().endswith(
            b'event: message_stop\ndata: {"type":"message_stop"}'), text[-500:]
    # the tool round trip: the answer to the first call streamed a tool_use, the next call carried its result
    assert b'"type":"tool_use","id"' in bytes(posts[0].response) and b"input_json_delta" in bytes(posts[0].response)
    follow_up = posts[-1].json()["messages"]
    results = [b for m in follow_up if isinstance(m["content"], list) for b in m["content"]
               if b.get("type") == "tool_result"]
    assert results and TOKEN in json.dumps(results)  # Claude Code really ran Read on the workspace file
    # the token never reached the cloud raw, and Claude Code shows it restored
    sent = json.dumps(bed.cloud.requests)
    assert bed.cloud.requests and TOKEN not in sent and "[GITHUB_TOKEN_001]" in sent
    assert result["is_error"] is False and TOKEN in result["result"], result
    # one session, Claude Code's own; every upstream call metered with usage
    calls = bed.meter.calls
    assert calls and {c.session_id for c in calls} == {session} and {c.policy for c in calls} == {policy}
    assert all(c.usage is not None for c in calls if c.status == 200)
    assert all(c.status == 200 for c in calls if c.side == "cloud")
    return posts


def test_claude_code_reads_a_file_through_the_gateway_cloud_only(bed, tmp_path):
    result = run_claude(bed, tmp_path, "ecgw/cloud-only")
    check_claude_code_was_served(bed, result, "cloud-only")
    assert {c.side for c in bed.meter.calls} == {"cloud"} and not bed.edge.requests
    assert result["result"].startswith(f"The file says: {TOKEN}")


def test_claude_code_under_step_routing_edge_calls_the_tool_cloud_answers(bed, tmp_path):
    result = run_claude(bed, tmp_path, "ecgw/step-routing")
    posts = check_claude_code_was_served(bed, result, "step-routing")
    # the tool call came from the edge (sure of itself), the answer to the file from the cloud (edge unsure)
    assert [c.side for c in bed.meter.calls if c.status == 200][-2:] == ["edge", "cloud"]
    assert b"Reading." in bytes(posts[0].response)
    assert len(bed.cloud.requests) == 1 and _tool_text(bed.cloud.requests[0]) is not None
    assert result["result"] == f"The file says: {TOKEN}"
