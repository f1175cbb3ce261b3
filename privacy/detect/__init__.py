"""The detection layers: what in a text is sensitive, as typed spans (``Finding``), never logged with its value.

The listed units (``units``), credentials (``secrets``), fixed formats (``patterns``), identifiers checked by their
check digits (``identifiers``, ``checksums``), phone numbers (``phones``), values after a label (``labels``, read
through ``lexicon`` and ``keyhints``; Kubernetes Secrets and Helm ``env`` lists through ``manifests``; ``references``
keeps the business references agents need), prose (``prose``), what each privacy profile emits (``profile``),
names by NER (``ner``), people no label states (``people``: Chinese names through ``segmenter`` and ``zh_names``,
English ones through ``en_names``, ``given_names`` and ``org_words``, dates of birth through ``birthdates``, pay and
home addresses) and the optional edge model (``edge_detector``), run in order by the layered detector (``detector``);
what one layer found is found wherever it recurs in one pass over the text (``recurrence``); what a request's
detection may cost is metered by ``budget``. ``normalise`` holds the surface forms a
value may take (full width, look-alikes, invisible characters, escapes,
encodings). Code outside this folder imports the names below from here.
"""

from privacy.detect.budget import UNMETERED, Checkpoint, ScanMeter, ScanOverBudget, check_bytes
from privacy.detect.checksums import cn_resident_id_ok, iban_ok, luhn_ok
from privacy.detect.detector import DetectionError, LayeredDetector, Target, TextDetector
from privacy.detect.edge_detector import EdgeEndpoint, EdgeSpanLister, HttpEdgeChat, spans_in
from privacy.detect.findings import Finding, replace_spans, resolve_overlaps
from privacy.detect.identifiers import IdentifierDetector
from privacy.detect.labels import LabelledValueDetector
from privacy.detect.lexicon import Lexicon
from privacy.detect.ner import Entity, EntityRecognizer, SpacyRecognizer
from privacy.detect.normalise import canonical, encoded_segments, fold, variants
from privacy.detect.patterns import PatternDetector
from privacy.detect.people import PeopleDetector, shared_people
from privacy.detect.phones import PhoneDetector
from privacy.detect.profile import DEFAULT_PROFILE, PROFILES, Profile, ProfileRules, rules_of
from privacy.detect.prose import clauses, prose_segments
from privacy.detect.secrets import SecretDetector, is_credential_type
from privacy.detect.units import SPREAD_MIN, Unit, UnitMatcher, UnitsDocument, squeezed, units_of

__all__ = [
    "UNMETERED", "Checkpoint", "ScanMeter", "ScanOverBudget", "check_bytes",
    "DEFAULT_PROFILE", "PROFILES", "SPREAD_MIN", "DetectionError", "EdgeEndpoint", "EdgeSpanLister", "Entity", "EntityRecognizer", "Finding",
    "HttpEdgeChat", "IdentifierDetector", "LabelledValueDetector", "LayeredDetector", "Lexicon", "PatternDetector",
    "PeopleDetector", "PhoneDetector", "Profile", "ProfileRules", "SecretDetector", "SpacyRecognizer", "Target", "TextDetector", "Unit",
    "UnitMatcher", "UnitsDocument", "canonical", "clauses", "cn_resident_id_ok", "encoded_segments", "fold", "iban_ok", "is_credential_type",
    "luhn_ok", "prose_segments", "shared_people", "replace_spans", "resolve_overlaps", "rules_of", "spans_in", "squeezed",
    "units_of", "variants",
]
