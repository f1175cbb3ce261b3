"""Achieved against target for every policy and arm that aims at one (``target_cloud_rate``,
``target_cost_per_session``): in ``GET /v1/budget`` (``targets``), on ``/metrics`` and on the dashboard.

Which trackers exist follows from the configuration: a policy whose ``policy.knobs`` name a target (its arm-less
tracker), and every experiment arm whose knobs, over its policy's, name one. Their state is in the session store
(``router.targets``), the same for every worker and replica, so each one reports the same figures.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from gateway.config.settings import Settings
from privacy.session_store import SessionStore
from router.targets import COST_KNOB, RATE_KNOB, TargetTracker


def aimed(settings: Settings) -> list[tuple[str, str | None, str, float]]:
    """(policy, arm or None, knob, target) for every tracker the configuration sets up."""
    out: list[tuple[str, str | None, str, float]] = []

    def add(policy: str, arm: str | None, knobs: dict[str, Any]) -> None:
        for knob in (COST_KNOB, RATE_KNOB):
            if isinstance(knobs.get(knob), int | float):
                out.append((policy, arm, knob, float(knobs[knob])))
                return

    for policy, knobs in settings.policy.knobs.items():
        add(policy, None, knobs)
    for experiment, definition in settings.experiments.definitions.items():
        for name, arm in definition.arms.items():
            add(arm.policy, f"{experiment}:{name}", {**settings.policy.knobs.get(arm.policy, {}), **arm.knobs})
    return out


async def targets_report(settings: Settings, store: SessionStore) -> list[dict[str, Any]]:
    """One row per tracker: the target, the achieved share (and cost per session), the steps it decided."""
    tracker = TargetTracker(store)
    rows: list[dict[str, Any]] = []
    for policy, arm, knob, target in aimed(settings):
        state = await tracker.report(policy, arm) or {}
        row: dict[str, Any] = {"policy": policy, "arm": arm, knob: target, "steps": int(state.get("steps") or 0),
                               "achieved_cloud_rate": state.get("achieved_cloud_rate"),
                               "threshold": state.get("threshold")}
        if knob == COST_KNOB:
            row.update(sessions=int(state.get("sessions") or 0),
                       achieved_cost_per_session=state.get("achieved_cost_per_session"))
        rows.append(row)
    return rows


def targets_exposition(rows: list[dict[str, Any]]) -> bytes:
    """The rows as Prometheus gauges (the same on every worker: their state is shared)."""
    if not rows:
        return b""
    registry = CollectorRegistry()
    labels = ("policy", "arm")
    gauges = {
        RATE_KNOB: Gauge("ecgw_target_cloud_rate", "A policy's target share of cloud decisions", labels,
                         registry=registry),
        "achieved_cloud_rate": Gauge("ecgw_target_achieved_cloud_rate", "The share of its decisions a targeted "
                                     "policy sent to the cloud", labels, registry=registry),
        COST_KNOB: Gauge("ecgw_target_cost_per_session_usd", "A policy's target cloud USD per session", labels,
                         registry=registry),
        "achieved_cost_per_session": Gauge("ecgw_target_achieved_cost_per_session_usd", "The cloud USD per "
                                           "session a cost-targeted policy spent", labels, registry=registry),
    }
    for row in rows:
        for field, gauge in gauges.items():
            if row.get(field) is not None:
                gauge.labels(row["policy"], row["arm"] or "-").set(float(row[field]))
    return generate_latest(registry)
