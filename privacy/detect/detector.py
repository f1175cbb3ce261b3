"""The layered detector: listed units, secrets, PII patterns, NER. Any failure is a ``DetectionError``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Protocol

from accounting.errors import EcgwError
from privacy.detect.budget import UNMETERED, Checkpoint, ScanOverBudget
from privacy.detect.findings import Finding, resolve_overlaps
from privacy.detect.identifiers import IdentifierDetector
from privacy.detect.keyhints import KeyHintDetector
from privacy.detect.labels import LabelledValueDetector
from privacy.detect.manifests import SecretManifestDetector
from privacy.detect.ner import Entity, EntityRecognizer
from privacy.detect.normalise import fold
from privacy.detect.phones import PhoneDetector
from privacy.detect.profile import Profile, ProfileRules, rules_of
from privacy.detect.prose import prose_segments, without_spans
from privacy.detect.realtext import RealTextDetector
from privacy.detect.recurrence import everywhere, recurrences
from privacy.detect.units import UnitMatcher, _escaped_forms
from privacy.settings import LayerSettings


class DetectionError(EcgwError):
    """A detector layer failed; the request must not leave unprotected."""


class TextDetector(Protocol):
    def find(self, text: str) -> list[Finding]: ...


class LabelledTextDetector(Protocol):
    """A detector that also reads the key the text sits under (``privacy.detect.people``); ``scope``: whose text it
    is (a result it caches is reused only within one scope, as the NER cache's)."""

    def find(self, text: str, label: str | None, scope: str) -> list[Finding]: ...

    def warm(self, *, chinese: bool) -> None:
        """Load its dictionaries now (the gateway's start), not on the first text that needs them; ``chinese``:
        the Chinese ones too (else on the first Chinese text)."""
        ...


@dataclass(frozen=True)
class Target:
    """One string to scan. ``prose``: may hold natural language worth a NER pass (not a key, not a number)."""

    text: str
    prose: bool = True
    label: str | None = None  # the JSON key the value sits under, if any


def _occurrences(values: Iterable[str], text: str) -> Iterator[tuple[int, int, str]]:
    """Where each value stands in ``text`` as a word, in any of its escaped forms (``units._literal_pattern`` of
    each), all values found in one pass (``recurrence``)."""
    return recurrences(text, {form: value for value in values for form in _escaped_forms(value)})


# Read once at warm-up (English, a CSV of people, accented Latin with full-width digits, and Chinese when the Chinese
# dictionaries load at start): public sample texts, kept in a scope of their own in the NER cache.
_WARM_TEXTS = ("Hello from Alice Martin in Berlin; reviewer Sofia Brandt, dob 1987-03-14, net pay $3,200.00.",
               "name,dob,net pay\nGrace Nakamura,1987-03-14,$3,200.00\naisha whitfield,1990-05-03,$2,950.10",
               "Grüße von Zoë Müller aus Zürich, Tel. ＋４９ ３０ １２３４５６７.")
_WARM_CHINESE = "客户：王建国，出生日期：1990年5月3日，家住望京西园四区27号楼2单元1095，电话１３８。"
_WARM_SCOPE = "\x00warm-up"
_NER_BATCH = 16  # segments read by NER between two looks at the scan budget (~64 KB of prose)

def _emitted(findings: list[Finding], rules: ProfileRules) -> list[Finding]:
    """The findings a profile emits: of the layers it keeps, and of NER only the types it names."""
    return [f for f in findings if rules.keeps_layer(f.layer) and (f.layer != "ner" or f.type in rules.ner_types)]


def _covered(text: str, findings: list[Finding]) -> bool:
    """A value an earlier layer already found whole (a name under a ``name`` key, a city under ``city``):
    NER could only find it again, at ~3 ms a segment."""
    start, end = len(text) - len(text.lstrip()), len(text.rstrip())
    return any(f.start <= start and f.end >= end for f in findings)


class LayeredDetector:
    def __init__(self, layers: LayerSettings, *, secrets: TextDetector, patterns: TextDetector,
                 ner: EntityRecognizer | None, max_segment_chars: int = 4000,
                 edge: EntityRecognizer | None = None, edge_segment_chars: int = 600,
                 people: LabelledTextDetector | None = None, realtext: RealTextDetector | None = None,
                 warm_chinese: bool = False) -> None:
        self._layers = layers
        self._warm_chinese = warm_chinese  # warm() loads jieba (else the first Chinese text does)
        self._secrets = secrets
        self._patterns = patterns
        self._ner = ner if layers.ner else None
        self._max_segment_chars = max_segment_chars
        self._edge = edge  # the edge model as a detector (privacy.edge_detector), after every other layer
        self._edge_segment_chars = edge_segment_chars
        self._people = people if layers.people else None
        self._realtext = realtext if layers.people else None  # issue 38's layers for real user text
        self._keys = KeyHintDetector()
        self._labels = LabelledValueDetector()
        self._identifiers = IdentifierDetector()
        self._phones = PhoneDetector()
        self._manifests = SecretManifestDetector()
        self.scanned = 0  # texts the layers read (a counter: kept and shared detections read none)

    def warm(self) -> None:
        """Load every model and dictionary the layers build lazily (spaCy's NER, jieba, the given-name list), so
        that the first request after the gateway's start does not pay them (``PrivacyProtector.start``); then read
        a few sample texts with every layer but the edge model, so that it pays no table built on first use either
        (the look-alike table of ``fold``, spaCy's first pass, jieba's first cut, patterns compiled on first use, the
        phone regions' metadata). jieba only when built with ``warm_chinese`` (``privacy.warm_chinese``): else the
        first Chinese text loads it."""
        if self._ner is not None:
            self._ner.warm()
        if self._people is not None:
            self._people.warm(chinese=self._warm_chinese)
        if self._edge is not None:
            self._edge.warm()
        if self._realtext is not None:
            self._realtext.warm()
        self._phones.warm()
        texts = [*_WARM_TEXTS, _WARM_CHINESE] if self._warm_chinese else list(_WARM_TEXTS)
        for text in texts:
            self._shaped(Target(text, label="note"), _WARM_SCOPE, rules_of("strict"))
        if self._ner is not None:
            self._ner.entities(texts, scope=_WARM_SCOPE)

    def detect(self, targets: list[Target], units: UnitMatcher | None, *, scope: str,
               profile: Profile, meter: Checkpoint = UNMETERED) -> list[list[Finding]]:
        """Findings per target, non-overlapping and sorted. Raises ``DetectionError``, or ``ScanOverBudget``."""
        return self.with_units(targets, self.detect_shared(targets, scope=scope, profile=profile, meter=meter), units)

    def detect_shared(self, targets: list[Target], *, scope: str, profile: Profile,
                      meter: Checkpoint = UNMETERED) -> list[list[Finding]]:
        """What every layer but the listed units finds under ``profile`` (``privacy.detect.profile``): the same for
        every session, so it may be cached by content and profile and shared across the sessions of one ``scope``
        (an owner: the layers' caches are keyed by it, so no tenant learns from a fast answer that another sent a
        text). ``meter``: the request's scan budget, checked between texts and batches of NER segments. Raises
        ``DetectionError``, or ``ScanOverBudget``."""
        try:
            return self._detect(targets, scope, rules_of(profile), meter)
        except (DetectionError, ScanOverBudget):
            raise
        except Exception as exc:
            raise DetectionError(f"{type(exc).__name__}: {exc}") from exc

    def with_units(self, targets: list[Target], shared: list[list[Finding]],
                   units: UnitMatcher | None) -> list[list[Finding]]:
        """``shared`` findings merged with the session's listed units (which win overlaps)."""
        if units is None or not self._layers.units:
            return shared
        try:
            return [resolve_overlaps(found + units.find(target.text)) if len(units) else found
                    for target, found in zip(targets, shared, strict=True)]
        except Exception as exc:
            raise DetectionError(f"{type(exc).__name__}: {exc}") from exc

    def _detect(self, targets: list[Target], scope: str, rules: ProfileRules,
                meter: Checkpoint) -> list[list[Finding]]:
        found: list[list[Finding]] = []
        self.scanned += len(targets)
        for target in targets:
            meter.check()
            found.append(self._shaped(target, scope, rules))
        if self._ner is not None and rules.ner_types:
            self._add_entities(targets, found, scope, meter)
        if self._edge is not None and rules.keeps_layer("edge"):
            self._add_edge_spans(targets, found, scope)
        return [resolve_overlaps(everywhere(target.text, _emitted(f, rules)))
                for target, f in zip(targets, found, strict=True)]

    def _shaped(self, target: Target, scope: str, rules: ProfileRules) -> list[Finding]:
        """What every layer before NER finds in one text."""
        text = fold(target.text)  # full-width digits and letters read as ASCII, offsets kept
        shaped: list[Finding] = []
        if self._layers.secrets:
            shaped.extend(self._secrets.find(text))
        if self._layers.patterns:
            shaped.extend(self._patterns.find(text))
            shaped.extend(self._identifiers.find(text))
            shaped.extend(self._phones.find(text))
            shaped.extend(self._keys.find(text, target.label))
            shaped.extend(self._labels.find(text, target.label))
            shaped.extend(self._manifests.find(text))
        if self._people is not None:
            shaped.extend(self._people.find(text, target.label, scope))
        if self._realtext is not None:
            shaped.extend(self._realtext.find(text, rules))
        if text != target.text:
            shaped = [replace(f, value=target.text[f.start:f.end]) for f in shaped]
        return shaped

    def _add_entities(self, targets: list[Target], found: list[list[Finding]], scope: str,
                      meter: Checkpoint) -> None:
        assert self._ner is not None
        owners: list[int] = []
        segments: list[str] = []
        for i, target in enumerate(targets):
            if not target.prose or _covered(target.text, found[i]):
                continue
            text = without_spans(target.text, [(f.start, f.end) for f in found[i]]) if found[i] else target.text
            for segment in prose_segments(text, self._max_segment_chars):
                owners.append(i)
                segments.append(segment)
        if not segments:
            return
        per_segment: list[list[Entity]] = []
        for batch in range(0, len(segments), _NER_BATCH):
            meter.check()
            per_segment += self._ner.entities(segments[batch:batch + _NER_BATCH], scope=scope)
        values: dict[int, dict[str, tuple[str, float]]] = {}
        for owner, entities in zip(owners, per_segment, strict=True):
            for entity in entities:
                values.setdefault(owner, {}).setdefault(entity.value, (entity.type, entity.score))
        for owner, entity_values in values.items():
            text = targets[owner].text
            for start, end, value in _occurrences(entity_values, text):
                type_, score = entity_values[value]
                found[owner].append(Finding(type=type_, start=start, end=end, value=value, layer="ner",
                                            key=f"{type_}:{value}", score=score))

    def _add_edge_spans(self, targets: list[Target], found: list[list[Finding]], scope: str) -> None:
        """The edge model's verbatim spans in the prose no other layer covered, found wherever they recur."""
        assert self._edge is not None
        owners: list[int] = []
        segments: list[str] = []
        for i, target in enumerate(targets):
            if target.prose and not _covered(target.text, found[i]):
                for segment in prose_segments(target.text, self._edge_segment_chars):
                    owners.append(i)
                    segments.append(segment)
        if not segments:
            return
        for owner, entities in zip(owners, self._edge.entities(segments, scope=scope), strict=True):
            types = {entity.value: entity.type for entity in reversed(entities)}  # the first type said of a value
            for start, end, value in _occurrences(types, targets[owner].text):
                found[owner].append(Finding(type=types[value], start=start, end=end, value=value, layer="edge",
                                            key=f"{types[value]}:{value}"))
