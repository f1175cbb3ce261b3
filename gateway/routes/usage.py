"""HTTP handlers over the metering store: ``GET /v1/usage``, ``POST /v1/usage/requests`` (settlement) and
``GET /metrics``, with the gateway's one error envelope."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints
from starlette.requests import Request
from starlette.responses import Response

from accounting.calls import Meter
from accounting.database import StoreUnavailable
from accounting.metrics import CONTENT_TYPE
from accounting.report_source import UsageReports
from accounting.reports import FORMATS, BadReportRequest, parse_since, render
from accounting.settlement import MAX_REQUEST_IDS
from accounting.store import GROUPS
from gateway.http.body import BodyReader
from gateway.http.errors import ClientError, error_response
from gateway.state.tenancy import Reads

Handler = Callable[[Request], Awaitable[Response]]
ReadsOf = Callable[[Request], Reads]  # the sessions the caller may see (``gateway.state.tenancy.RequestTenancy.reads``)
EVERY = Reads()


def _error(status: int, message: str, type_: str, param: str | None = None) -> Response:
    return error_response(status, message, type_, param=param)


def usage_endpoint(meter: Meter, *, clock: Callable[[], float] = time.time, scope: ReadsOf | None = None) -> Handler:
    """``GET /v1/usage?by=policy&since=7d&until=…&session=…&format=json`` — the rows of ``ecgw usage`` (``until``:
    calls started before it, as ``ecgw privacy-report --until`` counts them; ``session``: only that one of the
    caller's sessions, e.g. ``by=purpose`` to see its ``shadow`` calls apart). ``scope`` gives the sessions the
    caller may see (its owner's, as the gateway namespaces them; a bound key's one session); rows grouped by
    session show ids without the owner's prefix."""

    async def handle(request: Request) -> Response:
        if not isinstance(meter, UsageReports):
            return _error(503, "Metering is switched off (accounting.enabled: false), so there is no usage to "
                               "report.", "metering_disabled")
        by = request.query_params.get("by", "policy")
        fmt = request.query_params.get("format", "json")
        if by not in GROUPS:
            return _error(400, f"Unknown by={by!r}; use one of: {', '.join(GROUPS)}.", "invalid_request_error",
                          "by")
        if fmt not in FORMATS:
            return _error(400, f"Unknown format={fmt!r}; use one of: {', '.join(FORMATS)}.",
                          "invalid_request_error", "format")
        try:
            since = parse_since(request.query_params.get("since"), now=clock())
        except BadReportRequest as exc:
            return _error(400, str(exc).replace("--since", "since"), "invalid_request_error", "since")
        try:
            until = parse_since(request.query_params.get("until"), now=clock())
            reads = scope(request) if scope is not None else EVERY
            prefix = reads.prefix
            named = request.query_params.get("session")
            session = None if named is None else (prefix or "") + named
            if reads.session is not None:  # a bound key: its one session, whatever the query names
                if session is not None and session != reads.session:
                    return error_response(403, "This key is bound to one session and may read no other's usage.",
                                          "permission_error", param="session", code="session_not_allowed")
                session = reads.session
            rows = await meter.report(by, since=since, until=until, session_prefix=prefix, session_id=session)
        except BadReportRequest as exc:
            return _error(400, str(exc).replace("--since", "until"), "invalid_request_error", "until")
        except StoreUnavailable as exc:
            return _error(503, str(exc), "metering_unavailable")
        except Exception as exc:  # the database went away between flush and query
            return _error(503, str(meter.unavailable(exc)), "metering_unavailable")
        if prefix and by == "session":
            rows = [{**row, "group": str(row["group"])[len(prefix):]} for row in rows]
        if fmt == "json":
            payload: dict[str, Any] = {"object": "list", "by": by, "since": since, "until": until, "data": rows}
            return Response(json.dumps(payload), media_type="application/json")
        media = {"csv": "text/csv", "md": "text/markdown"}.get(fmt, "text/plain")
        return Response(render(rows, by=by, fmt=fmt), media_type=f"{media}; charset=utf-8")

    return handle


def metrics_endpoint(meter: Meter) -> Handler:
    """``GET /metrics`` in Prometheus' text format (empty when metering is off)."""

    async def handle(request: Request) -> Response:
        body = meter.exposition() if isinstance(meter, UsageReports) else b""
        return Response(body, media_type=CONTENT_TYPE)

    return handle


class RequestIds(BaseModel):
    """``POST /v1/usage/requests``' body: the ``x-ecgw-request-id`` values of the client's responses."""

    request_ids: list[Annotated[str, StringConstraints(min_length=1, max_length=64)]] = Field(
        max_length=MAX_REQUEST_IDS)


REQUEST_IDS_EXPECT = ('{"request_ids": ["req-…", …]}: the x-ecgw-request-id values of your responses, at most '
                      f"{MAX_REQUEST_IDS}")


def usage_requests_endpoint(meter: Meter, reader: BodyReader, *, scope: ReadsOf | None = None) -> Handler:
    """``POST /v1/usage/requests`` — settlement and usage of the given requests: the caller's own (``scope``, as
    for ``usage_endpoint``); another owner's request id reads like one never seen."""

    async def handle(request: Request) -> Response:
        if not isinstance(meter, UsageReports):
            return _error(503, "Metering is switched off (accounting.enabled: false), so no request is ever "
                               "recorded.", "metering_disabled")
        try:
            ids = reader.model(await request.body(), RequestIds, expect=REQUEST_IDS_EXPECT).request_ids
        except ClientError as exc:
            return _error(400, exc.message, "invalid_request_error", "request_ids")
        try:
            reads = scope(request) if scope is not None else EVERY
            report = await meter.settlement(ids, session_prefix=reads.prefix, session_id=reads.session)
        except Exception as exc:  # the database went away
            return _error(503, str(meter.unavailable(exc)), "metering_unavailable")
        return Response(json.dumps(report), media_type="application/json")

    return handle
