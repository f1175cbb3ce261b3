"""Throughput of protected cloud steps through one replica and through two replicas sharing one Redis.

    python -m benchmarks.replicas [--smoke]     # this part of `make bench` alone (prints its table)
    python -m benchmarks.replicas --agent       # each step the agent request instead (~20 KB system prompt,
                                                # 40-step history: benchmarks.workload), fewer steps
    python -m benchmarks.replicas --transport litellm  # the cloud through litellm, not the default config's door

Each replica is ``ecgw serve`` with one worker (so one replica ≈ one core of gateway work), ``cloud-only`` with
privacy on, session state in one Redis. Load: a session per client connection, the same session ids on every
replica (so a session's steps land on both), each step carrying e-mails (pseudonymised from the session's vault,
which each replica extends once). Redis' own command counters give the commands per step.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from benchmarks.contenders import ROOT, Server, _spawn, free_port
from benchmarks.load import LoadResult, percentile, run_load


def start_redis(workdir: Path) -> tuple[str, int, int]:
    """Its URL, port and process id."""
    port = free_port()
    url = subprocess.run([str(ROOT / "scripts" / "redis.sh"), "start", str(port), str(workdir / "redis")],
                         check=True, capture_output=True, text=True).stdout.strip()
    return url, port, int((workdir / "redis" / "redis.pid").read_text())


def stop_redis(workdir: Path) -> None:
    subprocess.run([str(ROOT / "scripts" / "redis.sh"), "stop", str(workdir / "redis")], check=False)


def start_replica(name: str, workdir: Path, upstream: Server, redis_url: str, transport: str = "auto") -> Server:
    port = free_port()
    config = {"server": {"port": port, "workers": 1},
              "edge": {"base_url": upstream.url, "model": "bench"},
              "cloud": {"model": "openai/bench", "api_base": upstream.url, "api_key_env": None, "transport": transport},
              "policy": {"default": "cloud-only"},
              "sessions": {"store": "redis", "redis_url": redis_url},
              "database_url": f"sqlite:///{workdir / (name + '.sqlite3')}",
              "secrets": {"key_file": str(workdir / "ecgw.key")}}  # one key for the replicas sharing Redis
    path = workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return _spawn(name, [sys.executable, "-m", "gateway.cli", "serve", "--config", str(path)], workdir,
                  f"http://127.0.0.1:{port}/v1")


def step_body(n: int) -> dict[str, Any]:
    return {"model": "ecgw/cloud-only", "max_tokens": 16, "messages": [
        {"role": "system", "content": "You are an agent. The user is Maria (maria@acme.example)."},
        {"role": "user", "content": f"Forward the report to client{n}@example.com please."}]}


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of ``pids`` and their children so far: what a step costs, however loaded the machine."""
    total = 0
    for pid in pids:
        family = [pid]
        children = Path(f"/proc/{pid}/task/{pid}/children")
        if children.exists():
            family += [int(p) for p in children.read_text().split()]
        for member in family:
            try:
                fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            except FileNotFoundError:
                continue
            total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
    return total / os.sysconf("SC_CLK_TCK")


def _redis_commands(port: int) -> int:
    out = subprocess.run(["redis-cli", "-p", str(port), "info", "commandstats"], check=True, capture_output=True,
                         text=True).stdout
    return sum(int(line.split("calls=")[1].split(",")[0]) for line in out.splitlines() if "calls=" in line)


def agent_body() -> dict[str, Any]:
    """The last step of the 40-step trajectory (``benchmarks.workload``) as a protected cloud step."""
    from benchmarks.workload import trajectory

    return dict(trajectory(40)[-1], model="ecgw/cloud-only", max_tokens=16)


