"""Memory of ``ecgw serve`` with the default configuration (issue 41: peak RSS of one worker ≤ 380 MB, PSS of each
further worker after the soak ≤ 120 MB, RSS growth over a 100,000-request soak after warm-up ≤ 5 %).

    python -m benchmarks.memory                      # 2 workers, 100,000 requests, 1,000 slow streams
    python -m benchmarks.memory --requests 20000 --workers 4
    python -m benchmarks.memory --smoke              # tiny counts, one component, nothing written
    python -m benchmarks.memory --record             # also appends its table to benchmarks/RESULTS.md

1. **Components**, each imported or loaded in a fresh interpreter (RSS after − before, and CPU): spaCy, its model,
   presidio (which the model's loading imports through spaCy's entry points), jieba alone, litellm, and the app of
   the default configuration before its models, with them, and with jieba too (``privacy.warm_chinese``: what the
   first Chinese text costs a process, in memory and in the CPU it waits for).
2. **One worker** (``--workers 1``: one process): RSS, PSS and peak RSS (VmHWM) after a warm-up.
3. **N workers** (forked from one parent that loaded the models, ``gateway.launch.prefork``): RSS and PSS of the
   parent and of every worker after the warm-up; then a **soak** of mixed requests (JSON and streams; edge-only and
   cloud-only through the protected door, whose body names people and an address; a new session every fifth request,
   else one of 64 old ones whose conversation moves on), every worker's RSS sampled 20 times → growth from the first
   sample to the last; PSS again after it, and the total PSS against one worker's (what each further worker costs);
   then **memory per open stream**: 1,000 concurrent streams held open by the upstream after their first chunk,
   the workers' RSS and PSS while all are open against before, per stream.

The edge is ``benchmarks.upstream``, the cloud ``benchmarks.cloud_stub`` (which counts bodies that left with a raw
address: it must stay 0). One setting differs from the default configuration: ``edge.max_connections`` is raised
so that 1,000 streams can be open at once (256 per worker by default). Prints one line of JSON, then the table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson

from benchmarks.contenders import ROOT, Server, free_port, start_upstream
from benchmarks.contenders import _spawn as spawn_server

# name → (what runs before the first reading, what is measured, the environment's additions)
_APP = "from gateway.app import create_app\nfrom gateway.config.settings import load_settings"
_MODELS = "app = create_app(load_settings('config.yaml'))\napp.state.services.protector.load_models()"
COMPONENTS: dict[str, tuple[str, str, dict[str, str]]] = {
    "spaCy (import)": ("", "import spacy", {}),
    "spaCy's model (loaded)": ("import spacy\nfrom privacy.settings import NerSettings",
                               "spacy.load(NerSettings().model_name)", {}),
    "presidio (import)": ("", "import presidio_analyzer", {}),
    "jieba (loaded alone, a first text cut)": (
        "from privacy.detect.segmenter import JiebaSegmenter",
        "JiebaSegmenter().tag('客户：王建国，家住望京西园四区27号楼2单元1095。', 'x')", {}),
    "litellm (import)": ("", "import litellm", {}),
    "app, default config, before its models": (_APP, "create_app(load_settings('config.yaml'))", {}),
    "app, default config, its models loaded": (_APP, _MODELS, {}),
    "app, default config, its models and jieba loaded (privacy.warm_chinese)": (
        _APP, _MODELS, {"ECGW_PRIVACY__WARM_CHINESE": "true"}),
}
SOAK_SAMPLES = 20
OLD_SESSIONS = 64
PRIVATE = ("Please draft the reply to Grace Nakamura (grace.nakamura@example.com, +44 20 7946 0958) about "
           "the invoice for 14 Elm Street, Springfield; Sofia Brandt approves it.")


def _rss_now_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _component_child(name: str) -> dict[str, float]:
    from gateway.cli.offline import prepare_offline_environment

    prepare_offline_environment()
    before_code, code, _ = COMPONENTS[name]
    scope: dict[str, Any] = {}
    exec(before_code, scope)  # noqa: S102 - the table above, nothing read from outside
    before, cpu = _rss_now_mb(), time.process_time()
    exec(code, scope)  # noqa: S102
    return {"mb": round(_rss_now_mb() - before, 1), "cpu_s": round(time.process_time() - cpu, 2)}


def components(names: list[str]) -> dict[str, dict[str, float]]:
    """Each component's RSS and CPU in a fresh interpreter (run from the repository root: the default config.yaml).
    jieba's CPU is what the first Chinese text a worker meets waits for (``privacy.warm_chinese`` off); its memory in
    the app is the difference of the last two rows (alone it measures less)."""
    out = {}
    for name in names:
        done = subprocess.run([sys.executable, "-m", "benchmarks.memory", "--component", name], cwd=ROOT,
                              env=_environment(**COMPONENTS[name][2]), capture_output=True, text=True, check=True)
        out[name] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def process_memory(pid: int) -> dict[str, float]:
    """RSS, PSS (a shared page counted once, split among its sharers), USS (its pages no other process has: what
    one more forked worker adds) and peak RSS, in MB."""
    figures: dict[str, float] = {"uss_mb": 0.0}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("Rss", "Pss"):
            figures[key.lower() + "_mb"] = round(int(value.split()[0]) / 1024, 1)
        elif key in ("Private_Clean", "Private_Dirty"):
            figures["uss_mb"] = round(figures["uss_mb"] + int(value.split()[0]) / 1024, 1)
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            figures["peak_rss_mb"] = round(int(line.split()[1]) / 1024, 1)
    return figures


def workers_of(pid: int) -> list[int]:
    return sorted(int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_")}
    return {**env, **extra}


@contextmanager
def gateway(workdir: Path, workers: int, edge: Server, cloud: Server,
            settings: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """``ecgw serve`` with the repository's config.yaml, pointed at the stubs, ``settings`` (``ECGW_`` variables)
    over it: (its URL, its pid)."""
    port = free_port()
    name = f"ecgw-{workers}w"
    env = _environment(**(settings or {}),
        ECGW_SERVER__PORT=str(port), ECGW_SERVER__WORKERS=str(workers), ECGW_EDGE__LAUNCH="never",
        ECGW_EDGE__BASE_URL=edge.url, ECGW_EDGE__MAX_CONNECTIONS="1100", ECGW_CLOUD__API_BASE=cloud.url,
        DEEPSEEK_API_KEY="bench", ECGW_DATABASE_URL=f"sqlite:///{workdir / (name + '.sqlite3')}",
        ECGW_SESSIONS__SQLITE_PATH=str(workdir / (name + '-sessions.sqlite3')))
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--config", "config.yaml"],
                                   cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"ecgw serve exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(url + "/readyz", timeout=5).status_code == 200 and (
                        workers == 1 or len(workers_of(process.pid)) == workers):
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"ecgw serve not ready:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url, process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Mix:
    """The soak's requests, in a fixed rotation: (body, session id)."""

    def __init__(self) -> None:
        self.n = 0
        self.steps = [0] * OLD_SESSIONS
        self.old = [uuid.uuid4().hex for _ in range(OLD_SESSIONS)]

    def next(self) -> tuple[bytes, str]:
        n, self.n = self.n, self.n + 1
        kind = n % 10  # 0-3 edge JSON, 4-5 edge stream, 6-8 cloud JSON, 9 cloud stream
        policy = "ecgw/edge-only" if kind < 6 else "ecgw/cloud-only"
        if n % 5 == 0:
            session, step = uuid.uuid4().hex, 0
        else:
            i = n % OLD_SESSIONS
            session, step = self.old[i], self.steps[i]
            self.steps[i] += 1
        messages: list[dict[str, str]] = [{"role": "system", "content": "You are a careful assistant. " + PRIVATE}]
        for past in range(max(0, step - 3), step):  # the conversation moves on: its last turns
            messages += [{"role": "user", "content": f"Step {past}: go on."},
                         {"role": "assistant", "content": f"Done with step {past}."}]
        messages.append({"role": "user", "content": f"Step {step}: " + (PRIVATE if kind >= 6 else "go on.")})
        body = {"model": policy, "messages": messages, "stream": kind in (4, 5, 9)}
        return orjson.dumps(body), session


