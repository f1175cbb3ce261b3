"""What the harness learns from the gateway about one session: registering its sensitivity units beforehand, and
its cloud tokens, cost, edge FLOPs and per-unit privacy exposure afterwards — over HTTP only
(``PUT /v1/sessions/{id}/units``, ``POST /v1/usage/requests``, ``GET /v1/sessions/{id}/privacy``), and the
session's grade once it is graded (``PUT /v1/sessions/{id}/grade``).

Shadow calls (purpose ``shadow``, the gateway's own labelling calls, with request ids of their own) are never among
the harness's requests, so never in its figures; they are read apart, from ``GET /v1/usage?by=purpose&session=…``,
after the run (a shadow call still in flight then is not counted: they are a lower bound).

Complete before read: the built-in harness knows the id of every request it made (``x-ecgw-request-id`` on every
response) and asks ``POST /v1/usage/requests`` until the gateway says each of them is *settled* — its mark and all
the upstream calls it caused (probes, plans, advice, delegation) are in the metering store, whichever worker served
it (``accounting.settlement``). The wait is bounded (``settle_timeout_s``); what is still missing then, what could
not be read, a call that got no response (so no id), a cloud call without a price — each is a reason in
``SessionUsage.incomplete``, which the record and the report show. Nothing missing is ever silently zero.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from eval.metrics import CloudUsage, UnitLeak


@dataclass
class RunCalls:
    """What a harness saw of its model calls in one attempt."""

    request_ids: list[str] = field(default_factory=list)  # x-ecgw-request-id of every response, errors included
    unidentified: int = 0  # calls whose response never came (timeout, connection) or carried no request id

@dataclass(frozen=True)
class SessionUsage:
    cloud: CloudUsage = field(default_factory=CloudUsage)
    cloud_cost_usd: float = 0.0
    edge_flops: float = 0.0
    flops_formula: str = ""
    leaks: tuple[UnitLeak, ...] | None = None  # per listed unit: 1.0 when its raw value reached the cloud
    privacy: dict[str, Any] | None = None  # the gateway's summary: cloud calls, units known/exposed/protected
    incomplete: tuple[str, ...] = ()  # why some figures are missing (they are then not zero but unknown)
    shadow_calls: int = 0  # the session's purpose-``shadow`` calls: the operator's, apart from the figures above
    shadow_cloud: CloudUsage = field(default_factory=CloudUsage)
    shadow_cost_usd: float = 0.0


_SHADOW_SUMS = ("cloud_calls", "cloud_raw_input_tokens", "cloud_cache_read_tokens", "cloud_cache_write_tokens",
                "cloud_output_tokens", "cloud_cost_usd", "cloud_unpriced_calls")


def _without(row: dict[str, Any], shadow: dict[str, Any]) -> dict[str, Any]:
    """A session's ``/v1/usage`` row less its shadow calls (cloud only: a shadow call has no edge part)."""
    return {**row, **{key: (row.get(key) or 0) - (shadow.get(key) or 0) for key in _SHADOW_SUMS if key in row}}


def _cloud(row: dict[str, Any]) -> CloudUsage:
    """The cloud tokens of one ``/v1/usage`` row (its raw input excludes cached tokens; ``prompt`` includes them)."""

    def count(key: str) -> int:
        return int(row.get(key) or 0)

    raw, cache_read, cache_write = (count("cloud_raw_input_tokens"), count("cloud_cache_read_tokens"),
                                    count("cloud_cache_write_tokens"))
    return CloudUsage(prompt=raw + cache_read + cache_write, cache_read=cache_read, cache_write=cache_write,
                      output=count("cloud_output_tokens"))


class SessionMeter(Protocol):
    def register_units(self, session_id: str, sensitive_items: Path) -> None: ...

    def session_usage(self, session_id: str, calls: RunCalls | None = None) -> SessionUsage:
        """``calls``: the requests the harness made (then exactly their usage, once settled); None when another
        client made them (the official harness): then whatever the store holds for the session."""
        ...

    def report_grade(self, session_id: str, score: float, *, source: str) -> None:
        """Tell the gateway the session's grade (an outcome label for learning the router, and the arms' completion
        in ``ecgw ab``)."""
        ...


