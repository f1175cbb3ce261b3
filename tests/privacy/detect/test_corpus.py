"""Recall and over-redaction on the corpus. Figures are printed (pytest -s) and held to the issue's targets.

- with listed units: no listed value reaches the cloud;
- detection alone (no list): weighted leak rate under 5% (values only a list can know, such as a Chinese name in a
  field the patterns cannot label, are measured separately and not counted here);
- strings the agent needs survive in over 97% of cases.
"""

from __future__ import annotations

import json

from privacy.detect import UnitsDocument
from tests.privacy.corpus.cases import CASES, units_for
from tests.privacy.helpers import protector


def _leaked(value: str, body: dict) -> bool:
    sent = json.dumps(body, ensure_ascii=False)
    return value in sent or json.dumps(value, ensure_ascii=False)[1:-1] in sent


async def _measure(with_units: bool) -> dict[str, float]:
    p = protector(database_url=None)
    total_w = leaked_w = 0.0
    keep_total = keep_ok = 0
    leaks = []
    for case in CASES:
        session = case["id"]
        values = list(case["sensitive"])
        if with_units:
            await p.register_units(session, UnitsDocument.model_validate(units_for(case)))
            values += list(case.get("listed_only", []))
        body = (await p.scrub({"model": "m", "messages": case["messages"]}, session_id=session)).body
        for value, weight in values:
            total_w += weight
            if _leaked(value, body):
                leaked_w += weight
                leaks.append((case["id"], value))
        for kept in case["keep"]:
            keep_total += 1
            keep_ok += kept in json.dumps(body, ensure_ascii=False) or kept in str(body)
    return {"leak": leaked_w / total_w, "survival": keep_ok / keep_total, "leaks": leaks}  # type: ignore[dict-item]


async def test_corpus_with_listed_units_leaks_nothing():
    figures = await _measure(with_units=True)
    print(f"\ncorpus with units: leak {figures['leak']:.1%}, survival {figures['survival']:.1%}")
    assert figures["leaks"] == []
    assert figures["survival"] > 0.97


async def test_corpus_detection_alone_recall_and_over_redaction():
    figures = await _measure(with_units=False)
    print(f"\ncorpus detection only: weighted leak {figures['leak']:.1%} ({figures['leaks']}), "
          f"survival {figures['survival']:.1%}")
    assert figures["leak"] < 0.05
    assert figures["survival"] > 0.97