async def _send(client: aiohttp.ClientSession, url: str, body: bytes, session: str) -> bool:
    try:
        async with client.post(url, data=body, headers={"content-type": "application/json",
                                                        "x-session-id": session}) as response:
            await response.read()
            return response.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False


async def drive(url: str, requests: int, *, concurrency: int, mix: Mix,
                every: int = 0, sample: Any = None) -> int:
    """``requests`` of the mix, ``concurrency`` at a time; ``sample()`` after every ``every`` answers. Errors."""
    errors, done = 0, 0
    left = iter(range(requests))
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as client:
        async def worker() -> None:
            nonlocal errors, done
            for _ in left:
                body, session = mix.next()
                errors += not await _send(client, url + "/v1/chat/completions", body, session)
                done += 1
                if every and sample is not None and done % every == 0:
                    sample()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return errors


async def open_streams(url: str, count: int, hold_s: float, measure: Any) -> dict[str, Any]:
    """``count`` streams held open by the upstream after their first chunk; ``measure()`` once all have begun."""
    begun = 0
    all_begun = asyncio.Event()
    body = orjson.dumps({"model": "ecgw/edge-only", "stream": True, "bench_hold_s": hold_s,
                         "messages": [{"role": "user", "content": "hold on"}]})
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=hold_s + 600)) as c:
        async def one() -> bool:
            nonlocal begun
            try:
                async with c.post(url + "/v1/chat/completions", data=body, headers={  # noqa: SIM117
                        "content-type": "application/json", "x-session-id": uuid.uuid4().hex}) as response:
                    first = True
                    async for _ in response.content.iter_any():
                        if first:
                            first = False
                            begun += 1
                            if begun == count:
                                all_begun.set()
                    return response.status == 200
            except (aiohttp.ClientError, TimeoutError):
                return False

        tasks = [asyncio.create_task(one()) for _ in range(count)]
        started = time.monotonic()
        try:
            await asyncio.wait_for(all_begun.wait(), timeout=hold_s * 0.8)
        except TimeoutError:
            pass
        open_at_measure, seconds = begun, time.monotonic() - started
        figures = measure()
        ok = sum(await asyncio.gather(*tasks))
    return {"open_at_measure": open_at_measure, "completed": ok, "seconds_to_open": round(seconds, 1), **figures}


