"""Scripted edge and cloud models for the CI pipeline: every policy's outcome on every task is known in advance.

Both models replay the suite's reference solutions (``eval_suite/solutions``), one tool call per agent step. The
edge is *capable* on some tasks and gives up on the others (``Sorry``) unless the gateway's policy helps it:

- task-routing: the edge judge rates each task (``judge``); ≥ 5 of 10 sends the session to the cloud.
- step-routing: on hard tasks the edge's first token is uncertain (entropy ln 20 > τ) so every step escalates,
  except on ``overconfident`` tasks, where it answers ``Sorry`` confidently.
- sketch: the cloud's plan makes the edge solve the hard tasks in ``plan_helps``.
- advisor: on a hard task the edge asks the advisor once per step and the advice makes it solve that step;
  on ``advice_useless`` tasks it does not ask and gives up.
- delegate: on a hard task the edge delegates every step; the cloud solves it.
- random-matched: a step goes to the cloud by the session's coin; a hard task passes only when every step of its
  solution landed on the cloud.

The cloud solves every task. The expected table follows from these sets (``expected_scores``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eval.paths import suite_dir
from eval.tasks import Task
from router.policies.random_matched import RandomMatched
from tests.fakes.model_server import Reply, ToolCall

CLIENT_TOOLS = {"read", "write", "edit", "exec", "ls"}
CONFIDENT = {"Working": 0.97, "Let": 0.03}
UNSURE = {f"t{i}": 1.0 for i in range(20)}  # entropy ln 20 ≈ 3.0 nats > τ = 1.5
ADVICE = "advice: look at the files first, then write the answer file exactly as asked."
PLAN = "1. Inspect the input files with exec or read. 2. Write the requested output file. 3. Check it."
GIVE_UP = "Sorry, I could not finish this task."
DONE = "Done: the task is complete."


def solution(task_id: str) -> list[dict[str, Any]]:
    data = json.loads((suite_dir() / "solutions" / f"{task_id}.json").read_text(encoding="utf-8"))
    calls: list[dict[str, Any]] = data["tool_calls"]
    return calls


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def agent_step(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many of the client's tool steps are done: assistant messages calling the agent's own tools (the
    gateway's injected advisor/delegate calls do not count)."""
    return sum(1 for m in messages if m.get("role") == "assistant"
               and any((c.get("function") or {}).get("name") in CLIENT_TOOLS for c in m.get("tool_calls") or ()))


def _tools(body: Mapping[str, Any]) -> set[str]:
    return {str((t.get("function") or {}).get("name")) for t in body.get("tools") or ()}


@dataclass
class Scenario:
    tasks: Sequence[Task]
    edge_solves: set[str]
    judge: dict[str, int]  # task id → the edge judge's 1-10 rating
    overconfident: set[str] = field(default_factory=set)
    plan_helps: set[str] = field(default_factory=set)
    advice_useless: set[str] = field(default_factory=set)
    random_p: float = 0.5

    def __post_init__(self) -> None:
        self.solutions = {t.id: solution(t.id) for t in self.tasks}
        # the prompt's first line identifies a task even after pseudonymisation (it holds no listed value)
        self.keys = {t.id: t.prompt.splitlines()[0][:60] for t in self.tasks}

    # --- who is asking about what ---------------------------------------------------------------------------
    def task_of(self, text: str) -> str:
        found = [task_id for task_id, key in self.keys.items() if key in text]
        if len(found) != 1:
            raise AssertionError(f"scripted model cannot tell the task from {text[:120]!r}: {found}")
        return found[0]

    def _replay(self, task_id: str, step: int, top: dict[str, float] | None) -> Reply:
        calls = self.solutions[task_id]
        if step < len(calls):
            call = calls[step]
            return Reply(content="Working on it.", tool_calls=[ToolCall(call["name"], json.dumps(call["arguments"]))],
                         first_token_top=top)
        return Reply(content=DONE, first_token_top=top)

    # --- the two models -------------------------------------------------------------------------------------
    def edge(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        system = _text(messages[0].get("content")) if messages else ""
        if system.startswith("Rate how difficult"):
            return Reply(content=str(self.judge[self.task_of(_text(messages[-1].get("content")))]))
        task_id = self.task_of(next(_text(m.get("content")) for m in messages if m.get("role") == "user"))
        step = agent_step(messages)
        if task_id in self.edge_solves:
            return self._replay(task_id, step, CONFIDENT)
        tools = _tools(body)
        if "ask_cloud_advisor" in tools and task_id not in self.advice_useless:
            last = messages[-1]
            if last.get("role") == "tool" and _text(last.get("content")).startswith("advice:"):
                return self._replay(task_id, step, CONFIDENT)
            return Reply(content=None, tool_calls=[ToolCall("ask_cloud_advisor", '{"question": "how?"}')])
        if "delegate_to_cloud" in tools:
            return Reply(content=None, tool_calls=[ToolCall("delegate_to_cloud", '{"reason": "too hard"}')])
        if "Plan for this task" in system and task_id in self.plan_helps:
            return self._replay(task_id, step, CONFIDENT)
        return Reply(content=GIVE_UP, first_token_top=CONFIDENT if task_id in self.overconfident else UNSURE)

    def cloud(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        system = _text(messages[0].get("content")) if messages else ""
        if system.startswith("You plan"):
            return Reply(content=PLAN)
        if system.startswith("You advise"):
            return Reply(content=ADVICE)
        task_id = self.task_of(next(_text(m.get("content")) for m in messages if m.get("role") == "user"))
        return self._replay(task_id, agent_step(messages), None)

    # --- what the table must say ----------------------------------------------------------------------------
    def passes(self, policy: str, task_id: str, session_id: str) -> bool:
        if task_id in self.edge_solves or policy in ("cloud-only", "delegate"):
            return True
        return {
            "edge-only": False,
            "task-routing": self.judge[task_id] >= 5,
            "step-routing": task_id not in self.overconfident,
            "sketch": task_id in self.plan_helps,
            "advisor": task_id not in self.advice_useless,
            # the cloud answers every step whose context holds neither special categories nor secrets: no hard
            # task's context does (the secret scan's solution lists files, `grep -l`, and never reads a value)
            "sensitivity-routing": True,
            "random-matched": all(RandomMatched.coin("", session_id, i) < self.random_p
                                  for i in range(len(self.solutions[task_id]))),
        }[policy]

    def expected_scores(self, policy: str, experiment: str, runs: int) -> dict[str, list[float]]:
        return {t.id: [1.0 if self.passes(policy, t.id, f"{experiment}:{policy}:{t.id}:run{r}") else 0.0
                       for r in range(runs)] for t in self.tasks}


def cloud_calls_expected(scenario: Scenario, policy: str, task_ids: Iterable[str]) -> int | None:
    """Cloud calls per run of the deterministic policies (None where coins decide)."""
    total = 0
    for task_id in task_ids:
        steps = len(scenario.solutions[task_id]) + 1  # the solution's tool steps and the final answer
        hard = task_id not in scenario.edge_solves
        total += {
            "edge-only": 0,
            "cloud-only": steps,
            "task-routing": steps if scenario.judge[task_id] >= 5 else 0,
            "step-routing": steps if hard and task_id not in scenario.overconfident else 0,
            "sketch": 1,  # the plan, once per session
            "advisor": steps if hard and task_id not in scenario.advice_useless else 0,
            "delegate": steps if hard else 0,
        }.get(policy, -10**9)
    return total if total >= 0 else None
