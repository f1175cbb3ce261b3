"""Named entities through presidio-analyzer with an offline spaCy model; the engine is built lazily, once."""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from privacy.settings import NerSettings


@dataclass(frozen=True)
class Entity:
    type: str
    value: str
    score: float


class EntityRecognizer(Protocol):
    def entities(self, segments: list[str]) -> list[list[Entity]]: ...


_NOT_A_NAME = re.compile(r"[0-9/\\_@#$%{}<>=|:;]")


def _plausible(entity: Entity) -> bool:
    value = entity.value.strip()
    return len(value) >= 3 and not _NOT_A_NAME.search(value) and any(ch.isupper() for ch in value)


class PresidioRecognizer:
    """presidio's spaCy recognizer only (the pattern layers cover the rest, faster); segments batched through
    ``nlp.pipe``; results cached per segment."""

    def __init__(self, settings: NerSettings, *, cache_entries: int = 20_000) -> None:
        self._settings = settings
        self._engine: Any = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, list[Entity]] = OrderedDict()
        self._cache_entries = cache_entries

    def _build(self) -> Any:
        os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
        from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
        from presidio_analyzer.nlp_engine import NlpEngineProvider
        from presidio_analyzer.predefined_recognizers import SpacyRecognizer

        provider = NlpEngineProvider(nlp_configuration={
            "nlp_engine_name": "spacy",
            "models": [{"lang_code": "en", "model_name": self._settings.model_name}],
        })
        nlp_engine = provider.create_engine()
        nlp = nlp_engine.nlp["en"]  # type: ignore[attr-defined]
        keep = [name for name in ("tok2vec", "ner") if name in nlp.pipe_names]
        nlp.select_pipes(enable=keep)  # tagger, parser and lemmatizer add time and no entities
        registry = RecognizerRegistry(supported_languages=["en"])
        registry.add_recognizer(SpacyRecognizer(supported_language="en"))
        return AnalyzerEngine(nlp_engine=nlp_engine, registry=registry, supported_languages=["en"])

    def engine(self) -> Any:
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    self._engine = self._build()
        return self._engine

    def entities(self, segments: list[str]) -> list[list[Entity]]:
        results: dict[str, list[Entity]] = {}
        todo = []
        for segment in segments:
            cached = self._cache.get(segment)
            if cached is not None:
                results[segment] = cached
            elif segment not in results:
                results[segment] = []
                todo.append(segment)
        if todo:
            engine = self.engine()
            with self._lock:  # spaCy pipelines are not documented as thread-safe
                batch = list(engine.nlp_engine.process_batch(todo, language="en", batch_size=64))
                for text, artifacts in batch:
                    found = engine.analyze(text=text, language="en", entities=self._settings.entities,
                                           nlp_artifacts=artifacts, score_threshold=self._settings.min_score)
                    entities = [Entity(r.entity_type, text[r.start:r.end], float(r.score)) for r in found]
                    results[text] = [e for e in entities if _plausible(e)]
                    self._remember(text, results[text])
        return [results[segment] for segment in segments]

    def _remember(self, segment: str, entities: list[Entity]) -> None:
        self._cache[segment] = entities
        if len(self._cache) > self._cache_entries:
            self._cache.popitem(last=False)
