"""The metering metrics sum a batch per label set before touching prometheus (``MeteringMetrics.observe``): the
totals must be those of observing each row on its own — counts, tokens, cost, unpriced calls, FLOPs, latencies."""

from __future__ import annotations

from typing import Any

from accounting.metrics import MeteringMetrics


def _row(**values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"side": "cloud", "model": "m", "policy": "p", "purpose": "step", "status": 200,
                           "usage_source": "upstream", "raw_input_tokens": 10, "cache_read_tokens": 0,
                           "cache_write_tokens": 0, "output_tokens": 3, "cost_usd": 0.25, "edge_flops": None,
                           "streamed": False, "latency_s": 0.2, "ttft_s": None}
    return {**row, **values}


def test_a_batch_counts_as_its_rows_would_one_by_one() -> None:
    metrics = MeteringMetrics()
    metrics.observe([_row(), _row(output_tokens=4, latency_s=0.02), _row(status=429, cost_usd=None, output_tokens=0),
                     _row(side="edge", model="e", cost_usd=None, edge_flops=1e9, streamed=True, ttft_s=0.01)])
    metrics.observe([_row()])  # a second batch adds to the first
    value = metrics.registry.get_sample_value
    assert value("ecgw_upstream_calls_total", {"route": "cloud", "policy": "p", "purpose": "step",
                                                "status": "200"}) == 3
    assert value("ecgw_upstream_calls_total", {"route": "cloud", "policy": "p", "purpose": "step",
                                                "status": "429"}) == 1
    assert value("ecgw_tokens_total", {"route": "cloud", "model": "m", "kind": "output", "source": "upstream"}) == 10
    assert value("ecgw_tokens_total", {"route": "cloud", "model": "m", "kind": "raw_input",
                                       "source": "upstream"}) == 40
    assert value("ecgw_tokens_total", {"route": "cloud", "model": "m", "kind": "cache_read",
                                       "source": "upstream"}) is None  # zero tokens: no sample
    assert value("ecgw_cost_usd_total", {"model": "m", "policy": "p"}) == 0.75
    assert value("ecgw_unpriced_calls_total", {"model": "m"}) == 1  # the cloud call without a price; edge: none
    assert value("ecgw_edge_flops_total", {"model": "e"}) == 1e9
    assert value("ecgw_upstream_latency_seconds_count", {"route": "cloud", "streamed": "false"}) == 4
    assert value("ecgw_upstream_latency_seconds_bucket", {"route": "cloud", "streamed": "false", "le": "0.025"}) == 1
    assert value("ecgw_upstream_ttft_seconds_count", {"route": "edge", "streamed": "true"}) == 1
