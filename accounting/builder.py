"""Turn an ``UpstreamCall`` into a stored row: tokens (upstream or estimated), USD, edge FLOPs.

Runs off the request path (in the writer's thread), so estimation and price look-ups cost the client nothing.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from typing import Any

from accounting.calls import UpstreamCall
from accounting.estimate import TokenEstimator
from accounting.flops import FlopsCalculator
from accounting.pricing import Pricer
from accounting.usage import MalformedUsage, Tokens, normalise

log = logging.getLogger("ecgw.accounting")

Row = dict[str, Any]


class RecordBuilder:
    def __init__(self, pricer: Pricer, flops: FlopsCalculator, estimator: TokenEstimator) -> None:
        self._pricer = pricer
        self._flops = flops
        self._estimator = estimator

    def tokens(self, call: UpstreamCall) -> tuple[Tokens, str]:
        """The call's tokens and their source: ``upstream``, ``estimated``, or ``none`` (a failed call)."""
        try:
            tokens = normalise(call.usage)
        except MalformedUsage as exc:
            log.warning("upstream %s/%s sent malformed usage (%s) for request %s; estimating its tokens instead",
                        call.side, call.model, exc, call.request_id)
            tokens = None
        if tokens is not None:
            return tokens, "upstream"
        failed = call.status >= 400 and call.status != 499
        if failed and not call.output_text:
            return Tokens(0, 0, 0, 0), "none"
        return self._estimator.estimate(call.request_body, call.output_text), "estimated"

    def build(self, call: UpstreamCall) -> Row:
        tokens, source = self.tokens(call)
        cost: float | None = None
        price_version: str | None = None
        edge_flops: float | None = None
        formula: str | None = None
        pricer = call.prices or self._pricer
        if call.side == "cloud":
            price = pricer.price(call.model)
        else:
            price = pricer.price(call.model, use_fallback=False, warn=False)
            edge_flops = self._flops.flops(call.model, tokens)
            formula = self._flops.formula if edge_flops is not None else None
        if price is not None:
            cost, price_version = price.cost(tokens), price.version
        return {
            "record_id": uuid.uuid4().hex,
            "started_at": call.started_at,
            "day": datetime.fromtimestamp(call.started_at, UTC).strftime("%Y-%m-%d"),
            "request_id": call.request_id[:64],
            "session_id": call.session_id[:256],
            "experiment": call.experiment,
            "arm": call.arm,
            "policy": call.policy,
            "purpose": call.purpose,
            "side": call.side,
            "provider": call.provider,
            "model": call.model,
            "deployment": call.deployment,
            "key_label": call.key_label,
            "streamed": call.streamed,
            "status": call.status,
            "latency_s": call.latency_s,
            "ttft_s": call.ttft_s,
            "prompt_tokens": tokens.prompt,
            "cache_read_tokens": tokens.cache_read,
            "cache_write_tokens": tokens.cache_write,
            "raw_input_tokens": tokens.raw_input,
            "output_tokens": tokens.output,
            "reasoning_tokens": tokens.reasoning,
            "usage_source": source,
            "cost_usd": cost,
            "price_version": price_version,
            "edge_flops": edge_flops,
            "flops_formula": formula,
        }
