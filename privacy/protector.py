"""``PrivacyProtector``: detect → pseudonymise → audit, for every request that leaves for the cloud."""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from privacy.audit import (
    AuditedUnits,
    AuditWriter,
    FindingSet,
    Hasher,
    Record,
    body_bytes,
    call_row,
    finding_row,
    inbound_record,
    placeholder_counts,
    safe_location,
    seal_body,
)
from privacy.audit.receipts import verdict
from privacy.classes.names import ANYONE, Who
from privacy.classes.policy import ClassBlocked, ClassPolicy, Held
from privacy.classes.resolve import ClassPolicies
from privacy.detect import (
    DetectionError,
    Finding,
    Profile,
    ScanMeter,
    ScanOverBudget,
    Unit,
    UnitsDocument,
    check_bytes,
    is_credential_type,
)
from privacy.errors import PrivacyBlocked, PrivacyFailedToEdge, PrivacyUnavailable
from privacy.guard import AnswerGuard, Found
from privacy.hook import Protection, ReceiptSource, StreamRestorer
from privacy.inbound import Carried, InboundScanner
from privacy.kept import KeptDetections
from privacy.lastcheck import LastCheck, Settled
from privacy.metrics import PrivacyMetrics, ScrubWork
from privacy.registry import UnitRegistry
from privacy.restore import Restorer, ToolSecrets, given_placeholders
from privacy.scrubber import Applied, DetectionCache, Prepared, Scrubber, ScrubResult, prepare
from privacy.seal import Sealer
from privacy.seen import SeenKey, SeenPart, SeenParts, SlotFindings
from privacy.session_store import SessionStore, SessionStoreUnavailable
from privacy.settings import PrivacySettings
from privacy.stream import RestoringStream
from privacy.vault import VAULT_KEY, Vault, allocate
from privacy.vault import read as read_vault
from privacy.walk import Part, assemble, binary_body, copy_json, slot_order, top_parts, walk_part

T = TypeVar("T")
log = logging.getLogger("ecgw.privacy")

_SWITCH_INTERVAL_S = 0.001  # the GIL's longest turn while detection threads run (``start``)
_INLINE_CHARS = 256  # detect and last-check inline below this many new characters; above it, off the event loop
# (NER on a few KB holds the loop for ~100 ms; a thread hop costs ~0.1 ms)


class ScrubbedRequest:
    """The outcome of a scrub: the body that may leave, what was found where, the placeholders live now, and the
    last check's verdict on it (``privacy.audit.receipts.verdict``) with the listed units it let leave raw."""

    def __init__(self, body: dict[str, Any], by_slot: list[SlotFindings],
                 values: dict[str, str], *, verdict: str = "unchecked",
                 raw_units: frozenset[str] = frozenset(), held: Held | None = None, tier: str = "standard",
                 work: ScrubWork | None = None) -> None:
        self.body = body
        self.work = work or ScrubWork()  # what this scrub walked, detected and applied, and what it reused
        self.held = held or Held()  # what the body carries by data class
        self.tier = tier  # the target tier it was scrubbed for
        self.values = values
        self.verdict = verdict
        self.raw_units = raw_units
        self._by_slot = by_slot
        self._applied: list[Applied] | None = None

    @property
    def applied(self) -> list[Applied]:
        """Every finding with its full location. Built on first use (the audit's writer thread), not on the
        request path: a long history carries hundreds of findings that each step would otherwise relocate."""
        if self._applied is None:
            self._applied = [Applied(a.finding.at(location + a.finding.location), a.action)
                             for location, results, _ in self._by_slot for a in results]
        return self._applied

    def findings(self, row: Callable[[Applied, str], dict[str, Any]]) -> tuple[list[dict[str, Any]], list[FindingSet]]:
        """The audit's rows of every finding, ``row(applied, full location)`` each: the call's own (what the last
        check replaced), and the finding sets of the slots a cached scrub result holds, in ``applied``'s order —
        each set made once per result and location (a session's repeated prefix: once, not at every step)."""
        own: list[dict[str, Any]] = []
        sets: list[FindingSet] = []
        for location, results, memo in self._by_slot:
            if memo is None:
                own += [row(a, location + a.finding.location) for a in results]
                continue
            known = memo.get(location)
            if known is None:
                known = memo[location] = FindingSet.of([row(a, location + a.finding.location) for a in results])
            sets.append(known)
        return own, sets


