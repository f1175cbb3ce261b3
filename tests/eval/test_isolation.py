"""Per-run isolation: each run's workspace at ``/tmp_workspace`` in a mount namespace of its own (where
namespaces work: root or CAP_SYS_ADMIN), and the path-rewriting fallback elsewhere."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from eval.grid import GridSpec, run_grid
from eval.harness import AgentHarness, HarnessConfig
from eval.isolation import MountNamespace, PathRewriting, choose, namespace_problem
from eval.tasks import Task, load_task
from eval.tools import Workspace
from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer

TASK = '''---
id: iso_probe
name: "Isolation probe"
agent_category: "Automation"
timeout_seconds: 60
privacy_note: "none"
---
## Prompt

Write the path of the input file into /tmp_workspace/exec/out.txt.

## Automated Checks

```python
def grade(**kwargs) -> dict:
    from pathlib import Path  # hard-codes /tmp_workspace, as most of the benchmark's graders do
    out = Path("/tmp_workspace/exec/out.txt")
    warm = Path("/tmp_workspace/exec/warm.txt")
    ok = out.is_file() and out.read_text().strip() == "/tmp_workspace/exec/in.txt" and warm.is_file()
    return {"overall_score": 1.0 if ok else 0.0}
```

## Workspace Path

```
workspace/iso
```

## Warmup

```bash
echo warm > /tmp_workspace/exec/warm.txt
```
'''
# the agent's command writes a file whose *content* names /tmp_workspace: rewriting would change it
COMMAND = "echo /tmp_workspace/exec/in.txt > /tmp_workspace/exec/out.txt && pwd"


def needs_namespaces() -> None:
    problem = namespace_problem()
    if problem is not None:
        pytest.skip(f"mount namespaces unavailable here: {problem} (the fallback is tested below)")


@pytest.fixture()
def task(tmp_path: Path) -> Task:
    (tmp_path / "suite" / "tasks").mkdir(parents=True)
    (tmp_path / "suite" / "workspace" / "iso" / "exec").mkdir(parents=True)
    (tmp_path / "suite" / "workspace" / "iso" / "exec" / "in.txt").write_text("input\n")
    path = tmp_path / "suite" / "tasks" / "iso_probe.md"
    path.write_text(TASK, encoding="utf-8")
    return load_task(path)


@pytest.fixture(scope="module")
def agent() -> Iterator[ModelServer]:
    def respond(body: dict[str, object]) -> Reply:
        messages = body["messages"]
        assert isinstance(messages, list)
        if any(m.get("role") == "tool" for m in messages):
            return Reply(content="Done.")
        return Reply(content=None, tool_calls=[ToolCall("exec", json.dumps({"command": COMMAND}))])

    fake = ModelServer("agent", model="agent", responder=respond)
    with ThreadedServer(fake.app) as server:
        fake.url = server.url  # type: ignore[attr-defined]
        yield fake


def harness(agent: ModelServer, isolation: str) -> AgentHarness:
    return AgentHarness(HarnessConfig(base_url=agent.url + "/v1", model="agent", isolation=isolation))  # type: ignore[attr-defined, arg-type]


def test_parallel_runs_each_see_their_own_tmp_workspace(tmp_path: Path) -> None:
    needs_namespaces()
    ns = MountNamespace()
    processes = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        script = f"echo {name} > /tmp_workspace/marker; sleep 0.3; cat /tmp_workspace/marker; pwd"
        processes.append(subprocess.Popen(ns.wrap(["sh", "-c", script], root=tmp_path / name, cwd="/tmp_workspace"),
                                          stdout=subprocess.PIPE))
    outputs = [p.communicate(timeout=20)[0].decode().split() for p in processes]
    assert outputs == [["a", "/tmp_workspace"], ["b", "/tmp_workspace"]]
    assert (tmp_path / "a" / "marker").read_text() == "a\n" and (tmp_path / "b" / "marker").read_text() == "b\n"
    assert not Path("/tmp_workspace/marker").exists()  # the bind mounts stayed in their namespaces


def test_namespace_run_needs_no_rewriting_and_hard_coded_graders_pass(agent: ModelServer, task: Task,
                                                                       tmp_path: Path) -> None:
    needs_namespaces()
    out = tmp_path / "out"
    run_grid(GridSpec(policies=["p"], repeat=2, parallel=2, out=out), [task], lambda p: harness(agent, "auto"),
             progress=False)
    for run in (0, 1):
        result = json.loads((out / "p" / task.id / f"run{run}" / "result.json").read_text())
        assert (result["overall_score"], result["error"], result["isolation"]) == (1.0, None, "mount-namespace")
        workspace = out / "p" / task.id / f"run{run}" / "workspace" / "exec"
        assert (workspace / "out.txt").read_text() == "/tmp_workspace/exec/in.txt\n"  # not rewritten
        assert (workspace / "warm.txt").read_text() == "warm\n"  # the warm-up ran in the namespace too
    transcript = (out / "p" / task.id / "run0" / "chat.jsonl").read_text()
    assert "/tmp_workspace" in transcript and str(out) not in transcript  # pwd said /tmp_workspace


def test_fallback_rewrites_paths_and_says_so(agent: ModelServer, task: Task, tmp_path: Path) -> None:
    record = harness(agent, "rewrite").run(task, 0, tmp_path / "run")
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert (result["isolation"], result["isolation_note"]) == ("path-rewriting", "path rewriting requested")
    # the command and the warm-up were rewritten to the run's directory, so the files are there ...
    workspace = tmp_path / "run" / "workspace" / "exec"
    assert (workspace / "warm.txt").read_text() == "warm\n"
    assert (workspace / "out.txt").read_text().strip() == str(workspace / "in.txt")  # ... content rewritten too
    # ... and a grader that hard-codes /tmp_workspace cannot find them: the documented limit of the fallback
    assert record.overall_score == 0.0


def test_choose_falls_back_with_the_reason_or_refuses_when_asked_for_namespaces(tmp_path: Path) -> None:
    blocked = str(tmp_path / "file" / "mnt")
    (tmp_path / "file").write_text("not a directory")
    isolation, why = choose("auto", alias=blocked)
    assert isinstance(isolation, PathRewriting) and why and "cannot be created" in why
    with pytest.raises(RuntimeError, match="unavailable"):
        choose("namespace", alias=blocked)
    assert isinstance(choose("rewrite")[0], PathRewriting)


def test_workspace_shell_wraps_or_rewrites(tmp_path: Path) -> None:
    plain = Workspace(tmp_path)
    assert plain.shell("cat /tmp_workspace/x") == ["bash", "-c", f"cat {tmp_path.resolve()}/x"]
    wrapped = Workspace(tmp_path, wrap=lambda argv, cwd: ["ns", cwd, *argv])
    assert wrapped.shell("cat /tmp_workspace/x", tmp_path / "sub") == ["ns", "/tmp_workspace/sub", "bash", "-c",
                                                                      "cat /tmp_workspace/x"]
