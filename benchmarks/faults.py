"""Faults under load (issue 25 §4): two ``ecgw serve`` replicas sharing a private Redis (sessions) and a private
PostgreSQL (metering), two edge stubs (``benchmarks.prefix_stub``) and two cloud targets (``benchmarks.cloud_stub``:
``primary``, falling back to ``backup``), every one a process of its own. 32 agent sessions at once, each step
re-sending the session's growing history, every other step streamed, steps alternating between the two replicas;
``task-routing`` (rules scorer) sends half the sessions to the cloud, so both the edge and the cloud faults land.

Each fault in turn, on fresh sessions: ``WARM_S`` of normal load, the fault for ``FAULT_S``, cleared, ``AFTER_S``:

- edge kill -9: one edge stub SIGKILLed (then started again on its port, to be readmitted);
- PostgreSQL restart: the server stopped (fast shutdown, data kept) and started again on the same port;
- the primary cloud target answering 429, then 500, then accepting requests and never answering;
- gateway kill -9: one ``ecgw serve`` replica SIGKILLed (then started again on its port, with its configuration:
  it writes what the killed process journaled). The client retries a connection the dead replica refuses on the
  other one, as a load balancer does; a request the replica had already taken fails;
- Redis restart: the session store shut down (``redis-cli shutdown``: its append-only file kept) and started again
  on the same port. Every request fails closed while it is down (a vault that cannot be read sends nothing).

Per fault: requests sent; non-streamed requests that failed (target 0: each fault happens before the first byte, so
the gateway retries another replica or falls back); streams broken (only those already streaming from the killed
replica may); metering lost — of the requests that completed, those whose records in PostgreSQL do not add up to the
count their settlement mark says (``UsageStore.settlement``; target 0), read once every replica's buffer is empty;
time to recover: the fault until the last failure and the recovery signal (a killed replica's sessions answered by
the other; the fallback target answering; metering written again after PostgreSQL is back; the restarted gateway
answering; a request answered after Redis is back); receipts a client holds whose audit row is missing — of the
egress receipts the clients received, those whose ``privacy_receipt`` row or whose call's ``privacy_call`` row the
audit database does not hold (target 0), read once every replica has written what it holds; raw values out: chat
bodies the cloud stubs received holding a session's e-mail address as the client sent it (target 0).

    python -m benchmarks.faults            # appends to benchmarks/RESULTS.md (--no-write: print only)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from sqlalchemy import bindparam, text

from accounting.database import make_engine
from accounting.store import UsageStore
from benchmarks.cloud_stub import RAW
from benchmarks.contenders import ROOT, Server, _spawn, free_port
from benchmarks.fleet import SYSTEM, _task, _tool_result, wait_healthy
from benchmarks.replicas import stop_redis
from benchmarks.results import append
from privacy.audit.receipts import parse

SESSIONS = 32
PACE_S = 1.0  # a session's mean pause between steps (the agent running its tools): ~25 requests/s in all
WARM_S, FAULT_S, AFTER_S = 4.0, 10.0, 8.0
PRIMARY_TIMEOUT_S = 3.0  # the primary target's timeout_s and first_token_timeout_s: a hang costs this, then falls back
COOLDOWN_S = 5.0
VICTIM = "b"  # the edge replica killed
GATEWAY_VICTIM = 1  # the gateway replica killed
FAULTS = ("edge kill -9", "PostgreSQL restart", "cloud 429", "cloud 500", "cloud hang", "gateway kill -9",
          "Redis restart")
POSTGRES = ROOT / "scripts" / "postgres.sh"
REDIS = ROOT / "scripts" / "redis.sh"


@dataclass
class Call:
    """One client request as the agent saw it; times in seconds from the phase's fault."""

    session: int
    streamed: bool
    start: float
    end: float
    ok: bool
    request_id: str | None = None
    edge: str | None = None
    target: str | None = None
    error: str | None = None  # what the client saw instead of an answer
    replica: int | None = None  # the gateway replica that answered (or was asked last)
    receipts: list[str] = field(default_factory=list)  # the egress receipts the response carried


