"""A cost target's feedback: each cloud call of a step under ``target_cost_per_session`` adds what it cost (priced
as metering prices it) to its policy's and arm's tracker (``router.targets``), so the controller learns what a
cloud decision costs and how far the sessions are from the target.

It wraps the step's ``Spend`` (the budgets the channels already settle every call with): the same call, after the
upstream answered, is what a budget and a target both count. A step no policy marked (``note_cost_target``) costs
nothing extra.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from accounting.calls import UpstreamCall
from privacy.session_store import SessionStoreUnavailable
from router.budgets.ledger import Hold
from router.budgets.limits import Spend
from router.step import DecisionNote
from router.targets import COST_KNOB, TargetTracker

log = logging.getLogger("ecgw.router")

CallCost = Callable[[UpstreamCall], float]  # a cloud call's USD, as metering records it


@dataclass(frozen=True)
class TargetCosts:
    """``Spend`` for one step: the inner budgets first, then, for a cloud call of a step under a cost target, its
    cost to the tracker."""

    inner: Spend
    note: DecisionNote
    tracker: TargetTracker
    cost: CallCost
    policy: str = field(kw_only=True)
    arm: str | None = field(kw_only=True)

    async def reserve(self, side: str, body: Mapping[str, Any], model: str) -> Hold | None:
        return await self.inner.reserve(side, body, model)

    async def settle(self, hold: Hold | None, call: UpstreamCall) -> None:
        await self.inner.settle(hold, call)
        if call.side != "cloud" or self.note.signal.get(COST_KNOB) is None:
            return
        try:
            await self.tracker.spent(self.policy, self.arm, self.cost(call))
        except SessionStoreUnavailable as exc:  # the answer stands; the controller misses one cost
            log.warning("request %s: the cost of its cloud call did not reach the %s target (%s)",
                        call.request_id, self.policy, exc)
