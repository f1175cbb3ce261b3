"""Routing that aims at a target instead of a threshold: ``target_cloud_rate`` (the share of decisions that go to
the cloud) or ``target_cost_per_session`` (cloud USD per session) in place of step-routing's τ, task-routing's score
threshold, or a learned router's probability cut.

The threshold is set online from the recent distribution of the policy's own signal: the (1 − r) quantile of the
last ``window`` signals. For a rate, r is the target corrected by the decisions' running debt (target − cloud,
summed and bounded), so the achieved share is pulled back to the target after a drift rather than only approaching
it. For a cost, the same controller runs on a share derived from what the cloud has cost so far: r is the target
cost over (the mean cost of a cloud decision × decisions per session), corrected by the running USD debt (the
target accrued per decision, less what the cloud calls cost as they settle — ``spent``), counted in cloud decisions
and bounded the same way. Until the first cloud cost is known, a cost target aims at ``START_RATE``. The state
(recent signals, debts, counts, cost) lives in the session store per policy and arm, so every worker and replica
decides on the same threshold. Until ``min_signals`` signals are seen, nothing goes to the cloud.

``decide`` (a rate) and ``decide_cost`` (a cost) are the interface a policy (or a learned router) uses: it hands
its signal and gets the side; ``spent`` takes each cloud call's cost for a cost target; ``report`` says achieved
against target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from privacy.session_store import SessionStore
from router.step import Step

WINDOW = 100  # recent signals kept per policy and arm
GAIN = 10.0  # debt (in decisions) that moves the quantile level by 1 (bounded to ±GAIN)
MIN_SIGNALS = 20
START_RATE = 0.25  # a cost target before any cloud cost is known: the share it starts from, to learn one
RATE_KNOB, COST_KNOB = "target_cloud_rate", "target_cost_per_session"


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


def _cut(state: dict[str, Any], rate: float) -> float | None:
    signals = [float(s) for s in state.get("signals") or ()]
    if len(signals) < MIN_SIGNALS:
        return None
    return quantile(signals, 1.0 - min(max(rate, 0.0), 1.0))


def threshold(state: dict[str, Any], target: float) -> float | None:
    """The threshold that aims at the cloud share ``target``."""
    return _cut(state, target + float(state.get("debt") or 0.0) / GAIN)


def _per_cloud(state: dict[str, Any]) -> float | None:
    """The mean USD of a cloud decision so far (None before any cost is known)."""
    usd, clouds = float(state.get("usd") or 0.0), int(state.get("cloud") or 0)
    return usd / clouds if usd > 0 and clouds > 0 else None


def _per_session(state: dict[str, Any]) -> float:
    """Decisions per session so far (at least 1)."""
    return max(int(state.get("steps") or 0) / max(int(state.get("sessions") or 0), 1), 1.0)


def cost_rate(state: dict[str, Any], usd_per_session: float) -> float:
    """The cloud share that aims at ``usd_per_session``: from the measured cost of a cloud decision and decisions
    per session, corrected by the USD debt in cloud decisions."""
    each = _per_cloud(state)
    if each is None:
        return START_RATE
    return usd_per_session / (each * _per_session(state)) + float(state.get("usd_debt") or 0.0) / each / GAIN


def cost_threshold(state: dict[str, Any], usd_per_session: float) -> float | None:
    """The threshold that aims at ``usd_per_session``."""
    return _cut(state, cost_rate(state, usd_per_session))


def _bounded_usd(state: dict[str, Any], debt: float) -> float:
    each = _per_cloud(state)
    return debt if each is None else min(max(debt, -GAIN * each), GAIN * each)


class TargetTracker:
    """The shared quantile tracker of one store (``ecgw:target`` entries, one per policy and arm)."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    @staticmethod
    def _where(policy: str, arm: str | None) -> str:
        return f"~target/{policy}/{arm or '-'}"

    async def decide(self, policy: str, arm: str | None, signal: float, target: float) -> Aimed:
        """Cloud when ``signal`` is above the threshold that aims at the cloud share ``target``; the state takes the
        signal and the decision in one atomic update."""
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
            doc.update(signals=signals, debt=min(max(debt, -GAIN), GAIN), steps=steps, cloud=clouds, target=target)
            return doc

        await self._store.update(where, "tracker", advance)
        return Aimed(cloud, tau, seen["cloud"] / seen["steps"], seen["steps"])

    async def decide_cost(self, policy: str, arm: str | None, signal: float, usd_per_session: float, *,
                          new_session: bool) -> Aimed:
        """Cloud when ``signal`` is above the threshold that aims at ``usd_per_session`` of cloud cost;
        ``new_session``: this is the first decision of a session (how decisions per session are counted). What
        a cloud decision then costs reaches the tracker through ``spent``."""
        where = self._where(policy, arm)
        current = await self._store.get(where, "tracker")
        tau = cost_threshold(current if isinstance(current, dict) else {}, usd_per_session)
        cloud = tau is not None and signal > tau
        seen: dict[str, Any] = {}

        def advance(state: Any | None) -> dict[str, Any]:
            doc = dict(state) if isinstance(state, dict) else {}
            doc.update(signals=[*list(doc.get("signals") or ())[-(WINDOW - 1):], round(signal, 5)],
                       steps=int(doc.get("steps") or 0) + 1, cloud=int(doc.get("cloud") or 0) + cloud,
                       sessions=int(doc.get("sessions") or 0) + new_session, cost_target=usd_per_session)
            # the target accrues per decision (a session's share of it), so the debt moves smoothly
            debt = float(doc.get("usd_debt") or 0.0) + usd_per_session / _per_session(doc)
            doc["usd_debt"] = _bounded_usd(doc, debt)
            seen.update(steps=doc["steps"], cloud=doc["cloud"])
            return doc

        await self._store.update(where, "tracker", advance)
        return Aimed(cloud, tau, seen["cloud"] / seen["steps"], seen["steps"])

    async def spent(self, policy: str, arm: str | None, usd: float) -> None:
        """A cloud call of a decision under a cost target cost ``usd`` (as metering prices it)."""
        if usd <= 0:
            return

        def add(state: Any | None) -> dict[str, Any]:
            doc = dict(state) if isinstance(state, dict) else {}
            doc["usd"] = float(doc.get("usd") or 0.0) + usd
            doc["usd_debt"] = _bounded_usd(doc, float(doc.get("usd_debt") or 0.0) - usd)
            return doc

        await self._store.update(self._where(policy, arm), "tracker", add)

    async def report(self, policy: str, arm: str | None) -> dict[str, Any] | None:
        """Achieved against target for one policy and arm (None before its first decision)."""
        state = await self._store.get(self._where(policy, arm), "tracker")
        if not isinstance(state, dict) or not state.get("steps"):
            return None
        steps = int(state["steps"])
        out: dict[str, Any] = {"policy": policy, "arm": arm, "steps": steps,
                               "achieved_cloud_rate": int(state.get("cloud") or 0) / steps}
        if state.get("cost_target") is not None:
            target = float(state["cost_target"])
            sessions = max(int(state.get("sessions") or 0), 1)
            out.update(target_cost_per_session=target, sessions=int(state.get("sessions") or 0),
                       achieved_cost_per_session=float(state.get("usd") or 0.0) / sessions,
                       threshold=cost_threshold(state, target))
        else:
            target = float(state.get("target") or 0.0)
            out.update(target_cloud_rate=target, threshold=threshold(state, target))
        return out


