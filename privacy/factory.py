"""Build the protector the gateway injects into every cloud channel."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

from accounting.database import make_engine
from privacy.audit import AuditedUnits, AuditStore, AuditWriter, Hasher, SigningKeys
from privacy.detect import (
    EdgeEndpoint,
    EdgeSpanLister,
    HttpEdgeChat,
    IdentifierDetector,
    LabelledValueDetector,
    LayeredDetector,
    PatternDetector,
    PhoneDetector,
    SecretDetector,
    SpacyRecognizer,
    TextDetector,
    shared_people,
)
from privacy.detect.realtext import shared_realtext
from privacy.detect.version import detector_version
from privacy.hook import PassThroughProtector, Protector
from privacy.inbound import InboundScanner
from privacy.kept import KeptDetections, detections_key
from privacy.lastcheck import EgressCheck, LastCheck
from privacy.metrics import PrivacyMetrics
from privacy.passthrough import RecordingPassThroughProtector
from privacy.protector import PrivacyProtector
from privacy.registry import UnitRegistry
from privacy.scrubber import Scrubber, SharedDetections
from privacy.seal import Sealer
from privacy.session_store import SessionStore
from privacy.settings import NerSettings, PrivacySettings

_RECOGNIZERS: dict[str, SpacyRecognizer] = {}


def shared_recognizer(settings: NerSettings) -> SpacyRecognizer:
    """One NER model per process and NER configuration (a spaCy model is ~1 s to load): gateways built in
    the same process (tests, several apps) share it. Built on first use, never at import."""
    key = settings.model_dump_json()
    recognizer = _RECOGNIZERS.get(key)
    if recognizer is None:
        recognizer = _RECOGNIZERS.setdefault(key, SpacyRecognizer(settings))
    return recognizer


def build_edge_lister(settings: PrivacySettings, edge: EdgeEndpoint | None) -> EdgeSpanLister | None:
    """The edge-model layer when ``privacy.edge_detector.enabled``; its own ``base_url``/``model`` override the
    gateway's edge endpoint (``edge``). Enabled with no endpoint at all is a configuration error."""
    config = settings.edge_detector
    if not config.enabled:
        return None
    base_url = config.base_url or (edge.base_url if edge else None)
    model = config.model or (edge.model if edge else None)
    if not base_url or not model:
        raise ValueError("privacy.edge_detector is enabled but no edge model is known: set edge.base_url and "
                         "edge.model, or privacy.edge_detector.base_url and .model")
    endpoint = EdgeEndpoint(base_url, model, edge.api_key if edge and base_url == edge.base_url else None)
    return EdgeSpanLister(HttpEdgeChat(endpoint, config), config)


def build_detector(settings: PrivacySettings, *, edge: EdgeEndpoint | None = None,
                   lister: EdgeSpanLister | None = None) -> LayeredDetector:
    """The layered detector; the NER engine inside is built on first use, not here. ``edge``: where the local
    edge model answers, for ``privacy.edge_detector`` (the gateway injects its ``edge`` settings); ``lister``: an
    edge layer built already (its stats read by a benchmark)."""
    ner = shared_recognizer(settings.ner) if settings.layers.ner else None
    return LayeredDetector(settings.layers, secrets=SecretDetector(), patterns=PatternDetector(), ner=ner,
                           max_segment_chars=settings.ner.max_segment_chars,
                           edge=lister or build_edge_lister(settings, edge),
                           edge_segment_chars=settings.edge_detector.max_segment_chars,
                           people=shared_people() if settings.layers.people else None,
                           realtext=shared_realtext() if settings.layers.people else None,
                           warm_chinese=settings.warm_chinese)


def _audit(settings: PrivacySettings, database_url: str, hash_key: bytes | None,
           sign_keys: SigningKeys | None = None) -> tuple[AuditWriter, Hasher]:
    """The audit's writer and its HMAC key: ``privacy.hash_key``, else the gateway's derived key, else (tests,
    one-off tools) a random key for this process. ``sign_keys``: the checkpoints' Ed25519 keys by generation (None:
    the chain is kept, no checkpoint is signed)."""
    key = settings.hash_key.encode() if settings.hash_key else hash_key or secrets.token_bytes(32)
    audit = AuditWriter(AuditStore(make_engine(database_url), keys=sign_keys),
                        spill_path=Path(settings.audit_spill_path) if settings.audit_spill_path else None,
                        retry_max_s=settings.audit_retry_max_s, shutdown_timeout_s=settings.audit_shutdown_timeout_s)
    return audit, Hasher(key)


def _kept(settings: PrivacySettings, sessions: SessionStore, key: bytes | None) -> KeptDetections | None:
    """Detections kept in the session store under the detectors' version; none without a key that outlives the
    process (``privacy.hash_key`` or the gateway's derived key): a random one would find nothing after a restart."""
    key = settings.hash_key.encode() if settings.hash_key else key
    if key is None or settings.kept_detections == 0:
        return None
    return KeptDetections(sessions, detections_key(key), version=detector_version(settings),
                          entries=settings.kept_detections,
                          max_age_s=settings.retention_days * 86400 if settings.retention_days else None)


