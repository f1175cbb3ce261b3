"""``python -m benchmarks.recall --seeds 1000-1004``: recall and survival on the held-out corpus, per family.

Runs the real protector (every layer as configured by default, NER included) twice per case: detection only, and
with the case's values registered as listed units. ``--unprotected`` skips the protector and scores every body as
generated (every value sent raw): a check of the scorer itself, which must then find 100 % of the annotated values
that are in the body.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter

from benchmarks.recall import people, wild
from benchmarks.recall.corpus import Case, corpus, units_document
from benchmarks.recall.score import Figures
from gateway.state.sessions import MemorySessionStore
from privacy.detect import EdgeEndpoint, EdgeSpanLister, UnitsDocument
from privacy.errors import PrivacyBlocked
from privacy.factory import build_detector, build_edge_lister, build_privacy_protector
from privacy.settings import PrivacySettings


def _seeds(spec: str) -> list[int]:
    if "-" in spec:
        low, high = spec.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in spec.split(",")]


def _cases(seed: int, cases: int, hard: bool, variant: str | None) -> list[Case]:
    if variant is None:
        return corpus(seed, cases, hard)
    if variant.startswith("people-"):
        return people.corpus(seed, cases, variant.removeprefix("people-"))
    return wild.corpus(seed, cases, variant.removeprefix("wild-"))


async def measure(seeds: list[int], cases: int, settings: PrivacySettings,
                  hard: bool = False, variant: str | None = None,
                  lister: EdgeSpanLister | None = None) -> tuple[Figures, Figures]:
    plain, listed = Figures(), Figures()
    protector = build_privacy_protector(settings, database_url=None, sessions=MemorySessionStore(),
                                        detector=build_detector(settings, lister=lister))
    for seed in seeds:
        for case in _cases(seed, cases, hard, variant):
            await protector.register_units(f"listed-{case.id}", UnitsDocument.model_validate(units_document(case)))
            for figures, session in ((plain, f"plain-{case.id}"), (listed, f"listed-{case.id}")):
                try:
                    sent = (await protector.scrub(case.body, session_id=session)).body
                except PrivacyBlocked:
                    figures.blocked += 1  # nothing left for the cloud: the step stays on the edge
                    continue
                figures.add(case, sent)
    return plain, listed


def unprotected(seeds: list[int], cases: int, hard: bool = False, variant: str | None = None) -> Figures:
    """Every case scored as generated, no protector in between: what the scorer finds when everything leaks."""
    figures = Figures()
    for seed in seeds:
        for case in _cases(seed, cases, hard, variant):
            figures.add(case, case.body)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", default="1000-1004", help="held-out seeds: 'A-B' or 'A,B,C'")
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--leaks", action="store_true", help="list what leaked (detection only)")
    parser.add_argument("--hard", action="store_true",
                        help="labels, phrasings and surface forms the detectors were not written for")
    parser.add_argument("--variant", choices=["wild-a", "wild-b", "people-a", "people-b"],
                        help="labels and containers as real exports write them, in two disjoint pools (wild.py); "
                             "people in every container beside the strings agents need (people.py)")
    parser.add_argument("--no-last-check", action="store_true", help="the layers alone, without the last check")
    parser.add_argument("--edge-detector", metavar="URL", help="add the edge-model layer: an OpenAI-compatible /v1 URL")
    parser.add_argument("--edge-model", default="smollm2", help="the edge detector's model name")
    parser.add_argument("--edge-timeout", type=float, default=30.0,
                        help="seconds per edge call; a call past it finds nothing and counts as failed")
    parser.add_argument("--edge-no-json", action="store_true",
                        help="ask the edge detector without response_format json_object (json_mode: false)")
    parser.add_argument("--unprotected", action="store_true",
                        help="score the bodies as generated, without the protector (checks the scorer: expect 100 %%)")
    args = parser.parse_args()
    if args.variant and args.hard:
        parser.error("--hard and --variant are different corpora; pick one")
    if args.unprotected:
        figures = unprotected(_seeds(args.seeds), args.cases, args.hard, args.variant)
        print(figures.table(f"Unprotected, every value sent raw (seeds {args.seeds})"))
        for case_id, family, text in figures.missed:
            print(f"not found: {case_id} {family:12s} {text!r}")
        for case_id, field_, text in figures.absent:
            print(f"not in the body: {case_id} {field_:12s} {text!r}")
        return
    settings = PrivacySettings(last_check=not args.no_last_check,
                               edge_detector={"enabled": bool(args.edge_detector), "on_error": "skip",
                                              "timeout_s": args.edge_timeout, "concurrency": 1,
                                              "json_mode": not args.edge_no_json})  # one at a time: ms per call
    # is per segment
    lister = build_edge_lister(settings, EdgeEndpoint(args.edge_detector, args.edge_model)) if args.edge_detector \
        else None
    plain, listed = asyncio.run(measure(_seeds(args.seeds), args.cases, settings, args.hard, args.variant, lister))
    if lister is not None:
        s = lister.stats
        print(f"Edge detector: {s.calls} calls, {s.cached} cached, {s.spans} spans kept, {s.rejected} rejected, "
              f"{s.junk} junk answers, {s.failed} failed, {1000 * s.seconds / max(s.calls + s.failed, 1):.0f} ms per call, "
              f"types {dict(s.types)}")
    print(plain.table(f"Detection only (seeds {args.seeds})"))
    print(listed.table(f"With listed units (seeds {args.seeds})"))
    if args.leaks:
        for (family, field_), n in Counter((f, fl) for _, f, fl in plain.leaks).most_common():
            print(f"{n:4d}  {family:12s} {field_}")


if __name__ == "__main__":
    main()
