"""What the data-class check adds to a protected step: the per-slot class counts summed over the body (each slot's
counted once, when it was scrubbed, and cached with it), the tiers of a two-target plan checked against them, and
the receipt's ``classes`` claim built — on the agent step of the workload (a ~20 KB system prompt and a 40-step
history, its findings those of a patterns-and-secrets scrub) under the strict profile's preset.

    python -m benchmarks.classes      # appends its section to benchmarks/RESULTS.md (part of `make bench`)
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from datetime import UTC, datetime
from typing import Any

from benchmarks.results import append
from benchmarks.workload import trajectory
from privacy.classes.policy import Held
from privacy.classes.resolve import ClassPolicies, Who
from privacy.detect import LayeredDetector, PatternDetector, SecretDetector
from privacy.scrubber import Scrubber, ScrubResult, prepare
from privacy.settings import LayerSettings, PrivacySettings
from privacy.vault import Vault
from privacy.walk import collect

TARGET_MS = 0.1


def scrubbed_slots(body: dict[str, Any]) -> list[ScrubResult]:
    """Each slot of ``body`` scrubbed as the protector does it (patterns and secrets), its class counts included."""
    layers = LayerSettings(units=False, ner=False, people=False)
    scrubber = Scrubber(LayeredDetector(layers, secrets=SecretDetector(), patterns=PatternDetector(), ner=None))
    policy = ClassPolicies(PrivacySettings(profile="strict")).of(Who())
    _, slots, _ = collect(body)
    prepared = [prepare(slot.text, slot.kind) for slot in slots]
    found = scrubber.detect(prepared, None, scope="", profile="strict")
    decide = functools.partial(policy.decide, tier="standard")
    return [scrubber.apply(p, f, Vault(), decide) for p, f in zip(prepared, found, strict=True)]


def class_check(results: list[ScrubResult], policies: ClassPolicies) -> dict[str, dict[str, int]]:
    """The protector's and the door's class work for one step: sum the slots' counts, check each tier of the plan,
    build the receipt's claim."""
    held = Held()
    for result in results:
        if result.applied:
            held.merge(result.held)
    policy = policies.of(Who())
    for tier in ("standard", "trusted"):
        policy.refused(tier, held)
    return held.claims()


def measure(steps: int = 2000, rounds: int = 5) -> dict[str, Any]:
    results = scrubbed_slots(trajectory()[-1])
    policies = ClassPolicies(PrivacySettings(profile="strict"))
    claims = class_check(results, policies)
    cpu: list[float] = []
    for _ in range(rounds):
        c0 = time.thread_time()
        for _ in range(steps):
            class_check(results, policies)
        cpu.append((time.thread_time() - c0) / steps * 1e6)
    return {"slots": len(results), "findings": sum(len(r.applied) for r in results), "claims": claims,
            "cpu_us_p50": round(statistics.median(cpu), 2), "cpu_us_max": round(max(cpu), 2),
            "load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}


def render(r: dict[str, Any]) -> str:
    ok = r["cpu_us_max"] <= TARGET_MS * 1000
    return "\n".join([
        f"\n## The data-class check, per protected step ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        "`python -m benchmarks.classes`)\n",
        f"The agent step ({r['slots']} slots, {r['findings']} findings, classes {r['claims']}): the slots' class "
        "counts summed, a plan of two tiers checked, the receipt's claim built. CPU time of the thread per step "
        f"(median and max of rounds), µs; {r['cpus']} cores, 1-minute load average {r['load_average_1m']}: "
        f"**{r['cpu_us_p50']}** (max {r['cpu_us_max']}). Target < {TARGET_MS} ms: "
        f"{'within' if ok else 'OVER'}.", ""])


if __name__ == "__main__":
    text = render(measure())
    print(text)
    append(text)
