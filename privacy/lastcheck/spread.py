"""Listed values spread over the strings of a request: ``Plover!Ga`` in one message, ``noted`` in the next,
``ntry#4471`` in a third; between reasoning and content; across two tool calls' arguments; three ways.

A listed value of ≥ 8 non-space characters (``units.SPREAD_MIN``) is found when its characters, whitespace
ignored and case-folded, are the end of one string, then whole strings, then the start of a later one — in the
order the request holds its strings, with any strings between the pieces. Every piece but the last has at least
two characters (a value's first letter at the end of some word is no evidence). Such a value stands nowhere to be
replaced, so the last check keeps the step off the cloud and exposure counts the unit as sent.

``Spread.feed`` reads one string at a time and carries a small state (which values are how far along), so the last
check keeps the state reached after each prefix of a body and the next step of the conversation reads only its
new strings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from privacy.detect import SPREAD_MIN, Finding, Unit, UnitMatcher, canonical, squeezed
from privacy.lastcheck.leaves import body_leaves, body_parts, message_text

_MIN_PIECE = 2

State = frozenset[tuple[int, int]]  # (value index, characters matched so far, ending at a string's end)
START: State = frozenset()


@dataclass(frozen=True)
class Spread:
    units: tuple[Unit, ...]
    cores: tuple[str, ...]  # each value squeezed
    prefixes: dict[str, tuple[int, ...]]  # a proper prefix (≥ 2 characters) → the values it starts
    longest: int

    @classmethod
    def of(cls, matcher: UnitMatcher | None) -> Spread | None:
        pairs = [(u, squeezed(u.value)) for u in (matcher.units if matcher is not None else ())]
        pairs = [(u, core) for u, core in pairs if len(core) >= SPREAD_MIN]
        if not pairs:
            return None
        prefixes: dict[str, list[int]] = {}
        for i, (_, core) in enumerate(pairs):
            for k in range(_MIN_PIECE, len(core)):
                prefixes.setdefault(core[:k], []).append(i)
        return cls(tuple(u for u, _ in pairs), tuple(c for _, c in pairs),
                   {k: tuple(v) for k, v in prefixes.items()}, max(len(c) for _, c in pairs))

    def feed(self, state: State, text: str) -> tuple[State, set[int]]:
        """The state after ``text``, and the values it completed."""
        piece = squeezed(text)
        if not piece:
            return state, set()
        found: set[int] = set()
        after = set(state)
        for i, done in state:
            rest = self.cores[i][done:]
            if piece.startswith(rest):
                found.add(i)
            elif len(piece) >= _MIN_PIECE and rest.startswith(piece):
                after.add((i, done + len(piece)))
        for k in range(_MIN_PIECE, min(len(piece), self.longest - 1) + 1):
            for i in self.prefixes.get(piece[-k:], ()):
                after.add((i, k))
        return frozenset(after), found

    def find(self, texts: Iterable[str], state: State = START) -> tuple[State, set[int]]:
        found: set[int] = set()
        for text in texts:
            state, done = self.feed(state, text)
            found |= done
        return state, found


def spread_found(body: dict[str, Any], units: UnitMatcher | None) -> list[Finding]:
    """The listed values spread over the body's strings, read from scratch: the last check reads the same texts
    part by part (``spread_texts``), remembering its state."""
    spread = Spread.of(units)
    if spread is None:
        return []
    state, found = START, set()
    for prefix, _, leaves in body_parts(body):
        state, done = spread.find(spread_texts((path[len(prefix):], canonical(text)) for path, text, _ in leaves()),
                                  state)
        found |= done
    return spread_findings(spread, found)


_REASONING = (".reasoning_content", ".reasoning")


def spread_texts(leaves: Iterable[tuple[str, str]]) -> Iterator[str]:
    """What the spread search reads of one part, from its (path suffix, canonical text) leaves, in order: keys and
    values (a value split between a JSON key and its value is spread too), a JSON document inside a string as its
    keys and strings, and a message's reasoning also before the rest (a reader reads it first; in the body it may
    stand after the content)."""
    items = list(leaves)
    first = [text for suffix, text in items if suffix.startswith(_REASONING)]
    for text in (*first, *(text for _, text in items)):
        yield from _strings_in(text)


def _strings_in(text: str) -> Iterator[str]:
    if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):  # nested deeper than the parser goes: text
            document = None
        if isinstance(document, dict | list):
            yield from (inner for _, inner, _ in body_leaves(document, "", None))
            return
    yield text


_MIN_SPLIT = 3  # characters of each piece of a value split inside a message's reasoning and content
_REASONING_KEYS = ("reasoning_content", "reasoning")


def split_in_reasoning(message: Any, spread: Spread) -> frozenset[int]:
    """The listed values (≥ 8 characters) an assistant message holds split between its reasoning and its content,
    each piece anywhere in its string (``it starts Plover!Ga, then`` … ``the rest is ntry#4471.``): a reader of the
    message joins them, though neither string ends or begins with its piece. Each piece has at least three
    characters; a value whole in either string is found as it stands. Linear in the message for each value."""
    if not isinstance(message, dict):
        return frozenset()
    reasoning = " ".join(message[k] for k in _REASONING_KEYS if isinstance(message.get(k), str))
    content = " ".join(message_text(message))
    if not reasoning.strip() or not content.strip():
        return frozenset()
    r, c = squeezed(canonical(reasoning)), squeezed(canonical(content))
    found: set[int] = set()
    for i, core in enumerate(spread.cores):
        if core in r or core in c:
            continue
        for k in range(_MIN_SPLIT, len(core) - _MIN_SPLIT + 1):
            head, tail = core[:k], core[k:]
            if (head in r and tail in c) or (head in c and tail in r):
                found.add(i)
                break
    return frozenset(found)


def reasoning_splits(body: dict[str, Any], units: UnitMatcher | None) -> list[Finding]:
    """``split_in_reasoning`` over every message of a body, read from scratch (exposure reads it so)."""
    spread = Spread.of(units)
    if spread is None:
        return []
    found: set[int] = set()
    for message in body.get("messages") or ():
        found |= split_in_reasoning(message, spread)
    return spread_findings(spread, found)


def spread_findings(spread: Spread, found: set[int]) -> list[Finding]:
    return [Finding(type=u.type, start=0, end=0, value=u.value, layer="units", key=f"unit:{u.unit_id}",
                    unit_id=u.unit_id, field=u.field, dimension=u.dimension, weight=u.weight)
            for u in (spread.units[i] for i in sorted(found))]
