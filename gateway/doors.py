"""The two ways out of the gateway. ``Doors`` alone holds the upstreams and hands out channels over them, so the
cloud upstream is never reachable except through a ``CloudChannel`` (protect → upstream → restore → meter).
This is the only module that imports the cloud transport (``make lint`` checks it)."""

from __future__ import annotations

import logging
from typing import Protocol

from accounting.calls import Meter
from gateway.settings import Settings
from gateway.upstreams.openai_http import OpenAIHTTPUpstream
from privacy.protection import Protector
from router.budgets.limits import NO_SPEND, Spend
from router.channels import CloudChannel, EdgeChannel, Upstream
from router.step import CallContext, RouteTracker

log = logging.getLogger("ecgw")


class ManagedUpstream(Upstream, Protocol):
    async def ready(self) -> tuple[bool, str]: ...


class Doors:
    def __init__(self, *, edge: ManagedUpstream, cloud: ManagedUpstream, meter: Meter, protector: Protector) -> None:
        self._edge = edge
        self._cloud = cloud
        self._meter = meter
        self._protector = protector
        self.edge_model = edge.model
        self.cloud_model = cloud.model

    @classmethod
    def build(cls, settings: Settings, *, meter: Meter, protector: Protector, edge: ManagedUpstream | None = None,
              cloud: ManagedUpstream | None = None) -> Doors:
        """The configured upstreams (litellm for the cloud, imported here: once, and nowhere else), or the
        ones given (tests, benchmarks)."""
        if cloud is None:
            from gateway.upstreams.cloud import LiteLLMUpstream

            cloud = LiteLLMUpstream(settings.cloud)
        return cls(edge=edge or OpenAIHTTPUpstream(settings.edge), cloud=cloud, meter=meter, protector=protector)

    def edge(self, context: CallContext, route: RouteTracker, spend: Spend = NO_SPEND) -> EdgeChannel:
        return EdgeChannel(self._edge, self._meter, context, route, spend)

    def cloud(self, context: CallContext, route: RouteTracker, spend: Spend = NO_SPEND) -> CloudChannel:
        return CloudChannel(self._cloud, self._meter, context, route, self._protector, spend)

    async def ready(self) -> dict[str, tuple[bool, str]]:
        return {"edge": await self._edge.ready(), "cloud": await self._cloud.ready()}

    async def aclose(self) -> None:
        for upstream in (self._edge, self._cloud):
            closer = getattr(upstream, "aclose", None)
            if closer is None:
                continue
            try:
                await closer()
            except Exception:  # one upstream failing to close must not keep the other open
                log.exception("closing the %s upstream failed", upstream.side)