@dataclass
class Figures:
    fault: str
    requests: int
    failed: int  # non-streamed requests that did not answer 200
    plain: int
    broken: int  # streams that ended without [DONE]
    streams: int
    checked: int | None  # completed requests whose metering was read
    unsettled: int | None  # completed requests whose stored records do not add up to their mark (None: not read)
    lost_records: int | None
    last_failure_s: float | None  # the end of the last failed request or broken stream, from the fault
    signal: str  # what recovery is read from
    signal_s: float | None  # when it was seen, from the fault (None: never)
    median_s: float  # the median and the slowest step that started within the fault
    slowest_s: float
    receipts: int | None = None  # egress receipts the clients received (None: not read)
    missing_receipts: int | None = None  # of them, those whose receipt or call row the audit does not hold
    raw_out: int | None = None  # chat bodies that reached the cloud stubs holding a raw address (None: not read)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def recover_s(self) -> float | None:
        times = [t for t in (self.last_failure_s, self.signal_s) if t is not None]
        return max(times) if times else None


def failures(calls: Sequence[Call]) -> tuple[int, int, int, int, float | None]:
    """(failed non-streamed, non-streamed, broken streams, streams, end of the last failure)."""
    plain = [c for c in calls if not c.streamed]
    streams = [c for c in calls if c.streamed]
    failed = [c for c in calls if not c.ok]
    return (sum(not c.ok for c in plain), len(plain), sum(not c.ok for c in streams), len(streams),
            max((c.end for c in failed), default=None))


def lost_metering(settled: dict[str, tuple[int | None, int]]) -> tuple[int, int, int]:
    """(requests checked, requests unsettled, records missing) of ``UsageStore.settlement``'s answer for completed requests: a request
    with no mark, or fewer records than its mark counts, lost metering (a mark with none counted as one record)."""
    unsettled = missing = 0
    for expected, stored in settled.values():
        if expected is None or stored < expected:
            unsettled += 1
            missing += max((expected if expected is not None else 1) - stored, 0)
    return len(settled), unsettled, missing


def first_after(calls: Sequence[Call], after: float, accept: Callable[[Call], bool]) -> float | None:
    """The end of the first completed call that started after ``after`` and that ``accept`` takes."""
    return min((c.end for c in calls if c.ok and c.start >= after and accept(c)), default=None)


def moved(calls: Sequence[Call], victim: str) -> float | None:
    """When the first session that the victim had served before the fault was answered by another replica."""
    served = {c.session for c in calls if c.edge == victim and c.end < 0}
    return first_after(calls, 0.0, lambda c: c.session in served and c.edge not in (None, victim))


def missing_receipts(receipts: Sequence[str], stored_receipts: set[str], stored_calls: set[str]) -> int:
    """How many of ``receipts`` (tokens a client holds) lack their row, or their call's row, in the audit."""
    return sum(token not in stored_receipts or str(parse(token)[1].get("call")) not in stored_calls
               for token in receipts)


