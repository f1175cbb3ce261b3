"""CPU per request of the gateway, edge-only, as ``make bench`` runs it (SQLite metering, the access log on), with
the gateway served by uvicorn in this process and the load generator and the upstream in their own processes, so
this process's CPU time is the gateway's alone (its writer threads included). Machine-load independent enough to
compare two commits on a shared machine, which wall-clock figures are not.

The floor it is read against is measured in the same run, in the same process, on the same upstream: the bare relay
(``benchmarks.bare``: uvicorn, one Starlette route, one aiohttp session; the body posted on as it came and the
upstream's bytes sent back, Starlette's ``StreamingResponse`` for a stream), its CPU per request and the gateway's
ratio to it (``x_bare``), JSON and streamed. Bare and gateway alternate (``--rounds``), each measurement after the
other's writer threads have settled.

    python -m benchmarks.cpu                      # µs of CPU per request (all threads, and the event loop's
                                                  # alone), JSON and streamed, concurrency 64
    python -m benchmarks.cpu --profile 25         # and the 25 costliest functions (cProfile, event-loop thread)
    python -m benchmarks.cpu --loop uvloop        # on uvloop, as `ecgw serve` runs
    python -m benchmarks.cpu --rounds 3           # bare and gateway alternating three times: min and median
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import logging
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.bare import bare_app
from benchmarks.contenders import free_port, start_upstream
from benchmarks.workload import small_request


def _load(url: str, *, concurrency: int, requests: int, stream: bool) -> None:
    """The load generator, in a child process (its CPU is not the gateway's)."""
    code = ("import asyncio, json, sys; from benchmarks.load import run_load; "
            "r = asyncio.run(run_load(sys.argv[1], json.loads(sys.argv[2]), concurrency=int(sys.argv[3]), "
            "requests=int(sys.argv[4]))); print(json.dumps({'ok': len(r.latencies_s), 'errors': r.errors}))")
    body = json.dumps(dict(small_request(), model="bench", stream=stream))
    out = subprocess.run([sys.executable, "-c", code, url, body, str(concurrency), str(requests)],
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    if result["errors"]:
        raise RuntimeError(f"{result['errors']} requests failed")


async def _serve(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    import uvicorn

    from gateway.app import create_app
    from gateway.cli.offline import prepare_offline_environment
    from gateway.config.settings import load_settings
    from gateway.telemetry.logs import ThreadedHandler, configure_logging, uvicorn_options

    prepare_offline_environment()
    upstream = start_upstream(workdir)
    try:
        port = free_port()
        config = {"server": {"port": port}, "edge": {"base_url": upstream.url, "model": "bench"},
                  "cloud": {"model": "openai/bench", "api_base": upstream.url, "api_key_env": None},
                  "policy": {"default": args.policy}, "database_url": f"sqlite:///{workdir / 'cpu.sqlite3'}",
                  "accounting": {"enabled": not args.no_metering},
                  "privacy": {"audit_spill_path": str(workdir / "audit-spill.jsonl")}}  # its journal beside it
        path = workdir / "cpu.yaml"
        path.write_text(yaml.safe_dump(config))
        settings = load_settings(str(path))
        configure_logging(settings.server.log_format)
        handler = logging.getLogger().handlers[0]
        assert isinstance(handler, ThreadedHandler) and isinstance(handler.target, logging.StreamHandler)
        handler.target.setStream((workdir / "ecgw.log").open("w"))  # as the bench: stderr to a file
        if args.no_access_log:
            logging.getLogger("ecgw.access").setLevel(logging.WARNING)
        # As ``ecgw serve``: no dictConfig of uvicorn's, which closed the threaded handler above, so the access
        # line was formatted and written on the event loop (the figures before 2026-12-02 06:30 UTC did that).
        server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port,
                                               **uvicorn_options()))
        bare_port = free_port()
        bare = uvicorn.Server(uvicorn.Config(bare_app(upstream.url), host="127.0.0.1", port=bare_port,
                                             **uvicorn_options()))
        servers = [asyncio.create_task(server.serve()), asyncio.create_task(bare.serve())]
        while not (server.started and bare.started):
            await asyncio.sleep(0.05)
        urls = {"gateway": f"http://127.0.0.1:{port}/v1/chat/completions",
                "bare": f"http://127.0.0.1:{bare_port}/v1/chat/completions"}
        out: dict[str, Any] = {}
        profile = cProfile.Profile(time.thread_time) if args.profile else None  # CPU time: a shared machine
        for stream in (False, True):
            runs: dict[str, list[dict[str, float]]] = {"gateway": [], "bare": []}
            for url in urls.values():
                await asyncio.to_thread(_load, url, concurrency=args.concurrency, requests=args.warmup,
                                        stream=stream)
            for _ in range(args.rounds):
                for name, url in urls.items():
                    await asyncio.sleep(SETTLE_S)  # the other's writer threads done with its requests
                    measured = profile if name == "gateway" else None
                    runs[name].append(await _measure(url, args, stream=stream, profile=measured))
            out["stream" if stream else "json"] = _summary(runs)
        server.should_exit = bare.should_exit = True
        await asyncio.gather(*servers)
        if profile is not None:
            text = io.StringIO()
            stats = pstats.Stats(profile, stream=text)
            stats.sort_stats("tottime").print_stats(args.profile)
            stats.sort_stats("cumulative").print_stats(r"/(gateway|router|accounting|privacy)/", args.profile)
            out["profile"] = text.getvalue()
            if args.profile_out:
                stats.dump_stats(args.profile_out)
        return out
    finally:
        upstream.stop()


SETTLE_S = 0.5  # past the log writer's batch (50 ms) and the metering writer's


async def _measure(url: str, args: argparse.Namespace, *, stream: bool,
                   profile: cProfile.Profile | None) -> dict[str, float]:
    """One load of ``args.requests`` against ``url``: this process's CPU per request (all threads, and the event
    loop's thread alone: what caps requests per second) and requests per second."""
    cpu0, loop0, wall0 = time.process_time(), time.thread_time(), time.perf_counter()
    if profile is not None:
        profile.enable()
    await asyncio.to_thread(_load, url, concurrency=args.concurrency, requests=args.requests, stream=stream)
    if profile is not None:
        profile.disable()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    loop = time.thread_time() - loop0  # this coroutine runs on the event loop's thread
    return {"cpu_us_per_request": round(cpu / args.requests * 1e6, 1),
            "loop_cpu_us_per_request": round(loop / args.requests * 1e6, 1),
            "req_per_s": round(args.requests / wall, 1)}


def _summary(runs: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    """Each figure's runs, min and median, for the gateway and the bare relay, and the gateway's ratio to the bare
    relay (min to min, median to median)."""
    out: dict[str, Any] = {}
    for name, measured in runs.items():
        out[name] = {key: {"runs": [m[key] for m in measured], "min": min(m[key] for m in measured),
                           "median": statistics.median(m[key] for m in measured)} for key in measured[0]}
    cpu = "cpu_us_per_request"
    out["x_bare"] = {stat: round(out["gateway"][cpu][stat] / out["bare"][cpu][stat], 2) for stat in ("min", "median")}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=1,
                        help="gateway and bare relay measured alternately this many times (min and median)")
    parser.add_argument("--policy", default="edge-only",
                        help="the gateway's policy.default: cloud-only measures the protected cloud step (privacy on, "
                             "the stub as the cloud through the default door) against the same bare relay")
    parser.add_argument("--no-metering", action="store_true", help="accounting.enabled: false (what it costs)")
    parser.add_argument("--no-access-log", action="store_true", help="the access line off (what it costs)")
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions (cProfile)")
    parser.add_argument("--profile-out", help="with --profile: also write the profile here (pstats), to browse")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio",
                        help="the event loop: asyncio's own (the figures before 2026-12-02), or uvloop, which "
                             "`ecgw serve` runs on (uvicorn's loop=auto picks it when installed)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ecgw-cpu-") as tmp:
        if args.loop == "uvloop":
            import uvloop

            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                result = runner.run(_serve(args, Path(tmp)))
        else:
            result = asyncio.run(_serve(args, Path(tmp)))
    profile = result.pop("profile", None)
    print(json.dumps(result))
    if profile:
        print(profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
