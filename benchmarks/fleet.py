"""The edge pool under an agent workload (issue 25): three edge replicas with a real prefix memory
(``benchmarks.prefix_stub``), ``ecgw serve --workers 2`` in front, 30 sessions x 10 steps whose prompts grow as an
agent's do (a shared system prompt, a task, then each step's reply and tool result appended).

- affinity vs round-robin (``edge.balance``): the replicas' prefix-cache hit rate and edge raw-input tokens
  (prompt - cached), as the replicas themselves counted them;
- one replica killed (SIGKILL) a third of the way through an affinity run, half the steps streamed: non-streamed
  requests that failed (target 0: a connection failure before the first byte is retried on another replica) and
  streams broken (only those in flight on the killed replica can be).

    python -m benchmarks.fleet            # appends to benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from benchmarks.contenders import ROOT, Server, _spawn, free_port
from benchmarks.results import append

SESSIONS, STEPS, CONCURRENCY = 30, 10, 10
SYSTEM = " ".join(f"Rule {i}: keep the repository tidy, run the tests, and report what changed." for i in range(30))


def _task(session: int) -> str:
    return f"Task {session}: " + " ".join(f"fix module m{session}_{k} and its tests;" for k in range(12))


def _tool_result(session: int, step: int) -> str:
    return " ".join(f"line {step}.{k} of m{session}: ok" for k in range(16))


def start_stubs(workdir: Path) -> list[Server]:
    stubs = []
    for name in "abc":
        port = free_port()
        stubs.append(_spawn(f"stub-{name}", [sys.executable, "-m", "benchmarks.prefix_stub", "--port", str(port),
                                              "--name", name], workdir, f"http://127.0.0.1:{port}/v1"))
    return stubs


def start_gateway(workdir: Path, stubs: list[Server], balance: str, index: int) -> Server:
    """One of the two gateway processes of a balance mode (one worker each: uvicorn's multi-worker supervisor
    restarts a worker that starts slower than its health-check timeout, which a loaded 2-core machine does)."""
    port = free_port()
    config = {
        "server": {"port": port, "workers": 1},
        "edge": {"deployments": [{"name": s.name.removeprefix("stub-"), "base_url": s.url, "model": "stub"}
                                 for s in stubs],
                 "balance": balance, "health_interval_s": 1, "eject_after": 2, "readmit_after_s": 60,
                 "connect_timeout_s": 2, "read_timeout_s": 30},
        "cloud": {"model": "openai/none", "api_base": "http://127.0.0.1:9/v1", "api_key_env": None},
        "policy": {"default": "edge-only"},
        "privacy": {"layers": {"ner": False}},
        "database_url": f"sqlite:///{workdir / f'fleet-{balance}.sqlite3'}",
        "sessions": {"store": "sqlite", "sqlite_path": str(workdir / f"sessions-{balance}.sqlite3")},
        "secrets": {"key_file": str(workdir / "ecgw.key")},
    }
    path = workdir / f"fleet-{balance}-{index}.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECGW_", "PROMETHEUS_"))}
    server = Server(name=f"ecgw-{balance}-{index}", url=f"http://127.0.0.1:{port}/v1")
    log = workdir / f"ecgw-{balance}-{index}.log"
    import subprocess

    server.process = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--config", str(path)],
                                      stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    server.log = log
    return server


def wait_healthy(server: Server, timeout_s: float = 900) -> None:
    base = server.url.removesuffix("/v1")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert server.process is not None
        if server.process.poll() is not None:
            raise RuntimeError(f"{server.name} exited; see {server.log}")
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"{server.name} not healthy after {timeout_s} s")


class Outcome:
    def __init__(self) -> None:
        self.done = 0
        self.failed_plain = 0
        self.broken_streams = 0
        self.streams = 0
        self.plain = 0
        self.by_deployment: dict[str, int] = {}


async def _step(client: httpx.AsyncClient, url: str, session: str, messages: list[dict[str, Any]], stream: bool,
                out: Outcome) -> str:
    body = {"model": "ecgw/edge-only", "stream": stream, "messages": messages}
    headers = {"X-Session-Id": session, "connection": "close"}  # a new connection each step: both workers serve
    if not stream:
        out.plain += 1
        try:
            response = await client.post(url, json=body, headers=headers)
        except httpx.HTTPError:
            out.failed_plain += 1
            return ""
        if response.status_code != 200:
            out.failed_plain += 1
            return ""
        name = response.headers.get("x-ecgw-edge-deployment", "?")
        out.by_deployment[name] = out.by_deployment.get(name, 0) + 1
        return str(response.json()["choices"][0]["message"]["content"])
    out.streams += 1
    text, ok = [], False
    try:
        async with client.stream("POST", url, json=body, headers=headers) as response:
            name = response.headers.get("x-ecgw-edge-deployment", "?")
            async for line in response.aiter_lines():
                if line == "data: [DONE]":
                    ok = True
                elif line.startswith("data: {"):
                    event = json.loads(line[6:])
                    if "error" in event:
                        break
                    for choice in event.get("choices") or ():
                        text.append(choice["delta"].get("content") or "")
            ok = ok and response.status_code == 200
    except httpx.HTTPError:
        ok = False
        name = "?"
    if not ok:
        out.broken_streams += 1
        return ""
    out.by_deployment[name] = out.by_deployment.get(name, 0) + 1
    return "".join(text)


async def _session(client: httpx.AsyncClient, urls: list[str], n: int, gate: asyncio.Semaphore, out: Outcome,
                   mixed: bool) -> None:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": _task(n)}]
    async with gate:
        for step in range(STEPS):
            stream = mixed and (n + step) % 2 == 1
            url = urls[(n + step) % len(urls)]  # a session's steps alternate between the two gateway processes
            reply = await _step(client, url, f"bench-{n}", messages, stream, out)
            messages += [{"role": "assistant", "content": reply or "(no reply)"},
                         {"role": "user", "content": _tool_result(n, step)}]
            out.done += 1


async def _run(urls: list[str], *, mixed: bool, kill: Server | None = None) -> Outcome:
    out = Outcome()
    gate = asyncio.Semaphore(CONCURRENCY)
    limits = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        tasks = [asyncio.create_task(_session(client, urls, n, gate, out, mixed)) for n in range(SESSIONS)]
        if kill is not None:
            while out.done < SESSIONS * STEPS // 3:
                await asyncio.sleep(0.01)
            assert kill.process is not None
            os.kill(kill.process.pid, signal.SIGKILL)
        await asyncio.gather(*tasks)
    return out


def _stats(stubs: list[Server]) -> dict[str, Any]:
    total: dict[str, Any] = {"requests": 0, "prompt_tokens": 0, "cached_tokens": 0}
    for stub in stubs:
        try:
            stats = httpx.get(stub.url.removesuffix("/v1") + "/stats", timeout=5).json()
        except httpx.HTTPError:
            continue  # the killed one
        for key in total:
            total[key] += stats[key]
    total["hit_rate"] = total["cached_tokens"] / max(total["prompt_tokens"], 1)
    total["raw_input_tokens"] = total["prompt_tokens"] - total["cached_tokens"]
    return total


def _reset(stubs: list[Server]) -> None:
    for stub in stubs:
        httpx.post(stub.url.removesuffix("/v1") + "/reset", timeout=5)


def run() -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="ecgw-fleet-"))
    key = workdir / "ecgw.key"  # one secrets key for the four gateways, written before any starts
    key.write_text(secrets.token_hex(32))
    key.chmod(0o600)
    stubs = start_stubs(workdir)
    gateways = {b: [start_gateway(workdir, stubs, b, i) for i in range(2)] for b in ("affinity", "round-robin")}
    report: dict[str, Any] = {"sessions": SESSIONS, "steps": STEPS, "workers": 2, "replicas": len(stubs)}
    try:
        for pair in gateways.values():
            for gateway in pair:
                wait_healthy(gateway)
        for balance, pair in gateways.items():
            _reset(stubs)
            t0 = time.perf_counter()
            outcome = asyncio.run(_run([g.url + "/chat/completions" for g in pair], mixed=False))
            report[balance] = {**_stats(stubs), "seconds": round(time.perf_counter() - t0, 1),
                               "failed": outcome.failed_plain, "by_deployment": outcome.by_deployment}
        _reset(stubs)
        outcome = asyncio.run(_run([g.url + "/chat/completions" for g in gateways["affinity"]], mixed=True,
                                   kill=stubs[2]))
        report["kill"] = {"killed": "c", "plain": outcome.plain, "failed_plain": outcome.failed_plain,
                          "streams": outcome.streams, "broken_streams": outcome.broken_streams,
                          "by_deployment": outcome.by_deployment}
    finally:
        for server in [*gateways["affinity"], *gateways["round-robin"], *stubs]:
            server.stop()
    return report


def render(report: dict[str, Any]) -> str:
    lines = [f"\n## Edge pool: affinity vs round-robin, a replica killed ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
             "",
             f"`python -m benchmarks.fleet`: {report['replicas']} edge stubs with a real prefix memory "
             f"(benchmarks/prefix_stub.py, 16-token blocks), {report['workers']} `ecgw serve` processes (a session's "
             "steps alternate between them), "
             f"{report['sessions']} sessions x {report['steps']} steps (shared system prompt, growing history), "
             f"{CONCURRENCY} sessions at a time, a new connection per step.",
             "",
             "| balance | edge prompt tokens | cached | hit rate | edge raw-input tokens | failed | requests per replica |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for balance in ("affinity", "round-robin"):
        row = report[balance]
        spread = ", ".join(f"{k} {v}" for k, v in sorted(row["by_deployment"].items()))
        lines.append(f"| {balance} | {row['prompt_tokens']} | {row['cached_tokens']} | {row['hit_rate']:.1%} | "
                     f"{row['raw_input_tokens']} | {row['failed']} | {spread} |")
    kill = report["kill"]
    spread = ", ".join(f"{k} {v}" for k, v in sorted(kill["by_deployment"].items()))
    lines += ["", f"Replica {kill['killed']} killed (SIGKILL) after a third of the steps (affinity, every other step "
              f"streamed): non-streamed requests failed **{kill['failed_plain']}** of {kill['plain']}; streams broken "
              f"**{kill['broken_streams']}** of {kill['streams']}; answered per replica: {spread}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--no-write", action="store_true", help="print only; do not append to RESULTS.md")
    args = parser.parse_args(argv)
    report = run()
    text = render(report)
    print(json.dumps(report, indent=2))
    print(text)
    if not args.no_write:
        append(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
