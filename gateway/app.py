"""``create_app(settings)``: the ASGI application, with every part built once and injected."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from accounting.calls import Meter
from accounting.database import StoreUnavailable
from accounting.factory import build_meter, usage_store
from accounting.store import UsageStore
from gateway.admin.database import AdminDatabase
from gateway.admin.routes import admin_routes
from gateway.admin.virtual_keys import VirtualKeys
from gateway.config.settings import CloudSettings, ConfigError, ServerSettings, Settings, edge_endpoint
from gateway.dashboard.access import TOKEN_TTL_S, UiSessions
from gateway.dashboard.routes import dashboard_routes
from gateway.egress.doors import DoorsPart, ManagedUpstream, doors_of
from gateway.egress.transports.provider_request import ProviderTransport
from gateway.http.body import BodyReader
from gateway.http.errors import ClientError, StartupError, error_response
from gateway.http.failures import Failure, client_failure
from gateway.http.jsonio import dumps
from gateway.learning.shadow import Shadows
from gateway.live.limits import LimitsPart, budget_endpoint, check_limits, limiting_of
from gateway.live.policy_choice import build_router
from gateway.live.reload import POLL_S, Reloader, Seen, on_sighup
from gateway.live.snapshot import Configuration, Snapshot, SnapshotPart
from gateway.live.targets_report import targets_exposition, targets_report
from gateway.routes.gatekeeper import REQUEST_ID_HEADER, Gatekeeper
from gateway.routes.health import healthz, list_models, readyz
from gateway.routes.privacy import erase_endpoint, receipts_endpoint, session_privacy_endpoint, units_endpoint
from gateway.routes.usage import metrics_endpoint, usage_endpoint, usage_requests_endpoint
from gateway.service import Services
from gateway.state.keys import Keys, load_keys
from gateway.state.owner_migration import migrate_owners
from gateway.state.sealing import SealBroken
from gateway.state.stores import build_session_store, session_store_kind
from gateway.state.tenancy import RequestTenancy, Tenancy, owner_of
from gateway.surfaces import SurfaceEndpoint
from gateway.surfaces.chat import ChatSurface
from gateway.surfaces.messages import CountTokens, MessagesSurface, native_anthropic
from gateway.surfaces.messages import error_body as messages_error_body
from gateway.surfaces.pipeline import StepPipeline
from gateway.surfaces.responses import responses_endpoint
from gateway.telemetry.metrics import MetricsKey, RequestMetrics, multiprocess_exposition
from gateway.telemetry.tracing import SessionHasher, Tracing, build_tracing
from privacy import Protector
from privacy.audit import SigningKeys
from privacy.factory import build_protector
from privacy.session_store import SessionStore, SessionStoreUnavailable
from router.policies.random_matched import CloudRateSource
from router.rates import ArmRates

log = logging.getLogger("ecgw")


def check_secrets(settings: Settings) -> Keys:
    """The secrets key, created if needed; ``ConfigError`` (exit 2) when it is missing or does not open the
    session store that earlier starts encrypted."""
    persistent = session_store_kind(settings) != "memory"
    keys = load_keys(settings, persistent_sessions=persistent)
    if persistent:
        store = build_session_store(settings, keys)

        async def verify() -> None:
            try:
                await store.verify()
            finally:
                await store.aclose()

        try:
            asyncio.run(verify())
        except SealBroken:
            where = (settings.sessions.redis_url or "redis") if session_store_kind(settings) == "redis" else (
                settings.sessions.sqlite_path)
            raise ConfigError(f"secrets: the key from {keys.source} does not open the session store "
                              f"{where}, which was encrypted with another key; set "
                              "secrets.key_env or secrets.key_file to that key (or move the store away to start "
                              "afresh)") from None
    return keys


def measured_rates(meter: Meter) -> CloudRateSource | None:
    """Arms' measured cloud-call rates from the metering store, for ``random-matched``'s ``match`` knob (read at
    most once a minute per arm). None when metering keeps no store; a failed read falls back to the knob's p."""
    store = usage_store(meter)
    if store is None:
        return None

    def counts_of(experiment: str, arm: str) -> tuple[int, int] | None:
        try:
            rows = store.aggregate("arm", where={"experiment": experiment, "arm": arm})
        except Exception:  # a metering database that cannot be read must not fail the step
            log.warning("cannot read measured rates for %s/%s; random-matched uses its p", experiment, arm,
                        exc_info=True)
            return None
        return (int(rows[0]["requests"]), int(rows[0]["cloud_requests"])) if rows else None

    return ArmRates(counts_of)