class PrivacyProtection:
    def __init__(self, scrubbed: ScrubbedRequest, *, policy: ClassPolicy, on_usage: Any = None,
                 tool_secrets: ToolSecrets | None = None, receipts: ReceiptSource | None = None,
                 guard: AnswerGuard | None = None) -> None:
        self.body = scrubbed.body
        self._scrubbed = scrubbed
        self._policy = policy
        self._restorer = Restorer(scrubbed.values, tool_secrets)
        self._on_usage = on_usage
        self._receipts = receipts
        self._guard = guard  # privacy.response_guard: what the answer carries that the call never did

    def receipt(self, target: str, sent: dict[str, Any], *, tier: str) -> str | None:
        return None if self._receipts is None else self._receipts.issue(target, sent, tier=tier)

    async def durable(self) -> None:
        if self._receipts is not None:
            await self._receipts.durable()

    def permits(self, tier: str) -> bool:
        """Whether this body may go to a target of ``tier`` (no class it holds is kept off that tier)."""
        return self._policy.refused(tier, self._scrubbed.held) is None

    @property
    def findings(self) -> list[Applied]:
        return self._scrubbed.applied

    def restore(self, response: dict[str, Any]) -> dict[str, Any]:
        if self._on_usage is not None and isinstance(response.get("usage"), dict):
            self._on_usage(response["usage"])
        restored = self._restorer.response(response)
        return restored if self._guard is None else self._guard.response(restored)

    def stream_restorer(self) -> StreamRestorer:
        return RestoringStream(self._restorer, on_usage=self._on_usage, guard=self._guard)


