"""The two ways out of the gateway. ``Doors`` alone holds the upstreams and hands out channels over them, so the
cloud upstream is never reachable except through a ``CloudChannel`` (protect → upstream → restore → meter), and
the cloud transport only behind the provider boundary (``ProviderBoundary``: it gets ``ProviderRequest`` objects
built by the one allowlist, never a client's body). This is the only module that imports the cloud transport
(``make lint`` checks it)."""

from __future__ import annotations

import logging
from typing import Protocol

from accounting.calls import Meter
from gateway.settings import Settings
from gateway.upstreams.boundary import DroppedFields, ProviderBoundary
from gateway.upstreams.openai_http import OpenAIHTTPUpstream
from gateway.upstreams.provider_request import ProviderTransport, RequestShape
from privacy import Protector
from router.budgets.limits import NO_SPEND, Spend
from router.channels import CloudChannel, EdgeChannel, Upstream
from router.context import CallContext, RouteTracker

log = logging.getLogger("ecgw")


class ManagedUpstream(Upstream, Protocol):
    async def ready(self) -> tuple[bool, str]: ...


class Doors:
    def __init__(self, *, edge: ManagedUpstream, cloud: ProviderTransport, shape: RequestShape, meter: Meter,
                 protector: Protector, dropped: DroppedFields, edge_dropped: DroppedFields | None = None) -> None:
        self._edge = edge
        self._cloud = ProviderBoundary(cloud, shape)
        self._meter = meter
        self._protector = protector
        self.dropped = dropped  # the fields the boundary kept off the cloud (``/metrics``)
        self.edge_dropped = edge_dropped or DroppedFields(side="edge")  # and those the edge transport kept off
        self.edge_model = edge.model
        self.cloud_model = cloud.model

    @classmethod
    def build(cls, settings: Settings, *, meter: Meter, protector: Protector, edge: ManagedUpstream | None = None,
              cloud: ProviderTransport | None = None) -> Doors:
        """The configured upstreams (litellm for the cloud, imported here: once, and nowhere else), or the
        ones given (tests, benchmarks); the cloud one behind the allowlist ``cloud.extra_body_fields`` widens."""
        if cloud is None:
            from gateway.upstreams.cloud import LiteLLMUpstream

            cloud = LiteLLMUpstream(settings.cloud)
        dropped, edge_dropped = DroppedFields(), DroppedFields(side="edge")
        shape = RequestShape(settings.cloud.extra_body_fields, on_drop=dropped)
        return cls(edge=edge or OpenAIHTTPUpstream(settings.edge, on_drop=edge_dropped), cloud=cloud, shape=shape,
                   meter=meter, protector=protector, dropped=dropped, edge_dropped=edge_dropped)

    def exposition(self) -> bytes:
        """The boundary's metrics: fields kept off each side's calls."""
        return self.dropped.exposition() + self.edge_dropped.exposition()

    def edge(self, context: CallContext, route: RouteTracker, spend: Spend = NO_SPEND) -> EdgeChannel:
        return EdgeChannel(self._edge, self._meter, context, route, spend)

    def cloud(self, context: CallContext, route: RouteTracker, spend: Spend = NO_SPEND) -> CloudChannel:
        return CloudChannel(self._cloud, self._meter, context, route, self._protector, spend)

    async def ready(self) -> dict[str, tuple[bool, str]]:
        return {"edge": await self._edge.ready(), "cloud": await self._cloud.ready()}

    async def aclose(self) -> None:
        for upstream in (self._edge, self._cloud):
            try:
                await upstream.aclose()
            except Exception:  # one upstream failing to close must not keep the other open
                log.exception("closing the %s upstream failed", upstream.side)
