"""What a detector reports: a typed span of a text, never logged with its value."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Finding:
    """``value`` is the raw text of the span; it stays in memory (vault, cache) and is hashed for the audit."""

    type: str  # entity type, e.g. EMAIL_ADDRESS, PHONE_NUMBER, PERSON, or a listed unit's field type
    start: int
    end: int
    value: str
    layer: str  # units | secrets | patterns | ner | keys | images
    key: str  # the vault key: equal keys get the same placeholder (normalised value, or the unit's id)
    unit_id: str | None = None
    field: str | None = None
    dimension: str | None = None
    weight: float | None = None
    score: float = 1.0
    location: str = ""

    def at(self, location: str) -> Finding:
        return replace(self, location=location)


_LAYER_RANK = {"units": 0, "secrets": 1, "patterns": 2, "keys": 3, "ner": 4}


def resolve_overlaps(findings: list[Finding]) -> list[Finding]:
    """Keep non-overlapping findings: listed units first, then secrets, patterns, NER; longer spans first."""
    ranked = sorted(findings, key=lambda f: (_LAYER_RANK.get(f.layer, 9), -(f.end - f.start), f.start))
    kept: list[Finding] = []
    for finding in ranked:
        if finding.end <= finding.start:
            continue
        if all(finding.end <= k.start or finding.start >= k.end for k in kept):
            kept.append(finding)
    return sorted(kept, key=lambda f: f.start)


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