def preflight(settings: Settings) -> None:
    """What ``ecgw serve`` checks once, before it binds a port or starts workers: policies and experiments
    (``ConfigError``), and the metering database, migrated here once rather than raced by every worker."""
    build_router(settings)
    check_limits(settings)
    keys = check_secrets(settings)
    if settings.accounting.enabled:
        store = UsageStore.from_url(settings.database_url)
        try:
            store.open()
        except StoreUnavailable as exc:
            raise StartupError(str(exc)) from None
        finally:
            store.dispose()
    migrate_owners(settings, keys, store_kind=session_store_kind(settings))


def build_services(
    settings: Settings,
    *,
    edge: ManagedUpstream | None = None,
    cloud: ProviderTransport | None = None,
    cloud_transport: Callable[[CloudSettings], ProviderTransport] | None = None,
    protector: Protector | None = None,
    meter: Meter | None = None,
    sessions: SessionStore | None = None,
    tracing: Tracing | None = None,
    clock: Callable[[], float] | None = None,
    config_path: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    parts: Sequence[SnapshotPart] = (),
    reload_poll_s: float = POLL_S,
    reload_adopt_after: Seen | None = None,
) -> Services:
    """Every part, built once; ``clock`` (unix seconds) is what budgets and rate limits read the time from.
    ``config_path`` and ``overrides``: where a reload reads the configuration again (the file ``settings`` came
    from, and the command line's values over it); ``parts``: what else a snapshot builds (``gateway.live.snapshot``);
    ``reload_adopt_after``: the reloader's ``adopt_after`` (a worker of ``ecgw serve``)."""
    meter = meter or build_meter(settings.accounting, database_url=settings.database_url)
    rates = measured_rates(meter)
    keys = load_keys(settings, persistent_sessions=sessions is None and session_store_kind(settings) != "memory")
    owner_key, session_id_key = keys.derive("owner"), keys.derive("session-id")
    admin_db = AdminDatabase.from_url(settings.database_url)
    virtual_keys = VirtualKeys(admin_db, keys.derive("virtual-keys"), poll_s=reload_poll_s)

    sessions = sessions or build_session_store(settings, keys)
    protector = protector or build_protector(settings.privacy, database_url=settings.database_url,
                                             sessions=sessions, edge=edge_endpoint(settings.edge),
                                             hash_key=keys.derive("audit"),
                                             seal_key=keys.derive("audit-body"), scope_of=owner_of,
                                             sign_keys=SigningKeys(keys.derive))
    every: tuple[SnapshotPart, ...] = (
        DoorsPart(meter=meter, protector=protector, sessions=sessions, edge=edge, cloud=cloud,
                  cloud_transport=cloud_transport, field_hash_key=keys.derive("dropped-fields")),
        LimitsPart(sessions=sessions, meter=meter, hash_key=keys.derive("budget"), clock=clock),
        *parts)

    def snapshot(of: Settings, version: int, running: Snapshot | None) -> Snapshot:
        registry, chooser = build_router(of, cloud_rates=rates)
        return Snapshot(version, of, registry, chooser,
                        Tenancy(of.server, of.sessions, owner_key=owner_key, session_id_key=session_id_key,
                                runtime=virtual_keys),
                        {part.name: part.build(of, running.parts[part.name] if running is not None else None)
                         for part in every})

    config = Configuration(snapshot(settings, 0, None), snapshot, parts=every)
    return Services(
        config=config,
        protector=protector,
        meter=meter,
        sessions=sessions,
        session_hash=SessionHasher(keys.derive("session-trace")),
        dashboard_key=keys.derive("dashboard"),
        reloader=Reloader(config, sessions, path=config_path, overrides=overrides, poll_s=reload_poll_s,
                          audit=admin_db, adopt_after=reload_adopt_after),
        admin_db=admin_db,
        virtual_keys=virtual_keys,
        tracing=tracing or build_tracing(settings.observability.otlp_endpoint,
                                         service_name=settings.observability.service_name),
        shadows=Shadows(lambda: config.current().settings.learning, doors=lambda: doors_of(config.current()),
                        meter=meter, budgets=lambda: limiting_of(config.current()).budgets, lease=config.lease),
    )


