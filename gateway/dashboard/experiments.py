"""An experiment's arms side by side: ``router.ab.compare`` per arm (its figures as ``ab`` prints them), plus each
arm's difference from the control arm (the first configured) in cloud cost per session and in completion, each
with a bootstrap confidence interval over sessions."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from router.ab import as_json, compare


def difference_ci(control: Sequence[float], arm: Sequence[float], *, resamples: int = 2000, level: float = 0.95,
                  seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(arm) − mean(control), sessions resampled within each arm."""
    rng = random.Random(seed)
    diffs = sorted(sum(rng.choice(arm) for _ in arm) / len(arm) - sum(rng.choice(control) for _ in control)
                   / len(control) for _ in range(resamples))
    return diffs[int((1 - level) / 2 * (resamples - 1))], diffs[int((1 + level) / 2 * (resamples - 1))]


def _delta(control: Sequence[float], arm: Sequence[float]) -> dict[str, Any] | None:
    if len(control) < 2 or len(arm) < 2:  # one session per side: no interval worth drawing
        return None
    mean = sum(arm) / len(arm) - sum(control) / len(control)
    low, high = difference_ci(control, arm)
    return {"delta": mean, "ci": [low, high], "n_control": len(control), "n_arm": len(arm)}


def session_costs(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """arm → session → cloud USD (unpriced calls count 0)."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for row in rows:
        session = str(row.get("session_id") or "")
        cost = row.get("cost_usd") if row.get("side") == "cloud" else None
        out[str(row.get("arm") or "-")][session] += float(cost) if isinstance(cost, int | float) else 0.0
    return out


def arms_report(name: str, arm_order: Sequence[str], rows: Sequence[Mapping[str, Any]],
                exposures: Mapping[str, float] | None, grades: Mapping[str, float]) -> dict[str, Any]:
    reports = as_json(compare(rows, by="arm", exposures=exposures, grades=grades or None))
    present = [r["group"] for r in reports]
    order = [a for a in arm_order if a in present] + [a for a in present if a not in arm_order]
    reports.sort(key=lambda r: order.index(r["group"]))
    control = order[0] if order else None
    costs = session_costs(rows)
    for report in reports:
        arm = report["group"]
        report["cost_per_session"] = (sum(costs[arm].values()) / len(costs[arm])) if costs[arm] else 0.0
        report["control"] = arm == control
        if control is None or arm == control:
            report["cost_delta"] = report["completion_delta"] = None
            continue
        report["cost_delta"] = _delta(list(costs[control].values()), list(costs[arm].values()))
        graded_control = [grades[s] for s in costs[control] if s in grades]
        graded_arm = [grades[s] for s in costs[arm] if s in grades]
        report["completion_delta"] = _delta(graded_control, graded_arm)
    return {"experiment": name, "control": control, "calls": len(rows), "arms": reports}