def figures(fault: str, calls: Sequence[Call], samples: Sequence[tuple[float, list[tuple[float, float]]]],
            cleared_at: float, lost: tuple[int, int, int] | None) -> Figures:
    """One fault's row: its calls (times from the fault), the replicas' metering samples, when the fault was
    cleared, and ``lost_metering``'s figures (None: not read)."""
    failed, plain, broken, streams, last = failures(calls)
    if fault.startswith("edge"):
        signal_name, signal_s = "the killed replica's sessions answered by the other", moved(calls, VICTIM)
    elif fault.startswith("gateway"):
        back = first_after(calls, cleared_at, lambda c: c.replica == GATEWAY_VICTIM)
        signal_name, signal_s = f"the killed gateway answering again (restarted at {cleared_at:.1f} s)", back
    elif fault.startswith("Redis"):
        signal_name = f"a request answered after Redis was back (at {cleared_at:.1f} s)"
        signal_s = first_after(calls, cleared_at, lambda c: True)
    elif fault.startswith("PostgreSQL"):
        signal_name = f"metering written again (PostgreSQL back at {cleared_at:.1f} s)"
        signal_s = written_again(samples, cleared_at)
    else:
        back = first_after(calls, cleared_at, lambda c: c.target == "primary")
        signal_name = "the fallback answering" + (f" (primary again {back - cleared_at:.1f} s after the fault "
                                                  "cleared)" if back is not None else " (primary never again)")
        signal_s = first_after(calls, 0.0, lambda c: c.target == "backup")
    during = sorted(c.end - c.start for c in calls if 0 <= c.start < cleared_at) or [0.0]
    checked, unsettled, missing = lost if lost is not None else (None, None, None)
    in_flight = [c for c in calls if c.start < 0 < c.end]
    on_victim = [c for c in in_flight if c.replica == GATEWAY_VICTIM] if fault.startswith("gateway") else []
    slowest = max((c for c in calls if 0 <= c.start < cleared_at), key=lambda c: c.end - c.start, default=None)
    return Figures(fault, len(calls), failed, plain, broken, streams, checked, unsettled, missing, last, signal_name,
                   signal_s, during[len(during) // 2], during[-1],
                   extra={"in_flight": len(in_flight), "slowest": vars(slowest) if slowest else None,
                          "failures": [vars(c) for c in calls if not c.ok],
                          "streams_in_flight_on_victim": sum(c.streamed and c.edge == VICTIM for c in in_flight),
                          "in_flight_on_killed_gateway": len(on_victim)})


# the processes -----------------------------------------------------------------------------------------------------
def start_postgres(workdir: Path) -> tuple[str, int, Path]:
    port, data = free_port(), workdir / "postgres"
    url = subprocess.run([str(POSTGRES), "start", str(port), str(data)], check=True, capture_output=True,
                         text=True).stdout.strip()
    return url, port, data


def postgres(command: str, port: int, data: Path) -> None:
    args = [str(POSTGRES), command, *([str(port)] if command == "up" else []), str(data)]
    subprocess.run(args, check=True, capture_output=True)


def start_edge(workdir: Path, name: str, port: int) -> Server:
    return _spawn(f"edge-{name}", [sys.executable, "-m", "benchmarks.prefix_stub", "--port", str(port), "--name",
                                   name], workdir, f"http://127.0.0.1:{port}/v1")


def start_cloud(workdir: Path, name: str) -> Server:
    port = free_port()
    return _spawn(f"cloud-{name}", [sys.executable, "-m", "benchmarks.cloud_stub", "--port", str(port)], workdir,
                  f"http://127.0.0.1:{port}/v1")


def gateway_config(workdir: Path, port: int, edges: dict[str, Server], clouds: dict[str, Server], *, redis_url: str,
                   database_url: str, index: int) -> dict[str, Any]:
    primary = {"timeout_s": PRIMARY_TIMEOUT_S, "first_token_timeout_s": PRIMARY_TIMEOUT_S}
    return {
        "server": {"port": port, "workers": 1},
        "edge": {"deployments": [{"name": n, "base_url": s.url, "model": "stub"} for n, s in edges.items()],
                 "health_interval_s": 1, "eject_after": 2, "readmit_after_s": 5, "connect_timeout_s": 2,
                 "read_timeout_s": 30},
        "cloud": {"targets": {n: {"model": f"openai/{n}", "api_base": s.url, **(primary if n == "primary" else {})}
                              for n, s in clouds.items()},
                  "default_target": "primary", "fallbacks": {"primary": ["backup"]}, "cooldown_s": COOLDOWN_S},
        "policy": {"default": "task-routing", "knobs": {"task-routing": {
            "scorer": "rules", "threshold": 0.5,
            "rules": {"keywords": ["architecture"], "keyword_weight": 1.0, "keywords_for_full": 1}}}},
        "privacy": {"layers": {"ner": False}, "audit_spill_path": str(workdir / f"audit-spill-{index}.jsonl")},
        "accounting": {"spill_path": str(workdir / f"usage-spill-{index}.jsonl")},
        "sessions": {"store": "redis", "redis_url": redis_url},
        "database_url": database_url,
        "secrets": {"key_file": str(workdir / "ecgw.key")},  # one key for both replicas sharing Redis
    }


def start_gateway(workdir: Path, index: int, config: dict[str, Any], port: int) -> Server:
    path = workdir / f"gateway-{index}.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECGW_", "PROMETHEUS_"))}
    log = workdir / f"gateway-{index}.log"
    process = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--config", str(path)],
                               stdout=log.open("wb"), stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    return Server(name=f"ecgw-{index}", url=f"http://127.0.0.1:{port}/v1", process=process, log=log)


