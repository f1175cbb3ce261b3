from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accounting.pricing import Price
from accounting.settings import ModelPrice, PriceTier
from accounting.usage import Tokens
from eval.metrics import (
    CloudUsage,
    RunRecord,
    TokenTotals,
    UnitLeak,
    cloud_tokens,
    completion,
    edge_pflops,
    exposure,
    pass_k,
    privacy,
    run_privacy,
    summarize,
)

TASKS = [f"t{i}" for i in range(128)]


def price_of(entry: dict[str, Any], *, tiers: bool = True) -> Price:
    """A leaderboard price as accounting's own (eval has none): the same arithmetic the gateway bills with."""
    tier = []
    if tiers and "long_context_over_tokens" in entry:
        tier = [PriceTier(above_prompt_tokens=entry["long_context_over_tokens"], input=entry["long_input"],
                          cache_read=entry.get("long_cache_read"), output=entry["long_output"])]
    return Price(ModelPrice(input=entry["input"], cache_read=entry["cache_read"], output=entry["output"],
                            tiers=tier), "leaderboard")


def table_cost(tokens: TokenTotals, price: Price) -> float:
    """The paper's R·p + C·p + O·p on totals in millions (no per-call tier: a total is no call)."""
    million = 1_000_000
    raw, cache, out, write = (round(tokens.raw * million), round(tokens.cache_read * million),
                              round(tokens.output * million), round(tokens.cache_write * million))
    return price.cost(Tokens(prompt=raw + cache + write, cache_read=cache, cache_write=write, output=out))


@pytest.fixture(scope="module")
def board(acebench: Path) -> dict[str, Any]:
    return json.loads((acebench / "leaderboard.json").read_text(encoding="utf-8"))


def decimals(value: float) -> int:
    text = repr(float(value))
    return len(text.split(".")[1].rstrip("0")) if "." in text else 0


def half_unit(value: float) -> float:
    return 0.5 * 10 ** -decimals(value) + 1e-9


# ---- completion and Pass^3 ---------------------------------------------------------------------------------------


def test_completion_counts_missing_runs_as_zero() -> None:
    scores = {"a": [1.0, 1.0, 1.0], "b": [0.5], "c": []}
    # a: 1.0, b: 0.5/3, c: 0 (and d, with no entry at all, also 0)
    assert completion(["a", "b", "c", "d"], scores) == pytest.approx(100 * (1 + 0.5 / 3) / 4)


def test_pass3_needs_all_three_runs_at_threshold() -> None:
    scores = {"a": [0.7, 0.7, 1.0], "b": [0.7, 0.69, 1.0], "c": [1.0, 1.0], "d": [0.9, 0.8, 0.75]}
    assert pass_k(["a", "b", "c", "d"], scores) == pytest.approx(50.0)
    # Pass^2 on the first two runs: a, c, d pass; with threshold 0.75, a (0.7, 0.7) no longer does
    two_runs = {t: v[:2] for t, v in scores.items()}
    assert pass_k(["a", "b", "c", "d"], two_runs, runs=2) == pytest.approx(75.0)
    assert pass_k(["a", "b", "c", "d"], two_runs, runs=2, threshold=0.75) == pytest.approx(50.0)


def test_scores_outside_suite_or_too_many_runs_are_errors() -> None:
    with pytest.raises(ValueError, match="outside the suite"):
        completion(["a"], {"b": [1.0]})
    with pytest.raises(ValueError, match="4 scores for 3 runs"):
        pass_k(["a"], {"a": [1, 1, 1, 1]})


def test_leaderboard_pass3_is_k_over_128(board: dict[str, Any]) -> None:
    for row in board["rows"]:
        listed = row["pass3"]
        ks = [k for k in range(129) if abs(100 * k / 128 - listed) <= half_unit(listed)]
        assert len(ks) == 1, row
        k = ks[0]
        # k tasks pass in all three runs; others fail in various ways (one run below 0.7, a run missing)
        scores: dict[str, list[float]] = {}
        for i, task in enumerate(TASKS):
            if i < k:
                scores[task] = [0.7, 1.0, 0.85]
            elif i % 2:
                scores[task] = [1.0, 1.0, 0.6999]
            else:
                scores[task] = [1.0, 1.0]
        assert abs(pass_k(TASKS, scores) - listed) <= half_unit(listed), row


# ---- tokens and cost ---------------------------------------------------------------------------------------------


