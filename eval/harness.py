"""The built-in harness: one task run = fresh workspace → (warmup) → OpenAI tool-calling agent loop through the
gateway → OpenClaw transcript → ``gt/`` copied in → ``grade()`` in a subprocess → the grade reported to the gateway
(``PUT /v1/sessions/{id}/grade``) → one ``RunRecord`` on disk.

Every attempt of a run has its own session id (``eval.attempts``), sent as ``X-Session-Id`` on every model call
(and its policy, when set, as ``X-ECGW-Policy``). The harness keeps the ``x-ecgw-request-id`` of every response and
reads the usage of exactly those requests once the gateway has them all (``eval.meter``), so a redo, a resume or
a multi-worker gateway never changes what a run is charged; what cannot be read is marked incomplete. A crash, a model error, a timeout or a grader error is recorded as a score of 0 with the
reason — never a lost run.

Isolation (``eval.isolation``): where mount namespaces work (root or CAP_SYS_ADMIN), each run's workspace is
bind-mounted at ``/tmp_workspace`` in a namespace of its own, and the agent's commands, the warm-up and the
grader run there, so parallel runs never see each other and nothing is rewritten. Elsewhere the fallback keeps
the workspace an ordinary directory and rewrites ``/tmp_workspace`` in tool paths, commands and warm-up lines to
it; graders then get the real directory as ``workspace_path`` (graders that hard-code ``/tmp_workspace`` need a
namespace or the official Docker harness). The record says which was used, and why not namespaces.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai

from eval import attempts
from eval.grading import run_grader
from eval.isolation import Isolation, Mode, PathRewriting, choose
from eval.meter import NullSessionMeter, RunCalls, SessionMeter, SessionUsage
from eval.metrics import RunRecord
from eval.records import save_run
from eval.tasks import Task
from eval.tools import DEFAULT_ALIAS, TOOL_SPECS, Workspace, Wrap
from eval.transcript import Transcript

SYSTEM_PROMPT = (
    "You are a careful assistant working in the workspace {alias}. Use the tools read, write, edit, exec and ls "
    "to inspect and change files there. When the task is done, answer with a short final message and no tool "
    "call.")


@dataclass(frozen=True)
class HarnessConfig:
    base_url: str  # the gateway's OpenAI base URL, ending in /v1
    api_key: str = "ecgw-eval"
    model: str = "ecgw"
    policy: str | None = None
    experiment: str = "eval"
    max_steps: int = 40
    timeout_cap_s: float | None = None  # caps each task's own timeout_seconds
    request_timeout_s: float = 300.0
    grader_timeout_s: float = 300.0
    grader_env: Mapping[str, str] = field(default_factory=dict)  # the judge endpoint, PATH, …
    temperature: float | None = None
    max_tokens: int | None = None  # per model call; None: the gateway's / model's default
    isolation: Mode = "auto"  # auto: a mount namespace per run when possible, else path rewriting


class RunTimeout(Exception):
    pass


ClientFactory = Callable[[HarnessConfig, str], openai.OpenAI]


def default_client(config: HarnessConfig, session_id: str) -> openai.OpenAI:
    headers = {"X-Session-Id": session_id}
    if config.policy:
        headers["X-ECGW-Policy"] = config.policy
    return openai.OpenAI(base_url=config.base_url, api_key=config.api_key, default_headers=headers,
                         max_retries=0, timeout=config.request_timeout_s)


class AgentHarness:
    def __init__(self, config: HarnessConfig, *, meter: SessionMeter | None = None,
                 client_factory: ClientFactory = default_client, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.meter = meter or NullSessionMeter()
        self.client_factory = client_factory
        self.clock = clock

    def session_id(self, task: Task, run: int) -> str:
        """The run's stable name; each attempt's session id extends it (``eval.attempts``)."""
        return f"{self.config.experiment}:{self.config.policy or 'default'}:{task.id}:run{run}"

    # ------------------------------------------------------------------------------------------------------------

    def run(self, task: Task, run: int, run_dir: Path, *, workspace_source: Path | None = None) -> RunRecord:
        """Run ``task`` once in ``run_dir`` (created; an earlier attempt's files replaced, its ledger kept) and
        write ``result.json`` there."""
        started = self.clock()
        attempt = attempts.begin(run_dir, self.session_id(task, run))
        session_id = attempt.session_id
        calls = RunCalls()
        source = workspace_source or task.workspace_dir()
        root = run_dir / "workspace"
        transcript = Transcript(session_id, cwd=DEFAULT_ALIAS, model=self.config.model)
        extra: dict[str, Any] = {"session_id": session_id, "run_name": self.session_id(task, run),
                                 "policy": self.config.policy, "experiment": self.config.experiment, "steps": 0}
        error: str | None = None
        score = 0.0
        details: Mapping[str, Any] = {}
        warmup: subprocess.Popen[bytes] | None = None
        isolation: Isolation = PathRewriting()
        try:
            isolation, why = choose(self.config.isolation)
            extra.update(isolation=isolation.name, isolation_note=why)
            if not source.is_dir():
                raise FileNotFoundError(f"workspace not found at {source} (AceBench's workspaces are a separate "
                                        "download; pass its directory)")
            shutil.copytree(source, root, ignore=shutil.ignore_patterns("gt"))
            workspace = Workspace(root, exec_timeout_s=min(120.0, self._timeout(task)),
                                  wrap=_wrapper(isolation, root))
            units = source / "gt" / "sensitive_items.json"
            if units.is_file():
                self.meter.register_units(session_id, units)
            warmup = self._warmup(task, workspace, run_dir)
            extra["steps"], extra["finish"] = self._agent_loop(task, workspace, transcript, session_id, calls,
                                                               started + self._timeout(task))
        except RunTimeout as exc:
            error = str(exc)
        except openai.APIStatusError as exc:
            error = f"model call failed: HTTP {exc.status_code}: {_message(exc)}"
        except openai.APIError as exc:
            error = f"model call failed: {type(exc).__name__}: {exc}"
        except Exception as exc:  # a crash of the harness or the workspace is a recorded 0, not a lost run
            error = f"run crashed: {type(exc).__name__}: {exc}"
        finally:
            _stop(warmup)
        transcript_path = run_dir / "chat.jsonl"
        transcript.write(transcript_path)
        if error is None:
            try:
                _install_ground_truth(source / "gt", root / "gt")
                wrap = _wrapper(isolation, root)
                outcome = run_grader(task.grade_source, workspace_path=DEFAULT_ALIAS if wrap else str(root),
                                     transcript=transcript.entries, timeout_s=self.config.grader_timeout_s,
                                     env=self._grader_env(), cwd=run_dir, filename=str(task.path),
                                     wrap=(lambda argv: wrap(argv, str(run_dir.resolve()))) if wrap else None)
                score, details, error = outcome.score, outcome.details, outcome.error
            except Exception as exc:  # grading that cannot happen is a recorded 0, not a lost run
                error = f"grading failed: {type(exc).__name__}: {exc}"
        usage = self._usage(session_id, calls)
        final = 0.0 if error else score
        try:  # the gateway keeps it as the session's outcome label; a failure to tell it never loses the run
            self.meter.report_grade(session_id, final, source=f"ecgw eval:{task.id}")
            extra["grade_reported"] = True
        except Exception as exc:
            extra["grade_reported"] = f"{type(exc).__name__}: {exc}"
        record = RunRecord(task_id=task.id, run=run, overall_score=final, error=error,
                           cloud=usage.cloud, cloud_cost_usd=usage.cloud_cost_usd, edge_flops=usage.edge_flops,
                           leaks=usage.leaks, attempts=attempt.number, incomplete=usage.incomplete,
                           shadow_calls=usage.shadow_calls, shadow_cloud=usage.shadow_cloud,
                           shadow_cost_usd=usage.shadow_cost_usd)
        extra.update(grade_details=dict(details), flops_formula=usage.flops_formula, privacy=usage.privacy,
                     requests=len(calls.request_ids),
                     wall_s=round(self.clock() - started, 3), transcript=str(transcript_path))
        save_run(run_dir / "result.json", record, extra)
        return record

    # ------------------------------------------------------------------------------------------------------------

    def _timeout(self, task: Task) -> float:
        cap = self.config.timeout_cap_s
        return float(task.timeout_seconds) if cap is None else min(float(task.timeout_seconds), cap)

    def _grader_env(self) -> dict[str, str]:
        import os

        return {**os.environ, **self.config.grader_env}

    def _usage(self, session_id: str, calls: RunCalls) -> SessionUsage:
        try:
            return self.meter.session_usage(session_id, calls)
        except Exception as exc:  # the score stands; the figures are marked missing, never shown as zero
            return SessionUsage(incomplete=(f"usage not read: {type(exc).__name__}: {exc}",))

    def _warmup(self, task: Task, workspace: Workspace, run_dir: Path) -> subprocess.Popen[bytes] | None:
        if not task.warmup_commands:
            return None
        with (run_dir / "warmup.log").open("wb") as log:
            process = subprocess.Popen(workspace.shell(task.warmup), cwd=workspace.root,
                                       stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True, env=workspace.env)
        try:
            process.wait(timeout=min(120.0, self._timeout(task)))
        except subprocess.TimeoutExpired:
            pass  # its background services keep running; the process group is stopped after the run
        return process

    def _agent_loop(self, task: Task, workspace: Workspace, transcript: Transcript, session_id: str,
                    calls_seen: RunCalls, deadline: float) -> tuple[int, str]:
        client = self.client_factory(self.config, session_id)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT.format(alias=workspace.alias)},
            {"role": "user", "content": task.prompt}]
        transcript.user(task.prompt)
        for step in range(1, self.config.max_steps + 1):
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise RunTimeout(f"timeout: the task's {self._timeout(task):g} s ran out after {step - 1} steps")
            kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages, "tools": TOOL_SPECS,
                                      "timeout": min(remaining, self.config.request_timeout_s)}
            if self.config.temperature is not None:
                kwargs["temperature"] = self.config.temperature
            if self.config.max_tokens is not None:
                kwargs["max_tokens"] = self.config.max_tokens
            try:
                raw = client.chat.completions.with_raw_response.create(**kwargs)
            except openai.APIStatusError as exc:
                _note_request(calls_seen, exc.response.headers.get(REQUEST_ID))
                raise
            except openai.APIError as exc:  # no response: a timeout or a connection error
                calls_seen.unidentified += 1
                if isinstance(exc, openai.APITimeoutError) and self.clock() >= deadline:
                    raise RunTimeout(f"timeout: the task's {self._timeout(task):g} s ran out during a model "
                                     f"call at step {step}") from None
                raise
            _note_request(calls_seen, raw.headers.get(REQUEST_ID))
            response = raw.parse()
            if not response.choices:
                raise RuntimeError(f"the model's response at step {step} has no choices")
            message = response.choices[0].message
            calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                     for c in (message.tool_calls or []) if getattr(c, "function", None) is not None]
            transcript.assistant(message.content, calls, reasoning=getattr(message, "reasoning_content", None),
                                 usage=_usage_dict(response.usage),
                                 stop_reason=None if calls else _stop_reason(response.choices[0].finish_reason))
            entry: dict[str, Any] = {"role": "assistant", "content": message.content}
            if calls:
                entry["tool_calls"] = [{"id": c["id"], "type": "function",
                                        "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
            messages.append(entry)
            if not calls:
                return step, "stop"
            for call in calls:
                result = workspace.call(call["name"], call["arguments"] or "{}")
                transcript.tool_result(call["id"], call["name"], result.text, result.is_error)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result.text})
        return self.config.max_steps, "max_steps"


REQUEST_ID = "x-ecgw-request-id"


def _note_request(calls: RunCalls, request_id: str | None) -> None:
    if request_id:
        calls.request_ids.append(request_id)
    else:
        calls.unidentified += 1


def _wrapper(isolation: Isolation, root: Path) -> Wrap | None:
    """Commands of this run inside its mount namespace, or None for the path-rewriting fallback."""
    if isinstance(isolation, PathRewriting):
        return None
    resolved = root.resolve()
    return lambda argv, cwd: isolation.wrap(argv, root=resolved, cwd=cwd)


def _usage_dict(usage: Any) -> dict[str, int]:
    if usage is None:
        return {}
    details = getattr(usage, "prompt_tokens_details", None)
    return {"prompt_tokens": usage.prompt_tokens or 0, "completion_tokens": usage.completion_tokens or 0,
            "cached_tokens": (getattr(details, "cached_tokens", 0) or 0) if details else 0}


def _stop_reason(finish: str | None) -> str:
    return {"length": "length", "tool_calls": "toolUse"}.get(finish or "stop", "stop")


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(exc.message)


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is None:
        return
    import os

    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)


def _install_ground_truth(source: Path, target: Path) -> None:
    """Copy the task's ``gt/`` in for grading, replacing whatever the agent left at that path — a symlink is
    removed, never followed, so ground truth cannot be written outside the workspace or pre-planted."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    if source.is_dir():
        shutil.copytree(source, target)