# the load ----------------------------------------------------------------------------------------------------------
async def _step(client: httpx.AsyncClient, urls: Sequence[str], first: int, n: int, session: str,
                messages: list[dict[str, Any]], streamed: bool, t0: float) -> tuple[Call, str]:
    """One step, sent to ``urls[first]``; a connection refused there (a replica that is down) goes to the next, as a
    load balancer would send it."""
    start = time.monotonic() - t0
    for tried in range(len(urls)):
        replica = (first + tried) % len(urls)
        try:
            return await _exchange(client, urls[replica], replica, n, session, messages, streamed, t0, start)
        except httpx.ConnectError:
            continue
    call = Call(session=n, streamed=streamed, start=start, end=time.monotonic() - t0, ok=False,
                error="every replica refused the connection")
    return call, ""


async def _exchange(client: httpx.AsyncClient, url: str, replica: int, n: int, session: str,
                    messages: list[dict[str, Any]], streamed: bool, t0: float, start: float) -> tuple[Call, str]:
    body = {"model": "agent", "stream": streamed, "messages": messages}
    headers = {"X-Session-Id": session, "connection": "close"}
    call = Call(session=n, streamed=streamed, start=start, end=start, ok=False, replica=replica)
    text: list[str] = []
    try:
        if not streamed:
            response = await client.post(url, json=body, headers=headers)
            call.ok = response.status_code == 200
            if call.ok:
                text.append(str(response.json()["choices"][0]["message"]["content"]))
            else:
                call.error = f"HTTP {response.status_code}: {response.text[:300]}"
        else:
            async with client.stream("POST", url, json=body, headers=headers) as response:
                call.edge = response.headers.get("x-ecgw-edge-deployment")  # known even if the stream breaks
                done = False
                async for line in response.aiter_lines():
                    if line == "data: [DONE]":
                        done = True
                    elif line.startswith("data: {"):
                        event = json.loads(line[6:])
                        if "error" in event:
                            call.error = f"error event after {len(text)} deltas: {json.dumps(event)[:300]}"
                            break
                        text += [ch["delta"].get("content") or "" for ch in event.get("choices") or ()]
                call.ok = done and response.status_code == 200
                if not call.ok and call.error is None:
                    call.error = f"HTTP {response.status_code}, {'[DONE]' if done else 'no [DONE]'}"
        call.request_id = response.headers.get("x-ecgw-request-id")
        call.edge = response.headers.get("x-ecgw-edge-deployment")
        call.target = response.headers.get("x-ecgw-cloud-target")
        if call.ok and response.headers.get("x-ecgw-egress-receipt"):
            call.receipts = response.headers["x-ecgw-egress-receipt"].split(",")
    except httpx.ConnectError:
        raise  # nothing was sent: the caller tries another replica
    except httpx.HTTPError as exc:
        call.ok, call.error = False, f"{type(exc).__name__}: {exc}"
    call.end = time.monotonic() - t0
    return call, "".join(text)


