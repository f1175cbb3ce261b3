"""The experiment grid: every (policy, task, repeat) run once, in parallel, resumably; then a summary per policy.

Layout under ``out``::

    grid.json                                  the manifest: per policy its suite, repeat, task ids (eval.manifest;
                                               merged, so several runs into one folder are all reported)
    <policy>/<task id>/run<k>/result.json      one record per run (a finished run is skipped on resume)
    <policy>/<task id>/run<k>/attempts.jsonl   one line per attempt of the run, each its own session
    <policy>/<task id>/run<k>/chat.jsonl       its transcript; workspace/ its files
    <policy>/summary.json                      the policy's row of the table
    summaries.json                             all rows
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from eval import manifest
from eval.harness import AgentHarness
from eval.manifest import MANIFEST
from eval.metrics import PolicySummary, RunRecord, TokenTotals, summarize
from eval.records import record_from_json
from eval.tasks import Task

__all__ = ["MANIFEST", "GridSpec", "finished", "run_dir", "run_grid", "summarize_dir"]


@dataclass(frozen=True)
class GridSpec:
    policies: Sequence[str]
    repeat: int = 3
    parallel: int = 1
    out: Path = Path("eval_out")


def run_dir(out: Path, policy: str, task_id: str, run: int) -> Path:
    return out / _safe(policy) / task_id / f"run{run}"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def finished(path: Path) -> bool:
    """A run whose ``result.json`` reads back as a record: resuming skips it."""
    try:
        record_from_json(json.loads((path / "result.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return True


def run_grid(spec: GridSpec, tasks: Sequence[Task], harness_for: Callable[[str], AgentHarness], *,
             suite: Path | None = None, progress: bool = True) -> list[PolicySummary]:
    """Run what is missing, then summarise everything on disk. ``harness_for(policy)`` builds a policy's harness."""
    manifest.record(spec.out, spec.policies, repeat=spec.repeat, task_ids=[t.id for t in tasks],
                    suite=str(suite) if suite else None)
    harnesses = {policy: harness_for(policy) for policy in spec.policies}
    todo = [(policy, task, run) for policy in spec.policies for task in tasks for run in range(spec.repeat)
            if not finished(run_dir(spec.out, policy, task.id, run))]
    bar = _progress(len(todo), progress)
    with ThreadPoolExecutor(max_workers=max(spec.parallel, 1)) as pool:
        futures = {pool.submit(harnesses[p].run, t, r, run_dir(spec.out, p, t.id, r)): (p, t.id, r)
                   for p, t, r in todo}
        for future in as_completed(futures):
            future.result()  # the harness records failures itself; anything raised here is a bug worth seeing
            bar(futures[future])
    return summarize_dir(spec.out)


def _progress(total: int, enabled: bool) -> Callable[[tuple[str, str, int]], None]:
    if not enabled or total == 0:
        return lambda item: None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="run", desc="eval")

    def step(item: tuple[str, str, int]) -> None:
        bar.set_postfix_str(f"{item[0]} {item[1]} #{item[2]}", refresh=False)
        bar.update(1)
        if bar.n >= total:
            bar.close()

    return step


def summarize_dir(out: Path) -> list[PolicySummary]:
    """Rebuild the summary of every policy in the folder's manifest from the run records on disk and write
    ``summary.json`` files."""
    summaries = []
    for entry in manifest.read(out):
        policy, task_ids, runs = entry.policy, entry.task_ids, entry.repeat
        records: list[RunRecord] = []
        formulas: set[str] = set()
        for path in sorted((out / _safe(policy)).glob("*/run*/result.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            record = record_from_json(data)
            if record.task_id in task_ids and record.run < runs:
                records.append(record)
                if data.get("flops_formula"):
                    formulas.add(str(data["flops_formula"]))
        summary = summarize(policy, task_ids, records, runs=runs, flops_formula="; ".join(sorted(formulas)))
        (out / _safe(policy)).mkdir(parents=True, exist_ok=True)
        (out / _safe(policy) / "summary.json").write_text(json.dumps(summary_to_json(summary), indent=2) + "\n",
                                                         encoding="utf-8")
        summaries.append(summary)
    (out / "summaries.json").write_text(json.dumps([summary_to_json(s) for s in summaries], indent=2) + "\n",
                                        encoding="utf-8")
    return summaries


def summary_to_json(summary: PolicySummary) -> dict[str, Any]:
    return asdict(summary)


def summary_from_json(data: dict[str, Any]) -> PolicySummary:
    known = {k: v for k, v in data.items() if k in PolicySummary.__dataclass_fields__}
    return PolicySummary(**{**known, "tokens": TokenTotals(**data["tokens"]),
                            "shadow_tokens": TokenTotals(**(data.get("shadow_tokens") or {}))})
