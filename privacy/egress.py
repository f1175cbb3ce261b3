"""The last check on the outgoing body: what the earlier layers missed, found on the exact body that would leave.

After protection, every key and value of the body (numbers as text, JSON strings inside strings included) is
scanned again with the units, secrets and pattern layers, in each surface form it could be read in (NFKC,
look-alikes read as ASCII, invisible characters removed, HTML entities, %-escapes, ``\\u`` escapes, base64 — MIME
wrapped or nested —, hex and base32 segments that decode to text), across the boundary of adjacent content parts
and adjacent messages, and — for listed values of ≥ 8 non-space characters — across every string of the body in
order (``privacy.spread``). The values the session's vault already replaced elsewhere are searched too. A hit found
literally is pseudonymised where it stands (every occurrence, keys and numbers included: a number that holds the
value, ``-539487261`` or ``539487261.0``, becomes the placeholder's text); a hit only an encoding or a split
reveals cannot be placed, so the step does not leave (``PrivacyBlocked``).

A step costs only what is new: detector results are cached per string and per top-level part of the body (each
message, each other top-level key) by content, units version and label; listed units are the session's, so with
session units the cache is the session's own. The search for vault values is remembered per session and part (a
vault only grows: a part is searched for each value once). Seams between adjacent parts and messages are glued
and checked at every step (each is cached by its own content). The spread search keeps its state after each part,
keyed by the chain of the parts' hashes, so a growing conversation feeds it only its new strings.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from privacy.detect import Finding, TextDetector, UnitMatcher, canonical, encoded_segments, fold, variants
from privacy.spread import START, Spread, State
from privacy.vault import Vault

_GLUE = 48  # characters each side of a part or message boundary
_MIN_VAULT_VALUE = 4
_HELD_MAX = 4096  # values remembered per part
_FUZZY = frozenset({"PERSON", "LOCATION", "AMOUNT"})  # shapes two unrelated texts can form when glued


@dataclass(frozen=True)
class EgressHit:
    path: str  # where in the body; "a|b" for a value glued across two places
    finding: Finding
    placeable: bool  # found literally, so it can be replaced where it stands
    how: str  # "literal" | "decoded" | "split" | "vault"


def body_leaves(value: Any, path: str, label: str | None) -> Iterator[tuple[str, str, str | None]]:
    """(path, text, key it sits under) of every key, string and number of a JSON value; a JSON document inside a
    string is scanned as that string's text."""
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            yield f"{where}{{key}}", str(key), None
            yield from body_leaves(item, where, str(key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from body_leaves(item, f"{path}[{i}]", label)
    elif isinstance(value, str):
        yield path, value, label
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, repr(value) if isinstance(value, float) else str(value), label


def spread_found(body: dict[str, Any], units: UnitMatcher | None) -> list[Finding]:
    """The listed values spread over the body's strings (``privacy.spread``), read from scratch: the last check
    reads the same texts part by part (``spread_texts``), remembering its state."""
    spread = Spread.of(units)
    if spread is None:
        return []
    state, found = START, set()
    for prefix, _, leaves in body_parts(body):
        state, done = spread.find(spread_texts((path[len(prefix):], canonical(text)) for path, text, _ in leaves()),
                                  state)
        found |= done
    return spread_findings(spread, found)


_REASONING = (".reasoning_content", ".reasoning")


def spread_texts(leaves: Iterable[tuple[str, str]]) -> Iterator[str]:
    """What the spread search reads of one part, from its (path suffix, canonical text) leaves, in order: keys and
    values (a value split between a JSON key and its value is spread too), a JSON document inside a string as its
    keys and strings, and a message's reasoning also before the rest (a reader reads it first; in the body it may
    stand after the content)."""
    items = list(leaves)
    first = [text for suffix, text in items if suffix.startswith(_REASONING)]
    for text in (*first, *(text for _, text in items)):
        yield from _strings_in(text)


def _strings_in(text: str) -> Iterator[str]:
    if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        if isinstance(document, dict | list):
            yield from (inner for _, inner, _ in body_leaves(document, "", None))
            return
    yield text


def spread_findings(spread: Spread, found: set[int]) -> list[Finding]:
    return [Finding(type=u.type, start=0, end=0, value=u.value, layer="units", key=f"unit:{u.unit_id}",
                    unit_id=u.unit_id, field=u.field, dimension=u.dimension, weight=u.weight)
            for u in (spread.units[i] for i in sorted(found))]


def _message_text(message: Any) -> list[str]:
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return texts


def body_seams(body: dict[str, Any]) -> Iterator[tuple[str, str, int, bool]]:
    """(path, glued text, boundary offset, same speaker) across adjacent content parts and adjacent messages. A
    seam between two speakers (a user request and the tool result after it), or two tool results (two tools'
    outputs), is only checked for listed units:
    shapes such as card numbers form by chance where one text ends in digits and the next starts with some."""
    previous: tuple[str, str, Any] | None = None
    for i, message in enumerate(body.get("messages") or ()):
        role = message.get("role") if isinstance(message, dict) else None
        for j, text in enumerate(_message_text(message)):
            if not text:
                continue
            here = f"messages[{i}].content[{j}]"
            if previous is not None:
                left, right = previous[1][-_GLUE:], text[:_GLUE]
                yield f"{previous[0]}|{here}", left + right, len(left), previous[2] == role != "tool"
            previous = (here, text, role)


class LabelledDetector(Protocol):
    def find(self, text: str, label: str | None) -> list[Finding]: ...


@dataclass
class _Scanned:
    canonical: str
    findings: list[tuple[Finding, bool]]


@dataclass
class _Part:
    """What the detectors found in one top-level part of a body, with paths relative to the part."""

    hits: list[tuple[str, Finding, bool]]  # (path suffix, finding, placeable)
    leaves: list[tuple[str, str, str]]  # (path suffix, text, canonical text): where vault values are searched
    joined: str = ""  # every leaf's text and canonical text: one search per vault value, then the leaves
    held: dict[str, bool] = field(default_factory=dict)  # value → whether it is in ``joined``

    def holds(self, value: str) -> bool:
        """Whether ``value`` is somewhere in the part. Remembered (a property of the content alone): the next
        session whose vault holds the same values — the same system prompt — looks each up instead of searching."""
        known = self.held.get(value)
        if known is None:
            if not self.joined:
                self.joined = "\0".join(f"{text}\0{normal}" for _, text, normal in self.leaves)
            known = value in self.joined
            if len(self.held) < _HELD_MAX:
                self.held[value] = known
        return known


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


def body_parts(body: dict[str, Any]) -> Iterator[tuple[str, Any, Callable[[], Iterator[tuple[str, str, str | None]]]]]:
    """(prefix, the value its content hash covers, its leaves) for each top-level part of a body: the ``messages``
    key, each message, each other top-level key with its value. The leaves' paths and labels are exactly those of
    one walk over the whole body; they are listed only for a part not seen before."""
    for key, item in body.items():
        name = str(key)
        if name == "messages" and isinstance(item, list):
            yield name, ["key", name], functools.partial(iter, [(f"{name}{{key}}", name, None)])
            for i, message in enumerate(item):
                prefix = f"{name}[{i}]"
                yield prefix, ["message", message], functools.partial(body_leaves, message, prefix, name)
        else:
            yield name, ["top", name, item], functools.partial(_top_leaves, name, item)


def _top_leaves(name: str, item: Any) -> Iterator[tuple[str, str, str | None]]:
    yield f"{name}{{key}}", name, None
    yield from body_leaves(item, name, name)


def _digest(value: Any) -> bytes | None:
    """A content hash of a JSON value; None for a value that is not plain JSON (then it is not cached)."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_refuse)
    except (TypeError, ValueError):
        return None
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class EgressCheck:
    """Finds what is left in a body. ``detectors``: the secrets and pattern layers; ``labelled``: the layer that
    also reads the key a value sits under."""

    def __init__(self, detectors: Sequence[TextDetector], labelled: Sequence[LabelledDetector] = (), *,
                 cache_entries: int = 50_000) -> None:
        self._detectors = detectors
        self._labelled = labelled
        self._cache: OrderedDict[tuple[bytes, str], _Scanned] = OrderedDict()
        self._parts: OrderedDict[tuple[bytes, str], _Part] = OrderedDict()
        self._vault_seen: OrderedDict[tuple[str, bytes], tuple[int, tuple[tuple[str, str, bool], ...]]] = \
            OrderedDict()
        self._vaults: OrderedDict[str, tuple[int, dict[str, str]]] = OrderedDict()
        self._spreads: weakref.WeakKeyDictionary[UnitMatcher, Spread | None] = weakref.WeakKeyDictionary()
        self._spread_states: OrderedDict[tuple[str, bytes], tuple[State, frozenset[int]]] = OrderedDict()
        self._entries = cache_entries

    def _cached(self, key: tuple[bytes, str]) -> _Scanned | None:
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
        return hit

    def _put(self, key: tuple[bytes, str], value: _Scanned) -> None:
        self._cache[key] = value
        if len(self._cache) > self._entries:
            self._cache.popitem(last=False)

    def _find(self, form: str, label: str | None, units: UnitMatcher | None) -> list[Finding]:
        found = [f for detector in self._detectors for f in detector.find(form)]
        found += [f for detector in self._labelled for f in detector.find(form, label)]
        if units is not None:
            found += units.find(form)
        return found

    def _scan_text(self, text: str, label: str | None, units: UnitMatcher | None, scope: str) -> _Scanned:
        """Findings in every surface form of ``text``; each with whether it stands literally in ``text``."""
        digest = (text.encode("utf-8", "surrogatepass") if len(text) <= 64 else
                  hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest())
        key = (digest, f"{scope}\0{label or ''}")
        scanned = self._cached(key)
        if scanned is not None:
            return scanned
        out: list[tuple[Finding, bool]] = []
        hidden: list[tuple[Finding, str]] = []  # (finding, the form it was read in) visible only decoded
        seen: set[tuple[str, str]] = set()
        normal = canonical(text)
        for n, form in enumerate(variants(text)):
            if n == 0:
                form = fold(text)  # full-width forms read as ASCII, offsets kept: every finding stands in text
            for finding in self._find(form, label, units):
                span = (text if n == 0 else form)[finding.start:finding.end]
                if (finding.key, span) in seen:
                    continue
                seen.add((finding.key, span))
                if n == 0:
                    out.append((replace(finding, value=span), True))
                elif form == normal and form.count(span) <= text.count(span):
                    continue  # every occurrence of it stands literally in text: found above
                else:  # visible only decoded (an escape, zero-width characters, base64): cannot be placed
                    hidden.append((replace(finding, value=span), form))
        if hidden:  # a base64 segment standing in text is replaced whole when what it decodes to holds a hit
            out += self._encoded_segments(text, label, units)
        if hidden and out:  # what replacing the literal hits removes too (a full-width value read as ASCII)
            rest = text
            for finding, _ in sorted(out, key=lambda h: -len(h[0].value)):
                rest = rest.replace(finding.value, "\0")
            views = list(variants(rest))
            hidden = [(f, form) for f, form in hidden if any(f.value in view for view in views)]
        out += [(f, False) for f, _ in hidden]
        scanned = _Scanned(normal, out)
        self._put(key, scanned)
        return scanned

    def _encoded_segments(self, text: str, label: str | None, units: UnitMatcher | None,
                          ) -> list[tuple[Finding, bool]]:
        """Each encoded segment of ``text`` whose decoded text holds a finding, as a placeable finding of that type
        whose value is the segment itself (the agent gets the segment back on restore; the cloud sees neither)."""
        out: list[tuple[Finding, bool]] = []
        for start, end, decoded in encoded_segments(text):
            segment = text[start:end]
            for found in sorted(self._find(decoded, label, units), key=lambda f: -len(f.value)):
                # each finding keeps its type and unit; all stand for the one segment (placed once, longest first)
                out.append((replace(found, start=start, end=end, value=segment,
                                    key=f"{found.type}:base64:{segment}"), True))
        return out

    def _part(self, digest: bytes | None, leaves: Callable[[], Iterator[tuple[str, str, str | None]]], prefix: str,
              units: UnitMatcher | None, scope: str) -> _Part:
        key = (digest, scope) if digest is not None else None
        part = self._parts.get(key) if key is not None else None
        if part is not None:
            self._parts.move_to_end(key)  # type: ignore[arg-type]
            return part
        part = _Part([], [])
        for path, text, label in leaves():
            scanned = self._scan_text(text, label, units, scope)
            suffix = path[len(prefix):]
            part.hits += [(suffix, finding, literal) for finding, literal in scanned.findings]
            part.leaves.append((suffix, text, scanned.canonical))
        if key is not None:
            self._parts[key] = part
            if len(self._parts) > self._entries:
                self._parts.popitem(last=False)
        return part

    def scan(self, body: dict[str, Any], units: UnitMatcher | None, vault: Vault, *, units_version: str = "-",
             session_id: str = "", owner: str = "") -> list[EgressHit]:
        """``owner``: whose session this is (the gateway's tenant): cached results are shared within one owner."""
        hits: list[EgressHit] = []
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
        for prefix, hashed, leaves in body_parts(body):
            digest = _digest(hashed)
            part = self._part(digest, leaves, prefix, units, scope)
            if spread is not None:
                chain, state, spread_hits = self._spread_part(spread, scope, chain, digest, part, state,
                                                              spread_hits)
            for suffix, finding, literal in part.hits:
                hits.append(EgressHit(prefix + suffix, finding, literal, "literal" if literal else "decoded"))
            for suffix, value, literal in self._vault_values_in(session_id, digest, part, ordered):
                vault_key = raw_to_key.get(value)
                if vault_key is not None:
                    finding = Finding(type=_type_of(vault, vault_key), start=0, end=0, value=value, layer="vault",
                                      key=vault_key)
                    hits.append(EgressHit(prefix + suffix, finding, literal, "vault"))
        for path, glued, boundary, same_speaker in body_seams(body):
            for finding in self._split(glued, boundary, units, scope):
                if same_speaker or finding.layer == "units":
                    hits.append(EgressHit(path, finding, False, "split"))
        if spread is not None:
            hits += [EgressHit("(strings in order)", f, False, "split")
                     for f in spread_findings(spread, set(spread_hits))]
        return hits

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

    def _split(self, glued: str, boundary: int, units: UnitMatcher | None, scope: str) -> list[Finding]:
        """Findings that span the seam of two glued texts (cached like any text)."""
        key = (hashlib.blake2b(glued.encode("utf-8", "surrogatepass"), digest_size=16).digest(),
               f"{scope}\0\0seam{boundary}")
        scanned = self._cached(key)
        if scanned is None:
            found = [f for f in self._find(fold(glued), None, units)
                     if f.start < boundary < f.end and (f.layer == "units" or f.type not in _FUZZY)]
            scanned = _Scanned("", [(f, False) for f in found])
            self._put(key, scanned)
        return [f for f, _ in scanned.findings]

    def _searchable(self, session_id: str, vault: Vault) -> dict[str, str]:
        """raw value → vault key, for the vault's values worth searching (a vault only grows: extended, not rebuilt)."""
        size, known = self._vaults.get(session_id, (0, {}))
        if size != len(vault.by_key):
            known = dict(known)
            for key, placeholder in list(vault.by_key.items())[size:]:
                value = vault.values.get(placeholder)
                if value and _worth_searching(value):
                    known.setdefault(value, key)
            self._vaults[session_id] = (len(vault.by_key), known)
            if len(self._vaults) > 4096:
                self._vaults.popitem(last=False)
        return known

    def _vault_values_in(self, session_id: str, digest: bytes | None, part: _Part,
                         ordered: list[str]) -> tuple[tuple[str, str, bool], ...]:
        """(path suffix, value, stands literally) for the session's vault values in a part; a vault only grows, so
        each part is searched once for each value (not every value in every text at every step)."""
        key = (session_id, digest) if digest is not None else None
        checked, found = self._vault_seen.get(key, (0, ())) if key is not None else (0, ())
        if checked < len(ordered):
            fresh = [v for v in ordered[checked:] if part.holds(v)]
            found = (*found, *((suffix, v, v in text) for v in fresh for suffix, text, normal in part.leaves
                               if v in text or v in normal))
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


def place(body: dict[str, Any], replacements: list[tuple[str, str]]) -> dict[str, Any]:
    """A copy of ``body`` with every occurrence of each raw value — in keys, strings (JSON-escaped too) and equal
    numbers — replaced by its placeholder, longer values first. ``body`` is left as it is (an atomic store may run
    the last check again on it); what does not change is shared, not copied."""
    pairs: list[tuple[str, str]] = []
    for raw, placeholder in sorted(replacements, key=lambda p: -len(p[0])):
        pairs += [(form, placeholder) for form in dict.fromkeys(
            [raw] + [json.dumps(raw, ensure_ascii=flag)[1:-1] for flag in (False, True)])]
    numbers = dict(replacements)

    def fix(text: str) -> str:
        for form, placeholder in pairs:
            if form in text:
                text = text.replace(form, placeholder)
        return text

    def new_value(value: Any) -> Any:
        if isinstance(value, str):
            return fix(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            # the number as the last check read it; one that holds a value (-539487261, 539487261.0) leaves as
            # the placeholder's text
            text = repr(value) if isinstance(value, float) else str(value)
            if text in numbers:
                return numbers[text]
            placed = fix(text)
            return value if placed == text else placed
        if isinstance(value, dict):
            items = [(fix(str(k)) if isinstance(k, str) else k, new_value(v)) for k, v in value.items()]
            if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
                return value
            return dict(items)
        if isinstance(value, list):
            new = [new_value(item) for item in value]
            return value if all(a is b for a, b in zip(new, value, strict=True)) else new
        return value

    placed: dict[str, Any] = new_value(body)
    return placed if placed is not body else dict(body)
