"""The benchmark's metrics, exactly as AceBench defines them.

- Completion = mean over tasks of (mean ``overall_score`` over runs, a missing run counting 0) × 100.
- Pass^k = share (%) of tasks whose ``overall_score`` ≥ 0.7 in all k runs (a missing run fails the task).
- Cloud tokens raw / cache-read / output, in millions, summed over tasks and averaged over runs, with
  raw = prompt − cache_read − cache_write (floored at 0).
- Cloud cost = R·p_input + C·p_cache_read + O·p_output (+ W·p_cache_write), tokens in millions, prices in USD per 1M.
- Edge PFLOPs per run = Σ edge FLOPs / runs / 1e15.
- Privacy of a task run = 1 − Σ w·leak / Σ w over its annotated units; privacy of a task is the mean over its
  runs; privacy of a policy is the mean over annotated tasks; exposure = 100 − privacy × 100.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens; optional long-context tier applied per call above ``long_context_over_tokens``."""

    input: float
    cache_read: float
    output: float
    cache_write: float | None = None  # None: billed as input
    long_context_over_tokens: int | None = None
    long_input: float | None = None
    long_cache_read: float | None = None
    long_output: float | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Price:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    def for_prompt(self, prompt_tokens: int) -> Price:
        """The tier that applies to one call with ``prompt_tokens`` of input."""
        if self.long_context_over_tokens is None or prompt_tokens <= self.long_context_over_tokens:
            return self
        return Price(input=self.long_input if self.long_input is not None else self.input,
                     cache_read=self.long_cache_read if self.long_cache_read is not None else self.cache_read,
                     output=self.long_output if self.long_output is not None else self.output,
                     cache_write=self.cache_write)


def cloud_cost(tokens: TokenTotals, price: Price) -> float:
    """USD for token totals given in millions (the benchmark's table arithmetic; no per-call tiers)."""
    write_price = price.input if price.cache_write is None else price.cache_write
    return (tokens.raw * price.input + tokens.cache_read * price.cache_read + tokens.output * price.output
            + tokens.cache_write * write_price)


def call_cost(usage: CloudUsage, price: Price) -> float:
    """USD for one cloud call, with the long-context tier chosen by its prompt size."""
    return cloud_cost(to_millions(usage), price.for_prompt(usage.prompt))


def to_millions(usage: CloudUsage, runs: int = 1) -> TokenTotals:
    scale = MILLION * runs
    return TokenTotals(raw=usage.raw / scale, cache_read=usage.cache_read / scale, output=usage.output / scale,
                       cache_write=usage.cache_write / scale)


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
    cloud_cost_usd: float = 0.0  # metered per call (tiers applied); used when no price is given
    edge_flops: float = 0.0
    leaks: tuple[UnitLeak, ...] | None = None  # the gateway's deterministic measure
    judge_leaks: tuple[UnitLeak, ...] | None = None  # the benchmark's judge-based measure, when configured


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


def _privacy_of(records: Iterable[RunRecord], attribute: str) -> float | None:
    per_task: dict[str, list[float]] = defaultdict(list)
    for record in records:
        units = getattr(record, attribute)
        value = run_privacy(units) if units is not None else None
        if value is not None:
            per_task[record.task_id].append(value)
    return privacy(per_task)


def summarize(policy: str, task_ids: Sequence[str], records: Sequence[RunRecord], *,
              runs: int = DEFAULT_RUNS, price: Price | None = None, flops_formula: str = "") -> PolicySummary:
    """One row of the paper's table. With ``price`` the cost is the benchmark's R/C/O arithmetic on the
    totals; without it, the metered per-call costs of the records are averaged over runs."""
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
    cost = cloud_cost(tokens, price) if price is not None else sum(r.cloud_cost_usd for r in records) / runs
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
    )
