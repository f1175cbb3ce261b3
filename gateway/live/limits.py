"""Budgets and rate limits in the gateway: built from ``limits:`` as a part of every configuration snapshot (checked
at start and by every reload: ``LimitsPart``), and ``GET /v1/budget``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from accounting.calls import Meter, UpstreamCall
from accounting.factory import build_record_builder, usage_store
from accounting.pricing import Pricer, bundled_litellm_cost_map
from accounting.reloading import LIMITS
from accounting.spend import spend
from accounting.store import UsageStore
from gateway.config.reference import reload_paths
from gateway.config.settings import ConfigError, Settings
from gateway.http.errors import ClientError, error_response
from gateway.http.jsonio import dumps
from gateway.live.snapshot import Snapshot
from gateway.live.targets_report import aimed
from gateway.state.tenancy import Identity
from privacy.session_store import SessionStore, SessionStoreUnavailable
from router.budgets.errors import BudgetUnavailable
from router.budgets.ledger import Rows, Seeder, no_seed
from router.budgets.limits import Budgets
from router.budgets.measures import BadOutputLimit, Estimator, Prices, check_output_limits
from router.budgets.settings import Limits
from router.experiments import ExperimentsSettings
from router.target_costs import CallCost
from router.targets import COST_KNOB


def key_name(identity: Identity) -> str | None:
    """The name limits know a caller by: a named key's ``name``, a bare key itself, a virtual key's id (None: no
    keys configured)."""
    return identity.name if identity.owner is not None else None


def checked_output_limits(body: Mapping[str, Any]) -> None:
    """A step's ``max_tokens``, ``max_completion_tokens`` and ``n``, or 400 naming the one that is no whole number:
    a budget reserves from them, so what cannot be counted honestly is refused, not guessed at."""
    try:
        check_output_limits(body)
    except BadOutputLimit as exc:
        raise ClientError(400, str(exc), param=exc.name, code="invalid_value") from None


def prices_of(settings: Settings) -> Prices:
    """The one price look-up reservations use (a cloud target with its own prices plugs in here)."""
    accounting = settings.accounting
    return Pricer(accounting.prices, price_version=accounting.price_version,
                  fallback=bundled_litellm_cost_map if accounting.litellm_fallback else None)


def call_cost_of(settings: Settings) -> CallCost:
    """A cloud call's USD as metering records it (the same builder, the same prices): a cost target's feedback."""
    builder = build_record_builder(settings.accounting)

    def cost(call: UpstreamCall) -> float:
        return float(builder.build(call)["cost_usd"] or 0.0)

    return cost


def check_limits(settings: Settings) -> None:
    """What ``limits:`` needs beyond its own shape (``ConfigError``, exit 2, naming the key)."""
    limits = settings.limits
    _check_arms(limits.arms, settings.experiments)
    every = {f"limits.keys.{k}": v for k, v in limits.keys.items()}
    every.update({f"limits.arms.{k}": v for k, v in limits.arms.items()})
    if limits.default_key is not None:
        every["limits.default_key"] = limits.default_key
    if limits.sessions is not None:
        every["limits.sessions"] = limits.sessions
    for policy, arm, knob, _ in aimed(settings):
        if knob == COST_KNOB and prices_of(settings).price(settings.cloud.model, warn=False) is None:
            where = f"experiments arm {arm}" if arm else f"policy.knobs.{policy}"
            raise ConfigError(f"{where}.{COST_KNOB}: the cloud model {settings.cloud.model} has no price, so a cost "
                              "target cannot be measured; add it to accounting.prices", param=f"{where}.{COST_KNOB}")
    for where, value in every.items():
        check_countable(where, value, settings)


def check_countable(where: str, value: Limits, settings: Settings) -> None:
    """A USD budget needs the cloud model's price and a FLOPs budget the edge model's size (``ConfigError`` naming
    ``where``): for ``limits:`` at start and for a virtual key's limits at its creation."""
    if value.cloud_usd is not None and prices_of(settings).price(settings.cloud.model, warn=False) is None:
        raise ConfigError(f"{where}.cloud_usd: the cloud model {settings.cloud.model} has no price, so a USD "
                          "budget cannot be counted; add it to accounting.prices", param=f"{where}.cloud_usd")
    if value.edge_pflops is not None:
        models = {m.lower() for m in settings.accounting.edge_models}
        edge = settings.edge.model.lower()
        if edge not in models and edge.rsplit("/", 1)[-1] not in models:
            raise ConfigError(f"{where}.edge_pflops: the edge model {settings.edge.model} has no entry in "
                              "accounting.edge_models, so its FLOPs cannot be counted; add its parameter count",
                              param=f"{where}.edge_pflops")


def _check_arms(arms: Iterable[str], experiments: ExperimentsSettings) -> None:
    for name in arms:
        experiment, _, arm = name.rpartition(":")
        found = experiments.definitions.get(experiment)
        if found is None or arm not in found.arms:
            known = [f"{e}:{a}" for e, x in experiments.definitions.items() for a in x.arms]
            raise ConfigError(f"limits.arms.{name}: no such experiment arm; expected one of "
                              f"{', '.join(known) or '(no experiments configured)'}", param=f"limits.arms.{name}")


