"""The special categories of data-protection law, from word lists (``special_words``): health (diagnoses,
medication, pregnancy) as ``HEALTH``, ``RELIGION``, ``POLITICAL_OPINION``, ``SEXUAL_ORIENTATION``, and
nationality or ethnicity as ``NRP`` — English and Chinese.

Health, religion, politics and orientation count wherever their words stand. A nationality adjective is also a
language, a cuisine, a consulate (``translate to English``, ``Japanese food``): outside ``strict`` it counts only
where it says who someone is — after ``I'm``/``as a``/``my wife is``, before a person word (``Nigerian nurse``,
``Turkish family``), or as a plural group (``the Croats``, ``Malaysians``); in ``strict`` everywhere but after a
language cue (``in English``). One regular expression per script, built once, linear in the text."""

from __future__ import annotations

import functools
import re

from privacy.detect.findings import Finding
from privacy.detect.firstchars import compile_fast
from privacy.detect.lexicon import trie_pattern
from privacy.detect.special_words import (
    CAPITALISED_ONLY,
    CONDITIONS,
    HEALTH_MODIFIERS,
    LANGUAGE_CUES,
    MEDICATION,
    NRP,
    ORIENTATION,
    POLITICAL,
    RELIGION,
    UPPER_ONLY,
    ZH_HEALTH,
    ZH_NRP,
    ZH_ORIENTATION,
    ZH_POLITICAL,
    ZH_RELIGION,
)

LAYER = "special"

_SELF = compile_fast(r"(?i)(?:\b(?:i am|i'm|i’m|im|as an?|we are|we're|they are|they're|he is|he's|she is|she's|"
                   r"being|is|are|was|were|am|a|an|the|my|our|half|fellow|other)[ \t]+(?:an?[ \t]+)?)$")
_PERSON_AFTER = compile_fast(
    r"(?i)[ \t-]+(?:man|men|woman|women|guy|guys|girl|girls|boy|boys|lady|nurse|doctor|engineer|student|students|"
    r"citizen|citizens|national|nationals|family|families|parents?|mother|father|mum|mom|dad|wife|husband|partner|"
    r"girlfriend|boyfriend|friend|friends|colleague|neighbou?r|immigrants?|refugees?|people|community|descent|"
    r"origin|heritage|background|roots|grandmother|grandfather|grandma|grandpa|worker|workers|living|born|"
    r"passport|background|minority|ancestry)\b")


def _terms(words: list[str]) -> list[str]:
    return [w.replace("_", " ") for w in words if w]


@functools.cache
def _english() -> tuple[re.Pattern[str], dict[str, str]]:
    types: dict[str, str] = {}
    for type_, words in (("NRP", NRP), ("SEXUAL_ORIENTATION", ORIENTATION), ("POLITICAL_OPINION", POLITICAL),
                         ("RELIGION", RELIGION), ("HEALTH", MEDICATION), ("HEALTH", CONDITIONS)):
        for term in _terms(words):
            types[term] = type_
    modifiers = trie_pattern([m.strip() for m in HEALTH_MODIFIERS])
    pattern = compile_fast(r"(?i)(?<![\w'’\-])((?:" + modifiers + r"[ \t])?)(" + trie_pattern(sorted(types))
                         + r")(?![\w\-])")
    return pattern, types


@functools.cache
def _chinese() -> tuple[re.Pattern[str], dict[str, str]]:
    types: dict[str, str] = {}
    for type_, words in (("NRP", ZH_NRP), ("SEXUAL_ORIENTATION", ZH_ORIENTATION),
                         ("POLITICAL_OPINION", ZH_POLITICAL), ("RELIGION", ZH_RELIGION), ("HEALTH", ZH_HEALTH)):
        for term in words:
            types[term] = type_
    return compile_fast(trie_pattern(sorted(types))), types


def _case_ok(term: str, written: str) -> bool:
    if term in UPPER_ONLY:
        return written.isupper()
    if term in CAPITALISED_ONLY:
        return written[:1].isupper()
    return True


def _says_who(text: str, start: int, end: int, term: str) -> bool:
    """A nationality or ethnicity said of someone (or a plural group), not a language or a cuisine."""
    if term.endswith("s") and not term.endswith(("ss", "ese")):
        return True  # Croats, Malaysians, Moroccans: a group of people
    return bool(_SELF.search(text, max(0, start - 24), start)) or bool(_PERSON_AFTER.match(text, end))


def _after_language_cue(text: str, start: int) -> bool:
    before = text[max(0, start - 16):start].split()
    return bool(before) and before[-1].casefold() in LANGUAGE_CUES


class SpecialCategories:
    """``find(text, strict)``: the special-category words of a text."""

    def find(self, text: str, *, strict: bool) -> list[Finding]:
        found: list[Finding] = []
        pattern, types = _english()
        for m in pattern.finditer(text):
            term = m.group(2).casefold()
            type_ = types.get(term)
            if type_ is None or not _case_ok(term, m.group(2)):
                continue
            start = m.start(1) if type_ == "HEALTH" else m.start(2)
            if type_ == "NRP" and not (_says_who(text, m.start(2), m.end(2), term)
                                       or (strict and not _after_language_cue(text, m.start(2)))):
                continue
            value = text[start:m.end(2)]
            found.append(Finding(type=type_, start=start, end=m.end(2), value=value, layer=LAYER,
                                 key=f"{type_}:{value.casefold()}"))
        if any("\u4e00" <= ch <= "\u9fff" for ch in text):
            zh, zh_types = _chinese()
            for m in zh.finditer(text):
                type_ = zh_types[m.group(0)]
                found.append(Finding(type=type_, start=m.start(), end=m.end(), value=m.group(0), layer=LAYER,
                                     key=f"{type_}:{m.group(0)}"))
        return found
