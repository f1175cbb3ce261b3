"""Run a task's ``grade()`` in a subprocess and turn every outcome into a score (a failure scores 0 with a reason).

The grader gets ``transcript`` (the OpenClaw ``chat.jsonl`` entries as a list) and ``workspace_path``, which
covers every signature the benchmark uses (``grade(**kwargs)``, ``grade(transcript, workspace_path)``,
``grade(workspace_path=..., **kwargs)``). It runs with the environment it is given (the judge endpoint:
``OPENROUTER_BASE_URL`` / ``OPENROUTER_API_KEY`` / ``JUDGE_MODEL``) and a timeout.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULT_MARKER = "@@ECGW_GRADE_RESULT@@"

_RUNNER = f"""
import json, sys, traceback
payload = json.loads(sys.stdin.read())
namespace = {{"__name__": "ecgw_grader"}}
try:
    exec(compile(payload["source"], payload["filename"], "exec"), namespace)
    result = namespace["grade"](**payload["kwargs"])
except BaseException as exc:
    sys.stdout.flush()
    print("\\n" + {RESULT_MARKER!r} + json.dumps({{"error": traceback.format_exc(limit=3)[-2000:]}}))
    sys.exit(0)
# On a line of its own even when grade() printed without a final newline.
print("\\n" + {RESULT_MARKER!r} + json.dumps({{"result": result}}, default=str))
"""


@dataclass(frozen=True)
class GradeOutcome:
    score: float
    details: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None


def run_grader(source: str, *, workspace_path: str, transcript: Sequence[Mapping[str, Any]] = (),
               timeout_s: float = 300.0, env: Mapping[str, str] | None = None, cwd: Path | None = None,
               python: str = sys.executable, filename: str = "<grade>",
               wrap: Callable[[list[str]], list[str]] | None = None) -> GradeOutcome:
    """``wrap`` turns the grader's command into one that runs inside the run's mount namespace."""
    payload = json.dumps({"source": source, "filename": filename,
                          "kwargs": {"transcript": list(transcript), "workspace_path": workspace_path}})
    argv = [python, "-c", _RUNNER]
    try:
        done = subprocess.run(wrap(argv) if wrap else argv, input=payload.encode(), capture_output=True,
                              timeout=timeout_s, env=dict(env) if env is not None else None, cwd=cwd)
    except subprocess.TimeoutExpired:
        return GradeOutcome(0.0, error=f"grader timed out after {timeout_s:g} s")
    except OSError as exc:
        return GradeOutcome(0.0, error=f"grader could not start: {exc}")
    stdout = done.stdout.decode(errors="replace")
    line = next((ln for ln in reversed(stdout.splitlines()) if ln.startswith(RESULT_MARKER)), None)
    if line is None:
        tail = done.stderr.decode(errors="replace")[-1000:]
        return GradeOutcome(0.0, error=f"grader process exited with code {done.returncode}: {tail}")
    try:
        message = json.loads(line[len(RESULT_MARKER):])
    except json.JSONDecodeError:
        return GradeOutcome(0.0, error="grader printed an unreadable result")
    if "error" in message:
        return GradeOutcome(0.0, error=f"grader raised: {message['error']}")
    result = message["result"]
    if not isinstance(result, dict):
        return GradeOutcome(0.0, error=f"grader returned {type(result).__name__}, not a dict")
    score = result.get("overall_score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score) \
            or not 0 <= score <= 1:
        return GradeOutcome(0.0, details=result, error=f"grader returned no overall_score in [0, 1]: {score!r}")
    return GradeOutcome(float(score), details=result)