def _rules(settings: PrivacySettings, detector: LayeredDetector, metrics: PrivacyMetrics,
           kept: KeptDetections | None) -> tuple[Scrubber, LastCheck | None]:
    """What the privacy settings decide: the scrubber (layers, and what it keeps in the session store) and the
    last check (the actions are the class policy's, per call: ``privacy.classes.policy``)."""
    scrubber = Scrubber(detector, shared=SharedDetections(settings.cache_entries), kept=kept)
    return scrubber, LastCheck(build_egress_check(settings), metrics) if settings.last_check else None


def build_privacy_protector(settings: PrivacySettings, *, database_url: str | None, sessions: SessionStore,
                            detector: LayeredDetector | None = None, edge: EdgeEndpoint | None = None,
                            hash_key: bytes | None = None, seal_key: bytes | None = None,
                            scope_of: Callable[[str], str] | None = None,
                            sign_keys: SigningKeys | None = None) -> PrivacyProtector:
    """``database_url`` None: no audit (``ecgw scrub``). ``hash_key``: the audit's HMAC key (the gateway derives
    it from its secrets key); ``privacy.hash_key`` overrides it. Never stored in the database. ``seal_key``: encrypts
    the audit's copy of each outgoing body (None: kept as sent)."""
    audit, hasher = (_audit(settings, database_url, hash_key, sign_keys) if settings.audit and database_url
                     else (None, None))
    metrics = PrivacyMetrics()
    scrubber, last_check = _rules(settings, detector or build_detector(settings, edge=edge), metrics,
                                  _kept(settings, sessions, hash_key))
    inbound = InboundScanner(*last_check_detectors()) if settings.response_guard.action != "off" else None
    return PrivacyProtector(settings, sessions=sessions, scrubber=scrubber,
                            units=UnitRegistry(sessions, settings.units_files), audit=audit, hasher=hasher,
                            last_check=last_check, metrics=metrics, sealer=Sealer(seal_key) if seal_key else None,
                            scope_of=scope_of, inbound=inbound)


def last_check_detectors() -> tuple[list[TextDetector], list[LabelledValueDetector]]:
    """The last check's detectors (secrets, patterns, identifiers, phones; values after a label), whatever
    ``privacy.layers`` switches off: what leaves is checked with them, and what answers bring in is read with them."""
    return [SecretDetector(), PatternDetector(), IdentifierDetector(), PhoneDetector()], [LabelledValueDetector()]


def reconfigured(protector: Protector, settings: PrivacySettings, *, sessions: SessionStore,
                 edge: EdgeEndpoint | None = None) -> Protector:
    """``protector`` under the rules of ``settings`` (a reload): new layers, actions, units files, last check and
    edge layer over the same session store, audit and metrics. A pass-through (``privacy.enabled: false``) has no
    rules to change. Raises ``ValueError`` on an edge layer with no endpoint, and what reading a units file
    raises."""
    if not isinstance(protector, PrivacyProtector):
        return protector
    units = UnitRegistry(sessions, settings.units_files)
    units.file_units()  # read now: a bad file refuses the reload rather than failing a step later
    kept = protector.kept.under(version=detector_version(settings), entries=settings.kept_detections,
                                max_age_s=settings.retention_days * 86400 if settings.retention_days else None) \
        if protector.kept is not None else None
    scrubber, last_check = _rules(settings, build_detector(settings, edge=edge), protector.metrics or PrivacyMetrics(),
                                  kept)
    return protector.reconfigured(settings, scrubber=scrubber, units=units, last_check=last_check)


def build_egress_check(settings: PrivacySettings) -> EgressCheck:
    """The last check's detectors: secrets and patterns, whatever ``privacy.layers`` switches off (units are the
    session's, passed per call)."""
    return EgressCheck(*last_check_detectors(), cache_entries=settings.cache_entries)


def build_protector(settings: PrivacySettings, *, database_url: str, sessions: SessionStore,
                    edge: EdgeEndpoint | None = None, hash_key: bytes | None = None, seal_key: bytes | None = None,
                    scope_of: Callable[[str], str] | None = None, sign_keys: SigningKeys | None = None
                    ) -> Protector:
    """``sessions`` is the gateway's session store (async ``get``/``set`` of JSON values per session); ``edge``
    the local edge model, for ``privacy.edge_detector``; ``scope_of`` the owner of a session id (detections are
    shared within one owner)."""
    if not settings.enabled:
        if settings.audit and database_url:  # still measure what leaves (privacy.passthrough)
            audit, hasher = _audit(settings, database_url, hash_key, sign_keys)
            return RecordingPassThroughProtector(AuditedUnits(
                UnitRegistry(sessions, settings.units_files), audit, hasher,
                checkpoint_interval_s=settings.audit_checkpoint_interval_s, retention_days=settings.retention_days))
        return PassThroughProtector()
    return build_privacy_protector(settings, database_url=database_url, sessions=sessions, edge=edge,
                                   hash_key=hash_key, seal_key=seal_key, scope_of=scope_of, sign_keys=sign_keys)
