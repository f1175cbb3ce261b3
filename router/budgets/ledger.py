"""Budget counters in the session store: reserve an estimate before a call, settle the actual after it.

A counter is one value in the session store per scope (an API key, a session, an experiment arm) and window
(``1h``/``1d``/``30d`` period, or a session's life): ``{"usd", "tokens", "calls", "pflops"}`` spent so far,
reservations of calls in flight included. Every change is one atomic ``update`` of the store (memory, SQLite,
Redis), so the workers of every replica share one figure, and concurrent reservations can never together pass the
amount. A counter the store does not hold (a new window, a TTL sweep, a restarted in-memory store) is seeded from
the metering database first, which stays the truth: a 30-day budget never resets because a store forgot it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from privacy.session_store import SessionStore, SessionStoreUnavailable
from router.budgets.errors import BudgetUnavailable, OverBudget
from router.budgets.measures import MEASURE, Measures
from router.budgets.settings import Budget, Limits
from router.budgets.windows import seconds_left, window_end, window_start

log = logging.getLogger("ecgw.budgets")

_EPSILON = 1e-9  # float sums of prices: a reservation that lands exactly on the amount fits


@dataclass(frozen=True)
class Rows:
    """Which metering rows make up a scope's spend: equality filters on their columns (a key's ``key_label``, a
    session's ``session_id``, an arm's ``experiment`` and ``arm``); none: every row."""

    where: tuple[tuple[str, str], ...] = ()


# (rows, since) → the measures those rows add up to in the metering database (``usd``, ``tokens``, ``calls``,
# ``pflops``); raises when the database cannot be read.
Seeder = Callable[[Rows, float | None], Awaitable[Measures]]


async def no_seed(rows: Rows, since: float | None) -> Measures:
    """Without a metering database a counter starts from nothing."""
    return {}


@dataclass(frozen=True)
class Scope:
    """One thing limits apply to: ``kind`` is ``key``, ``session`` or ``arm``; ``name`` as the operator wrote it."""

    kind: str
    name: str
    store_id: str
    rows: Rows
    limits: Limits


@dataclass(frozen=True)
class Counter:
    """The counter of one scope's budgets that share a window, for the moment it was looked at."""

    scope: Scope
    window: str
    budgets: tuple[tuple[str, Budget], ...]
    where: str  # the session-store id that holds it
    rows: Rows
    since: float | None
    resets_at: float | None

    def kinds(self, wanted: Sequence[str]) -> list[tuple[str, Budget]]:
        return [(k, b) for k, b in self.budgets if k in wanted]


def counters_of(scope: Scope, session_id: str, now: float, hasher: Callable[[str], str]) -> list[Counter]:
    """The counters a scope's budgets need, one per window."""
    by_window: dict[str, list[tuple[str, Budget]]] = {}
    for kind, budget in scope.limits.budgets():
        by_window.setdefault(budget.window, []).append((kind, budget))
    out = []
    for window, budgets in by_window.items():
        if window == "session":
            where = f"~budget/{scope.store_id}/session/{hasher(session_id)}"
            rows = Rows((*scope.rows.where, ("session_id", session_id)))
            since = None
        else:
            start = window_start(window, now)
            where = f"~budget/{scope.store_id}/{window}/{start}"
            rows, since = scope.rows, float(start)
        out.append(Counter(scope, window, tuple(budgets), where, rows, since, window_end(window, now)))
    return out


@dataclass
class Refusal:
    kind: str
    budget: Budget
    spent: float


_KEY = "spent"


