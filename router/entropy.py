"""Token entropy of a generated token, from the top-k logprobs an OpenAI-compatible server returns.

The benchmark's rule: renormalise the top-k probabilities to sum to one, then H = −Σ p ln p, in nats.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any


def renormalised_entropy(logprobs: Iterable[float]) -> float:
    """Entropy in nats of the distribution ``softmax(logprobs)`` (the top-k renormalised)."""
    values = [float(v) for v in logprobs if not math.isnan(float(v))]
    if not values:
        raise ValueError("no logprobs to compute an entropy from")
    finite = [v for v in values if v != -math.inf]
    if not finite:
        raise ValueError("every logprob is -inf")
    top = max(finite)
    weights = [math.exp(v - top) for v in finite]
    total = sum(weights)
    entropy = 0.0
    for weight in weights:
        p = weight / total
        if p > 0.0:
            entropy -= p * math.log(p)
    return max(entropy, 0.0)


def token_entropy(entry: Mapping[str, Any]) -> float | None:
    """Entropy of one ``logprobs.content[i]`` entry over its ``top_logprobs``; None when it has none."""
    tops = entry.get("top_logprobs")
    if not isinstance(tops, Sequence) or not tops:
        return None
    values: list[float] = [float(t["logprob"]) for t in tops
                           if isinstance(t, Mapping) and isinstance(t.get("logprob"), int | float)]
    if not values:
        return None
    return renormalised_entropy(values)


def logprob_entries(choice: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``logprobs.content`` entries of a choice (a completion choice or a stream chunk choice)."""
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, Mapping):
        return []
    content = logprobs.get("content")
    if not isinstance(content, Sequence):
        return []
    return [e for e in content if isinstance(e, Mapping)]


def decision_entropy(entries: Sequence[Mapping[str, Any]], *, skip_tokens: Sequence[str] = (),
                     tokens: int = 1) -> float | None:
    """Mean entropy of the first ``tokens`` generated tokens after any leading ``skip_tokens`` (the think
    opener of a thinking model, and the whitespace after it). None when there are no usable logprobs."""
    values: list[float] = []
    for entry in _generated(entries, skip_tokens):
        value = token_entropy(entry)
        if value is None:
            return None
        values.append(value)
        if len(values) >= tokens:
            break
    if not values:
        return None
    return sum(values) / len(values)


def _generated(entries: Sequence[Mapping[str, Any]], skip_tokens: Sequence[str]) -> Iterator[Mapping[str, Any]]:
    """The entries from the first one that is not a leading ``skip_tokens`` token (or whitespace after one) on."""
    skip = {s.strip() for s in skip_tokens}
    skipping = bool(skip)
    for entry in entries:
        token = str(entry.get("token") or "").strip()
        if skipping and (token in skip or not token):
            continue
        skipping = False
        yield entry


def first_token_stats(entries: Sequence[Mapping[str, Any]], *, skip_tokens: Sequence[str] = (),
                      tokens: int = 4) -> dict[str, float]:
    """Numbers a learned router reads from the first ``tokens`` generated tokens (after any ``skip_tokens``): the
    first token's entropy, the mean and max over them, and the first token's top-1/top-2 logprob margin (nats;
    large = confident). Empty when there are no usable logprobs. Numbers only: the tokens themselves are dropped."""
    values: list[float] = []
    margin: float | None = None
    for entry in _generated(entries, skip_tokens):
        value = token_entropy(entry)
        if value is None:
            break
        if not values:
            tops = sorted((float(t["logprob"]) for t in entry.get("top_logprobs") or ()
                           if isinstance(t, Mapping) and isinstance(t.get("logprob"), int | float)
                           and math.isfinite(float(t["logprob"]))), reverse=True)
            margin = tops[0] - tops[1] if len(tops) > 1 else (0.0 if not tops else 20.0)
        values.append(value)
        if len(values) >= tokens:
            break
    if not values:
        return {}
    return {"entropy_first": round(values[0], 5), "entropy_mean": round(sum(values) / len(values), 5),
            "entropy_max": round(max(values), 5), "margin": round(margin or 0.0, 5)}
