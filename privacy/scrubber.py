"""Scrub strings: detect (only what is not cached), then apply each finding's action with the session vault."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from privacy.classes.policy import Decision, Held
from privacy.detect import UNMETERED, Checkpoint, Finding, LayeredDetector, Profile, Target, UnitMatcher, replace_spans
from privacy.kept import KEEP_MIN_CHARS, KeptDetections, Slot
from privacy.lru import WeighedLRU
from privacy.settings import Action
from privacy.vault import Vault
from privacy.walk import Kind

_NUMBER_MIN = 1_000_000  # below 7 digits a number is no patterned identifier (listed units: all are scanned)


@dataclass(frozen=True)
class Applied:
    finding: Finding  # ``location`` relative to the slot (".phone", "[2].email", "")
    action: Action


@dataclass
class ScrubResult:
    text: str
    applied: list[Applied] = field(default_factory=list)
    blocked: str | None = None
    given: frozenset[str] | None = None  # the placeholders ``text`` holds more often than its source: set on first use
    # The audit's finding set of ``applied`` (``privacy.audit.sets.FindingSet``) by the slot's location: built once on
    # the audit's writer thread and referenced by every call while this result is cached (a system prompt's hundreds
    # of findings, every step). Keyed hashes only, never a raw value; the result is one session's (``DetectionCache``
    # keys by session).
    audit_sets: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    held: Held = field(default_factory=Held)  # what ``text`` carries by data class


# What one applied finding holds beside its text, estimated: the ``Applied`` and ``Finding``, the class policy's
# counts, and its audit row in a finding set (~1.2 KB, measured with tracemalloc on the agent step's 750 findings).
_BYTES_PER_FINDING = 1_200


def weigh_result(result: ScrubResult) -> int:
    """What a cached ``ScrubResult`` holds, estimated: its text twice (the text and the body built from it) and its
    findings with their audit rows."""
    return 2 * len(result.text) + _BYTES_PER_FINDING * len(result.applied)


class DetectionCache:
    """Per process: (session, units version, kind, content hash) → result, bounded by entries and by memory
    (``privacy.cache_mb``). A miss only costs a re-scan."""

    def __init__(self, entries: int, max_bytes: int) -> None:
        self._data: WeighedLRU[tuple[str, str, str, bytes], ScrubResult] = WeighedLRU(entries, max_bytes,
                                                                                      weigh_result)

    @staticmethod
    def key(session_id: str, units_version: str, kind: Kind, text: str) -> tuple[str, str, str, bytes]:
        return session_id, units_version, kind, hashlib.blake2b(text.encode("utf-8", "surrogatepass"),
                                                                digest_size=16).digest()

    @property
    def weight(self) -> int:
        """The estimate of what the cached results weigh."""
        return self._data.weight

    def get(self, key: tuple[str, str, str, bytes]) -> ScrubResult | None:
        return self._data.get(key)

    def put(self, key: tuple[str, str, str, bytes], result: ScrubResult) -> None:
        self._data.put(key, result)

    def forget(self, session_id: str) -> None:
        """An erased session: its results go."""
        for key in [key for key in self._data if key[0] == session_id]:
            self._data.pop(key)


def _path(base: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{base}[{key}]"
    text = str(key)
    return f"{base}.{text}" if text.replace("_", "").replace("-", "").isalnum() else f"{base}[{json.dumps(text)}]"


@dataclass
class _Leaf:
    path: str
    container: dict[str, Any] | list[Any]
    key: Any
    target: Target


@dataclass
class Prepared:
    """One slot's text broken into detection targets, and the way to rebuild the text."""

    text: str
    targets: list[Target]
    leaves: list[_Leaf] | None = None
    parsed: Any = None


