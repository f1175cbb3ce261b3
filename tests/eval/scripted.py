"""A scripted agent for the fake model server: it replays the suite's reference solutions, one tool call per step."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from eval.paths import suite_dir
from eval.tasks import Task
from tests.fakes.model_server import Reply, ToolCall


class SolutionReplayer:
    """``ModelServer(responder=SolutionReplayer(tasks))``: finds the task by its prompt, answers its next step."""

    def __init__(self, tasks: Iterable[Task], *, solve: set[str] | None = None) -> None:
        self.by_prompt: dict[str, list[dict[str, Any]]] = {}
        for task in tasks:
            if solve is not None and task.id not in solve:
                self.by_prompt[task.prompt] = []
                continue
            data = json.loads((suite_dir() / "solutions" / f"{task.id}.json").read_text(encoding="utf-8"))
            self.by_prompt[task.prompt] = list(data["tool_calls"])

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        calls = self.by_prompt.get(prompt, [])
        step = sum(1 for m in messages if m["role"] == "assistant")
        if step < len(calls):
            call = calls[step]
            return Reply(content=None, tool_calls=[ToolCall(call["name"], json.dumps(call["arguments"]))])
        return Reply(content="Done: the task is complete.")
