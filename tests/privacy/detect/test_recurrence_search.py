"""Where found values recur in a short text (a step's new tool result) is searched form by form, without compiling
the one pattern a long text needs (~75 µs a form, most of a small step's detection): the same answers."""

from __future__ import annotations

import random
from typing import Any

import pytest

from privacy.detect import recurrence


def _compiled_only(*_: Any) -> Any:
    raise AssertionError("a short text compiled a pattern")


def test_a_short_text_is_searched_without_compiling_a_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recurrence, "_compiled", _compiled_only)
    text = "Grace  OKAFOR wrote to grace.okafor@example.com;\tgrace\nokafor again, not graceokafor or Grace Okafor_2"
    found = list(recurrence.recurrences(text, {"Grace Okafor": "name", "grace.okafor@example.com": "mail"},
                                        ignore_case=True))
    assert [(text[start:end], tag) for start, end, tag in found] == [
        ("Grace  OKAFOR", "name"), ("grace.okafor@example.com", "mail"), ("grace\nokafor", "name")]
    literal = list(recurrence.recurrences("abab aba", {"aba": 1, "ab": 2}, words=False))
    assert literal == [(0, 3, 1), (2, 4, 2), (5, 8, 1)]  # overlapping, the longest at each position


def test_the_search_finds_what_the_compiled_pattern_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Random texts and forms over the characters where the two could part (case, whitespace runs of any kind, word
    ends, ``ſ``, ``İ``, ``K``, ligatures, no-break space): words or literal, in any case or as written."""
    rng = random.Random(41)
    alphabets = ("aAbB_1 \t\n\x1c-.xX", "aAbßſ\u212a \ufb00\u0130\u00a0x")

    def run(text: str, forms: dict[str, str], words: bool, ignore_case: bool, limit: int) -> list[Any]:
        monkeypatch.setattr(recurrence, "_SEARCHED", limit)
        return list(recurrence.recurrences(text, forms, words=words, ignore_case=ignore_case))

    for i in range(1000):
        alphabet = alphabets[i % 2]
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        forms: dict[str, str] = {}
        for _ in range(rng.randint(1, 5)):
            start = rng.randrange(len(text)) if text else 0
            form = text[start:start + rng.randint(1, 6)] if text and rng.random() < 0.6 else "".join(
                rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
            form = form.upper() if rng.random() < 0.3 else form
            if form:
                forms[form] = form
        for words in (True, False):
            for ignore_case in (True, False):
                searched = run(text, forms, words, ignore_case, 10**9)
                assert searched == run(text, forms, words, ignore_case, -1), (text, forms, words, ignore_case)