def metering_seeder(meter: Meter) -> Seeder:
    """Counters seeded from the metering database (none when metering keeps no store)."""
    store = usage_store(meter)
    return usage_seeder(store) if store is not None else no_seed


def usage_seeder(store: UsageStore) -> Seeder:
    """Counters seeded from this metering database."""

    async def seed(rows: Rows, since: float | None) -> dict[str, float]:
        return await asyncio.to_thread(spend, store, since=since, where=rows.where)

    return seed


def build_budgets(settings: Settings, *, sessions: SessionStore, meter: Meter, hash_key: bytes,
                  clock: Callable[[], float] | None = None, running: Budgets | None = None) -> Budgets:
    """Built even when ``limits:`` names no limit: a virtual key created at run time may carry its own (a step
    with no limit in scope gets no ``StepBudget`` and costs one look-up). ``running``: the budgets a reload replaces
    (their settlements in flight stay held)."""
    estimator = Estimator(prices_of(settings), build_record_builder(settings.accounting),
                          default_max_tokens=settings.limits.default_max_tokens)
    extra = {"clock": clock} if clock is not None else {}
    return Budgets(settings.limits, store=sessions, seeder=metering_seeder(meter), estimator=estimator,
                   hash_key=hash_key, pending=running.pending if running is not None else None, **extra)


@dataclass(frozen=True)
class Limiting:
    """A snapshot's budgets and rate limits, and what a cloud call costs for a cost target's feedback: both priced
    by the snapshot's ``accounting.prices``, so a price reload reaches reservations and targets alike."""

    budgets: Budgets
    call_cost: CallCost


class LimitsPart:
    """``limits`` as a part of the configuration's snapshot (``gateway.live.snapshot.SnapshotPart``). The counters live
    in the session store, so a reload loses none: a request holds the limits it started with (its reservations
    settle against them), the next one is counted against the new amounts, and every worker and replica adopting
    the version counts against the same figures."""

    name = "limits"

    @property
    def paths(self) -> tuple[str, ...]:
        return reload_paths(LIMITS)  # all of ``limits``

    def __init__(self, *, sessions: SessionStore, meter: Meter, hash_key: bytes,
                 clock: Callable[[], float] | None = None) -> None:
        self._sessions = sessions
        self._meter = meter
        self._hash_key = hash_key
        self._clock = clock

    def build(self, settings: Settings, running: object | None) -> Limiting:
        check_limits(settings)  # a price a budget or a cost target needs, an arm that exists (ConfigError)
        old = running.budgets if isinstance(running, Limiting) else None
        return Limiting(build_budgets(settings, sessions=self._sessions, meter=self._meter, hash_key=self._hash_key,
                                      clock=self._clock, running=old), call_cost_of(settings))

    async def start(self, built: object, running: object | None) -> None:
        return None  # nothing to open: the counters are the session store's

    async def retire(self, old: object, alive: Sequence[object]) -> None:
        return None


def limiting_of(snapshot: Snapshot) -> Limiting:
    """The budgets of a configuration snapshot (``build_services`` registers them as a part of every one)."""
    limiting = snapshot.part(LimitsPart.name)
    assert isinstance(limiting, Limiting)
    return limiting


Targets = Callable[[], Awaitable[list[dict[str, Any]]]]  # achieved against target (``gateway.live.targets_report``)


def budget_endpoint(budgets_now: Callable[[], Budgets], session_of: Callable[[Request, str], str],
                    targets: Targets | None = None) -> Callable[..., object]:
    """``GET /v1/budget``: the caller's key's budgets and rate limits (and its session's, with ``X-Session-Id``);
    for an admin key (or with no keys configured) also every target's achieved figures (``targets``), which sum
    every tenant's decisions. ``budgets_now``: the budgets of the request's configuration snapshot."""

    async def endpoint(request: Request) -> Response:
        identity: Identity = request.state.identity
        budgets = budgets_now()
        try:
            # a bound key's session is its own, whatever the request names (as on the chat routes)
            client_session = identity.bound_session or request.headers.get("x-session-id") or (
                request.query_params.get("session"))
            session_id = session_of(request, client_session) if client_session else None
            scopes = budgets.scopes(key_name=key_name(identity), key_label=identity.label,
                                    session_id=session_id, key_limits=identity.limits)
            rows = await budgets.report(scopes, session_id)
            body: dict[str, Any] = {"limits": rows}
            if targets is not None and (identity.admin or identity.owner is None):
                body["targets"] = await targets()
        except BudgetUnavailable as exc:
            return error_response(503, f"The budgets cannot be read right now: {exc.reason}. Retry shortly.",
                                  "budget_unavailable", code="budget_unavailable")
        except SessionStoreUnavailable as exc:
            return error_response(503, f"The targets cannot be read right now: {exc}. Retry shortly.",
                                  "budget_unavailable", code="budget_unavailable")
        return Response(dumps(body), media_type="application/json")

    return endpoint
