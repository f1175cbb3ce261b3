"""What the harness learns from the gateway about one session: registering its sensitivity units beforehand, and
its cloud tokens, cost and edge FLOPs afterwards — over HTTP only (``PUT /v1/sessions/{id}/units``,
``GET /v1/usage?by=session``)."""

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
    leaks: tuple[UnitLeak, ...] | None = None


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
        if found is None:
            return SessionUsage()
        row: dict[str, Any] = found

        def count(key: str) -> int:
            return int(row.get(key) or 0)

        raw, cache_read, cache_write = (count("cloud_raw_input_tokens"), count("cloud_cache_read_tokens"),
                                        count("cloud_cache_write_tokens"))
        return SessionUsage(
            cloud=CloudUsage(prompt=raw + cache_read + cache_write, cache_read=cache_read, cache_write=cache_write,
                             output=count("cloud_output_tokens")),
            cloud_cost_usd=float(row.get("cloud_cost_usd") or 0.0),
            edge_flops=float(row.get("edge_pflops") or 0.0) * 1e15,
            flops_formula=str(row.get("flops_formula") or ""),
        )

    def close(self) -> None:
        self._client.close()
