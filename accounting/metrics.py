"""Prometheus metrics of the metering pipeline, in a registry of their own (no global state)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from accounting.builder import Row

CONTENT_TYPE = CONTENT_TYPE_LATEST
_TOKEN_KINDS = (("raw_input", "raw_input_tokens"), ("cache_read", "cache_read_tokens"),
                ("cache_write", "cache_write_tokens"), ("output", "output_tokens"))
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class MeteringMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.calls = Counter("ecgw_upstream_calls", "Upstream calls by route (edge|cloud), policy, purpose and "
                             "HTTP status", ["route", "policy", "purpose", "status"], registry=r)
        self.tokens = Counter("ecgw_tokens", "Tokens by route, model and kind (raw_input, cache_read, cache_write, "
                              "output) and where the count came from", ["route", "model", "kind", "source"],
                              registry=r)
        self.cost = Counter("ecgw_cost_usd", "Cloud cost in USD by model and policy", ["model", "policy"],
                            registry=r)
        self.unpriced = Counter("ecgw_unpriced_calls", "Calls to models without a price (cost recorded as null)",
                                ["model"], registry=r)
        self.edge_flops = Counter("ecgw_edge_flops", "Edge compute in FLOPs by model", ["model"], registry=r)
        self.latency = Histogram("ecgw_upstream_latency_seconds", "Upstream call latency", ["route", "streamed"],
                                 buckets=_LATENCY_BUCKETS, registry=r)
        self.ttft = Histogram("ecgw_upstream_ttft_seconds", "Upstream time to first token", ["route", "streamed"],
                              buckets=_LATENCY_BUCKETS, registry=r)
        self.buffered = Gauge("ecgw_metering_buffered_records", "Records waiting to be written to the store",
                              registry=r, multiprocess_mode="livesum")  # several workers: their sum
        self.dropped = Counter("ecgw_metering_dropped_records", "Records dropped because the buffer was full",
                               registry=r)
        self.written = Counter("ecgw_metering_written_records", "Records written to the store", registry=r)
        self.write_errors = Counter("ecgw_metering_write_errors", "Failed attempts to write a batch", registry=r)

    def observe(self, rows: Iterable[Row]) -> None:
        """A batch of rows: summed per label set first, so each counter's child is looked up (a lock and a key
        built) once a batch rather than up to six times a row."""
        calls: dict[tuple[str, ...], int] = {}
        tokens: dict[tuple[str, ...], float] = {}
        cost: dict[tuple[str, ...], float] = {}
        unpriced: dict[str, int] = {}
        flops: dict[str, float] = {}
        latency: dict[tuple[str, str], list[float]] = {}
        ttft: dict[tuple[str, str], list[float]] = {}
        for row in rows:
            route, model = row["side"], row["model"]
            key = (route, row["policy"], row["purpose"], str(row["status"]))
            calls[key] = calls.get(key, 0) + 1
            source = row["usage_source"]
            for kind, field in _TOKEN_KINDS:
                if value := row[field]:
                    key = (route, model, kind, source)
                    tokens[key] = tokens.get(key, 0) + value
            if row["cost_usd"] is not None:
                priced = (model, row["policy"])
                cost[priced] = cost.get(priced, 0.0) + row["cost_usd"]
            elif route == "cloud":
                unpriced[model] = unpriced.get(model, 0) + 1
            if row["edge_flops"] is not None:
                flops[model] = flops.get(model, 0.0) + row["edge_flops"]
            streamed = (route, "true" if row["streamed"] else "false")
            latency.setdefault(streamed, []).append(row["latency_s"])
            if row["ttft_s"] is not None:
                ttft.setdefault(streamed, []).append(row["ttft_s"])
        for counter, sums in ((self.calls, calls), (self.tokens, tokens), (self.cost, cost)):
            for labels, amount in sums.items():
                counter.labels(*labels).inc(amount)
        for counter, by_model in ((self.unpriced, unpriced), (self.edge_flops, flops)):
            for model, amount in by_model.items():
                counter.labels(model).inc(amount)
        for histogram, seen in ((self.latency, latency), (self.ttft, ttft)):
            for labels, values in seen.items():
                child = histogram.labels(*labels)
                for value in values:
                    child.observe(value)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
