"""The official-harness adapter: run AceBench's own ``eval/run_batch.py`` with the gateway as its only model.

For each (policy, task, run) it

1. registers the task's sensitivity units (``gt/sensitive_items.json`` of the benchmark's workspace download) with
   the gateway for the run's session (``PUT /v1/sessions/{id}/units``);
2. writes a models config for OpenClaw whose only provider is the gateway: ``api: "openai-completions"``,
   ``compat: {supportsUsageInStreaming, requiresStringContent}``, the header ``X-Session-Id: <session>`` so each
   task run is its own session, and one model, ``ecgw/<policy>`` — the gateway runs the strategy, the benchmark
   sees one model;
3. runs ``python eval/run_batch.py --task <task.md> --edge-model ecgw/ecgw/<policy> --models-config <that file>
   --run-mode local-only --repeat 1 --output-dir <run dir>/acebench`` in the benchmark's checkout (it starts the
   task's Docker container with the OpenClaw agent, grades it, writes ``score.json``);
4. joins the benchmark's ``overall_score`` with the gateway's metering (``GET /v1/usage?by=session``) and audit
   (``GET /v1/sessions/{id}/privacy``) into the same ``result.json`` records the built-in harness writes, so
   ``ecgw eval report`` makes the table from either.

The benchmark runs one task per ``run_batch.py`` call because the session header lives in the models config,
and OpenClaw reads that once per container. In ``local-only`` mode the benchmark's own privacy judge sees no
cloud call (for it, the gateway is the local model), so its ``privacy_score`` is kept in the record for reference
only; the table's Privacy Exp. comes from the gateway's audit of what really left for the cloud.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval import attempts, manifest
from eval.grid import finished, run_dir
from eval.meter import SessionMeter, SessionUsage
from eval.metrics import RunRecord
from eval.records import save_run
from eval.tasks import Task

PROVIDER = "ecgw"
SESSION_HEADER = "X-Session-Id"
API_KEY_PLACEHOLDER = "${MY_PROXY_API_KEY}"  # run_batch.py expands it from $MY_PROXY_API_KEY
COMPAT = {"supportsUsageInStreaming": True, "requiresStringContent": True}


def session_id(experiment: str, policy: str, task_id: str, run: int) -> str:
    """The run's stable name, the same scheme as the built-in harness, so both kinds of runs read alike in
    ``ecgw usage``; each attempt's session id extends it (``eval.attempts``)."""
    return f"{experiment}:{policy}:{task_id}:run{run}"


def model_id(policy: str) -> str:
    """The model the benchmark asks for; the gateway reads the policy from the alias ``ecgw/<policy>``."""
    return f"ecgw/{policy}"


def edge_model_spec(policy: str) -> str:
    """``--edge-model`` for run_batch.py: ``<provider>/<model id>``."""
    return f"{PROVIDER}/{model_id(policy)}"


def models_config(base_url: str, policy: str, session: str, *, api_key: str | None = None,
                  context_window: int | None = None, max_tokens: int | None = None) -> dict[str, Any]:
    """The ``models`` section OpenClaw gets inside the task's container; ``base_url`` is the gateway's OpenAI
    base URL *as the container reaches it* (ending in ``/v1``). With ``api_key`` None the key is the
    ``${MY_PROXY_API_KEY}`` placeholder run_batch.py fills from the environment (no key in the file)."""
    model: dict[str, Any] = {"id": model_id(policy), "name": model_id(policy), "input": ["text"],
                             "reasoning": False, "compat": dict(COMPAT),
                             # the gateway meters and prices; OpenClaw's own estimate would double count
                             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}
    if context_window is not None:
        model["contextWindow"] = context_window
    if max_tokens is not None:
        model["maxTokens"] = max_tokens
    return {"providers": {PROVIDER: {
        "baseUrl": base_url.rstrip("/"),
        "apiKey": api_key if api_key is not None else API_KEY_PLACEHOLDER,
        "api": "openai-completions",
        "headers": {SESSION_HEADER: session},
        "models": [model],
    }}}


def run_batch_command(acebench_dir: Path, task: Task, policy: str, models_path: Path, output_dir: Path, *,
                      python: str = "python3", extra_args: Sequence[str] = ()) -> list[str]:
    return [python, str(acebench_dir / "eval" / "run_batch.py"), "--task", str(task.path),
            "--edge-model", edge_model_spec(policy), "--models-config", str(models_path),
            "--run-mode", "local-only", "--repeat", "1", "--output-dir", str(output_dir), *extra_args]


