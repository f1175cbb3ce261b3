"""Weighted rendezvous (highest random weight) hashing: every replica of the gateway ranks a pool's members for a
key the same way without talking, and adding or removing a member moves only the keys that must move (those whose
top member it becomes, or was)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence


def _score(key: str, name: str, weight: float) -> float:
    digest = hashlib.blake2b(f"{name}\0{key}".encode(), digest_size=8).digest()
    unit = (int.from_bytes(digest, "big") + 0.5) / 2.0**64  # uniform in (0, 1)
    return -weight / math.log(unit)  # Schindelhauer & Schomaker's weighted form: P(top) is proportional to weight


def rank(key: str, members: Sequence[tuple[str, float]]) -> list[int]:
    """Indices of ``members`` (name, weight), best first for ``key``."""
    scores = [_score(key, name, weight) for name, weight in members]
    return sorted(range(len(members)), key=lambda i: (-scores[i], members[i][0]))