def test_raw_is_prompt_minus_cache_read_minus_write_floored() -> None:
    assert CloudUsage(prompt=1000, cache_read=600, cache_write=100, output=5).raw == 300
    assert CloudUsage(prompt=100, cache_read=80, cache_write=50).raw == 0
    totals = cloud_tokens([CloudUsage(3_000_000, 1_500_000, 0, 300_000), CloudUsage(100, 80, 50, 0)], runs=3)
    # floored per item before summing: the second contributes 0 raw, not −30
    assert totals == TokenTotals(raw=0.5, cache_read=(1_500_080) / 3e6, output=0.1, cache_write=50 / 3e6)


def test_gpt54_cloud_only_row_cost(board: dict[str, Any]) -> None:
    price = price_of(board["prices_usd_per_mtok"]["gpt-5.4"], tiers=False)
    assert price.rates(1000) == (2.5, 0.25, 2.5, 15.0)
    row = next(r for r in board["rows"] if r["strategy"] == "cloud-only" and r["cloud"] == "gpt-5.4")
    assert (row["raw"], row["cache"], row["out"]) == (5.46, 22.92, 1.02)
    assert table_cost(TokenTotals(5.46, 22.92, 1.02), price) == pytest.approx(34.69, abs=0.01)


def cloud_model(row: dict[str, Any]) -> str:
    return str(row.get("cloud", "gpt-5.4"))  # the hybrid rows' cloud is GPT-5.4 (see the board's source line)


def test_leaderboard_costs_reproduce_within_rounding(board: dict[str, Any]) -> None:
    prices = board["prices_usd_per_mtok"]
    checked = []
    for row in board["rows"]:
        if "cost" not in row or cloud_model(row) not in prices:
            continue
        price = price_of(prices[cloud_model(row)], tiers=False)
        computed = table_cost(TokenTotals(row["raw"], row["cache"], row["out"]), price)
        # the listed token figures are rounded to 0.01M, which bounds how far the listed cost can be
        p_input, p_cache_read, _, p_output = price.rates(0)
        bound = (half_unit(row["raw"]) * p_input + half_unit(row["cache"]) * p_cache_read
                 + half_unit(row["out"]) * p_output + half_unit(row["cost"]))
        assert abs(computed - row["cost"]) <= bound, (row, computed)
        checked.append(row)
    assert len(checked) == 10
    exact = [r for r in checked if r["strategy"] == "cloud-only"]
    assert [cloud_model(r) for r in exact] == ["gpt-5.4", "deepseek-v4-pro"]
    for row in exact:
        price = price_of(prices[cloud_model(row)], tiers=False)
        assert table_cost(TokenTotals(row["raw"], row["cache"], row["out"]), price) == pytest.approx(
            row["cost"], abs=0.01)


def test_summarize_reproduces_gpt54_row_from_per_run_usage(board: dict[str, Any]) -> None:
    price = price_of(board["prices_usd_per_mtok"]["gpt-5.4"])
    records = []
    # 128 tasks × 3 runs whose cloud usage sums to 3 × (5.46M raw, 22.92M cache, 1.02M out)
    for run in range(3):
        for i, task in enumerate(TASKS):
            share = 1 / 128
            cache = round(22.92e6 * share) + (22.92e6 - 128 * round(22.92e6 * share) if i == 0 else 0)
            raw = round(5.46e6 * share) + (5.46e6 - 128 * round(5.46e6 * share) if i == 0 else 0)
            out = round(1.02e6 * share) + (1.02e6 - 128 * round(1.02e6 * share) if i == 0 else 0)
            usage = CloudUsage(int(raw + cache), int(cache), 0, int(out))
            # what accounting charged the run (one call each, well under the long-context tier)
            cost = price.cost(Tokens(usage.prompt, usage.cache_read, 0, usage.output))
            records.append(RunRecord(task, run, 1.0, cloud=usage, cloud_cost_usd=cost))
    summary = summarize("cloud-only", TASKS, records)
    assert summary.tokens.raw == pytest.approx(5.46) and summary.tokens.cache_read == pytest.approx(22.92)
    assert summary.tokens.output == pytest.approx(1.02)
    assert summary.cost_usd == pytest.approx(34.69, abs=0.01 + 1e-9)  # 34.68 from the rounded token figures
    assert summary.completion == 100.0 and summary.pass_k == 100.0


