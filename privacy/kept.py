"""Detections kept in the session store, per owner, so that a restart or a new replica does not scan again a long
text (an agent's system prompt) a session of the same owner already sent.

What is kept, under a keyed hash of (the detectors' version, the owner, the profile, the slot's kind, whether every
number was scanned, the text): each target's findings as type, layer, offsets and score, never a value. A value is
read from the text at use time by its offsets; the vault key of a finding (``Finding.key``, often a canonical form
of the value: a phone in E.164) is not kept either, only a keyed hash of it, and is found again from the value (the
value itself, its spaces collapsed or case folded, or what the pattern layers make of it) and checked against that
hash. Whatever does not check — another detectors' version, a corrupt, truncated or foreign entry, a key that
cannot be found again, a value that is not at its offsets — is a miss: the text is scanned again, never answered
wrongly.

Lifetime. An entry names the sessions that used it (the one that wrote it, and those that read it from the store
later, up to ``_USERS``); each session names its entries. ``DELETE /v1/sessions/{id}`` (``forget``) takes the
session out of each of its entries, and an entry no session names any more goes. An entry older than
``privacy.retention_days`` is a miss and goes when it is next read; the store's own ``sessions.ttl_s`` removes an
entry nobody touches. Each owner keeps at most ``privacy.kept_detections`` entries (the oldest go first).

Never across owners: the owner is in the keyed hash, so another owner's identical text is another entry and a
fast answer tells no one that someone else sent it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from privacy.detect import Finding, IdentifierDetector, PatternDetector, PhoneDetector, SecretDetector, TextDetector
from privacy.detect.normalise import fold
from privacy.session_store import SessionStore

log = logging.getLogger(__name__)

_FORMAT = 1
_ENTRY = "found"  # the key of an entry's value under its own id
_SESSION = "kept-detections"  # the key, in a session's state, of the entries it used
_INDEX = "index"  # the key of an owner's list of entries, oldest first
_PREFIX = "~kept-detections/"  # the ids in the store: no client's session id starts so (a tenant's start "o." / "t.")
_USERS = 32  # sessions an entry names; one it cannot name still reads it (and is not what keeps it)
_MAX_FINDINGS = 20_000  # a slot with more is not kept (its entry would be megabytes)
KEEP_MIN_CHARS = 4096  # shorter slots are neither read nor kept: they re-scan in a few ms (a tool's output, a
# user's message), and every step would pay a read and every new one three writes


@dataclass(frozen=True)
class Slot:
    """One slot's text as the scrubber detects it: its targets' texts, under one profile and kind."""

    texts: Sequence[str]
    whole: str
    kind: str
    all_numbers: bool
    profile: str


class KeptDetections:
    """Per owner (``scope``), in the session store: a slot's findings by a keyed hash of its content. Thread-safe
    for its in-process memo; its store calls are async (call them on the event loop)."""

    def __init__(self, sessions: SessionStore, key: bytes, *, version: str, entries: int,
                 max_age_s: float | None = None, clock: Callable[[], float] = time.time) -> None:
        self._sessions = sessions
        self._key = key
        self._version = version
        self._entries = entries
        self._max_age_s = max_age_s
        self._clock = clock
        self._recovery: list[TextDetector] = [PhoneDetector(), PatternDetector(), IdentifierDetector(),
                                              SecretDetector()]
        self._written: OrderedDict[str, None] = OrderedDict()  # ids this process wrote or read: not written again
        self._lock = threading.Lock()

    def under(self, *, version: str, entries: int, max_age_s: float | None) -> KeptDetections | None:
        """The same store and key under a reload's detectors and limits (None: ``entries`` 0, kept no more)."""
        if entries <= 0:
            return None
        return KeptDetections(self._sessions, self._key, version=version, entries=entries, max_age_s=max_age_s,
                              clock=self._clock)

    # ids and hashes --------------------------------------------------------------------------------------------

    def _mac(self, *parts: str) -> str:
        mac = hmac.new(self._key, digestmod=hashlib.sha256)
        for part in parts:
            mac.update(part.encode("utf-8", "surrogatepass") + b"\0")
        return mac.hexdigest()[:40]

    def entry_id(self, scope: str, slot: Slot) -> str:
        return _PREFIX + self._mac("entry", self._version, scope, slot.profile, slot.kind,
                                   "numbers" if slot.all_numbers else "long-numbers", slot.whole)

    def _index_id(self, scope: str) -> str:
        return _PREFIX + "owner/" + self._mac("owner", scope)

    def _tag(self, finding_key: str) -> str:
        return self._mac("key", finding_key)[:24]

    # reading ---------------------------------------------------------------------------------------------------

    async def recall(self, scope: str, slot: Slot, session_id: str) -> list[list[Finding]] | None:
        """The slot's findings as kept, or None (a miss: never kept, expired, of other detectors, corrupt)."""
        if self._entries <= 0:
            return None
        ident = self.entry_id(scope, slot)
        stored = await self._sessions.get(ident, _ENTRY)
        if stored is None:
            return None
        if self._expired(stored):  # past privacy.retention_days: it goes now, and the text is scanned again
            await self._sessions.set(ident, _ENTRY, None)
            return None
        found = await asyncio.to_thread(self._decoded, stored, slot)  # ~700 findings: ms of HMACs, off the loop
        if found is None:
            log.info("kept detections: an entry that does not check was scanned again")
            return None
        users = stored.get("users") if isinstance(stored, dict) else None
        if isinstance(users, list) and session_id not in users and len(users) < _USERS:
            await self._sessions.update(ident, _ENTRY, lambda current: _with_user(current, session_id))
            await self._sessions.update(session_id, _SESSION, lambda current: _listed(current, ident))
        self._remember(ident)
        return found

    def _expired(self, stored: Any) -> bool:
        try:
            return self._max_age_s is not None and self._clock() - float(stored["at"]) > self._max_age_s
        except (KeyError, TypeError, ValueError):
            return False  # not an entry: ``_decoded`` refuses it

    def _decoded(self, stored: Any, slot: Slot) -> list[list[Finding]] | None:
        try:
            if stored.get("format") != _FORMAT or stored.get("version") != self._version:
                return None
            rows = stored["targets"]
            if not isinstance(rows, list) or len(rows) != len(slot.texts):
                return None
            memo: dict[tuple[str, str, str], str | None] = {}
            out: list[list[Finding]] = []
            for text, target in zip(slot.texts, rows, strict=True):
                found = []
                for row in target:
                    finding = self._finding(text, row, memo)
                    if finding is None:
                        return None
                    found.append(finding)
                out.append(found)
            return out
        except (AttributeError, KeyError, TypeError, ValueError, IndexError):
            return None

    def _finding(self, text: str, row: list[Any], memo: dict[tuple[str, str, str], str | None]) -> Finding | None:
        type_, start, end, layer, score, tag, extra = row
        if not (isinstance(type_, str) and isinstance(layer, str) and isinstance(start, int)
                and isinstance(end, int) and 0 <= start < end <= len(text)):
            return None
        value = text[start:end]
        key = f"{type_}:{value}"
        if tag is not None:
            memo_key = (type_, value, tag)
            if memo_key not in memo:
                memo[memo_key] = self._recovered_key(type_, value, tag)
            recovered = memo[memo_key]
            if recovered is None:
                return None
            key = recovered
        extra = extra or {}
        return Finding(type=type_, start=start, end=end, value=value, layer=layer, key=key, score=float(score),
                       dimension=extra.get("dimension"), weight=extra.get("weight"),
                       location=extra.get("location", ""))

    def _recovered_key(self, type_: str, value: str, tag: str) -> str | None:
        """The finding's vault key, found again from its value and checked against its keyed hash: first the
        canonical forms the layers use (digits and their last 10 or 11, cases, spaces), then what the pattern
        layers make of the value (a phone's E.164 form, ~0.1 ms each)."""
        digits = "".join(ch for ch in value if ch.isdigit())
        for form in (digits[-10:], digits, "+" + digits, digits[-11:], " ".join(value.split()), value.lower(),
                     value.upper(), value.casefold(), value.replace(" ", "")):
            candidate = f"{type_}:{form}"
            if hmac.compare_digest(self._tag(candidate), tag):
                return candidate
        folded = fold(value)
        for detector in self._recovery:
            for finding in detector.find(folded):
                if finding.type == type_ and hmac.compare_digest(self._tag(finding.key), tag):
                    return finding.key
        return None

    # writing ---------------------------------------------------------------------------------------------------

    def known(self, scope: str, slot: Slot) -> bool:
        """Whether this process wrote or read the slot's entry already (then ``keep`` need not write it)."""
        with self._lock:
            return self.entry_id(scope, slot) in self._written

    async def keep(self, scope: str, slot: Slot, found: list[list[Finding]], session_id: str) -> None:
        """Keep the slot's findings (``session_id`` sent it); a slot too short to be worth it, or whose findings a
        row cannot stand for, is not kept."""
        if self._entries <= 0 or len(slot.whole) < KEEP_MIN_CHARS:
            return
        ident = self.entry_id(scope, slot)
        rows = self._rows(slot, found)
        if rows is None:
            return
        now = self._clock()
        entry = {"format": _FORMAT, "version": self._version, "at": now, "users": [session_id], "targets": rows}
        await self._sessions.update(ident, _ENTRY, lambda current: _merged(current, entry))
        await self._sessions.update(session_id, _SESSION, lambda current: _listed(current, ident))
        evicted: list[str] = []

        def indexed(current: Any) -> list[list[Any]]:
            listed = [item for item in current if _indexed(item) and item[0] != ident] \
                if isinstance(current, list) else []
            fresh = [item for item in listed if self._max_age_s is None or now - item[1] <= self._max_age_s]
            kept = [*fresh, [ident, now]][-self._entries:]
            names = {item[0] for item in kept}
            evicted[:] = [item[0] for item in listed if item[0] not in names]  # the last run's (``fn`` may rerun)
            return kept

        await self._sessions.update(self._index_id(scope), _INDEX, indexed)
        for old in evicted:  # the owner's oldest past ``entries``, and those past retention
            await self._sessions.set(old, _ENTRY, None)
        self._remember(ident)

    def _rows(self, slot: Slot, found: list[list[Finding]]) -> list[list[list[Any]]] | None:
        if sum(len(f) for f in found) > _MAX_FINDINGS or len(found) != len(slot.texts):
            return None
        rows: list[list[list[Any]]] = []
        for text, findings in zip(slot.texts, found, strict=True):
            target = []
            for f in findings:
                if f.unit_id is not None or f.field is not None or text[f.start:f.end] != f.value:
                    return None  # a listed unit is the session's; a value not at its offsets cannot be read back
                tag = None if f.key == f"{f.type}:{f.value}" else self._tag(f.key)
                extra = {name: value for name, value in (("dimension", f.dimension), ("weight", f.weight),
                                                         ("location", f.location or None)) if value is not None}
                target.append([f.type, f.start, f.end, f.layer, f.score, tag, extra or None])
            rows.append(target)
        return rows

    def _remember(self, ident: str) -> None:
        with self._lock:
            self._written[ident] = None
            self._written.move_to_end(ident)
            if len(self._written) > max(self._entries, 1) * 4:
                self._written.popitem(last=False)

    # erasure ---------------------------------------------------------------------------------------------------

    async def forget(self, session_id: str) -> None:
        """``session_id`` is erased: it leaves every entry it used, and an entry no session names any more goes."""
        listed = await self._sessions.get(session_id, _SESSION)
        for ident in listed if isinstance(listed, list) else []:
            if isinstance(ident, str) and ident.startswith(_PREFIX):
                await self._sessions.update(ident, _ENTRY, lambda current: _without_user(current, session_id))
                with self._lock:
                    self._written.pop(ident, None)
        await self._sessions.set(session_id, _SESSION, None)


