"""One token vocabulary for every provider's ``usage`` object.

OpenAI (and litellm's normalised output, streaming or not): ``prompt_tokens`` includes cached tokens, which are
``prompt_tokens_details.cached_tokens``. Anthropic through litellm: the same, plus ``cache_read_input_tokens`` and
``cache_creation_input_tokens``; Anthropic's native shape has ``input_tokens`` *excluding* both. DeepSeek:
``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens`` (litellm keeps them in JSON, drops them in streams but
keeps ``cached_tokens``). OpenAI's Responses API: ``input_tokens`` including ``input_tokens_details.cached_tokens``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accounting.errors import EcgwError


class MalformedUsage(EcgwError, ValueError):
    """The upstream's usage cannot be trusted (wrong types, negative counts)."""


@dataclass(frozen=True)
class Tokens:
    prompt: int
    cache_read: int
    cache_write: int
    output: int
    reasoning: int | None = None

    @property
    def raw_input(self) -> int:
        """The benchmark's definition: prompt − cache_read − cache_write, floored at 0."""
        return max(self.prompt - self.cache_read - self.cache_write, 0)


def _count(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedUsage(f"{where} is {value!r}, not a number")
    if value < 0 or value != value or value == float("inf"):
        raise MalformedUsage(f"{where} is {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise MalformedUsage(f"{where} is {value!r}, not a whole number")
    return int(value)


def _details(usage: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = usage.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MalformedUsage(f"{key} is {value!r}, not an object")
    return value


def _first(*candidates: tuple[Any, str]) -> int | None:
    for value, where in candidates:
        counted = _count(value, where)
        if counted is not None:
            return counted
    return None


def normalise(usage: Mapping[str, Any] | None) -> Tokens | None:
    """``None`` when the upstream reported nothing usable; raises ``MalformedUsage`` on nonsense."""
    if usage is None:
        return None
    if not isinstance(usage, Mapping):
        raise MalformedUsage(f"usage is {type(usage).__name__}, not an object")
    prompt_details = _details(usage, "prompt_tokens_details")
    input_details = _details(usage, "input_tokens_details")
    completion_details = _details(usage, "completion_tokens_details")
    output_details = _details(usage, "output_tokens_details")
    anthropic_read = _count(usage.get("cache_read_input_tokens"), "cache_read_input_tokens")
    anthropic_write = _count(usage.get("cache_creation_input_tokens"), "cache_creation_input_tokens")
    cache_read = _first(
        (prompt_details.get("cached_tokens"), "prompt_tokens_details.cached_tokens"),
        (anthropic_read, "cache_read_input_tokens"),
        (usage.get("prompt_cache_hit_tokens"), "prompt_cache_hit_tokens"),
        (input_details.get("cached_tokens"), "input_tokens_details.cached_tokens"),
    ) or 0
    cache_write = _first(
        (anthropic_write, "cache_creation_input_tokens"),
        (prompt_details.get("cache_creation_tokens"), "prompt_tokens_details.cache_creation_tokens"),
    ) or 0
    prompt = _count(usage.get("prompt_tokens"), "prompt_tokens")
    if prompt is None:
        native_input = _count(usage.get("input_tokens"), "input_tokens")
        if native_input is not None and (anthropic_read is not None or anthropic_write is not None):
            prompt = native_input + (anthropic_read or 0) + (anthropic_write or 0)  # Anthropic: excludes cache
        else:
            prompt = native_input
    output = _first((usage.get("completion_tokens"), "completion_tokens"),
                    (usage.get("output_tokens"), "output_tokens"))
    if prompt is None and output is None:
        return None
    reasoning = _first((completion_details.get("reasoning_tokens"), "completion_tokens_details.reasoning_tokens"),
                       (output_details.get("reasoning_tokens"), "output_tokens_details.reasoning_tokens"))
    return Tokens(prompt=prompt or 0, cache_read=cache_read, cache_write=cache_write, output=output or 0,
                  reasoning=reasoning)
