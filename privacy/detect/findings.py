"""What a detector reports: a typed span of a text, never logged with its value."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Finding:
    """``value`` is the raw text of the span; it stays in memory (vault, cache) and is hashed for the audit."""

    type: str  # entity type, e.g. EMAIL_ADDRESS, PHONE_NUMBER, PERSON, or a listed unit's field type
    start: int
    end: int
    value: str
    layer: str  # units | secrets | patterns | links | keys | people | ids | special | ner | anchored | edge | images
    key: str  # the vault key: equal keys get the same placeholder (normalised value, or the unit's id)
    unit_id: str | None = None
    field: str | None = None
    dimension: str | None = None
    weight: float | None = None
    score: float = 1.0
    location: str = ""

    def at(self, location: str) -> Finding:
        return replace(self, location=location)


_LAYER_RANK = {"units": 0, "secrets": 1, "patterns": 2, "links": 2, "keys": 3, "people": 3, "ids": 3, "special": 3,
               "ner": 4, "anchored": 4}


def layer_rank(finding: Finding) -> int:
    """Which layer's finding wins an overlap (lower wins)."""
    return _LAYER_RANK.get(finding.layer, 9)


def resolve_overlaps(findings: list[Finding]) -> list[Finding]:
    """Keep non-overlapping findings: listed units first, then secrets, patterns, NER; longer spans first."""
    ranked = sorted(findings, key=lambda f: (layer_rank(f), -(f.end - f.start), f.start))
    starts: list[int] = []  # the kept spans, disjoint and in order: a new span can only overlap its two neighbours
    kept: list[Finding] = []
    for finding in ranked:
        if finding.end <= finding.start:
            continue
        i = bisect.bisect_right(starts, finding.start)
        if (i > 0 and kept[i - 1].end > finding.start) or (i < len(kept) and kept[i].start < finding.end):
            continue
        starts.insert(i, finding.start)
        kept.insert(i, finding)
    return kept


def replace_spans(text: str, findings: list[Finding], replacements: list[str]) -> str:
    """``findings`` sorted and non-overlapping; ``replacements[i]`` replaces ``findings[i]``'s span."""
    out: list[str] = []
    pos = 0
    for finding, new in zip(findings, replacements, strict=True):
        out.append(text[pos:finding.start])
        out.append(new)
        pos = finding.end
    out.append(text[pos:])
    return "".join(out)