class PrivacyProtector:
    def __init__(self, settings: PrivacySettings, *, sessions: SessionStore, scrubber: Scrubber,
                 units: UnitRegistry, audit: AuditWriter | None, hasher: Hasher | None,
                 last_check: LastCheck | None = None, metrics: PrivacyMetrics | None = None,
                 sealer: Sealer | None = None, scope_of: Callable[[str], str] | None = None,
                 inbound: InboundScanner | None = None) -> None:
        """``scope_of``: the owner of a session id (``gateway.state.tenancy``): detections are shared within one owner's
        sessions only. None: one owner (single-tenant, ``ecgw scrub``). ``inbound``: how answers are read for what
        the call never carried (``privacy.response_guard``; None: not read)."""
        self._inbound = inbound
        self._settings = settings
        self._scope_of = scope_of
        self._last_check = last_check
        self.metrics = metrics
        self._sessions = sessions
        self._scrubber = scrubber
        self.units = units
        self._audit = audit
        self._hasher = hasher
        self._sealer = sealer  # encrypts the audit's copy of each outgoing body
        self._audited = (AuditedUnits(units, audit, hasher, sealer=sealer,
                                      checkpoint_interval_s=settings.audit_checkpoint_interval_s,
                                      retention_days=settings.retention_days)
                         if audit and hasher else None)
        self._cache = DetectionCache(settings.cache_entries, _half_mb(settings))
        self._seen = SeenParts(settings.cache_entries, _half_mb(settings))
        self._session_locks: dict[str, asyncio.Lock] = {}
        self._policies = ClassPolicies(settings)
        self._models_pid: int | None = None  # the process that loaded the models (``load_models``)
        self._switch_interval: float | None = None  # the process's, while ``start`` holds it lower

    def reconfigured(self, settings: PrivacySettings, *, scrubber: Scrubber, units: UnitRegistry,
                     last_check: LastCheck | None) -> PrivacyProtector:
        """This protector under new rules (a reload: layers, actions, units files, …), sharing everything else —
        the session store, the audit's writer, hasher and chain, the metrics. Its ``start`` and ``aclose`` are
        this one's business: the copy serves requests only."""
        sibling = copy.copy(self)
        sibling._settings = settings
        sibling._policies = ClassPolicies(settings)
        sibling._scrubber = scrubber
        sibling.units = units
        sibling._last_check = last_check
        # detections under the old rules do not carry over
        sibling._cache = DetectionCache(settings.cache_entries, _half_mb(settings))
        sibling._seen = SeenParts(settings.cache_entries, _half_mb(settings))
        if self._audited is not None:
            sibling._audited = self._audited.over(units)
        return sibling

    @property
    def kept(self) -> KeptDetections | None:
        """The detections its scrubber keeps in the session store (a reload keeps the store and key)."""
        return self._scrubber.kept

    async def scrub(self, body: dict[str, Any], *, session_id: str, who: Who = ANYONE, tier: str = "standard",
                    profile: Profile | None = None) -> ScrubbedRequest:
        """The body a cloud target of ``tier`` would receive from ``who`` (their class policy and profile:
        ``privacy.classes.resolve``), detected under ``profile`` when one is given instead. Raises
        ``PrivacyBlocked``, or ``DetectionError`` on failure.
        Steps of one session are scrubbed one at a time in this worker (they would only contend for the same
        vault); across workers and replicas the store's atomic update keeps placeholders one per value."""
        lock = self._session_locks.setdefault(session_id, asyncio.Lock())
        try:
            async with lock:
                return await self._scrub(body, session_id=session_id, policy=self._policies.of(who), tier=tier,
                                         profile=profile or self._policies.profile(who))
        finally:
            if not lock.locked() and self._session_locks.get(session_id) is lock:
                del self._session_locks[session_id]

    async def _scrub(self, body: dict[str, Any], *, session_id: str, policy: ClassPolicy, tier: str,
                     profile: Profile, again: bool = False) -> ScrubbedRequest:
        version, matcher = await self.units.matcher(session_id)
        scope = self._scope_of(session_id) if self._scope_of is not None else ""
        # What is remembered of the session is keyed by the life of its vault it was scrubbed against (an erased
        # and begun-again session has a new one; "-": no vault, so nothing remembered holds a placeholder): the
        # life this process last saw, checked against the vault this step reads or writes below.
        life = self._seen.life(session_id)
        rules = f"{profile}:{policy.scrub_key(tier)}:{version}:{life}"
        rest = not binary_body(body)
        parts: list[_Scrubbing] = []
        for key, index, value in top_parts(body):
            seen_key = self._seen.key(session_id, rules, "message" if index is not None else f"top:{key}", value)
            seen = self._seen.get(seen_key) if seen_key is not None else None
            if seen is not None:  # scrubbed at an earlier step: a copy of what it became
                prefix = key if index is None else f"messages[{index}]"
                parts.append(_Scrubbing(key, prefix, copy_json(seen.value), seen_key, seen=seen))
            else:
                walked = walk_part(key, index, value, rest=rest)
                parts.append(_Scrubbing(key, walked.prefix, walked.value, seen_key, walked=walked))
        work = ScrubWork(parts_reused=sum(part.seen is not None for part in parts))
        binary = [part.prefix + where for part in parts if part.seen is not None for where in part.seen.binary]
        binary += [where for part in parts if part.walked is not None for where in part.walked.binary]
        if binary and self._settings.images == "block":
            raise PrivacyBlocked(f"{binary[0]} is not text and privacy.images is 'block'; it stays on the edge")
        slots = [slot for part in parts if part.walked is not None
                 for slot in (*part.walked.first, *part.walked.rest)]
        work.parts_scrubbed = len(parts) - work.parts_reused
        work.slots_walked = len(slots)
        results: list[ScrubResult | None] = []
        misses: list[int] = []
        keys = []
        for i, slot in enumerate(slots):
            cache_key = DetectionCache.key(session_id, rules, slot.kind, slot.text)
            keys.append(cache_key)
            hit = self._cache.get(cache_key)
            results.append(hit)
            if hit is None:
                misses.append(i)
        work.slots_applied = len(misses)
        reused = work.parts_reused + len(slots) - len(misses)  # results that came from a scrub under ``rules``
        prepared: list[Prepared] = []
        found: list[list[list[Finding]]] = []
        budget = self._settings.scan_budget
        meter = ScanMeter(budget.max_cpu_s)  # this request's detection and last check, on whichever thread
        size = sum(len(slots[i].text) for i in misses)
        if misses:
            check_bytes(sum(len(slots[i].text.encode("utf-8", "surrogatepass")) for i in misses), budget.max_bytes)
            prepared = [prepare(slots[i].text, slots[i].kind, all_numbers=matcher is not None) for i in misses]

            # A tool's definition (its description and parameter docs) is the agent's own instruction prose: the
            # real-text families read it as people, places and handles (`@name` in a usage note) and the cloud then
            # gets broken schemas, so it is read for listed units and secrets alone (the minimal profile).
            definitions = [slots[i].definition for i in misses]
            groups = [([j for j, d in enumerate(definitions) if d], "minimal"),
                      ([j for j, d in enumerate(definitions) if not d], profile)]

            def detect() -> list[list[list[Finding]]]:
                out: list[list[list[Finding]]] = [[] for _ in misses]
                with meter.running():
                    for group, read_as in groups:
                        if group:
                            for j, each in zip(group, self._scrubber.detect(
                                    [prepared[j] for j in group], matcher, scope=scope, profile=read_as,
                                    meter=meter), strict=True):
                                out[j] = each
                return out

            # What the session store kept for this owner's long slots (another replica's detection, or this one's
            # before a restart) is not scanned again; what is scanned now is kept there for them.
            profiles: list[Profile] = ["minimal" if d else profile for d in definitions]
            await self._scrubber.recall(prepared, profiles, all_numbers=matcher is not None, scope=scope,
                                        session_id=session_id)
            found = await asyncio.to_thread(detect) if size > _INLINE_CHARS else detect()
            await self._scrubber.keep(prepared, profiles, all_numbers=matcher is not None, scope=scope,
                                      session_id=session_id)
            work.slots_detected = len(misses)

        decide = functools.partial(policy.decide, tier=tier)

        def apply(vault: Vault) -> list[ScrubResult]:
            return [self._scrubber.apply(p, f, vault, decide) for p, f in zip(prepared, found, strict=True)]

        if misses:  # placeholders are allocated against the freshest vault inside one atomic update of the store
            vault, allocated = await allocate(self._sessions, session_id, apply)
            for i, done in zip(misses, allocated, strict=True):
                results[i] = done
        else:  # nothing to apply: the vault is only read (the last check's search, the way back's values)
            vault = await read_vault(self._sessions, session_id) or Vault()
        if _stale(life, vault, reused):
            return await self._again(body, session_id, policy, tier, profile, again)
        by_slot: list[SlotFindings] = []
        given: set[str] = set()
        checked = replaced = let_through = False
        raw_units: frozenset[str] = frozenset()
        held = Held()
        audited: set[str] = set()
        at = 0
        for part in parts:
            if part.seen is not None:
                given |= part.seen.given
                held.merge(part.seen.held)
                audited |= part.seen.audited
                continue
            assert part.walked is not None
            for slots_of, out in ((part.walked.first, part.first), (part.walked.rest, part.rest)):
                for slot in slots_of:
                    maybe = results[at]
                    at += 1
                    assert maybe is not None
                    result = maybe
                    if result.blocked:
                        raise PrivacyBlocked(f"{slot.location} holds {result.blocked}; the step stays on the edge")
                    if result.text != slot.text:
                        if result.given is None:  # once per cached result, not at every step for a long prompt
                            result.given = frozenset(given_placeholders([(slot.text, result.text)]))
                        given |= result.given
                        slot.set(result.text)
                    if result.applied:
                        held.merge(result.held)
                        audited.update(a.finding.value for a in result.applied if a.action == "audit")
                    if result.applied or result.text != slot.text:
                        out.append((slot.location[len(part.prefix):], result))
            part.value = part.walked.value
        for i, first in slot_order([part.key for part in parts]):
            by_slot += parts[i].findings(first)
        copy_ = assemble(body, [part.value for part in parts])
        if self._last_check is not None:  # the last check on the exact body that would leave (privacy.lastcheck)
            last_check, scanned = self._last_check, copy_

            def settle(fresh: Vault) -> Settled:
                with meter.running():
                    return last_check.settle(scanned, matcher, fresh, decide=decide, units_version=version,
                                             session_id=session_id, owner=scope, audited=audited, meter=meter)

            # First against the vault read (or just written): a settlement that hands out no new placeholder is the
            # one the store's update would give, so it needs no second read, decryption and parse of the session's
            # vault. One that does takes its placeholders from the freshest vault, in one atomic update like the
            # above.
            trial = Vault(vault.to_json())
            settled = await asyncio.to_thread(settle, trial) if size > _INLINE_CHARS else settle(trial)
            if trial.changed:
                vault, settled = await allocate(self._sessions, session_id, settle)
                if _stale(life, vault, reused):
                    return await self._again(body, session_id, policy, tier, profile, again)
            last_check.count(settled)
            checked, replaced, let_through = True, bool(settled.done), settled.let_through
            raw_units = frozenset(settled.raw_units)
            copy_ = settled.body
            given |= settled.given
            by_slot.extend((path, [applied], None) for path, applied in settled.done)
            held.merge(settled.held)
        # Remembered only now, after the vault holding their placeholders was written, and not for a blocked step.
        # Under the vault's life as it is now: one written by this step is the one their placeholders are in.
        life = _life(vault)
        self._seen.live(session_id, life)
        rules = f"{profile}:{policy.scrub_key(tier)}:{version}:{life}"
        for i in misses:
            miss = results[i]
            assert miss is not None
            self._cache.put((session_id, rules, *keys[i][2:]), miss)
        for part in parts:
            if part.walked is not None and part.seen_key is not None:
                self._seen.put((session_id, rules, *part.seen_key[2:]), part.remembered())
        if self.metrics is not None:
            self.metrics.count_scrub(work)
        # The way back restores only what this call gave the cloud: a placeholder the cloud invents, or copies
        # from text the client sent (a prompt injection in a fetched page), stays literal.
        return ScrubbedRequest(copy_, by_slot, {p: v for p, v in vault.values.items() if p in given},
                               verdict=verdict(checked=checked, protected=True, replaced=replaced,
                                               let_through=let_through),
                               raw_units=raw_units, held=held, tier=tier, work=work)

    async def _again(self, body: dict[str, Any], session_id: str, policy: ClassPolicy, tier: str, profile: Profile,
                     again: bool) -> ScrubbedRequest:
        """The step scrubbed once more from nothing remembered of the session, its vault having begun a new life
        since (``_stale``); fails closed if it did again meanwhile."""
        if again:
            raise PrivacyUnavailable("the session's vault was erased twice while this step was protected; send it "
                                     "again")
        self._cache.forget(session_id)
        self._seen.forget(session_id)
        return await self._scrub(body, session_id=session_id, policy=policy, tier=tier, profile=profile, again=True)

    async def _for_tiers(self, body: dict[str, Any], session_id: str, who: Who,
                         tiers: Sequence[str]) -> ScrubbedRequest:
        """The body scrubbed for the first of ``tiers`` (the call's targets', in plan order) whose class policy lets
        it go there; scrubbed again only for a tier whose policy scrubs otherwise (an ``allow``). Raises
        ``ClassBlocked`` naming the class that keeps it off the first tier when none may take it."""
        policy = self._policies.of(who)
        scrubbed: dict[str, ScrubbedRequest] = {}
        refused: str | None = None
        for tier in dict.fromkeys(tiers):
            key = policy.scrub_key(tier)
            if key not in scrubbed:
                scrubbed[key] = await self.scrub(body, session_id=session_id, who=who, tier=tier)
            found = policy.refused(tier, scrubbed[key].held)
            if found is None:
                scrubbed[key].tier = tier
                return scrubbed[key]
            refused = refused or found
        raise ClassBlocked(refused or "", tiers)

    async def classes(self, body: dict[str, Any], *, session_id: str, who: Who = ANYONE) -> frozenset[str]:
        """The data classes ``body`` holds (its scrub, cached for the call that may follow; nothing recorded)."""
        try:
            scrubbed = await self.scrub(body, session_id=session_id, who=who)
        except (PrivacyBlocked, SessionStoreUnavailable):
            raise
        except Exception as exc:  # fail closed: a caller that cannot know the classes must not send
            raise PrivacyUnavailable(f"a privacy detector failed ({type(exc).__name__}: {exc})") from exc
        return frozenset(scrubbed.held.counts)

    async def protect(self, body: dict[str, Any], *, session_id: str, request_id: str,
                      experiment: str | None = None, tiers: Sequence[str] = ("standard",),
                      who: Who = ANYONE) -> Protection:
        """``body`` protected for the first of ``tiers`` whose class policy (``who``'s) lets it go there
        (``ClassBlocked`` when none does); ``Protection.permits`` says which other tiers may take it as it is."""
        try:
            scrubbed = await self._for_tiers(body, session_id, who, tiers)
        except (PrivacyBlocked, SessionStoreUnavailable):  # the latter: no vault, no placeholders, a 503
            raise
        except ScanOverBudget as exc:  # nothing leaves: the step stays on the edge, or the client hears a 413
            log.warning("privacy scan over budget for request %s: %s", request_id, exc)
            if self._settings.on_privacy_error == "edge":
                raise PrivacyFailedToEdge(f"{exc}; privacy.on_privacy_error is 'edge'") from exc
            raise
        except Exception as exc:  # any failure: nothing leaves (fail closed)
            reason = exc.reason if isinstance(exc, PrivacyUnavailable) else (  # e.g. session state that won't open
                f"a privacy detector failed ({exc})" if isinstance(exc, DetectionError)
                else f"a privacy detector failed ({type(exc).__name__}: {exc})")
            log.error("privacy protection failed for request %s: %s", request_id, reason)
            if self._settings.on_privacy_error == "edge":
                raise PrivacyFailedToEdge(reason + "; privacy.on_privacy_error is 'edge'") from exc
            raise PrivacyUnavailable(reason) from exc
        on_usage = record = receipts = None
        call_id = ""
        if self._audited is not None:
            data = body_bytes(scrubbed.body)  # the exact bytes the receipts cover and the audit seals
            call_id = self._record(scrubbed, data, session_id, request_id, experiment)
            receipts = self._audited.receipts(call_id=call_id, request_id=request_id, session_id=session_id,
                                              body=scrubbed.body, data=data,
                                              placeholders=placeholder_counts(scrubbed.values),
                                              raw_units=scrubbed.raw_units, verdict=scrubbed.verdict,
                                              classes=scrubbed.held.claims())
            await self._audited.record_exposure(call_id, session_id, scrubbed.body)
            on_usage = _UsageRecorder(self._audited.audit, call_id)
            assert self._hasher is not None
            record = _ToolRestoreRecorder(self._audited.audit, self._hasher, call_id, session_id)
        secrets = _credentials(scrubbed.values)
        tool_secrets = ToolSecrets(secrets, self._settings.restore_secrets_in_tools, record)
        guard = await self._guard(body, scrubbed, call_id, session_id, request_id)
        return PrivacyProtection(scrubbed, policy=self._policies.of(who), on_usage=on_usage,
                                 tool_secrets=tool_secrets, receipts=receipts, guard=guard)

    async def _guard(self, body: dict[str, Any], scrubbed: ScrubbedRequest, call_id: str, session_id: str,
                     request_id: str) -> AnswerGuard | None:
        """The answer's guard (``privacy.guard``), when ``privacy.response_guard`` is on: the call carried the
        client's body, the body that left and the values its placeholders restore."""
        settings = self._settings.response_guard
        if settings.action == "off" or self._inbound is None:
            return None
        _, units = await self.units.matcher(session_id)
        record = None
        if self._audited is not None:
            owner = self._scope_of(session_id) if self._scope_of is not None else ""
            record = _InboundRecorder(self._audited.audit, call_id=call_id, session_id=session_id,
                                      request_id=request_id, owner=owner, action=settings.action)
        carried = Carried([body, scrubbed.body], scrubbed.values.values())
        return AnswerGuard(settings, self._inbound, units, carried, record)

    def _record(self, scrubbed: ScrubbedRequest, data: bytes, session_id: str, request_id: str,
                experiment: str | None) -> str:
        """Enqueue the audit rows; they are built (hashes, sealing) on the writer thread, off the request path."""
        assert self._audit is not None and self._hasher is not None
        call_id = uuid.uuid4().hex
        hasher, sealer, created = self._hasher, self._sealer, time.time()

        def row(a: Applied, location: str) -> dict[str, Any]:  # without the call's id: a set's is reused across calls
            return finding_row(session_id=session_id, type=a.finding.type, layer=a.finding.layer, action=a.action,
                               location=safe_location(location, hasher), value_hash=hasher(a.finding.value),
                               unit_id=a.finding.unit_id, field=a.finding.field, dimension=a.finding.dimension)

        def build() -> Record:
            own, sets = scrubbed.findings(row)
            findings = [{**r, "call_id": call_id} for r in own]
            call = call_row(id=call_id, session_id=session_id, request_id=request_id, experiment=experiment,
                            created_at=created, body=seal_body(sealer, call_id, data),
                            findings=len(findings) + sum(len(s.rows) for s in sets))
            return {"kind": "call", "call": call, "findings": findings, "sets": [[s.id, s] for s in sets]}

        self._audit.submit(build)
        return call_id

    async def register_units(self, session_id: str, document: UnitsDocument) -> list[Unit]:
        if self._audited is None:
            return await self.units.register(session_id, document)
        return await self._audited.register(session_id, document)

    async def session_exposure(self, session_id: str) -> dict[str, Any] | None:
        """The session's per-unit exposure from the audit (``privacy.audit.audited``); None when the audit is off."""
        return None if self._audited is None else await self._audited.session_exposure(session_id)

    async def erase_session(self, session_id: str) -> int | None:
        """The vault and the units in the session store, then the audit's content (``privacy.audit.audited``)."""
        await self._sessions.set(session_id, VAULT_KEY, None)
        await self.units.forget(session_id)
        await self._scrubber.forget(session_id)
        self._cache.forget(session_id)
        self._seen.forget(session_id)
        if self._last_check is not None:
            self._last_check.forget(session_id)
        return None if self._audited is None else await self._audited.erase(session_id)

    async def read_audit(self, read: Callable[..., T], *args: Any) -> T | None:
        """The dashboard's reads of the audit (``privacy.audit.audited``); None when the audit is off."""
        return None if self._audited is None else await self._audited.read_audit(read, *args)

    def load_models(self) -> None:
        self._scrubber.warm()
        self._models_pid = os.getpid()

    def models_loaded_in(self) -> int | None:
        return self._models_pid

    async def start(self) -> None:
        # Detection runs on worker threads that hold the GIL (regexes, jieba, spaCy): the event loop, serving
        # everyone else's small requests, gets it back within the switch interval — 1 ms here, not CPython's 5, so
        # one tenant's heavy scan costs another's small request ~15 ms instead of ~60 (benchmarks.victim). The
        # interval is the process's: put back at ``aclose``.
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, _SWITCH_INTERVAL_S))
        if self._settings.warm_at_start and self._models_pid is None:  # a first request must not pay seconds of
            await asyncio.to_thread(self.load_models)                      # model and dictionary loading
        if self._audited is not None:
            await self._audited.start()

    def cached_bytes(self) -> dict[str, int]:
        """What the per-session caches hold now, estimated (``privacy.cache_mb`` bounds each at half)."""
        return {"results": self._cache.weight, "seen": self._seen.weight}

    def flush(self) -> None:
        if self._audited is not None:
            self._audited.flush()

    async def aclose(self) -> None:
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None
        if self._audited is not None:
            await self._audited.aclose()

    def exposition(self) -> bytes:
        return self.metrics.exposition() if self.metrics is not None else b""