def find_scores(output_dir: Path) -> tuple[dict[str, Any] | None, Path | None]:
    """The newest ``score.json`` run_batch.py wrote under ``output_dir`` (it nests category/task/run folders)."""
    found = sorted(output_dir.rglob("score.json"), key=lambda p: p.stat().st_mtime) if output_dir.is_dir() else []
    if not found:
        return None, None
    try:
        data = json.loads(found[-1].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, found[-1]
    return (data if isinstance(data, dict) else None), found[-1]


def join_run(task: Task, run: int, policy: str, session: str, path: Path, usage: SessionUsage, *,
             returncode: int | None, log_tail: str = "", attempt: int = 1) -> RunRecord:
    """One record from the benchmark's outcome under ``path/acebench`` and the gateway's figures for the session;
    a failed or missing grade is a score of 0 with the reason."""
    scores, score_path = find_scores(path / "acebench")
    error: str | None = None
    score = 0.0
    if scores is None:
        error = (f"run_batch.py exited with {returncode} and wrote no score.json" if score_path is None
                 else f"unreadable {score_path}")
        if log_tail:
            error += f": {log_tail[-500:]}"
    elif scores.get("error"):
        error = f"benchmark grading failed: {scores['error']}"
    else:
        value = scores.get("overall_score")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            error = f"benchmark score.json has no overall_score in [0, 1]: {value!r}"
        else:
            score = float(value)
    record = RunRecord(task_id=task.id, run=run, overall_score=0.0 if error else score, error=error,
                       cloud=usage.cloud, cloud_cost_usd=usage.cloud_cost_usd, edge_flops=usage.edge_flops,
                       leaks=usage.leaks, attempts=attempt, incomplete=usage.incomplete)
    extra = {"harness": "acebench", "session_id": session, "policy": policy, "flops_formula": usage.flops_formula,
             "privacy": usage.privacy, "acebench_scores": scores, "acebench_score_file": str(score_path or ""),
             "acebench_privacy_score": (scores or {}).get("privacy_score"), "returncode": returncode}
    save_run(path / "result.json", record, extra)
    return record


Runner = Callable[[list[str], Path, Mapping[str, str], Path], int]


def subprocess_runner(command: list[str], cwd: Path, env: Mapping[str, str], log: Path) -> int:
    with log.open("wb") as out:
        return subprocess.run(command, cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL).returncode


@dataclass
class AceBenchAdapter:
    acebench_dir: Path
    meter: SessionMeter
    container_base_url: str  # the gateway's /v1 URL as seen from inside the task containers
    experiment: str = "acebench"
    api_key: str | None = None
    python: str = sys.executable
    extra_args: Sequence[str] = ()
    context_window: int | None = None
    max_tokens: int | None = None
    runner: Runner = subprocess_runner
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    def prepare(self, task: Task, run: int, policy: str, out: Path, *,
                dry_run: bool = False) -> tuple[Path, str, list[str]]:
        """Begin an attempt, register the units and write the models config; returns the run directory, session
        id and command. ``dry_run`` only writes the config (under the run's name; nothing is cleared)."""
        path = run_dir(out, policy, task.id, run)
        name = session_id(self.experiment, policy, task.id, run)
        if dry_run:
            path.mkdir(parents=True, exist_ok=True)
            session = name
        else:  # a new session; the folder is cleared, so an earlier attempt's score.json is never joined
            session = attempts.begin(path, name).session_id
        units = task.workspace_dir(self.acebench_dir) / "gt" / "sensitive_items.json"
        if units.is_file() and not dry_run:
            self.meter.register_units(session, units)
        config = models_config(self.container_base_url, policy, session, context_window=self.context_window,
                               max_tokens=self.max_tokens)
        models_path = path / "models.json"
        models_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        command = run_batch_command(self.acebench_dir, task, policy, models_path, path / "acebench",
                                    python=self.python, extra_args=self.extra_args)
        (path / "run_batch.cmd.json").write_text(json.dumps(command) + "\n", encoding="utf-8")
        return path, session, command

    def run_one(self, task: Task, run: int, policy: str, out: Path) -> RunRecord:
        path, session, command = self.prepare(task, run, policy, out)
        env = dict(self.environ)
        if self.api_key or not env.get("MY_PROXY_API_KEY"):  # run_batch.py refuses an empty placeholder
            env["MY_PROXY_API_KEY"] = self.api_key or "ecgw-local"
        log = path / "run_batch.log"
        try:
            code: int | None = self.runner(command, self.acebench_dir, env, log)
        except OSError as exc:
            code = None
            log.write_text(f"could not start run_batch.py: {exc}\n", encoding="utf-8")
        return self.join(task, run, policy, out, returncode=code)

    def join(self, task: Task, run: int, policy: str, out: Path, *, returncode: int | None = None) -> RunRecord:
        path = run_dir(out, policy, task.id, run)
        attempt = attempts.current(path, session_id(self.experiment, policy, task.id, run))
        try:  # the requests came from OpenClaw, not from here: the session's usage, as the store has it now
            usage = self.meter.session_usage(attempt.session_id)
        except Exception as exc:  # the score stands; the figures are marked missing, never shown as zero
            usage = SessionUsage(incomplete=(f"usage not read: {type(exc).__name__}: {exc}",))
        log = path / "run_batch.log"
        tail = log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.is_file() else ""
        return join_run(task, run, policy, attempt.session_id, path, usage, returncode=returncode, log_tail=tail,
                        attempt=attempt.number)

    def run_grid(self, tasks: Sequence[Task], policies: Sequence[str], *, repeat: int, out: Path,
                 parallel: int = 1, join_only: bool = False) -> None:
        """Every (policy, task, run) without a ``result.json`` — or, with ``join_only``, re-join every run whose
        benchmark output is already there (e.g. produced on a machine with Docker)."""
        manifest.record(out, policies, repeat=repeat, task_ids=[t.id for t in tasks], suite=str(self.acebench_dir),
                        harness="acebench")
        todo = [(p, t, r) for p in policies for t in tasks for r in range(repeat)
                if join_only or not finished(run_dir(out, p, t.id, r))]
        with ThreadPoolExecutor(max_workers=max(parallel, 1)) as pool:
            if join_only:
                futures = [pool.submit(self.join, t, r, p, out) for p, t, r in todo
                           if (run_dir(out, p, t.id, r) / "acebench").is_dir()]
            else:
                futures = [pool.submit(self.run_one, t, r, p, out) for p, t, r in todo]
            for future in as_completed(futures):
                future.result()

