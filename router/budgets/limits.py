"""Which limits apply to a step, and the one object the channels charge (``StepBudget``).

A step's scopes: its API key (``limits.keys.<name>``, else ``limits.default_key``), its session
(``limits.sessions``) and its experiment arm (``limits.arms."<experiment>:<arm>"``). The cloud door reserves every
cloud call's estimate (of the body it sends: ``measures``) against their cloud budgets and settles the actual; the edge channel checks ``edge_pflops``
before an edge call and adds the call's FLOPs after it; the pipeline counts the request against ``rpm``/``tpm``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from accounting.calls import UpstreamCall
from privacy.session_store import SessionStore
from router.budgets.errors import BudgetUnavailable, CloudBudgetSpent, CloudBudgetUnavailable, OverBudget, iso
from router.budgets.ledger import Counter, Hold, Ledger, Rows, Scope, Seeder, counters_of, keyed, reserve, settle
from router.budgets.measures import CLOUD_KINDS, EDGE_KINDS, MEASURE, Estimator, output_cap, prompt_tokens, stated_cap
from router.budgets.rates import RateLimits
from router.budgets.settings import Limits, LimitsSettings

log = logging.getLogger("ecgw.budgets")


class Spend(Protocol):
    """What a channel charges: a reservation before its upstream call, the settlement after it."""

    async def reserve(self, side: str, body: Mapping[str, Any], model: str) -> Hold | None: ...

    async def settle(self, hold: Hold | None, call: UpstreamCall) -> None: ...


class NoSpend:
    """No limit applies: nothing is charged."""

    async def reserve(self, side: str, body: Mapping[str, Any], model: str) -> Hold | None:
        return None

    async def settle(self, hold: Hold | None, call: UpstreamCall) -> None:
        return None


NO_SPEND = NoSpend()


class StepBudget:
    """One request's limits: ``admit`` (rate limits), then ``reserve``/``settle`` around each upstream call."""

    def __init__(self, budgets: Budgets, scopes: list[Scope], session_id: str) -> None:
        self._b = budgets
        self.scopes = scopes
        self._session_id = session_id

    def counters(self) -> list[Counter]:
        now = self._b.ledger.clock()
        return [c for s in self.scopes for c in counters_of(s, self._session_id, now, self._b.hasher)]

    async def admit(self, body: Mapping[str, Any]) -> dict[str, str]:
        tokens = prompt_tokens(body) + output_cap(body, self._b.settings.default_max_tokens)
        return await self._b.rates.admit(self.scopes, tokens)

    async def reserve(self, side: str, body: Mapping[str, Any], model: str) -> Hold | None:
        kinds = CLOUD_KINDS if side == "cloud" else EDGE_KINDS
        counters = [c for c in self.counters() if c.kinds(kinds)]
        if not counters:
            return None
        estimate = self._b.estimator.cloud_estimate(body, model) if side == "cloud" else {"pflops": 0.0}
        try:
            hold = await reserve(self._b.ledger, counters, estimate, kinds)
            if side == "cloud" and stated_cap(body) is None:
                hold.cap = self._b.settings.default_max_tokens  # what the estimate assumed: the door sends it
            return hold
        except OverBudget as exc:
            if side == "cloud" and self._b.settings.on_exceed == "edge":
                raise CloudBudgetSpent.like(exc) from None
            raise
        except BudgetUnavailable as exc:
            if side == "cloud":
                raise CloudBudgetUnavailable(exc.reason) from exc
            raise

    async def settle(self, hold: Hold | None, call: UpstreamCall) -> None:
        if hold is None:
            return
        # Shielded: a cancelled request (the client went away) still settles what its call cost.
        task = asyncio.ensure_future(self._settle(hold, call))
        self._b.pending.add(task)  # held by the long-lived part: the step may be gone before it ends
        task.add_done_callback(self._b.pending.discard)
        await asyncio.shield(task)

    async def _settle(self, hold: Hold, call: UpstreamCall) -> None:
        try:
            actual = self._b.estimator.actual(call)
        except Exception:  # a figure metering cannot build either: the estimate stays counted
            log.exception("cannot measure call of request %s for its budget; its estimate stays counted",
                          call.request_id)
            return
        await settle(self._b.ledger, hold, actual)


