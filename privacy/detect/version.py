"""The detectors' version: a digest of everything that decides what they find, derived rather than maintained.

Detections kept beyond one process (``privacy.kept``) are keyed by it, so a changed detector misses every entry an
older one wrote instead of answering with what it would no longer find. It covers the detection code (every file of
``privacy/detect/`` and the scrubber, which splits a slot into targets), the settings the detector is built from
(its layers, NER, the edge model), and the versions of the packages and the spaCy model the layers read.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

from privacy.settings import PrivacySettings

# What the layers read besides their own code: the NER engine and its model, phone metadata, the Chinese
# segmenter, the given-name list, the look-alike table.
_PACKAGES = ("spacy", "thinc", "phonenumbers", "jieba", "gender-guesser", "confusable-homoglyphs")


def _package(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "-"


def detector_version(settings: PrivacySettings) -> str:
    """A short digest (hex); reads ~40 source files (~1 ms): call it when a detector is built, not per request."""
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for path in sorted([*here.rglob("*.py"), here.parent / "scrubber.py"]):
        digest.update(path.relative_to(here.parent).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    edge = settings.edge_detector.model_dump_json() if settings.edge_detector.enabled else "off"
    for part in (settings.layers.model_dump_json(), settings.ner.model_dump_json(), edge,
                 *(f"{name}={_package(name)}" for name in (*_PACKAGES, settings.ner.model_name))):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:24]
