"""The real Codex CLI (0.169.0, ``codex exec``) pointed at ``ecgw serve`` with ``wire_api = "responses"``.

The fake cloud asks for Codex's own shell tool (``exec_command``) to read a workspace file holding an e-mail
address; Codex runs it and sends the output back; the fake answers by quoting what it received. The cloud must
see only a placeholder, and Codex must print the real address (restored in the stream). Under ``cloud-only`` and
``step-routing`` (the fake edge is unsure, so every step is escalated after an edge probe), then ``ecgw usage``
shows the calls like any other.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer
from tests.processes import wait_healthy
from tests.real_parts import require_env

pytestmark = pytest.mark.real_agent

EMAIL = "maria.gonzalez@example.org"
TASK = "Read notes.txt and tell me whom to contact."


def codex_paths() -> tuple[str, str]:
    launcher = require_env("ECGW_TEST_CODEX", "Codex CLI (scripts/codex.sh)")
    node_bin = require_env("ECGW_TEST_NODE_BIN", "Node 24 (scripts/openclaw.sh)")
    return launcher, node_bin


def shell_then_quote(body: dict[str, Any]) -> Reply:
    """The cloud: first ask Codex to run ``cat notes.txt`` (with its shell tool when offered, else from its
    freeform JavaScript ``exec`` tool); once the output is back, quote it."""
    results = [m for m in body["messages"] if m["role"] == "tool"]
    if not results:
        offered = {t["function"]["name"] for t in body.get("tools") or ()}
        if "exec_command" in offered:
            return Reply(content=None, tool_calls=[ToolCall("exec_command", json.dumps({"cmd": "cat notes.txt"}))])
        script = 'const r = await tools.exec_command({cmd: "cat notes.txt"});\ntext(r.output);'
        return Reply(content=None, tool_calls=[ToolCall("exec", json.dumps({"input": script}))])
    content = results[-1]["content"]
    output = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
    line = output[output.find("Contact"):].split("\n")[0]
    return Reply(content="Contact: " + line.strip())


def unsure(body: dict[str, Any]) -> Reply:
    return Reply(content="maybe", first_token_top={f"t{i}": 1.0 for i in range(20)})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def fakes() -> Iterator[tuple[ModelServer, ModelServer, ThreadedServer, ThreadedServer]]:
    cloud = ModelServer("cloud", model="gpt-test", responder=shell_then_quote)
    edge = ModelServer("edge", model="edge-model", responder=unsure)
    with ThreadedServer(cloud.app) as cloud_server, ThreadedServer(edge.app) as edge_server:
        yield cloud, edge, cloud_server, edge_server


@pytest.mark.parametrize(("policy", "shape"), [("cloud-only", "tools"), ("step-routing", "tools"),
                                               ("cloud-only", "lite")])
def test_codex_exec_runs_its_shell_tool_through_the_gateway(tmp_path: Path, fakes: Any, policy: str,
                                                            shape: str) -> None:
    """``tools``: a model name Codex does not know (``ecgw/<policy>``), so it offers its shell tool as a function;
    ``lite``: its default model name (the policy then comes from a header), where it offers only freeform tools in
    an ``additional_tools`` item and runs the shell from a JavaScript ``exec`` call."""
    launcher, node_bin = codex_paths()
    cloud, edge, cloud_server, edge_server = fakes
    port = free_port()
    database = f"sqlite:///{tmp_path / 'metering.db'}"
    config = {"server": {"host": "127.0.0.1", "port": port, "workers": 1}, "database_url": database,
              "edge": {"base_url": edge_server.url + "/v1", "model": "edge-model"},
              "cloud": {"model": "openai/gpt-test", "api_base": cloud_server.url + "/v1", "api_key_env": None}}
    (tmp_path / "ecgw.yaml").write_text(yaml.safe_dump(config))
    gateway = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--config", str(tmp_path / "ecgw.yaml")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", gateway)
        home, work = tmp_path / "codex-home", tmp_path / "work"
        home.mkdir()
        work.mkdir()
        (work / "notes.txt").write_text(f"Contact Maria at {EMAIL}\n")
        # what docs/real-parts.md tells a user to write
        model = f'model = "ecgw/{policy}"\n' if shape == "tools" else ""
        headers = f'http_headers = {{ "X-ECGW-Policy" = "{policy}" }}\n' if shape == "lite" else ""
        (home / "config.toml").write_text(
            f'{model}model_provider = "ecgw"\n\n[model_providers.ecgw]\nname = "ecgw"\n'
            f'base_url = "http://127.0.0.1:{port}/v1"\nwire_api = "responses"\nenv_key = "ECGW_API_KEY"\n{headers}')
        env = {**os.environ, "CODEX_HOME": str(home), "ECGW_API_KEY": "ecgw-local", "NO_COLOR": "1",
               "PATH": node_bin + os.pathsep + os.environ.get("PATH", "")}
        done = subprocess.run([launcher, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                               TASK], cwd=work, env=env, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-4000:]
        # Codex ran its own tool, and what it shows is restored ...
        assert "cat notes.txt" in done.stderr  # its exec log
        assert f"Contact: Contact Maria at {EMAIL}" in done.stdout, done.stdout + done.stderr[-3000:]
        # ... while the cloud saw the tool round trip with a placeholder only
        assert len(cloud.requests) == 2 and all(r["stream"] for r in cloud.requests)  # streamed end to end
        sent = json.dumps(cloud.requests)
        assert EMAIL not in sent and "[EMAIL_ADDRESS_001]" in sent
        second = cloud.requests[1]["messages"]
        assert second[-2]["tool_calls"][0]["function"]["name"] == ("exec_command" if shape == "tools" else "exec")
        assert second[-1]["role"] == "tool" and "[EMAIL_ADDRESS_001]" in json.dumps(second[-1])
        if policy == "step-routing":
            assert len(edge.requests) == 2 and all(r.get("logprobs") for r in edge.requests)
    finally:
        gateway.terminate()
        gateway.wait(timeout=30)
    usage = subprocess.run([sys.executable, "-m", "gateway.cli", "usage", "--by", "policy", "--format", "json",
                            "--database-url", database], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 0, usage.stderr
    rows = {row["group"]: row for row in json.loads(usage.stdout)}
    row = rows[policy]
    assert (row["requests"], row["cloud_calls"]) == (2, 2)
    assert row["edge_calls"] == (2 if policy == "step-routing" else 0)
    # the second model call repeats Codex's whole history: the fake cloud's prefix cache hits, and it is metered
    assert row["cloud_raw_input_tokens"] > 0 and row["cloud_cache_read_tokens"] > 0
