"""Every number in the table is the number that happened: a grid through a real ``ecgw serve --workers N``
subprocess (1 and 2 workers; short runs, far shorter than a worker's flush interval) against scripted fake models,
one ``ecgw eval run`` per policy into one folder (merged into one report), whose tokens and USD are exactly what
the fake upstreams reported, priced by the test's own arithmetic.

``ECGW_EVAL_WORKERS_TABLE=path.md`` keeps each worker count's report table (for a closing note)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from benchmarks.contenders import free_port
from eval.cli import main as eval_main
from eval.grid import summary_from_json
from eval.paths import suite_dir
from eval.tasks import load_tasks
from tests.eval.ci_models import Scenario
from tests.fakes.model_server import ModelServer
from tests.processes import wait_healthy

ROOT = Path(__file__).resolve().parents[2]
T1, T3, T4, T5 = ("ecgw_task_1_meeting_minutes", "ecgw_task_3_invoice_lookup", "ecgw_task_4_log_search",
                  "ecgw_task_5_secret_scan")
TASKS = [t for t in load_tasks(suite_dir()) if t.id in (T1, T3, T4, T5)]
SCENARIO = Scenario(TASKS, edge_solves={T1, T3}, judge={T1: 2, T3: 6, T4: 8, T5: 3})
# delegate: one client request makes an edge call and, inside it, a cloud call — internal calls to wait for
POLICIES = ["cloud-only", "delegate", "edge-only"]
RUNS = 3
# Whole USD per 1M tokens, so every call costs a whole number of micro-dollars and sums compare exactly.
PRICE = {"input": 3, "cache_read": 1, "output": 15}
EDGE_PARAMS = 1_000_000_000
FLUSH_S = 2.0


@dataclass
class Reported:
    """What one fake upstream reported over a policy's grid."""

    prompt: int = 0
    cached: int = 0
    output: int = 0
    micro_usd: int = 0  # at PRICE
    calls: int = 0

    @classmethod
    def of(cls, usages: list[dict[str, Any]]) -> Reported:
        total = cls()
        for usage in usages:
            cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
            prompt, output = int(usage["prompt_tokens"]), int(usage["completion_tokens"])
            total.prompt += prompt
            total.cached += cached
            total.output += output
            total.micro_usd += (prompt - cached) * PRICE["input"] + cached * PRICE["cache_read"] \
                + output * PRICE["output"]
            total.calls += 1
        return total


@pytest.fixture()
def serve(edge: ModelServer, cloud: ModelServer, tmp_path: Path) -> Iterator[Any]:
    edge._responder, cloud._responder = SCENARIO.edge, SCENARIO.cloud
    started: list[subprocess.Popen[bytes]] = []

    def start(workers: int) -> str:
        port = free_port()
        config = {"server": {"port": port, "workers": workers},
                  "edge": {"base_url": edge.url + "/v1", "model": "edge-model"},  # type: ignore[attr-defined]
                  "cloud": {"model": "openai/gpt-test", "api_base": cloud.url + "/v1",  # type: ignore[attr-defined]
                            "api_key_env": None},
                  "sessions": {"sqlite_path": str(tmp_path / f"sessions{workers}.sqlite3")},
                  "database_url": f"sqlite:///{tmp_path / f'ecgw{workers}.sqlite3'}",
                  "privacy": {"actions": {"contact": "audit"}, "layers": {"ner": False}},
                  "accounting": {"prices": {"gpt-test": PRICE}, "litellm_fallback": False,
                                 "edge_models": {"edge-model": {"params": EDGE_PARAMS}},
                                 "spill_path": str(tmp_path / "spill.jsonl"),
                                 # runs far shorter than a worker's write interval: a read answered by one
                                 # worker cannot see what the other still holds unless it waits for it
                                 "writer": {"flush_interval_s": FLUSH_S}},
                  "policy": {"default": "edge-only"}}
        path = tmp_path / f"config{workers}.yaml"
        path.write_text(yaml.safe_dump(config))
        env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_")}
        proc = subprocess.Popen([sys.executable, "-m", "gateway.cli", "serve", "--config", str(path)], cwd=ROOT,
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(proc)
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, proc)
        return base

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=60)
    edge._responder = cloud._responder = None


