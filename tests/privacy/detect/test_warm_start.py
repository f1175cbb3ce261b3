"""The detectors' models and dictionaries load when the gateway starts (``PrivacyProtector.start``), not on the first
request: a first step must not pay the given-name list or spaCy's model (seconds of CPU), nor jieba's dictionary when
``privacy.warm_chinese`` asks for it at start; without it, jieba (~67 MB) is loaded by the first Chinese text, and a
load that fails fails that request closed. Real jieba, real given-name list, real spaCy; the loaders only count how
often they build."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gateway.state.sessions import MemorySessionStore
from privacy.detect import LayeredDetector, PatternDetector, SecretDetector, SpacyRecognizer
from privacy.detect.en_names import EnglishNames
from privacy.detect.given_names import GivenNames
from privacy.detect.normalise import _fold_table
from privacy.detect.people import PeopleDetector
from privacy.detect.segmenter import JiebaSegmenter
from privacy.detect.zh_names import ChineseNames
from privacy.errors import PrivacyUnavailable
from privacy.factory import build_privacy_protector
from privacy.protector import PrivacyProtector
from privacy.settings import NerSettings, PrivacySettings


class CountingSegmenter(JiebaSegmenter):
    builds = 0

    def _build(self) -> Any:
        self.builds += 1
        return super()._build()


class BrokenSegmenter(CountingSegmenter):
    def _build(self) -> Any:
        self.builds += 1
        raise MemoryError("no room for jieba's dictionary")


class CountingNames(GivenNames):
    builds = 0

    def _read(self) -> frozenset[str]:
        self.builds += 1
        return super()._read()


class CountingRecognizer(SpacyRecognizer):
    builds = 0

    def _build(self) -> Any:
        self.builds += 1
        return super()._build()


def _protector(settings: PrivacySettings, segmenter: CountingSegmenter | None = None,
               ) -> tuple[PrivacyProtector, list[Any]]:
    loaders: list[Any] = [segmenter or CountingSegmenter(), CountingNames(), CountingRecognizer(NerSettings())]
    segmenter, names, recognizer = loaders
    detector = LayeredDetector(settings.layers, secrets=SecretDetector(), patterns=PatternDetector(), ner=recognizer,
                               people=PeopleDetector(ChineseNames(segmenter), EnglishNames(names)),
                               warm_chinese=settings.warm_chinese)
    return (build_privacy_protector(settings, database_url=None, sessions=MemorySessionStore(), detector=detector),
            loaders)


BODY = {"messages": [{"role": "user", "content": "客户：王建国 asked again; reviewer Sofia Brandt lives in Leeds."}]}


def test_start_loads_every_detector_dictionary_and_the_first_request_loads_none() -> None:
    protector, loaders = _protector(PrivacySettings(warm_chinese=True))

    async def run() -> str:
        await protector.start()
        assert [loader.builds for loader in loaders] == [1, 1, 1]  # jieba, the given names, spaCy: at start
        sent = (await protector.scrub(BODY, session_id="s")).body["messages"][0]["content"]
        await protector.aclose()
        return str(sent)

    sent = asyncio.run(run())
    assert [loader.builds for loader in loaders] == [1, 1, 1]  # the first request built nothing
    for value in ("王建国", "Sofia Brandt", "Leeds"):  # ... and every layer it warmed did run on it
        assert value not in sent


def test_jieba_waits_for_the_first_chinese_text_by_default() -> None:
    protector, loaders = _protector(PrivacySettings())
    english = {"messages": [{"role": "user", "content": "reviewer Sofia Brandt lives in Leeds."}]}

    async def run() -> str:
        await protector.start()
        assert [loader.builds for loader in loaders] == [0, 1, 1]  # the given names and spaCy; no jieba
        await protector.scrub(english, session_id="s")
        assert loaders[0].builds == 0  # no Chinese text yet
        sent = (await protector.scrub(BODY, session_id="s")).body["messages"][0]["content"]
        await protector.aclose()
        return str(sent)

    sent = asyncio.run(run())
    assert loaders[0].builds == 1 and "王建国" not in sent


def test_a_chinese_dictionary_that_cannot_load_fails_the_request_closed() -> None:
    protector, loaders = _protector(PrivacySettings(), BrokenSegmenter())

    async def run() -> None:
        await protector.start()
        try:
            with pytest.raises(PrivacyUnavailable, match="no room for jieba"):
                await protector.protect(BODY, session_id="s", request_id="r")
        finally:
            await protector.aclose()

    asyncio.run(run())
    assert loaders[0].builds >= 1


def test_warm_at_start_false_leaves_loading_to_the_first_request() -> None:
    protector, loaders = _protector(PrivacySettings(warm_at_start=False))

    async def run() -> None:
        await protector.start()
        await protector.aclose()

    asyncio.run(run())
    assert [loader.builds for loader in loaders] == [0, 0, 0]


def test_start_builds_the_tables_a_first_non_ascii_text_would_build() -> None:
    """A first Chinese request after start cost ~25 ms more than the next one: ``fold``'s look-alike table (read from
    ``confusable_homoglyphs``' data) was built on the first text that was not ASCII. Start reads sample texts now."""
    _fold_table.cache_clear()
    protector, _ = _protector(PrivacySettings())

    async def run() -> None:
        await protector.start()
        await protector.aclose()

    asyncio.run(run())
    assert _fold_table.cache_info().currsize == 1


def test_warm_phones_leave_no_region_to_load_on_the_first_number() -> None:
    """A fresh process: libphonenumber's region data is loaded by ``PhoneDetector.warm``, not by the first number."""
    import subprocess
    import sys

    script = ("import sys\n"
              "from privacy.detect import PhoneDetector\n"
              "d = PhoneDetector()\n"
              "d.warm()\n"
              "before = set(sys.modules)\n"
              "assert d.find('call +1 415-555-0142, 020 7946 0321 or 0049 30 901820')\n"
              "print(sorted(m for m in set(sys.modules) - before if m.startswith('phonenumbers')))\n")
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
