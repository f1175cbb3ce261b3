"""CI: the built-in harness runs the project's suite end to end under every policy through a real gateway (own
SQLite metering and audit) against scripted fake models whose outcomes are known in advance (``ci_models``);
``ecgw eval run`` writes one record per run, ``ecgw eval report`` the table and plots; the test asserts the
table's numbers: completion and Pass^3 from the scenario, cloud calls per run, metered tokens, cost and edge
PFLOPs from the records, and privacy exposure from the gateway's audit, checked against what the fake cloud
actually received.

``ECGW_EVAL_CI_TABLE=path.md`` keeps the report table (for a closing note)."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from eval.cli import main as eval_main
from eval.grid import summary_from_json
from eval.metrics import PolicySummary, completion, pass_k
from eval.paths import suite_dir
from eval.tasks import load_tasks
from eval.units import load_sensitive_items
from gateway.app import create_app
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.eval.ci_models import Scenario, cloud_calls_expected
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer

POLICIES = ["edge-only", "cloud-only", "task-routing", "step-routing", "sketch", "advisor", "delegate",
            "random-matched", "sensitivity-routing"]
EXPERIMENT = "ci"
RUNS = 3
T1, T3, T4, T5 = ("ecgw_task_1_meeting_minutes", "ecgw_task_3_invoice_lookup", "ecgw_task_4_log_search",
                  "ecgw_task_5_secret_scan")
TASKS = [t for t in load_tasks(suite_dir()) if t.id in (T1, T3, T4, T5)]
# The edge solves the office and invoice tasks alone; the log search and the secret scan are hard for it.
SCENARIO = Scenario(TASKS, edge_solves={T1, T3}, judge={T1: 2, T3: 6, T4: 8, T5: 3}, overconfident={T5},
                    plan_helps={T4}, advice_useless={T5})
# The gateway sends contact details (e-mails, phones) raw and audited, pseudonymises everything else.
PRIVACY = {"actions": {"contact": "audit"}, "layers": {"ner": False}}
PRICES = {"gpt-test": {"input": 2.5, "cache_read": 0.25, "output": 15.0}}  # the paper's GPT-5.4 prices
EDGE_MODELS = {"edge-model": {"params": 1.7e9}}  # SmolLM2-1.7B
KNOBS = {"task-routing": {"scorer": "edge-judge", "threshold": 0.5},
         "step-routing": {"mode": "inline", "tau": 1.5},
         "random-matched": {"p": SCENARIO.random_p}}

EXPECTED_ROWS = [  # the deterministic outcome (runs in order, one at a time, so cache hits repeat too)
    '| edge-only | 50.00 | 50.00 | 0.00/0.00/0.00 | 0.00 | 5.0e-03 | 0.00 |',
    '| cloud-only | 100.00 | 100.00 | 2.2e-03/1.7e-03/1.5e-04 | 8.2e-03 | 0.00 | 27.86 |',
    '| task-routing | 75.00 | 75.00 | 8.8e-04/9.3e-04/5.0e-05 | 3.2e-03 | 2.6e-03 | 10.00 |',
    '| step-routing | 75.00 | 75.00 | 4.4e-04/5.1e-04/2.6e-05 | 1.6e-03 | 0.01 | 10.00 |',
    '| sketch | 75.00 | 75.00 | 1.3e-04/2.9e-04/7.2e-05 | 1.5e-03 | 6.6e-03 | 0.00 |',
    '| advisor | 75.00 | 75.00 | 1.1e-04/3.3e-04/4.2e-05 | 9.8e-04 | 9.2e-03 | 10.00 |',
    '| delegate | 100.00 | 100.00 | 8.8e-04/9.9e-04/5.4e-05 | 3.2e-03 | 8.3e-03 | 10.00 |',
    '| random-matched | 58.33 | 50.00 | 7.4e-04/1.1e-03/6.1e-05 | 3.0e-03 | 1.9e-03 | 11.90 |',
    '| sensitivity-routing | 100.00 | 100.00 | 1.3e-03/1.7e-03/8.4e-05 | 5.0e-03 | 2.1e-03 | 10.00 |',
]


@pytest.fixture()
def gateway_url(edge: ModelServer, cloud: ModelServer, tmp_path: Path) -> Iterator[str]:
    edge._responder, cloud._responder = SCENARIO.edge, SCENARIO.cloud
    settings = settings_for(edge.url, cloud.url,  # type: ignore[attr-defined]
                            database_url=f"sqlite:///{tmp_path}/ecgw.sqlite3", privacy=PRIVACY,
                            accounting={"prices": PRICES, "edge_models": EDGE_MODELS},
                            policy={"default": "edge-only", "knobs": KNOBS}, sessions={"store": "memory"})
    server = ThreadedServer(create_app(settings, services=guarded_services(settings))).start()
    yield server.url
    server.stop()
    edge._responder = cloud._responder = None


def _records(out: Path, policy: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((out / policy).glob("*/run*/result.json"))]


def test_suite_under_every_policy_report_numbers(gateway_url: str, cloud: ModelServer, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "grid"
    started = time.monotonic()
    code = eval_main(["eval", "run", "--suite", str(suite_dir()), "--policies", ",".join(POLICIES),
                      "--tasks", ",".join(t.id for t in TASKS), "--repeat", str(RUNS), "--parallel", "1",
                      "--out", str(out), "--gateway-url", gateway_url, "--experiment", EXPERIMENT, "--no-progress"])
    grid_s = time.monotonic() - started
    assert code == 0
    capsys.readouterr()
    assert eval_main(["eval", "report", str(out), "--title", "ecgw CI: suite × every policy"]) == 0
    printed = capsys.readouterr().out
    summaries = {s["policy"]: summary_from_json(s)
                 for s in json.loads((out / "summaries.json").read_text(encoding="utf-8"))}
    assert list(summaries) == POLICIES
    ids = [t.id for t in TASKS]

    # completion and Pass^3: exactly what the scenario says each policy achieves on each task and run
    for policy, summary in summaries.items():
        expected = SCENARIO.expected_scores(policy, EXPERIMENT, RUNS)
        assert summary.errors == 0, policy
        assert summary.completion == pytest.approx(completion(ids, expected, RUNS)), policy
        assert summary.pass_k == pytest.approx(pass_k(ids, expected, RUNS)), policy
        for record in _records(out, policy):
            assert record["overall_score"] == expected[record["task_id"]][record["run"]], (policy, record["task_id"])
            # every request settled: its usage — probes, plans, advice, delegation included — read complete
            assert record["incomplete"] == [], (policy, record["task_id"], record["incomplete"])
    assert [summaries[p].completion for p in POLICIES[:7]] == [50.0, 100.0, 75.0, 75.0, 75.0, 75.0, 100.0]

    # cloud calls per run, as the gateway's audit counted them, are what each policy must make
    usage = {r["group"]: r for r in httpx.get(gateway_url + "/v1/usage", params={"by": "session"}).json()["data"]}
    for policy in POLICIES:
        for record in _records(out, policy):
            calls = record["privacy"]["cloud_calls"]
            assert calls == usage[record["session_id"]]["cloud_calls"], record["session_id"]
            expected_calls = cloud_calls_expected(SCENARIO, policy, [record["task_id"]])
            if expected_calls is not None:
                assert calls == expected_calls, (policy, record["task_id"])

    # tokens, cost and edge PFLOPs are the metered figures, summed over tasks and averaged over runs
    for policy, summary in summaries.items():
        records = _records(out, policy)
        raw = sum(r["cloud"]["prompt"] - r["cloud"]["cache_read"] - r["cloud"]["cache_write"] for r in records)
        assert summary.tokens.raw == pytest.approx(raw / RUNS / 1e6)
        assert summary.tokens.output == pytest.approx(sum(r["cloud"]["output"] for r in records) / RUNS / 1e6)
        assert summary.cost_usd == pytest.approx(sum(r["cloud_cost_usd"] for r in records) / RUNS)
        assert summary.edge_pflops == pytest.approx(sum(r["edge_flops"] for r in records) / RUNS / 1e15)
        assert (summary.cost_usd > 0) == (policy != "edge-only")
        assert summary.edge_pflops is not None and (summary.edge_pflops > 0) == (policy != "cloud-only")
        assert summary.flops_formula == ("" if policy == "cloud-only" else "2*N*(raw_input+output)"), policy
    edge_only = summaries["edge-only"]
    assert (edge_only.tokens.raw, edge_only.tokens.cache_read, edge_only.tokens.output) == (0, 0, 0)

    # privacy exposure from the audit: every policy measured; raw contact details reached the cloud exactly
    # for the units the audit calls exposed (both ways: a unit the cloud received raw is reported exposed), and no
    # pseudonymised unit's value ever did
    sent = json.dumps(cloud.requests, ensure_ascii=False)
    values = {}
    for task in TASKS:
        for item in load_sensitive_items(task.workspace_dir() / "gt" / "sensitive_items.json"):
            for f in item.fields:
                values[(task.id, f"{item.entity_id}.{f.field}")] = (f.value, f.dimension)
    exposed: set[tuple[str, str]] = set()
    for policy in POLICIES:
        for record in _records(out, policy):
            assert record["leaks"] is not None and len(record["leaks"]) > 0
            exposed |= {(record["task_id"], u["unit_id"]) for u in record["leaks"] if u["leak"] == 1.0}
            if policy == "edge-only":
                assert record["privacy"]["cloud_calls"] == 0 and not record["privacy"]["exposed"]
    owners = {value: sum(v == value for v, _ in values.values()) for value, _ in values.values()}
    for key, (value, dimension) in values.items():
        if dimension != "contact":
            assert value not in sent, key
            assert key not in exposed, key
        elif owners[value] == 1:  # a value of one task only: what the cloud received says whether it left
            assert (key in exposed) == (value in sent), key
        elif key in exposed:
            assert value in sent, key
    assert exposed, "the scenario must expose some contact details"
    assert summaries["edge-only"].privacy_exposure == 0.0
    cloud_only = summaries["cloud-only"].privacy_exposure
    assert cloud_only is not None and cloud_only > 0
    for policy in POLICIES:
        value = summaries[policy].privacy_exposure
        assert value is not None and 0 <= value <= cloud_only, policy

    # the report: Markdown, HTML and both plots, the same numbers as the summaries
    table = (out / "report.md").read_text(encoding="utf-8")
    assert printed.startswith(table)  # `ecgw eval report` prints the Markdown it wrote
    for policy in POLICIES:
        assert _row(summaries[policy]) in table
    assert "Pass^3" in table and "Privacy Exp." in table
    assert [line for line in table.splitlines() if line.startswith("| ") and "Policy" not in line] == EXPECTED_ROWS
    assert (out / "report.html").read_text(encoding="utf-8").count("<tr>") == len(POLICIES) + 1
    for png in ("completion_vs_cost.png", "completion_vs_exposure.png"):
        assert (out / png).read_bytes().startswith(b"\x89PNG")
    keep = os.environ.get("ECGW_EVAL_CI_TABLE")
    if keep:
        Path(keep).write_text(table + f"\n(grid wall time {grid_s:.1f} s)\n", encoding="utf-8")
        shutil.copy(out / "completion_vs_cost.png", Path(keep).with_suffix(".cost.png"))


def _row(summary: PolicySummary) -> str:
    from eval.report import row

    return "| " + " | ".join(row(summary)) + " |"