async def _session(client: httpx.AsyncClient, urls: list[str], n: int, tag: str, t0: float, stop: asyncio.Event,
                   out: list[Call]) -> None:
    task = (_task(n) + f" Send the report to owner{n}.{tag}{RAW}."
            + (" Rework the architecture of the module loader." if n % 2 == 0 else ""))
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
    pauses = random.Random(n)  # sessions out of step with each other, as agents are, the same in every run
    step = 0
    await asyncio.sleep(pauses.uniform(0, PACE_S))
    while not stop.is_set():
        call, reply = await _step(client, urls, (n + step) % len(urls), n, f"{tag}-{n}", messages,
                                  (n + step) % 2 == 1, t0)
        out.append(call)
        messages += [{"role": "assistant", "content": reply or "(no reply)"},
                     {"role": "user", "content": _tool_result(n, step)}]
        step += 1
        try:
            await asyncio.wait_for(stop.wait(), pauses.uniform(0.5, 1.5) * PACE_S)
        except TimeoutError:
            pass


def _metric(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and not line.startswith("#") and line[len(name)] in " {")


async def metering_state(client: httpx.AsyncClient, gateways: Sequence[Server]) -> list[tuple[float, float]]:
    """(records written, records buffered) per replica, from its /metrics."""
    out = []
    for g in gateways:
        text = (await client.get(g.url.removesuffix("/v1") + "/metrics", timeout=5)).text
        out.append((_metric(text, "ecgw_metering_written_records_total"), _metric(text, "ecgw_metering_buffered_records")))
    return out


class Phase:
    """One fault's run: inject at t=0 (``WARM_S`` after the load started), clear at ``FAULT_S`` (a gateway's
    restart takes until it answers), then ``AFTER_S`` more."""

    def __init__(self, name: str, inject: Callable[[], Awaitable[None]], clear: Callable[[], Awaitable[None]]) -> None:
        self.name, self.inject, self.clear = name, inject, clear
        self.t0 = self.cleared_at = 0.0
        self.samples: list[tuple[float, list[tuple[float, float]]]] = []  # (time, metering state) during the run

    async def run(self, urls: list[str], gateways: Sequence[Server], tag: str) -> list[Call]:
        calls: list[Call] = []
        stop = asyncio.Event()
        t0 = self.t0 = time.monotonic() + WARM_S
        limits = httpx.Limits(max_keepalive_connections=0, max_connections=4 * SESSIONS)
        async with httpx.AsyncClient(timeout=60, limits=limits) as client, httpx.AsyncClient() as probe:
            sessions = [asyncio.create_task(_session(client, urls, n, tag, t0, stop, calls)) for n in range(SESSIONS)]
            sampler = asyncio.create_task(self._sample(probe, gateways, t0, stop))
            await asyncio.sleep(max(t0 - time.monotonic(), 0))
            await self.inject()
            await asyncio.sleep(max(t0 + FAULT_S - time.monotonic(), 0))
            await self.clear()
            self.cleared_at = time.monotonic() - t0
            await asyncio.sleep(max(t0 + self.cleared_at + AFTER_S - time.monotonic(), 0))  # a slow clear too
            stop.set()
            await asyncio.gather(*sessions)
            await sampler
        return calls

    async def drained(self, gateways: Sequence[Server], timeout_s: float = 120) -> bool:
        """Keep sampling the replicas' metering after the load stopped, until none holds a record unwritten (three
        samples in a row: the marks of the last requests go after their records); whether that came in time."""
        deadline, quiet = time.monotonic() + timeout_s, 0
        async with httpx.AsyncClient() as client:
            while time.monotonic() < deadline:
                state = await metering_state(client, gateways)
                self.samples.append((time.monotonic() - self.t0, state))
                quiet = quiet + 1 if all(buffered == 0 for _, buffered in state) else 0
                if quiet >= 3:
                    return True
                await asyncio.sleep(0.5)
        return False

    async def _sample(self, client: httpx.AsyncClient, gateways: Sequence[Server], t0: float,
                      stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                self.samples.append((time.monotonic() - t0, await metering_state(client, gateways)))
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.25)