class Budgets:
    """Built from ``limits:`` (again by each reload: the counters are the store's, so nothing is lost); hands each
    request its ``StepBudget`` (None when no limit applies). ``pending``: the settlements in flight, kept by the
    worker across reloads (the ``Budgets`` a reload replaces may be gone before they end)."""

    def __init__(self, settings: LimitsSettings, *, store: SessionStore, seeder: Seeder, estimator: Estimator,
                 hash_key: bytes, clock: Callable[[], float] = time.time,
                 pending: set[asyncio.Task[None]] | None = None) -> None:
        self.settings = settings
        self.ledger = Ledger(store, seeder, clock=clock)
        self.rates = RateLimits(store, clock=clock)
        self.estimator = estimator
        self.hasher = keyed(hash_key)
        self.pending: set[asyncio.Task[None]] = pending if pending is not None else set()

    def key_limits(self, key_name: str | None, own: Limits | None = None) -> Limits | None:
        """A virtual key's own limits (``own``, set at its creation), else ``limits.keys.<name>``, else
        ``limits.default_key``."""
        if own is not None:
            return own
        if key_name is not None and key_name in self.settings.keys:
            return self.settings.keys[key_name]
        return self.settings.default_key

    def scopes(self, *, key_name: str | None, key_label: str | None, session_id: str | None,
               experiment: str | None = None, arm: str | None = None, key_limits: Limits | None = None) -> list[Scope]:
        scopes: list[Scope] = []
        name = key_name or "anonymous"
        limits = self.key_limits(key_name, key_limits)
        if limits is not None and not limits.empty:
            # the key's own calls, whatever its tenant's other keys spent (every row when no key is configured)
            rows = Rows(where=(("key_label", key_label),)) if key_label is not None else Rows()
            scopes.append(Scope("key", name, "k." + self.hasher(name), rows, limits))
        if session_id is not None and self.settings.sessions is not None and not self.settings.sessions.empty:
            scopes.append(Scope("session", "session", "s." + self.hasher(session_id),
                                Rows(where=(("session_id", session_id),)), self.settings.sessions))
        if experiment is not None and arm is not None:
            arm_name = f"{experiment}:{arm}"
            arm_limits = self.settings.arms.get(arm_name)
            if arm_limits is not None and not arm_limits.empty:
                scopes.append(Scope("arm", arm_name, "a." + self.hasher(arm_name),
                                    Rows(where=(("experiment", experiment), ("arm", arm))), arm_limits))
        return scopes

    def arm_scopes(self) -> list[Scope]:
        """The scope of every arm ``limits.arms`` names (for reports across arms)."""
        out = []
        for name in self.settings.arms:
            experiment, _, arm = name.rpartition(":")
            out += [s for s in self.scopes(key_name=None, key_label=None, session_id=None, experiment=experiment,
                                           arm=arm) if s.kind == "arm"]
        return out

    def for_step(self, *, key_name: str | None, key_label: str | None, session_id: str,
                 experiment: str | None, arm: str | None, key_limits: Limits | None = None) -> StepBudget | None:
        scopes = self.scopes(key_name=key_name, key_label=key_label, session_id=session_id,
                             experiment=experiment, arm=arm, key_limits=key_limits)
        return StepBudget(self, scopes, session_id) if scopes else None

    def for_shadow(self) -> StepBudget | None:
        """The budget of shadow calls (``limits.shadow``): the operator's, over every shadow call's rows, and no
        tenant's, key's, session's or arm's. None when it is not set."""
        limits = self.settings.shadow
        if limits is None or limits.empty:
            return None
        scope = Scope("shadow", "shadow", "shadow." + self.hasher("shadow"), Rows(where=(("purpose", "shadow"),)),
                      limits)
        return StepBudget(self, [scope], "")

    async def report(self, scopes: list[Scope], session_id: str | None) -> list[dict[str, Any]]:
        """``GET /v1/budget``'s rows: every budget and rate limit of these scopes, spent and left right now."""
        now = self.ledger.clock()
        rows: list[dict[str, Any]] = []
        for scope in scopes:
            for counter in counters_of(scope, session_id or "", now, self.hasher):
                if counter.window == "session" and session_id is None:
                    continue  # a per-session budget needs a session to read
                spent = await self.ledger.read(counter)
                for kind, budget in counter.budgets:
                    used = float(spent.get(MEASURE[kind]) or 0.0)
                    rows.append({"name": scope.name, "kind": kind, "window": budget.window,
                                 "amount": budget.amount, "spent": used, "left": max(budget.amount - used, 0.0),
                                 "resets_at": iso(counter.resets_at)})
            if scope.limits.rpm is not None or scope.limits.tpm is not None:
                requests, tokens, minute = await self.rates.used(scope)
                for kind, amount, used_n in (("rpm", scope.limits.rpm, requests), ("tpm", scope.limits.tpm, tokens)):
                    if amount is not None:
                        rows.append({"name": scope.name, "kind": kind, "window": "1m", "amount": amount,
                                     "spent": used_n, "left": max(amount - used_n, 0), "resets_at": iso(minute + 60)})
        return rows
