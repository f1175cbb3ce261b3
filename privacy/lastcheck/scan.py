"""The body scanned part by part: what the detectors find in each top-level part, the session's vault values
still standing in it, the seams between parts, and values spread over its strings — each part remembered.

A step costs only what is new: detector results are cached per string and per top-level part of the body (each
message, each other top-level key) by content, units version and label; listed units are the session's, so with
session units the cache is the session's own. The search for vault values is remembered per session and part (a
vault only grows: a part is searched for each value once). Seams between adjacent parts and messages are glued
and checked at every step (each is cached by its own content). The spread search keeps its state after each part,
keyed by the chain of the parts' hashes, so a growing conversation feeds it only its new strings.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from privacy.detect import UNMETERED, Checkpoint, Finding, TextDetector, UnitMatcher
from privacy.detect.recurrence import present, present_in
from privacy.lastcheck.forms import LabelledDetector, TextScan
from privacy.lastcheck.leaves import Leaves, body_parts, body_seams, content_hash
from privacy.lastcheck.spread import START, Spread, State, split_in_reasoning, spread_findings, spread_texts
from privacy.vault import Vault

_MIN_VAULT_VALUE = 4
_HELD_MAX = 4096  # values remembered per part
_REMEMBER_FROM = 2048  # characters of a part from which its searches for vault values are remembered


@dataclass(frozen=True)
class EgressHit:
    path: str  # where in the body; "a|b" for a value glued across two places
    finding: Finding
    placeable: bool  # found literally, so it can be replaced where it stands
    how: str  # "literal" | "decoded" | "split" | "vault"


@dataclass
class _Part:
    """What the detectors found in one top-level part of a body, with paths relative to the part."""

    hits: list[tuple[str, Finding, bool]]  # (path suffix, finding, placeable)
    leaves: list[tuple[str, str, str]]  # (path suffix, text, canonical text): where vault values are searched
    joined: str = ""  # every leaf's text and canonical text: one search per vault value, then the leaves
    held: dict[str, bool] = field(default_factory=dict)  # value → whether it is in ``joined``

    def text(self) -> str:
        """Every leaf's text and canonical text (keys, strings, numbers as text), joined: a value in none of them
        stands nowhere in the part."""
        if not self.joined:
            self.joined = "\0".join(f"{text}\0{normal}" for _, text, normal in self.leaves)
        return self.joined

    def holding(self, values: Sequence[str]) -> list[str]:
        """Those of ``values`` somewhere in the part, in order. A long part (a system prompt) remembers each answer (a
        property of the content alone): the next session whose vault holds the same values looks each up instead
        of searching 20 KB again. A short one (a step's new tool result, met by the whole vault) is searched: cheaper
        than remembering."""
        joined = self.text()
        if len(joined) < _REMEMBER_FROM:
            inside = present(values, joined)
            return [value for value in values if value in inside]
        unknown = [value for value in values if value not in self.held]
        inside = present(unknown, joined)
        for value in unknown:
            if len(self.held) < _HELD_MAX:
                self.held[value] = value in inside
        return [value for value in values if self.held.get(value, value in inside)]


@dataclass
class EgressScan:
    """What the last check found in a body, and each message's part as it read it, by the message's index: where a
    value may stand (``place`` leaves the other messages as they are). By index, not by path: a client may write a
    top-level key ``messages[0]`` too."""

    hits: list[EgressHit]
    messages: list[_Part] = field(default_factory=list)

    def text(self, index: int) -> str | None:
        return self.messages[index].text() if 0 <= index < len(self.messages) else None


class EgressCheck:
    """Finds what is left in a body. ``detectors``: the secrets and pattern layers; ``labelled``: the layer that
    also reads the key a value sits under."""

    def __init__(self, detectors: Sequence[TextDetector], labelled: Sequence[LabelledDetector] = (), *,
                 cache_entries: int = 50_000) -> None:
        self._texts = TextScan(detectors, labelled, cache_entries=cache_entries)
        self._parts: OrderedDict[tuple[bytes, str], _Part] = OrderedDict()
        self._vault_seen: OrderedDict[tuple[str, str, bytes], tuple[int, tuple[tuple[str, str, bool], ...]]] = \
            OrderedDict()
        self._vaults: OrderedDict[str, tuple[str, int, dict[str, str]]] = OrderedDict()
        self._spreads: weakref.WeakKeyDictionary[UnitMatcher, Spread | None] = weakref.WeakKeyDictionary()
        self._spread_states: OrderedDict[tuple[str, bytes], tuple[State, frozenset[int]]] = OrderedDict()
        self._reasoning: OrderedDict[tuple[str, bytes], frozenset[int]] = OrderedDict()
        self._entries = cache_entries

    def _part(self, digest: bytes | None, leaves: Leaves, prefix: str,
              units: UnitMatcher | None, scope: str, meter: Checkpoint) -> _Part:
        key = (digest, scope) if digest is not None else None
        part = self._parts.get(key) if key is not None else None
        if part is not None:
            self._parts.move_to_end(key)  # type: ignore[arg-type]
            return part
        part = _Part([], [])
        for path, text, label in leaves():
            meter.check()
            scanned = self._texts.scan(text, label, units, scope)
            suffix = path[len(prefix):]
            part.hits += [(suffix, finding, literal) for finding, literal in scanned.findings]
            part.leaves.append((suffix, text, scanned.canonical))
        if key is not None:
            self._parts[key] = part
            if len(self._parts) > self._entries:
                self._parts.popitem(last=False)
        return part

    def read(self, body: dict[str, Any], units: UnitMatcher | None, vault: Vault, *, units_version: str = "-",
             session_id: str = "", owner: str = "", meter: Checkpoint = UNMETERED) -> EgressScan:
        """What is left in ``body``, with each message's part as it read it. ``owner``: whose session this is (the
        gateway's tenant): cached results are shared within one owner. ``meter``: the request's scan budget, checked
        between the strings it reads (``ScanOverBudget`` past it)."""
        hits: list[EgressHit] = []
        messages: list[_Part] = []
        raw_to_key = self._searchable(session_id, vault)
        ordered = list(raw_to_key)
        # Results that depend on the session's own units are the session's: never shared with another session.
        if units is None:
            scope = "-"
        elif units_version == "-":  # the configured files' units only: the same for every session
            scope = "-\0files"
        else:  # results that depend on the session's own units are the session's: never shared with another
            scope = f"{units_version}\0{session_id}"
        scope = f"{owner}\0{scope}"  # and never across owners: a fast answer would say another sent this text
        spread = self._spread_of(units)
        chain: bytes | None = b""
        state, spread_hits = START, frozenset[int]()
        reasoned = frozenset[int]()
        for prefix, hashed, leaves in body_parts(body):
            digest = content_hash(hashed)
            part = self._part(digest, leaves, prefix, units, scope, meter)
            if hashed[0] == "message":  # body_parts' tag of each message of the messages list, in order
                messages.append(part)
                if spread is not None:
                    reasoned |= self._reasoning_split(spread, scope, digest, hashed[1])
            if spread is not None:
                chain, state, spread_hits = self._spread_part(spread, scope, chain, digest, part, state,
                                                              spread_hits)
            for suffix, finding, literal in part.hits:
                hits.append(EgressHit(prefix + suffix, finding, literal, "literal" if literal else "decoded"))
            for suffix, value, literal in self._vault_values_in(session_id, vault.epoch, digest, part, ordered):
                vault_key = raw_to_key.get(value)
                if vault_key is not None:
                    finding = Finding(type=_type_of(vault, vault_key), start=0, end=0, value=value, layer="vault",
                                      key=vault_key)
                    hits.append(EgressHit(prefix + suffix, finding, literal, "vault"))
        for path, glued, boundary, same_speaker in body_seams(body):
            for finding in self._texts.split(glued, boundary, units, scope):
                if same_speaker or finding.layer == "units":
                    hits.append(EgressHit(path, finding, False, "split"))
        if spread is not None:
            hits += [EgressHit("(strings in order)", f, False, "split")
                     for f in spread_findings(spread, set(spread_hits))]
            hits += [EgressHit("(reasoning and content)", f, False, "split")
                     for f in spread_findings(spread, set(reasoned))]
        return EgressScan(hits, messages)

    def _reasoning_split(self, spread: Spread, scope: str, digest: bytes | None, message: Any) -> frozenset[int]:
        """``split_in_reasoning`` of one message, remembered by its content hash within the scope."""
        key = (scope, digest) if digest is not None else None
        known = self._reasoning.get(key) if key is not None else None
        if known is not None:
            return known
        found = split_in_reasoning(message, spread)
        if key is not None:
            self._reasoning[key] = found
            if len(self._reasoning) > self._entries:
                self._reasoning.popitem(last=False)
        return found

    def _spread_of(self, units: UnitMatcher | None) -> Spread | None:
        if units is None:
            return None
        if units not in self._spreads:
            self._spreads[units] = Spread.of(units)
        return self._spreads[units]

    def _spread_part(self, spread: Spread, scope: str, chain: bytes | None, digest: bytes | None, part: _Part,
                     state: State, found: frozenset[int]) -> tuple[bytes | None, State, frozenset[int]]:
        """The spread search's state after one more part: remembered by the chain of part hashes so far."""
        chain = (hashlib.blake2b(chain + digest, digest_size=16).digest()
                 if chain is not None and digest is not None else None)
        key = (scope, chain) if chain is not None else None
        known = self._spread_states.get(key) if key is not None else None
        if known is not None:
            self._spread_states.move_to_end(key)  # type: ignore[arg-type]
            return chain, known[0], known[1]
        state, done = spread.find(spread_texts((suffix, normal) for suffix, _, normal in part.leaves), state)
        found = found | done
        if key is not None:
            self._spread_states[key] = (state, found)
            if len(self._spread_states) > self._entries:
                self._spread_states.popitem(last=False)
        return chain, state, found

    def _searchable(self, session_id: str, vault: Vault) -> dict[str, str]:
        """raw value → vault key, for the vault's values worth searching. A vault only grows during its life, so the
        list is extended, not rebuilt; another life of the session's vault (``Vault.epoch``: erased or expired, then
        begun again) starts a new list."""
        epoch, size, known = self._vaults.get(session_id, ("", -1, {}))
        if epoch == vault.epoch and size == len(vault.by_key):
            return known
        if epoch != vault.epoch or size > len(vault.by_key):  # another life of the vault: from its first value
            size, known = 0, {}
        known = dict(known)
        for key, placeholder in list(vault.by_key.items())[size:]:
            value = vault.values.get(placeholder)
            if value and _worth_searching(value):
                known.setdefault(value, key)
        self._vaults[session_id] = (vault.epoch, len(vault.by_key), known)
        if len(self._vaults) > 4096:
            self._vaults.popitem(last=False)
        return known

    def forget(self, session_id: str) -> None:
        """An erased session: what this check remembered of its vault goes, its values too (the answers long parts
        kept about them)."""
        _, _, known = self._vaults.pop(session_id, ("", 0, {}))
        for key in [key for key in self._vault_seen if key[0] == session_id]:
            del self._vault_seen[key]
        if known:
            for part in self._parts.values():
                for value in part.held.keys() & known.keys():
                    del part.held[value]

    def _vault_values_in(self, session_id: str, epoch: str, digest: bytes | None, part: _Part,
                         ordered: list[str]) -> tuple[tuple[str, str, bool], ...]:
        """(path suffix, value, stands literally) for the session's vault values in a part; a vault only grows during
        its life, so each part is searched once for each value (not every value in every text at every step)."""
        key = (session_id, epoch, digest) if digest is not None else None
        checked, found = self._vault_seen.get(key, (0, ())) if key is not None else (0, ())
        if checked < len(ordered):
            fresh = part.holding(ordered[checked:])
            if fresh:  # which leaf holds each, as written or only in its canonical form: all leaves in one pass
                texts = [t for _, text, normal in part.leaves for t in (text, normal)]
                inside = present_in(fresh, texts)
                rank = {v: i for i, v in enumerate(fresh)}
                found = (*found, *sorted(((suffix, v, v in inside[2 * i]) for i, (suffix, _, _) in
                                          enumerate(part.leaves) for v in inside[2 * i] | inside[2 * i + 1]),
                                         key=lambda hit: rank[hit[1]]))
            if key is not None:
                self._vault_seen[key] = (len(ordered), found)
                if len(self._vault_seen) > self._entries:
                    self._vault_seen.popitem(last=False)
        elif key in self._vault_seen:
            self._vault_seen.move_to_end(key)  # type: ignore[arg-type]
        return found


_CJK = re.compile(r"[\u4e00-\u9fff]")


def _worth_searching(value: str) -> bool:
    if len(value) >= 6:
        return True
    if _CJK.search(value):
        return len(value) >= 2
    return len(value) >= _MIN_VAULT_VALUE and not value.isdigit()


def _type_of(vault: Vault, key: str) -> str:
    placeholder = vault.by_key.get(key, "[ITEM_000]")
    return placeholder[1:].rsplit("_", 1)[0]
