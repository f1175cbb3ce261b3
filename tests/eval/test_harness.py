from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from eval.harness import AgentHarness, HarnessConfig
from eval.meter import RunCalls, SessionUsage
from eval.metrics import CloudUsage, UnitLeak
from eval.paths import suite_dir
from eval.records import load_run
from eval.tasks import load_task, load_tasks
from tests.eval.scripted import SolutionReplayer
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer

TASKS = {t.id: t for t in load_tasks(suite_dir())}
MINUTES = TASKS["ecgw_task_1_meeting_minutes"]


@pytest.fixture(scope="module")
def fake() -> Iterator[ModelServer]:
    server_fake = ModelServer("agent-model", model="agent-model", responder=SolutionReplayer(TASKS.values()))
    with ThreadedServer(server_fake.app) as server:
        server_fake.url = server.url  # type: ignore[attr-defined]
        yield server_fake


@pytest.fixture()
def model(fake: ModelServer) -> ModelServer:
    fake.reset()
    return fake


def config(model: ModelServer, **kw: object) -> HarnessConfig:
    return HarnessConfig(base_url=model.url + "/v1", model="agent-model", **kw)  # type: ignore[attr-defined, arg-type]


class RecordingMeter:
    def __init__(self) -> None:
        self.registered: list[tuple[str, dict[str, object]]] = []
        self.grades: list[tuple[str, float]] = []

    def register_units(self, session_id: str, sensitive_items: Path) -> None:
        self.registered.append((session_id, json.loads(sensitive_items.read_text(encoding="utf-8"))))

    def report_grade(self, session_id: str, score: float, *, source: str) -> None:
        self.grades.append((session_id, score))

    def session_usage(self, session_id: str, calls: RunCalls | None = None) -> SessionUsage:
        return SessionUsage(cloud=CloudUsage(1000, 600, 0, 50), cloud_cost_usd=0.002, edge_flops=3e12,
                            flops_formula="2·N·T", leaks=(UnitLeak(1.0, 0.0, "P1.email"),))


def test_solved_run_scores_1_with_session_header_and_transcript(model: ModelServer, tmp_path: Path) -> None:
    meter = RecordingMeter()
    harness = AgentHarness(config(model, policy="edge-only", experiment="exp1"), meter=meter)
    record = harness.run(MINUTES, 1, tmp_path / "run")
    assert record.error is None and record.overall_score == 1.0
    session = "exp1:edge-only:ecgw_task_1_meeting_minutes:run1"
    assert len(model.requests) == 3  # read, write, final answer
    assert all(h["x-session-id"] == session and h["x-ecgw-policy"] == "edge-only" for h in model.headers)
    assert [t["function"]["name"] for t in model.requests[0]["tools"]] == ["read", "write", "edit", "exec", "ls"]
    # the tool result of the read went back to the model
    tool_messages = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert "Project Falcon sync" in tool_messages[0]["content"]
    # units registered before the run; gateway figures in the record
    assert meter.registered[0][0] == session and meter.registered[0][1]["items"][0]["entity_id"] == "P1"
    assert record.cloud == CloudUsage(1000, 600, 0, 50) and record.edge_flops == 3e12
    assert record.leaks == (UnitLeak(1.0, 0.0, "P1.email"),)
    # the run's files: the work product, gt copied in only for grading, the record, the transcript
    run = tmp_path / "run"
    assert "## Action Items" in (run / "workspace/exec/minutes.md").read_text(encoding="utf-8")
    assert (run / "workspace/gt/sensitive_items.json").is_file()
    assert load_run(run / "result.json") == record
    result = json.loads((run / "result.json").read_text(encoding="utf-8"))
    assert result["session_id"] == session and result["steps"] == 3 and result["finish"] == "stop"
    assert result["grade_details"]["action_priya"] == 1.0
    entries = [json.loads(line) for line in (run / "chat.jsonl").read_text(encoding="utf-8").splitlines()]
    assert entries[0]["type"] == "session" and entries[0]["id"] == session
    roles = [e["message"]["role"] for e in entries[1:]]
    assert roles == ["user", "assistant", "toolResult", "assistant", "toolResult", "assistant"]
    first_call = entries[2]["message"]["content"][0]
    assert first_call["type"] == "toolCall" and first_call["name"] == "read"
    assert first_call["arguments"] == {"path": "/tmp_workspace/exec/notes.txt"}
    assert entries[3]["message"]["toolCallId"] == first_call["id"] and not entries[3]["message"]["isError"]
    assert entries[2]["message"]["stopReason"] == "toolUse" and entries[6]["message"]["stopReason"] == "stop"
    assert entries[6]["message"]["content"] == [{"type": "text", "text": "Done: the task is complete."}]
    assert entries[2]["message"]["usage"]["input"] > 0
    assert entries[4]["parentId"] == entries[3]["id"]


