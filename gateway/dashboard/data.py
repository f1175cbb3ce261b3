"""What the dashboard shows, read once per request from the stores and shared by its JSON endpoints and its SVG
charts. Nothing here re-derives a figure another package already reports: usage rows are ``accounting.reports``'
(the rows of ``/v1/usage``), arms are ``router.ab``'s, exposure is ``privacy.audit.session_report``'s."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from accounting.errors import EcgwError
from accounting.grades import grades_of, put_grade
from accounting.report_source import UsageReports
from accounting.reports import BadReportRequest, derive, usage_report
from accounting.steps import blocked_steps, request_rate, route_mix, session_steps
from accounting.store import UsageStore
from gateway.dashboard.experiments import arms_report
from gateway.live.budget_overview import budget_overview
from gateway.live.targets_report import targets_report
from gateway.service import Services
from privacy import SessionPrivacy
from privacy.audit import cloud_bodies, overview

T = TypeVar("T")


class MeteringOff(EcgwError, RuntimeError):
    """The dashboard reads the metering store; with accounting off there is nothing to show."""


BUCKETS = {"5m": 10.0, "1h": 60.0, "6h": 300.0, "24h": 900.0, "7d": 3600.0, "30d": 21600.0}


MAX_WINDOW_S = 400 * 86400.0  # a dashboard window reaches back at most this far ("all": every record)
MAX_BUCKETS = 500  # time buckets per chart, whatever the window
_DURATION = re.compile(r"^(\d{1,7}(?:\.\d{1,3})?)([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def window(since: str | None, *, now: float) -> tuple[str, float | None, float]:
    """(label, since as unix time or None for all, bucket seconds) for a ``since`` such as 1h or 7d, or ``all``.
    Anything else — a negative or zero duration, one past ``MAX_WINDOW_S``, a word — is ``BadReportRequest``;
    the bucket widens so that no window has more than ``MAX_BUCKETS``."""
    label = "24h" if since is None else since.strip()
    if label == "all":
        return label, None, BUCKETS["7d"]
    match = _DURATION.match(label)
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)] if match else 0.0
    if not 0 < seconds <= MAX_WINDOW_S:
        raise BadReportRequest(f"since={since!r}: use a duration such as 1h, 24h or 7d (more than 0, at most "
                               f"{MAX_WINDOW_S / 86400:g}d), or all")
    return label, now - seconds, max(BUCKETS.get(label, 3600.0), math.ceil(seconds / MAX_BUCKETS))


class Dashboard:
    def __init__(self, services: Services, *, clock: Callable[[], float] = time.time) -> None:
        self._services = services
        self._clock = clock

    @property
    def _meter(self) -> UsageReports:
        meter = self._services.meter
        if not isinstance(meter, UsageReports):
            raise MeteringOff("Metering is switched off (accounting.enabled: false): the dashboard has nothing "
                              "to show.")
        return meter

    async def _privacy(self, read: Callable[..., T], *args: Any) -> T | None:
        protector = self._services.protector
        return await protector.read_audit(read, *args) if isinstance(protector, SessionPrivacy) else None

    async def overview(self, since: str | None) -> dict[str, Any]:
        label, start, bucket = window(since, now=self._clock())
        meter = self._meter

        def read(store: UsageStore) -> dict[str, Any]:
            return {
                "by_policy": usage_report(store, "policy", since=start),
                "route_mix": route_mix(store, since=start),
                "rate": request_rate(store, bucket, since=start),
                "timeline": [derive(r) for r in store.aggregate_buckets(bucket, since=start)],
            }

        data = await meter.query(read)
        return {"since": label, "since_ts": start, "bucket_s": bucket, "now": self._clock(), **data}

    async def sessions(self, since: str | None) -> dict[str, Any]:
        label, start, _ = window(since, now=self._clock())

        def read(store: UsageStore) -> tuple[list[dict[str, Any]], dict[str, int]]:
            return usage_report(store, "session", since=start), blocked_steps(store, since=start)

        rows, blocked = await self._meter.query(read)
        privacy = await self._privacy(overview)
        exposure = {s["session_id"]: s for s in (privacy or {}).get("sessions", [])}
        for row in rows:
            seen = exposure.get(row["group"])
            row["exposure"] = seen["exposure"] if seen and seen["units_known"] else None
            row["units_known"] = seen["units_known"] if seen else 0
            row["privacy_blocked"] = blocked.get(row["group"], 0)
            row["inbound"] = seen.get("inbound", 0) if seen else 0  # values answers carried, never sent
        rows.sort(key=lambda r: -float(r["cloud_cost_usd"]))
        return {"since": label, "data": rows}

    async def session(self, session_id: str) -> dict[str, Any]:
        steps = await self._meter.query(session_steps, session_id)
        bodies = await self._privacy(cloud_bodies, session_id) or []
        by_request: dict[str, list[dict[str, Any]]] = {}
        for body in bodies:
            by_request.setdefault(body["request_id"], []).append(body)
        for step in steps:
            step["cloud_bodies"] = by_request.get(step["request_id"], [])
        report = await self._privacy_report(session_id)
        return {"session_id": session_id, "session_hash": self._services.session_hash(session_id), "steps": steps,
                "privacy": report}

    async def _privacy_report(self, session_id: str) -> dict[str, Any] | None:
        protector = self._services.protector
        return await protector.session_exposure(session_id) if isinstance(protector, SessionPrivacy) else None

    async def experiments(self) -> dict[str, Any]:
        configured = self._services.settings.experiments.definitions
        meter = self._meter
        out: list[dict[str, Any]] = []
        privacy: dict[str, Any] | None = None  # read once, and only when an experiment has sessions
        for name, experiment in configured.items():
            rows = await meter.query(lambda store, n=name: store.rows(experiment=n))
            if not rows:
                out.append({"experiment": name, "control": None, "calls": 0, "arms": []})
                continue
            sessions = {str(r["session_id"]) for r in rows}
            grades = await meter.query(grades_of, sessions)
            if privacy is None:
                privacy = await self._privacy(overview) or {}
            exposures = {s["session_id"]: float(s["exposure"]) for s in privacy.get("sessions", [])
                         if s["units_known"]} if privacy else None
            out.append(arms_report(name, list(experiment.arms), rows, exposures, grades))
        return {"active": self._services.settings.experiments.active, "data": out}

    async def privacy(self) -> dict[str, Any]:
        found = await self._privacy(overview)
        if found is None:
            return {"enabled": False}
        blocked = await self._meter.query(blocked_steps)
        return {"enabled": True, **found, "privacy_blocked_steps": sum(blocked.values()),
                "privacy_blocked_by_session": blocked}

    async def budgets(self) -> dict[str, Any]:
        """Spend against every key's and arm's budgets (the live counters) and every target's achieved figures."""
        services = self._services
        limits = await budget_overview(services.budgets, services.tenancy.configured())
        return {"limits": limits, "targets": await targets_report(services.settings, services.sessions)}

    async def grade(self, session_id: str, score: float, source: str | None) -> None:
        await self._meter.query(put_grade, session_id, score, source=source)
