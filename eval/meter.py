"""What the harness learns from the gateway about one session: registering its sensitivity units beforehand, and
its cloud tokens, cost, edge FLOPs and per-unit privacy exposure afterwards — over HTTP only
(``PUT /v1/sessions/{id}/units``, ``GET /v1/usage?by=session``, ``GET /v1/sessions/{id}/privacy``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from eval.metrics import CloudUsage, UnitLeak


@dataclass(frozen=True)
class SessionUsage:
    cloud: CloudUsage = field(default_factory=CloudUsage)
    cloud_cost_usd: float = 0.0
    edge_flops: float = 0.0
    flops_formula: str = ""
    leaks: tuple[UnitLeak, ...] | None = None  # per listed unit: 1.0 when its raw value reached the cloud
    privacy: dict[str, Any] | None = None  # the gateway's summary: cloud calls, units known/exposed/protected


class SessionMeter(Protocol):
    def register_units(self, session_id: str, sensitive_items: Path) -> None: ...

    def session_usage(self, session_id: str) -> SessionUsage: ...


class NullSessionMeter:
    """No gateway-side figures (a harness pointed straight at a model server)."""

    def register_units(self, session_id: str, sensitive_items: Path) -> None:
        return None

    def session_usage(self, session_id: str) -> SessionUsage:
        return SessionUsage()


class GatewayMeterError(RuntimeError):
    pass


class GatewaySessionMeter:
    """``gateway_url`` is the gateway's root (``http://host:port``, without ``/v1``)."""

    def __init__(self, gateway_url: str, *, api_key: str | None = None,
                 client: httpx.Client | None = None) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(base_url=gateway_url.rstrip("/"), headers=headers, timeout=30)

    def register_units(self, session_id: str, sensitive_items: Path) -> None:
        body = sensitive_items.read_bytes()
        response = self._client.put(f"/v1/sessions/{quote(session_id, safe='')}/units", content=body,
                                    headers={"Content-Type": "application/json"})
        if response.status_code == 409:  # privacy switched off in the gateway: nothing to register
            return
        if response.status_code >= 400:
            raise GatewayMeterError(f"registering units for {session_id} failed: HTTP {response.status_code}: "
                                    f"{response.text[:300]}")

    def session_usage(self, session_id: str) -> SessionUsage:
        response = self._client.get("/v1/usage", params={"by": "session", "format": "json"})
        if response.status_code >= 400:
            raise GatewayMeterError(f"reading usage failed: HTTP {response.status_code}: {response.text[:300]}")
        rows: Sequence[dict[str, Any]] = json.loads(response.text).get("data") or []
        found = next((r for r in rows if r.get("group") == session_id), None)
        if found is None:  # no model call was metered; the audit may still know the session's units
            leaks, privacy = self.session_privacy(session_id)
            return SessionUsage(leaks=leaks, privacy=privacy)
        row: dict[str, Any] = found

        def count(key: str) -> int:
            return int(row.get(key) or 0)

        raw, cache_read, cache_write = (count("cloud_raw_input_tokens"), count("cloud_cache_read_tokens"),
                                        count("cloud_cache_write_tokens"))
        leaks, privacy = self.session_privacy(session_id)
        return SessionUsage(
            cloud=CloudUsage(prompt=raw + cache_read + cache_write, cache_read=cache_read, cache_write=cache_write,
                             output=count("cloud_output_tokens")),
            cloud_cost_usd=float(row.get("cloud_cost_usd") or 0.0),
            edge_flops=float(row.get("edge_pflops") or 0.0) * 1e15,
            flops_formula=str(row.get("flops_formula") or ""),
            leaks=leaks,
            privacy=privacy,
        )

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
