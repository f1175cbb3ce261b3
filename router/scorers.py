"""Task-routing scorers: how hard is this task? A score in [0, 1] (higher = harder = cloud), or a decision
taken from an offline table. ``pick_threshold`` is the calibration ``ecgw calibrate`` runs."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from router.channels import Channel


@dataclass(frozen=True)
class Task:
    text: str  # the task: the session's first user message
    task_id: str | None  # metadata.task_id when the client sends one
    session_id: str


@dataclass(frozen=True)
class Verdict:
    score: float | None  # None: the scorer could not score this task
    side: str | None = None  # a scorer that decides by itself (the route table) says so here
    threshold: float | None = None


class Scorer(Protocol):
    name: str

    async def score(self, task: Task, edge: Channel) -> Verdict: ...


# edge-judge ----------------------------------------------------------------------------------------------
JUDGE_PROMPT = ("Rate how difficult the following task is for a small language model acting as an agent, on a "
                "scale from 1 (trivial) to 10 (very hard). Answer with the number only.")

_FRACTION = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:/|out of)\s*(\d+(?:\.\d+)?)", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_WORDS = {w: i for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"])}


def parse_rating(text: str, scale: float = 10.0) -> float | None:
    """A difficulty rating from free text, as a score in [0, 1]: "7", "7/10", "7 out of 10", "Difficulty: 8.",
    "0.7" (already a fraction), "seven". None when the text holds no rating."""
    cleaned = re.sub(r"<think>.*?</think>", " ", text, flags=re.DOTALL | re.IGNORECASE)
    match = _FRACTION.search(cleaned)
    if match and float(match.group(2)) > 0:
        return min(max(float(match.group(1)) / float(match.group(2)), 0.0), 1.0)
    match = _NUMBER.search(cleaned)
    if match:
        value = float(match.group(0))
        if 0.0 < value < 1.0 and "." in match.group(0):
            return value
        return min(max(value / scale, 0.0), 1.0)
    for word in re.findall(r"[a-z]+", cleaned.lower()):
        if word in _WORDS:
            return min(_WORDS[word] / scale, 1.0)
    return None


class EdgeJudge:
    name = "edge-judge"

    def __init__(self, *, prompt: str = JUDGE_PROMPT, scale: float = 10.0, task_chars: int = 8000) -> None:
        self._prompt = prompt
        self._scale = scale
        self._task_chars = task_chars

    async def score(self, task: Task, edge: Channel) -> Verdict:
        body = {"messages": [{"role": "system", "content": self._prompt},
                             {"role": "user", "content": task.text[: self._task_chars]}],
                "max_tokens": 16, "temperature": 0}
        response = await edge.complete(body, purpose="judge")
        choices = response.get("choices") or [{}]
        content = (choices[0].get("message") or {}).get("content")
        return Verdict(parse_rating(content if isinstance(content, str) else "", self._scale))


# rules ---------------------------------------------------------------------------------------------------
class RulesScorer:
    """score = (1 − w) · min(1, chars / long_chars) + w · min(1, keyword hits / keywords_for_full)."""

    name = "rules"

    def __init__(self, *, long_chars: int = 2000, keywords: Sequence[str] = (), keyword_weight: float = 0.5,
                 keywords_for_full: int = 2) -> None:
        self._long = max(long_chars, 1)
        self._keywords = [k.lower() for k in keywords]
        self._weight = keyword_weight if self._keywords else 0.0
        self._full = max(keywords_for_full, 1)

    def score_text(self, text: str) -> float:
        lowered = text.lower()
        hits = sum(1 for k in self._keywords if k in lowered)
        length = min(1.0, len(text) / self._long)
        return (1 - self._weight) * length + self._weight * min(1.0, hits / self._full)

    async def score(self, task: Task, edge: Channel) -> Verdict:
        return Verdict(self.score_text(task.text))


# table ---------------------------------------------------------------------------------------------------
_CLOUD = {"cloud", "remote", "strong", "large", "1", "true", "yes"}
_EDGE = {"edge", "local", "weak", "small", "0", "false", "no"}


def table_side(entry: Mapping[str, Any], default_threshold: float) -> Verdict:
    """One route-table row ``{decision, score, threshold}``: the decision when it names a side, else
    score ≥ threshold."""
    score = entry.get("score")
    score = float(score) if isinstance(score, int | float) and not math.isnan(float(score)) else None
    threshold = entry.get("threshold")
    threshold = float(threshold) if isinstance(threshold, int | float) else default_threshold
    decision = str(entry.get("decision", "")).strip().lower()
    if decision in _CLOUD:
        return Verdict(score, "cloud", threshold)
    if decision in _EDGE:
        return Verdict(score, "edge", threshold)
    if score is not None:
        return Verdict(score, "cloud" if score >= threshold else "edge", threshold)
    return Verdict(None)


class TableScorer:
    """An offline route table ``{task_id: {decision, score, threshold}}`` (JSON), keyed by the request's
    ``metadata.task_id`` or else the session id."""

    name = "table"

    def __init__(self, table: Mapping[str, Mapping[str, Any]], *, threshold: float = 0.5) -> None:
        self._table = table
        self._threshold = threshold

    @classmethod
    def from_file(cls, path: str | Path, *, threshold: float = 0.5) -> TableScorer:
        file = Path(path)
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"policy.knobs.task-routing.table_path: {file} does not exist") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"policy.knobs.task-routing.table_path: {file} is not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"policy.knobs.task-routing.table_path: {file} must hold an object keyed by task id")
        return cls(data, threshold=threshold)

    async def score(self, task: Task, edge: Channel) -> Verdict:
        for key in (task.task_id, task.session_id):
            if key is not None and isinstance(self._table.get(key), Mapping):
                return table_side(self._table[key], self._threshold)
        return Verdict(None)


# calibration ---------------------------------------------------------------------------------------------
def pick_threshold(scores: Sequence[float], target_share: float) -> tuple[float, float]:
    """(threshold, achieved cloud share): the threshold whose rule ``score ≥ threshold → cloud`` sends the
    share of ``scores`` closest to ``target_share`` to the cloud."""
    if not scores:
        raise ValueError("no scores to calibrate on")
    ranked = sorted(scores, reverse=True)
    n = len(ranked)
    candidates = sorted(set(ranked)) + [math.nextafter(ranked[0], math.inf)]
    best = min(candidates, key=lambda t: (abs(sum(s >= t for s in ranked) / n - target_share), -t))
    return best, sum(s >= best for s in ranked) / n
