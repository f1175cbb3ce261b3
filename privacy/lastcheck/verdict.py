"""Settle what the last check found: pseudonymise (or mask) a hit where it stands, or keep the step off the cloud.

Called by ``PrivacyProtector`` inside the protected path, after the earlier layers and before the body may leave,
with the session's vault so placeholders stay stable. A type whose action is ``audit`` was let through on purpose
and is left alone; ``block``, or a hit only an encoding or a split reveals, means the step does not leave.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from privacy.classes.policy import Decision, Held
from privacy.detect import UNMETERED, Checkpoint, Finding, UnitMatcher
from privacy.errors import PrivacyBlocked
from privacy.lastcheck.place import place
from privacy.lastcheck.scan import EgressCheck, EgressHit
from privacy.metrics import PrivacyMetrics
from privacy.scrubber import Applied
from privacy.settings import Action
from privacy.vault import Vault

log = logging.getLogger("ecgw.privacy")


@dataclass
class Settled:
    """What the last check did to one body: the body to send, the findings it replaced (with where), the
    placeholders it handed out (restore gives those back), the hits to count once the store kept this run, and
    what it let leave raw on purpose (an ``audit`` action: the listed units by id, and whether anything was) —
    the verdict an egress receipt states."""

    body: dict[str, Any]
    done: list[tuple[str, Applied]] = field(default_factory=list)
    given: set[str] = field(default_factory=set)
    hits: list[tuple[str, str, str]] = field(default_factory=list)  # (type, how, action)
    raw_units: set[str] = field(default_factory=set)
    let_through: bool = False
    held: Held = field(default_factory=Held)  # what it found by data class (replaced, or let through raw)


class LastCheck:
    def __init__(self, check: EgressCheck, metrics: PrivacyMetrics) -> None:
        self._check = check
        self._metrics = metrics

    def forget(self, session_id: str) -> None:
        """An erased session (``EgressCheck.forget``)."""
        self._check.forget(session_id)

    def settle(self, body: dict[str, Any], units: UnitMatcher | None, vault: Vault, *,
               decide: Callable[[Finding], Decision], units_version: str = "-", session_id: str = "", owner: str = "",
               audited: set[str] | frozenset[str] = frozenset(), meter: Checkpoint = UNMETERED) -> Settled:
        """The body with every placeable hit replaced. ``audited``: values an earlier layer let through on purpose
        (action ``audit``), left alone whatever type this check gives them, and so is a hit lying inside one (a
        phone's digits read by another detector inside an audited phone: replacing them would alter what the
        operator chose to send as it is); a hit that contains an audited value and more is another value. ``meter``: the request's
        scan budget. Raises ``PrivacyBlocked``, or ``ScanOverBudget``. Free of side
        effects but the vault's (an atomic store may run it more than once): ``count`` the result once it is kept.
        ``decide``: each hit's action and class on the call's tier (``ClassPolicy.decide``), so that a class the
        tier may not receive counts wherever the check found it, decoded or split forms included."""
        scan = self._check.read(body, units, vault, units_version=units_version, session_id=session_id,
                                owner=owner, meter=meter)
        hits = scan.hits
        if not hits:
            return Settled(body)
        settled = Settled(body)
        blocked: list[EgressHit] = []
        chosen: list[tuple[EgressHit, Decision]] = []
        placeholders = _Placeholders(vault)
        confirmed: set[str] = set()
        let_through = "\0".join(audited)  # one substring search per hit, whatever the number of audited values
        for hit in sorted(hits, key=lambda h: -len(h.finding.value)):
            decision = decide(hit.finding)
            action = decision.action
            if action == "audit" or (hit.finding.value and hit.finding.value in let_through):
                if not (hit.finding.value and hit.finding.value in let_through):
                    settled.held.add(decision)  # raw, and no earlier layer counted it
                settled.let_through = True
                if hit.finding.unit_id:
                    settled.raw_units.add(hit.finding.unit_id)
                continue
            if action == "block" or not hit.placeable or not hit.finding.value:
                blocked.append(hit)
                continue
            placeholders.want(hit.finding, action)
            if confirmed_value(hit.finding, decision):
                confirmed.add(hit.finding.value)
            chosen.append((hit, decision))
        placed = None
        if chosen and not blocked:  # a copy: ``body`` stays as scanned, since an atomic store may run this again
            placed = place(body, placeholders, scan.text, heuristic=frozenset(placeholders.wanted - confirmed))
            stuck = {raw: where for raw, where in placed.kept.items() if raw in confirmed}
            blocked += [replace(hit, path=stuck[hit.finding.value]) for hit, _ in chosen
                        if hit.finding.value in stuck]
        if blocked:
            for hit in blocked:
                self._metrics.egress_hits.labels(hit.finding.type, hit.how, "block").inc()
            where = ", ".join(sorted({f"{h.finding.type} at {h.path} ({h.how})" for h in blocked})[:5])
            log.warning("last check kept a step off the cloud: %s", where)
            raise PrivacyBlocked(f"the last check on the outgoing body found {where} that cannot be replaced "
                                 "where it stands (a placeholder in a key, a tool's name or a structural field "
                                 "would break the request); the step stays on the edge")
        if placed is not None:
            settled.body = placed.body
            settled.given = set(placeholders.given)
            for hit, decision in chosen:
                finding = hit.finding
                if finding.value not in placed.placed or hit.path.endswith("{key}"):
                    continue  # it stood only in the structure (a heuristic value named like a key): left as it is
                settled.held.add(decision)
                settled.hits.append((finding.type, hit.how, decision.action))
                settled.done.append((hit.path, Applied(replace(finding, layer="egress", location=""),
                                                       decision.action)))
        return settled

    def count(self, settled: Settled) -> None:
        for type_, how, action in settled.hits:
            self._metrics.egress_hits.labels(type_, how, action).inc()


def confirmed_value(finding: Finding, decision: Decision) -> bool:
    """Whether a value is known private wherever it stands, not only where a detector read it from the words around
    it: one the last check's own detectors found (listed units, secrets, patterns, labelled values), a listed unit
    or a secret the vault holds, or one of a class the call's tier may not receive. Such a value standing in a key,
    a tool's name or a structural field keeps the step on the edge. Any other vault value (a person, a place or a
    handle the real-text families read in a sentence) may name a key by chance (``name``, ``file``, ``Bash``): it is
    replaced in the body's text and left where it names structure."""
    return (finding.layer != "vault" or finding.key.startswith("unit:") or decision.data_class in ("secrets", "listed")
            or decision.kept_off)


class _Placeholders(Mapping[str, str]):
    """raw value → what replaces it (its vault placeholder, or its type's mask), taken from the vault only when
    ``place`` writes it: a value that stands only in the body's structure gets no placeholder."""

    def __init__(self, vault: Vault) -> None:
        self._vault = vault
        self._findings: dict[str, tuple[Finding, Action]] = {}
        self._made: dict[str, str] = {}
        self.given: set[str] = set()  # placeholders handed out (restore gives those back)

    @property
    def wanted(self) -> set[str]:
        return set(self._findings)

    def want(self, finding: Finding, action: Action) -> None:
        self._findings.setdefault(finding.value, (finding, action))

    def __getitem__(self, raw: str) -> str:
        made = self._made.get(raw)
        if made is None:
            finding, action = self._findings[raw]
            if action == "pseudonymise":
                made = self._vault.placeholder(finding.type, finding.key, finding.value)
                self.given.add(made)
            else:
                made = f"[{finding.type}]"
            self._made[raw] = made
        return made

    def __contains__(self, raw: object) -> bool:
        return raw in self._findings

    def __iter__(self) -> Iterator[str]:
        return iter(self._findings)

    def __len__(self) -> int:
        return len(self._findings)
