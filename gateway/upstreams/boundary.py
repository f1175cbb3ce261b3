"""The door's side of the provider boundary: ``CloudChannel`` hands it chat bodies, it hands the transport only
``ProviderRequest`` objects built by the one allowlist (``gateway.upstreams.provider_request``)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, generate_latest

from gateway.upstreams.provider_request import WITHHELD, ProviderRequest, ProviderTransport, RequestShape
from router.errors import UpstreamError

log = logging.getLogger("ecgw")

OTHER: Final = "_other"  # the label of every field name past the first ``max_labels`` distinct ones
_NAME_CHARS: Final = 64


class DroppedFields:
    """Counts the request fields the boundary keeps home, by name, and logs each name once. Names come from
    clients, so both are bounded: the withheld OpenAI parameters and the first ``max_labels`` other names have a
    label of their own, later ones share ``_other``; the first ``max_logged`` names are logged."""

    def __init__(self, registry: CollectorRegistry | None = None, *, side: str = "cloud", max_labels: int = 64,
                 max_logged: int = 1024) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        why = ("not an OpenAI chat parameter the cloud takes, nor named by cloud.extra_body_fields" if side == "cloud"
               else "a field that chooses the edge server's infrastructure")
        self.counter = Counter(f"ecgw_{side}_dropped_fields", f"Request fields kept off the {side} call ({why}), "
                               "by field name; past a bounded set of names, under _other", ["field"],
                               registry=self.registry)
        self._side = side
        self._known = WITHHELD if side == "cloud" else {}
        self._max_labels = max_labels
        self._max_logged = max_logged
        self._labels: set[str] = set()
        self._logged: set[str] = set()

    def __call__(self, name: str) -> None:
        label = name[:_NAME_CHARS]
        if label not in self._known and label not in self._labels:
            if len(self._labels) >= self._max_labels:
                label = OTHER
            else:
                self._labels.add(label)
        self.counter.labels(label).inc()
        named = name[:_NAME_CHARS]
        if named not in self._logged and len(self._logged) < self._max_logged:
            self._logged.add(named)
            log.warning("the %s call leaves out the request field %r (each time; logged once): %s", self._side, named,
                        "only OpenAI's chat parameters and the fields cloud.extra_body_fields names reach the provider"
                        if self._side == "cloud" else "it would choose the edge server's infrastructure")

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class ProviderBoundary:
    """The cloud upstream ``CloudChannel`` sees: chat bodies in, ``ProviderRequest`` to the transport."""

    side = "cloud"

    def __init__(self, transport: ProviderTransport, shape: RequestShape) -> None:
        self._transport = transport
        self._shape = shape
        self.provider = transport.provider
        self.model = transport.model

    def outgoing(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._shape.outgoing(body)

    async def ready(self) -> tuple[bool, str]:
        return await self._transport.ready()

    async def aclose(self) -> None:
        await self._transport.aclose()

    def _request(self, body: dict[str, Any]) -> ProviderRequest:
        try:
            return self._shape.request(body)
        except ValueError as exc:
            raise UpstreamError(400, f"This request cannot go to the cloud: {exc}.", upstream="cloud",
                                type_="invalid_request_error") from None

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self._transport.complete(self._request(body))

    async def stream(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        async for chunk in self._transport.stream(self._request(body)):
            yield chunk
