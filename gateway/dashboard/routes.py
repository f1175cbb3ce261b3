"""The dashboard's routes: the page at ``/ui``, its JSON at ``/ui/api/…``, its charts at ``/ui/charts/…svg``, and
``PUT /v1/sessions/{id}/grade`` for a harness to report a session's completion."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from accounting.database import StoreUnavailable
from accounting.reports import BadReportRequest
from gateway.dashboard import charts
from gateway.dashboard.access import UiSessions, allowed, hardened, login, login_page, logout
from gateway.dashboard.data import Dashboard, MeteringOff
from gateway.http.body import BodyReader
from gateway.http.errors import ClientError, error_response
from gateway.service import Services
from gateway.state.tenancy import RequestTenancy
from privacy.session_store import SessionStoreUnavailable
from router.budgets.errors import BudgetUnavailable

Handler = Callable[[Request], Awaitable[Response]]
_STATIC = {"app.js": "text/javascript", "app.css": "text/css", "index.html": "text/html"}


@functools.cache
def _static(name: str) -> bytes:  # a few package files, read once
    return resources.files("gateway.dashboard").joinpath("static", name).read_bytes()


def _json(data: Any) -> Response:
    return Response(json.dumps(data, default=str), media_type="application/json",
                    headers={"cache-control": "no-store"})


class Grade(BaseModel):
    """``PUT /v1/sessions/{id}/grade``' body."""

    score: float = Field(ge=0, le=1)
    source: str | None = Field(None, max_length=200)


GRADE_EXPECT = '{"score": <0..1>, "source": "<optional label>"}: the session\'s completion grade'


def dashboard_routes(services: Services, reader: BodyReader, ui: UiSessions,
                     dashboard: Dashboard | None = None) -> list[Route]:
    board = dashboard or Dashboard(services)
    tenancy = RequestTenancy(services.tenancy)

    def admin(handler: Handler, *, page: bool = False) -> Handler:
        async def endpoint(request: Request) -> Response:
            return hardened(await guarded(request))

        async def guarded(request: Request) -> Response:
            if not await allowed(services.settings, ui, request):  # the request's snapshot: admin keys reload
                if page:
                    return login_page()
                return error_response(401, "The dashboard needs an admin key (server.admin_keys): send it as "
                                           "'Authorization: Bearer <key>' or sign in at /ui.",
                                      "authentication_error", code="invalid_api_key")
            try:
                return await handler(request)
            except BadReportRequest as exc:
                return error_response(400, str(exc), "invalid_request_error", param="since")
            except MeteringOff as exc:
                return error_response(503, str(exc), "metering_disabled")
            except StoreUnavailable as exc:
                return error_response(503, str(exc), "metering_unavailable")

        return endpoint

    async def page(request: Request) -> Response:
        return Response(_static("index.html"), media_type="text/html", headers={"cache-control": "no-store"})

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return error_response(404, f"No dashboard file {name!r}.", "invalid_request_error")
        return Response(_static(name), media_type=_STATIC[name])

    async def overview(request: Request) -> Response:
        return _json(await board.overview(request.query_params.get("since")))

    async def sessions(request: Request) -> Response:
        return _json(await board.sessions(request.query_params.get("since")))

    async def session(request: Request) -> Response:
        return _json(await board.session(request.path_params["session_id"]))

    async def experiments(request: Request) -> Response:
        return _json(await board.experiments())

    async def privacy(request: Request) -> Response:
        return _json(await board.privacy())

    async def budgets(request: Request) -> Response:
        try:
            return _json(await board.budgets())
        except (BudgetUnavailable, SessionStoreUnavailable) as exc:
            return error_response(503, f"The budgets cannot be read right now: {exc}. Retry shortly.",
                                  "budget_unavailable", code="budget_unavailable")

    async def chart(request: Request) -> Response:
        svg = await _chart(board, request.path_params["name"], request.query_params.get("since"),
                           request.query_params.get("experiment"))
        if svg is None:
            return error_response(404, f"No chart {request.path_params['name']!r}.", "invalid_request_error")
        return Response(svg, media_type="image/svg+xml", headers={"cache-control": "no-store"})

    async def sign_in(request: Request) -> Response:
        return hardened(await login(services.settings, ui, request))

    async def sign_out(request: Request) -> Response:
        return hardened(await logout(services.settings, ui, request))

    async def grade(request: Request) -> Response:
        try:
            grade = reader.model(await request.body(), Grade, expect=GRADE_EXPECT)
        except ClientError as exc:
            return error_response(400, exc.message, "invalid_request_error", param="score")
        try:
            # the caller's own session, as units and usage rows name it: another key's PUT reaches its own
            await board.grade(tenancy.own(request, request.path_params["session_id"]), grade.score,
                              grade.source or None)
        except MeteringOff as exc:
            return error_response(409, str(exc), "metering_disabled")
        return _json({"session_id": request.path_params["session_id"], "score": grade.score})

    return [
        Route("/ui", admin(page, page=True), methods=["GET"]),
        Route("/ui/", admin(page, page=True), methods=["GET"]),
        Route("/ui/login", sign_in, methods=["POST"]),
        Route("/ui/logout", sign_out, methods=["POST"]),
        Route("/ui/static/{name}", admin(static), methods=["GET"]),
        Route("/ui/api/overview", admin(overview), methods=["GET"]),
        Route("/ui/api/sessions", admin(sessions), methods=["GET"]),
        Route("/ui/api/sessions/{session_id:path}", admin(session), methods=["GET"]),
        Route("/ui/api/experiments", admin(experiments), methods=["GET"]),
        Route("/ui/api/privacy", admin(privacy), methods=["GET"]),
        Route("/ui/api/budgets", admin(budgets), methods=["GET"]),
        Route("/ui/charts/{name}.svg", admin(chart), methods=["GET"]),
        Route("/v1/sessions/{session_id:path}/grade", grade, methods=["PUT"]),
    ]


