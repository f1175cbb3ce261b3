"""``python -m benchmarks.recall.real``: units leaked and other words kept on hand-written real-text prompts, per
family and per privacy profile, with presidio's defaults in the same run.

Each prompt is one user message of a chat body through the real protector (every layer as configured by default,
NER and the last check included), once per profile; presidio's defaults read the same text. ``--split dev`` is
the development set (``prompts.py``), ``--split heldout`` the held-out one (``heldout.py``): for it only totals are
printed, never the units that leaked.
"""

from __future__ import annotations

import argparse
import asyncio

from benchmarks.recall.real.corpus import FAMILIES, Prompt, load
from benchmarks.recall.real.presidio_baseline import PresidioDefaults
from benchmarks.recall.real.score import Tally
from gateway.state.sessions import MemorySessionStore
from privacy.detect import PROFILES, Profile
from privacy.errors import PrivacyBlocked
from privacy.factory import build_privacy_protector
from privacy.settings import PrivacySettings


async def ecgw(prompts: list[Prompt], profiles: list[Profile]) -> dict[str, Tally]:
    protector = build_privacy_protector(PrivacySettings(), database_url=None, sessions=MemorySessionStore())
    tallies: dict[str, Tally] = {}
    for profile in profiles:
        tally = tallies[profile] = Tally()
        for prompt in prompts:
            body = {"model": "m", "messages": [{"role": "user", "content": prompt.text}]}
            try:
                sent = (await protector.scrub(body, session_id=f"{profile}-{prompt.id}", profile=profile)).body
            except PrivacyBlocked:
                sent = {"messages": [{"content": ""}]}  # the step stays on the edge: nothing leaves
            tally.add(prompt, sent["messages"][0]["content"])
    return tallies


def table(tallies: dict[str, Tally]) -> str:
    names = list(tallies)
    lines = ["| family (units) | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    first = tallies[names[0]]
    for family in FAMILIES.values():
        if first.units[family]:
            lines.append(f"| {family} ({first.units[family]}) | "
                         + " | ".join(f"{100 * t.leak_rate(family):.1f} %" for t in tallies.values()) + " |")
    lines.append(f"| **all units leaked** ({sum(first.units.values())}) | "
                 + " | ".join(f"**{100 * t.leak_rate():.1f} %**" for t in tallies.values()) + " |")
    lines.append(f"| prompts with any unit leaked ({first.prompts}) | "
                 + " | ".join(f"{100 * t.prompts_leaking / max(t.prompts, 1):.1f} %" for t in tallies.values()) + " |")
    lines.append(f"| other words kept ({first.words}) | "
                 + " | ".join(f"{100 * t.kept:.1f} %" for t in tallies.values()) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=["dev", "heldout"], default="dev")
    parser.add_argument("--profiles", default=",".join(PROFILES), help="comma-separated: strict,balanced,minimal")
    parser.add_argument("--no-presidio", action="store_true", help="leave presidio's column out")
    parser.add_argument("--leaks", action="store_true", help="list what leaked (dev split only)")
    args = parser.parse_args()
    prompts = load(args.split)
    wanted = args.profiles.split(",")
    tallies = asyncio.run(ecgw(prompts, [p for p in PROFILES if p in wanted]))
    if not args.no_presidio:
        presidio, tally = PresidioDefaults(), Tally()
        for prompt in prompts:
            tally.add(prompt, presidio.anonymise(prompt.text))
        tallies["presidio defaults"] = tally
    print(f"{args.split}: {len(prompts)} prompts\n")
    print(table(tallies))
    if "presidio defaults" in tallies:
        theirs = {(p, v) for p, _, v in tallies["presidio defaults"].leaked_units}
        for name, tally in tallies.items():
            if name != "presidio defaults":
                missed = sum((p, v) not in theirs for p, _, v in tally.leaked_units)
                print(f"\nunits presidio's defaults protected that {name} leaked: {missed}", end="")
        print()
    if args.leaks:
        if args.split == "heldout":
            parser.error("--leaks is for the dev split: the held-out split is never read per item")
        for name, tally in tallies.items():
            print(f"\n## leaked under {name}")
            for prompt_id, family, value in tally.leaked_units:
                print(f"{prompt_id} {family:22s} {value!r}")


if __name__ == "__main__":
    main()
