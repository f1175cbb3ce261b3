"""Routing that aims at a target instead of a threshold: ``target_cloud_rate`` (the share of decisions that go to
the cloud) in place of step-routing's τ, task-routing's score threshold, or a learned router's probability cut.

The threshold is set online from the recent distribution of the policy's own signal: the (1 − r) quantile of the
last ``window`` signals, where r is the target corrected by the decisions' running debt (target − cloud, summed and
bounded), so the achieved share is pulled back to the target after a drift rather than only approaching it. The
state (recent signals, debt, counts) lives in the session store per policy and arm, so every worker and replica
decides on the same threshold. Until ``min_signals`` signals are seen, nothing goes to the cloud.

``decide`` is the whole interface: a policy (or a learned router) hands it its signal and gets the side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from privacy.session_store import SessionStore
from router.step import Step

WINDOW = 100  # recent signals kept per policy and arm
GAIN = 10.0  # debt (in decisions) that moves the quantile level by 1 (bounded to ±GAIN)
MIN_SIGNALS = 20


@dataclass(frozen=True)
class Aimed:
    cloud: bool
    threshold: float | None  # None while warming up
    achieved: float  # the share of decisions sent to the cloud so far (this one included)
    steps: int


def arm_of(step: Step) -> str | None:
    """The experiment arm a step runs under, as trackers are keyed (``<experiment>:<arm>``)."""
    ctx = step.context
    return f"{ctx.experiment}:{ctx.arm}" if ctx.arm is not None else None


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile ``q`` of ``values`` (not empty)."""
    ordered = sorted(values)
    position = min(max(q, 0.0), 1.0) * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def threshold(state: dict[str, Any], target: float) -> float | None:
    signals = [float(s) for s in state.get("signals") or ()]
    if len(signals) < MIN_SIGNALS:
        return None
    rate = min(max(target + float(state.get("debt") or 0.0) / GAIN, 0.0), 1.0)
    return quantile(signals, 1.0 - rate)


class TargetTracker:
    """The shared quantile tracker of one store (``ecgw:target`` entries, one per policy and arm)."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    @staticmethod
    def _where(policy: str, arm: str | None) -> str:
        return f"~target/{policy}/{arm or '-'}"

    async def decide(self, policy: str, arm: str | None, signal: float, target: float) -> Aimed:
        """Cloud when ``signal`` is above the threshold that aims at ``target``; the state takes the signal and the
        decision in one atomic update."""
        where = self._where(policy, arm)
        current = await self._store.get(where, "tracker")
        tau = threshold(current if isinstance(current, dict) else {}, target)
        cloud = tau is not None and signal > tau
        seen: dict[str, Any] = {}

        def advance(state: Any | None) -> dict[str, Any]:
            doc = dict(state) if isinstance(state, dict) else {}
            signals = [*list(doc.get("signals") or ())[-(WINDOW - 1):], round(signal, 5)]
            debt = float(doc.get("debt") or 0.0) + target - (1.0 if cloud else 0.0)
            steps, clouds = int(doc.get("steps") or 0) + 1, int(doc.get("cloud") or 0) + cloud
            seen.update(steps=steps, cloud=clouds)
            return {"signals": signals, "debt": min(max(debt, -GAIN), GAIN), "steps": steps, "cloud": clouds,
                    "target": target}

        await self._store.update(where, "tracker", advance)
        return Aimed(cloud, tau, seen["cloud"] / seen["steps"], seen["steps"])

    async def report(self, policy: str, arm: str | None) -> dict[str, Any] | None:
        """Achieved against target for one policy and arm (None before its first decision)."""
        state = await self._store.get(self._where(policy, arm), "tracker")
        if not isinstance(state, dict) or not state.get("steps"):
            return None
        target = float(state.get("target") or 0.0)
        return {"target_cloud_rate": target, "achieved_cloud_rate": int(state["cloud"]) / int(state["steps"]),
                "steps": int(state["steps"]), "threshold": threshold(state, target)}
