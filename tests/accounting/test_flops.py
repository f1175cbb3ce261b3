"""Edge FLOPs: the default formula credits prefix-cache hits; variants without credit and with attention."""

from __future__ import annotations

import logging

import pytest

from accounting.flops import FlopsCalculator
from accounting.settings import AccountingSettings, EdgeModel
from accounting.usage import Tokens

MODEL = EdgeModel(params=9e9, layers=4, hidden_size=64)
CALL = Tokens(prompt=1_000, cache_read=600, cache_write=0, output=50)


def test_default_credits_the_prefix_cache() -> None:
    calc = FlopsCalculator({"qwen": MODEL})
    assert calc.flops("qwen", CALL) == 2 * 9e9 * (400 + 50)
    assert calc.formula == "2*N*(raw_input+output)"


def test_no_cache_credit_counts_the_whole_prompt() -> None:
    calc = FlopsCalculator({"qwen": MODEL}, formula="no-cache-credit")
    assert calc.flops("qwen", CALL) == 2 * 9e9 * (1_000 + 50)
    assert calc.formula == "2*N*(prompt+output)"


@pytest.mark.parametrize("formula", ["cache-credit", "no-cache-credit"])
def test_attention_term_sums_over_the_computed_positions(formula: str) -> None:
    calc = FlopsCalculator({"qwen": MODEL}, formula=formula, attention=True)
    first = 600 if formula == "cache-credit" else 0
    brute = sum(2 * 4 * ctx * 64 for ctx in range(first, 1_050))
    dense = 2 * 9e9 * ((400 if formula == "cache-credit" else 1_000) + 50)
    assert calc.flops("qwen", CALL) == pytest.approx(dense + brute)
    assert calc.formula.endswith("+ 2*L*ctx*d_attn")


def test_d_attn_prefers_heads_times_head_dim() -> None:
    assert EdgeModel(params=1, hidden_size=576, attention_heads=9, head_dim=32).d_attn == 288
    assert EdgeModel(params=1, hidden_size=576).d_attn == 576


def test_attention_needs_the_model_shape() -> None:
    with pytest.raises(ValueError, match="flops_attention"):
        AccountingSettings(flops_attention=True, edge_models={"m": EdgeModel(params=1e9)})


def test_unknown_edge_model_is_null_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    calc = FlopsCalculator({})
    with caplog.at_level(logging.WARNING, logger="ecgw.accounting"):
        assert calc.flops("mystery", CALL) is None
        assert calc.flops("mystery", CALL) is None
    assert len([r for r in caplog.records if "mystery" in r.getMessage()]) == 1


def test_model_names_match_without_provider_prefix_and_case() -> None:
    assert FlopsCalculator({"Qwen3.5-9B": MODEL}).flops("hosted_vllm/qwen3.5-9b", CALL) is not None
