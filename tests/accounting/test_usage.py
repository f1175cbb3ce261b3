"""Usage normalisation across providers, estimation when the upstream reports nothing, malformed usage."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from accounting.builder import RecordBuilder
from accounting.calls import UpstreamCall
from accounting.estimate import TokenEstimator
from accounting.flops import FlopsCalculator
from accounting.pricing import Pricer
from accounting.settings import EdgeModel, ModelPrice
from accounting.usage import MalformedUsage, Tokens, normalise
from gateway.cli.offline import prepare_offline_environment

prepare_offline_environment()


def test_openai_cached_tokens_are_cache_reads_and_reasoning_is_kept() -> None:
    tokens = normalise({"prompt_tokens": 1000, "completion_tokens": 300, "total_tokens": 1300,
                        "prompt_tokens_details": {"cached_tokens": 768},
                        "completion_tokens_details": {"reasoning_tokens": 120}})
    assert tokens == Tokens(prompt=1000, cache_read=768, cache_write=0, output=300, reasoning=120)
    assert tokens is not None and tokens.raw_input == 232


def test_anthropic_through_litellm_counts_cache_writes_out_of_raw_input() -> None:
    # litellm's Anthropic usage: prompt_tokens includes cache reads and writes.
    tokens = normalise({"prompt_tokens": 5000, "completion_tokens": 50, "cache_read_input_tokens": 3000,
                        "cache_creation_input_tokens": 1500,
                        "prompt_tokens_details": {"cached_tokens": 3000, "cache_creation_tokens": 1500}})
    assert tokens is not None
    assert (tokens.prompt, tokens.cache_read, tokens.cache_write, tokens.raw_input) == (5000, 3000, 1500, 500)


def test_anthropic_native_input_tokens_exclude_the_cache() -> None:
    tokens = normalise({"input_tokens": 500, "output_tokens": 50, "cache_read_input_tokens": 3000,
                        "cache_creation_input_tokens": 1500})
    assert tokens is not None
    assert (tokens.prompt, tokens.cache_read, tokens.cache_write, tokens.raw_input, tokens.output) == \
        (5000, 3000, 1500, 500, 50)


def test_deepseek_cache_hits_without_openai_details() -> None:
    tokens = normalise({"prompt_tokens": 400, "completion_tokens": 10, "prompt_cache_hit_tokens": 384,
                        "prompt_cache_miss_tokens": 16})
    assert tokens is not None and (tokens.cache_read, tokens.raw_input) == (384, 16)


def test_responses_api_shape() -> None:
    tokens = normalise({"input_tokens": 900, "output_tokens": 70, "input_tokens_details": {"cached_tokens": 600},
                        "output_tokens_details": {"reasoning_tokens": 20}})
    assert tokens == Tokens(prompt=900, cache_read=600, cache_write=0, output=70, reasoning=20)


def test_raw_input_is_floored_at_zero() -> None:
    tokens = normalise({"prompt_tokens": 10, "completion_tokens": 1, "cache_read_input_tokens": 8,
                        "cache_creation_input_tokens": 8})
    assert tokens is not None and tokens.raw_input == 0


def test_no_usage_is_none() -> None:
    assert normalise(None) is None
    assert normalise({}) is None


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": -5, "completion_tokens": 3},
    {"prompt_tokens": "12", "completion_tokens": 3},
    {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": -1}},
    {"prompt_tokens": 12.5, "completion_tokens": 3},
    {"prompt_tokens": 12, "completion_tokens": True},
    {"prompt_tokens": 12, "completion_tokens": 3, "prompt_tokens_details": "lots"},
])
def test_malformed_usage_raises(usage: dict[str, Any]) -> None:
    with pytest.raises(MalformedUsage):
        normalise(usage)


# the builder: source of the figures ------------------------------------------------------------------------------

def _builder() -> RecordBuilder:
    return RecordBuilder(Pricer({"gpt-test": ModelPrice(input=2.0, cache_read=0.5, output=8.0)}, fallback=None),
                         FlopsCalculator({"edge-model": EdgeModel(params=1e9)}), TokenEstimator())


def _call(**kw: Any) -> UpstreamCall:
    base: dict[str, Any] = dict(request_id="req-1", session_id="s", policy="cloud-only", purpose="step",
                                side="cloud", provider="openai", model="openai/gpt-test", streamed=False, status=200,
                                started_at=1_780_000_000.0, latency_s=0.2, ttft_s=0.1)
    base.update(kw)
    return UpstreamCall(**base)


BODY = {"messages": [{"role": "system", "content": "You are terse."},
                     {"role": "user", "content": "Name three prime numbers, please."}]}


def test_missing_usage_is_estimated_with_the_bundled_tokenizer() -> None:
    import tiktoken

    enc = tiktoken.get_encoding("o200k_base")
    row = _builder().build(_call(usage=None, request_body=BODY, output_text="2, 3 and 5."))
    expected_prompt = 3 + sum(3 + len(enc.encode(m["role"])) + len(enc.encode(m["content"]))
                              for m in BODY["messages"])
    assert row["usage_source"] == "estimated"
    assert row["prompt_tokens"] == expected_prompt
    assert row["output_tokens"] == len(enc.encode("2, 3 and 5."))
    assert row["cache_read_tokens"] == 0 and row["raw_input_tokens"] == expected_prompt
    assert row["cost_usd"] == pytest.approx((expected_prompt * 2.0 + row["output_tokens"] * 8.0) / 1e6)


def test_upstream_usage_is_used_as_is() -> None:
    row = _builder().build(_call(usage={"prompt_tokens": 100, "completion_tokens": 10,
                                        "prompt_tokens_details": {"cached_tokens": 64}}, request_body=BODY))
    assert row["usage_source"] == "upstream"
    assert (row["prompt_tokens"], row["cache_read_tokens"], row["raw_input_tokens"], row["output_tokens"]) == \
        (100, 64, 36, 10)
    assert row["cost_usd"] == pytest.approx((36 * 2.0 + 64 * 0.5 + 10 * 8.0) / 1e6)


def test_negative_usage_is_estimated_with_a_warning_and_never_a_negative_cost(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ecgw.accounting"):
        row = _builder().build(_call(usage={"prompt_tokens": -1000, "completion_tokens": -5},
                                     request_body=BODY, output_text="fine"))
    assert row["usage_source"] == "estimated"
    assert row["prompt_tokens"] > 0 and row["cost_usd"] > 0
    assert any("malformed usage" in r.getMessage() for r in caplog.records)


def test_a_failed_call_without_output_costs_nothing() -> None:
    row = _builder().build(_call(status=502, usage=None, request_body=BODY))
    assert (row["usage_source"], row["prompt_tokens"], row["output_tokens"], row["cost_usd"]) == ("none", 0, 0, 0.0)


def test_a_stream_the_client_abandoned_is_estimated_from_what_was_streamed() -> None:
    row = _builder().build(_call(status=499, streamed=True, usage=None, request_body=BODY, output_text="2, 3"))
    assert row["usage_source"] == "estimated" and row["output_tokens"] > 0


def test_edge_calls_get_flops_and_no_cost_unless_priced() -> None:
    row = _builder().build(_call(side="edge", provider="vllm", model="edge-model",
                                 usage={"prompt_tokens": 100, "completion_tokens": 20,
                                        "prompt_tokens_details": {"cached_tokens": 32}}))
    assert row["edge_flops"] == 2 * 1e9 * (68 + 20)
    assert row["flops_formula"] == "2*N*(raw_input+output)"
    assert row["cost_usd"] is None and row["price_version"] is None


def test_record_fields_cover_the_issue() -> None:
    row = _builder().build(_call(usage={"prompt_tokens": 1, "completion_tokens": 1}, experiment="exp", arm="b"))
    for field in ("started_at", "day", "request_id", "session_id", "experiment", "arm", "policy", "purpose", "side",
                  "provider", "model", "streamed", "status", "latency_s", "ttft_s", "prompt_tokens",
                  "cache_read_tokens", "cache_write_tokens", "raw_input_tokens", "output_tokens", "reasoning_tokens",
                  "usage_source", "cost_usd", "price_version", "edge_flops", "flops_formula"):
        assert field in row
    assert row["day"] == "2026-05-28" and (row["experiment"], row["arm"]) == ("exp", "b")