def refusal(path: str, failure: Failure) -> Response:
    """A request refused before any handler ran (bad key, body too large), in the shape its route's clients read."""
    if path.startswith("/v1/messages"):
        return Response(dumps(messages_error_body(failure)), status_code=failure.status,
                        media_type="application/json")
    return error_response(failure.status, failure.message, failure.type, param=failure.param, code=failure.code)


YOUNG_COLLECTION = 20_000  # allocations between collections of the youngest generation (CPython's default: 700)


def freeze_startup_heap() -> tuple[int, int, int]:
    """What start-up built (litellm, spaCy and presidio, the configuration: ~540k objects) moved out of the cyclic
    collector's sight: each full collection, a few per thousand requests, walked all of it on the event loop, a
    third of an edge request's CPU in ``benchmarks.cpu``. The garbage of start-up is collected first.

    Then the youngest generation is collected every ``YOUNG_COLLECTION`` allocations, not 700: what a request
    leaves queued for the metering and log writers (its calls, step record, access line) lives until their next
    batch, so a young collection every few requests walked it again and promoted it, and the older ones walked it
    once more: ~56 µs of the loop's CPU per edge request in ``benchmarks.cpu``, ~13 µs at 20,000.

    Returns the thresholds it replaced: they are the process's, so the app puts them back when it stops (an app
    embedded in another program, or a test's, must not leave its setting behind)."""
    before = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION, *before[1:])
    return before


def forwarded(server: ServerSettings) -> list[Middleware]:
    """``X-Forwarded-For``/``-Proto`` applied only to connections from ``server.forwarded_allow_ips`` (uvicorn's own
    handling is off: ``gateway.telemetry.logs.uvicorn_options``); nothing when none is named."""
    if not server.forwarded_allow_ips:
        return []
    return [Middleware(ProxyHeadersMiddleware, trusted_hosts=list(server.forwarded_allow_ips))]


