"""The gateway's parts, built once from settings and shared by every request."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from accounting.calls import Meter
from gateway.doors import Doors
from gateway.policy_choice import PolicyChooser
from gateway.settings import Settings
from gateway.tenancy import Tenancy
from gateway.tracing import NoTracing, SessionHasher, Tracing
from privacy import Protector
from privacy.session_store import SessionStore
from router.budgets.limits import Budgets
from router.policy import PolicyRegistry

log = logging.getLogger("ecgw")


@dataclass
class Services:
    """Everything a request needs. The upstreams are not among them: only ``doors`` holds them, and it hands
    out channels, so the cloud is reachable only through ``CloudChannel``."""

    settings: Settings
    doors: Doors
    policies: PolicyRegistry
    chooser: PolicyChooser
    protector: Protector
    meter: Meter
    sessions: SessionStore
    tenancy: Tenancy
    session_hash: SessionHasher  # the session as logs and spans carry it
    tracing: Tracing = field(default_factory=NoTracing)
    budgets: Budgets | None = None  # None: no limits configured

    async def start(self) -> None:
        """Start background parts (the meter's writer, …) that need the running event loop."""
        await self.sessions.verify()  # an encrypted store: the key opens it
        await self.meter.start()
        await self.protector.start()

    async def aclose(self) -> None:
        """Flush and close, in the order that loses nothing: upstreams first, then the meter."""
        parts: tuple[Doors | Protector | Meter | SessionStore, ...] = (self.doors, self.protector, self.meter,
                                                                        self.sessions)
        for part in parts:
            try:
                await part.aclose()
            except Exception:  # one part failing to close must not keep the meter from flushing
                log.exception("closing %s failed", type(part).__name__)
        self.tracing.shutdown()  # exports the spans still batched