def test_long_context_tier_applies_per_call(board: dict[str, Any]) -> None:
    """The leaderboard's long-context prices, billed by accounting's tiers (the one implementation)."""
    price = price_of(board["prices_usd_per_mtok"]["gpt-5.4"])
    assert price.cost(Tokens(272_000, 0, 0, 1000)) == pytest.approx(0.272 * 2.5 + 0.001 * 15)
    assert price.cost(Tokens(272_001, 1, 0, 1000)) == pytest.approx(0.272 * 5.0 + 0.000001 * 0.5 + 0.001 * 22.5)


def test_cache_write_billed_as_input_unless_priced() -> None:
    tokens = TokenTotals(raw=1, cache_read=1, output=1, cache_write=2)
    plain = Price(ModelPrice(input=3, cache_read=0.3, output=15), "t")
    priced = Price(ModelPrice(input=3, cache_read=0.3, cache_write=3.75, output=15), "t")
    assert table_cost(tokens, plain) == pytest.approx(3 + 0.3 + 15 + 6)
    assert table_cost(tokens, priced) == pytest.approx(3 + 0.3 + 15 + 7.5)


# ---- privacy and FLOPs -------------------------------------------------------------------------------------------


def test_run_privacy_is_weighted() -> None:
    units = [UnitLeak(3, 1.0), UnitLeak(1, 0.0), UnitLeak(2, 0.3), UnitLeak(2, 0.7)]
    assert run_privacy(units) == pytest.approx(1 - (3 + 0.6 + 1.4) / 8)
    assert run_privacy([]) is None
    assert run_privacy([UnitLeak(1, 5.0)]) == 0.0  # leak is clamped to [0, 1]


def test_privacy_averages_annotated_tasks_only() -> None:
    assert privacy({"a": [1.0, 0.5], "b": [0.0], "c": []}) == pytest.approx((0.75 + 0.0) / 2)
    assert privacy({}) is None


def test_leaderboard_privacy_is_100_minus_exposure(board: dict[str, Any]) -> None:
    row = next(r for r in board["rows"] if r.get("cloud") == "gpt-5.4")
    assert exposure(row["privacy"] / 100) == pytest.approx(77.91)
    assert all(exposure(r["privacy"] / 100) == 0 for r in board["rows"] if r["strategy"] == "edge-only")


def test_summarize_privacy_errors_and_flops() -> None:
    leak_all = (UnitLeak(1, 1.0), UnitLeak(1, 1.0))
    leak_none = (UnitLeak(1, 0.0), UnitLeak(1, 0.0))
    records = [
        RunRecord("a", 0, 1.0, leaks=leak_all, edge_flops=2e15),
        RunRecord("a", 1, 0.9, leaks=leak_none, edge_flops=1e15),
        RunRecord("b", 0, 0.8, error="timeout after 600 s", leaks=leak_none),
        RunRecord("c", 0, 1.0, leaks=(), judge_leaks=(UnitLeak(2, 0.3),)),  # c is not annotated
    ]
    summary = summarize("p", ["a", "b", "c"], records, runs=2, flops_formula="2·N·T")
    assert summary.completion == pytest.approx(100 * ((1.0 + 0.9) / 2 + 0 + 1.0 / 2) / 3)
    assert summary.pass_k == pytest.approx(100 / 3)
    assert summary.errors == 1
    assert summary.edge_pflops == pytest.approx(1.5)
    assert summary.privacy_exposure == pytest.approx(100 - 100 * (0.5 + 1.0) / 2)
    assert summary.judge_privacy_exposure == pytest.approx(30.0)
    assert summary.flops_formula == "2·N·T"


def test_summarize_rejects_duplicate_or_out_of_range_runs() -> None:
    with pytest.raises(ValueError, match="two records"):
        summarize("p", ["a"], [RunRecord("a", 0, 1.0), RunRecord("a", 0, 1.0)])
    with pytest.raises(ValueError, match="outside 0..2"):
        summarize("p", ["a"], [RunRecord("a", 3, 1.0)])


def test_summarize_uses_metered_costs_without_price() -> None:
    records = [RunRecord("a", r, 1.0, cloud_cost_usd=0.3) for r in range(3)]
    assert summarize("p", ["a"], records).cost_usd == pytest.approx(0.3)


def test_edge_pflops_per_run() -> None:
    assert edge_pflops([1e15, 2e15, 3e15], runs=3) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        edge_pflops([], runs=0)
