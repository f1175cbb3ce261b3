"""What every upstream call of one client request carries: who to attribute it to (``CallContext``) and which sides
the request used (``RouteTracker``). Its own module so the channels and the step both depend on it, not on each
other."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field

from privacy.classes.names import ANYONE, Who


@dataclass(frozen=True)
class CallContext:
    """Attribution carried by every upstream call of one client request."""

    request_id: str
    session_id: str
    policy: str
    experiment: str | None = None
    arm: str | None = None
    owner: str | None = None  # the tenant (a keyed hash; None in single-tenant mode): the edge's cache salt
    key_label: str | None = None  # the API key's label (never a secret): metering rows name it for key budgets
    who: Who = ANYONE  # the key and tenant by name: whose privacy rules apply (``privacy.keys``, ``.tenants``)


@dataclass
class RouteTracker:
    """Which sides a step used (the ``x-ecgw-route`` header), which deployment or target of each answered last
    (``x-ecgw-edge-deployment``, ``x-ecgw-cloud-target``), the ones that failed on the way, and the egress receipt
    of every body handed to a cloud target (``x-ecgw-egress-receipt``)."""

    sides: set[str] = field(default_factory=set)
    answered: dict[str, str] = field(default_factory=dict)  # side -> member name
    tried: dict[str, list[str]] = field(default_factory=dict)  # side -> "name:status" per failed attempt
    stopped: list[str] = field(default_factory=list)  # why the cloud door did not make a call (router.stops)
    kept_off_classes: list[str] = field(default_factory=list)  # the data class that kept each such call off the
    # cloud (privacy.classes: no target of the call's tiers may receive it)
    receipts: list[str] = field(default_factory=list)
    # Each receipt's audit record on its way into the journal (started as its body is handed over, so it overlaps
    # the upstream call): ``receipts_durable`` awaits them before the headers that carry the receipts leave.
    journaling: list[asyncio.Future[None]] = field(default_factory=list)

    def used(self, side: str) -> None:
        self.sides.add(side)

    def answered_by(self, side: str, name: str) -> None:
        self.answered[side] = name

    def stopped_by(self, reason: str) -> None:
        self.stopped.append(reason)

    def kept_off(self, data_class: str) -> None:
        self.kept_off_classes.append(data_class)

    def failed(self, side: str, name: str, status: int) -> None:
        self.tried.setdefault(side, []).append(f"{name}:{status}")

    def issued(self, receipt: str, journaled: Awaitable[None]) -> None:
        """A receipt for the headers, with what journals its record (started now, in the background)."""
        self.receipts.append(receipt)
        self.journaling.append(asyncio.ensure_future(journaled))

    async def receipts_durable(self) -> None:
        """Every receipt issued so far has its audit record journaled: a response may carry them now."""
        while self.journaling:
            await self.journaling.pop(0)

    def chain(self, side: str) -> str | None:
        """The members a side tried, in order, ending with the one that answered: ``primary:429>backup``."""
        tried = self.tried.get(side)
        if not tried:
            return None
        answered = self.answered.get(side)
        return ">".join(tried + ([answered] if answered else []))

    @property
    def route(self) -> str:
        if self.sides == {"edge"}:
            return "edge"
        if self.sides == {"cloud"}:
            return "cloud"
        if not self.sides:
            return "none"
        return "mixed"
