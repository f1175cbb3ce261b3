"""Prometheus metrics of privacy protection, in a registry of their own (no global state)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, generate_latest


@dataclass
class ScrubWork:
    """What one scrub of a body did: its top-level parts (each message, each other key) reused from an earlier step
    of the session or walked now, and of the walked parts' string slots how many it looked up, applied (not in the
    detection cache) and sent to the detectors (none of this session's results: another session's may serve)."""

    parts_reused: int = 0
    parts_scrubbed: int = 0
    slots_walked: int = 0
    slots_applied: int = 0
    slots_detected: int = 0


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

        self.scrub_parts = Counter(
            "ecgw_privacy_scrub_parts", "Top-level parts of protected bodies (each message, each other key), by "
            "whether an earlier step's scrub of the same part was reused or the part was scrubbed", ["outcome"],
            registry=self.registry)
        self.scrub_slots = Counter(
            "ecgw_privacy_scrub_slots", "String slots of the scrubbed parts, by what was done (walked: looked up; "
            "applied: placeholders applied, no cached result; detected: sent to the detectors)", ["work"],
            registry=self.registry)

    def count_scrub(self, work: ScrubWork) -> None:
        self.scrub_parts.labels("reused").inc(work.parts_reused)
        self.scrub_parts.labels("scrubbed").inc(work.parts_scrubbed)
        self.scrub_slots.labels("walked").inc(work.slots_walked)
        self.scrub_slots.labels("applied").inc(work.slots_applied)
        self.scrub_slots.labels("detected").inc(work.slots_detected)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
