"""One short task of the suite against the real SmolLM2 edge (llama-cpp server, `make test` starts it), through a
real gateway with its own metering and audit, under edge-only and sketch (the plan from the fake cloud).

SmolLM2-135M will rarely solve the task; the test asserts a complete, consistent run and report, not a score."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from eval.cli import main as eval_main
from eval.grid import summary_from_json
from eval.paths import suite_dir
from gateway.app import create_app
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.fakes.model_server import ModelServer
from tests.fakes.threaded import ThreadedServer
from tests.real_parts import LLAMA_COMPAT, llama_url

pytestmark = pytest.mark.real_model

TASK = "ecgw_task_3_invoice_lookup"
POLICIES = ["edge-only", "sketch"]


@pytest.fixture()
def gateway_url(cloud: ModelServer, tmp_path: Path) -> Iterator[str]:
    edge = {"base_url": llama_url(), "model": "smollm2", "read_timeout_s": 120, "compat": LLAMA_COMPAT}
    settings = settings_for("", cloud.url, edge=edge, database_url=f"sqlite:///{tmp_path}/ecgw.sqlite3",  # type: ignore[attr-defined]
                            privacy={"layers": {"ner": False}},
                            accounting={"prices": {"gpt-test": {"input": 2.5, "cache_read": 0.25, "output": 15.0}},
                                        "edge_models": {"smollm2": {"params": 1.35e8}}})
    server = ThreadedServer(create_app(settings, services=guarded_services(settings))).start()
    yield server.url
    server.stop()


def test_one_task_against_the_real_edge_gives_a_complete_consistent_report(gateway_url: str, tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "grid"
    code = eval_main(["eval", "run", "--suite", str(suite_dir()), "--policies", ",".join(POLICIES), "--tasks", TASK,
                      "--repeat", "1", "--out", str(out), "--gateway-url", gateway_url, "--experiment", "real",
                      "--max-steps", "3", "--max-tokens", "48", "--temperature", "0", "--timeout-cap", "150",
                      "--no-progress"])
    assert code == 0
    assert eval_main(["eval", "report", str(out), "--title", "SmolLM2 edge"]) == 0
    capsys.readouterr()
    usage = {r["group"]: r for r in httpx.get(gateway_url + "/v1/usage", params={"by": "session"}).json()["data"]}
    summaries = {s["policy"]: summary_from_json(s)
                 for s in json.loads((out / "summaries.json").read_text(encoding="utf-8"))}
    for policy in POLICIES:
        path = out / policy / TASK / "run0"
        record = json.loads((path / "result.json").read_text(encoding="utf-8"))
        # complete: a score in [0, 1] (0 with a reason when the run failed), its transcript, its usage, its privacy
        assert 0 <= record["overall_score"] <= 1
        assert record["error"] is None or (record["overall_score"] == 0 and record["error"])
        lines = [json.loads(line) for line in (path / "chat.jsonl").read_text(encoding="utf-8").splitlines()]
        assert lines[0]["type"] == "session" and any(e.get("message", {}).get("role") == "user" for e in lines)
        session = usage[record["session_id"]]
        assert session["edge_calls"] >= 1 and record["edge_flops"] > 0
        if record["error"] is None:
            assert sum(1 for e in lines if e.get("message", {}).get("role") == "assistant") == record["steps"]
        assert record["privacy"]["units_known"] == 6 and record["leaks"] is not None
        # consistent: the summary is the record, the gateway's metering is the record
        summary = summaries[policy]
        assert (summary.tasks, summary.runs) == (1, 1)
        assert summary.completion == pytest.approx(100 * record["overall_score"])
        assert summary.pass_k == (100.0 if record["overall_score"] >= 0.7 else 0.0)
        assert summary.edge_pflops == pytest.approx(record["edge_flops"] / 1e15)
        assert summary.privacy_exposure is not None and 0 <= summary.privacy_exposure <= 100
        assert session["cloud_calls"] == record["privacy"]["cloud_calls"]
    assert usage[f"real:edge-only:{TASK}:run0"]["cloud_calls"] == 0
    assert summaries["edge-only"].privacy_exposure == 0.0 and summaries["edge-only"].cost_usd == 0.0
    assert usage[f"real:sketch:{TASK}:run0"]["cloud_calls"] == 1  # the plan, once
    assert summaries["sketch"].cost_usd > 0
    table = (out / "report.md").read_text(encoding="utf-8")
    assert "| Policy | Completion | Pass^1 |" in table
    assert all(f"| {p} | " in table for p in POLICIES) and "2*N*" in table
    assert (out / "completion_vs_exposure.png").read_bytes().startswith(b"\x89PNG")