def test_agent_that_does_nothing_scores_low(model: ModelServer, tmp_path: Path) -> None:
    model.script(Reply(content="I won't do that."))
    record = AgentHarness(config(model)).run(TASKS["ecgw_task_3_invoice_lookup"], 0, tmp_path / "run")
    assert record.error is None and record.overall_score == 0.0


def test_model_error_is_a_recorded_zero(model: ModelServer, tmp_path: Path) -> None:
    model.script(Reply(status=500, error_message="upstream exploded"))
    record = AgentHarness(config(model)).run(MINUTES, 0, tmp_path / "run")
    assert record.overall_score == 0.0
    assert record.error == "model call failed: HTTP 500: upstream exploded"
    assert load_run(tmp_path / "run" / "result.json").error == record.error
    assert (tmp_path / "run" / "chat.jsonl").is_file()


def test_timeout_is_a_recorded_zero(model: ModelServer, tmp_path: Path) -> None:
    model.script(Reply(content="late", delay_s=3))
    record = AgentHarness(config(model, timeout_cap_s=0.5)).run(MINUTES, 0, tmp_path / "run")
    assert record.overall_score == 0.0 and record.error is not None and record.error.startswith("timeout")


def test_grader_error_is_a_recorded_zero(model: ModelServer, tmp_path: Path) -> None:
    text = MINUTES.path.read_text(encoding="utf-8").replace(
        'path = Path(workspace_path) / "exec" / "minutes.md"', 'raise ValueError("judge down")')
    suite = tmp_path / "suite" / "tasks"
    suite.mkdir(parents=True)
    (suite / MINUTES.path.name).write_text(text, encoding="utf-8")
    task = load_task(suite / MINUTES.path.name)
    record = AgentHarness(config(model)).run(task, 0, tmp_path / "run",
                                             workspace_source=MINUTES.workspace_dir())
    assert record.overall_score == 0.0 and record.error is not None
    assert record.error.startswith("grader raised") and "judge down" in record.error


def test_missing_workspace_is_a_recorded_crash(model: ModelServer, tmp_path: Path) -> None:
    record = AgentHarness(config(model)).run(MINUTES, 2, tmp_path / "run", workspace_source=tmp_path / "nope")
    assert record.overall_score == 0.0 and record.run == 2
    assert record.error is not None and record.error.startswith("run crashed: FileNotFoundError: workspace not found")
    assert not model.requests


def test_max_steps_stops_a_looping_agent(model: ModelServer, tmp_path: Path) -> None:
    from tests.fakes.model_server import ToolCall
    model.script(*[Reply(content=None, tool_calls=[ToolCall("ls", "{}")]) for _ in range(5)])
    harness = AgentHarness(config(model, max_steps=3))
    record = harness.run(MINUTES, 0, tmp_path / "run")
    assert len(model.requests) == 3 and record.error is None and record.overall_score == 0.0
    assert json.loads((tmp_path / "run" / "result.json").read_text())["finish"] == "max_steps"

