"""Before a fitted router serves: on sessions it never saw, how much agreement with the cloud each cloud-call rate
buys — for the fitted router, for entropy alone, and for a random choice.

At cloud rate r a router sends the r·n steps it scores highest to the cloud. A step sent to the cloud agrees with
the cloud by definition; a step kept on the edge agrees when its shadow label says so. So the curve is
``agreement(r) = (escalated + agreeing steps kept on the edge) / n``; random's is its expectation, r + (1 − r)·a
(a = the edge's agreement over all steps). The bootstrap interval of the learned router's lead over entropy
resamples sessions, not steps.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from router.learning.features import vector
from router.learning.model import RouterModel

RATES = tuple(round(i * 0.05, 2) for i in range(21))


def _agreement(scores: Sequence[float], agree: Sequence[bool], rate: float) -> float:
    n = len(scores)
    k = min(n, int(math.floor(rate * n + 0.5)))
    order = sorted(range(n), key=lambda i: -scores[i])
    escalated = set(order[:k])
    return (k + sum(1 for i in range(n) if i not in escalated and agree[i])) / n


def usable(model: RouterModel, rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows the model can score (every feature present) with a label."""
    return [r for r in rows if vector(r["features"], model.features) is not None
            and isinstance((r.get("label") or {}).get("agree"), bool)]


def replay(model: RouterModel, rows: Sequence[Mapping[str, Any]], *, rates: Sequence[float] = RATES,
           at: float = 0.25, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The three curves on ``rows`` (labelled steps the model did not learn from), and at cloud rate ``at`` the
    learned router's lead over entropy with a 95 % bootstrap interval over sessions."""
    rows = usable(model, rows)
    if not rows:
        raise ValueError("no labelled steps to replay on (none after the model's fitted_until, or none with every "
                         "feature the model reads)")
    learned = [float(model.predict(r["features"]) or 0.0) for r in rows]
    entropy = [float(r["features"].get("entropy_first") or 0.0) for r in rows]
    agree = [bool(r["label"]["agree"]) for r in rows]
    base = sum(agree) / len(agree)
    curves = {"learned": [{"cloud_rate": r, "agreement": round(_agreement(learned, agree, r), 4)} for r in rates],
              "entropy": [{"cloud_rate": r, "agreement": round(_agreement(entropy, agree, r), 4)} for r in rates],
              "random": [{"cloud_rate": r, "agreement": round(r + (1 - r) * base, 4)} for r in rates]}
    by_session: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_session.setdefault(str(row["session_id"]), []).append(i)
    sessions = list(by_session)
    rng = random.Random(seed)
    leads: list[float] = []
    for _ in range(resamples):
        picked = [i for s in (rng.choice(sessions) for _ in sessions) for i in by_session[s]]
        a = [agree[i] for i in picked]
        leads.append(_agreement([learned[i] for i in picked], a, at) - _agreement([entropy[i] for i in picked], a, at))
    leads.sort()
    lead = _agreement(learned, agree, at) - _agreement(entropy, agree, at)
    return {"steps": len(rows), "sessions": len(sessions), "edge_agreement": round(base, 4), "curves": curves,
            "at": {"cloud_rate": at, "learned": round(_agreement(learned, agree, at), 4),
                   "entropy": round(_agreement(entropy, agree, at), 4), "random": round(at + (1 - at) * base, 4),
                   "lead_over_entropy": round(lead, 4),
                   "lead_ci95": [round(leads[int(0.025 * (len(leads) - 1))], 4),
                                 round(leads[int(0.975 * (len(leads) - 1))], 4)] if leads else None}}
