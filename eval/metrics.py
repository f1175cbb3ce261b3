"""The benchmark's metrics, exactly as AceBench defines them.

- Completion = mean over tasks of (mean ``overall_score`` over runs, a missing run counting 0) × 100.
- Pass^k = share (%) of tasks whose ``overall_score`` ≥ 0.7 in all k runs (a missing run fails the task).
- Cloud tokens raw / cache-read / output, in millions, summed over tasks and averaged over runs, with
  raw = prompt − cache_read − cache_write (floored at 0).
- Cloud cost = Σ over cloud calls of the USD the gateway's accounting priced each call at (``accounting.pricing``:
  R·p_input + C·p_cache_read + O·p_output + W·p_cache_write with the call's context tier), averaged over runs.
  Eval has no price table of its own, so one call never gets two USD figures.
- Edge PFLOPs per run = Σ edge FLOPs / runs / 1e15.
- Shadow calls (purpose ``shadow``: the gateway asking the cloud a step the edge answered, to label it) are the
  operator's cost, never the policy's: their calls, tokens and USD are summed apart (``shadow_*``) and never added
  to the columns above.
- Privacy of a task run = 1 − Σ w·leak / Σ w over its annotated units; privacy of a task is the mean over its
  runs; privacy of a policy is the mean over annotated tasks; exposure = 100 − privacy × 100.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

PASS_THRESHOLD = 0.7
DEFAULT_RUNS = 3
MILLION = 1_000_000
PETA = 1e15


@dataclass(frozen=True)
class CloudUsage:
    """Token counts of cloud calls as an upstream reports them (``prompt`` includes cached tokens)."""

    prompt: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0

    @property
    def raw(self) -> int:
        return max(self.prompt - self.cache_read - self.cache_write, 0)

    def __add__(self, other: CloudUsage) -> CloudUsage:
        return CloudUsage(self.prompt + other.prompt, self.cache_read + other.cache_read,
                          self.cache_write + other.cache_write, self.output + other.output)


@dataclass(frozen=True)
class TokenTotals:
    """Cloud tokens in millions (the table's R / C / O, plus cache writes for providers that bill them)."""

    raw: float = 0.0
    cache_read: float = 0.0
    output: float = 0.0
    cache_write: float = 0.0


def cloud_tokens(per_call_or_run: Iterable[CloudUsage], runs: int = DEFAULT_RUNS) -> TokenTotals:
    """Sum over every task (and run), averaged over ``runs``; raw is floored per item, before summing."""
    raw = cache_read = cache_write = output = 0
    for usage in per_call_or_run:
        raw += usage.raw
        cache_read += usage.cache_read
        cache_write += usage.cache_write
        output += usage.output
    scale = MILLION * _positive(runs)
    return TokenTotals(raw / scale, cache_read / scale, output / scale, cache_write / scale)


def _positive(runs: int) -> int:
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    return runs


def _check_scores(task_ids: Sequence[str], scores: Mapping[str, Sequence[float]], runs: int) -> None:
    _positive(runs)
    unknown = set(scores) - set(task_ids)
    if unknown:
        raise ValueError(f"scores for tasks outside the suite: {sorted(unknown)[:5]}")
    for task_id, values in scores.items():
        if len(values) > runs:
            raise ValueError(f"task {task_id!r} has {len(values)} scores for {runs} runs")


def completion(task_ids: Sequence[str], scores: Mapping[str, Sequence[float]], runs: int = DEFAULT_RUNS) -> float:
    """Mean over tasks of the mean over ``runs`` (missing runs count 0), × 100."""
    _check_scores(task_ids, scores, runs)
    if not task_ids:
        return 0.0
    return 100 * sum(sum(scores.get(t, ())) / runs for t in task_ids) / len(task_ids)


def pass_k(task_ids: Sequence[str], scores: Mapping[str, Sequence[float]], runs: int = DEFAULT_RUNS,
           threshold: float = PASS_THRESHOLD) -> float:
    """Share (%) of tasks with ``overall_score >= threshold`` in all ``runs`` runs."""
    _check_scores(task_ids, scores, runs)
    if not task_ids:
        return 0.0
    passed = sum(1 for t in task_ids
                 if len(scores.get(t, ())) == runs and all(s >= threshold for s in scores[t]))
    return 100 * passed / len(task_ids)


@dataclass(frozen=True)
class UnitLeak:
    """One annotated sensitive field of a task: its weight and how much of it leaked (0 … 1)."""

    weight: float
    leak: float
    unit_id: str = ""


def run_privacy(units: Sequence[UnitLeak]) -> float | None:
    """1 − Σ w·leak / Σ w; None when the run has no weighted units (an unannotated task)."""
    total = sum(u.weight for u in units)
    if total <= 0:
        return None
    return 1 - sum(u.weight * min(max(u.leak, 0.0), 1.0) for u in units) / total


def privacy(per_task: Mapping[str, Sequence[float]]) -> float | None:
    """Mean over annotated tasks (those with at least one run privacy) of the task's mean run privacy."""
    means = [sum(values) / len(values) for values in per_task.values() if values]
    return sum(means) / len(means) if means else None


def exposure(privacy_fraction: float) -> float:
    return 100 - privacy_fraction * 100


def edge_pflops(flops: Iterable[float], runs: int = DEFAULT_RUNS) -> float:
    return sum(flops) / _positive(runs) / PETA


# -----------------------------------------------------------------------------------------------------------------
# run records → a policy's summary row


@dataclass(frozen=True)
class RunRecord:
    """The outcome of one task run under one policy (what the harness writes, one JSON per run)."""

    task_id: str
    run: int
    overall_score: float
    error: str | None = None  # crash / timeout / grader error: the score is then 0 and this says why
    cloud: CloudUsage = field(default_factory=CloudUsage)
    cloud_cost_usd: float = 0.0  # Σ of accounting's per-call USD (context tiers applied there)
    edge_flops: float = 0.0
    leaks: tuple[UnitLeak, ...] | None = None  # the gateway's deterministic measure
    judge_leaks: tuple[UnitLeak, ...] | None = None  # the benchmark's judge-based measure, when configured
    attempts: int = 1  # how many times this run was started (a redo or a resume after a crash adds one)
    incomplete: tuple[str, ...] = ()  # why some of its usage or audit could not be read: figures missing, not 0
    shadow_calls: int = 0  # the gateway's shadow calls on this run's session: apart, never in the figures above
    shadow_cloud: CloudUsage = field(default_factory=CloudUsage)
    shadow_cost_usd: float = 0.0


@dataclass(frozen=True)
class PolicySummary:
    policy: str
    tasks: int
    runs: int
    completion: float
    pass_k: float
    tokens: TokenTotals
    cost_usd: float
    edge_pflops: float | None
    privacy_exposure: float | None
    judge_privacy_exposure: float | None = None
    errors: int = 0
    flops_formula: str = ""
    incomplete_runs: int = 0  # runs whose usage or audit could not be read completely
    retried_runs: int = 0  # runs that took more than one attempt
    attempts: int = 0  # attempts over all runs
    shadow_calls: float = 0.0  # per run, averaged like the cost: the operator's, not in the columns above
    shadow_tokens: TokenTotals = field(default_factory=TokenTotals)
    shadow_cost_usd: float = 0.0


def _privacy_of(records: Iterable[RunRecord], attribute: str) -> float | None:
    per_task: dict[str, list[float]] = defaultdict(list)
    for record in records:
        units = getattr(record, attribute)
        value = run_privacy(units) if units is not None else None
        if value is not None:
            per_task[record.task_id].append(value)
    return privacy(per_task)


def summarize(policy: str, task_ids: Sequence[str], records: Sequence[RunRecord], *,
              runs: int = DEFAULT_RUNS, flops_formula: str = "") -> PolicySummary:
    """One row of the paper's table; the cost is the records' metered per-call costs averaged over runs."""
    seen: set[tuple[str, int]] = set()
    scores: dict[str, list[float]] = defaultdict(list)
    for record in records:
        key = (record.task_id, record.run)
        if key in seen:
            raise ValueError(f"two records for task {record.task_id!r} run {record.run}")
        if not 0 <= record.run < runs:
            raise ValueError(f"run index {record.run} of task {record.task_id!r} is outside 0..{runs - 1}")
        seen.add(key)
        scores[record.task_id].append(0.0 if record.error else min(max(record.overall_score, 0.0), 1.0))
    tokens = cloud_tokens((r.cloud for r in records), runs)
    cost = sum(r.cloud_cost_usd for r in records) / runs
    privacy_value = _privacy_of(records, "leaks")
    judge_value = _privacy_of(records, "judge_leaks")
    return PolicySummary(
        policy=policy,
        tasks=len(task_ids),
        runs=runs,
        completion=completion(task_ids, scores, runs),
        pass_k=pass_k(task_ids, scores, runs),
        tokens=tokens,
        cost_usd=cost,
        edge_pflops=edge_pflops((r.edge_flops for r in records), runs),
        privacy_exposure=exposure(privacy_value) if privacy_value is not None else None,
        judge_privacy_exposure=exposure(judge_value) if judge_value is not None else None,
        errors=sum(1 for r in records if r.error),
        flops_formula=flops_formula,
        incomplete_runs=sum(1 for r in records if r.incomplete),
        retried_runs=sum(1 for r in records if r.attempts > 1),
        attempts=sum(r.attempts for r in records),
        shadow_calls=sum(r.shadow_calls for r in records) / runs,
        shadow_tokens=cloud_tokens((r.shadow_cloud for r in records), runs),
        shadow_cost_usd=sum(r.shadow_cost_usd for r in records) / runs,
    )