class _Scrubbing:
    """One top-level part of the body being scrubbed: reused (``seen``) or walked now (``walked``, its slots' results
    gathered into ``first`` and ``rest`` as ``SeenPart`` keeps them)."""

    def __init__(self, key: str, prefix: str, value: Any, seen_key: SeenKey | None, *, seen: SeenPart | None = None,
                 walked: Part | None = None) -> None:
        self.key, self.prefix, self.value, self.seen_key = key, prefix, value, seen_key
        self.seen, self.walked = seen, walked
        self.first: list[tuple[str, ScrubResult]] = []
        self.rest: list[tuple[str, ScrubResult]] = []

    def findings(self, first: bool) -> list[SlotFindings]:
        if self.seen is not None:
            return self.seen.findings(self.prefix, first)
        return [(self.prefix + suffix, result.applied, result.audit_sets)
                for suffix, result in (self.first if first else self.rest) if result.applied]

    def remembered(self) -> SeenPart:
        """What the part became, to be reused (a copy: the body that leaves may be changed on its way out)."""
        assert self.walked is not None
        held = Held()
        for _, result in (*self.first, *self.rest):
            if result.applied:
                held.merge(result.held)
        return SeenPart(copy_json(self.value), tuple(self.first), tuple(self.rest),
                        tuple(where[len(self.prefix):] for where in self.walked.binary),
                        frozenset(p for _, result in (*self.first, *self.rest) if result.given
                                  for p in result.given),
                        held, frozenset(a.finding.value for _, result in (*self.first, *self.rest)
                                        for a in result.applied if a.action == "audit"))


