"""Is a client's usage complete? Request settlement across every worker, without sleeping.

Each worker buffers usage records and writes them in batches, so a usage read that one worker answers cannot see
what another still holds. Instead of a barrier between workers, every request ends with a *mark*: when a chat
request has finished (its stream too), the worker that served it queues ``(request_id, session_id, upstream
calls it caused)`` behind that request's own records (``StoreMeter.settle``). A request is **settled** when its
mark is in the store and as many usage records carry its id — whichever worker served it, and however many
internal calls (probes, plans, advice, delegation) it made.

Clients learn request ids from the ``x-ecgw-request-id`` header every response carries (errors too), and ask
``POST /v1/usage/requests`` with ``{"request_ids": [...]}``: the answer says which are still pending and, in the
same read, the usage of exactly those requests (``accounting.reports.derive`` of the store's SQL sums), so a
figure is only trusted once ``settled`` is true. ``eval`` polls it with a bounded wait.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from accounting.calls import Meter
from accounting.endpoints import Handler
from accounting.reports import derive
from accounting.store import UsageStore
from accounting.writer import StoreMeter

MAX_REQUEST_IDS = 2000  # per question; an agent run makes tens of requests


def settle_request(meter: Meter, request_id: str, session_id: str) -> None:
    """Mark a finished request (a no-op for meters that keep no store)."""
    if isinstance(meter, StoreMeter):
        meter.settle(request_id, session_id)


def settlement_report(store: UsageStore, request_ids: list[str]) -> dict[str, Any]:
    state = store.settlement(request_ids)
    pending = [{"request_id": rid, "expected_calls": expected, "recorded_calls": recorded}
               for rid, (expected, recorded) in state.items() if expected is None or expected != recorded]
    usage = derive(store.totals(list(state))) if state else None
    return {"object": "usage.requests", "requests": len(state), "settled": not pending, "pending": pending,
            "usage": usage}


def _error(status: int, message: str, type_: str, param: str | None = None) -> Response:
    body = {"error": {"message": message, "type": type_, "param": param, "code": None}}
    return Response(json.dumps(body), status_code=status, media_type="application/json")


def _request_ids(raw: bytes) -> list[str]:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise ValueError("The body is not JSON; send {\"request_ids\": [\"req-…\", …]}.") from None
    ids = body.get("request_ids") if isinstance(body, dict) else None
    if not isinstance(ids, list) or not all(isinstance(i, str) and 0 < len(i) <= 64 for i in ids):
        raise ValueError("request_ids must be a list of the x-ecgw-request-id values of your responses.")
    if len(ids) > MAX_REQUEST_IDS:
        raise ValueError(f"{len(ids)} request ids in one question; ask about at most {MAX_REQUEST_IDS}.")
    return ids


def usage_requests_endpoint(meter: Meter) -> Handler:
    """``POST /v1/usage/requests`` — settlement and usage of the given requests."""

    async def handle(request: Request) -> Response:
        if not isinstance(meter, StoreMeter):
            return _error(503, "Metering is switched off (accounting.enabled: false), so no request is ever "
                               "recorded.", "metering_disabled")
        try:
            ids = _request_ids(await request.body())
        except ValueError as exc:
            return _error(400, str(exc), "invalid_request_error", "request_ids")
        try:
            await meter.flush()  # this worker's own buffer; the others' show up as pending until they write
            report = await asyncio.to_thread(settlement_report, meter.store, ids)
        except Exception as exc:  # the database went away
            return _error(503, str(meter.store.unavailable(exc)), "metering_unavailable")
        return Response(json.dumps(report), media_type="application/json")

    return handle
