"""``compile_fast`` puts a lookahead of a pattern's first characters in front: the matches stay those of
``re.compile``, and a pattern it cannot read (one that may begin with any character) is compiled as it is."""

from __future__ import annotations

import re

import pytest

from benchmarks.recall.real.corpus import load
from privacy.detect import anchored, context_ids, links, specials
from privacy.detect.firstchars import compile_fast

TEXT = "\n".join(p.text for split in ("dev", "heldout") for p in load(split))


def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    found = [(f"{m.__name__}.{name}", value) for m in (links, context_ids, specials, anchored)
             for name, value in vars(m).items() if isinstance(value, re.Pattern)]
    return found + [("specials.english", specials._english()[0]), ("specials.chinese", specials._chinese()[0])]


@pytest.mark.parametrize(("name", "fast"), _patterns(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_lead_changes_no_match(name, fast):
    lead = re.match(r"(\(\?[aiLmsux]+\))?\(\?=\[.*?\]\)", fast.pattern)
    assert lead is not None, f"{name}: no lead"
    plain = re.compile((lead.group(1) or "") + fast.pattern[lead.end():], fast.flags)
    assert [m.span() for m in fast.finditer(TEXT)] == [m.span() for m in plain.finditer(TEXT)]


@pytest.mark.parametrize("pattern", [r"(?i)(?:ab|c)d", r"\b[0-9]{3}", r"x?y", r"(?<!a)bc", r"[^a]b", r".b", r"a*"])
def test_matches_equal_re_compile(pattern):
    text = "AbD cd abd 1234 xy y bbc abc qb .b aaab"
    assert [m.span() for m in compile_fast(pattern).finditer(text)] == \
        [m.span() for m in re.compile(pattern).finditer(text)]
