"""Settle what the last check found: pseudonymise (or mask) a hit where it stands, or keep the step off the cloud.

Called by ``PrivacyProtector`` inside the protected path, after the earlier layers and before the body may leave,
with the session's vault so placeholders stay stable. A type whose action is ``audit`` was let through on purpose
and is left alone; ``block``, or a hit only an encoding or a split reveals, means the step does not leave.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from privacy.egress import EgressCheck, EgressHit, place
from privacy.errors import PrivacyBlocked
from privacy.findings import Finding
from privacy.metrics import PrivacyMetrics
from privacy.scrubber import Applied
from privacy.settings import Action
from privacy.units import UnitMatcher
from privacy.vault import Vault

log = logging.getLogger("ecgw.privacy")


class LastCheck:
    def __init__(self, check: EgressCheck, actions: Callable[[Finding], Action], metrics: PrivacyMetrics) -> None:
        self._check = check
        self._actions = actions
        self._metrics = metrics

    def settle(self, body: dict[str, Any], units: UnitMatcher | None, vault: Vault, *, units_version: str = "-",
               session_id: str = "", audited: set[str] | frozenset[str] = frozenset(),
               ) -> tuple[dict[str, Any], list[tuple[str, Applied]]]:
        """The body with every placeable hit replaced, and what was done where. ``audited``: values an earlier
        layer let through on purpose (action ``audit``), left alone whatever type this check gives them. Raises
        ``PrivacyBlocked``."""
        hits = self._check.scan(body, units, vault, units_version=units_version, session_id=session_id)
        if not hits:
            return body, []
        done: list[tuple[str, Applied]] = []
        blocked: list[EgressHit] = []
        replaced: dict[str, str] = {}
        for hit in sorted(hits, key=lambda h: -len(h.finding.value)):
            action = self._actions(hit.finding)
            if action == "audit" or any(a in hit.finding.value or hit.finding.value in a for a in audited):
                continue
            if action == "block" or not hit.placeable or not hit.finding.value:
                blocked.append(hit)
                continue
            finding = hit.finding
            if finding.value not in replaced:
                replaced[finding.value] = (vault.placeholder(finding.type, finding.key, finding.value)
                                           if action == "pseudonymise" else f"[{finding.type}]")
            self._metrics.egress_hits.labels(finding.type, hit.how, action).inc()
            done.append((hit.path, Applied(replace(finding, layer="egress", location=""), action)))
        if blocked:
            for hit in blocked:
                self._metrics.egress_hits.labels(hit.finding.type, hit.how, "block").inc()
            where = ", ".join(sorted({f"{h.finding.type} at {h.path} ({h.how})" for h in blocked})[:5])
            log.warning("last check kept a step off the cloud: %s", where)
            raise PrivacyBlocked(f"the last check on the outgoing body found {where} that cannot be replaced "
                                 "where it stands; the step stays on the edge")
        # A copy: ``body`` stays as scanned (the caller compares the two, and an atomic store may run this again).
        return (place(copy.deepcopy(body), list(replaced.items())) if replaced else body), done
