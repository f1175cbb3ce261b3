"""One command, every contender, alternating rounds so that machine drift hits all equally.

    python -m benchmarks.run            # full run: writes benchmarks/RESULTS.md and benchmarks/results/*.json
    python -m benchmarks.run --smoke    # a few requests each, to prove the harness works (used by the tests)
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import platform
import statistics
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.contenders import Server, start_ecgw, start_litellm_proxy, start_portkey, start_upstream
from benchmarks.load import LoadResult, percentile, run_load
from benchmarks.meter import record_cost
from benchmarks.replicas import load_shape, replica_throughput
from benchmarks.replicas import render as render_replicas
from benchmarks.workload import small_request, trajectory

HERE = Path(__file__).resolve().parent


def _merge(results: list[LoadResult]) -> LoadResult:
    merged = LoadResult()
    for r in results:
        merged.latencies_s += r.latencies_s
        merged.ttfb_s += r.ttfb_s
        merged.errors += r.errors
        merged.wall_s += r.wall_s
    return merged


async def measure(servers: list[Server], bodies: dict[str, dict[str, Any]], *, concurrency: int, requests: int,
                  rounds: int, stream: bool = False) -> dict[str, LoadResult]:
    per: dict[str, list[LoadResult]] = {s.name: [] for s in servers}
    for round_no in range(rounds):
        order = servers[round_no % len(servers):] + servers[:round_no % len(servers)]
        for server in order:
            body = dict(bodies[server.name], stream=stream)
            per[server.name].append(await run_load(server.url + "/chat/completions", body, concurrency=concurrency,
                                                   requests=requests, headers=server.extra_headers))
    return {name: _merge(rs) for name, rs in per.items()}


def scrub_timings(steps: int) -> dict[str, Any]:
    """Protect each step of a growing agent trajectory with the configured privacy layer, in process."""
    import os

    from gateway.cli.offline import prepare_offline_environment

    prepare_offline_environment()
    from gateway.state.sessions import MemorySessionStore
    from privacy.factory import build_protector
    from privacy.settings import PrivacySettings

    protector = build_protector(PrivacySettings(), database_url="sqlite://", sessions=MemorySessionStore())

    load_s = second_s = second_cpu_s = 0.0
    cpu: list[float] = []  # process CPU time per step (the scrub's worker threads and the audit writer included)

    async def run() -> list[float]:
        nonlocal load_s, second_s, second_cpu_s
        # The detectors' models and dictionaries load at start (privacy.warm_at_start), then one small request warms
        # the rest: both are reported apart from the first step's cost.
        t0 = time.perf_counter()
        starter = getattr(protector, "start", None)
        if starter is not None:
            await starter()
        await protector.protect({"messages": [{"role": "user", "content": "Hello from Alice Martin in Berlin."}]},
                                session_id="bench-warm-up", request_id="warm-up")
        load_s = time.perf_counter() - t0
        out = []
        bodies = trajectory(steps)
        for i, body in enumerate(bodies):
            t0, c0 = time.perf_counter(), time.process_time()
            await protector.protect(body, session_id="bench-trajectory", request_id=f"r{i}")
            out.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        # The first step of another session with the same system prompt: detections are shared by content.
        t0, c0 = time.perf_counter(), time.process_time()
        await protector.protect(bodies[0], session_id="bench-second-session", request_id="r-second")
        second_s, second_cpu_s = time.perf_counter() - t0, time.process_time() - c0
        closer = getattr(protector, "aclose", None)
        if closer is not None:
            await closer()
        return out

    times = asyncio.run(run())
    return {"protector": type(protector).__name__, "model_load_ms": load_s * 1000, "first_step_ms": times[0] * 1000,
            "first_step_other_session_ms": second_s * 1000,
            "incremental_p50_ms": statistics.median(times[1:]) * 1000 if len(times) > 1 else None,
            "incremental_p99_ms": percentile(times[1:], 0.99) * 1000 if len(times) > 1 else None,
            "first_step_cpu_ms": cpu[0] * 1000, "first_step_other_session_cpu_ms": second_cpu_s * 1000,
            "incremental_cpu_p50_ms": statistics.median(cpu[1:]) * 1000 if len(cpu) > 1 else None,
            "load_average_1m": os.getloadavg()[0],  # other work on the machine inflates the wall-clock figures
            "steps_ms": [round(t * 1000, 3) for t in times]}


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("edgecloud-gateway", "litellm", "uvicorn", "starlette", "httpx", "presidio-analyzer"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def _machine() -> dict[str, Any]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    import os

    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform()}


def _stage(t0: float, text: str) -> None:
    """Progress on stderr (the report goes to stdout): a full run takes several minutes."""
    print(f"bench: {time.perf_counter() - t0:5.0f} s  {text}", file=sys.stderr, flush=True)


def run(smoke: bool, include_litellm: bool, include_portkey: bool = True) -> dict[str, Any]:
    t0 = time.perf_counter()
    requests = 10 if smoke else 400
    rounds = 1 if smoke else 3
    concurrencies = [1, 4] if smoke else [1, 16, 64]
    steps = 5 if smoke else 40
    report: dict[str, Any] = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "smoke": smoke,
                              "machine": _machine(), "versions": _versions(), "requests_per_round": requests,
                              "rounds": rounds, "latency": {}, "streaming": {}, "rss_mb": {}}
    with tempfile.TemporaryDirectory(prefix="ecgw-bench-") as tmp:
        workdir = Path(tmp)
        servers: list[Server] = []
        try:
            _stage(t0, "starting the upstream, two gateways" + (" and LiteLLM's proxy" if include_litellm else "")
                   + " (about 30 s)")
            upstream = start_upstream(workdir)
            direct = Server("direct", upstream.url)
            servers = [upstream]
            edge = start_ecgw("ecgw-edge-only", workdir, upstream, policy="edge-only")
            servers.append(edge)
            cloud = start_ecgw("ecgw-cloud-private", workdir, upstream, policy="cloud-only")
            servers.append(cloud)
            proxy = start_litellm_proxy(workdir, upstream) if include_litellm else None
            if proxy is not None:
                servers.append(proxy)
            portkey, why = start_portkey(workdir, upstream) if include_portkey else (None, "")
            if portkey is not None:
                servers.append(portkey)
            elif why:
                _stage(t0, f"skipping Portkey: {why}")
                report["skipped"] = {"portkey": why}
            contenders = [direct, edge] + ([proxy] if proxy else []) + ([portkey] if portkey else [])
            small = small_request()
            bodies = {s.name: small for s in contenders}
            for c in concurrencies:
                _stage(t0, f"non-streaming at concurrency {c}: {rounds} rounds x {requests} requests per contender")
                results = asyncio.run(measure(contenders, bodies, concurrency=c, requests=requests, rounds=rounds))
                report["latency"][str(c)] = _summarise(results)
            _stage(t0, f"streaming at concurrency {concurrencies[-1]}")
            stream_results = asyncio.run(measure(contenders, bodies, concurrency=concurrencies[-1],
                                                 requests=requests, rounds=rounds, stream=True))
            report["streaming"] = _summarise(stream_results)
            _stage(t0, f"a {steps}-step agent request through cloud-only with privacy")
            agent_body = trajectory(steps)[-1]
            agent = asyncio.run(measure([direct, cloud], {"direct": agent_body, "ecgw-cloud-private": agent_body},
                                        concurrency=1, requests=max(5, requests // 10), rounds=rounds))
            report["agent_request_cloud_private"] = _summarise(agent)
            report["rss_mb"] = {s.name: round(s.rss_mb(), 1) for s in servers}
            for server in servers[1:]:  # the replicas below get the cores to themselves
                server.stop()
            report["replicas"] = replica_throughput(workdir, upstream, smoke=smoke)  # transport: auto (the default)
            report["replicas_cloud_litellm"] = replica_throughput(workdir, upstream, smoke=smoke, transport="litellm")
        finally:
            for server in servers:
                server.stop()
    _stage(t0, f"privacy scrub per step of a {steps}-step trajectory (loads the NER model first)")
    report["privacy_scrub"] = scrub_timings(steps)
    report["meter_record"] = record_cost(calls=2_000 if smoke else 20_000)
    _stage(t0, "done")
    return report


def _summarise(results: dict[str, LoadResult]) -> dict[str, Any]:
    base = results.get("direct")
    out: dict[str, Any] = {}
    for name, r in results.items():
        row = {"n": len(r.latencies_s), "errors": r.errors, "p50_ms": percentile(r.latencies_s, 0.5) * 1000,
               "p99_ms": percentile(r.latencies_s, 0.99) * 1000, "rps": r.rps}
        if r.ttfb_s:
            row["ttfb_p50_ms"] = percentile(r.ttfb_s, 0.5) * 1000
        if base is not None and name != "direct":
            row["added_p50_ms"] = row["p50_ms"] - percentile(base.latencies_s, 0.5) * 1000
            row["added_p99_ms"] = row["p99_ms"] - percentile(base.latencies_s, 0.99) * 1000
        out[name] = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}
    return out


def render(report: dict[str, Any]) -> str:
    lines = [f"## Run of {report['date']}{' (smoke)' if report['smoke'] else ''}", "",
             f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores. "
             f"Versions: {', '.join(f'{k} {v}' for k, v in report['versions'].items())}. "
             f"{report['rounds']} alternating rounds × {report['requests_per_round']} requests per contender.", ""]
    for c, rows in report["latency"].items():
        lines += [f"### Non-streaming, concurrency {c}", "",
                  "| contender | p50 ms | p99 ms | added p50 ms | added p99 ms | req/s | errors |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for name, r in rows.items():
            lines.append(f"| {name} | {r['p50_ms']} | {r['p99_ms']} | {r.get('added_p50_ms', '—')} | "
                         f"{r.get('added_p99_ms', '—')} | {r['rps']} | {r['errors']} |")
        lines.append("")
    lines += ["### Streaming (time to first byte)", "", "| contender | TTFB p50 ms | p50 ms | req/s | errors |",
              "|---|---:|---:|---:|---:|"]
    for name, r in report["streaming"].items():
        lines.append(f"| {name} | {r.get('ttfb_p50_ms', '—')} | {r['p50_ms']} | {r['rps']} | {r['errors']} |")
    lines += [f"Skipped: {name}: {why}" for name, why in report.get("skipped", {}).items()]
    lines += ["", "### Agent request (~20 KB system prompt, 40-step history), cloud-only with privacy", "",
              "| contender | p50 ms | p99 ms | added p50 ms |", "|---|---:|---:|---:|"]
    for name, r in report["agent_request_cloud_private"].items():
        lines.append(f"| {name} | {r['p50_ms']} | {r['p99_ms']} | {r.get('added_p50_ms', '—')} |")
    scrub = report["privacy_scrub"]
    lines += ["", f"### Privacy scrub per step ({scrub['protector']})", "",
              f"NER model load (once per process) {scrub['model_load_ms']:.0f} ms. "
              f"First step {scrub['first_step_ms']:.1f} ms cold, "
              f"{scrub.get('first_step_other_session_ms', float('nan')):.1f} ms for a session whose system prompt "
              "another session already sent; incremental steps p50 "
              f"{scrub['incremental_p50_ms']:.2f} ms, p99 {scrub['incremental_p99_ms']:.2f} ms. "
              f"CPU time (process): first step {scrub.get('first_step_cpu_ms', float('nan')):.1f} ms, "
              f"other session {scrub.get('first_step_other_session_cpu_ms', float('nan')):.1f} ms, incremental p50 "
              f"{scrub.get('incremental_cpu_p50_ms') or float('nan'):.2f} ms; 1-minute load average "
              f"{scrub.get('load_average_1m', float('nan')):.2f}.", "",
              "### Metering on the request path", "",
              f"StoreMeter.record(): p50 {report['meter_record']['record_us_p50']} µs per call "
              f"(max of rounds {report['meter_record']['record_us_max']} µs).", "",
              "### Peak RSS (MB)", "", " · ".join(f"{k} {v}" for k, v in report["rss_mb"].items()), ""]
    if "replicas" in report:
        lines += render_replicas(report["replicas"], load_shape(report["smoke"])[1])
    if "replicas_cloud_litellm" in report:
        lines += render_replicas(report["replicas_cloud_litellm"], load_shape(report["smoke"])[1], transport="litellm")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a few requests each; no files written")
    parser.add_argument("--no-litellm", action="store_true", help="leave LiteLLM's proxy out")
    parser.add_argument("--no-portkey", action="store_true", help="leave Portkey's gateway out")
    parser.add_argument("--out", type=Path, default=HERE, help="where RESULTS.md and results/ go")
    args = parser.parse_args(argv)
    report = run(args.smoke, include_litellm=not args.no_litellm, include_portkey=not args.no_portkey)
    text = render(report)
    print(text)
    if not args.smoke:
        results = args.out / "results"
        results.mkdir(parents=True, exist_ok=True)
        stamp = report["date"].replace(":", "").replace("-", "")
        (results / f"{stamp}.json").write_text(json.dumps(report, indent=2))
        history = args.out / "RESULTS.md"
        previous = history.read_text() if history.exists() else "# Benchmark results\n\nNewest first.\n\n"
        head, _, rest = previous.partition("\n\n## ")
        history.write_text(head.rstrip() + "\n\n" + text + ("\n\n## " + rest if rest else "\n"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

