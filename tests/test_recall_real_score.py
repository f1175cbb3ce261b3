"""The real-text benchmark's annotations and scorer, independent of the detectors: marks parse into units and spans
that stand in the text, a unit counts as leaked only as a whole word-run, and placeholders are no kept words."""

from __future__ import annotations

from benchmarks.recall.real.corpus import load, parse
from benchmarks.recall.real.score import Tally, leaked


def test_marks_parse_into_units_and_spans_that_stand_in_the_text():
    prompt = parse("p", "code", "File C:\\Users\\[[snowak|on]]\\x.py, ask [[Priya|pe]]; again [[snowak|on]]")
    assert prompt.text == "File C:\\Users\\snowak\\x.py, ask Priya; again snowak"
    assert [(u.value, u.family) for u in prompt.units] == [("snowak", "online"), ("Priya", "people")]
    assert [prompt.text[s:e] for s, e in prompt.spans] == ["snowak", "Priya", "snowak"]


def test_every_annotated_prompt_is_well_formed():
    for split in ("dev", "heldout"):
        for prompt in load(split):
            assert "[[" not in prompt.text and prompt.units, prompt.id
            assert all(prompt.text[s:e].strip() == prompt.text[s:e] for s, e in prompt.spans), prompt.id


def test_a_unit_leaks_only_as_a_whole_run_and_case_folded():
    assert leaked("Leo", "my son leo is 7") and not leaked("Leo", "Leonard said")
    assert leaked("github.com/jnowak-ux", "see github.com/jnowak-ux/x")
    assert not leaked("github.com/jnowak-ux", "see github.com/[USERNAME_001]/x")
    assert leaked("上海", "现居上海市")  # a CJK value anywhere


def test_placeholders_are_no_kept_words_and_a_masked_unit_is_no_leak():
    prompt = parse("p", "chat", "ask [[Priya|pe]] about the 001 report")
    tally = Tally()
    tally.add(prompt, "ask [PERSON_001] about the report")
    assert tally.leak_rate() == 0 and tally.words_kept == 4 and tally.words == 5  # "001" was dropped, not kept
