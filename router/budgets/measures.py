"""What a call costs, in the four measures budgets count: ``usd``, ``tokens`` and ``calls`` of the cloud,
``pflops`` of the edge. An estimate before the call (the reservation), the actual after it (the settlement).

The estimate is an upper bound on purpose: prompt tokens counted generously (a token per 3 bytes of the request's
messages and tools, no cache credit), plus ``max_tokens`` × ``n`` (or the target's default cap) at the output
price. The actual is what metering records for the call (``accounting.builder``: the upstream's usage with cache
reads at their own price, else the tokenizer's estimate), so a counter settles to the metering database's figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import orjson

from accounting.builder import RecordBuilder
from accounting.calls import UpstreamCall
from accounting.pricing import Price

Measures = dict[str, float]
MEASURE = {"cloud_usd": "usd", "cloud_tokens": "tokens", "cloud_calls": "calls", "edge_pflops": "pflops"}
CLOUD_KINDS = ("cloud_usd", "cloud_tokens", "cloud_calls")
EDGE_KINDS = ("edge_pflops",)
_BYTES_PER_TOKEN = 3  # generous: English runs ~4 bytes a token, code ~3, CJK 3 bytes a character and token


class Prices(Protocol):
    """The one price look-up a reservation uses (``accounting.pricing.Pricer``; a cloud target may bring its own)."""

    def price(self, model: str, *, use_fallback: bool = True, warn: bool = True) -> Price | None: ...


def _whole(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """A generous count of the prompt's tokens: a token per 3 bytes of its messages and tools as JSON."""
    try:
        size = len(orjson.dumps([body.get("messages") or [], body.get("tools") or []]))
    except TypeError:  # not JSON-able (it could not be sent either): count its text
        size = len(str(body.get("messages"))) + len(str(body.get("tools") or ""))
    return size // _BYTES_PER_TOKEN + 1


def output_cap(body: Mapping[str, Any], default_max_tokens: int) -> int:
    """``max_completion_tokens`` or ``max_tokens`` (else the default cap), times ``n``."""
    cap = _whole(body.get("max_completion_tokens")) or _whole(body.get("max_tokens")) or default_max_tokens
    return cap * (_whole(body.get("n")) or 1)


class Estimator:
    """Estimates before a call, actuals after it; prices by the model that will answer (``Prices``)."""

    def __init__(self, prices: Prices, builder: RecordBuilder, *, default_max_tokens: int) -> None:
        self._prices = prices
        self._builder = builder
        self._default_cap = default_max_tokens

    def cloud_estimate(self, body: Mapping[str, Any], model: str) -> Measures:
        prompt = prompt_tokens(body)
        cap = output_cap(body, self._default_cap)
        price = self._prices.price(model)
        usd = 0.0
        if price is not None:
            inp, _, _, out = price.rates(prompt)
            usd = (prompt * inp + cap * out) / 1_000_000
        return {"usd": usd, "tokens": float(prompt + cap), "calls": 1.0}

    def actual(self, call: UpstreamCall) -> Measures:
        """The call as metering records it (same tokens, same price, same FLOPs formula)."""
        row = self._builder.build(call)
        if call.side == "cloud":
            return {"usd": float(row["cost_usd"] or 0.0),
                    "tokens": float(row["prompt_tokens"] + row["output_tokens"]),
                    "calls": 0.0 if row["usage_source"] == "none" else 1.0}  # a call refused before any work
        return {"pflops": float(row["edge_flops"] or 0.0) / 1e15}
