"""Prometheus metrics of privacy protection, in a registry of their own (no global state)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, generate_latest


class PrivacyMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.egress_hits = Counter(
            "ecgw_privacy_egress_hits", "Values the last check on the outgoing body found after protection (what "
            "the earlier layers missed), by type, how it was found (literal, decoded, split, vault) and outcome "
            "(pseudonymise, mask, block)", ["type", "how", "outcome"], registry=self.registry)
        self.units_exposed = Counter(
            "ecgw_privacy_units_exposed", "Listed units whose raw value was in a body that left for the cloud",
            registry=self.registry)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
