"""``make bench``: routing that aims at a target, and what a budget reservation costs per call.

1. A stub edge whose first-token distributions drift half-way: each step's top-20 first-token distribution puts
   mass ``a`` on one token and spreads the rest, with ``a`` drawn so the entropy (nats, ``router.entropy``) follows a
   lognormal that moves up by 0.5 nats (and widens) at step 1000. ``target_cloud_rate: 0.25`` (``router.targets``,
   on a real SQLite session store) against a fixed τ that sent 25 % of the first 1000 steps to the cloud. Reported:
   the cloud share of each 200-step window after 200 warm-up steps.
2. Budget reservation: the reservation and settlement of one cloud call (``router.budgets``) against a key's USD
   budget, and against a key's and a session's, on the memory, SQLite and (with ``ECGW_TEST_REDIS_URL``) Redis
   session stores, sealed as the gateway seals them: mean microseconds per call.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from accounting.calls import UpstreamCall
from accounting.factory import build_record_builder
from accounting.pricing import Pricer
from accounting.settings import AccountingSettings, ModelPrice
from benchmarks.results import append
from gateway.state.sealing import SealedStore
from gateway.state.sessions import MemorySessionStore, SQLiteSessionStore
from privacy.session_store import SessionStore
from router.budgets.ledger import no_seed
from router.budgets.limits import Budgets
from router.budgets.measures import Estimator
from router.budgets.settings import LimitsSettings
from router.entropy import decision_entropy
from router.targets import TargetTracker, quantile

STEPS, SHIFT, WARMUP, WINDOW, TARGET = 2000, 1000, 200, 200, 0.25


def _top(entropy: float) -> list[dict[str, object]]:
    """A top-20 logprob entry whose renormalised entropy is ``entropy`` (bisection on the leading token's mass)."""
    def h(a: float) -> float:
        rest = (1 - a) / 19
        return -(a * math.log(a) + 19 * rest * math.log(rest)) if 0 < a < 1 else 0.0

    low, high = 1 / 20, 1 - 1e-9  # h falls from ln 20 to 0 over this range
    target = min(max(entropy, 0.01), math.log(20) - 0.01)
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if h(mid) > target else (low, mid)
    a = (low + high) / 2
    tops = [{"token": "t0", "logprob": math.log(a)}] + [{"token": f"t{i}", "logprob": math.log((1 - a) / 19)}
                                                        for i in range(1, 20)]
    return [{"token": "t0", "logprob": math.log(a), "top_logprobs": tops}]


def stub_entropies() -> list[float]:
    draws = random.Random(26)
    out = []
    for i in range(STEPS):
        wanted = draws.lognormvariate(0.0, 0.45) if i < SHIFT else draws.lognormvariate(0.5, 0.55)
        measured = decision_entropy(_top(wanted))
        assert measured is not None
        out.append(measured)
    return out


async def aimed(entropies: list[float], store: SessionStore) -> list[bool]:
    tracker = TargetTracker(store)
    return [(await tracker.decide("step-routing", None, h, TARGET)).cloud for h in entropies]


def windows(decisions: list[bool]) -> list[float]:
    return [100 * sum(decisions[s:s + WINDOW]) / WINDOW for s in range(WARMUP, STEPS, WINDOW)]


LIMITS = {
    "key": {"keys": {"k": {"cloud_usd": {"amount": 1e9, "window": "30d"}}}},
    "key + session": {"keys": {"k": {"cloud_usd": {"amount": 1e9, "window": "30d"}}},
                      "sessions": {"cloud_calls": {"amount": 1e9, "window": "session"}}},
}


async def reservation_cost(store: SessionStore, limits: str = "key", calls: int = 500) -> float:
    """Mean µs of one cloud call's reservation and settlement, through ``StepBudget`` as the cloud door runs them."""
    settings = LimitsSettings.model_validate(LIMITS[limits])
    table = {"m": ModelPrice(input=1.0, output=2.0)}
    builder = build_record_builder(AccountingSettings(prices=table, litellm_fallback=False))
    budgets = Budgets(settings, store=store, seeder=no_seed, hash_key=b"k" * 32,
                      estimator=Estimator(Pricer(table, fallback=None), builder, default_max_tokens=512))
    step = budgets.for_step(key_name="k", key_label=None, session_id="s", experiment=None, arm=None)
    assert step is not None
    body = {"messages": [{"role": "user", "content": "word " * 2000}], "max_tokens": 256}
    call = UpstreamCall(request_id="r", session_id="s", policy="p", purpose="step", side="cloud", provider="p",
                        model="m", streamed=False, status=200, started_at=time.time(), latency_s=0.1,
                        usage={"prompt_tokens": 2010, "completion_tokens": 200})
    await step.settle(await step.reserve("cloud", body, "m"), call)  # seeds the counters
    started = time.perf_counter()
    for _ in range(calls):
        await step.settle(await step.reserve("cloud", body, "m"), call)
    return (time.perf_counter() - started) / calls * 1e6


class _Counted:
    """Counts the commands a Redis client sends one by one (each is a round trip; the store's updates use none
    of redis-py's pipelines)."""

    def __init__(self, client: Any) -> None:
        self.sent = 0
        self._execute = client.execute_command
        client.execute_command = self._count

    async def _count(self, *args: Any, **options: Any) -> Any:
        self.sent += 1
        return await self._execute(*args, **options)


async def reservation_costs(tmp: Path) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Per store (as the gateway builds it: SQLite and Redis sealed) and per set of limits: µs per call; and the
    Redis round trips per call."""
    stores: dict[str, Callable[[], SessionStore]] = {
        "memory": MemorySessionStore,
        "SQLite": lambda: SealedStore(SQLiteSessionStore(str(tmp / "budget.sqlite3")), b"s" * 32)}
    url = os.environ.get("ECGW_TEST_REDIS_URL")
    redis: list[Any] = []
    if url:  # the Redis the tests use, under a key prefix of its own
        from gateway.state.redis_sessions import RedisSessionStore

        def make_redis() -> SessionStore:
            inner = RedisSessionStore(url, prefix="ecgw:bench-budget:")
            redis.append(inner)
            return SealedStore(inner, b"s" * 32)

        stores["Redis"] = make_redis
    costs: dict[str, dict[str, float]] = {}
    trips: dict[str, float] = {}
    for name, make in stores.items():
        store = make()
        try:
            costs[name] = {}
            for limits in LIMITS:
                counted = _Counted(redis[-1]._redis) if name == "Redis" else None  # noqa: SLF001 (a bench probe)
                costs[name][limits] = await reservation_cost(store, limits)
                if counted is not None:
                    trips[limits] = counted.sent / 501  # 500 timed calls and the one that seeds
        finally:
            await store.aclose()
    return costs, trips


async def main() -> str:
    entropies = stub_entropies()
    tau = quantile(entropies[:SHIFT], 1 - TARGET)
    fixed = windows([h > tau for h in entropies])
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteSessionStore(str(Path(tmp) / "s.sqlite3"))
        target = windows(await aimed(entropies, sqlite))
        await sqlite.aclose()
        costs, trips = await reservation_costs(Path(tmp))
    worst = max(abs(w - 100 * TARGET) for w in target)
    lines = [
        f"\n## Routing to a target, and budget reservations ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        "`python -m benchmarks.targets`)\n",
        f"Stub edge: first-token entropy lognormal, shifted up half-way (step {SHIFT}); {STEPS} steps; windows of "
        f"{WINDOW} after {WARMUP} warm-up steps. Cloud share per window, %:\n",
        "| router | " + " | ".join(f"w{i + 1}" for i in range(len(target))) + " | worst miss (points) |",
        "|---|" + "---:|" * (len(target) + 1),
        "| target_cloud_rate 0.25 (SQLite store) | " + " | ".join(f"{w:.1f}" for w in target) + f" | {worst:.1f} |",
        f"| fixed τ = {tau:.3f} nats (25 % of the first half) | " + " | ".join(f"{w:.1f}" for w in fixed)
        + f" | {max(abs(w - 25) for w in fixed):.1f} |",
        "",
        "Budget reservation: reserve + settle of one cloud call through `StepBudget` (what the cloud door runs), "
        "mean µs per call of 500, the stores as the gateway builds them (SQLite and Redis sealed):\n",
        "| limits | " + " | ".join(costs) + " |",
        "|---|" + "---:|" * len(costs),
        *("| " + limits + " | " + " | ".join(f"{costs[store][limits]:.0f}" for store in costs) + " |"
          for limits in LIMITS),
        "",
        "Redis round trips per call: " + (", ".join(f"{limits} {n:.2f}" for limits, n in trips.items())
                                          or "(no ECGW_TEST_REDIS_URL: not measured)") + ".",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    text = asyncio.run(main())
    print(text)
    append(text)