class NullSessionMeter:
    """No gateway-side figures (a harness pointed straight at a model server)."""

    def register_units(self, session_id: str, sensitive_items: Path) -> None:
        return None

    def session_usage(self, session_id: str, calls: RunCalls | None = None) -> SessionUsage:
        return SessionUsage()

    def report_grade(self, session_id: str, score: float, *, source: str) -> None:
        return None


class GatewayMeterError(RuntimeError):
    pass


class GatewaySessionMeter:
    """``gateway_url`` is the gateway's root (``http://host:port``, without ``/v1``)."""

    def __init__(self, gateway_url: str, *, api_key: str | None = None, client: httpx.Client | None = None,
                 settle_timeout_s: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(base_url=gateway_url.rstrip("/"), headers=headers, timeout=30)
        self._settle_timeout_s = settle_timeout_s
        self._clock = clock
        self._sleep = sleep

    def register_units(self, session_id: str, sensitive_items: Path) -> None:
        body = sensitive_items.read_bytes()
        response = self._client.put(f"/v1/sessions/{quote(session_id, safe='')}/units", content=body,
                                    headers={"Content-Type": "application/json"})
        if response.status_code == 409:  # privacy switched off in the gateway: nothing to register
            return
        if response.status_code >= 400:
            raise GatewayMeterError(f"registering units for {session_id} failed: HTTP {response.status_code}: "
                                    f"{response.text[:300]}")

    def report_grade(self, session_id: str, score: float, *, source: str) -> None:
        """``PUT /v1/sessions/{id}/grade``."""
        response = self._client.put(f"/v1/sessions/{quote(session_id, safe='')}/grade",
                                    json={"score": score, "source": source})
        if response.status_code >= 400:
            raise GatewayMeterError(f"reporting the grade of {session_id} failed: HTTP {response.status_code}: "
                                    f"{response.text[:300]}")

    def session_usage(self, session_id: str, calls: RunCalls | None = None) -> SessionUsage:
        incomplete: list[str] = []
        row: dict[str, Any] | None = None
        try:
            if calls is not None:
                row = self._settled_usage(calls, incomplete)
            else:
                row = self._session_row(session_id)
                if row is None:
                    incomplete.append(f"no usage recorded for session {session_id}")
        except (httpx.HTTPError, GatewayMeterError, ValueError) as exc:
            incomplete.append(f"usage not read: {exc}")
        usage_readable = not incomplete or not incomplete[-1].startswith("usage not read")
        leaks: tuple[UnitLeak, ...] | None = None
        privacy: dict[str, Any] | None = None
        try:
            leaks, privacy = self.session_privacy(session_id)
        except (httpx.HTTPError, GatewayMeterError, ValueError) as exc:
            incomplete.append(f"audit not read: {exc}")
        shadow: dict[str, Any] = {}
        try:  # where usage cannot be read at all, that one reason says it
            shadow = (self._shadow_row(session_id) or {}) if usage_readable else {}
        except (httpx.HTTPError, GatewayMeterError, ValueError) as exc:
            incomplete.append(f"shadow usage not read: {exc}")
        shadow_calls, shadow_cloud = int(shadow.get("cloud_calls") or 0), _cloud(shadow)
        shadow_cost = float(shadow.get("cloud_cost_usd") or 0.0)
        if row is not None and calls is None:  # the session's row counts its shadow calls too: not the paper's
            row = _without(row, shadow)
        if row is None:
            return SessionUsage(leaks=leaks, privacy=privacy, incomplete=tuple(incomplete), shadow_calls=shadow_calls,
                                shadow_cloud=shadow_cloud, shadow_cost_usd=shadow_cost)
        found: dict[str, Any] = row
        unpriced = int(found.get("cloud_unpriced_calls") or 0)
        if unpriced:
            incomplete.append(f"{unpriced} cloud calls have no price (cost_usd null): add their model to "
                              "accounting.prices")
        return SessionUsage(
            cloud=_cloud(found),
            cloud_cost_usd=float(found.get("cloud_cost_usd") or 0.0),
            edge_flops=float(found.get("edge_pflops") or 0.0) * 1e15,
            flops_formula=str(found.get("flops_formula") or ""),
            leaks=leaks,
            privacy=privacy,
            incomplete=tuple(incomplete),
            shadow_calls=shadow_calls,
            shadow_cloud=shadow_cloud,
            shadow_cost_usd=shadow_cost,
        )

    def _shadow_row(self, session_id: str) -> dict[str, Any] | None:
        response = self._client.get("/v1/usage", params={"by": "purpose", "session": session_id, "format": "json"})
        if response.status_code >= 400:
            raise GatewayMeterError(f"HTTP {response.status_code}: {response.text[:300]}")
        rows: Sequence[dict[str, Any]] = json.loads(response.text).get("data") or []
        return next((r for r in rows if r.get("group") == "shadow"), None)

    def _settled_usage(self, calls: RunCalls, incomplete: list[str]) -> dict[str, Any] | None:
        """Ask until every request is settled or ``settle_timeout_s`` runs out; the usage of those requests."""
        if calls.unidentified:
            incomplete.append(f"{calls.unidentified} model calls got no response with an x-ecgw-request-id "
                              "(timeout or connection error), so their usage cannot be counted")
        ids = list(dict.fromkeys(calls.request_ids))
        if not ids:
            return None
        deadline = self._clock() + self._settle_timeout_s
        pause = 0.02
        while True:
            response = self._client.post("/v1/usage/requests", json={"request_ids": ids})
            if response.status_code == 404:
                raise GatewayMeterError("the gateway has no POST /v1/usage/requests (upgrade ecgw), so usage "
                                        "cannot be known complete")
            if response.status_code >= 400:
                raise GatewayMeterError(f"HTTP {response.status_code}: {response.text[:300]}")
            report: dict[str, Any] = response.json()
            if report.get("settled"):
                usage: dict[str, Any] | None = report.get("usage")
                return usage
            if self._clock() + pause > deadline:
                pending = report.get("pending") or []
                shown = "; ".join(f"{p.get('request_id')}: {p.get('recorded_calls')} of "
                                  f"{'?' if p.get('expected_calls') is None else p.get('expected_calls')} calls "
                                  "recorded" for p in pending[:3])
                incomplete.append(f"usage of {len(pending)} of {len(ids)} requests not complete in the metering "
                                  f"store after {self._settle_timeout_s:g} s ({shown}); is the gateway's "
                                  "database reachable (see its /metrics and log)?")
                partial: dict[str, Any] | None = report.get("usage")
                return partial
            self._sleep(pause)
            pause = min(pause * 2, 0.5)

    def _session_row(self, session_id: str) -> dict[str, Any] | None:
        response = self._client.get("/v1/usage", params={"by": "session", "format": "json"})
        if response.status_code >= 400:
            raise GatewayMeterError(f"HTTP {response.status_code}: {response.text[:300]}")
        rows: Sequence[dict[str, Any]] = json.loads(response.text).get("data") or []
        return next((r for r in rows if r.get("group") == session_id), None)

    def session_privacy(self, session_id: str) -> tuple[tuple[UnitLeak, ...] | None, dict[str, Any] | None]:
        """Per-unit leaks from the gateway's audit (deterministic: leak = 1 when the raw value reached the cloud),
        and its summary; ``(None, None)`` when the gateway does not audit (privacy or its audit switched off)."""
        response = self._client.get(f"/v1/sessions/{quote(session_id, safe='')}/privacy")
        if response.status_code in (404, 409):
            return None, None
        if response.status_code >= 400:
            raise GatewayMeterError(f"reading privacy exposure for {session_id} failed: HTTP "
                                    f"{response.status_code}: {response.text[:300]}")
        report: dict[str, Any] = response.json()
        units = report.get("units") or []
        leaks = tuple(UnitLeak(float(u.get("weight") or 0.0), float(u.get("leak") or 0.0), str(u.get("unit_id", "")))
                      for u in units)
        summary = {key: report.get(key) for key in ("cloud_calls", "units_known", "units_exposed", "units_protected",
                                                    "exposure_pct")}
        summary["exposed"] = sorted(str(u.get("unit_id")) for u in units if u.get("leak"))
        return (leaks if leaks else None), summary

    def close(self) -> None:
        self._client.close()
