"""The two ways out of the gateway. ``Doors`` alone holds the upstreams (the edge pool, the cloud targets) and
hands out channels over them, so the cloud is never reachable except through a ``CloudChannel`` (protect →
upstream → restore → meter). This is the only module that imports the cloud transport (``make lint`` checks it)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from accounting.calls import Meter
from gateway.fleet.cloud_targets import CloudTargets
from gateway.fleet.edge_pool import EdgePool
from gateway.fleet.fixed import Fixed
from gateway.settings import CloudSettings, Settings
from privacy.protection import Protector
from router.channels import CloudChannel, EdgeChannel, Upstream
from router.fleet import Call, Pool
from router.step import CallContext, RouteTracker

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


class Doors:
    def __init__(self, *, edge: ManagedPool, cloud: ManagedPool, meter: Meter, protector: Protector) -> None:
        self._edge = edge
        self._cloud = cloud
        self._meter = meter
        self._protector = protector
        self.edge_model = edge.model
        self.cloud_model = cloud.model

    @classmethod
    def build(cls, settings: Settings, *, meter: Meter, protector: Protector, edge: ManagedUpstream | None = None,
              cloud: ManagedUpstream | None = None,
              cloud_transport: Callable[[CloudSettings], ManagedUpstream] | None = None) -> Doors:
        """The configured pools (litellm for every cloud target, imported here: once, and nowhere else), or the
        upstreams given (tests, benchmarks), each as a pool of one. ``cloud_transport`` builds one target's
        transport from its settings (tests wrap litellm's in a guard)."""
        edge_pool: ManagedPool = (EdgePool.from_settings(settings.edge) if edge is None else
                                  Fixed(edge, salted=settings.edge.compat.cache_salt))
        if cloud is not None:
            return cls(edge=edge_pool, cloud=Fixed(cloud), meter=meter, protector=protector)
        if cloud_transport is None:
            from gateway.upstreams.cloud import LiteLLMUpstream

            cloud_transport = LiteLLMUpstream
        return cls(edge=edge_pool, cloud=CloudTargets.from_settings(settings.cloud, cloud_transport), meter=meter,
                   protector=protector)

    def edge(self, context: CallContext, route: RouteTracker) -> EdgeChannel:
        return EdgeChannel(self._edge, self._meter, context, route, Call(context.session_id, context.owner))

    def cloud(self, context: CallContext, route: RouteTracker, *, target: str | None = None) -> CloudChannel:
        """The cloud door; ``target``: the configured target a policy or an arm named (None: the default)."""
        return CloudChannel(self._cloud, self._meter, context, route,
                            Call(context.session_id, context.owner, target), self._protector)

    async def start(self) -> None:
        for pool in (self._edge, self._cloud):
            await pool.start()

    async def ready(self) -> dict[str, tuple[bool, str]]:
        return {"edge": await self._edge.ready(), "cloud": await self._cloud.ready()}

    def deployments(self) -> dict[str, dict[str, dict[str, object]]]:
        """Each pool's members as ``/readyz`` shows them (empty for a pool of one)."""
        return {side: status for side, pool in (("edge", self._edge), ("cloud", self._cloud))
                if (status := pool.status())}

    def exposition(self) -> bytes:
        return self._edge.exposition() + self._cloud.exposition()

    async def aclose(self) -> None:
        for pool in (self._edge, self._cloud):
            try:
                await pool.aclose()
            except Exception:  # one pool failing to close must not keep the other open
                log.exception("closing the %s upstreams failed", pool.side)