def _indexed(item: Any) -> bool:
    return (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
            and isinstance(item[1], int | float) and not isinstance(item[1], bool))


def _merged(current: Any, entry: dict[str, Any]) -> dict[str, Any]:
    """A fresh entry, naming the sessions a valid entry of the same id already named as well."""
    users = current.get("users") if isinstance(current, dict) else None
    if isinstance(users, list) and current.get("version") == entry["version"]:
        names = list(dict.fromkeys([*(u for u in users if isinstance(u, str)), *entry["users"]]))[:_USERS]
        return {**entry, "users": names}
    return entry


def _with_user(current: Any, session_id: str) -> Any:
    if not isinstance(current, dict) or not isinstance(current.get("users"), list):
        return current
    users = current["users"]
    return current if session_id in users or len(users) >= _USERS else {**current, "users": [*users, session_id]}


def _without_user(current: Any, session_id: str) -> Any:
    if not isinstance(current, dict) or not isinstance(current.get("users"), list):
        return None
    users = [u for u in current["users"] if u != session_id]
    return {**current, "users": users} if users else None


def _listed(current: Any, ident: str) -> list[str]:
    listed = [i for i in current if isinstance(i, str)] if isinstance(current, list) else []
    return listed if ident in listed else [*listed, ident]


def detections_key(key: bytes) -> bytes:
    """The kept detections' HMAC key, derived from the audit's (``privacy.hash_key`` or the gateway's derived key)."""
    return hmac.new(key, b"ecgw kept detections", hashlib.sha256).digest()