def _life(vault: Vault) -> str:
    """The life of the session's vault (``Vault.epoch``) as the store holds it; "-" while it has none."""
    return vault.epoch if vault.stored or vault.changed else "-"


def _stale(life: str, vault: Vault, reused: int) -> bool:
    """Whether results remembered under ``life`` were reused against another life of the vault (the session was
    erased, here or by another worker, and begun again): their placeholders are not this vault's. Under "-" they
    hold none, so they hold in any."""
    return bool(reused) and life != "-" and _life(vault) != life


def _half_mb(settings: PrivacySettings) -> int:
    """Each of the two per-session caches' share of ``privacy.cache_mb``, in bytes."""
    return settings.cache_mb * (1 << 20) // 2


def _credentials(placeholders: Iterable[str]) -> frozenset[str]:
    """The placeholders that stand for a credential or key (a long session's call carries hundreds, the same ones
    at every step: each is read once, ``_credential``)."""
    return frozenset(filter(_credential, placeholders))


@functools.lru_cache(maxsize=1 << 16)
def _credential(placeholder: str) -> bool:
    """Whether ``[TYPE_NNN]`` stands for a credential. Remembered per placeholder — placeholders only, never values
    (the same memo as the restorer's shapes, ``privacy.restore``)."""
    return is_credential_type(placeholder[1:].rsplit("_", 1)[0])