def prepare(text: str, kind: Kind, *, all_numbers: bool = False) -> Prepared:
    """``all_numbers``: scan every JSON number, not only long ones (listed units may be short numbers)."""
    if kind == "json":
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):  # nested deeper than the parser goes: text
            parsed = None
        if isinstance(parsed, dict | list):
            leaves: list[_Leaf] = []
            _leaves(parsed, "", leaves, 0 if all_numbers else _NUMBER_MIN)
            return Prepared(text, [leaf.target for leaf in leaves], leaves, parsed)
    return Prepared(text, [Target(text, prose=True)])


def _leaves(value: Any, path: str, out: list[_Leaf], number_min: float = 0) -> None:
    items: Any = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        where = _path(path, key)
        if isinstance(item, str):
            out.append(_Leaf(where, value, key, Target(item, prose=True, label=str(key) if isinstance(value, dict) else None)))
        elif isinstance(item, int | float) and not isinstance(item, bool) and abs(item) >= number_min:
            out.append(_Leaf(where, value, key, Target(str(item), prose=False)))
        elif isinstance(item, dict | list):
            _leaves(item, where, out, number_min)


_SharedKey = tuple[str, str, str, bool, bytes]


class SharedDetections:
    """Per process: (scope, profile, kind, numbers scanned, content hash) → what every layer but the listed units
    found in a slot under that profile. Detection does not depend on the session (placeholder numbering does, and is applied from each session's
    vault), so a system prompt another session of the same scope (the gateway's owner: a tenant) already sent is
    not scanned again — but another tenant's is: a fast answer would tell it that someone sent that exact text.
    Thread-safe: detection runs in worker threads."""

    def __init__(self, entries: int) -> None:
        self._entries = entries
        self._data: OrderedDict[_SharedKey, list[list[Finding]]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(prepared: Prepared, kind: str, all_numbers: bool, scope: str, profile: Profile) -> _SharedKey:
        return scope, profile, kind, all_numbers, hashlib.blake2b(prepared.text.encode("utf-8", "surrogatepass"),
                                                                  digest_size=16).digest()

    def get(self, key: _SharedKey) -> list[list[Finding]] | None:
        with self._lock:
            found = self._data.get(key)
            if found is not None:
                self._data.move_to_end(key)
            return found

    def put(self, key: _SharedKey, found: list[list[Finding]]) -> None:
        with self._lock:
            self._data[key] = found
            if len(self._data) > self._entries:
                self._data.popitem(last=False)


def _kind(prepared: Prepared) -> str:
    return "json" if prepared.leaves is not None else "text"


class Scrubber:
    def __init__(self, detector: LayeredDetector, *, shared: SharedDetections | None = None,
                 kept: KeptDetections | None = None) -> None:
        """``kept``: detections kept in the session store per owner, across restarts and replicas (None: this
        process's ``shared`` only)."""
        self._detector = detector
        self._shared = shared or SharedDetections(50_000)
        self.kept = kept

    def warm(self) -> None:
        """Load the detectors' models and dictionaries now (blocking, seconds: call it off the event loop)."""
        self._detector.warm()

    def _slot(self, prepared: Prepared, all_numbers: bool, profile: Profile) -> Slot:
        return Slot([t.text for t in prepared.targets], prepared.text, _kind(prepared), all_numbers, profile)

    async def recall(self, prepared: list[Prepared], profiles: list[Profile], *, all_numbers: bool, scope: str,
                     session_id: str) -> None:
        """What the session store kept for long slots this process has not detected under their profile (another
        replica's, or this one's before a restart): ``detect`` then finds it here and does not scan them."""
        if self.kept is None:
            return
        for p, profile in zip(prepared, profiles, strict=True):
            key = SharedDetections.key(p, _kind(p), all_numbers, scope, profile)
            if len(p.text) < KEEP_MIN_CHARS or self._shared.get(key) is not None:
                continue
            found = await self.kept.recall(scope, self._slot(p, all_numbers, profile), session_id)
            if found is not None:
                self._shared.put(key, found)

    async def keep(self, prepared: list[Prepared], profiles: list[Profile], *, all_numbers: bool, scope: str,
                   session_id: str) -> None:
        """Keep in the session store what ``detect`` found in long slots the store did not hold yet."""
        if self.kept is None:
            return
        for p, profile in zip(prepared, profiles, strict=True):
            slot = self._slot(p, all_numbers, profile)
            if len(p.text) < KEEP_MIN_CHARS or self.kept.known(scope, slot):
                continue
            found = self._shared.get(SharedDetections.key(p, _kind(p), all_numbers, scope, profile))
            if found is not None:
                await self.kept.keep(scope, slot, found, session_id)

    async def forget(self, session_id: str) -> None:
        """The session is erased: the kept detections it alone used go (``KeptDetections.forget``)."""
        if self.kept is not None:
            await self.kept.forget(session_id)

    def detect(self, prepared: list[Prepared], units: UnitMatcher | None, *, scope: str,
               profile: Profile, meter: Checkpoint = UNMETERED) -> list[list[list[Finding]]]:
        """Runs the detector under ``profile`` on what no session of ``scope`` scanned yet under it, then adds the
        session's listed units (CPU-bound: call it off the event loop for large inputs). ``meter``: the request's
        scan budget (``ScanOverBudget`` past it)."""
        keys = [SharedDetections.key(p, _kind(p), units is not None, scope, profile) for p in prepared]
        shared = [self._shared.get(key) for key in keys]
        todo = [i for i, found in enumerate(shared) if found is None]
        if todo:
            targets = [t for i in todo for t in prepared[i].targets]
            flat = self._detector.detect_shared(targets, scope=scope, profile=profile, meter=meter)
            pos = 0
            for i in todo:
                fresh = flat[pos:pos + len(prepared[i].targets)]
                pos += len(prepared[i].targets)
                shared[i] = fresh
                self._shared.put(keys[i], fresh)
        out: list[list[list[Finding]]] = []
        for p, found in zip(prepared, shared, strict=True):
            assert found is not None
            out.append(self._detector.with_units(p.targets, found, units))
        return out

    def apply(self, prepared: Prepared, findings: list[list[Finding]], vault: Vault,
              decide: Callable[[Finding], Decision]) -> ScrubResult:
        """Each finding's action as ``decide`` gives it (``ClassPolicy.decide`` for the call's tier)."""
        result = ScrubResult(prepared.text)
        if prepared.leaves is None:
            result.text = self._replace(prepared.text, findings[0], vault, "", result, decide)
            return result
        changed = False
        for leaf, leaf_findings in zip(prepared.leaves, findings, strict=True):
            if not leaf_findings:
                continue
            new = self._replace(leaf.target.text, leaf_findings, vault, leaf.path, result, decide)
            if new != leaf.target.text:
                leaf.container[leaf.key] = new
                changed = True
        if changed:
            indent = 2 if "\n" in prepared.text.strip() else None
            result.text = json.dumps(prepared.parsed, ensure_ascii=False, indent=indent)
        return result

    def _replace(self, text: str, findings: list[Finding], vault: Vault, path: str, result: ScrubResult,
                 decide: Callable[[Finding], Decision]) -> str:
        replacements: list[str] = []
        for finding in findings:
            decision = decide(finding)
            action = decision.action
            result.held.add(decision)
            located = finding if finding.location == path else finding.at(path)  # a copy costs ~20 µs: hundreds
            result.applied.append(Applied(located, action))  # of findings in a system prompt's text
            if action == "pseudonymise":
                replacements.append(vault.placeholder(finding.type, finding.key, finding.value))
            elif action == "mask":
                replacements.append(f"[{finding.type}]")
            else:
                if action == "block" and result.blocked is None:
                    result.blocked = f"a {finding.type} value (privacy.actions: block)"
                replacements.append(text[finding.start:finding.end])
        return replace_spans(text, findings, replacements)
