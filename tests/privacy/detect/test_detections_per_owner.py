"""Detections are shared within one owner only (issue 22 §2): a content-keyed cache shared by every tenant let
tenant B learn, from a fast answer, that tenant A had sent an exact text. These tests read what the caches are
keyed by — which scans run again — never the timing."""

from __future__ import annotations

from typing import Any

from gateway.state.sessions import MemorySessionStore
from gateway.state.tenancy import owner_of
from privacy.detect import LayeredDetector, PatternDetector, SpacyRecognizer
from privacy.detect.detector import Target
from privacy.detect.en_names import EnglishNames
from privacy.detect.given_names import GivenNames
from privacy.detect.people import PeopleDetector
from privacy.detect.segmenter import JiebaSegmenter
from privacy.detect.zh_names import ChineseNames
from privacy.factory import build_privacy_protector
from privacy.settings import LayerSettings, NerSettings, PrivacySettings
from tests.privacy.detect.test_shared_detections import SYSTEM, CountingPatterns, _body

A1, A2, B1 = "t.tenant-a/s1", "t.tenant-a/s2", "t.tenant-b/s1"  # internal ids: owner, then the client's id


def _protector(patterns: CountingPatterns, *, last_check: bool = False) -> Any:
    layers = LayerSettings(ner=False)
    detector = LayeredDetector(layers, secrets=PatternDetector(), patterns=patterns, ner=None)
    return build_privacy_protector(PrivacySettings(layers=layers, last_check=last_check), database_url=None,
                                   sessions=MemorySessionStore(), detector=detector, scope_of=owner_of)


async def test_a_tenants_sessions_share_their_system_prompts_scan_and_no_other_tenant_does():
    patterns = CountingPatterns()
    p = _protector(patterns)
    await p.scrub(_body("email me"), session_id=A1)
    await p.scrub(_body("call me"), session_id=A2)
    assert patterns.texts.count(SYSTEM) == 1  # A's second session: from the cache
    second = await p.scrub(_body("call me"), session_id=B1)
    assert patterns.texts.count(SYSTEM) == 2  # B's: scanned afresh, as if nobody had sent it
    assert "415-555-0132" not in second.body["messages"][0]["content"]


def test_owner_of_internal_session_ids():
    assert owner_of(A1) == "t.tenant-a" and owner_of("o.3f9a/run/7") == "o.3f9a" and owner_of("k.77/run-9") == "k.77"
    assert owner_of("run-1") == owner_of("project/run-1") == ""  # single-tenant ids: one owner


class CountingNlp:
    """spaCy's real pipeline, counting the texts it is asked to analyse."""

    def __init__(self, nlp: Any) -> None:
        self.inner, self.texts = nlp, []  # type: ignore[var-annotated]

    def pipe(self, texts: list[str], **kwargs: Any) -> Any:
        self.texts += list(texts)
        return self.inner.pipe(texts, **kwargs)


def test_the_ner_cache_is_keyed_by_owner():
    recognizer = SpacyRecognizer(NerSettings())
    counting = CountingNlp(recognizer.nlp())
    recognizer._nlp = counting
    text = "Maria Gonzalez flew from Madrid to Lisbon on Tuesday."
    first = recognizer.entities([text], scope="t.tenant-a")
    assert recognizer.entities([text], scope="t.tenant-a") == first and counting.texts == [text]
    assert recognizer.entities([text], scope="t.tenant-b") == first and counting.texts == [text, text]


class CountingSegmenter(JiebaSegmenter):
    """jieba's real tokenizer, counting the texts it is asked to cut."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def _build(self) -> Any:
        inner, texts = super()._build(), self.texts

        class Counting:
            def cut(self, text: str) -> Any:
                texts.append(text)
                return inner.cut(text)

        return Counting()


def test_the_chinese_segmenters_cache_is_keyed_by_owner_through_the_people_layer():
    segmenter = CountingSegmenter()
    layers = LayerSettings(ner=False)
    detector = LayeredDetector(layers, secrets=PatternDetector(), patterns=PatternDetector(), ner=None,
                               people=PeopleDetector(ChineseNames(segmenter), EnglishNames(GivenNames())))
    target = [Target("联系人 李娜负责这个项目", label="note")]
    first = detector.detect_shared(target, scope="t.tenant-a", profile="balanced")
    cut = len(segmenter.texts)
    assert cut and detector.detect_shared(target, scope="t.tenant-a", profile="balanced") == first and len(segmenter.texts) == cut
    assert detector.detect_shared(target, scope="t.tenant-b", profile="balanced") == first and len(segmenter.texts) == 2 * cut
