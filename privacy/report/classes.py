"""Which data classes left for which tier, from the egress receipts (``tier`` and ``classes`` in each one's claims),
and which kept steps on the edge (``data_class`` in a step record's signal): the period report's classes × tiers ×
action, and the one-question answer of ``ecgw audit query --class C --tier T``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

ACTIONS = ("pseudonymised", "raw")  # how a class's values left in a receipt's body; kept on the edge: not at all


def class_tiers(receipts: Iterable[dict[str, Any]], steps: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Per class and tier, the values that left pseudonymised and raw and the receipts (bodies) that held any; per
    class, the steps and consultations it kept on the edge. Receipts signed before receipts carried classes are
    counted apart (``receipts_without_classes``): what they held by class is not known."""
    counts: dict[tuple[str, str], Counter[str]] = {}
    unknown = 0
    for receipt in receipts:
        claims = receipt["claims"]
        classes = claims.get("classes")
        if not isinstance(classes, dict) or "tier" not in claims:
            unknown += 1
            continue
        for name, held in classes.items():
            row = counts.setdefault((str(name), str(claims["tier"])), Counter())
            row["receipts"] += 1
            for action in ACTIONS:
                row[action] += int((held or {}).get(action) or 0)
    kept: Counter[str] = Counter()
    for step in steps:
        noted = step["signal"].get("data_class")
        for name in str(noted).split(",") if noted else ():
            kept[name] += 1
    return {"by_class_tier": [{"class": name, "tier": tier, **{a: row[a] for a in ACTIONS},
                               "receipts": row["receipts"]} for (name, tier), row in sorted(counts.items())],
            "kept_on_edge": dict(sorted(kept.items())), "receipts_without_classes": unknown}


def matching(receipts: Iterable[dict[str, Any]], data_class: str, tier: str) -> list[dict[str, Any]]:
    """The receipts whose body, handed to a target of ``tier``, held ``data_class`` in any form."""
    out = []
    for receipt in receipts:
        claims = receipt["claims"]
        held = (claims.get("classes") or {}).get(data_class) if isinstance(claims.get("classes"), dict) else None
        if claims.get("tier") != tier or not held or not any(int(held.get(a) or 0) for a in ACTIONS):
            continue
        out.append({"id": receipt["id"], "request_id": receipt["request_id"], "call_id": receipt["call_id"],
                    "target": receipt["target"], "tier": tier, "created_at": receipt["created_at"],
                    data_class: {a: int(held.get(a) or 0) for a in ACTIONS}, "body_sha256": claims.get("body_sha256"),
                    "verdict": claims.get("verdict")})
    return out