def _workers_figures(pids: list[int]) -> dict[str, float]:
    rows = [process_memory(p) for p in pids]
    return {"rss_mb": round(sum(r["rss_mb"] for r in rows), 1), "pss_mb": round(sum(r["pss_mb"] for r in rows), 1)}


def measure(*, workers: int, requests: int, streams: int, warmup: int, concurrency: int,
            hold_s: float, parts: list[str] | None = None, settings: dict[str, str] | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "workers": workers,
                              "requests": requests, "streams": streams, "settings": settings or {},
                              "load_average_1m": [round(os.getloadavg()[0], 2)]}
    report["components"] = components(parts if parts is not None else list(COMPONENTS))
    with tempfile.TemporaryDirectory(prefix="ecgw-memory-") as tmp:
        workdir = Path(tmp)
        edge = start_upstream(workdir)
        cloud_port = free_port()
        cloud = spawn_server("cloud", [sys.executable, "-m", "benchmarks.cloud_stub", "--port", str(cloud_port)],
                             workdir, f"http://127.0.0.1:{cloud_port}/v1")
        try:
            with gateway(workdir, 1, edge, cloud, settings) as (url, pid):
                errors = asyncio.run(drive(url, warmup, concurrency=concurrency, mix=Mix()))
                report["one_worker"] = {**process_memory(pid), "warmup_errors": errors}
            with gateway(workdir, workers, edge, cloud, settings) as (url, pid):
                mix = Mix()
                errors = asyncio.run(drive(url, warmup, concurrency=concurrency, mix=mix))
                pids = workers_of(pid)
                report["after_warmup"] = {"parent": process_memory(pid),
                                          "workers": [process_memory(p) for p in pids], "warmup_errors": errors}
                samples: list[list[float]] = []

                def sample() -> None:
                    samples.append([process_memory(p)["rss_mb"] for p in pids])

                sample()
                every = max(1, requests // SOAK_SAMPLES)
                t0 = time.monotonic()
                errors = asyncio.run(drive(url, requests, concurrency=concurrency, mix=mix, every=every,
                                           sample=sample))
                wall = time.monotonic() - t0
                report["load_average_1m"].append(round(os.getloadavg()[0], 2))
                first, last = samples[0], samples[-1]
                after = [process_memory(p) for p in pids]
                report["soak"] = {
                    "errors": errors, "seconds": round(wall, 1), "req_per_s": round(requests / wall, 1),
                    "restarted_workers": sorted(set(workers_of(pid)) ^ set(pids)),
                    "rss_mb_samples": [[round(x, 1) for x in s] for s in samples],
                    "growth_pct": [round(100 * (b - a) / a, 2) for a, b in zip(first, last, strict=True)],
                    "growth_pct_total": round(100 * (sum(last) - sum(first)) / sum(first), 2),
                    "parent": process_memory(pid), "workers": after,
                    "total_pss_mb": round(process_memory(pid)["pss_mb"] + sum(w["pss_mb"] for w in after), 1)}
                report["soak"]["pss_mb_per_further_worker"] = round(
                    (report["soak"]["total_pss_mb"] - report["one_worker"]["pss_mb"]) / max(1, workers - 1), 1)
                before = _workers_figures(pids)
                during = asyncio.run(open_streams(url, streams, hold_s, lambda: _workers_figures(pids)))
                opened = max(1, during["open_at_measure"])
                report["open_streams"] = {
                    **during, "before": before,
                    "rss_kb_per_stream": round((during["rss_mb"] - before["rss_mb"]) * 1024 / opened, 1),
                    "pss_kb_per_stream": round((during["pss_mb"] - before["pss_mb"]) * 1024 / opened, 1)}
            report["raw_addresses_reached_cloud"] = httpx.get(cloud.url.removesuffix("/v1") + "/stats").json()["raw"]
        finally:
            edge.stop()
            cloud.stop()
    report["load_average_1m"].append(round(os.getloadavg()[0], 2))
    return report


def render(report: dict[str, Any]) -> str:
    soak, one, streams = report["soak"], report["one_worker"], report["open_streams"]
    parent = report["after_warmup"]["parent"]
    lines = [f"## Memory — {report['date']} (`python -m benchmarks.memory`, load average {report['load_average_1m']})",
             "",
             f"Default configuration{' with ' + str(report['settings']) if report['settings'] else ''}, `ecgw serve` in front of benchmarks.upstream (edge) and benchmarks.cloud_stub "
             f"(cloud); {report['workers']} workers forked from one parent that loaded the models.", "",
             "| figure | MB |", "|---|---:|",
             *(f"| {name} (CPU {row['cpu_s']} s) | {row['mb']} |" for name, row in report["components"].items()),
             f"| one worker (`--workers 1`), peak RSS after warm-up | {one['peak_rss_mb']} |",
             f"| one worker: RSS / PSS | {one['rss_mb']} / {one['pss_mb']} |",
             f"| parent of {report['workers']} workers after warm-up: RSS / PSS | {parent['rss_mb']} / "
             f"{parent['pss_mb']} |",
             *(f"| worker {i + 1} after the soak: RSS / PSS / USS (its own pages) | {w['rss_mb']} / {w['pss_mb']} / "
               f"{w['uss_mb']} |" for i, w in enumerate(soak["workers"])),
             f"| total PSS after the soak (parent and workers) | {soak['total_pss_mb']} |",
             f"| total PSS against one worker's, per further worker ((total − one worker's) / "
             f"{report['workers'] - 1}) | {soak['pss_mb_per_further_worker']} |", "",
             f"Soak: {report['requests']:,} mixed requests ({soak['req_per_s']} req/s, {soak['errors']} errors, "
             f"workers restarted: {len(soak['restarted_workers'])}); RSS growth from the first sample after warm-up "
             f"to the last, per worker {soak['growth_pct']} %, all workers {soak['growth_pct_total']} %.", "",
             f"Streams: {streams['open_at_measure']} of {report['streams']} open at once "
             f"({streams['completed']} completed): {streams['rss_kb_per_stream']} KB RSS / "
             f"{streams['pss_kb_per_stream']} KB PSS per open stream (workers' RSS {streams['before']['rss_mb']} → "
             f"{streams['rss_mb']} MB). Bodies that reached the cloud with a raw address: "
             f"{report['raw_addresses_reached_cloud']}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="workers of the soaked gateway")
    parser.add_argument("--requests", type=int, default=100_000, help="requests of the soak, after the warm-up")
    parser.add_argument("--warmup", type=int, default=5_000, help="requests before the first sample")
    parser.add_argument("--streams", type=int, default=1_000, help="slow streams open at once")
    parser.add_argument("--hold-s", type=float, default=120.0, help="how long the upstream holds each slow stream")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight during the soak")
    parser.add_argument("--smoke", action="store_true", help="tiny counts; nothing written")
    parser.add_argument("--record", action="store_true", help="append the table to benchmarks/RESULTS.md")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting over the default configuration, e.g. privacy.cache_entries=2000 (repeatable)")
    parser.add_argument("--no-components", action="store_true", help="leave the component figures out")
    parser.add_argument("--component", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.component:
        print(json.dumps(_component_child(args.component)))
        return 0
    parts: list[str] | None = [] if args.no_components else None
    settings = {"ECGW_" + key.upper().replace(".", "__"): value
                for key, _, value in (item.partition("=") for item in args.set)}
    if args.smoke:  # one component (each costs a fresh interpreter)
        args.requests, args.warmup, args.streams, args.hold_s, args.concurrency = 40, 20, 10, 5.0, 4
        parts = ["presidio (import)"]
    report = measure(workers=max(2, args.workers), requests=args.requests, streams=args.streams,
                     warmup=args.warmup, concurrency=args.concurrency, hold_s=args.hold_s, parts=parts,
                     settings=settings)
    print(json.dumps(report))
    text = render(report)
    print(text)
    if args.record and not args.smoke:
        from benchmarks.results import append

        append("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