def create_app(settings: Settings, *, services: Services | None = None, config_path: str | None = None,
               overrides: Mapping[str, Any] | None = None, reload_on_sighup: bool = False) -> Starlette:
    """``reload_on_sighup``: this process is ``ecgw serve`` with one worker, so SIGHUP is its to take."""
    services = services or build_services(settings, config_path=config_path, overrides=overrides)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await services.start()
        thresholds = freeze_startup_heap()
        if reload_on_sighup:
            on_sighup(services.reloader)
        try:
            yield
        finally:
            gc.set_threshold(*thresholds)
            await services.aclose()

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        message = {404: f"No route {request.url.path}; the gateway serves /v1/chat/completions, /v1/responses, "
                        "/v1/messages and /v1/models.",
                   405: f"{request.method} is not allowed on {request.url.path}."}.get(exc.status_code,
                                                                                   str(exc.detail))
        return error_response(exc.status_code, message, "invalid_request_error")

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ClientError)  # a body that grew past the limit while a handler read it
        return refusal(request.url.path, client_failure(exc))

    async def unexpected(request: Request, exc: Exception) -> Response:
        # outside the gatekeeper's send: the request id it set is named here
        request_id = str(request.scope.get("state", {}).get("request_id", "unknown"))
        log.exception("request %s: unhandled error on %s", request_id, request.url.path, exc_info=exc)
        return error_response(500, f"The gateway failed on this request (request id {request_id}); see its log.",
                              "internal_error", headers={REQUEST_ID_HEADER: request_id})

    request_metrics = RequestMetrics()
    metrics_key = MetricsKey.from_settings(services.settings.observability)
    tenancy = RequestTenancy(services.tenancy)
    pipeline = StepPipeline(services, request_metrics)
    reader = BodyReader(max_depth=services.settings.server.max_json_depth)  # every route's body goes through this one
    chat = SurfaceEndpoint(ChatSurface(reader), pipeline).handle
    metering_metrics = metrics_endpoint(services.meter)
    messages = SurfaceEndpoint(MessagesSurface(reader, native=native_anthropic(services)), pipeline).handle

    async def targets() -> list[dict[str, Any]]:
        return await targets_report(services.settings, services.sessions)

    async def targets_metrics() -> bytes:
        """Achieved against target, from the shared store: the same on every worker, so never summed."""
        try:
            return targets_exposition(await targets())
        except SessionStoreUnavailable:
            return b""  # the store is down: /metrics still answers, without the targets' gauges

    async def metrics(request: Request) -> Response:
        if not metrics_key.opens(request.headers):
            return error_response(401, "GET /metrics needs the key observability.metrics_key_env names: send "
                                  "'Authorization: Bearer <key>'.", "authentication_error", code="invalid_api_key")
        if (workers := multiprocess_exposition()) is not None:  # several workers: all of them, summed
            return Response(workers + await targets_metrics(), media_type=CONTENT_TYPE_LATEST)
        metering = await metering_metrics(request)
        extra = services.protector.exposition() + services.doors.exposition()  # the last check's hits, the boundary's
        return Response(request_metrics.exposition() + bytes(metering.body) + extra + await targets_metrics(),
                        media_type=metering.media_type)

    routes = [
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/chat/completions", chat, methods=["POST"]),
        Route("/v1/responses", responses_endpoint(services, pipeline, reader).handle, methods=["POST"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/v1/sessions/{session_id:path}/units",
              units_endpoint(services.protector, reader, session_of=tenancy.own), methods=["PUT"]),
        Route("/v1/sessions/{session_id:path}/privacy",
              session_privacy_endpoint(services.protector, session_of=tenancy.readable), methods=["GET"]),
        Route("/v1/receipts/{request_id}", receipts_endpoint(services.protector, scope=tenancy.reads),
              methods=["GET"]),
        Route("/v1/sessions/{session_id:path}", erase_endpoint(services.protector, session_of=tenancy.readable),
              methods=["DELETE"]),
        Route("/v1/usage", usage_endpoint(services.meter, scope=tenancy.reads), methods=["GET"]),
        Route("/v1/budget", budget_endpoint(lambda: services.budgets, session_of=tenancy.own, targets=targets),
              methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/v1/usage/requests", usage_requests_endpoint(services.meter, reader, scope=tenancy.reads), methods=["POST"]),
        *dashboard_routes(services, reader, UiSessions(services.dashboard_key, services.sessions, ttl_s=min(
            TOKEN_TTL_S, services.settings.sessions.ttl_s))),  # a sign-out is kept as long as a token lives
        # Anthropic's Messages API; Claude Code adds ?beta=true, which routing ignores
        Route("/v1/messages", messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", CountTokens(reader).handle, methods=["POST"]),
        *admin_routes(services.admin_db, services.virtual_keys, services.config, services.reloader, reader),
    ]
    # Plain Starlette: the chat route is the hot path of every agent step, and FastAPI's extra per-request
    # middleware (telemetry, body limit, exit stacks) buys nothing for raw-Request endpoints.
    app = Starlette(routes=routes, lifespan=lifespan,
                    middleware=[*forwarded(services.settings.server),
                                Middleware(Gatekeeper, config=services.config,
                                           max_body_bytes=services.settings.server.max_body_bytes, render=refusal)],
                    exception_handlers={HTTPException: http_error, ClientError: refused, Exception: unexpected})
    app.state.services = services
    return app
