"""What a call costs, in the four measures budgets count: ``usd``, ``tokens`` and ``calls`` of the cloud,
``pflops`` of the edge. An estimate before the call (the reservation), the actual after it (the settlement).

The estimate is an upper bound on purpose: prompt tokens counted generously (a token per 3 bytes of the request's
messages and tools, no cache credit), plus the output cap × ``n`` at the output price. It is an upper bound of what
the door sends, not of what a request says: ``max_tokens``, ``max_completion_tokens`` and ``n`` are whole numbers
or refused (``check_output_limits``: a float such as ``100000.0`` or ``n: 5.0`` cannot be reserved honestly), the
door sends one output cap (``one_cap``: the smaller of the two, which both ask for), and a call whose request names
none is sent with the cap its reservation assumed (``limits.default_max_tokens``). The actual is what metering records for the call (``accounting.builder``: the upstream's usage with cache
reads at their own price, else the tokenizer's estimate), so a counter settles to the metering database's figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import orjson

from accounting.builder import RecordBuilder
from accounting.calls import UpstreamCall
from accounting.errors import EcgwError
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


CAPS = ("max_completion_tokens", "max_tokens")  # OpenAI's output caps, the current name first
SENT_CAP = CAPS[0]  # the name the door sends one cap under: every current OpenAI model takes it, litellm maps it


class BadOutputLimit(EcgwError, ValueError):
    """An output cap or ``n`` that is not a whole number of at least 1 (the gateway answers 400 naming it)."""

    def __init__(self, name: str, value: Any) -> None:
        super().__init__(f"'{name}' must be a whole number of at least 1 (it is {value!r}); budgets reserve a "
                         "call's output from it, so it cannot be a fraction, a float or a string.")
        self.name = name


def check_output_limits(body: Mapping[str, Any]) -> None:
    """``BadOutputLimit`` for the first of ``max_completion_tokens``, ``max_tokens`` and ``n`` that is set (not
    null) but is no whole number ≥ 1."""
    for name in (*CAPS, "n"):
        value = body.get(name)
        if value is not None and _whole(value) is None:
            raise BadOutputLimit(name, value)


def stated_cap(body: Mapping[str, Any]) -> int | None:
    """The one output cap a body states: the smaller of ``max_completion_tokens`` and ``max_tokens`` (a call that
    names both is held to both); None when it states none."""
    caps = [cap for name in CAPS if (cap := _whole(body.get(name))) is not None]
    return min(caps) if caps else None


def one_cap(body: dict[str, Any], default: int | None = None) -> dict[str, Any]:
    """``body`` with a single output cap, as the door sends it: ``stated_cap`` (else ``default``, the cap a
    reservation assumed, when given) under one name — ``max_tokens`` when that is the only one the body names,
    else ``max_completion_tokens``; ``body`` itself when nothing changes."""
    cap = stated_cap(body) or default
    named = [name for name in CAPS if name in body]
    if cap is None or (len(named) == 1 and body[named[0]] == cap):
        return body
    out = {name: value for name, value in body.items() if name not in CAPS}
    out[CAPS[1] if named == [CAPS[1]] else SENT_CAP] = cap
    return out


def output_cap(body: Mapping[str, Any], default_max_tokens: int) -> int:
    """``stated_cap`` (else the default cap), times ``n``."""
    return (stated_cap(body) or default_max_tokens) * (_whole(body.get("n")) or 1)


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
