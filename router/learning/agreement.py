"""Did the edge's answer agree with the cloud's? The label a shadow call gives a step edge answered.

The rule (``agreement``):

- **Tool calls.** When either answer calls a tool, they agree when both call the same tools, in the same order,
  each with equivalent arguments: the arguments' JSON parsed and normalised — object key order ignored, strings
  trimmed with inner whitespace collapsed, numbers compared as numbers (``1`` = ``1.0``), a JSON string holding
  JSON read as that JSON (some models double-encode), keys whose value is ``null`` dropped — then compared
  exactly. Arguments that are not JSON are compared as normalised text. A tool call against plain text disagrees.
- **Text.** When neither calls a tool, the two texts are split into normalised tokens (lower case, runs of letters
  or digits) and compared by token F1 (the harmonic mean of the shared tokens' share of each side, counting
  repeats); they agree when F1 ≥ ``TEXT_THRESHOLD`` (0.5). Two empty answers agree.

Only the verdict and the similarity are kept (``Label.as_record``), never either answer.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TEXT_THRESHOLD = 0.5
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Answer:
    """What an answer decided: its tool calls as (name, arguments text), and its text."""

    tools: tuple[tuple[str, str], ...]
    text: str


@dataclass(frozen=True)
class Label:
    agree: bool
    kind: str  # "tool" | "text"
    similarity: float  # 1.0/0.0 for tool calls; the token F1 for text

    def as_record(self) -> dict[str, Any]:
        return {"agree": self.agree, "kind": self.kind, "similarity": round(self.similarity, 4)}


def answer_of(completion: Mapping[str, Any]) -> Answer:
    """The first choice of a chat completion as an ``Answer``."""
    choices = completion.get("choices") or [{}]
    message = (choices[0] if isinstance(choices[0], Mapping) else {}).get("message") or {}
    tools: list[tuple[str, str]] = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            tools.append((str(function.get("name") or ""), str(function.get("arguments") or "")))
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(str(p.get("text") or "") for p in content if isinstance(p, Mapping))
    return Answer(tuple(tools), content if isinstance(content, str) else "")


def _normal(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        text = _SPACE.sub(" ", value.strip())
        if depth < 3 and text[:1] in ("{", "["):
            try:
                return _normal(json.loads(text), depth + 1)
            except ValueError:
                pass
        return text
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        number = float(value)
        return number if math.isfinite(number) else str(number)
    if isinstance(value, Mapping):
        return {str(k): _normal(v, depth) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                if v is not None}
    if isinstance(value, Sequence):
        return [_normal(v, depth) for v in value]
    return str(value)


def normalised_arguments(arguments: str) -> Any:
    """A tool call's arguments as the rule compares them (see the module)."""
    text = arguments.strip() or "{}"
    try:
        return _normal(json.loads(text))
    except ValueError:
        return _normal(text)


def tokens(text: str) -> list[str]:
    return [t.casefold() for t in _TOKEN.findall(text)]


def token_f1(a: str, b: str) -> float:
    left, right = Counter(tokens(a)), Counter(tokens(b))
    if not left and not right:
        return 1.0
    shared = sum((left & right).values())
    if not shared:
        return 0.0
    precision, recall = shared / sum(left.values()), shared / sum(right.values())
    return 2 * precision * recall / (precision + recall)


def agreement(edge: Answer, cloud: Answer, *, threshold: float = TEXT_THRESHOLD) -> Label:
    if edge.tools or cloud.tools:
        same = len(edge.tools) == len(cloud.tools) and all(
            a_name == b_name and normalised_arguments(a_args) == normalised_arguments(b_args)
            for (a_name, a_args), (b_name, b_args) in zip(edge.tools, cloud.tools, strict=True))
        return Label(same, "tool", 1.0 if same else 0.0)
    similarity = token_f1(edge.text, cloud.text)
    return Label(similarity >= threshold, "text", similarity)
