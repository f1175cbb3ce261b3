"""Named entities from an offline spaCy model, read straight from ``doc.ents`` with presidio's semantics.

Only the ``ner`` component runs (and whatever it listens to): in the small English model it has its own token
vectors, so the shared ``tok2vec``, tagger, parser and lemmatizer would add time and no entities. presidio's
``AnalyzerEngine`` is not on the path: with its spaCy recognizer alone it only renames labels (``PERSON``/``PER``
→ ``PERSON``; ``GPE``/``LOC`` → ``LOCATION``; an unmapped label such as ``FAC`` keeps its name and is dropped, as
are types its recognizer does not support), gives every entity its default score (spaCy has none) and drops those
under the threshold; that is done here directly, and
``tests/privacy/detect/test_ner_direct.py`` holds the two to the same results. The model is loaded lazily, once.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

from privacy.detect.org_words import ORG_WORDS
from privacy.settings import NerSettings

# presidio-analyzer's ``MODEL_TO_PRESIDIO_ENTITY_MAPPING`` (nlp_engine/ner_model_configuration.py) for the labels
# a spaCy English model emits; any other label keeps its own name, as presidio keeps it.
PRESIDIO_TYPES = {"PER": "PERSON", "PERSON": "PERSON", "LOC": "LOCATION", "LOCATION": "LOCATION",
                  "GPE": "LOCATION", "ORG": "ORGANIZATION", "DATE": "DATE_TIME", "TIME": "DATE_TIME", "NORP": "NRP"}
PRESIDIO_SCORE = 0.85  # presidio's default score for a spaCy entity; no context words are set, so it stays so
PRESIDIO_SUPPORTED = frozenset({"DATE_TIME", "NRP", "LOCATION", "PERSON", "ORGANIZATION"})  # its SpacyRecognizer's


@dataclass(frozen=True)
class Entity:
    type: str
    value: str
    score: float


class EntityRecognizer(Protocol):
    def entities(self, segments: list[str], *, scope: str = "") -> list[list[Entity]]:
        """Per segment, its entities. ``scope``: whose text this is (the gateway's owner): a cached result is
        reused only within one scope, so no tenant can time another's text."""
        ...

    def warm(self) -> None:
        """Load its model now (the gateway's start), not on the first segment."""
        ...


_NOT_A_NAME = re.compile(r"[0-9/\\_@#$%{}<>=|:;]")


def _plausible(entity: Entity) -> bool:
    """Not a code-like span, and (for a person or a place) not an organisation, a product or a business (``Allianz
    Partners``, ``Focus Mode``, ``Westfield Stratford City``): the small model tags those PERSON or LOCATION, and
    agents need them; as ORGANIZATION they are what the strict profile asks for."""
    value = entity.value.strip()
    return len(value) >= 3 and not _NOT_A_NAME.search(value) and any(ch.isupper() for ch in value) \
        and (entity.type in ("ORGANIZATION", "NRP") or value.split()[-1].casefold() not in ORG_WORDS)


def ner_only(nlp: Any) -> Any:
    """``nlp`` with every component removed but ``ner`` and the components it listens to (a shared
    ``tok2vec`` in models whose NER has no token vectors of its own)."""
    keep = {"ner"} | {name for name, pipe in nlp.pipeline
                      if "ner" in (getattr(pipe, "listening_components", None) or ())}
    for name in reversed(nlp.pipe_names):
        if name not in keep:
            nlp.remove_pipe(name)
    return nlp


class SpacyRecognizer:
    """spaCy's entities of the configured presidio types; segments batched through ``nlp.pipe`` and results
    cached per segment (equal segments of one call are analysed once)."""

    def __init__(self, settings: NerSettings, *, cache_entries: int = 20_000) -> None:
        self._settings = settings
        self._wanted = frozenset(settings.entities) & PRESIDIO_SUPPORTED
        self._nlp: Any = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str], list[Entity]] = OrderedDict()
        self._cache_entries = cache_entries
        self.analysed = 0  # segments the model read (a counter: cached segments are not read again)

    def _build(self) -> Any:
        import spacy

        return ner_only(spacy.load(self._settings.model_name))

    def nlp(self) -> Any:
        if self._nlp is None:
            with self._lock:
                if self._nlp is None:
                    self._nlp = self._build()
        return self._nlp

    def warm(self) -> None:
        if self.active:
            self.nlp()

    @property
    def active(self) -> bool:
        """False when no entity could pass the score threshold: then spaCy need not run at all."""
        return bool(self._wanted) and PRESIDIO_SCORE >= self._settings.min_score

    def entities(self, segments: list[str], *, scope: str = "") -> list[list[Entity]]:
        if not self.active:
            return [[] for _ in segments]
        results: dict[str, list[Entity]] = {}
        todo = []
        for segment in segments:
            cached = self._cache.get((scope, segment))
            if cached is not None:
                results[segment] = cached
            elif segment not in results:
                results[segment] = []
                todo.append(segment)
        if todo:
            nlp = self.nlp()
            with self._lock:  # spaCy pipelines are not documented as thread-safe
                self.analysed += len(todo)
                for text, doc in zip(todo, nlp.pipe(todo, batch_size=256), strict=True):
                    found = [Entity(PRESIDIO_TYPES.get(ent.label_, ent.label_), ent.text, PRESIDIO_SCORE)
                             for ent in doc.ents]
                    results[text] = [e for e in found if e.type in self._wanted and _plausible(e)]
                    self._remember((scope, text), results[text])
        return [results[segment] for segment in segments]

    def _remember(self, key: tuple[str, str], entities: list[Entity]) -> None:
        self._cache[key] = entities
        if len(self._cache) > self._cache_entries:
            self._cache.popitem(last=False)
