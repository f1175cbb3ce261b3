"""What this wave's privacy work costs a protected step, each part on its own line: the real-prompt detectors
(issue 38's layers for real user text), the scan budget's meter, and the data-class check.

    python -m benchmarks.detectors            # appends its section to benchmarks/RESULTS.md (part of `make bench`)
    python -m benchmarks.detectors --smoke    # a round of each on a few texts; writes nothing

In process, the default privacy settings (profile ``balanced``), spaCy's model loaded and warmed first. Each figure
is the CPU time of the thread (``time.thread_time``) spent detecting, with and without the part, in alternating
rounds; every round reads its texts under a scope of its own, so no layer's cache (NER's, the people layer's) answers
from an earlier round: each is what a step that meets the text for the first time pays.

- **real-prompt detectors**: the layered detector with and without its real-text layer (``privacy.detect.realtext``:
  paths and links at their identifying segment, ids in context, special categories, anchored organisations, places
  and one-name people), on three inputs: the agent step's every slot (``benchmarks.workload``: ~20 KB system prompt,
  40-step history: the cold first step's detection), the last step's new messages alone (an incremental step's),
  and the hand-written development prompts of ``benchmarks/recall/real`` (real-looking user text; per prompt);
- **scan budget**: the agent step's detection metered (``ScanMeter``: the thread's clock read at every checkpoint)
  and not;
- **data classes**: the class check of one protected agent step (``benchmarks.classes``: summing the slots' counts,
  a two-tier plan checked, the receipt's claim built).

Each row says what the part adds (median of the per-round differences, and the smallest) and sets it against the
step figure it falls into (issue 41's targets): a part may not, on its own, take a step past its target.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from benchmarks.results import append

# The step targets of issue 41 each part's cost falls into, ms of CPU.
COLD_UNSEEN_MS = 150.0
INCREMENTAL_MS = 2.0
AGENT_STEP_MS = 4.0


def _rounds(a: Callable[[int], float], b: Callable[[int], float], rounds: int) -> dict[str, float]:
    """``a`` and ``b`` alternately, ``rounds`` times each (each told its round, for a scope of its own): their
    medians and the per-round difference ``a - b`` (median and minimum), ms."""
    with_, without, diff = [], [], []
    for i in range(rounds):
        first, second = (a, b) if i % 2 == 0 else (b, a)
        x = first(2 * i)
        y = second(2 * i + 1)
        ta, tb = (x, y) if first is a else (y, x)
        with_.append(ta)
        without.append(tb)
        diff.append(ta - tb)
    return {"with_ms": round(statistics.median(with_) * 1000, 3), "without_ms": round(statistics.median(without) * 1000, 3),
            "added_ms": round(statistics.median(diff) * 1000, 3), "added_min_ms": round(min(diff) * 1000, 3)}


def measure(rounds: int = 7, smoke: bool = False) -> dict[str, Any]:
    from gateway.cli.offline import prepare_offline_environment

    prepare_offline_environment()
    from benchmarks import classes
    from benchmarks.recall.real.corpus import load
    from benchmarks.workload import trajectory
    from privacy.classes.resolve import ClassPolicies
    from privacy.detect import (
        UNMETERED,
        Checkpoint,
        LayeredDetector,
        PatternDetector,
        ScanMeter,
        SecretDetector,
        Target,
        shared_people,
    )
    from privacy.factory import build_detector, shared_recognizer
    from privacy.scrubber import prepare
    from privacy.settings import PrivacySettings
    from privacy.walk import collect

    settings = PrivacySettings()
    full = build_detector(settings)
    without = LayeredDetector(settings.layers, secrets=SecretDetector(), patterns=PatternDetector(),
                              ner=shared_recognizer(settings.ner), max_segment_chars=settings.ner.max_segment_chars,
                              people=shared_people(), realtext=None)  # the same layers but the real-text one
    full.warm()
    without.warm()

    def targets_of(body: dict[str, Any]) -> list[Target]:
        _, slots, _ = collect(body)
        return [t for slot in slots for t in prepare(slot.text, slot.kind).targets]

    bodies = trajectory(3 if smoke else 40)
    agent = targets_of(bodies[-1])
    last = bodies[-1]["messages"]
    new = targets_of({"messages": last[-2:]})  # the step's new assistant call and tool result
    prompts = [Target(p.text, prose=True) for p in load("dev")][: 3 if smoke else None]

    def timed(detector: LayeredDetector, targets: list[Target], meter: Checkpoint | None = None) -> Callable[[int], float]:
        def run(i: int) -> float:
            scope = f"bench-{time.monotonic_ns()}-{i}"
            c0 = time.thread_time()
            detector.detect_shared(targets, scope=scope, profile="balanced",
                                   meter=meter if meter is not None else UNMETERED)
            return time.thread_time() - c0
        return run

    def per_prompt(detector: LayeredDetector) -> Callable[[int], float]:
        def run(i: int) -> float:
            spent = []
            for j, target in enumerate(prompts):
                c0 = time.thread_time()
                detector.detect_shared([target], scope=f"bench-{time.monotonic_ns()}-{i}-{j}", profile="balanced")
                spent.append(time.thread_time() - c0)
            return statistics.median(spent)
        return run

    def findings(detector: LayeredDetector) -> int:
        return sum(map(len, detector.detect_shared(prompts, scope="bench-count", profile="balanced")))

    n = 2 if smoke else rounds
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2), "rounds": n,
        "agent_slots": len(agent), "agent_chars": sum(len(t.text) for t in agent), "prompts": len(prompts),
        "prompt_findings": {"with": findings(full), "without": findings(without)},
        "realtext_agent_cold": _rounds(timed(full, agent), timed(without, agent), n),
        "realtext_incremental": _rounds(timed(full, new), timed(without, new), n * 5),
        "realtext_prompt": _rounds(per_prompt(full), per_prompt(without), n),
        "meter_agent_cold": _rounds(timed(full, agent, ScanMeter(settings.scan_budget.max_cpu_s)),
                                    timed(full, agent), n),
    }
    results = classes.scrubbed_slots(bodies[-1])
    policies = ClassPolicies(PrivacySettings(profile="strict"))
    steps = 50 if smoke else 2000
    c0 = time.thread_time()
    for _ in range(steps):
        classes.class_check(results, policies)
    report["classes_agent_step_ms"] = round((time.thread_time() - c0) / steps * 1000, 4)
    return report


def render(r: dict[str, Any]) -> str:
    def row(name: str, figure: dict[str, float], within: str, target: float) -> str:
        ok = figure["added_ms"] <= target
        return (f"| {name} | {figure['without_ms']} | {figure['with_ms']} | **{figure['added_ms']}** "
                f"(min {figure['added_min_ms']}) | {within} ≤ {target:g} ms: {'within' if ok else 'OVER on its own'} |")

    classes_ok = r["classes_agent_step_ms"] <= AGENT_STEP_MS
    return "\n".join([
        f"\n## What this wave's privacy work costs a step ({r['date']}, `python -m benchmarks.detectors`)\n",
        f"In process, default settings (profile balanced), {r['cpus']} cores, 1-minute load average "
        f"{r['load_average_1m']}, {r['rounds']} alternating rounds (5× that for the incremental row). CPU ms of "
        f"detection per input without and with the part (medians), what the part adds (median of the per-round "
        f"differences, and the smallest). The agent step: {r['agent_slots']} texts, {r['agent_chars']} characters; "
        f"{r['prompts']} real-looking development prompts, where the detector finds {r['prompt_findings']['with']} "
        f"values with the real-text layer and {r['prompt_findings']['without']} without.\n",
        "| part, input | without | with | adds | the step target it falls into |",
        "|---|---:|---:|---:|---|",
        row("real-prompt detectors, agent step (cold)", r["realtext_agent_cold"], "cold unseen first step",
            COLD_UNSEEN_MS),
        row("real-prompt detectors, an incremental step's new messages", r["realtext_incremental"],
            "incremental scrub", INCREMENTAL_MS),
        row("real-prompt detectors, one real-looking prompt (median)", r["realtext_prompt"], "small protected step",
            2.0),
        row("scan budget's meter, agent step (cold)", r["meter_agent_cold"], "cold unseen first step", COLD_UNSEEN_MS),
        f"| data-class check, agent step | — | — | **{r['classes_agent_step_ms']}** | protected agent step ≤ "
        f"{AGENT_STEP_MS:g} ms: {'within' if classes_ok else 'OVER on its own'} |",
        ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a round or two on a few texts; writes nothing")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds of each pair")
    args = parser.parse_args(argv)
    text = render(measure(max(args.rounds, 1), smoke=args.smoke))
    print(text)
    if not args.smoke:
        append(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
