"""The whole pipeline on the project's suite: grid → real gateway (own SQLite store) → scripted fake models →
grading → summaries → report; numbers known in advance and asserted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from eval.cli import main as eval_main
from eval.grid import GridSpec, run_grid, summarize_dir
from eval.harness import AgentHarness, HarnessConfig
from eval.meter import GatewaySessionMeter
from eval.paths import suite_dir
from eval.tasks import Task, load_tasks
from gateway.app import create_app
from tests.conftest import settings_for
from tests.door import guarded_services
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer

TASKS = [t for t in load_tasks(suite_dir()) if t.id in ("ecgw_task_3_invoice_lookup", "ecgw_task_4_log_search")]


def solving_replies(task: Task) -> list[Reply]:
    data = json.loads((suite_dir() / "solutions" / f"{task.id}.json").read_text(encoding="utf-8"))
    replies = [Reply(content=None, tool_calls=[ToolCall(c["name"], json.dumps(c["arguments"]))])
               for c in data["tool_calls"]]
    return replies + [Reply(content="Done.")]


@pytest.fixture()
def gateway_url(edge: ModelServer, cloud: ModelServer, tmp_path: Path) -> Iterator[str]:
    settings = settings_for(edge.url, cloud.url, database_url=f"sqlite:///{tmp_path}/metering.db")  # type: ignore[attr-defined]
    server = ThreadedServer(create_app(settings, services=guarded_services(settings))).start()
    yield server.url
    server.stop()


def test_grid_through_gateway_and_report(gateway_url: str, edge: ModelServer, cloud: ModelServer,
                                         tmp_path: Path) -> None:
    # edge-only solves the invoice task and gives up on the log task; cloud-only solves both; 3 runs each
    for _ in range(3):
        edge.script(*solving_replies(TASKS[0]))
    for _ in range(3):
        edge.script(Reply(content="Sorry, I could not find it."))
    for task in TASKS:
        for _ in range(3):
            cloud.script(*solving_replies(task))
    meter = GatewaySessionMeter(gateway_url)

    def harness_for(policy: str) -> AgentHarness:
        return AgentHarness(HarnessConfig(base_url=gateway_url + "/v1", policy=policy, experiment="ci"),
                            meter=meter)

    out = tmp_path / "out"
    spec = GridSpec(policies=["edge-only", "cloud-only"], repeat=3, parallel=1, out=out)
    summaries = run_grid(spec, TASKS, harness_for, suite=suite_dir(), progress=False)
    edge_only, cloud_only = summaries
    assert (edge_only.completion, edge_only.pass_k, edge_only.errors) == (50.0, 50.0, 0)
    assert (cloud_only.completion, cloud_only.pass_k, cloud_only.errors) == (100.0, 100.0, 0)
    # edge-only never reached the cloud; cloud-only's tokens are what the gateway metered for its sessions
    assert edge_only.tokens.raw == edge_only.tokens.output == 0
    # every run was its own session at the gateway, metered under the policy it asked for
    import httpx
    rows = {r["group"]: r for r in httpx.get(gateway_url + "/v1/usage", params={"by": "session"}).json()["data"]}
    sessions = {(p.parts[-4], p.parts[-3], p.parts[-2]): json.loads(p.read_text())["session_id"]
                for p in out.glob("*/*/run*/result.json")}
    for task in TASKS:
        for run in range(3):
            assert rows[sessions["edge-only", task.id, f"run{run}"]]["cloud_calls"] == 0
            assert rows[sessions["edge-only", task.id, f"run{run}"]]["edge_calls"] >= 1
            assert rows[sessions["cloud-only", task.id, f"run{run}"]]["cloud_calls"] >= 1
            assert sessions["cloud-only", task.id, f"run{run}"] == f"ci:cloud-only:{task.id}:run{run}"
    # each run's grade reached the gateway as its session's outcome label
    from accounting.grades import grades_of
    from accounting.store import UsageStore

    store = UsageStore.from_url(f"sqlite:///{tmp_path}/metering.db")
    try:
        grades = grades_of(store, sessions.values())
    finally:
        store.dispose()
    assert {key: grades[sid] for key, sid in sessions.items()} == {
        key: (0.0 if key[0] == "edge-only" and key[1] == TASKS[1].id else 1.0) for key in sessions}
    records = [json.loads(p.read_text()) for p in (out / "cloud-only").glob("*/run*/result.json")]
    assert len(records) == 6
    assert all(r["grade_reported"] is True for r in records)
    raw = sum(r["cloud"]["prompt"] - r["cloud"]["cache_read"] for r in records)
    assert raw > 0 and cloud_only.tokens.raw == pytest.approx(raw / 3 / 1e6)
    assert cloud_only.tokens.output == pytest.approx(sum(r["cloud"]["output"] for r in records) / 3 / 1e6)
    # the cloud saw the log task's e-mail addresses only as placeholders
    sent = json.dumps(cloud.requests)
    assert "grace.adeyemi@example.com" not in sent and "read" in sent

    # resumable: a second grid runs nothing new
    before = len(edge.requests) + len(cloud.requests)
    again = run_grid(spec, TASKS, harness_for, suite=suite_dir(), progress=False)
    assert len(edge.requests) + len(cloud.requests) == before
    assert [s.completion for s in again] == [50.0, 100.0]

    # the report command rebuilds the table from the records
    assert eval_main(["eval", "report", str(out), "--title", "CI"]) == 0
    table = (out / "report.md").read_text(encoding="utf-8")
    assert "| edge-only | 50.00 | 50.00 | 0.00/0.00/0.00 |" in table
    assert "| cloud-only | 100.00 | 100.00 |" in table
    assert "| cloud-only | 100.00 | 100.00 | 0.00/" not in table  # its metered cloud tokens show
    assert (out / "completion_vs_cost.png").read_bytes().startswith(b"\x89PNG")
    assert (out / "completion_vs_exposure.png").is_file() and (out / "report.html").is_file()


def test_failed_run_is_redone_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "out"
    calls: list[tuple[str, int]] = []

    class Harness:
        def run(self, task: Task, run: int, run_dir: Path) -> None:
            calls.append((task.id, run))
            run_dir.mkdir(parents=True, exist_ok=True)
            if not (task.id == TASKS[1].id and run == 1 and len(calls) < 6):  # one run "dies" without a record
                (run_dir / "result.json").write_text(json.dumps(
                    {"task_id": task.id, "run": run, "overall_score": 1.0}), encoding="utf-8")

    spec = GridSpec(policies=["p"], repeat=3, out=out)
    run_grid(spec, TASKS, lambda policy: Harness(), progress=False)  # type: ignore[arg-type, return-value]
    assert len(calls) == 6
    summary = run_grid(spec, TASKS, lambda policy: Harness(), progress=False)[0]  # type: ignore[arg-type, return-value]
    assert calls[6:] == [(TASKS[1].id, 1)]
    assert summary.completion == 100.0
    assert summarize_dir(out)[0].pass_k == 100.0


def test_cli_tasks_lists_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert eval_main(["eval", "tasks", str(suite_dir())]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("12 tasks, 12 privacy-annotated")


def test_cli_tasks_reports_malformed_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.md").write_text("---\nid: x\n---\n", encoding="utf-8")
    assert eval_main(["eval", "tasks", str(tmp_path)]) == 1
    assert "bad.md" in capsys.readouterr().err


def test_cli_report_without_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert eval_main(["eval", "report", str(tmp_path)]) == 1
    assert "ecgw eval run" in capsys.readouterr().err