class _UsageRecorder:
    def __init__(self, audit: AuditWriter, call_id: str) -> None:
        self._audit = audit
        self._call_id = call_id

    def __call__(self, usage: dict[str, Any]) -> None:
        record = {"kind": "usage", "call_id": self._call_id, "usage": dict(usage)}
        self._audit.submit(lambda: record)


class _ToolRestoreRecorder:
    """Audits a credential's placeholder restored into (or, with ``deny``, left in) a tool call's arguments: which
    tool, which type, the keyed hash — never the value."""

    def __init__(self, audit: AuditWriter, hasher: Hasher, call_id: str, session_id: str) -> None:
        self._audit, self._hasher = audit, hasher
        self._call_id, self._session_id = call_id, session_id

    def __call__(self, tool: str, type_: str, value: str, restored: bool) -> None:
        row = finding_row(call_id=self._call_id, session_id=self._session_id, type=type_, layer="restore",
                          action="restored_into_tool" if restored else "withheld_from_tool",
                          location=f"tool_calls[{tool}].arguments", value_hash=self._hasher(value), unit_id=None,
                          field=None, dimension=None)
        record = {"kind": "tool_restore", "findings": [row]}
        self._audit.submit(lambda: record)


class _InboundRecorder:
    """Audits what an answer carried that its call never did (``privacy.audit.inbound``): one record per call."""

    def __init__(self, audit: AuditWriter, *, call_id: str, session_id: str, request_id: str, owner: str,
                 action: str) -> None:
        self._audit = audit
        self._fields = {"call_id": call_id, "session_id": session_id, "request_id": request_id, "owner": owner,
                        "action": action}

    def __call__(self, found: list[Found]) -> None:
        record = inbound_record(**self._fields, created_at=time.time(), found=found)
        self._audit.submit(lambda: record)
