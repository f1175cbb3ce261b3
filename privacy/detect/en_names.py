"""English (and other Latin-script) personal names where the small NER model misses them: after a role word
(``assignee``, ``reviewer``, ``claimant``, ``assigned to``), as a chat line's speaker, after a greeting or in a
sign-off, and in a table column whose other cells are names — in any case (``maria gonzalez``, ``SOFIA BRANDT``).
A name's first word must be a known given name (``GivenNames``) unless a role word stands right before a
capitalised pair; a word that names an organisation, a product or a place (``Partners``, ``Insurance``, ``Mode``,
``Centre``) ends the candidate and, as its last word, rejects it."""

from __future__ import annotations

import re

from privacy.detect.given_names import GivenNames
from privacy.detect.lexicon import trie_pattern
from privacy.detect.org_words import ORG_WORDS as _ORG_WORDS
from privacy.detect.recurrence import recurrences

_ROLE_WORDS = ("assignee assigned to reassigned to reviewer reviewed by claimant approver approved by requester "
               "requested by requestor owned by submitted by submitter handled by handler tenant landlord "
               "employee policyholder insured applicant patient agent rep representative supervisor created by "
               "updated by modified by signed by attn attention beneficiary payee recipient sender dear hi hello hey "
               "thanks thank you regards cheers guest passenger cardholder candidate interviewer on behalf of "
               "reimburse reimbursed refund forwarding to forwarded to sent to cc'd called emailed owner").split(" ")
# Header words that name a person only with a colon after them (``From: Hannah Fischer``).
_HEADERS = r"(?:from|to|cc|bcc|contact|customer|client|manager|lead|user|member)(?=[ \t]*[:=])"
_WORDS = sorted({w for w in " ".join(_ROLE_WORDS).split() if len(w) > 1} - {"to", "by", "of", "on", "you"})
# ``handled by``, and as logfmt and code write it: ``handled_by=``, ``submitted-by:``
ROLE = re.compile(r"(?i)\b(?:" + trie_pattern(_WORDS) + r"(?:[ \t_\-]+(?:to|by|of|you))?|" + _HEADERS
                  + r")(?![A-Za-z])")
STRONG_ROLES = frozenset("assignee reviewer claimant approver requester requestor submitter tenant landlord "
                          "policyholder applicant payee beneficiary handler cardholder".split())
_CONNECT = re.compile(r"""[ \t]*(?:[:=]|\bis\b|\bwas\b|->|=>)?[ \t]*["']?""")
_WORD = r"[A-Za-zÀ-ÖØ-öø-ÿ][A-Za-zÀ-ÖØ-öø-ÿ'’\-]*"
_CANDIDATE = re.compile(rf"({_WORD})(?:[ \t]+(?:(?:van|von|de|der|den|da|di|del|la|le|du|al|bin|ter)[ \t]+)?({_WORD}))?"
                        rf"(?:[ \t]+({_WORD}))?")
_SPEAKER = re.compile(r"(?m)^[ \t]*(?:\[[^\]\n]{1,24}\][ \t]*|\d{1,2}:\d{2}(?::\d{2})?[ \t]+)?([A-Z][a-z]{1,20})[ \t]*:[ \t]")
_CAPS_PAIR = re.compile(r"(?<![A-Za-z])([A-Z]{2,20})[ \t]+([A-Z][A-Z'\-]{1,24})(?![A-Za-z])")
_LINE = re.compile(r"(?m)^[ \t]*([A-Za-zÀ-ÿ][A-Za-zÀ-ÿ'’\- ]{2,40}?)[ \t]*$")
_NOT_SPEAKER = frozenset("user assistant system bot tool note error warning info debug subject from to cc date re "
                         "fwd sent hi hello dear thanks q a answer question summary result status".split())


def _case_ok(words: list[str]) -> bool:
    """All capitalised, all upper or all lower: a name written in one hand."""
    return all(w[:1].isupper() for w in words) or all(w.isupper() for w in words) or all(w.islower() for w in words)


