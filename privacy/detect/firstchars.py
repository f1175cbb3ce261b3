"""Compile a pattern so that the regex engine skips, at C speed, every position where no match can begin.

CPython's ``re`` tries a pattern at each position of the text; a pattern that starts with an alternation, a
lookbehind or ``\\b`` pays the whole attempt everywhere (~200 ns a character on this machine), one that starts
with a lookahead of a character class skips the positions outside the class (~20 ns). ``compile_fast`` reads the
characters a match can begin with from the parsed pattern and, where it can tell (no ``.`` or negated class
first), puts ``(?=[those])`` in front: the same matches, an order of magnitude less time on text without them."""

from __future__ import annotations

import re
from re import _constants as sre_constants  # type: ignore[attr-defined]  # what re compiles with (3.11+)
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

from accounting.errors import EcgwError

_INLINE_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")
_C = sre_constants
_CATEGORIES = {_C.CATEGORY_DIGIT: r"\d", _C.CATEGORY_WORD: r"\w", _C.CATEGORY_SPACE: r"\s"}
_ZERO_WIDTH = (_C.AT, _C.ASSERT, _C.ASSERT_NOT)
_REPEATS = (_C.MAX_REPEAT, _C.MIN_REPEAT, _C.POSSESSIVE_REPEAT)


class _Unknown(EcgwError):
    """The pattern can begin with anything (``.``, a negated class, a back-reference)."""


def _class_items(items: Any, ignorecase: bool) -> list[str]:
    out: list[str] = []
    for op, av in items:
        if op is _C.LITERAL:
            chars = {chr(av)} | ({chr(av).lower(), chr(av).upper()} if ignorecase else set())
            out += [re.escape(c) for c in chars if len(c) == 1]
        elif op is _C.RANGE:
            lo, hi = chr(av[0]), chr(av[1])
            out.append(f"{re.escape(lo)}-{re.escape(hi)}")
            if ignorecase and lo.isalpha() and hi.isalpha():
                out.append(f"{re.escape(lo.swapcase())}-{re.escape(hi.swapcase())}")
        elif op is _C.CATEGORY and av in _CATEGORIES:
            out.append(_CATEGORIES[av])
        else:
            raise _Unknown(str(op))
    return out


def _first(seq: Any, ignorecase: bool) -> tuple[list[str], bool]:
    """The class items a match of ``seq`` can begin with, and whether ``seq`` can match the empty string."""
    items: list[str] = []
    for op, av in seq:
        if op in _ZERO_WIDTH:
            continue
        if op is _C.LITERAL:
            return items + _class_items([(op, av)], ignorecase), False
        if op is _C.IN:
            return items + _class_items(av, ignorecase), False
        if op is _C.SUBPATTERN:
            sub, nullable = _first(av[-1], ignorecase)
        elif op is _C.BRANCH:
            sub, nullable = [], False
            for branch in av[1]:
                first, empty = _first(branch, ignorecase)
                sub += first
                nullable = nullable or empty
        elif op in _REPEATS:
            sub, nullable = _first(av[2], ignorecase)
            nullable = nullable or av[0] == 0
        else:
            raise _Unknown(str(op))
        items += sub
        if not nullable:
            return items, False
    return items, True


def compile_fast(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, led by a lookahead of the characters a match can begin with."""
    try:
        parsed = sre_parse.parse(pattern, flags)
        ignorecase = bool(parsed.state.flags & sre_constants.SRE_FLAG_IGNORECASE)
        items, nullable = _first(parsed, ignorecase)
    except _Unknown:
        return re.compile(pattern, flags)
    if nullable or not items:
        return re.compile(pattern, flags)
    lead = "(?=[" + "".join(dict.fromkeys(items)) + "])"
    inline = _INLINE_FLAGS.match(pattern)  # a global inline flag stays first
    end = inline.end() if inline else 0
    return re.compile(pattern[:end] + lead + pattern[end:], flags)