class _Targeted(Protocol):
    target_cloud_rate: float | None
    target_cost_per_session: float | None


def check_one_target(knobs: _Targeted, thresholds: set[str], named: str) -> None:
    """A policy's knobs name a threshold or one target, never two of them (``ValueError`` naming the knobs)."""
    targets = [k for k in (RATE_KNOB, COST_KNOB) if getattr(knobs, k) is not None]
    if targets and thresholds:
        raise ValueError(f"{named} and {targets[0]} are both set ({named} is a threshold, {targets[0]} a target): "
                         "set one of them")
    if len(targets) > 1:
        raise ValueError(f"{RATE_KNOB} and {COST_KNOB} (two targets) are both set: set one of them")


def note_cost_target(step: Step, usd_per_session: float | None) -> None:
    """Mark a step whose cloud calls count toward a cost target: its calls' costs reach the tracker as they settle
    (``router.target_costs``)."""
    if usd_per_session is not None:
        step.note.signal[COST_KNOB] = usd_per_session


async def aim(step: Step, policy: str, signal: float, *, rate: float | None, cost: float | None,
              first: bool) -> Aimed | None:
    """The decision a target makes on ``signal`` for this step's policy and arm (None without a target), noted
    with the step (the target and the achieved share). ``first``: the session's first decision."""
    tracker = TargetTracker(step.session.store)
    if cost is not None:
        aimed = await tracker.decide_cost(policy, arm_of(step), signal, cost, new_session=first)
    elif rate is not None:
        aimed = await tracker.decide(policy, arm_of(step), signal, rate)
        step.note.signal[RATE_KNOB] = rate
    else:
        return None
    step.note.signal["achieved_cloud_rate"] = round(aimed.achieved, 4)
    return aimed
