"""Presidio's defaults as LiteLLM's presidio guardrail runs them: every predefined recogniser of the analyzer,
every entity, no threshold, English, each result replaced by ``<ENTITY_TYPE>`` (presidio-anonymizer's default
``replace`` operator; overlaps kept by score, then length, as its conflict resolution does). The NLP engine is
the only English spaCy model installed (presidio's own default, ``en_core_web_lg``, is not: no downloads)."""

from __future__ import annotations

import logging
from typing import Any

from gateway.cli.offline import prepare_offline_environment
from privacy.settings import NerSettings


class PresidioDefaults:
    def __init__(self) -> None:
        prepare_offline_environment()
        logging.getLogger("tldextract").setLevel(logging.CRITICAL)  # its URL check falls back to the bundled
        # suffix list when the download fails (offline), after logging the failure
        from presidio_analyzer import AnalyzerEngine
        from presidio_analyzer.nlp_engine import NlpEngineProvider

        engine = NlpEngineProvider(nlp_configuration={
            "nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": NerSettings().model_name}],
        }).create_engine()
        self._analyzer: Any = AnalyzerEngine(nlp_engine=engine, supported_languages=["en"])

    def anonymise(self, text: str) -> str:
        results = sorted(self._analyzer.analyze(text=text, language="en"),
                         key=lambda r: (-r.score, -(r.end - r.start), r.start))
        kept: list[Any] = []
        for r in results:
            if all(r.end <= k.start or r.start >= k.end for k in kept):
                kept.append(r)
        for r in sorted(kept, key=lambda r: r.start, reverse=True):
            text = f"{text[:r.start]}<{r.entity_type}>{text[r.end:]}"
        return text
