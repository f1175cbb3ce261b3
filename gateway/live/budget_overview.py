"""Spend against every budget across keys and arms, for an operator: the dashboard's budgets panel (the live
counters, as ``GET /v1/budget`` reads them) and ``ecgw usage --budgets`` (the metering database, the truth the
counters are seeded from). A key is shown by its label, never a bare key's secret."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.live.limits import key_name
from gateway.state.tenancy import Identity
from router.budgets.limits import Budgets

COLUMNS = ("scope", "name", "kind", "window", "amount", "spent", "left", "resets_at")


async def budget_overview(budgets: Budgets, keys: Sequence[Identity]) -> list[dict[str, Any]]:
    """One row per budget and rate limit of every configured key (its own or ``default_key``) and every limited
    arm: ``scope``, ``name``, ``kind``, ``window``, ``amount``, ``spent``, ``left``, ``resets_at``. Raises
    ``BudgetUnavailable`` when the counters cannot be read."""
    rows: list[dict[str, Any]] = []
    for identity in keys or [Identity()]:  # no keys configured: the one anonymous caller
        scopes = budgets.scopes(key_name=key_name(identity), key_label=identity.label, session_id=None,
                                key_limits=identity.limits)
        for row in await budgets.report(scopes, None):
            rows.append({"scope": "key", **row, "name": identity.label or "anonymous"})
    for row in await budgets.report(budgets.arm_scopes(), None):
        rows.append({"scope": "arm", **row})
    return rows
