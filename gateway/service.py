"""The gateway's parts, built once from settings and shared by every request."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from accounting.calls import Meter
from gateway.admin.database import AdminDatabase
from gateway.admin.virtual_keys import VirtualKeys
from gateway.config.settings import Settings
from gateway.egress.doors import Doors, doors_of
from gateway.learning.shadow import Shadows
from gateway.live.limits import limiting_of
from gateway.live.policy_choice import PolicyChooser
from gateway.live.reload import Reloader
from gateway.live.snapshot import Configuration
from gateway.state.tenancy import Tenancy
from gateway.telemetry.tracing import NoTracing, SessionHasher, Tracing
from privacy import Protector
from privacy.session_store import SessionStore
from router.budgets.limits import Budgets
from router.policy import PolicyRegistry
from router.target_costs import CallCost

log = logging.getLogger("ecgw")


@dataclass
class Services:
    """Everything a request needs. The upstreams are not among them: only ``doors`` holds them, and it hands
    out channels, so the cloud is reachable only through ``CloudChannel``. What a reload may change (settings,
    policies, the chooser, the keys, the doors with their pools, privacy rules and prices, the budgets and rate
    limits, the learning knobs) comes from the configuration's snapshot: inside a request, the one it started with
    (``gateway.live.snapshot``). ``protector`` is the process's own (its audit, its units routes); each snapshot's doors
    hold it under that snapshot's rules."""

    config: Configuration
    protector: Protector
    meter: Meter
    sessions: SessionStore
    session_hash: SessionHasher  # the session as logs and spans carry it
    reloader: Reloader
    admin_db: AdminDatabase
    virtual_keys: VirtualKeys
    dashboard_key: bytes = field(repr=False)  # signs the dashboard's sign-in sessions (from the secrets key)
    shadows: Shadows  # shadow calls (learning.shadow_rate)
    tracing: Tracing = field(default_factory=NoTracing)

    @property
    def doors(self) -> Doors:
        return doors_of(self.config.current())

    @property
    def settings(self) -> Settings:
        return self.config.current().settings

    @property
    def policies(self) -> PolicyRegistry:
        return self.config.current().policies

    @property
    def chooser(self) -> PolicyChooser:
        return self.config.current().chooser

    @property
    def tenancy(self) -> Tenancy:
        return self.config.current().tenancy

    @property
    def budgets(self) -> Budgets:
        return limiting_of(self.config.current()).budgets

    @property
    def call_cost(self) -> CallCost:
        """A cloud call's USD as metering prices it (a cost target's feedback), at the snapshot's prices."""
        return limiting_of(self.config.current()).call_cost

    async def start(self) -> None:
        """Start background parts (the meter's writer, …) that need the running event loop."""
        await self.sessions.verify()  # an encrypted store: the key opens it
        await self.reloader.start()
        await self.virtual_keys.start()
        await self.config.start()  # the doors: the edge pool's health checks
        await self.meter.start()
        await self.protector.start()

    async def aclose(self) -> None:
        """Flush and close, in the order that loses nothing: upstreams first, then the meter."""
        await self.reloader.aclose()
        await self.virtual_keys.aclose()
        await self.shadows.aclose()  # before the doors close and the meter flushes: their records are written
        try:
            await self.config.aclose()  # the doors of every snapshot: the upstreams first
        except Exception:
            log.exception("closing the upstreams failed")
        parts: tuple[Protector | Meter | SessionStore, ...] = (self.protector, self.meter, self.sessions)
        for part in parts:
            try:
                await part.aclose()
            except Exception:  # one part failing to close must not keep the meter from flushing
                log.exception("closing %s failed", type(part).__name__)
        self.tracing.shutdown()  # exports the spans still batched
