"""``ecgw eval acebench``: the models config OpenClaw gets, the run_batch.py command, and the join of the
benchmark's scores with the gateway's metering and audit.

The real run needs Docker and the benchmark's image, which this machine cannot reach; a stand-in
``eval/run_batch.py`` does what matters to the adapter the way the real one does it: it reads the generated
models config (expanding ``${MY_PROXY_API_KEY}`` from its environment), makes the agent's model call to the one
provider with the configured headers and model id, and writes ``score.json`` under its ``--output-dir``."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from eval.acebench import (
    API_KEY_PLACEHOLDER,
    AceBenchAdapter,
    find_scores,
    join_run,
    models_config,
    run_batch_command,
)
from eval.cli import main as eval_main
from eval.grid import summary_from_json
from eval.meter import NullSessionMeter, SessionUsage
from eval.metrics import CloudUsage, UnitLeak
from eval.paths import suite_dir
from eval.tasks import load_task, load_tasks
from gateway.app import create_app
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer

T3, T4 = "ecgw_task_3_invoice_lookup", "ecgw_task_4_log_search"

STUB = r'''
import argparse, json, os, pathlib, re, sys, urllib.request
p = argparse.ArgumentParser()
for name in ("--task", "--edge-model", "--models-config", "--run-mode", "--repeat", "--output-dir"):
    p.add_argument(name)
a = p.parse_args()
assert a.run_mode == "local-only" and a.repeat == "1", a
raw = pathlib.Path(a.models_config).read_text()
if "${MY_PROXY_API_KEY}" in raw and not os.environ.get("MY_PROXY_API_KEY"):
    sys.exit("MY_PROXY_API_KEY must be set")
config = json.loads(raw.replace("${MY_PROXY_API_KEY}", os.environ.get("MY_PROXY_API_KEY", "")))
provider, model = a.edge_model.split("/", 1)
conf = config["providers"][provider]
assert conf["api"] == "openai-completions" and [m["id"] for m in conf["models"]] == [model]
text = pathlib.Path(a.task).read_text()
task_id = re.search(r"^id: (\S+)", text, re.M).group(1)
prompt = text.split("## Prompt", 1)[1].split("\n## ", 1)[0].strip()
workspace = text.split("## Workspace Path", 1)[1].split("```")[1].strip()
files = sorted(pathlib.Path(workspace, "exec").rglob("*"))
seen = "\n".join(f.read_text() for f in files if f.is_file())[:3000]  # what the agent read
if f"{task_id}:{model}" in os.environ.get("STUB_FAIL", ""):
    sys.exit(3)  # the container died: no score.json
body = {"model": model, "messages": [{"role": "user", "content": prompt}, {"role": "tool", "tool_call_id": "c1",
        "content": seen}], "stream": False}
request = urllib.request.Request(conf["baseUrl"] + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + conf["apiKey"], **conf["headers"]})
answer = json.load(urllib.request.urlopen(request, timeout=30))
assert answer["choices"][0]["message"]["content"]
out = pathlib.Path(a.output_dir, "ACE_Bench", task_id, "ecgw_" + model.replace("/", "_") + "_20260101_0000_abc123")
out.mkdir(parents=True)
score = {"ecgw_task_3_invoice_lookup": 1.0, "ecgw_task_4_log_search": 0.5}[task_id]
(out / "score.json").write_text(json.dumps({"overall_score": score, "privacy_score": 1.0}))
'''


@pytest.fixture()
def fake_acebench(tmp_path: Path) -> Path:
    root = tmp_path / "AceBench"
    (root / "tasks").mkdir(parents=True)
    (root / "eval").mkdir()
    for task_id in (T3, T4):
        shutil.copy(suite_dir() / "tasks" / f"{task_id}.md", root / "tasks")
    (root / "workspace").symlink_to(suite_dir() / "workspace")
    (root / "eval" / "run_batch.py").write_text(STUB, encoding="utf-8")
    return root


@pytest.fixture()
def gateway_url(edge: ModelServer, cloud: ModelServer, tmp_path: Path) -> Iterator[str]:
    settings = settings_for(edge.url, cloud.url, database_url=f"sqlite:///{tmp_path}/ecgw.sqlite3",  # type: ignore[attr-defined]
                            server={"api_keys": ["sk-gw"]},
                            privacy={"actions": {"contact": "audit"}, "layers": {"ner": False}},
                            accounting={"prices": {"gpt-test": {"input": 2.5, "cache_read": 0.25, "output": 15.0}},
                                        "edge_models": {"edge-model": {"params": 1.7e9}}})
    server = ThreadedServer(create_app(settings, services=guarded_services(settings))).start()
    yield server.url
    server.stop()


def test_models_config_has_the_gateway_as_only_provider() -> None:
    config = models_config("http://172.17.0.1:4000/v1/", "step-routing", "acebench:step-routing:t1:run0")
    assert config == {"providers": {"ecgw": {
        "baseUrl": "http://172.17.0.1:4000/v1",
        "apiKey": API_KEY_PLACEHOLDER,  # run_batch.py fills it from $MY_PROXY_API_KEY: no key in the file
        "api": "openai-completions",
        "headers": {"X-Session-Id": "acebench:step-routing:t1:run0"},
        "models": [{"id": "ecgw/step-routing", "name": "ecgw/step-routing", "input": ["text"], "reasoning": False,
                    "compat": {"supportsUsageInStreaming": True, "requiresStringContent": True},
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}],
    }}}
    sized = models_config("http://h/v1", "sketch", "s", api_key="k", context_window=131072, max_tokens=8192)
    model = sized["providers"]["ecgw"]["models"][0]
    assert (sized["providers"]["ecgw"]["apiKey"], model["contextWindow"], model["maxTokens"]) == ("k", 131072, 8192)


def test_run_batch_command_is_local_only_with_the_policy_as_edge_model(tmp_path: Path) -> None:
    task = load_task(suite_dir() / "tasks" / f"{T3}.md")
    command = run_batch_command(Path("/ace"), task, "advisor", tmp_path / "m.json", tmp_path / "o",
                                python="py", extra_args=["--privacy-judge-mode", "off"])
    assert command == ["py", "/ace/eval/run_batch.py", "--task", str(task.path), "--edge-model", "ecgw/ecgw/advisor",
                       "--models-config", str(tmp_path / "m.json"), "--run-mode", "local-only", "--repeat", "1",
                       "--output-dir", str(tmp_path / "o"), "--privacy-judge-mode", "off"]


def test_dry_run_over_the_benchmark_writes_one_config_per_task_run(acebench: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    tasks = load_tasks(acebench)[:2]
    out = tmp_path / "out"
    assert eval_main(["eval", "acebench", "--acebench-dir", str(acebench), "--policies", "edge-only,delegate",
                      "--tasks", ",".join(t.id for t in tasks), "--repeat", "2", "--out", str(out), "--dry-run",
                      "--container-gateway-url", "http://172.17.0.1:4000"]) == 0
    printed = capsys.readouterr().out
    configs = sorted(out.glob("*/*/run*/models.json"))
    assert len(configs) == 2 * 2 * 2
    sessions = set()
    for path in configs:
        provider = json.loads(path.read_text())["providers"]["ecgw"]
        policy, task_id, run = path.parts[-4], path.parts[-3], path.parts[-2]
        assert provider["headers"]["X-Session-Id"] == f"acebench:{policy}:{task_id}:{run}"
        assert provider["models"][0]["id"] == f"ecgw/{policy}" and provider["baseUrl"] == "http://172.17.0.1:4000/v1"
        sessions.add(provider["headers"]["X-Session-Id"])
    assert len(sessions) == 8
    assert printed.count("--run-mode local-only") == 8 and "--edge-model ecgw/ecgw/delegate" in printed


def test_join_records_score_usage_and_privacy_or_a_reason(tmp_path: Path) -> None:
    task = load_task(suite_dir() / "tasks" / f"{T3}.md")
    usage = SessionUsage(cloud=CloudUsage(prompt=100, cache_read=40, output=10), cloud_cost_usd=0.5, edge_flops=2e12,
                         leaks=(UnitLeak(1.0, 1.0, "B1.email"), UnitLeak(3.0, 0.0, "B1.billing_address")))
    scores = tmp_path / "ok" / "acebench" / "ACE_Bench" / T3 / "x"
    scores.mkdir(parents=True)
    (scores / "score.json").write_text('{"overall_score": 0.75, "privacy_score": 1.0}')
    assert find_scores(tmp_path / "ok" / "acebench")[0] == {"overall_score": 0.75, "privacy_score": 1.0}
    record = join_run(task, 0, "sketch", "s", tmp_path / "ok", usage, returncode=0)
    assert (record.overall_score, record.error, record.cloud.raw, record.leaks) == (0.75, None, 60, usage.leaks)
    saved = json.loads((tmp_path / "ok" / "result.json").read_text())
    assert saved["harness"] == "acebench" and saved["acebench_privacy_score"] == 1.0
    missing = join_run(task, 1, "sketch", "s", tmp_path / "missing", usage, returncode=3, log_tail="docker: not found")
    assert missing.overall_score == 0 and "exited with 3" in (missing.error or "")
    assert "docker: not found" in (missing.error or "") and missing.cloud.prompt == 100  # the usage still counts
    bad = tmp_path / "bad" / "acebench"
    bad.mkdir(parents=True)
    (bad / "score.json").write_text('{"error": "judge unreachable"}')
    failed = join_run(task, 0, "sketch", "s", tmp_path / "bad", SessionUsage(), returncode=0)
    assert failed.overall_score == 0 and "judge unreachable" in (failed.error or "")


def test_acebench_adapter_runs_a_stub_harness_through_the_gateway(fake_acebench: Path, gateway_url: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch, cloud: ModelServer,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STUB_FAIL", f"{T4}:ecgw/edge-only")
    monkeypatch.delenv("MY_PROXY_API_KEY", raising=False)
    out = tmp_path / "out"
    args = ["eval", "acebench", "--acebench-dir", str(fake_acebench), "--policies", "edge-only,cloud-only",
            "--repeat", "1", "--out", str(out), "--gateway-url", gateway_url, "--api-key", "sk-gw",
            "--python", sys.executable, "--parallel", "2"]
    assert eval_main(args) == 0
    capsys.readouterr()
    for path in out.glob("*/*/run0/models.json"):
        assert "sk-gw" not in path.read_text()  # the key travels in the environment only
    records = {(p.parts[-4], p.parts[-3]): json.loads(p.read_text()) for p in out.glob("*/*/run0/result.json")}
    assert len(records) == 4
    failed = records[("edge-only", T4)]
    assert failed["overall_score"] == 0 and "exited with 3" in failed["error"]
    assert records[("edge-only", T3)]["overall_score"] == 1.0 and records[("cloud-only", T4)]["overall_score"] == 0.5
    # each task run was its own session at the gateway, under the policy its model named
    usage = {r["group"]: r for r in httpx.get(gateway_url + "/v1/usage", params={"by": "session"},
                                              headers={"Authorization": "Bearer sk-gw"}).json()["data"]}
    for (policy, task_id), record in records.items():
        assert record["session_id"] == f"acebench:{policy}:{task_id}:run0"
        if record["error"] is None:
            row = usage[record["session_id"]]
            assert (row["edge_calls"], row["cloud_calls"]) == ((1, 0) if policy == "edge-only" else (0, 1))
            assert record["privacy"]["units_known"] > 0 and record["leaks"]
    cloud_only = records[("cloud-only", T4)]
    assert cloud_only["cloud"]["prompt"] > 0 and cloud_only["cloud_cost_usd"] > 0
    # the log files hold e-mail addresses (contact: sent raw and audited); the audit names them, the cloud got them
    exposed = [u["unit_id"] for u in cloud_only["leaks"] if u["leak"] == 1.0]
    assert sorted(exposed) == ["U0456.email", "U1182.email", "U2291.email", "U3310.email"]
    assert "grace.adeyemi@example.com" in json.dumps(cloud.requests)
    summaries = {s["policy"]: summary_from_json(s) for s in json.loads((out / "summaries.json").read_text())}
    assert (summaries["edge-only"].completion, summaries["cloud-only"].completion) == (50.0, 75.0)
    assert summaries["edge-only"].privacy_exposure == 0.0 and summaries["edge-only"].errors == 1
    assert summaries["cloud-only"].privacy_exposure is not None and summaries["cloud-only"].privacy_exposure > 0

    # resumable: recorded runs are skipped; a run whose record is removed runs again (and now passes)
    monkeypatch.setenv("STUB_FAIL", "")
    before = len(cloud.requests)
    assert eval_main(args) == 0
    assert len(cloud.requests) == before
    (out / "edge-only" / T4 / "run0" / "result.json").unlink()
    assert eval_main(args) == 0
    capsys.readouterr()
    again = json.loads((out / "edge-only" / T4 / "run0" / "result.json").read_text())
    assert again["error"] is None and again["overall_score"] == 0.5
    assert again["attempts"] == 2 and again["session_id"] == f"acebench:edge-only:{T4}:run0:a2"
    # join-only rebuilds the records from the benchmark outputs already there, e.g. after a Docker run elsewhere
    (out / "cloud-only" / T3 / "run0" / "result.json").unlink()
    assert eval_main([*args, "--join-only"]) == 0
    assert json.loads((out / "cloud-only" / T3 / "run0" / "result.json").read_text())["overall_score"] == 1.0
    assert eval_main(["eval", "report", str(out)]) == 0
    table = (out / "report.md").read_text()
    assert "| edge-only | 75.00 | 50.00 | 0.00/0.00/0.00 |" in table and "| cloud-only | 75.00 | 50.00 |" in table


def test_adapter_without_run_batch_or_docker_records_zeros(tmp_path: Path) -> None:
    task = load_task(suite_dir() / "tasks" / f"{T3}.md")
    adapter = AceBenchAdapter(suite_dir(), NullSessionMeter(), "http://gw/v1", python="/nonexistent/python")
    record = adapter.run_one(task, 0, "edge-only", tmp_path)
    assert record.overall_score == 0 and "wrote no score.json" in (record.error or "")
    assert "could not start run_batch.py" in (record.error or "")