async def _spread(servers: list[Server], *, concurrency: int, requests: int, agent: bool = False) -> LoadResult:
    """``concurrency`` clients split over ``servers``; each client's session id is shared by every replica."""
    share = max(1, concurrency // len(servers))
    body = agent_body() if agent else None
    loads = [run_load(s.url + "/chat/completions", body or step_body(i), concurrency=share,
                      requests=requests // len(servers)) for i, s in enumerate(servers)]
    results = await asyncio.gather(*loads)
    merged = LoadResult()
    for r in results:
        merged.latencies_s += r.latencies_s
        merged.errors += r.errors
        merged.wall_s = max(merged.wall_s, r.wall_s)
    return merged


def load_shape(smoke: bool, agent: bool = False) -> tuple[int, int]:
    """(requests, concurrency) of each measurement."""
    return (20, 4) if smoke else (300, 8) if agent else (1200, 32)


def replica_throughput(workdir: Path, upstream: Server, *, smoke: bool, agent: bool = False,
                       transport: str = "auto") -> dict[str, Any]:
    """``agent``: every step the 20 KB agent request (``agent_body``) instead of the small one; ``transport``: the
    cloud door's (``cloud.transport``; ``auto``, the default configuration's, sends the bench's ``openai/bench``
    through the own OpenAI-compatible transport)."""
    requests, concurrency = load_shape(smoke, agent)
    redis_url, port, redis_pid = start_redis(workdir)
    replicas: list[Server] = []
    try:
        replicas = [start_replica(f"replica-{i}", workdir, upstream, redis_url, transport) for i in range(2)]
        out: dict[str, Any] = {}
        for label, group in (("one replica", replicas[:1]), ("two replicas", replicas)):
            asyncio.run(_spread(group, concurrency=concurrency, requests=max(8, requests // 10),
                                agent=agent))  # warm-up
            pids = [s.process.pid for s in group if s.process is not None]
            before, gateway_cpu, redis_cpu = _redis_commands(port), cpu_seconds(pids), cpu_seconds([redis_pid])
            result = asyncio.run(_spread(group, concurrency=concurrency, requests=requests, agent=agent))
            steps = max(len(result.latencies_s) + result.errors, 1)
            commands = _redis_commands(port) - before
            gateway_ms = (cpu_seconds(pids) - gateway_cpu) * 1000 / steps
            out[label] = {"n": len(result.latencies_s), "errors": result.errors, "rps": round(result.rps, 1),
                          "p50_ms": round(percentile(result.latencies_s, 0.5) * 1000, 2),
                          "p99_ms": round(percentile(result.latencies_s, 0.99) * 1000, 2),
                          "redis_commands_per_step": round(commands / steps, 2),
                          "gateway_cpu_ms_per_step": round(gateway_ms, 3),
                          "rps_per_core": round(1000 / gateway_ms, 1) if gateway_ms else None,
                          "redis_cpu_ms_per_step": round((cpu_seconds([redis_pid]) - redis_cpu) * 1000 / steps, 4)}
        return out
    finally:
        for server in replicas:
            server.stop()
        stop_redis(workdir)


def render(rows: dict[str, Any], concurrency: int, agent: bool = False, transport: str = "auto") -> list[str]:
    what = "the agent request (~20 KB system prompt, 40-step history)" if agent else "a small step"
    door = f", cloud.transport {transport}"
    lines = [f"### Replicas sharing one Redis (cloud-only with privacy, one worker per replica, {concurrency} "
             f"clients, {what}{door})", "", "| gateways | req/s | p50 ms | p99 ms | gateway CPU ms/step | req/s per core | "
             "Redis commands/step | Redis CPU ms/step | errors |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['rps']} | {r['p50_ms']} | {r['p99_ms']} | {r['gateway_cpu_ms_per_step']} | "
                     f"{r['rps_per_core']} | {r['redis_commands_per_step']} | {r['redis_cpu_ms_per_step']} | "
                     f"{r['errors']} |")
    return lines + ["", "req/s per core = 1000 / gateway CPU ms per step (the replicas' own CPU time, so it holds "
                        "on a machine busy with other work; the req/s column does not).", ""]


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json
    import tempfile

    from benchmarks.contenders import start_upstream

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a few requests each")
    parser.add_argument("--agent", action="store_true", help="every step the 20 KB agent request")
    parser.add_argument("--transport", choices=("auto", "litellm", "openai"), default="auto",
                        help="the cloud door's transport (cloud.transport; auto, the default configuration's, is "
                             "the own transport for the bench's OpenAI-compatible target)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ecgw-bench-") as tmp:
        upstream = start_upstream(Path(tmp))
        try:
            rows = replica_throughput(Path(tmp), upstream, smoke=args.smoke, agent=args.agent,
                                      transport=args.transport)
        finally:
            upstream.stop()
    print(json.dumps(rows, indent=2))
    print("\n".join(render(rows, load_shape(args.smoke, args.agent)[1], args.agent, args.transport)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
