"""Scoring a protected text against its prompt's annotations, independent of the detectors.

A unit leaked when its value (case-folded, whitespace collapsed) can still be read in the text sent, not inside a
longer run of letters and digits (a CJK value: anywhere). Other words kept: the prompt's words outside every
annotated span (ASCII words and single CJK characters), as a multiset, that the sent text still holds once
placeholders (``[TYPE_001]``, ``<TYPE>``) are taken out.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from benchmarks.recall.real.corpus import Prompt

_WORD = re.compile(r"[A-Za-z0-9À-ɏ]+|[\u3400-\u9fff]")
_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_]*_\d{3,}\]|<[A-Z][A-Z_]*>|\[[A-Z][A-Z_]*\]")


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def leaked(value: str, sent: str) -> bool:
    value, sent = _norm(value), _norm(sent)
    start = sent.find(value)
    while start >= 0:
        end = start + len(value)
        before = sent[start - 1] if start else " "
        after = sent[end] if end < len(sent) else " "
        if not (value[0].isascii() and value[0].isalnum() and before.isascii() and before.isalnum()) and \
                not (value[-1].isascii() and value[-1].isalnum() and after.isascii() and after.isalnum()):
            return True
        start = sent.find(value, start + 1)
    return False


def other_words(prompt: Prompt) -> Counter[str]:
    text = list(prompt.text)
    for start, end in prompt.spans:
        text[start:end] = " " * (end - start)
    return Counter(w.casefold() for w in _WORD.findall("".join(text)))


@dataclass
class Tally:
    units: Counter[str] = field(default_factory=Counter)  # per family
    leaks: Counter[str] = field(default_factory=Counter)
    prompts: int = 0
    prompts_leaking: int = 0
    words: int = 0
    words_kept: int = 0
    leaked_units: list[tuple[str, str, str]] = field(default_factory=list)  # (prompt, family, value)

    def add(self, prompt: Prompt, sent: str) -> None:
        self.prompts += 1
        any_leak = False
        for unit in prompt.units:
            self.units[unit.family] += 1
            if leaked(unit.value, sent):
                self.leaks[unit.family] += 1
                self.leaked_units.append((prompt.id, unit.family, unit.value))
                any_leak = True
        self.prompts_leaking += any_leak
        wanted = other_words(prompt)
        have = Counter(w.casefold() for w in _WORD.findall(_PLACEHOLDER.sub(" ", sent)))
        self.words += sum(wanted.values())
        self.words_kept += sum(min(n, have[w]) for w, n in wanted.items())

    def leak_rate(self, family: str | None = None) -> float:
        if family is None:
            return sum(self.leaks.values()) / max(sum(self.units.values()), 1)
        return self.leaks[family] / max(self.units[family], 1)

    @property
    def kept(self) -> float:
        return self.words_kept / max(self.words, 1)
