"""``create_app(settings)``: the ASGI application, with every part built once and injected."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from accounting.calls import Meter
from accounting.database import StoreUnavailable
from accounting.endpoints import metrics_endpoint, usage_endpoint
from accounting.factory import build_meter
from accounting.store import UsageStore
from gateway.api import ChatCompletions, guarded, healthz, list_models, readyz
from gateway.errors import StartupError, error_response
from gateway.metrics import RequestMetrics
from gateway.offline import prepare_offline_environment
from gateway.policy_choice import PolicyChooser
from gateway.service import ManagedUpstream, Services
from gateway.sessions import MemorySessionStore, SQLiteSessionStore
from gateway.settings import ConfigError, Settings
from gateway.upstreams.openai_http import OpenAIHTTPUpstream
from privacy.factory import build_protector
from privacy.protection import Protector
from privacy.routes import session_privacy_endpoint, units_endpoint
from router.policies import builtin_policies
from router.policies.random_matched import CloudRateSource
from router.policy import PolicyRegistry
from router.rates import ArmRates
from router.step import SessionStateStore

log = logging.getLogger("ecgw")


def build_session_store(settings: Settings) -> SessionStateStore:
    """In memory for one worker; a shared SQLite file as soon as several workers may serve one session."""
    store = settings.sessions.store
    if store == "auto":
        # `ecgw serve` sets server.workers in every worker it starts; an app built in-process is one worker.
        store = "sqlite" if (settings.server.workers or 1) > 1 else "memory"
    if store == "sqlite":
        return SQLiteSessionStore(settings.sessions.sqlite_path, ttl_s=settings.sessions.ttl_s)
    return MemorySessionStore(ttl_s=settings.sessions.ttl_s)


def measured_rates(meter: Meter) -> CloudRateSource | None:
    """Arms' measured cloud-call rates from the metering store, for ``random-matched``'s ``match`` knob (read at
    most once a minute per arm). None when metering keeps no store; a failed read falls back to the knob's p."""
    store = getattr(meter, "store", None)
    if not isinstance(store, UsageStore):
        return None

    def rows_of(experiment: str, arm: str) -> list[dict[str, Any]]:
        try:
            return store.rows(experiment=experiment, arm=arm)
        except Exception:  # a metering database that cannot be read must not fail the step
            log.warning("cannot read measured rates for %s/%s; random-matched uses its p", experiment, arm,
                        exc_info=True)
            return []

    return ArmRates(rows_of)


def build_router(settings: Settings, *, cloud_rates: CloudRateSource | None = None
                 ) -> tuple[PolicyRegistry, PolicyChooser]:
    """Every policy built with its knobs and every experiment arm checked; cheap (no litellm), so ``ecgw serve``
    also calls it before it starts workers. A bad value raises ``ConfigError`` naming the key."""
    registry = PolicyRegistry(builtin_policies(cloud_rates=cloud_rates), settings.policy.knobs)
    try:
        chooser = PolicyChooser(registry, settings.policy.default, edge_model=settings.edge.model,
                                cloud_model=settings.cloud.model, experiments=settings.experiments)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return registry, chooser


def preflight(settings: Settings) -> None:
    """What ``ecgw serve`` checks once, before it binds a port or starts workers: policies and experiments
    (``ConfigError``), and the metering database, migrated here once rather than raced by every worker."""
    build_router(settings)
    if settings.accounting.enabled:
        store = UsageStore.from_url(settings.database_url)
        try:
            store.open()
        except StoreUnavailable as exc:
            raise StartupError(str(exc)) from None
        finally:
            store.dispose()


def build_services(
    settings: Settings,
    *,
    edge: ManagedUpstream | None = None,
    cloud: ManagedUpstream | None = None,
    protector: Protector | None = None,
    meter: Meter | None = None,
    sessions: SessionStateStore | None = None,
) -> Services:
    prepare_offline_environment()
    if cloud is None:
        from gateway.upstreams.cloud import LiteLLMUpstream  # imports litellm: once, here

        cloud = LiteLLMUpstream(settings.cloud)
    meter = meter or build_meter(settings.accounting, database_url=settings.database_url)
    registry, chooser = build_router(settings, cloud_rates=measured_rates(meter))
    sessions = sessions or build_session_store(settings)
    return Services(
        settings=settings,
        edge=edge or OpenAIHTTPUpstream(settings.edge),
        cloud=cloud,
        policies=registry,
        chooser=chooser,
        protector=protector or build_protector(settings.privacy, database_url=settings.database_url,
                                               sessions=sessions),
        meter=meter,
        sessions=sessions,
    )


def create_app(settings: Settings, *, services: Services | None = None) -> Starlette:
    services = services or build_services(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await services.start()
        try:
            yield
        finally:
            await services.aclose()

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        message = {404: f"No route {request.url.path}; the gateway serves /v1/chat/completions and /v1/models.",
                   405: f"{request.method} is not allowed on {request.url.path}."}.get(exc.status_code,
                                                                                   str(exc.detail))
        return error_response(exc.status_code, message, "invalid_request_error")

    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s", request.url.path, exc_info=exc)
        return error_response(500, "The gateway failed on this request; see its log.", "internal_error")

    request_metrics = RequestMetrics()
    chat = ChatCompletions(services, request_metrics).handle
    metering_metrics = metrics_endpoint(services.meter)

    async def metrics(request: Request) -> Response:
        metering = await metering_metrics(request)
        privacy_metrics = getattr(services.protector, "metrics", None)  # the last check's hits (privacy.metrics)
        extra = privacy_metrics.exposition() if privacy_metrics is not None else b""
        return Response(request_metrics.exposition() + bytes(metering.body) + extra, media_type=metering.media_type)

    routes = [
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/chat/completions", chat, methods=["POST"]),
        Route("/v1/models", guarded(services, list_models), methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/v1/sessions/{session_id:path}/units", guarded(services, units_endpoint(services.protector)),
              methods=["PUT"]),
        Route("/v1/sessions/{session_id:path}/privacy",
              guarded(services, session_privacy_endpoint(services.protector)), methods=["GET"]),
        Route("/v1/usage", guarded(services, usage_endpoint(services.meter)), methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    # Plain Starlette: the chat route is the hot path of every agent step, and FastAPI's extra per-request
    # middleware (telemetry, body limit, exit stacks) buys nothing for raw-Request endpoints.
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={HTTPException: http_error, Exception: unexpected})
    app.state.services = services
    return app
