"""OpenTelemetry's GenAI semantic conventions on an upstream call's span (``gen_ai.*``, beside ``ecgw.*``), so
Jaeger, Langfuse or Phoenix show operations, providers, models, tokens and finish reasons without a custom mapping.
Never content: only names, counts and finish reasons. The conversation id (the keyed session hash) is set where
the session is known, on the request's span (``gateway.surfaces.pipeline``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from accounting.usage import Tokens
from router.spans import Span

OPERATION = "chat"


def requested(model: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": OPERATION, "gen_ai.request.model": model}


def finish_reasons(choices: Iterable[Any]) -> list[str]:
    return [str(c["finish_reason"]) for c in choices if isinstance(c, Mapping) and c.get("finish_reason")]


def answered(span: Span, *, provider: str, model: str | None, reasons: list[str]) -> None:
    span.set("gen_ai.provider.name", provider)
    if model:
        span.set("gen_ai.response.model", model)
    if reasons:
        span.set("gen_ai.response.finish_reasons", ",".join(reasons))


def used(span: Span, tokens: Tokens) -> None:
    span.set("gen_ai.usage.input_tokens", tokens.prompt)
    span.set("gen_ai.usage.output_tokens", tokens.output)
    span.set("gen_ai.usage.cache_read.input_tokens", tokens.cache_read)