def written_again(samples: Sequence[tuple[float, list[tuple[float, float]]]], up_at: float) -> float | None:
    """When every replica's written-records counter had grown past all it had reached before the database came
    back at ``up_at``: the time metering writes succeed again."""
    before = [state for t, state in samples if t <= up_at]
    if not before:
        return None
    stuck = [max(state[i][0] for state in before) for i in range(len(before[0]))]
    for t, state in samples:
        if t > up_at and all(written > stuck[i] for i, (written, _) in enumerate(state)):
            return t
    return None


def audit_missing(database_url: str, calls: Sequence[Call], *, wait_s: float = 60.0) -> tuple[int, int]:
    """(receipts the clients hold, those whose audit rows are missing): read again until none is missing or
    ``wait_s`` passed (the replicas' audit writers write in the background)."""
    receipts = [token for c in calls for token in c.receipts]
    request_ids = sorted({str(parse(token)[1].get("rid")) for token in receipts})
    call_ids = sorted({str(parse(token)[1].get("call")) for token in receipts})
    if not receipts:
        return 0, 0
    engine = make_engine(database_url)
    deadline = time.monotonic() + wait_s
    try:
        while True:
            with engine.connect() as conn:
                tokens = {row[0] for row in conn.execute(
                    text("SELECT token FROM privacy_receipt WHERE request_id IN :ids").bindparams(
                        bindparam("ids", expanding=True)), {"ids": request_ids})}
                stored = {row[0] for row in conn.execute(
                    text("SELECT id FROM privacy_call WHERE id IN :ids").bindparams(
                        bindparam("ids", expanding=True)), {"ids": call_ids})}
            missing = missing_receipts(receipts, tokens, stored)
            if not missing or time.monotonic() > deadline:
                return len(receipts), missing
            time.sleep(1.0)
    finally:
        engine.dispose()


async def raw_seen(clouds: dict[str, Server]) -> int:
    """Chat bodies the cloud stubs received that held an address as the client sent it."""
    async with httpx.AsyncClient() as client:
        stats = [(await client.get(s.url.removesuffix("/v1") + "/stats", timeout=5)).json() for s in clouds.values()]
    return sum(int(stat.get("raw", 0)) for stat in stats)


def start_redis(workdir: Path, port: int) -> str:
    """A Redis that keeps its data across a restart (append-only file), as a deployment's does."""
    return subprocess.run([str(REDIS), "start", str(port), str(workdir / "redis"), "--appendonly", "yes"], check=True,
                          capture_output=True, text=True).stdout.strip()


def settle(database_url: str, calls: Sequence[Call]) -> tuple[int, int, int]:
    store = UsageStore.from_url(database_url)
    try:
        settled = store.settlement([c.request_id for c in calls if c.ok and c.request_id])
    finally:
        store.dispose()
    return lost_metering(settled)


# the run -----------------------------------------------------------------------------------------------------------
async def _post(url: str, value: dict[str, Any]) -> None:
    async with httpx.AsyncClient() as client:
        (await client.post(url, json=value, timeout=5)).raise_for_status()


