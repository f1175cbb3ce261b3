"""USD per call: the price table in config, then litellm's bundled cost map, else ``None`` (never a guess)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accounting.settings import ModelPrice, PriceTier
from accounting.usage import Tokens

log = logging.getLogger("ecgw.accounting")

_TIER_KEY = re.compile(r"^input_cost_per_token_above_(\d+)k_tokens$")


@dataclass(frozen=True)
class Price:
    """A resolved price: where it came from and its version."""

    model: ModelPrice
    version: str

    def rates(self, prompt_tokens: int) -> tuple[float, float, float, float]:
        """(input, cache_read, cache_write, output) USD per 1M tokens for a call with this prompt size."""
        tier: ModelPrice | PriceTier = self.model
        for candidate in sorted(self.model.tiers, key=lambda t: t.above_prompt_tokens):
            if prompt_tokens > candidate.above_prompt_tokens:
                tier = candidate
        # A tier without its own cache prices keeps the model's cache discount: the base cache price scaled
        # by the tier's input price (litellm's map lists tiered input prices without tiered cache prices).
        scale = tier.input / self.model.input if self.model.input else 1.0

        def cached(own: float | None, base: float | None) -> float:
            if own is not None:
                return own
            return base * scale if base is not None else tier.input

        cache_read = cached(tier.cache_read, self.model.cache_read)
        cache_write = cached(tier.cache_write, self.model.cache_write)
        return tier.input, cache_read, cache_write, tier.output

    def cost(self, tokens: Tokens) -> float:
        inp, read, write, out = self.rates(tokens.prompt)
        total = tokens.raw_input * inp + tokens.cache_read * read + tokens.cache_write * write + tokens.output * out
        return max(total, 0.0) / 1_000_000


def table_version(prices: Mapping[str, ModelPrice]) -> str:
    canonical = json.dumps({k.lower(): v.model_dump() for k, v in sorted(prices.items())}, sort_keys=True)
    return "config-" + hashlib.sha256(canonical.encode()).hexdigest()[:10]


def _per_million(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return round(float(value) * 1_000_000, 9)
    return None


def litellm_price(entry: Mapping[str, Any]) -> ModelPrice | None:
    """A litellm cost-map entry (USD per token, ``*_above_NNNk_tokens`` tiers) as a ``ModelPrice``."""
    inp, out = _per_million(entry.get("input_cost_per_token")), _per_million(entry.get("output_cost_per_token"))
    if inp is None or out is None:
        return None
    tiers: list[PriceTier] = []
    for key in entry:
        match = _TIER_KEY.match(key)
        if not match:
            continue
        suffix = f"_above_{match.group(1)}k_tokens"
        tier_in = _per_million(entry[key])
        tier_out = _per_million(entry.get("output_cost_per_token" + suffix))
        if tier_in is None or tier_out is None:
            continue
        tiers.append(PriceTier(above_prompt_tokens=int(match.group(1)) * 1000, input=tier_in, output=tier_out,
                               cache_read=_per_million(entry.get("cache_read_input_token_cost" + suffix)),
                               cache_write=_per_million(entry.get("cache_creation_input_token_cost" + suffix))))
    return ModelPrice(input=inp, output=out, cache_read=_per_million(entry.get("cache_read_input_token_cost")),
                      cache_write=_per_million(entry.get("cache_creation_input_token_cost")), tiers=tiers)


def bundled_litellm_cost_map() -> tuple[dict[str, Any], str]:
    """litellm's cost map from the JSON file it ships (no import of litellm, no network)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}, "litellm-missing"
    path = Path(spec.origin).parent / "model_prices_and_context_window_backup.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, "litellm-missing"
    try:
        version = importlib.metadata.version("litellm")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return (data if isinstance(data, dict) else {}), f"litellm-{version}"


def _names(model: str) -> list[str]:
    lowered = model.lower()
    names = [model, lowered]
    if "/" in lowered:
        names.append(lowered.rsplit("/", 1)[1])
    return list(dict.fromkeys(names))


class Pricer:
    """Resolves a model's price once and caches it; warns once per model it cannot price. Thread-safe."""

    def __init__(self, prices: Mapping[str, ModelPrice], *, price_version: str | None = None,
                 fallback: Callable[[], tuple[dict[str, Any], str]] | None = bundled_litellm_cost_map) -> None:
        self._table = {k.lower(): v for k, v in prices.items()}
        self._version = price_version or table_version(prices)
        self._fallback = fallback
        self._fallback_map: tuple[dict[str, Any], str] | None = None
        self._resolved: dict[str, Price | None] = {}
        self._lock = threading.Lock()

    def _litellm(self) -> tuple[dict[str, Any], str]:
        if self._fallback_map is None:
            self._fallback_map = self._fallback() if self._fallback is not None else ({}, "none")
        return self._fallback_map

    def _resolve(self, model: str, *, use_fallback: bool) -> Price | None:
        for name in _names(model):
            if name.lower() in self._table:
                return Price(self._table[name.lower()], self._version)
        if not use_fallback:
            return None
        cost_map, version = self._litellm()
        for name in _names(model):
            entry = cost_map.get(name)
            if isinstance(entry, Mapping):
                price = litellm_price(entry)
                if price is not None:
                    return Price(price, version)
        return None

    def price(self, model: str, *, use_fallback: bool = True, warn: bool = True) -> Price | None:
        key = f"{model}\0{use_fallback}"
        if key in self._resolved:
            return self._resolved[key]
        with self._lock:
            if key not in self._resolved:
                price = self._resolve(model, use_fallback=use_fallback)
                if price is None and warn:
                    log.warning("no price for model %r in accounting.prices%s; its calls are recorded with "
                                "cost_usd = null. Add it to accounting.prices in config.yaml.", model,
                                " or litellm's cost map" if use_fallback else "")
                self._resolved[key] = price
        return self._resolved[key]