@pytest.mark.parametrize("workers", [1, 2])
def test_grid_report_is_exactly_what_the_upstreams_reported(workers: int, serve: Any, edge: ModelServer,
                                                            cloud: ModelServer, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    url = serve(workers)
    out = tmp_path / "grid"
    reported: dict[str, tuple[Reported, Reported]] = {}
    for policy in POLICIES:  # separate `ecgw eval run` calls into one folder: one report covers them all
        edge.reset()
        cloud.reset()
        assert eval_main(["eval", "run", "--suite", str(suite_dir()), "--policies", policy,
                          "--tasks", ",".join(t.id for t in TASKS), "--repeat", str(RUNS), "--parallel", "4",
                          "--out", str(out), "--gateway-url", url, "--experiment", f"w{workers}",
                          "--no-progress"]) == 0
        reported[policy] = Reported.of(cloud.usages), Reported.of(edge.usages)
    capsys.readouterr()
    assert eval_main(["eval", "report", str(out), "--title", f"{workers} worker(s)"]) == 0
    summaries = {s["policy"]: summary_from_json(s) for s in json.loads((out / "summaries.json").read_text())}
    assert list(summaries) == POLICIES

    for policy in POLICIES:
        cloud_seen, edge_seen = reported[policy]
        records = [json.loads(p.read_text()) for p in (out / policy).glob("*/run*/result.json")]
        assert len(records) == len(TASKS) * RUNS
        assert [r["incomplete"] for r in records] == [[]] * len(records), policy
        # per run, summed: the very token counts the fake cloud reported, and the USD they cost
        assert sum(r["cloud"]["prompt"] for r in records) == cloud_seen.prompt, policy
        assert sum(r["cloud"]["cache_read"] for r in records) == cloud_seen.cached, policy
        assert sum(r["cloud"]["output"] for r in records) == cloud_seen.output, policy
        assert round(sum(r["cloud_cost_usd"] for r in records) * 1e6) == cloud_seen.micro_usd, policy
        # the table's row: tokens in millions averaged over runs, cost averaged over runs
        summary = summaries[policy]
        assert summary.tokens.raw == (cloud_seen.prompt - cloud_seen.cached) / (1_000_000 * RUNS)
        assert summary.tokens.cache_read == cloud_seen.cached / (1_000_000 * RUNS)
        assert summary.tokens.output == cloud_seen.output / (1_000_000 * RUNS)
        assert round(summary.cost_usd * RUNS * 1e6) == cloud_seen.micro_usd
        assert summary.cost_usd == pytest.approx(cloud_seen.micro_usd / 1e6 / RUNS, rel=1e-12)
        # edge FLOPs: 2 · params · (uncached prompt + output) of every edge call the fake edge answered
        flops = 2 * EDGE_PARAMS * (edge_seen.prompt - edge_seen.cached + edge_seen.output)
        assert summary.edge_pflops == pytest.approx(flops / RUNS / 1e15, rel=1e-6)
        assert summary.incomplete_runs == 0 and summary.attempts == len(TASKS) * RUNS
    assert reported["cloud-only"][0].calls > 0 and reported["delegate"][0].calls > 0
    assert reported["edge-only"][0].calls == 0
    table = (out / "report.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert not any(cell.strip().endswith("*") for line in rows for cell in line.split("|"))  # none incomplete
    assert "could not be read" not in table
    keep = os.environ.get("ECGW_EVAL_WORKERS_TABLE")
    if keep:
        with open(keep, "a", encoding="utf-8") as note:
            note.write(f"\n## {workers} worker(s)\n\n" + table.split("\n\n", 1)[1] + "\n| upstream | " + " | ".join(
                f"{p}: cloud {reported[p][0].prompt}/{reported[p][0].cached}/{reported[p][0].output} tok, "
                f"${reported[p][0].micro_usd / 1e6 / RUNS:.6f}/run-avg" for p in POLICIES) + " |\n")


# ---- one gateway in this process: redo and resume, a failing usage read ---------------------------------------


@pytest.fixture()
def gateway(edge: ModelServer, cloud: ModelServer, tmp_path: Path) -> Iterator[Any]:
    from gateway.app import create_app
    from tests.conftest import settings_for
    from tests.door import guarded_services
    from tests.fakes.threaded import ThreadedServer

    edge._responder, cloud._responder = SCENARIO.edge, SCENARIO.cloud
    servers: list[ThreadedServer] = []

    def start(more: dict[str, Any] | None = None, **accounting: Any) -> str:
        settings = settings_for(edge.url, cloud.url,  # type: ignore[attr-defined]
                                database_url=f"sqlite:///{tmp_path}/ecgw.sqlite3",
                                privacy={"actions": {"contact": "audit"}, "layers": {"ner": False}},
                                accounting={"prices": {"gpt-test": PRICE}, "litellm_fallback": False, **accounting},
                                sessions={"store": "memory"}, **(more or {}))
        servers.append(ThreadedServer(create_app(settings, services=guarded_services(settings))).start())
        return servers[-1].url

    yield start
    for server in servers:
        server.stop()
    edge._responder = cloud._responder = None


def _run(url: str, out: Path, policy: str = "cloud-only", task: str = T4) -> int:
    return eval_main(["eval", "run", "--suite", str(suite_dir()), "--policies", policy, "--tasks", task,
                      "--repeat", "1", "--out", str(out), "--gateway-url", url, "--experiment", "redo",
                      "--no-progress"])


def test_a_redone_run_is_metered_once(gateway: Any, cloud: ModelServer, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    url = gateway()
    out = tmp_path / "grid"
    assert _run(url, out) == 0
    result = out / "cloud-only" / T4 / "run0" / "result.json"
    first = json.loads(result.read_text())
    first_seen = Reported.of(cloud.usages)
    assert first["cloud"]["prompt"] == first_seen.prompt > 0 and first["attempts"] == 1

    result.unlink()  # the documented way to redo a run
    cloud.reset()
    assert _run(url, out) == 0
    again = json.loads(result.read_text())
    second_seen = Reported.of(cloud.usages)
    # the redo is its own session and is charged for itself only — not for both attempts
    assert again["attempts"] == 2 and again["session_id"] == first["session_id"] + ":a2"
    assert (again["cloud"]["prompt"], again["cloud"]["cache_read"], again["cloud"]["output"]) == (
        second_seen.prompt, second_seen.cached, second_seen.output)
    assert round(again["cloud_cost_usd"] * 1e6) == second_seen.micro_usd
    # its audit too: the cloud calls it counts are this attempt's
    assert again["privacy"]["cloud_calls"] == second_seen.calls
    capsys.readouterr()
    assert eval_main(["eval", "report", str(out)]) == 0
    table = (out / "report.md").read_text()
    assert "cloud-only 1 of 1 runs (2 attempts in all)" in table
    summary = summary_from_json(json.loads((out / "summaries.json").read_text())[0])
    assert summary.cost_usd == again["cloud_cost_usd"] and summary.retried_runs == 1


def test_a_failing_usage_read_is_marked_incomplete_not_zero(gateway: Any, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    url = gateway(enabled=False)  # metering off: the gateway answers usage reads with 503
    out = tmp_path / "grid"
    assert _run(url, out) == 0
    record = json.loads((out / "cloud-only" / T4 / "run0" / "result.json").read_text())
    assert record["overall_score"] == 1.0  # the score stands
    assert len(record["incomplete"]) == 1 and record["incomplete"][0].startswith("usage not read: HTTP 503")
    capsys.readouterr()
    assert eval_main(["eval", "report", str(out)]) == 0
    table = (out / "report.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| cloud-only"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:7] == ["0.00/0.00/0.00*", "0.00*", "0.00*", cells[6]] and cells[6].endswith("*")
    assert "* Usage or audit could not be read completely for cloud-only 1 of 1 runs" in table
    summary = summary_from_json(json.loads((out / "summaries.json").read_text())[0])
    assert summary.incomplete_runs == 1


def test_shadow_calls_are_shown_apart_never_in_the_papers_columns(gateway: Any, cloud: ModelServer,
                                                                  tmp_path: Path) -> None:
    from eval.meter import GatewaySessionMeter, RunCalls
    from eval.metrics import summarize
    from eval.records import load_run
    from eval.report import markdown_table

    # every step stays on the edge (tau 10) and every one is shadowed: the cloud sees only shadow calls
    url = gateway({"policy": {"knobs": {"step-routing": {"tau": 10, "missing_logprobs": "edge"}}},
                   "learning": {"shadow_rate": 1.0, "seed": 3}})
    out = tmp_path / "grid"
    assert _run(url, out, policy="step-routing") == 0
    result = out / "step-routing" / T4 / "run0" / "result.json"
    record = json.loads(result.read_text())
    # the paper's figures: no cloud at all, whenever the shadow call lands
    assert record["cloud"] == {"prompt": 0, "cache_read": 0, "cache_write": 0, "output": 0}
    assert record["cloud_cost_usd"] == 0.0 and record["incomplete"] == []
    # the shadow call runs after the step's answer; once it is in the store, the meter reads it apart
    session = record["session_id"]
    by_purpose = {"by": "purpose", "format": "json", "session": session}
    for _ in range(300):
        groups = [r["group"] for r in httpx.get(f"{url}/v1/usage", params=by_purpose).json()["data"]]
        if "shadow" in groups:
            break
        time.sleep(0.1)
    assert groups == ["shadow", "step"]
    assert httpx.get(f"{url}/v1/usage", params={**by_purpose, "session": session + "x"}).json()["data"] == []
    shadowed = Reported.of(cloud.usages)
    usage = GatewaySessionMeter(url).session_usage(session, RunCalls())
    assert usage.shadow_calls == shadowed.calls > 0
    assert (usage.shadow_cloud.prompt, usage.shadow_cloud.cache_read, usage.shadow_cloud.output) == (
        shadowed.prompt, shadowed.cached, shadowed.output)
    assert round(usage.shadow_cost_usd * 1e6) == shadowed.micro_usd
    # read by session (another harness made the requests): the session's row less its shadow calls
    by_session = GatewaySessionMeter(url).session_usage(session)
    assert by_session.cloud == usage.cloud and by_session.cloud_cost_usd == 0.0
    assert by_session.shadow_calls == shadowed.calls
    # in the table: a line of their own; the paper's columns unchanged
    run = dataclasses.replace(load_run(result), shadow_calls=usage.shadow_calls, shadow_cloud=usage.shadow_cloud,
                              shadow_cost_usd=usage.shadow_cost_usd)
    summary = summarize("step-routing", [T4], [run], runs=1)
    assert summary.cost_usd == 0.0 and summary.tokens.raw == 0.0 and summary.shadow_calls == shadowed.calls
    table = markdown_table([summary])
    row = next(line for line in table.splitlines() if line.startswith("| step-routing"))
    assert [c.strip() for c in row.strip("|").split("|")][3:5] == ["0.00/0.00/0.00", "0.00"]
    assert f"step-routing {shadowed.calls:g} calls" in table and "not in the columns above" in table
