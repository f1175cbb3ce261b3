"""Prices from config (with context tiers), litellm's cost map as fallback, null for unknown models, parity."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from accounting.pricing import Pricer, bundled_litellm_cost_map, table_version
from accounting.settings import ModelPrice
from accounting.usage import Tokens
from gateway.config.settings import load_settings
from tests.real_parts import acebench_data

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shipped() -> Pricer:
    accounting = load_settings(ROOT / "config.yaml").accounting
    return Pricer(accounting.prices, price_version=accounting.price_version)


@pytest.mark.parametrize(("model", "rates"), [
    ("deepseek/deepseek-v4-pro", (1.74, 0.0145, 1.74, 3.48)),
    ("DeepSeek-v4.1-Flash", (0.15, 0.003, 0.15, 0.6)),
    ("openrouter/z-ai/glm-5.3", (1.4, 0.26, 1.4, 4.40)),
    ("openai/gpt-5.4", (2.5, 0.25, 2.5, 15.0)),
])
def test_shipped_prices(shipped: Pricer, model: str, rates: tuple[float, ...]) -> None:
    price = shipped.price(model)
    assert price is not None and price.version == "paper-2026-05"
    assert price.rates(10_000) == pytest.approx(rates)


def test_gpt54_long_context_tier_applies_above_272k_prompt_tokens(shipped: Pricer) -> None:
    price = shipped.price("gpt-5.4")
    assert price is not None
    assert price.rates(272_000)[0] == 2.5
    assert price.rates(272_001) == pytest.approx((5.0, 0.5, 5.0, 22.5))
    long_call = Tokens(prompt=300_000, cache_read=200_000, cache_write=0, output=1_000)
    assert price.cost(long_call) == pytest.approx((100_000 * 5 + 200_000 * 0.5 + 1_000 * 22.5) / 1e6)


@pytest.mark.parametrize(("cloud", "model"), [("gpt-5.4", "openai/gpt-5.4"),
                                               ("deepseek-v4-pro", "deepseek/deepseek-v4-pro")])
def test_cloud_only_parity_with_the_leaderboard(shipped: Pricer, cloud: str, model: str) -> None:
    """GPT-5.4: raw 5.46M, cache 22.92M, output 1.02M → $34.69, priced per call (each call under the 272k
    tier; priced as one 28M-token call it would wrongly take the long-context tier)."""
    row = next(r for r in json.loads((acebench_data() / "leaderboard.json").read_text())["rows"]
               if r["strategy"] == "cloud-only" and r.get("cloud") == cloud)
    price = shipped.price(model)
    assert price is not None
    calls = 2_000  # the benchmark's tokens spread over agent steps of realistic size
    raw, cache, out = (round(row[k] * 1e6 / calls) for k in ("raw", "cache", "out"))
    per_call = Tokens(prompt=raw + cache, cache_read=cache, cache_write=0, output=out)
    assert per_call.prompt < 272_000
    total = sum(price.cost(per_call) for _ in range(calls))
    assert abs(total - row["cost"]) <= 0.01 + 1e-9, total


def test_litellm_cost_map_is_the_fallback() -> None:
    cost_map, version = bundled_litellm_cost_map()
    entry = cost_map["deepseek/deepseek-chat"]
    price = Pricer({}).price("deepseek/deepseek-chat")
    assert price is not None and price.version == version and version.startswith("litellm-")
    tokens = Tokens(prompt=1_000_000, cache_read=400_000, cache_write=0, output=100_000)
    expected = (600_000 * entry["input_cost_per_token"] + 400_000 * entry["cache_read_input_token_cost"]
                + 100_000 * entry["output_cost_per_token"])
    assert price.cost(tokens) == pytest.approx(expected)


def test_litellm_tiers_are_read() -> None:
    price = Pricer({}).price("gpt-5.4", use_fallback=True)
    assert price is not None and price.rates(300_000) == pytest.approx((5.0, 0.5, 5.0, 22.5))


def test_config_wins_over_litellm() -> None:
    price = Pricer({"deepseek-chat": ModelPrice(input=9, output=9)}).price("deepseek/deepseek-chat")
    assert price is not None and price.rates(1)[0] == 9


def test_unknown_model_has_no_price_and_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    pricer = Pricer({})
    with caplog.at_level(logging.WARNING, logger="ecgw.accounting"):
        assert pricer.price("acme/never-heard-of-it") is None
        assert pricer.price("acme/never-heard-of-it") is None
    assert len([r for r in caplog.records if "never-heard-of-it" in r.getMessage()]) == 1


def test_no_fallback_when_switched_off() -> None:
    assert Pricer({}, fallback=None).price("gpt-4o") is None


def test_cache_prices_default_to_input() -> None:
    price = Pricer({"m": ModelPrice(input=3, output=6)}, fallback=None).price("m")
    assert price is not None and price.rates(10) == (3, 3, 3, 6)


def test_price_version_defaults_to_a_hash_of_the_table() -> None:
    a = {"m": ModelPrice(input=1, output=2)}
    b = {"m": ModelPrice(input=1, output=3)}
    assert table_version(a) != table_version(b) and table_version(a) == table_version(dict(a))
    price = Pricer(a, fallback=None).price("m")
    assert price is not None and price.version == table_version(a)


def test_a_tier_without_cache_prices_keeps_the_models_cache_discount() -> None:
    model = ModelPrice(input=2.0, cache_read=0.2, cache_write=2.5, output=8.0,
                       tiers=[{"above_prompt_tokens": 200_000, "input": 4.0, "output": 12.0}])
    price = Pricer({"m": model}, price_version="t").price("m")
    assert price is not None
    assert price.rates(1_000) == (2.0, 0.2, 2.5, 8.0)
    assert price.rates(300_000) == (4.0, 0.4, 5.0, 12.0)  # scaled with the tier's input, not billed at 4.0
