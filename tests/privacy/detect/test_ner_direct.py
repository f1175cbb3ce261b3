"""NER reads spaCy's entities directly: the same results as presidio's AnalyzerEngine, from the ner component alone,
and only on prose clauses the other layers left (real model, real presidio)."""

from __future__ import annotations

import pytest

from gateway.cli.offline import prepare_offline_environment
from privacy.detect import Target, clauses, prose_segments
from privacy.detect.ner import Entity, SpacyRecognizer, _plausible
from privacy.factory import build_detector
from privacy.settings import NerSettings, PrivacySettings

TEXTS = [
    "Maria Gonzalez flew from Berlin to Lisbon on Monday with Acme Corp's CFO.",
    "Dear Mr. Okafor, the Golden Gate Bridge tour in San Francisco is booked for you and Priya Raman.",
    "Attendees: Hiro Tanaka, Elif Yilmaz, Jonas Berg. Location: Krakow, Poland.",
    "The French delegation met the Japanese minister at 10:30 on 3 May 2024 near Lake Geneva.",
    "Nothing here but lowercase words and a number 42.",
]


@pytest.fixture(scope="module")
def presidio_entities():
    """The engine the gateway used before: presidio's AnalyzerEngine with its spaCy recognizer, full pipeline."""
    prepare_offline_environment()
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NlpEngineProvider
    from presidio_analyzer.predefined_recognizers import SpacyRecognizer as PresidioSpacy

    engine = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": NerSettings().model_name}],
    }).create_engine()
    registry = RecognizerRegistry(supported_languages=["en"])
    registry.add_recognizer(PresidioSpacy(supported_language="en"))
    analyzer = AnalyzerEngine(nlp_engine=engine, registry=registry, supported_languages=["en"])

    def entities(text: str, settings: NerSettings) -> list[tuple[str, str, float]]:
        found = analyzer.analyze(text=text, language="en", entities=settings.entities,
                                 score_threshold=settings.min_score)
        ents = [Entity(r.entity_type, text[r.start:r.end], float(r.score)) for r in sorted(found, key=lambda r: r.start)]
        return [(e.type, e.value, e.score) for e in ents if _plausible(e)]

    return entities


@pytest.mark.parametrize("settings", [
    NerSettings(),
    NerSettings(entities=["PERSON", "LOCATION", "ORGANIZATION", "NRP", "DATE_TIME", "FAC"]),
    NerSettings(min_score=0.9),
], ids=["default", "every-type", "threshold-above-the-default-score"])
def test_direct_entities_equal_presidios_analyzer(presidio_entities, settings):
    recognizer = SpacyRecognizer(settings)
    ours = [[(e.type, e.value, e.score) for e in found] for found in recognizer.entities(TEXTS)]
    assert ours == [presidio_entities(text, settings) for text in TEXTS]
    assert any(ours) == (settings.min_score <= 0.85)


def test_only_the_ner_component_runs():
    assert SpacyRecognizer(NerSettings()).nlp().pipe_names == ["ner"]


class Spy:
    """The real recognizer, recording the segments it is asked about."""

    def __init__(self) -> None:
        self.inner = SpacyRecognizer(NerSettings())
        self.segments: list[str] = []

    def entities(self, segments: list[str], *, scope: str = "") -> list[list[Entity]]:
        self.segments += segments
        return self.inner.entities(segments, scope=scope)

    def warm(self) -> None:
        self.inner.warm()


def _detector(spy: Spy):
    detector = build_detector(PrivacySettings())
    detector._ner = spy
    return detector


CONTACTS = "\n".join(
    f"- CUST-{1000 + i} {first} {last} <{first.lower()}.{last.lower()}@example.com> +1 415-555-01{i:02d} "
    f"({city}): Renewal due in Q3; prefers email."
    for i, (first, last, city) in enumerate([("Alice", "Whitaker", "Rotterdam"), ("Sven", "Moreau", "Lisbon"),
                                             ("Naomi", "Adeyemi", "Osaka"), ("Tomasz", "Novak", "Denver"),
                                             ("Ingrid", "Brennan", "Krakow"), ("Kwame", "Sato", "Toronto")]))


def test_values_other_layers_found_are_not_read_again_by_ner():
    spy = Spy()
    found = _detector(spy).detect([Target(CONTACTS)], None, scope="", profile="balanced")[0]
    assert spy.segments and not any("@" in s or "415-555" in s for s in spy.segments)
    assert {"Alice Whitaker", "Sven Moreau", "Ingrid Brennan"} <= {f.value for f in found if f.type == "PERSON"}


def test_a_clause_every_record_repeats_is_analysed_once():
    spy = Spy()
    _detector(spy).detect([Target(CONTACTS)], None, scope="", profile="balanced")
    assert CONTACTS.count("Renewal due in Q3;") == 6 and "\n".join(spy.segments).count("Renewal due in Q3;") == 1


NAMES_IN_PROSE = [  # names at the places a clause cut could hide them: after ; : . Mr. Dr., starting a sentence
    ("Please forward the contract to Sven Moreau; she is based in Lisbon.", ["Sven Moreau", "Lisbon"]),
    ("Mr. Whitaker asked whether Ingrid Brennan could travel to Osaka next week.", ["Whitaker", "Ingrid Brennan"]),
    ("Attendees: Lucia Castellanos, Pieter Halvorsen. Location: Edinburgh.",
     ["Lucia Castellanos", "Pieter Halvorsen", "Edinburgh"]),
    ("I talked to Pieter Moreau yesterday. Naomi Sato said the build in Lisbon is broken.",
     ["Pieter Moreau", "Naomi Sato", "Lisbon"]),
    ("Reminder: call Hannah Fitzgerald at the hotel in Melbourne.", ["Hannah Fitzgerald", "Melbourne"]),
    ("Ticket escalated by Rafael Castellanos: customer in Toronto cannot log in.", ["Rafael Castellanos", "Toronto"]),
    ("Dr. Sato reviewed the results. Arjun Pemberton disagreed.", ["Sato", "Arjun Pemberton"]),
    ("Summary for Oliver Brennan: the Osaka team finished the migration.", ["Oliver Brennan", "Osaka"]),
    ("Yesterday Ingrid Halvorsen moved to Edinburgh; ask Mateo Vasquez for details.",
     ["Ingrid Halvorsen", "Edinburgh", "Mateo Vasquez"]),
    ("| name | city |\n|---|---|\n| Chloe Fitzgerald | Nairobi |", ["Chloe Fitzgerald", "Nairobi"]),
]


@pytest.mark.parametrize(("text", "names"), NAMES_IN_PROSE, ids=[t[:24] for t, _ in NAMES_IN_PROSE])
def test_names_in_prose_are_still_found(text, names):
    found = build_detector(PrivacySettings()).detect([Target(text)], None, scope="", profile="balanced")[0]
    covered = [n for n in names if any(f.start <= text.index(n) and f.end >= text.index(n) + len(n) for f in found)]
    assert covered == names


def test_clauses_end_at_sentences_not_at_abbreviations_or_initials():
    assert clauses("Mr. Smith met Dr. J. R. Watson at St. Mary's. Then Bob left; Alice stayed: fine! e.g. Ann, "
                   "U.S. Army. 3 days later.") == [
        "Mr. Smith met Dr. J. R. Watson at St. Mary's.", "Then Bob left;", "Alice stayed:",
        "fine!", "e.g. Ann, U.S. Army.", "3 days later."]


def test_clauses_without_a_capitalised_word_are_not_segments():
    assert prose_segments("Renewal for Alice Whitaker; due in q1; prefers email.") == ["Renewal for Alice Whitaker;"]
