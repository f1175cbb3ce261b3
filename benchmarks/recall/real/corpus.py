"""The real-text prompts, parsed: the text as a user wrote it and its annotated private units."""

from __future__ import annotations

import re
from dataclasses import dataclass

FAMILIES = {"on": "online", "id": "identifiers", "pe": "people", "op": "organisations_places",
            "sp": "special", "co": "contact"}
_MARK = re.compile(r"\[\[(.+?)\|(on|id|pe|op|sp|co)\]\]", re.S)


@dataclass(frozen=True)
class Unit:
    value: str
    family: str


@dataclass(frozen=True)
class Prompt:
    id: str
    genre: str
    text: str
    units: tuple[Unit, ...]  # distinct (value, family) pairs, in order of first appearance
    spans: tuple[tuple[int, int], ...]  # every annotated occurrence in ``text``


def parse(prompt_id: str, genre: str, marked: str) -> Prompt:
    """``marked``'s ``[[value|family]]`` marks removed, each remembered as a unit and a span."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    units: dict[tuple[str, str], Unit] = {}
    pos = length = 0
    for m in _MARK.finditer(marked):
        out.append(marked[pos:m.start()])
        length += m.start() - pos
        value, family = m.group(1), FAMILIES[m.group(2)]
        spans.append((length, length + len(value)))
        out.append(value)
        length += len(value)
        units.setdefault((value, family), Unit(value, family))
        pos = m.end()
    out.append(marked[pos:])
    return Prompt(prompt_id, genre, "".join(out), tuple(units.values()), tuple(spans))


def load(split: str) -> list[Prompt]:
    """``dev`` (read while writing rules) or ``heldout`` (never read per item)."""
    if split == "dev":
        from benchmarks.recall.real.prompts import PROMPTS
    elif split == "heldout":
        from benchmarks.recall.real.heldout import PROMPTS
    else:
        raise ValueError(f"unknown split {split!r}: dev or heldout")
    return [parse(f"{split}-{i:02d}", genre, text) for i, (genre, text) in enumerate(PROMPTS)]