def run(only: Sequence[str] = FAULTS) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="ecgw-faults-"))
    workdir.chmod(0o711)  # as root, PostgreSQL runs as "postgres", which must reach its data directory in here
    key = workdir / "ecgw.key"
    key.write_text(secrets.token_hex(32))
    key.chmod(0o600)
    database_url, pg_port, pg_data = start_postgres(workdir)
    redis_port = free_port()
    redis_url = start_redis(workdir, redis_port)
    ports = {"a": free_port(), "b": free_port()}
    edges = {n: start_edge(workdir, n, p) for n, p in ports.items()}
    clouds = {n: start_cloud(workdir, n) for n in ("primary", "backup")}
    gateways: list[Server] = []
    report: dict[str, Any] = {"sessions": SESSIONS, "pace_s": PACE_S, "fault_s": FAULT_S, "rows": [],
                              "load_before": os.getloadavg()}
    all_calls: list[Call] = []
    configs: list[tuple[dict[str, Any], int]] = []
    try:
        for i in range(2):
            port = free_port()
            configs.append((gateway_config(workdir, port, edges, clouds, redis_url=redis_url,
                                           database_url=database_url, index=i), port))
            gateways.append(start_gateway(workdir, i, *configs[i]))
        for g in gateways:
            wait_healthy(g)
        urls = [g.url + "/chat/completions" for g in gateways]
        mode_url = clouds["primary"].url.removesuffix("/v1") + "/mode"

        async def kill_edge() -> None:
            process = edges[VICTIM].process
            assert process is not None
            os.kill(process.pid, signal.SIGKILL)
            process.wait()

        async def restart_edge() -> None:
            edges[VICTIM] = await asyncio.to_thread(start_edge, workdir, f"{VICTIM}-restarted", ports[VICTIM])

        def cloud_mode(mode: str) -> Callable[[], Awaitable[None]]:
            return lambda: _post(mode_url, {"mode": mode})

        async def kill_gateway() -> None:
            process = gateways[GATEWAY_VICTIM].process
            assert process is not None
            os.kill(process.pid, signal.SIGKILL)
            process.wait()

        def restart_gateway() -> None:
            server = start_gateway(workdir, GATEWAY_VICTIM, *configs[GATEWAY_VICTIM])
            gateways[GATEWAY_VICTIM] = server
            wait_healthy(server)

        def redis(command: str) -> None:
            if command == "down":
                subprocess.run(["redis-cli", "-p", str(redis_port), "shutdown"], check=False, capture_output=True)
            else:
                start_redis(workdir, redis_port)

        phases = [Phase(FAULTS[0], kill_edge, restart_edge),
                  Phase(FAULTS[1], lambda: asyncio.to_thread(postgres, "down", pg_port, pg_data),
                        lambda: asyncio.to_thread(postgres, "up", pg_port, pg_data)),
                  *(Phase(name, cloud_mode(mode), cloud_mode("ok"))
                    for name, mode in zip(FAULTS[2:5], ("429", "500", "hang"), strict=True)),
                  Phase(FAULTS[5], kill_gateway, lambda: asyncio.to_thread(restart_gateway)),
                  Phase(FAULTS[6], lambda: asyncio.to_thread(redis, "down"),
                        lambda: asyncio.to_thread(redis, "up"))]
        for index, phase in enumerate(p for p in phases if p.name in only):
            raw_before = asyncio.run(raw_seen(clouds))
            calls = asyncio.run(phase.run(urls, gateways, f"fault{index}"))
            all_calls += calls
            empty = asyncio.run(phase.drained(gateways))
            row = figures(phase.name, calls, phase.samples, phase.cleared_at, settle(database_url, calls))
            row.receipts, row.missing_receipts = audit_missing(database_url, calls)
            row.raw_out = asyncio.run(raw_seen(clouds)) - raw_before
            row.extra.update(drained=empty, cleared_at=round(phase.cleared_at, 2),
                             peak_buffered=max((sum(b for _, b in s) for _, s in phase.samples), default=0),
                             by_edge=_count(c.edge for c in calls), by_target=_count(c.target for c in calls))
            report["rows"].append(row)
    finally:
        for g in gateways:
            g.stop()  # SIGTERM: each flushes its metering buffer
        final = final_receipts = None
        try:
            final = settle(database_url, all_calls)[1:] if all_calls else None
            final_receipts = audit_missing(database_url, all_calls, wait_s=0) if all_calls else None
        finally:
            for server in [*edges.values(), *clouds.values()]:
                server.stop()
            stop_redis(workdir)
            subprocess.run([str(POSTGRES), "stop", str(pg_data)], check=False)
    # the Redis phase's refusals are its fail-closed answers, not failures to read logs for
    if any((r.failed or r.broken) and not r.fault.startswith("Redis") or r.missing_receipts or r.raw_out
           for r in report["rows"]):
        print(f"every process's log is in {workdir}", file=sys.stderr)  # to read what failed
    else:
        shutil.rmtree(workdir, ignore_errors=True)  # kept (with the logs) when the run failed, too
    report["after_shutdown"] = final
    report["receipts_after_shutdown"] = final_receipts
    report["load_after"] = os.getloadavg()
    return report


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return out


