"""Requests and tokens per minute (``rpm``, ``tpm``): one counter per scope and UTC minute in the session store,
counted by an atomic update, so every worker of every replica admits the same number of requests.

A request counts once when it arrives, with its tokens counted as OpenAI counts them against a rate limit: the
prompt (generously estimated) plus ``max_tokens`` × ``n`` (or the default cap). A request that would pass a limit
is refused whole (nothing is counted) with ``Retry-After`` and the ``x-ratelimit-*`` headers OpenAI sends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from privacy.session_store import SessionStore, SessionStoreUnavailable
from router.budgets.errors import BudgetUnavailable, RateLimited
from router.budgets.ledger import Scope
from router.budgets.windows import seconds_left, window_start

_KEY = "used"


@dataclass
class _Seen:
    requests: int = 0
    tokens: int = 0
    refused: str | None = None


def _reset(seconds: int) -> str:
    """OpenAI's reset format: ``1s``, ``59s`` (never more than a minute here)."""
    return f"{seconds}s"


class RateLimits:
    def __init__(self, store: SessionStore, *, clock: Callable[[], float]) -> None:
        self._store = store
        self._clock = clock

    async def admit(self, scopes: Sequence[Scope], tokens: int) -> dict[str, str]:
        """Count one request of ``tokens`` against every scope with a rate limit; the ``x-ratelimit-*`` headers of
        the tightest; ``RateLimited`` (nothing counted) when one would pass its limit."""
        limited = [s for s in scopes if s.limits.rpm is not None or s.limits.tpm is not None]
        if not limited:
            return {}
        now = self._clock()
        minute = window_start("1m", now)
        retry = seconds_left("1m", now)
        counted: list[Scope] = []
        headers: dict[str, str] = {}
        try:
            for scope in limited:
                seen = await self._count(scope, minute, 1, tokens, check=True)
                if seen.refused is not None:
                    raise RateLimited(self._message(scope, seen, retry),
                                      {"retry-after": str(retry), **_headers(scope, seen, retry)})
                counted.append(scope)
                headers = _tighter(headers, _headers(scope, seen, retry))
        except BaseException:
            for scope in counted:  # all or none: give back what this request counted
                try:
                    await self._count(scope, minute, -1, -tokens, check=False)
                except BudgetUnavailable:
                    pass
            raise
        return headers

    async def _count(self, scope: Scope, minute: int, requests: int, tokens: int, *, check: bool) -> _Seen:
        seen = _Seen()
        rpm, tpm = scope.limits.rpm, scope.limits.tpm

        def apply(current: Any | None) -> dict[str, int]:
            doc = dict(current) if isinstance(current, dict) else {}
            used_r, used_t = int(doc.get("requests") or 0), int(doc.get("tokens") or 0)
            seen.requests, seen.tokens, seen.refused = used_r, used_t, None
            if check and rpm is not None and used_r + requests > rpm:
                seen.refused = "requests"
                return doc
            if check and tpm is not None and used_t + tokens > tpm and used_t > 0:
                seen.refused = "tokens"  # (a first request larger than the whole limit still passes, as OpenAI's)
                return doc
            seen.requests, seen.tokens = used_r + requests, used_t + tokens
            return {"requests": seen.requests, "tokens": seen.tokens}

        try:
            await self._store.update(f"~rate/{scope.store_id}/{minute}", _KEY, apply)
        except SessionStoreUnavailable as exc:
            raise BudgetUnavailable(f"rate-limit counters unreadable: {exc}") from exc
        return seen

    @staticmethod
    def _message(scope: Scope, seen: _Seen, retry: int) -> str:
        if seen.refused == "requests":
            return (f"Rate limit reached for {scope.name}: {scope.limits.rpm} requests per minute "
                    f"({seen.requests} used). Retry in {retry}s.")
        return (f"Rate limit reached for {scope.name}: {scope.limits.tpm} tokens per minute ({seen.tokens} used, "
                f"counting prompts and max_tokens). Retry in {retry}s.")

    async def used(self, scope: Scope) -> tuple[int, int, float]:
        """(requests, tokens, minute start) counted in the current minute, for ``GET /v1/budget``."""
        now = self._clock()
        minute = window_start("1m", now)
        try:
            doc = await self._store.get(f"~rate/{scope.store_id}/{minute}", _KEY)
        except SessionStoreUnavailable as exc:
            raise BudgetUnavailable(f"rate-limit counters unreadable: {exc}") from exc
        doc = doc if isinstance(doc, dict) else {}
        return int(doc.get("requests") or 0), int(doc.get("tokens") or 0), float(minute)


def _headers(scope: Scope, seen: _Seen, retry: int) -> dict[str, str]:
    out: dict[str, str] = {}
    if scope.limits.rpm is not None:
        out.update({"x-ratelimit-limit-requests": str(scope.limits.rpm),
                    "x-ratelimit-remaining-requests": str(max(scope.limits.rpm - seen.requests, 0)),
                    "x-ratelimit-reset-requests": _reset(retry)})
    if scope.limits.tpm is not None:
        out.update({"x-ratelimit-limit-tokens": str(scope.limits.tpm),
                    "x-ratelimit-remaining-tokens": str(max(scope.limits.tpm - seen.tokens, 0)),
                    "x-ratelimit-reset-tokens": _reset(retry)})
    return out


def _tighter(a: dict[str, str], b: dict[str, str]) -> dict[str, str]:
    """Per trio (requests, tokens), the one with less remaining."""
    out = dict(a)
    for unit in ("requests", "tokens"):
        key = f"x-ratelimit-remaining-{unit}"
        if key in b and (key not in a or int(b[key]) < int(a[key])):
            for name in ("limit", "remaining", "reset"):
                out[f"x-ratelimit-{name}-{unit}"] = b[f"x-ratelimit-{name}-{unit}"]
    return out