async def _chart(board: Dashboard, name: str, since: str | None, experiment: str | None) -> str | None:
    if name in ("routes", "rate", "cost", "tokens", "flops"):
        data = await board.overview(since)
        bucket = float(data["bucket_s"])
        span = {"start": data["since_ts"], "end": data["now"]}
        if name == "routes":
            rows = [(r["policy"], {k: float(r[k]) for k in ("edge", "cloud", "mixed")}) for r in data["route_mix"]]
            return charts.stacked_rows(rows, ["edge", "cloud", "mixed"], title="Steps by route, per policy",
                                       unit="steps", share=False)
        if name == "rate":
            times = sorted({r["t"] for r in data["rate"]})
            policies = sorted({r["policy"] for r in data["rate"]})
            per = {(r["t"], r["policy"]): r["steps"] for r in data["rate"]}
            series = {p: [float(per.get((t, p), 0)) for t in times] for p in policies}
            return charts.time_bars(times, series, bucket_s=bucket, title="Steps per policy", unit="steps", **span)
        line = data["timeline"]
        times = [float(r["group"]) for r in line]
        if name == "cost":
            return charts.time_bars(times, {"cost": [r["cloud_cost_usd"] for r in line]}, bucket_s=bucket,
                                    title="Cloud cost", unit="USD", **span)
        if name == "tokens":
            series = {"raw input": [r["cloud_raw_input_tokens"] for r in line],
                      "cache read": [r["cloud_cache_read_tokens"] for r in line],
                      "output": [r["cloud_output_tokens"] for r in line]}
            return charts.time_bars(times, series, bucket_s=bucket, title="Cloud tokens", unit="tokens", **span)
        return charts.time_bars(times, {"edge PFLOPs": [r["edge_pflops"] for r in line]}, bucket_s=bucket,
                                title="Edge compute", unit="PFLOPs", **span)
    if name == "exposure":
        found = await board.privacy()
        rows = [(s["session_id"], {"exposed": s["units_exposed"], "protected": s["units_protected"],
                                   "not sent": s["units_known"] - s["units_exposed"] - s["units_protected"]})
                for s in found.get("sessions", []) if s["units_known"]]
        return charts.stacked_rows(rows, ["exposed", "protected", "not sent"], title="Registered units per session",
                                   unit="units", share=False)
    if name in ("arms-cost", "arms-completion"):
        arms: list[dict[str, Any]] = next((e["arms"] for e in (await board.experiments())["data"]
                                            if e["experiment"] == experiment), [])
        key = "cost_delta" if name == "arms-cost" else "completion_delta"
        deltas = [(str(a["group"]), float(a[key]["delta"]), float(a[key]["ci"][0]), float(a[key]["ci"][1]))
                  for a in arms if a.get(key)]
        unit = "USD / session" if name == "arms-cost" else "completion"
        return charts.intervals(deltas, title=f"{key.split('_')[0]} vs control, 95% CI", unit=unit)
    return None