class EnglishNames:
    def __init__(self, given: GivenNames) -> None:
        self._given = given

    def warm(self) -> None:
        self._given.load()

    def _name_at(self, text: str, pos: int, strong: bool) -> tuple[int, int] | None:
        """A name starting at ``pos``: a given name and a surname, or (after a strong role word) two capitalised
        words; the span, or None."""
        m = _CANDIDATE.match(text, pos)
        if m is None or not m.group(2):
            return None
        words = [w for w in m.groups() if w]
        ends = [m.end(1), m.end(2)] + ([m.end(3)] if m.group(3) else [])
        # the longest run of words that is no organisation and ends a name
        while len(words) >= 2 and (words[-1].casefold() in _ORG_WORDS or not _case_ok(words)):
            words.pop()
            ends.pop()
        if len(words) < 2 or any(w.casefold() in _ORG_WORDS for w in words):
            return None
        if len(words) == 3 and not words[2][:1].isupper() and not words[0].islower():
            words, ends = words[:2], ends[:2]
        if m.group(3) and len(words) == 3 and words[2].casefold() in _ORG_WORDS:
            return None
        if self._given.known(words[0]):
            return pos, ends[len(words) - 1]
        if strong and all(w[:1].isupper() and not w.isupper() for w in words[:2]):
            return pos, ends[1]
        return None

    def find(self, text: str) -> list[tuple[int, int]]:
        """Spans of names after role words, greetings and as chat speakers."""
        spans: list[tuple[int, int]] = []
        for role in ROLE.finditer(text):
            c = _CONNECT.match(text, role.end())
            start = c.end() if c else role.end()
            span = self._name_at(text, start, role.group(0).lower() in STRONG_ROLES)
            if span is not None:
                spans.append(span)
            else:  # a greeting or a speaker's one-word given name (``Hi Priya,``, ``thanks Marcus``)
                one = re.match(r"([A-Z][a-z]{1,20})(?![A-Za-z])(?![ \t]+[A-Z][a-z])", text[start:start + 22])
                if one and role.group(0).lower() in ("hi", "hello", "hey", "dear", "thanks", "thank you") \
                        and self._given.known(one.group(1)):
                    spans.append((start, start + len(one.group(1))))
        for m in _CAPS_PAIR.finditer(text):  # SOFIA BRANDT: the NER model reads capitals as an organisation
            if self._given.known(m.group(1)) and m.group(2).casefold() not in _ORG_WORDS:
                spans.append((m.start(), m.end()))
        for m in _LINE.finditer(text):  # a line that is a name alone (a signature, a list of people)
            if self.cell(m.group(1)):
                spans.append((m.start(1), m.end(1)))
        speakers = {m.group(1) for m in _SPEAKER.finditer(text)
                    if m.group(1).lower() not in _NOT_SPEAKER and self._given.known(m.group(1))}
        # a chat line's speaker, and wherever else the word stands in the same text (no letter glued to it)
        for start, end, _ in recurrences(text, {speaker: speaker for speaker in speakers}, words=False):
            if not (start and text[start - 1].isascii() and text[start - 1].isalpha()) \
                    and not (end < len(text) and text[end].isascii() and text[end].isalpha()):
                spans.append((start, end))
        return sorted(set(spans))

    def cell(self, value: str) -> bool:
        """Whether a table cell reads as a name: two or three words, a given name first, one hand."""
        value = value.strip()
        span = self._name_at(value, 0, strong=False) if value else None
        return span is not None and span == (0, len(value))

    def loose_cell(self, value: str) -> bool:
        """A cell in a column of names: two or three words in one hand, no organisation word, no digits."""
        words = value.split()
        return 2 <= len(words) <= 3 and all(re.fullmatch(_WORD, w) for w in words) and _case_ok(words) \
            and not any(w.casefold() in _ORG_WORDS for w in words)