class Ledger:
    """Charges counters in the store (seeding them from the metering database when the store has none)."""

    def __init__(self, store: SessionStore, seeder: Seeder, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._seeder = seeder
        self.clock = clock

    async def read(self, counter: Counter) -> Measures:
        """What the counter holds (seeded from the metering database when the store has nothing); no write."""
        try:
            current = await self._store.get(counter.where, _KEY)
            if isinstance(current, dict) and current.get("seeded"):
                return {m: float(current.get(m) or 0.0) for m in MEASURE.values()}
            return await self._seeder(counter.rows, counter.since)
        except Exception as exc:  # the store or the metering database is down
            raise BudgetUnavailable(f"budget counters unreadable: {exc}") from exc

    async def charge(self, counter: Counter, delta: Measures, *, check: Sequence[str] = (),
                     seed_missing: bool = True) -> Refusal | None:
        """Add ``delta`` unless a budget of a kind in ``check`` would pass its amount (then nothing is added and the
        refusal says which). One atomic update; a second one, after seeding, when the store had no counter."""
        refused, unseeded = await self._apply(counter, delta, check, None)
        if not unseeded or not seed_missing:
            return refused
        try:
            seed = await self._seeder(counter.rows, counter.since)
        except Exception as exc:  # the metering database is down: the budget cannot be known
            log.warning("cannot seed the budget counter %s from the metering database: %s", counter.where, exc)
            raise BudgetUnavailable(f"the metering database that seeds the budget is unreadable: {exc}") from exc
        refused, _ = await self._apply(counter, delta, check, seed)
        return refused

    async def _apply(self, counter: Counter, delta: Measures, check: Sequence[str],
                     seed: Measures | None) -> tuple[Refusal | None, bool]:
        """One atomic update: (the refusal, if any; whether the counter was missing and no seed was given)."""
        refused: Refusal | None = None
        unseeded = False

        def apply(current: Any | None) -> Any:
            nonlocal refused, unseeded
            refused, unseeded = None, False  # a conflict runs this again: only its last run counts
            doc = dict(current) if isinstance(current, dict) and current.get("seeded") else None
            if doc is None:
                if seed is None:
                    unseeded = True
                    return current if current is not None else {"seeded": False}
                doc = {**{m: float(seed.get(m) or 0.0) for m in MEASURE.values()}, "seeded": True}
            for kind, budget in counter.kinds(check):
                measure = MEASURE[kind]
                spent = float(doc.get(measure) or 0.0)
                if spent >= budget.amount or spent + delta.get(measure, 0.0) > budget.amount + _EPSILON:
                    refused = Refusal(kind, budget, spent)
                    return doc
            for measure, amount in delta.items():
                doc[measure] = float(doc.get(measure) or 0.0) + amount
            return doc

        try:
            await self._store.update(counter.where, _KEY, apply)
        except SessionStoreUnavailable as exc:
            raise BudgetUnavailable(f"budget counters unreadable: {exc}") from exc
        return refused, unseeded


@dataclass
class Hold:
    """The reservations of one call, settled when it ends. ``cap``: the output cap the estimate assumed for a call
    whose body names none, which the door then sends (``measures.one_cap``)."""

    counters: list[Counter]
    estimate: Measures
    settled: bool = False
    cap: int | None = None


def refusal_error(counter: Counter, refusal: Refusal, now: float) -> OverBudget:
    return OverBudget(name=counter.scope.name, kind=refusal.kind, window=counter.window,
                      amount=refusal.budget.amount, spent=refusal.spent, resets_at=counter.resets_at,
                      retry_after_s=seconds_left(counter.window, now))


Outcome = Refusal | BaseException | None


async def _each(charges: Sequence[Awaitable[Refusal | None]]) -> tuple[list[Outcome], bool]:
    """Every charge at once (one round trip of latency for all of a step's counters), each run to its end even when
    the caller is cancelled: (what each did, whether the caller was cancelled meanwhile)."""
    together = asyncio.ensure_future(asyncio.gather(*charges, return_exceptions=True))
    try:
        return list(await asyncio.shield(together)), False
    except asyncio.CancelledError:
        await asyncio.wait([together])
        return list(together.result()), True


async def reserve(ledger: Ledger, counters: Sequence[Counter], estimate: Measures, kinds: Sequence[str]) -> Hold:
    """Charge ``estimate`` to every counter with a budget of ``kinds``, all or none (``OverBudget`` names the first
    budget that would pass its amount; ``BudgetUnavailable`` when a counter cannot be charged)."""
    wanted = [counter for counter in counters if counter.kinds(kinds)]
    outcomes, cancelled = await _each([ledger.charge(counter, estimate, check=kinds) for counter in wanted])
    if cancelled or any(outcome is not None for outcome in outcomes):
        # refused, failed or cancelled: all or none, so what was charged is given back
        await _give_back(ledger, [c for c, outcome in zip(wanted, outcomes, strict=True) if outcome is None],
                         estimate)
    if cancelled:
        raise asyncio.CancelledError
    for counter, outcome in zip(wanted, outcomes, strict=True):
        if isinstance(outcome, Refusal):
            raise refusal_error(counter, outcome, ledger.clock())
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return Hold(wanted, estimate)


async def _give_back(ledger: Ledger, charged: Sequence[Counter], estimate: Measures) -> None:
    negative = {m: -v for m, v in estimate.items()}
    outcomes, _ = await _each([ledger.charge(counter, negative, seed_missing=False) for counter in charged])
    for counter, outcome in zip(charged, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            log.warning("could not give back a reservation on %s (%s); it stays counted until the window ends",
                        counter.where, outcome)


async def settle(ledger: Ledger, hold: Hold, actual: Measures) -> None:
    """Replace the reservation with what the call cost (a store that fails now only leaves the estimate counted)."""
    if hold.settled:
        return
    hold.settled = True
    delta = {m: actual.get(m, 0.0) - hold.estimate.get(m, 0.0) for m in set(actual) | set(hold.estimate)}
    if not any(delta.values()):
        return
    outcomes, cancelled = await _each([ledger.charge(counter, delta, seed_missing=False)
                                       for counter in hold.counters])
    for counter, outcome in zip(hold.counters, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            log.warning("could not settle %s (%s); it keeps the reservation's estimate", counter.where, outcome)
    if cancelled:
        raise asyncio.CancelledError


def keyed(key: bytes) -> Callable[[str], str]:
    """A short keyed hash for store ids: names of keys (a bare key is the secret) never reach the store as written."""

    def digest(value: str) -> str:
        return hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:24]

    return digest
