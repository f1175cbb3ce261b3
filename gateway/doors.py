"""The two ways out of the gateway. ``Doors`` alone holds the upstreams — the edge pool and the cloud targets — and
hands out channels over them, so the cloud is never reachable except through a ``CloudChannel`` (protect →
upstream → restore → meter), and every cloud transport only behind the provider boundary (``ProviderBoundary``: it
gets ``ProviderRequest`` objects built by the one allowlist, never a client's body). This is the only module that
imports the cloud transport (``make lint`` checks it)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from accounting.calls import Meter
from gateway.fleet.cloud_targets import CloudTargets
from gateway.fleet.edge_pool import EdgePool
from gateway.fleet.fixed import Fixed
from gateway.settings import CloudSettings, Settings
from gateway.upstreams.boundary import DroppedFields, ProviderBoundary
from gateway.upstreams.provider_request import ProviderTransport, RequestShape
from privacy import Protector
from router.budgets.limits import NO_SPEND, Spend
from router.channels import CloudChannel, EdgeChannel
from router.context import CallContext, RouteTracker
from router.fleet import Call, Pool, Upstream

log = logging.getLogger("ecgw")


class ManagedUpstream(Upstream, Protocol):
    async def ready(self) -> tuple[bool, str]: ...


class ManagedPool(Pool, Protocol):
    """A pool with a lifecycle and a face for ``/readyz`` and ``/metrics``."""

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    async def ready(self) -> tuple[bool, str]: ...

    def status(self) -> dict[str, dict[str, object]]: ...

    def exposition(self) -> bytes: ...


def cloud_targets(settings: CloudSettings, transport: Callable[[CloudSettings], ProviderTransport],
                  dropped: DroppedFields) -> CloudTargets:
    """Every configured target behind its own allowlist; the pool's allowlist (what protection scans) is their
    union, and counts what none of them takes."""
    named = settings.named_targets()
    union = sorted({f for target in named.values() for f in target.extra_body_fields})

    def behind_boundary(one: CloudSettings) -> ProviderBoundary:
        return ProviderBoundary(transport(one), RequestShape(one.extra_body_fields))

    return CloudTargets.from_settings(settings, behind_boundary, shape=RequestShape(union, on_drop=dropped))


class Doors:
    def __init__(self, *, edge: ManagedPool, cloud: CloudTargets, meter: Meter, protector: Protector,
                 dropped: DroppedFields, edge_dropped: DroppedFields | None = None) -> None:
        self._edge = edge
        self._cloud = cloud
        self._meter = meter
        self._protector = protector
        self.dropped = dropped  # the fields the boundary kept off the cloud (``/metrics``)
        self.edge_dropped = edge_dropped or DroppedFields(side="edge")  # and those the edge transport kept off
        self.edge_model = edge.model
        self.cloud_model = cloud.model

    @classmethod
    def build(cls, settings: Settings, *, meter: Meter, protector: Protector, edge: ManagedUpstream | None = None,
              cloud: ProviderTransport | None = None,
              cloud_transport: Callable[[CloudSettings], ProviderTransport] | None = None) -> Doors:
        """The configured pools (litellm for every cloud target, imported here: once, and nowhere else), or the
        upstreams given (tests, benchmarks): ``edge`` as a pool of one, ``cloud`` as the transport of every target,
        ``cloud_transport`` building each target's transport from its settings (tests wrap litellm's in a guard).
        Built from one settings snapshot, so a reload can build new doors and swap them in."""
        dropped, edge_dropped = DroppedFields(), DroppedFields(side="edge")
        edge_pool: ManagedPool = (EdgePool.from_settings(settings.edge, on_drop=edge_dropped) if edge is None else
                                  Fixed(edge, salted=settings.edge.compat.cache_salt))
        if cloud is not None:
            given = cloud
            cloud_transport = lambda _: given  # noqa: E731 - every target is the one transport given
        elif cloud_transport is None:
            from gateway.upstreams.cloud import LiteLLMUpstream

            cloud_transport = LiteLLMUpstream
        return cls(edge=edge_pool, cloud=cloud_targets(settings.cloud, cloud_transport, dropped), meter=meter,
                   protector=protector, dropped=dropped, edge_dropped=edge_dropped)

    def exposition(self) -> bytes:
        """The boundary's metrics (fields kept off each side's calls), and each pool member's health."""
        return (self.dropped.exposition() + self.edge_dropped.exposition() + self._edge.exposition()
                + self._cloud.exposition())

    def edge(self, context: CallContext, route: RouteTracker, spend: Spend = NO_SPEND) -> EdgeChannel:
        return EdgeChannel(self._edge, self._meter, context, route, Call(context.session_id, context.owner), spend)

    def cloud(self, context: CallContext, route: RouteTracker, spend: Spend = NO_SPEND, *,
              target: str | None = None) -> CloudChannel:
        """The cloud door; ``target``: the configured target a policy or an arm named (None: the default)."""
        return CloudChannel(self._cloud, self._meter, context, route, Call(context.session_id, context.owner, target),
                            self._protector, spend)

    async def start(self) -> None:
        for pool in (self._edge, self._cloud):
            await pool.start()

    async def ready(self) -> dict[str, tuple[bool, str]]:
        return {"edge": await self._edge.ready(), "cloud": await self._cloud.ready()}

    def deployments(self) -> dict[str, dict[str, dict[str, object]]]:
        """Each pool's members as ``/readyz`` shows them (none for a pool of one)."""
        return {side: status for side, pool in (("edge", self._edge), ("cloud", self._cloud))
                if (status := pool.status())}

    async def aclose(self) -> None:
        for pool in (self._edge, self._cloud):
            try:
                await pool.aclose()
            except Exception:  # one pool failing to close must not keep the other open
                log.exception("closing the %s upstreams failed", pool.side)