def _s(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"


def render(report: dict[str, Any]) -> str:
    load = " / ".join(f"{x:.1f}" for x in report["load_before"])
    lines = [f"\n## Faults under load ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load})", "",
             f"`python -m benchmarks.faults`: 2 `ecgw serve` replicas (one worker each) sharing a private Redis and "
             f"a private PostgreSQL, 2 edge stubs, cloud targets `primary` → `backup` (primary timeout and first-token "
             f"timeout {PRIMARY_TIMEOUT_S:g} s, cooldown {COOLDOWN_S:g} s); {report['sessions']} agent sessions at "
             f"once ({PACE_S:g} s on average between a session's steps, every other step streamed, half the sessions routed "
             f"to the cloud by task-routing); each fault lasts {report['fault_s']:g} s on fresh sessions. Time to "
             "recover: from the fault to the later of the last failure and the recovery signal.", "",
             "| fault | requests | failed (non-streamed) | streams broken | metering lost (requests / records) | "
             "receipts a client holds whose audit row is missing | raw values out | "
             "time to recover | recovery signal | step in the fault: median / slowest |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for row in report["rows"]:
        lost = "not read" if row.unsettled is None else f"{row.unsettled} / {row.lost_records} (of {row.checked})"
        receipts = "not read" if row.missing_receipts is None else f"{row.missing_receipts} (of {row.receipts})"
        raw = "not read" if row.raw_out is None else str(row.raw_out)
        lines.append(f"| {row.fault} | {row.requests} | {row.failed} of {row.plain} | {row.broken} of {row.streams} | "
                     f"{lost} | {receipts} | {raw} | {_s(row.recover_s)} | {row.signal} at {_s(row.signal_s)} | "
                     f"{row.median_s:.2f} / {row.slowest_s:.1f} s |")
    kills = [r for r in report["rows"] if r.fault.startswith("edge")]
    gateway_kills = [r for r in report["rows"] if r.fault.startswith("gateway")]
    receipts_final = report.get("receipts_after_shutdown")
    outages = [r for r in report["rows"] if r.fault.startswith("PostgreSQL")]
    final = report["after_shutdown"]
    load_after = " / ".join(f"{x:.1f}" for x in report["load_after"])
    lines += ["", "Metering lost is read from PostgreSQL once every replica's buffer is empty, for the requests that "
              "completed (a request whose stored records do not add up to its settlement mark)"
              + (f"; after the replicas shut down, over every phase: {final[0]} requests / {final[1]} records."
                 if final else "."),
              *(f"At the kill -9, {r.extra['streams_in_flight_on_victim']} streams were in flight on the killed "
                f"replica ({r.extra['in_flight']} requests in flight in all)." for r in kills),
              *(f"At the gateway's kill -9, {r.extra['in_flight_on_killed_gateway']} requests were in flight on it "
                f"({r.extra['in_flight']} in all): those fail, and theirs is all the metering it may lose; the "
                "requests it had answered are metered from its journal when it starts again." for r in gateway_kills),
              *([f"Receipts after the replicas shut down, over every phase: {receipts_final[1]} of "
                 f"{receipts_final[0]} without their audit rows."] if receipts_final else []),
              *(f"While PostgreSQL was down the replicas held up to {r.extra['peak_buffered']:g} metering records "
                f"between them; writes resumed {_s(None if r.signal_s is None else r.signal_s - r.extra['cleared_at'])} "
                "after it was back (the writer's back-off, accounting.writer.retry_max_s)." for r in outages),
              f"Load after the run: {load_after}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--no-write", action="store_true", help="print only; do not append to RESULTS.md")
    parser.add_argument("--only", action="append", choices=FAULTS, help="this fault only (repeatable)")
    args = parser.parse_args(argv)
    report = run(args.only or FAULTS)
    text = render(report)
    print(json.dumps({**report, "rows": [vars(r) for r in report["rows"]]}, indent=2, default=str))
    print(text)
    if not args.no_write:
        append(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
